#pragma once
/// \file bm25_retriever.hpp
/// plumb::Retriever over a Bm25Searcher: the BM25 (optionally RM3) first stage of a pipeline.

#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>

#include "index/bm25_searcher.hpp"
#include "plugin/registry.hpp"
#include "plugin/stage.hpp"

namespace plumb::index {

class Bm25Retriever : public Retriever {
public:
    /// `searcher` must not be null (InvalidArgument). `threads` used by retrieve() for a batch.
    Bm25Retriever(std::shared_ptr<const Bm25Searcher> searcher, SearchOptions options = {},
                  unsigned threads = 1);
    /// Pipeline factory "bm25": {"index": DIR, "k1", "b", "lucene_norms", "rm3", "fb_docs",
    /// "fb_terms", "original_query_weight", "threads"} (plugin/builtins/builtins.hpp); the index
    /// is opened once per context and becomes the pipeline's document source.
    static std::shared_ptr<const Retriever> from_config(const nlohmann::json& config,
                                                        StageContext& ctx);
    /// "bm25" or "bm25+rm3".
    std::string name() const override;
    /// Candidates carry external ids and BM25 scores; trace holds {name(), score}.
    std::vector<RankedList> retrieve(std::span<const Query> queries,
                                     std::size_t k) const override;

    const Bm25Searcher& searcher() const noexcept { return *m_searcher; }

private:
    std::shared_ptr<const Bm25Searcher> m_searcher;
    SearchOptions m_options;
    unsigned m_threads;
};

}  // namespace plumb::index
