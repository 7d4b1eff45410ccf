#pragma once
/// \file pipeline.hpp
/// The embeddable retrieval pipeline (Vespa-style phases):
///   first stage (Retriever, `candidates` deep) -> re-rank stages (each re-scores its depth())
///   -> post-filters -> the top `k` results,
/// each result with its id, optional text, final score and per-stage score trace; each search
/// also reports per-stage wall-clock timings.
///
/// Text: when a re-rank stage needs() text, the pipeline fetches it once from the document
/// source, before the first such stage, for the leading max-depth candidates of those stages
/// (candidates that already carry text are not fetched again). With `return_text` the final top-k
/// carry text (fetched if needed); otherwise text is cleared from the results.
///
/// A Pipeline is immutable after build() and search() is safe to call concurrently from any
/// number of host threads (stages are const and thread-safe by contract); latency statistics are
/// updated under a lock. Move-only.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "plugin/document_source.hpp"
#include "plugin/progress.hpp"
#include "plugin/stage.hpp"
#include "plugin/types.hpp"

namespace plumb {

/// Everything a pipeline is made of.
struct PipelineSpec {
    std::shared_ptr<const Retriever> first_stage;
    std::vector<std::shared_ptr<const RerankStage>> rerankers;
    std::vector<std::shared_ptr<const PostFilter>> post_filters;
    std::shared_ptr<const DocumentSource> documents;  ///< needed when a stage needs text
    std::size_t k = 100;                              ///< results returned per query
    std::size_t candidates = 0;  ///< first-stage depth; 0 = max(k, largest re-rank depth)
    bool return_text = false;    ///< results carry passage text
};

/// Wall-clock time of one stage in one search.
struct StageTiming {
    std::string stage;  ///< stage name; "text" for the document fetch
    double ms = 0.0;
};

/// The result of one query.
struct SearchResult {
    RankedList list;  ///< top-k, best first; candidates carry their score trace
    std::vector<StageTiming> timings;
    /// Measures reported by the post-filters (PostFilter::apply_measured), in pipeline order;
    /// filters that report nothing are absent. The built-in bias-aware filters report bias and
    /// utility before and after (plugin/builtins/builtins.hpp).
    std::vector<StageReport> reports;
};

/// Latency statistics of one stage over all searches so far (milliseconds).
struct StageStats {
    std::string stage;
    std::uint64_t count = 0;
    double mean_ms = 0.0;
    double p50_ms = 0.0;  ///< nearest-rank percentiles (of a uniform sample of at most 65,536
                          ///< searches per stage once more ran; count and mean are exact)
    double p99_ms = 0.0;
};

struct BatchOptions {
    unsigned threads = 1;       ///< host threads calling search(); 0 = hardware concurrency
    ProgressCallback progress;  ///< (queries done, total)
    const CancelToken* cancel = nullptr;  ///< checked between queries (Error "cancelled")
    /// Queries handed to the stages together (cross-query batching: a cross-encoder fills its
    /// batches across the group's lists). 1 keeps results bit-identical to search(); larger
    /// groups may change fp32 neural scores in their last bits (batch padding). An int8
    /// cross-encoder quantises activations with one scale per forward batch, so it does not
    /// batch across lists: its scores for a query are the same for every group size (test:
    /// rerank/test_int8.cpp), and grouping brings it only the shared pass.
    std::size_t group = 1;
};

class Pipeline {
public:
    /// Validates the spec: InvalidArgument when there is no first stage, k is 0, a re-rank
    /// stage has depth 0, a stage needs text but no document source is given, or two stages
    /// share a name (names key the score trace and the statistics).
    explicit Pipeline(PipelineSpec spec);
    ~Pipeline();
    Pipeline(Pipeline&&) noexcept;
    Pipeline& operator=(Pipeline&&) noexcept;

    /// Runs one query through all stages. Thread-safe.
    SearchResult search(const Query& query) const;
    /// Runs many queries on `options.threads` threads, `options.group` queries per pass through
    /// the stages; results in the order of `queries`, identical to calling search()
    /// sequentially when options.group is 1.
    std::vector<SearchResult> search_batch(std::span<const Query> queries,
                                           const BatchOptions& options = {}) const;

    /// Per-stage latency statistics, in execution order (first stage, re-rankers with "text"
    /// just before the first one needing text, post-filters). Thread-safe.
    std::vector<StageStats> stats() const;
    void reset_stats() const;

    const PipelineSpec& spec() const noexcept;
    /// Stage names in execution order (as in stats()).
    std::vector<std::string> stage_names() const;
    /// Depth the first stage retrieves.
    std::size_t candidates() const noexcept;

    /// Builder: Pipeline::Builder().first_stage(r).rerank(s).post_filter(f).k(10).build().
    class Builder {
    public:
        Builder& first_stage(std::shared_ptr<const Retriever> retriever);
        Builder& rerank(std::shared_ptr<const RerankStage> stage);
        Builder& post_filter(std::shared_ptr<const PostFilter> filter);
        Builder& documents(std::shared_ptr<const DocumentSource> documents);
        Builder& k(std::size_t k);
        Builder& candidates(std::size_t n);
        Builder& return_text(bool on);
        Pipeline build() const;

    private:
        PipelineSpec m_spec;
    };

private:
    struct Impl;
    std::unique_ptr<Impl> m_impl;
};

}  // namespace plumb
