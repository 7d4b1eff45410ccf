#pragma once
/// \file compare.hpp
/// Comparing several runs: a table of mean measures with paired significance tests against a
/// baseline or between all pairs, corrected for multiple comparisons, rendered like the
/// position-bias paper's Table 5 (each run gets a letter a, b, c, ...; a value carries as
/// superscripts the letters of the runs it is significantly BETTER than).
///
/// Documented choices:
/// - Queries are paired by qid. Only queries present in every run's result are used (with
///   EvalOptions::complete every qrels query is present in every result, missing = 0, which is
///   what `plumb compare` does); the means shown are over those same queries.
/// - A correction family is one measure and one test: all compared pairs (m = runs - 1 with a
///   baseline, m = runs·(runs-1)/2 for all pairs) of that measure.
/// - With both tests, a difference is marked only when BOTH adjusted p-values are < alpha.
///   A mark also needs a strictly better mean (two-sided test, direction from the means):
///   higher for effectiveness measures, lower for |RaB| (abs_rab_*); signed RaB/ARaB (rab_*,
///   arab_*) are never marked (a signed difference does not say which is nearer 0).
/// - Fewer than 2 paired queries: no test (p = 1, nothing marked).

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "eval/evaluator.hpp"
#include "eval/significance.hpp"

namespace plumb::eval {

enum class TestKind { T, Wilcoxon, Both };

/// "t", "wilcoxon", "both" (throws InvalidArgument otherwise).
TestKind parse_test_kind(std::string_view name);

/// The name parse_test_kind() reads ("t", "wilcoxon", "both").
const char* test_kind_name(TestKind kind) noexcept;

struct CompareOptions {
    std::vector<std::string> columns;     ///< measure columns ("map", "ndcg_cut_10"); empty = all
                                          ///< per-query Float columns of the first result
    std::optional<std::size_t> baseline;  ///< index of the baseline run; nullopt = all pairs
    TestKind test = TestKind::Both;
    Correction correction = Correction::None;
    double alpha = 0.05;
    WilcoxonOptions wilcoxon;
};

/// One tested pair for one measure (run a vs run b; difference = mean_a - mean_b).
struct PairResult {
    std::size_t column = 0;  ///< index into ComparisonTable::columns
    std::size_t a = 0, b = 0;
    double mean_a = 0.0, mean_b = 0.0;
    std::optional<TTestResult> t;
    std::optional<WilcoxonResult> wilcoxon;
    double p_t_adjusted = 1.0;
    double p_wilcoxon_adjusted = 1.0;
    bool significant = false;  ///< per the marking rule above
};

struct ComparisonTable {
    std::vector<std::string> runs;           ///< run names, in the given order
    std::vector<std::string> columns;        ///< measure column names
    std::size_t num_queries = 0;             ///< paired queries
    std::vector<std::vector<double>> means;  ///< [run][column]
    std::vector<PairResult> pairs;
    CompareOptions options;

    /// Letters of the runs that run `r` is significantly better than for `column` ("ab"); see
    /// better_mean().
    std::string marks(std::size_t r, std::size_t column) const;
};

/// Compares `results` (one per run, same measures). Throws InvalidArgument when fewer than 2
/// runs are given, sizes differ, the baseline index is out of range, alpha is not in (0, 1), or
/// a requested column is missing from a result.
ComparisonTable compare_runs(const std::vector<std::string>& names,
                             const std::vector<EvalResult>& results, const CompareOptions& options);

/// True when mean `x` is better than `y` for measure column `column`: higher, except for the
/// gender-bias measures (abs_rab_*: lower; rab_*, arab_*: never).
bool better_mean(const std::string& column, double x, double y);

/// The marking rule above for one tested pair over `num_queries` paired queries: different
/// means, at least 2 queries, and each test that `test` names has an adjusted p < alpha.
bool pair_significant(const PairResult& pair, TestKind test, double alpha,
                      std::size_t num_queries) noexcept;

/// Run letter of index i: a..z, then a1..z1, ...
std::string run_letter(std::size_t i);

enum class CompareFormat { Text, Json, Csv, Latex };

/// "text", "json", "csv", "latex" (throws InvalidArgument otherwise).
CompareFormat parse_compare_format(std::string_view name);

/// Renders the table. Text: the paper-style table then one line per tested pair with p-values.
/// JSON: {"runs", "measures", "num_queries", "test", "correction", "alpha", "table": [{run,
/// letter, means: {m: v}, marks: {m: "ab"}}], "comparisons": [...]}. CSV: one line per tested
/// pair: measure,run_a,run_b,mean_a,mean_b,diff,t,p_t,p_t_adj,w_plus,w_minus,p_wilcoxon,
/// p_wilcoxon_adj,significant. LaTeX: a tabular with values and $^{ab}$ marks. Means are printed
/// with `decimals` digits (default 4; JSON keeps full precision).
std::string format_comparison(const ComparisonTable& table, CompareFormat format, int decimals = 4);

/// `s` with LaTeX's special characters escaped (_ & % # $ { } as \x; \ ^ ~ as commands).
std::string latex_escape(const std::string& s);

}  // namespace plumb::eval
