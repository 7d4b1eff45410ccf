#pragma once
/// \file rm3.hpp
/// RM3 query expansion, following Anserini's Rm3Reranker:
///  1. the original query's bag of words, L1-normalised (q);
///  2. for each of the top fb_docs documents of the first BM25 pass: its analysed term counts,
///     keeping only terms of 2..20 characters matching [a-z0-9]+ whose df <= 10% of the
///     documents; pruned to its fb_terms most frequent terms (ties: term ascending); divided by
///     the pruned vector's L1 norm and weighted by the document's BM25 score;
///  3. the relevance model rm(t) = sum over feedback docs, pruned to fb_terms terms, L1-normalised;
///  4. the expanded query w(t) = a * q(t) + (1 - a) * rm(t), a = original_query_weight;
///  5. a second BM25 search over the whole index with term weights w(t).
/// Anserini reads document vectors from stored term vectors; plumb re-analyses the stored passage
/// text with the index's analyzer, which yields the same terms and counts.

#include <span>
#include <vector>

#include "index/bm25_searcher.hpp"

namespace plumb::index {

/// The expanded weighted query (terms sorted by weight descending, ties term ascending).
/// `feedback` is the first-pass ranking (best first).
std::vector<WeightedTerm> rm3_expand(const PassageIndex& index,
                                     std::span<const WeightedTerm> query_terms,
                                     std::span<const Hit> feedback, const Rm3Params& params);

}  // namespace plumb::index
