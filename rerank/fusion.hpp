#pragma once
/// \file fusion.hpp
/// Hybrid fusion of ranked lists of one query (e.g. BM25 and BERT-DOT). Pure functions, thin
/// wrappers over plumb's one fusion implementation, eval/fuse.hpp (which also serves
/// `plumb fuse` and offers CombSUM/MNZ/..., weighted sums and other normalisations).
///
///  - Reciprocal rank fusion (Cormack, Clarke & Büttcher, SIGIR 2009):
///    score(d) = Σ_lists 1 / (k + rank_list(d)), ranks from 1 in each list's order, k = 60 (the
///    paper's value); a document absent from a list gets nothing from it.
///  - Score interpolation: score(d) = α · norm_a(d) + (1 − α) · norm_b(d), where norm is the
///    min-max normalisation within each list, (s − min) / (max − min) (all 1 when max == min,
///    i.e. a one-element or all-equal list; `plumb fuse --norm min-max` gives 0 there, as ranx);
///    a document absent from a list gets 0 from it.
/// Results are sorted by fused score (as the float stored in Candidate::score) descending, ties
/// by docid ascending, cut to `depth` (0 = all documents). Each candidate's trace gets the fused
/// score under `stage`; text and earlier traces are taken from the first list holding the
/// document.

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "plugin/types.hpp"

namespace plumb::rerank {

/// Reciprocal rank fusion of any number of lists (InvalidArgument when k < 0).
RankedList reciprocal_rank_fusion(std::span<const RankedList> lists, double k = 60.0,
                                  std::size_t depth = 0, const std::string& stage = "rrf");

/// α · minmax(a) + (1 − α) · minmax(b) (InvalidArgument unless 0 <= α <= 1).
RankedList interpolate_scores(const RankedList& a, const RankedList& b, double alpha,
                              std::size_t depth = 0, const std::string& stage = "interp");

/// Fuses two runs query by query (lists matched by qid; a qid in only one run is fused with
/// an empty list; InvalidArgument when a run holds a qid twice). `method` is "rrf" (alpha unused)
/// or "interp". Output follows the order of qids in `a`, then the qids only in `b`.
std::vector<RankedList> fuse_runs(const std::vector<RankedList>& a,
                                  const std::vector<RankedList>& b, const std::string& method,
                                  double alpha = 0.5, std::size_t depth = 0, double rrf_k = 60.0);

}  // namespace plumb::rerank
