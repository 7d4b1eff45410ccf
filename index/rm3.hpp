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

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "index/bm25_searcher.hpp"

namespace plumb::index {

/// The expanded weighted query (terms sorted by weight descending, ties term ascending).
/// `feedback` is the first-pass ranking (best first).
std::vector<WeightedTerm> rm3_expand(const PassageIndex& index,
                                     std::span<const WeightedTerm> query_terms,
                                     std::span<const Hit> feedback, const Rm3Params& params);

// The same in pieces, for sharded search (sharded_searcher.hpp), where the feedback documents
// live in different shards and document frequencies are the whole collection's.

/// One analysed term of a feedback document with its count.
struct Rm3TermCount {
    std::string term;
    std::uint32_t count = 0;
};

/// One feedback document as RM3 needs it: its analysed term counts (term ascending) and its
/// first-pass score.
struct Rm3FeedbackDoc {
    std::vector<Rm3TermCount> counts;
    float score = 0;
};

/// Analyses internal document `doc` of `index` (the shard holding it) with its analyzer.
/// Throws IoError, InvalidArgument.
Rm3FeedbackDoc rm3_feedback_doc(const PassageIndex& index, std::uint32_t doc, float score);

/// The terms whose collection document frequency RM3 needs for these feedback documents (those
/// passing its character filter), ascending, unique.
std::vector<std::string> rm3_df_terms(std::span<const Rm3FeedbackDoc> feedback);

/// rm3_expand over given feedback documents (best first; the first params.fb_docs are used),
/// with `doc_freq(term)` the collection's document frequency of every term of rm3_df_terms and
/// `documents` the collection's size. Gives exactly rm3_expand's result when the inputs are the
/// single index's.
std::vector<WeightedTerm> rm3_expand(std::span<const WeightedTerm> query_terms,
                                     std::span<const Rm3FeedbackDoc> feedback,
                                     const std::function<std::uint64_t(std::string_view)>& doc_freq,
                                     std::uint64_t documents, const Rm3Params& params);

}  // namespace plumb::index
