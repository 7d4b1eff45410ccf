#pragma once
/// \file position_table.hpp
/// The position-bias paper's Table 3 layout (Hofstätter et al. 2021, paper 000) and a bias table
/// for the main job.
///
/// Table 3: rows = (model, training set), columns = measure × (original test, debiased test,
/// Δ %). Δ % = (Deb - Orig) / Deb · 100, as paper 000 computes it (undefined when Deb = 0).
/// "Smallest absolute margin per block in bold": a block is one model and one measure (the model's
/// training rows); the rows whose |Δ| is the block's smallest (within 1e-12) are bold; a block with
/// fewer than two defined Δ has no bold.
///
/// Significance (eval/significance.hpp, the same marking rule as eval/compare.hpp):
///  - Orig vs Deb per row: paired test over the queries present in both results (paired by
///    qid); the correction family is one measure and one test over all rows; a Δ is marked
///    significant when the adjusted p-value(s) of the chosen test(s) are < alpha (with both
///    tests, both) and the means differ.
///  - Between training types per test set: within a model, its training rows get letters
///    a, b, ... (in input order); a value carries the letters of the rows of the same model it
///    is significantly better than on the same test set (compare_runs with all pairs; family =
///    the pairs of one model, test set and measure).
///
/// Bias table: rows = runs; columns RaB@t and ARaB@t of one magnitude variant (ranking level,
/// male - female, eval/bias_metrics.hpp), mean |RaB@t(q)| (per-query magnitude, which a
/// bias-balancing post-filter drives to 0 even where the signed mean is already near 0), |ΔA-PRF|
/// and MATS (given per row, e.g. read from `plumb debias mats` JSON). RaB, ARaB and |RaB| are
/// per-query measures: each row gets a letter and a value carries the letters of the rows it is
/// significantly LESS biased than (paired test on the per-query values, the marked row having
/// the smaller |mean|), over all pairs or against a baseline row. |ΔA-PRF| and MATS are
/// collection-level figures without a test.
///
/// All functions are pure and thread-safe.

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "eval/bias_metrics.hpp"
#include "eval/compare.hpp"
#include "eval/evaluator.hpp"
#include "eval/gender.hpp"

namespace plumb::eval {

/// Output formats of both tables.
enum class TableFormat { Text, Markdown, Latex, Json };

/// "text", "markdown" (or "md"), "latex", "json" (throws InvalidArgument otherwise).
TableFormat parse_table_format(std::string_view name);

/// One row of Table 3: a model trained on one training set, evaluated on both test sets. The
/// results must hold every measure column of PositionTableOptions::columns.
struct PositionRow {
    std::string model;     ///< e.g. "TK"
    std::string training;  ///< e.g. "Original", "Debiased"
    EvalResult original;   ///< on the original test set
    EvalResult debiased;   ///< on the debiased (rotated) test set
};

struct PositionTableOptions {
    /// Measure columns (printed names of EvalResult columns) and their headings.
    std::vector<std::string> columns = {"ndcg_cut_10", "mrr_cut_10", "recall_10"};
    std::vector<std::string> labels = {"nDCG@10", "MRR@10", "Recall@10"};
    std::string original_label = "Orig.";
    std::string debiased_label = "Deb.";
    TestKind test = TestKind::Both;
    Correction correction = Correction::Holm;
    double alpha = 0.05;
    WilcoxonOptions wilcoxon;
};

/// One (row, measure) cell group.
struct PositionCell {
    double original = 0.0;        ///< mean over the paired queries (original test)
    double debiased = 0.0;        ///< mean over the paired queries (debiased test)
    std::optional<double> delta;  ///< (debiased - original) / debiased; unset if debiased == 0
    bool bold = false;            ///< smallest |delta| of its block
    PairResult test;              ///< Orig (a) vs Deb (b); p-values adjusted across rows
    bool delta_significant = false;
    std::string marks_original;  ///< letters of same-model rows beaten on the original test
    std::string marks_debiased;  ///< ... on the debiased test
};

struct PositionTableRow {
    std::string model;
    std::string training;
    std::string letter;               ///< a, b, ... within the model
    std::size_t num_queries = 0;      ///< paired queries (Orig vs Deb)
    std::vector<PositionCell> cells;  ///< one per measure column
};

struct PositionTable {
    PositionTableOptions options;
    std::vector<PositionTableRow> rows;  ///< input order; rows of a model are its block
};

/// Builds the table. Throws InvalidArgument when `rows` is empty, labels and columns differ in
/// number, alpha is outside (0, 1), a measure column is missing from a result, or a (model,
/// training) pair repeats.
PositionTable build_position_table(const std::vector<PositionRow>& rows,
                                   const PositionTableOptions& options = {});

/// Renders the table (decimals: digits of the means; Δ gets one decimal). Text and Markdown
/// mark bold as **x**, LaTeX as \textbf{x}; significance of Δ as †, training-type letters as
/// ^ab (text, Markdown) or $^{ab}$ (LaTeX). JSON: {"measures", "labels", "test", "correction",
/// "alpha", "rows": [{"model", "training", "letter", "num_queries", "cells": {column: {...}}}]}.
std::string format_position_table(const PositionTable& table, TableFormat format, int decimals = 3);

// ------------------------------------------------------------------------------------------
// Bias table
// ------------------------------------------------------------------------------------------

/// One row of the bias table: a run's rankings (best first) and scored lists.
struct BiasRow {
    std::string name;
    std::vector<QueryRanking> rankings;  ///< for RaB / ARaB (rankings_from_run)
    std::vector<ScoredRanking> scored;   ///< for PRF (scored_rankings_from_run); may be empty
    std::optional<double> mats;          ///< MATS of the row's model, if known
};

struct BiasTableOptions {
    std::size_t cutoff = 10;              ///< t of RaB@t / ARaB@t
    std::string variant = "tc";           ///< label only (the BiasTable holds one variant)
    std::optional<std::size_t> baseline;  ///< test every row against this row; unset = all pairs
    TestKind test = TestKind::Both;
    Correction correction = Correction::Holm;
    double alpha = 0.05;
    WilcoxonOptions wilcoxon;
    long min_relevance = 1;  ///< PRF: relevant = grade >= this
};

struct BiasTableRow {
    std::string name;
    std::string letter;
    std::size_t queries = 0;  ///< queries with a non-empty ranking
    RankBias rab;             ///< means over queries (bias = male - female)
    RankBias arab;
    double abs_rab = 0.0;  ///< mean over queries of |RaB@t(q)| (what a post-filter drives to 0)
    std::optional<double> delta_prf;  ///< |ΔA-PRF|; unset without labels/qrels or when undefined
    std::optional<double> mats;
    std::string marks_rab;  ///< letters of rows this row is significantly less biased than
    std::string marks_arab;
    std::string marks_abs_rab;  ///< letters of rows with a significantly larger |RaB@t(q)|
};

struct BiasReport {
    BiasTableOptions options;
    std::size_t paired_queries = 0;  ///< queries ranked by every row (the tested ones)
    bool has_prf = false;
    std::vector<BiasTableRow> rows;
    std::vector<PairResult> pairs;  ///< column 0 = RaB, 1 = ARaB, 2 = |RaB|; a, b = row indices
};

/// Builds the bias table. `labels` (docid -> d) and `qrels` are used for |ΔA-PRF| when both are
/// non-empty (relevant = grade >= options.min_relevance). Throws InvalidArgument when `rows` is
/// empty, cutoff is 0, alpha is outside (0, 1) or the baseline is out of range.
BiasReport build_bias_table(const std::vector<BiasRow>& rows, const BiasTable& bias,
                            const std::unordered_map<std::string, int>& labels, const Qrels& qrels,
                            const BiasTableOptions& options = {});

/// Renders the bias table (decimals: digits of every value).
std::string format_bias_table(const BiasReport& report, TableFormat format, int decimals = 4);

/// Reads the "mats" value of a `plumb debias mats` JSON report (null = nullopt). Throws IoError,
/// ParseError when the file is not JSON or has no "mats" member.
std::optional<double> read_mats_json(const std::filesystem::path& path);

}  // namespace plumb::eval
