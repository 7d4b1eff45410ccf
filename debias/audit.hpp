#pragma once
/// \file audit.hpp
/// One bias audit for any run (issue 13): for each run, the four bias axes side by side, from the
/// files a user has; an axis whose inputs are missing is listed as skipped with the missing
/// inputs named.
///
/// Axes and what each needs (cutoff t = AuditOptions::cutoff, 10 by default):
/// - position (paper 000): MATS of the run's model, read from a `plumb debias mats` JSON report
///   (eval::read_mats_json), and nDCG@t / MRR@t on the original test set (qrels) and on the
///   rotated test set (the run of the same model on the rotated collection, judged by the
///   rotated qrels, which default to the qrels: rotation keeps docids), with paper 000's
///   Δ = (Deb. − Orig.) / Deb. over the queries judged in both (eval::build_position_table;
///   † = the paired test of Orig vs Deb is significant). Needs, per run, a MATS report or a
///   rotated run (with qrels).
/// - gender (papers 001, 004): RaB@t, ARaB@t and mean |RaB@t| (male − female, eval/bias_metrics)
///   over the run's queries, restricted to the gender-neutral ones when query labels are given
///   (FORMULAS.md: "normally the gender-neutral queries"), from a bias file or from a gender word
///   list counted in the passages' text; |ΔA-PRF| over all the run's queries, which needs qrels
///   and passage labels d ∈ {-1, 0, +1} (a labels file, or the IBBR label of the word counts in
///   the passages' text). eval::build_bias_table computes them (with two or more runs, a value
///   carries the letters of the runs it is significantly less biased than).
/// - linguistic complexity (paper 003): the queries' complexity buckets (terciles easy / medium
///   / hard by default), computed from a topics file with ComplexityAnalyzer, or read from the
///   per-query TSV `plumb debias complexity` writes (header with `qid` and `bucket` columns);
///   then μ, σ (population) and c_v = σ/μ of per-query nDCG@t, overall and per bucket, over the
///   judged queries of the run that have a bucket. Needs qrels.
/// - survivorship (paper 002): MRR@t of each run on S_1..S_k and All (eval::survivorship_table)
///   from the shown-rankings file (eval/subsets.hpp format), restricted to the queries judged in
///   the qrels (FORMULAS.md: "All" = every judged query; a file covering the train and dev
///   queries too is cut to the test set's), and, with query types, the share of unanswered
///   queries (no shown passage marked relevant) overall and per type. Needs qrels.
///
/// Effectiveness follows trec_eval (eval/evaluator.hpp): a run's queries without judgements are
/// not measured. Bad input files throw ParseError naming file and line (from the readers).

#include <cstddef>
#include <filesystem>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "eval/gender.hpp"
#include "eval/position_table.hpp"
#include "eval/subsets.hpp"
#include "plugin/document_source.hpp"
#include "plugin/progress.hpp"

namespace plumb::debias {

/// One audited run and its optional per-run inputs.
struct AuditRun {
    std::string name;                   ///< display name (unique)
    std::filesystem::path run;          ///< TREC run on the test set (required)
    std::filesystem::path rotated_run;  ///< the same model's run on the rotated test set
    std::filesystem::path mats;         ///< `plumb debias mats` JSON report of its model
    /// Or: the MATS of its model computed by the host (NaN = undefined); used when `mats` is
    /// empty (`plumb audit --mats-model` computes it in the LibTorch CLI module).
    std::optional<double> mats_value;
};

/// The files a user has; empty paths are missing inputs.
struct AuditInputs {
    std::vector<AuditRun> runs;
    std::filesystem::path qrels;          ///< judgements of the test set
    std::filesystem::path rotated_qrels;  ///< of the rotated test set (default: qrels)
    std::filesystem::path bias_file;      ///< per-passage bias (per-variant or combined file)
    std::filesystem::path words;          ///< gender word list (word,f|m), counted in `documents`
    std::shared_ptr<const DocumentSource> documents;  ///< passage text (corpus or index)
    std::string documents_name = "the passages";      ///< for "missing" messages
    std::filesystem::path passage_labels;        ///< docid<TAB>d for |ΔA-PRF| (else from words)
    std::filesystem::path query_labels;          ///< qid<TAB>f|m|n: RaB over the neutral ones
    std::filesystem::path topics;                ///< queries, for their complexity
    std::string topic_field = "title";           ///< TREC topics: fields making the query
    std::filesystem::path complexity;            ///< or: per-query complexity TSV with buckets
    std::string wordnet = "/usr/share/wordnet";  ///< for the complexity analyser
    std::filesystem::path shown_ranks;           ///< shown rankings (survivorship)
    std::filesystem::path query_types;           ///< qid<TAB>type: unanswered share per type
};

struct AuditOptions {
    std::size_t cutoff = 10;                            ///< t of nDCG@t, MRR@t, RaB@t, ...
    eval::BiasVariant variant = eval::BiasVariant::Tc;  ///< passage bias variant
    long relevance_level = 1;                           ///< trec_eval -l
    std::string neutral_label = "n";                    ///< query label of neutral queries
    std::size_t buckets = 3;                            ///< complexity buckets (terciles)
    unsigned max_k = 0;  ///< survivorship: largest k of S_k (0 = the file's largest rank)
};

/// Whether an axis was computed and, if not (or only partly), what was missing.
struct AxisStatus {
    std::string axis;  ///< "position", "gender", "complexity", "survivorship"
    bool computed = false;
    std::vector<std::string> missing;  ///< missing inputs (whole axis or a part of it)
};

/// Position axis of one run.
struct PositionAudit {
    std::optional<double> mats;
    bool has_delta = false;  ///< rotated run given
    std::size_t paired_queries = 0;
    /// One per measure (nDCG@t, MRR@t): original, rotated, Δ and its significance.
    std::vector<eval::PositionCell> cells;
};

/// Gender axis of one run.
struct GenderAudit {
    std::size_t queries = 0;  ///< queries averaged (neutral ones with query labels); when 0,
                              ///< RaB, ARaB and |RaB| are undefined (rendered "-" / null)
    eval::RankBias rab, arab;
    double abs_rab = 0.0;
    std::optional<double> delta_prf;
    std::string marks_rab, marks_arab, marks_abs_rab, letter;
};

/// μ, σ, c_v of per-query nDCG@t over a set of queries.
struct BucketStats {
    std::string bucket;  ///< "all", "easy", "medium", "hard" (or "b1".."bk")
    std::size_t n = 0;
    double mean = 0.0;
    double sd = 0.0;
    std::optional<double> cv;
};

struct AuditReport {
    AuditOptions options;
    std::vector<std::string> runs;                     ///< names, in input order
    std::vector<AxisStatus> axes;                      ///< the four axes, in the order above
    std::vector<PositionAudit> position;               ///< per run (when computed)
    std::vector<GenderAudit> gender;                   ///< per run (when computed)
    bool gender_query_labels = false;                  ///< RaB restricted to neutral queries
    std::size_t gender_neutral_queries = 0;            ///< queries labelled neutral
    std::vector<std::vector<BucketStats>> complexity;  ///< per run: "all" then buckets
    std::vector<eval::SubsetRow> survivorship;         ///< All, S_k..S_1
    std::vector<eval::UnansweredRow> unanswered;       ///< "all", then per type (query types)

    const AxisStatus& axis(const std::string& name) const;
};

/// Runs the audit. InvalidArgument when there is no run, a name repeats or cutoff is 0;
/// IoError / ParseError (file:line) from any input file. `progress` gets (step, steps).
AuditReport run_audit(const AuditInputs& inputs, const AuditOptions& options = {},
                      const ProgressCallback& progress = {});

/// Reads the per-query complexity TSV of `plumb debias complexity` (or any TSV with a header
/// naming `qid` and `bucket` columns): qid -> bucket. ParseError "<file>:<line>: ..." for a
/// header without those columns, a short row, an empty qid or bucket, or a repeated qid.
std::vector<std::pair<std::string, std::string>> read_complexity_buckets(
    const std::filesystem::path& path);

/// The audit as Markdown (one section per axis; skipped axes listed with their missing inputs)
/// and as JSON (numbers at full precision; undefined values null).
std::string audit_markdown(const AuditReport& report);
nlohmann::json audit_json(const AuditReport& report);

/// Writes `dir` as one unit (plugin/atomic_directory.hpp): audit.md, audit.json and, for each
/// computed axis, its plot <axis>.png / <axis>.svg (position: nDCG@t Orig. vs Deb. per run;
/// gender: RaB@t, ARaB@t, |RaB@t| per run; complexity: μ of nDCG@t per bucket and run;
/// survivorship: MRR@t on S_k against k per run).
void write_audit(const AuditReport& report, const std::filesystem::path& dir);

}  // namespace plumb::debias
