#pragma once
/// \file stage.hpp
/// The stage contracts of a pipeline (Vespa-style phased ranking):
/// first stage (Retriever) -> re-rank stages (RerankStage, each with a depth) -> post-filters.
/// All implementations are const after construction and safe to call concurrently.

#include <cstddef>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "plugin/types.hpp"

namespace plumb {

/// A first stage: one ranked list per query.
class Retriever {
public:
    virtual ~Retriever() = default;
    virtual std::string name() const = 0;
    /// Top-k candidates per query, best first; ties broken by docid ascending.
    virtual std::vector<RankedList> retrieve(std::span<const Query> queries,
                                             std::size_t k) const = 0;
};

/// What a re-rank stage needs from the candidates it is given.
struct StageNeeds {
    bool text = true;  ///< candidates must carry passage text
};

/// A re-rank stage: re-scores the top depth() candidates of each list.
class RerankStage {
public:
    virtual ~RerankStage() = default;
    virtual std::string name() const = 0;
    /// How many leading candidates of each list are re-scored (the rest keep their order below).
    virtual std::size_t depth() const = 0;
    virtual StageNeeds needs() const { return {}; }
    /// Scores of query `query` against candidates[0 .. min(depth, size)); one float per
    /// candidate, higher = more relevant.
    virtual std::vector<float> score(const Query& query,
                                     std::span<const Candidate> candidates) const = 0;
    /// Re-ranks each list in place (lists[i] belongs to queries[i]); default: score() per query
    /// then apply_rerank_scores(). Stages may override to batch across queries.
    virtual void rerank(std::span<const Query> queries, std::span<RankedList> lists) const;
};

/// Named measures of one application of a post-filter, in the filter's order (e.g. the bias and
/// utility of the list before and after it: "bias_before", "bias_after", "utility_before", ...).
using StageMeasures = std::vector<std::pair<std::string, double>>;

/// A post-filter's measures for one query (SearchResult::reports).
struct StageReport {
    std::string stage;  ///< the filter's name()
    StageMeasures measures;
};

/// A post-filter sees a whole list and may re-order or drop candidates.
class PostFilter {
public:
    virtual ~PostFilter() = default;
    virtual std::string name() const = 0;
    virtual void apply(const Query& query, RankedList& list) const = 0;
    /// Applies the filter and returns what it measured. Default: apply(), no measures. The
    /// pipeline calls this one and keeps non-empty measures in SearchResult::reports.
    virtual StageMeasures apply_measured(const Query& query, RankedList& list) const;
};

/// Applies new scores to the head of a list: the first scores.size() candidates get the new
/// score (also appended to their trace as {stage, score}; see Candidate::trace), are sorted by score descending (ties:
/// previous order), and the tail keeps its order with scores strictly below the head's minimum
/// (head_min - 1 - i for the i-th tail item), so that score order == rank order for trec_eval.
void apply_rerank_scores(RankedList& list, std::span<const float> scores, const std::string& stage);

}  // namespace plumb
