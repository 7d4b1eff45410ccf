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
