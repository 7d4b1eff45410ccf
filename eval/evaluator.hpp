#pragma once
/// \file evaluator.hpp
/// The embedded trec_eval: evaluates runs (files or in-memory ranked lists) against qrels.
/// The CLI `plumb eval` is a thin layer over this.
///
/// trec_eval semantics reproduced here (trec_eval.c, get_trec_results.c, form_res_rels.c):
///  - a query's documents are ranked by score descending, ties broken by docid descending
///    (byte-wise), whatever the rank column or line order says; -M keeps the top M after that;
///  - a query's lines may be anywhere in the run (trec_eval sorts the whole file by qid first):
///    lines of one qid are gathered wherever they are, and a query is never counted twice;
///  - queries present in both qrels and run are evaluated, in byte-wise qid order; with
///    `complete` (-c) every qrels query is, a query missing from the run being evaluated as
///    trec_eval 10 does (a one-document ranking of an unjudged document, then num_ret, utility,
///    unj and rbp_resid reset to 0) and means divide by all qrels queries;
///  - run queries absent from the qrels are ignored;
///  - without -c, a qrels query absent from the run is skipped, as trec_eval 9.0.x does
///    (trec_eval 10.0 stops with "result qid ... not found in qrels" instead); such queries are
///    listed in EvalResult::qrels_queries_without_results so callers can warn.
///
/// Speed and memory: evaluate_run() streams a run whose lines are grouped by qid (the usual
/// layout, in any query order) one query at a time, so memory is one query's lines plus the
/// qrels and one row of values per query. When a qid comes back after another query's lines,
/// the run is read again and its lines are spread over hash partitions by qid (kept in memory
/// up to 64 MB, then spilled to temporary files), which are evaluated one at a time: memory stays
/// bounded by the largest partition (~32 MB of run text) whatever the run's size. Standard input
/// and pipes, which cannot be read twice, always take the partitioned path.

#include <cstdint>
#include <filesystem>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "eval/gender.hpp"
#include "eval/measures.hpp"
#include "eval/qrels.hpp"
#include "eval/run.hpp"
#include "plugin/progress.hpp"
#include "plugin/types.hpp"

namespace plumb::eval {

/// trec_eval's options that change values.
struct EvalOptions {
    /// -l: minimum grade that counts as relevant. trec_eval default 1.
    long relevance_level = 1;
    /// -M: evaluate only the top this-many documents per query. Default: all.
    std::size_t max_docs_per_query = std::numeric_limits<std::size_t>::max();
    /// -c: average over all qrels queries; queries missing from the run score 0.
    bool complete = false;
    /// -J: drop documents not judged (or judged with a negative grade) before ranking measures.
    bool judged_docs_only = false;
    /// iprec_at_recall as trec_eval 9 computes it (see QueryJudgements::trec_eval_9_iprec);
    /// default: trec_eval 10.
    bool trec_eval_9_iprec = false;
    /// -N: documents in the collection (used by `utility` only).
    long num_docs_in_coll = 0;
    /// In-memory lists only (evaluate_query, evaluate): take the candidates in list order
    /// instead of re-ranking them by score (for lists reordered by a post-filter without
    /// rescoring). Default false: rank by score then docid, exactly as trec_eval would rank
    /// the run file written from the lists. Run files are always ranked by score.
    bool use_list_order = false;
    /// Run files whose lines of one query are not together: bytes of run lines held in memory
    /// before the hash partitions spill to temporary files (in TMPDIR). Memory stays about
    /// this plus the largest partition.
    std::size_t spill_budget_bytes = std::size_t{64} << 20;
    /// Passage gender bias per variant (index: tc 0, tf 1, bool 2; eval/gender.hpp), for the
    /// bias measures (rab_tc_cut.10, arab_tf_cut.10, abs_rab_bool_cut.10, ...): each selected
    /// one needs its variant's table (the Evaluator throws ConfigError otherwise).
    std::shared_ptr<const BiasTable> bias_tables[3];
};

/// Values of one query, one per MeasureSet column.
struct QueryValues {
    std::string qid;
    std::vector<double> values;
    bool missing = false;  ///< query absent from the run (only with -c)
    /// trec_eval's relstring (when selected): one character per top document: the grade 0-9,
    /// '>' above 9, '-' not in the qrels, '.' negative grade (in the pool, unjudged).
    std::string relstring;
};

/// Per-query values and summary of one run.
struct EvalResult {
    std::vector<Column> columns;  ///< output columns (see MeasureSet::columns)
    bool has_runid = false;
    std::string run_id;                ///< tag of the run (last line's), empty for lists
    std::vector<QueryValues> queries;  ///< evaluated queries, byte-wise qid order
    std::vector<double> summary;       ///< one per column ("all")
    /// Without -c: qrels queries that have no line in the run (skipped, as trec_eval 9.0.x
    /// does), byte-wise order. Empty with -c and for in-memory lists' callers that set it so.
    std::vector<std::string> qrels_queries_without_results;

    /// Index of a column by printed name ("ndcg_cut_10"), or -1.
    long column_index(std::string_view name) const noexcept;
    /// Values of column `name` for every evaluated query (queries order). Throws
    /// InvalidArgument when the column was not computed.
    std::vector<double> column_values(std::string_view name) const;
    /// Summary value of column `name`. Throws InvalidArgument when not computed.
    double summary_value(std::string_view name) const;
    /// Row of `qid`, or nullptr when the query was not evaluated.
    const QueryValues* query(std::string_view qid) const noexcept;
};

/// Evaluates runs against one set of qrels. Immutable; const methods are safe to call from
/// several threads at once.
class Evaluator {
public:
    /// Throws InvalidArgument when `qrels` is null.
    Evaluator(std::shared_ptr<const Qrels> qrels, MeasureSet measures, EvalOptions options = {});

    const MeasureSet& measures() const noexcept { return m_measures; }
    const EvalOptions& options() const noexcept { return m_options; }
    const Qrels& qrels() const noexcept { return *m_qrels; }

    /// Values of one in-memory list (ranked by score then docid as trec_eval would rank the
    /// written run), or nullopt when the qrels have no judgements for list.qid. Throws
    /// InvalidArgument on a duplicate docid.
    std::optional<std::vector<double>> evaluate_query(const RankedList& list) const;

    /// Evaluates in-memory lists (one per query; a qid must not repeat: InvalidArgument).
    EvalResult evaluate(const std::vector<RankedList>& lists) const;

    /// Evaluates a run file ("-" = standard input). Throws IoError, ParseError (file:line) for
    /// malformed lines, non-numeric scores and duplicate (qid, docid) pairs. `progress` gets
    /// (bytes read, file size). Stops with plumb::Error("cancelled") when `cancel` is set.
    EvalResult evaluate_run(const std::filesystem::path& run, const ProgressCallback& progress = {},
                            const CancelToken* cancel = nullptr) const;

    /// Evaluates a run already in memory (from read_run()).
    EvalResult evaluate_run(const Run& run) const;

private:
    std::shared_ptr<const Qrels> m_qrels;
    MeasureSet m_measures;
    EvalOptions m_options;
};

/// Fills options.bias_tables with the variants `measures` needs, read from `bias_file` (a
/// per-variant bias file or the combined file of `plumb debias gender`). Nothing to do when no
/// bias measure is selected; ConfigError when one is and `bias_file` is empty.
void load_bias_tables(EvalOptions& options, const MeasureSet& measures,
                      const std::filesystem::path& bias_file);

/// Convenience: load qrels and evaluate one run file with trec_eval -m style measure specs.
EvalResult evaluate_files(const std::filesystem::path& qrels, const std::filesystem::path& run,
                          const std::vector<std::string>& measure_specs,
                          const EvalOptions& options = {});

}  // namespace plumb::eval
