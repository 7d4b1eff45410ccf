#pragma once
/// \file types.hpp
/// Core value types shared by every stage: queries, candidates with a per-stage score trace,
/// ranked lists.

#include <string>
#include <utility>
#include <vector>

namespace plumb {

/// External document id as it appears in the corpus and in runs (not necessarily a number).
using DocId = std::string;

/// A query: its id (as in the topics file) and its raw text.
struct Query {
    std::string id;
    std::string text;
};

/// One stage's score for a candidate, in pipeline order (first stage first).
struct StageScore {
    std::string stage;
    float score = 0.0f;
};

/// A scored candidate. `text` is filled only when a later stage needs it.
///
/// The score trace follows one rule: an entry is a score a stage *computed* for this candidate,
/// written once by the code that computed it, in the order computed:
/// - a first stage writes {its name(), score} (a fusing first stage such as "hybrid" keeps its
///   inputs' entries before its own); when a first stage leaves the trace empty, the Pipeline
///   writes that entry for it;
/// - a re-ranker writes {its name(), score} for the candidates within its depth, through
///   apply_rerank_scores(); candidates beyond its depth get no entry (their `score` is only
///   shifted below the re-ranked head to keep score order == rank order);
/// - a post-filter writes none: it re-orders, drops, or rewrites `score` to follow its new order,
///   and reports what it measured in SearchResult::reports instead.
/// So `score` is the candidate's final, rank-ordered score and `trace` its provenance.
struct Candidate {
    DocId docid;
    float score = 0.0f;
    std::string text;
    std::vector<StageScore> trace;
};

/// Candidates of one query, best first.
struct RankedList {
    std::string qid;
    std::vector<Candidate> candidates;
};

}  // namespace plumb
