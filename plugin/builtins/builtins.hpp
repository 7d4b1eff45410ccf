#pragma once
/// \file builtins.hpp
/// plumb's built-in pipeline stages for a Registry, and running a pipeline over a topics file.
/// (Target plumb::builtins: links index, rerank and debias; this header includes none of them.)
///
/// First stages ("first_stage" of a configuration; paths relative to the configuration file):
///   "bm25"    {"index": DIR, "k1": 0.9, "b": 0.4, "rm3": false, "fb_docs": 10, "fb_terms": 10,
///              "original_query_weight": 0.5, "threads": 1}
///             The index also becomes the pipeline's document source.
///   "dense"   {"model": HF_DIR, "vectors": DIR (vector folder with a built FAISS index),
///              "index": DIR (optional passage index: document source), "name": "dense",
///              "batch_size": 32, "pooling": "cls", "similarity": "dot", "ef_search": 0,
///              "threads": 0}
///   "hybrid"  {"stages": [first stage, first stage, ...], "method": "rrf" | "interp",
///              "alpha": 0.5 (interp: weight of the first), "rrf_k": 60, "name": "hybrid"}
///             Each stage retrieves the pipeline's candidate depth; the fused list is cut to it.
///   "run"     {"run": FILE} a TREC run (any line order, gzip, 3 or 6 columns) in trec_eval's
///             order; queries the run lacks get empty lists.
/// Re-rank stages ("rerank"; all take "depth" (100) and "name"):
///   "tk"          {"model": DIR, "batch_size": 64, "threads": 0}
///   "cat"         {"model": HF_DIR, "batch_size": 32, "max_length": 512, "label": -1,
///                  "log_softmax": false, "threads": 0, "quantize": "fp32"}
///                                                                 (BERT-CAT cross-encoder;
///                                                                 "quantize": "int8" = dynamic
///                                                                 int8, rerank/README.md)
///   "dot"         {"model": HF_DIR, "batch_size": 32, "max_length": 256, "pooling": "cls",
///                  "similarity": "dot", "threads": 0}             (BERT-DOT re-scoring)
///   "torchscript" {"model": FILE_OR_DIR, "batch_size": 32, "max_length": 512, "threads": 0,
///                  "token_type_ids": true}
/// Each factory is its stage's from_config() (index/bm25_retriever.hpp,
/// rerank/dense_retriever.hpp, rerank/hybrid_retriever.hpp, eval/run_retriever.hpp,
/// rerank/tk_stage.hpp, rerank/cross_encoder.hpp, rerank/bi_encoder_stage.hpp,
/// rerank/torchscript_stage.hpp, debias/post_filters.hpp).
/// Post-filters ("post_filters"): "fair_topk", "bias_balance" (alias "balance"),
///   "near_duplicates" (alias "dedup"), configured as in debias/post_filters.hpp; their document
///   source is the pipeline's. Each reports bias and utility before and after for every query in
///   SearchResult::reports, as the measures k, bias_before, bias_after, utility_before,
///   utility_after, dcg_before, dcg_after, protected_before, protected_after, changed, feasible,
///   removed, score_loss, missing_bias (definitions: debias/post_filter.hpp).

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "plugin/pipeline.hpp"
#include "plugin/progress.hpp"
#include "plugin/registry.hpp"

namespace plumb {

/// Adds the stages above to `registry` (ConfigError when one of the names is already taken).
void register_builtins(Registry& registry);

struct PipelineRunOptions {
    unsigned threads = 1;       ///< host threads (queries in parallel)
    std::string tag = "plumb";  ///< run tag (column 6)
    /// TREC topics files: the fields making the query text (index::TopicField bits, e.g.
    /// index::parse_topic_fields("title+description")); default title.
    unsigned topic_fields = 1;
    ProgressCallback progress;  ///< (queries done, total)
    const CancelToken* cancel = nullptr;
    /// When set: the post-filters' measures (SearchResult::reports) are written there as TSV
    /// lines `qid<TAB>stage<TAB>measure<TAB>value` under a header line.
    std::filesystem::path report;
    /// Scale-out (e.g. MPI ranks, mpi/batch.hpp): when set, called with the number of topics;
    /// returns the part [first, first + count) this process runs (each part exactly as one
    /// process runs it: results do not depend on other queries when group is 1).
    std::function<std::pair<std::size_t, std::size_t>(std::size_t queries)> part;
    /// With `part`: receives this process's run lines and report lines (no header) instead of
    /// the files `run` and `report` being written; the host gathers the parts in order and
    /// writes them (format_report_header() first).
    std::function<void(std::string run_lines, std::string report_lines)> emit;
};

/// The header line of a post-filter report file.
std::string format_report_header();

/// Reads a topics file (TSV `qid<TAB>query`, BEIR queries JSONL or TREC topics), runs every query through the
/// pipeline and writes the TREC run atomically to `run`. Returns the number of queries.
std::size_t run_pipeline(const Pipeline& pipeline, const std::filesystem::path& topics,
                         const std::filesystem::path& run, const PipelineRunOptions& options = {});

/// What `plumb pipeline` (and `plumb search --pipeline`) does: loads the configuration with the
/// built-ins plus the given plugin libraries, runs the topics into `run`, and returns the
/// pipeline's per-stage latency table (text, one line per stage) when `stats` is set, else "";
/// with `stats`, the table is followed by the mean of every post-filter measure over the queries
/// (format_report_means) when a post-filter reports measures.
std::string run_pipeline_config(const std::filesystem::path& config,
                                const std::filesystem::path& topics,
                                const std::filesystem::path& run,
                                const std::vector<std::filesystem::path>& plugins,
                                const PipelineRunOptions& options, bool stats);

/// A table of per-stage latency statistics: "stage count mean_ms p50_ms p99_ms" lines.
std::string format_stage_stats(const std::vector<StageStats>& stats);

/// A table of the post-filter measures averaged over `results`: "stage measure queries mean"
/// lines, in first-seen order; "" when no result carries a report.
std::string format_report_means(const std::vector<SearchResult>& results);

}  // namespace plumb
