#pragma once
/// \file bm25_retriever.hpp
/// plumb::Retriever over a Bm25Searcher: the BM25 (optionally RM3) first stage of a pipeline.

#include <memory>
#include <string>

#include "index/bm25_searcher.hpp"
#include "plugin/stage.hpp"

namespace plumb::index {

class Bm25Retriever : public Retriever {
public:
    /// `searcher` must not be null (InvalidArgument). `threads` used by retrieve() for a batch.
    Bm25Retriever(std::shared_ptr<const Bm25Searcher> searcher, SearchOptions options = {},
                  unsigned threads = 1);
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
