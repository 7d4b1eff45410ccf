#pragma once
/// \file detail/bm25_query.hpp
/// INTERNAL (not installed; includes Lucene++): a BM25 query as the query algorithms
/// (detail/bm25_*.hpp) receive it, resolved against the index by Bm25Searcher.
///
/// An algorithm is a functor in its own header, called as
///
///     void operator()(const Bm25Query& query, Bm25Workspace& ws, Queue& top) const;
///
/// It scores the query's documents over ws.index() and offers them to the top-k queue it is
/// handed (detail/bm25_topk.hpp: TopKBuffer for term-at-a-time, TopKHeap for
/// document-at-a-time); the searcher then takes the hits from the queue. Every algorithm must
/// give exactly the exhaustive one's top k, with bit-identical scores: a document's score is the
/// float sum of its terms' contributions in the query's term order, whatever order the
/// algorithm visits them in (tests/index compare every algorithm with the exhaustive one).
/// Between searches ws.acc must be all zero again. Adding an algorithm: its header, a
/// SearchAlgorithm value and one case in Bm25Searcher::search_terms' dispatch.

#include <vector>

#include "index/detail/bm25_block_cursor.hpp"
#include "index/detail/bm25_topk.hpp"
#include "index/detail/bm25_workspace.hpp"
#include "index/detail/index_data.hpp"

namespace plumb::index::detail {

/// Relative slack on score upper bounds: covers float rounding differences between the
/// pruning estimates (double, any order) and the exact float score (query term order).
inline constexpr double kBoundSlack = 1e-4;

/// A query term resolved against the dictionary.
struct Bm25Term {
    const TermEntry* entry;
    float w;    ///< query weight * idf
    double ub;  ///< upper bound of this term's contribution (with slack)
};

struct Bm25Query {
    /// Canonical term order, shared by every algorithm (scores are float sums in this order):
    /// upper bound descending, ties by query position. Not empty.
    std::vector<Bm25Term> terms;
    const float* norm = nullptr;  ///< per document: k1 * (1 - b + b * dl / avgdl)
    float k1p1 = 0;               ///< k1 + 1
    /// How the block-max algorithms bound a block's contribution (postings.bin version 2).
    BlockBoundParams block_bound;
};

}  // namespace plumb::index::detail
