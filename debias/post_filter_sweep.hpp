#pragma once
/// \file post_filter_sweep.hpp
/// The cost of fairness next to its gain (issue 13): applies the bias-aware post-filters at
/// several strengths to one run and measures each filtered run's effectiveness (nDCG@k, MRR@k
/// from the qrels) and gender bias (RaB@k, |RaB@k|, ARaB@k) next to the unfiltered run's.
///
/// Settings (documented choices):
/// - bias balance (debias/bias_balance.hpp) at each score budget B (stage score units; may be
///   infinity): B bounds the loss in the top-k sum of scores, so the budgets sweep the filter
///   from "no change" (B = 0) to "greedy minimum of |RaB@k|" (B = ∞);
/// - FA*IR (debias/fair_topk.hpp) has no score budget: its strength is the target proportion p
///   of protected candidates (larger p = more protected candidates forced into every prefix);
///   the sweep takes one row per p at the configured α, adjustment and protected group.
/// Each filter is built by its own factory (make_post_filter on a configuration object), with
/// the cutoff k of the measures as the filter's cutoff.
///
/// Measures are the evaluator's (eval/evaluator.hpp, trec_eval semantics): ndcg_cut.k,
/// mrr_cut.k, rab_V_cut.k, abs_rab_V_cut.k and arab_V_cut.k, averaged over the queries of the
/// run that have judgements (trec_eval's query set; runs queries without judgements are neither
/// measured nor counted). The bias of a passage is its triple of variant V from the bias table
/// the filters use too, so the filter and the measure see the same numbers: read from a bias
/// file, or computed from passage text with a gender word list (every docid of the run).
/// Filtered lists are ranked in their new order (the filters rewrite scores to agree with it).

#include <cstddef>
#include <filesystem>
#include <limits>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "eval/gender.hpp"
#include "eval/qrels.hpp"
#include "plugin/progress.hpp"
#include "plugin/registry.hpp"
#include "plugin/types.hpp"

namespace plumb::debias {

struct PostFilterSweepOptions {
    std::size_t k = 10;  ///< filter cutoff and measure cutoff (nDCG@k, MRR@k, RaB@k)
    /// Bias balance budgets (>= 0, infinity allowed); empty = no bias-balance rows.
    std::vector<double> budgets = {0.01, 0.05, 0.1, std::numeric_limits<double>::infinity()};
    std::size_t depth = 0;  ///< bias balance: candidates that may enter the top-k (0 = all)
    /// FA*IR target proportions p in (0, 1); empty = no FA*IR rows.
    std::vector<double> fair_p = {0.1, 0.3, 0.5};
    double alpha = 0.1;                                 ///< FA*IR significance
    bool adjust_alpha = true;                           ///< FA*IR multiple-testing adjustment
    std::string protected_group = "female";             ///< FA*IR protected group
    eval::BiasVariant variant = eval::BiasVariant::Tc;  ///< passage bias variant
    long relevance_level = 1;                           ///< trec_eval -l
    std::string bias_file;  ///< per-passage bias (resolved against the context's base_dir)
    std::string words;      ///< or: gender word list (word,f|m) for bias from passage text
};

/// One row of the sweep: the unfiltered run or one filter at one setting.
struct SweepRow {
    std::string filter;          ///< "none", "fair_topk" or "bias_balance"
    std::string parameter;       ///< "", "p" or "budget"
    double value = 0.0;          ///< p or budget (infinity for an unbounded budget); 0 for "none"
    double ndcg = 0.0;           ///< mean nDCG@k
    double mrr = 0.0;            ///< mean MRR@k
    double rab = 0.0;            ///< mean RaB@k (male - female)
    double abs_rab = 0.0;        ///< mean |RaB@k|
    double arab = 0.0;           ///< mean ARaB@k
    std::size_t changed = 0;     ///< queries (of the whole run) whose list the filter changed
    std::size_t infeasible = 0;  ///< FA*IR: queries whose constraints could not all be met
    double score_loss = 0.0;     ///< bias balance: mean budget spent per query (whole run)
    std::vector<RankedList> lists;  ///< the (filtered) run, one list per query

    /// "none", "fair_topk p=0.3", "bias_balance budget=inf".
    std::string label() const;
};

struct PostFilterSweep {
    std::size_t k = 10;
    std::size_t queries = 0;     ///< queries measured (judged queries of the run)
    std::string variant;         ///< "tc", "tf" or "bool"
    std::vector<SweepRow> rows;  ///< the unfiltered run first, then FA*IR, then balance
};

/// Runs the sweep over `lists` (one per query, best first). The passages' bias comes from
/// options.bias_file when given (a per-variant file or a combined file of `plumb debias
/// gender`; read once through shared_bias_table), else from the text of the passages in
/// ctx.documents() with the word list options.words (the measures' table is computed for every
/// docid of `lists`). `progress` gets (settings done, settings); a set `cancel` stops with
/// plumb::Error("... cancelled"). InvalidArgument for k == 0, a budget < 0 or NaN, neither a bias
/// file nor a word list, a word list without documents, and bad settings (from the filters);
/// ConfigError / IoError / ParseError from the filters' factories and the files.
PostFilterSweep sweep_post_filters(const std::vector<RankedList>& lists,
                                   std::shared_ptr<const eval::Qrels> qrels,
                                   const PostFilterSweepOptions& options, StageContext& ctx,
                                   const ProgressCallback& progress = {},
                                   const CancelToken* cancel = nullptr);

/// The table as aligned text, Markdown or JSON (numbers with 4 decimals in text and Markdown,
/// full precision in JSON).
std::string sweep_text(const PostFilterSweep& sweep);
std::string sweep_markdown(const PostFilterSweep& sweep);
nlohmann::json sweep_json(const PostFilterSweep& sweep);

/// `<prefix>.png` and `.svg`: |RaB@k| (y) against nDCG@k (x), one point per setting labelled
/// with its value (B=budget, p=proportion), a line per filter, the unfiltered run as its own
/// point.
void write_sweep_plot(const PostFilterSweep& sweep, const std::filesystem::path& prefix);

/// File name of a row's run inside an output directory: "none.run", "fair_topk_p0.3.run",
/// "bias_balance_budget0.05.run", "bias_balance_budgetinf.run".
std::string sweep_run_file_name(const SweepRow& row);

/// Writes the sweep into `dir` as one unit (plugin/atomic_directory.hpp): every row's run
/// (sweep_run_file_name, tag = `tag` or "plumb"), sweep.txt, sweep.md, sweep.json and the plot
/// sweep.png / sweep.svg. IoError on failure (`dir` is then unchanged).
void write_sweep(const PostFilterSweep& sweep, const std::filesystem::path& dir,
                 const std::string& tag = "plumb");

}  // namespace plumb::debias
