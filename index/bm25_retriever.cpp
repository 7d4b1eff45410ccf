#include "index/bm25_retriever.hpp"

#include "plugin/error.hpp"

namespace plumb::index {

Bm25Retriever::Bm25Retriever(std::shared_ptr<const Bm25Searcher> searcher, SearchOptions options,
                             unsigned threads)
    : m_searcher(std::move(searcher)), m_options(options), m_threads(threads) {
    if (!m_searcher) throw InvalidArgument("Bm25Retriever: null searcher");
}

std::string Bm25Retriever::name() const { return m_options.rm3 ? "bm25+rm3" : "bm25"; }

std::vector<RankedList> Bm25Retriever::retrieve(std::span<const Query> queries,
                                                std::size_t k) const {
    auto lists = m_searcher->search_batch(queries, k, m_options, m_threads);
    const std::string stage = name();
    for (auto& list : lists) {
        for (auto& c : list.candidates) c.trace.push_back({stage, c.score});
    }
    return lists;
}

}  // namespace plumb::index
