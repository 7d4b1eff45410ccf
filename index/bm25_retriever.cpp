#include "index/bm25_retriever.hpp"

#include <nlohmann/json.hpp>

#include "plugin/error.hpp"
#include "index/document_sources.hpp"
#include "index/passage_index.hpp"
#include "index/shard_manifest.hpp"

namespace plumb::index {

Bm25Retriever::Bm25Retriever(std::shared_ptr<const Bm25Searcher> searcher, SearchOptions options,
                             unsigned threads)
    : m_searcher(std::move(searcher)), m_options(options), m_threads(threads) {
    if (!m_searcher) throw InvalidArgument("Bm25Retriever: null searcher");
}

Bm25Retriever::Bm25Retriever(std::shared_ptr<const ShardedSearcher> sharded, SearchOptions options,
                             unsigned threads)
    : m_sharded(std::move(sharded)), m_options(options), m_threads(threads) {
    if (!m_sharded) throw InvalidArgument("Bm25Retriever: null sharded searcher");
}

std::string Bm25Retriever::name() const { return m_options.rm3 ? "bm25+rm3" : "bm25"; }

std::vector<RankedList> Bm25Retriever::retrieve(std::span<const Query> queries,
                                                std::size_t k) const {
    auto lists = m_sharded ? m_sharded->search_batch(queries, k, m_options, m_threads)
                           : m_searcher->search_batch(queries, k, m_options, m_threads);
    const std::string stage = name();
    for (auto& list : lists) {
        for (auto& c : list.candidates) c.trace.push_back({stage, c.score});
    }
    return lists;
}


std::shared_ptr<const Retriever> Bm25Retriever::from_config(const nlohmann::json& c,
                                                            StageContext& ctx) {
    const std::string where = "first stage bm25";
    check_keys(c,
               {"index", "k1", "b", "lucene_norms", "rm3", "fb_docs", "fb_terms",
                "original_query_weight", "threads"},
               where);
    const auto dir = ctx.resolve(config_required_string(c, "index", where));
    SearchOptions o;
    o.bm25.k1 = static_cast<float>(config_double(c, "k1", o.bm25.k1, where));
    o.bm25.b = static_cast<float>(config_double(c, "b", o.bm25.b, where));
    o.bm25.lucene_norms = config_bool(c, "lucene_norms", false, where);
    o.rm3 = config_bool(c, "rm3", false, where);
    o.rm3_params.fb_docs = config_size(c, "fb_docs", o.rm3_params.fb_docs, where);
    o.rm3_params.fb_terms = config_size(c, "fb_terms", o.rm3_params.fb_terms, where);
    o.rm3_params.original_query_weight = static_cast<float>(
        config_double(c, "original_query_weight", o.rm3_params.original_query_weight, where));
    const auto threads = static_cast<unsigned>(config_positive_size(c, "threads", 1, where));
    if (ShardManifest::present(dir)) {
        auto sharded = ctx.shared<const ShardedSearcher>(resource_key("bm25-sharded:", dir),
                                                         [&] { return ShardedSearcher::open(dir); });
        ctx.offer_documents(std::make_shared<const ShardedDocuments>(sharded));
        return std::make_shared<const Bm25Retriever>(sharded, o, threads);
    }
    auto idx = shared_passage_index(ctx, dir);
    auto searcher = ctx.shared<const Bm25Searcher>(
        resource_key("bm25:", dir), [&] { return std::make_shared<const Bm25Searcher>(idx); });
    ctx.offer_documents(idx);
    return std::make_shared<const Bm25Retriever>(searcher, o, threads);
}

}  // namespace plumb::index
