#include "eval/run_retriever.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>

namespace plumb::eval {

RunRetriever::RunRetriever(const Run& run) : m_run_id(run.run_id) {
    m_queries.reserve(run.queries.size());
    for (const auto& q : run.queries) {
        std::vector<const RunDoc*> docs;
        docs.reserve(q.docs.size());
        for (const auto& d : q.docs) docs.push_back(&d);
        std::stable_sort(docs.begin(), docs.end(), [&](const RunDoc* x, const RunDoc* y) {
            if (x->score != y->score) return x->score > y->score;
            return q.docid(*x) > q.docid(*y);
        });
        RankedList l;
        l.qid = q.qid;
        l.candidates.reserve(docs.size());
        for (const auto* d : docs) {
            Candidate c;
            c.docid = std::string(q.docid(*d));
            c.score = static_cast<float>(d->score);
            l.candidates.push_back(std::move(c));
        }
        m_max_depth = std::max(m_max_depth, l.candidates.size());
        m_queries.push_back(Query{q.qid, ""});
        m_lists.emplace(q.qid, std::move(l));
    }
}

std::shared_ptr<const RunRetriever> RunRetriever::open(const std::filesystem::path& path) {
    return std::make_shared<const RunRetriever>(read_run(path));
}

std::shared_ptr<const Retriever> RunRetriever::from_config(const nlohmann::json& config,
                                                           StageContext& ctx) {
    const std::string where = "first stage \"run\"";
    check_keys(config, {"run"}, where);
    return open(ctx.resolve(config_required_string(config, "run", where)));
}

std::unordered_set<std::string> RunRetriever::docids(std::size_t depth) const {
    std::unordered_set<std::string> out;
    for (const auto& [qid, list] : m_lists) {
        const std::size_t n = std::min(depth, list.candidates.size());
        for (std::size_t i = 0; i < n; ++i) out.insert(list.candidates[i].docid);
    }
    return out;
}

std::vector<RankedList> RunRetriever::retrieve(std::span<const Query> queries,
                                               std::size_t k) const {
    std::vector<RankedList> out;
    out.reserve(queries.size());
    for (const auto& q : queries) {
        RankedList l;
        l.qid = q.id;
        if (auto it = m_lists.find(q.id); it != m_lists.end()) {
            const auto& c = it->second.candidates;
            l.candidates.assign(c.begin(),
                                c.begin() + static_cast<std::ptrdiff_t>(std::min(k, c.size())));
            for (auto& cand : l.candidates) cand.trace.push_back({name(), cand.score});
        }
        out.push_back(std::move(l));
    }
    return out;
}

}  // namespace plumb::eval
