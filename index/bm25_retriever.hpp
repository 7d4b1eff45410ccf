#pragma once
/// \file bm25_retriever.hpp
/// plumb::Retriever over a Bm25Searcher, or a ShardedSearcher over a sharded index (the same
/// results as one index over the whole corpus): the BM25 (optionally RM3) first stage of a
/// pipeline.

#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>

#include "index/bm25_searcher.hpp"
#include "index/sharded_searcher.hpp"
#include "plugin/registry.hpp"
#include "plugin/stage.hpp"

namespace plumb::index {

class Bm25Retriever : public Retriever {
public:
    /// `searcher` must not be null (InvalidArgument). `threads` used by retrieve() for a batch.
    Bm25Retriever(std::shared_ptr<const Bm25Searcher> searcher, SearchOptions options = {},
                  unsigned threads = 1);
    /// Over a sharded index; `sharded` must not be null (InvalidArgument).
    Bm25Retriever(std::shared_ptr<const ShardedSearcher> sharded, SearchOptions options = {},
                  unsigned threads = 1);
    /// Pipeline factory "bm25": {"index": DIR, "k1", "b", "lucene_norms", "rm3", "fb_docs",
    /// "fb_terms", "original_query_weight", "threads"} (plugin/builtins/builtins.hpp); the index
    /// is opened once per context and becomes the pipeline's document source. An index
    /// directory holding plumb-shards.json is a sharded index (ShardedSearcher, with
    /// ShardedDocuments as document source).
    static std::shared_ptr<const Retriever> from_config(const nlohmann::json& config,
                                                        StageContext& ctx);
    /// "bm25" or "bm25+rm3".
    std::string name() const override;
    /// Candidates carry external ids and BM25 scores; trace holds {name(), score}.
    std::vector<RankedList> retrieve(std::span<const Query> queries,
                                     std::size_t k) const override;

    /// The single index's searcher, or nullptr over a sharded index.
    const Bm25Searcher* searcher() const noexcept { return m_searcher.get(); }
    /// The sharded index's searcher, or nullptr over a single index.
    const ShardedSearcher* sharded() const noexcept { return m_sharded.get(); }

private:
    std::shared_ptr<const Bm25Searcher> m_searcher;
    std::shared_ptr<const ShardedSearcher> m_sharded;
    SearchOptions m_options;
    unsigned m_threads;
};

}  // namespace plumb::index
