#include "rerank/hybrid_retriever.hpp"

#include <nlohmann/json.hpp>

#include "plugin/error.hpp"
#include "rerank/fusion.hpp"

namespace plumb::rerank {

HybridRetriever::HybridRetriever(std::vector<std::shared_ptr<const Retriever>> parts,
                                 std::string method, double alpha, double rrf_k, std::string name)
    : m_parts(std::move(parts)),
      m_method(std::move(method)),
      m_alpha(alpha),
      m_rrf_k(rrf_k),
      m_name(std::move(name)) {
    if (m_parts.size() < 2) throw InvalidArgument("hybrid retriever: needs at least two parts");
    if (m_method != "rrf" && m_method != "interp") {
        throw InvalidArgument("hybrid retriever: unknown method '" + m_method + "'");
    }
    if (m_method == "interp" && m_parts.size() != 2) {
        throw InvalidArgument("hybrid retriever: interp fuses exactly two parts");
    }
}

std::vector<RankedList> HybridRetriever::retrieve(std::span<const Query> queries,
                                                  std::size_t k) const {
    std::vector<std::vector<RankedList>> runs;
    for (const auto& p : m_parts) runs.push_back(p->retrieve(queries, k));
    std::vector<RankedList> out;
    for (std::size_t q = 0; q < queries.size(); ++q) {
        std::vector<RankedList> lists;
        for (auto& r : runs) lists.push_back(q < r.size() ? r[q] : RankedList{queries[q].id, {}});
        RankedList fused = m_method == "rrf"
                               ? reciprocal_rank_fusion(lists, m_rrf_k, k, m_name)
                               : interpolate_scores(lists[0], lists[1], m_alpha, k, m_name);
        fused.qid = queries[q].id;
        out.push_back(std::move(fused));
    }
    return out;
}

std::shared_ptr<const Retriever> HybridRetriever::from_config(const nlohmann::json& c,
                                                              StageContext& ctx) {
    const std::string where = "first stage hybrid";
    check_keys(c, {"stages", "method", "alpha", "rrf_k", "name"}, where);
    auto it = c.find("stages");
    if (it == c.end() || !it->is_array() || it->size() < 2) {
        throw ConfigError(where + ": \"stages\" must be an array of at least two first stages");
    }
    const std::string method = config_string(c, "method", "rrf", where);
    if (method != "rrf" && method != "interp") {
        throw ConfigError(where + ": unknown method \"" + method + "\" (known: rrf, interp)");
    }
    if (method == "interp" && it->size() != 2) {
        throw ConfigError(where + ": \"interp\" fuses exactly two stages");
    }
    const double alpha = config_double(c, "alpha", 0.5, where);
    if (!(alpha >= 0 && alpha <= 1)) throw ConfigError(where + ": \"alpha\" must be in [0, 1]");
    const double rrf_k = config_double(c, "rrf_k", 60.0, where);
    if (rrf_k < 0) throw ConfigError(where + ": \"rrf_k\" must be >= 0");
    const Registry* registry = ctx.registry();
    if (!registry) throw ConfigError(where + ": no registry in the stage context");
    std::vector<std::shared_ptr<const Retriever>> parts;
    for (const auto& s : *it) parts.push_back(registry->make_retriever(s, ctx));
    return std::make_shared<const HybridRetriever>(std::move(parts), method, alpha, rrf_k,
                                                   config_string(c, "name", "hybrid", where));
}

}  // namespace plumb::rerank
