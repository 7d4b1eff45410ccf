#include "rerank/dense_retriever.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "index/document_sources.hpp"
#include "index/passage_index.hpp"
#include "plugin/error.hpp"

namespace plumb::rerank {

DenseRetriever::DenseRetriever(std::shared_ptr<const BiEncoder> encoder,
                               std::shared_ptr<const DenseIndex> index, std::string name)
    : m_encoder(std::move(encoder)), m_index(std::move(index)), m_name(std::move(name)) {
    if (!m_encoder || !m_index) throw InvalidArgument("DenseRetriever: null encoder/index");
    if (m_encoder->dim() != m_index->dim()) {
        throw IndexError("dense index has dimension " + std::to_string(m_index->dim()) +
                         " but the encoder produces " + std::to_string(m_encoder->dim()));
    }
}

std::vector<RankedList> DenseRetriever::retrieve(std::span<const Query> queries,
                                                 std::size_t k) const {
    std::vector<std::string_view> texts;
    for (const auto& q : queries) texts.push_back(q.text);
    auto vectors = m_encoder->encode_queries(texts);
    auto hits = m_index->search(vectors, k);
    std::vector<RankedList> out(queries.size());
    for (std::size_t i = 0; i < queries.size(); ++i) {
        out[i].qid = queries[i].id;
        for (const auto& [row, score] : hits[i]) {
            Candidate c;
            c.docid = m_index->docid(row);
            c.score = score;
            c.trace.push_back({m_name, score});
            out[i].candidates.push_back(std::move(c));
        }
        std::stable_sort(out[i].candidates.begin(), out[i].candidates.end(),
                         [](const Candidate& a, const Candidate& b) {
                             if (a.score != b.score) return a.score > b.score;
                             return a.docid < b.docid;
                         });
    }
    return out;
}

std::shared_ptr<const Retriever> DenseRetriever::from_config(const nlohmann::json& c,
                                                             StageContext& ctx) {
    const std::string where = "first stage dense";
    check_keys(c,
               {"model", "vectors", "index", "name", "batch_size", "pooling", "similarity",
                "ef_search", "threads"},
               where);
    const auto model = ctx.resolve(config_required_string(c, "model", where));
    const auto vectors = ctx.resolve(config_required_string(c, "vectors", where));
    const auto options = bi_encoder_options_from_config(c, where);
    const auto ef = static_cast<int>(config_size(c, "ef_search", 0, where));
    const std::string name = config_string(c, "name", "dense", where);
    if (c.contains("index")) {
        ctx.offer_documents(
            index::shared_passage_index(ctx, ctx.resolve(config_string(c, "index", "", where))));
    }
    std::shared_ptr<const BiEncoder> encoder = BiEncoder::from_folder(model, options);
    auto dense = std::make_shared<const DenseIndex>(DenseIndex::load(vectors, encoder->dim(), ef));
    return std::make_shared<const DenseRetriever>(encoder, dense, name);
}

}  // namespace plumb::rerank
