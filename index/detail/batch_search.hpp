#pragma once
/// \file detail/batch_search.hpp
/// INTERNAL: the batch loop of every BM25 searcher (one index, or sharded): the queries over
/// `threads` workers, cancellation checked before each query, progress reported after each
/// (serialised), results in query order.

#include <algorithm>
#include <cstddef>
#include <mutex>
#include <span>
#include <vector>

#include "plugin/error.hpp"
#include "plugin/parallel.hpp"
#include "plugin/progress.hpp"
#include "plugin/types.hpp"

namespace plumb::index::detail {

/// `one(query)` returns the query's RankedList. threads: 0 = 1 here (parallel_for's 0 is
/// hardware concurrency).
template <class SearchOne>
std::vector<RankedList> search_batch(std::span<const Query> queries, unsigned threads,
                                     const ProgressCallback& progress, const CancelToken* cancel,
                                     SearchOne&& one) {
    std::vector<RankedList> out(queries.size());
    std::mutex mu;
    std::size_t done = 0;
    parallel_for(queries.size(), std::max(1u, threads), [&](std::size_t i, unsigned) {
        if (cancel && cancel->requested()) throw Error("cancelled");
        out[i] = one(queries[i]);
        if (progress) {
            std::lock_guard lock(mu);
            progress(++done, queries.size());
        }
    });
    return out;
}

}  // namespace plumb::index::detail
