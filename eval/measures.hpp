#pragma once
/// \file measures.hpp
/// Effectiveness measures in a registry keyed by trec_eval's names, with trec_eval 9/10
/// semantics (m_*.c of usnistgov/trec_eval), plus two measures trec_eval lacks:
///
/// | name              | value per query (rel = grade >= relevance level)                        |
/// |-------------------|--------------------------------------------------------------------------|
/// | runid             | the run's tag (summary only)                                             |
/// | num_q             | number of queries (summary only)                                         |
/// | num_ret           | documents retrieved (summary: sum)                                       |
/// | num_rel           | relevant documents in the qrels (summary: sum)                           |
/// | num_rel_ret       | relevant documents retrieved (summary: sum)                              |
/// | map               | sum of precision at each relevant retrieved / num_rel                    |
/// | gm_map            | AP; summary = exp(mean(log(max(AP, 1e-5)))) (summary only)               |
/// | Rprec             | relevant in top num_rel / num_rel                                        |
/// | bpref             | (1/R) sum over judged rel r of 1 - min(n_r, R)/min(N, R); n_r = judged   |
/// |                   | non-relevant above r, N = judged non-relevant, R = num_rel               |
/// | recip_rank        | 1 / rank of the first relevant                                           |
/// | iprec_at_recall.x | interpolated precision at recall levels x (default 0,.1,...,1)          |
/// | P.k               | relevant in top k / k (missing ranks count as non-relevant)              |
/// | recall.k          | relevant in top k / num_rel                                              |
/// | ndcg              | DCG / ideal DCG, gain = grade, discount log2(rank + 1), whole list       |
/// | ndcg_cut.k        | the same, both cut at k                                                  |
/// | map_cut.k         | AP over the top k, divided by num_rel                                    |
/// | success.k         | 1 if a relevant document is in the top k                                 |
/// | mrr_cut.k         | (plumb) 1 / rank of the first relevant within the top k, else 0          |
/// | judged.k          | (plumb) documents of the top k present in the qrels / k                  |
/// | rab_V_cut.k       | (plumb) RaB@k: mean over the top min(k, n) of male - female (variant V = |
/// |                   | tc, tf or bool of the loaded bias file; Rekabsaz & Schedl 2020)          |
/// | arab_V_cut.k      | (plumb) ARaB@k: mean of RaB@t' over t' = 1..min(k, n)                    |
/// | abs_rab_V_cut.k   | (plumb) |RaB@k| (its mean is what a balancing post-filter drives to 0) |
///
/// The rest of trec_eval's measures is implemented too (relstring, infAP, gm_bpref,
/// Rprec_mult, utility, 11pt_avg, binG, G, dcg, ideal_dcg, ndcg_rel, Rndcg, relative_P, set_P,
/// set_relative_P, set_recall, set_map, set_F, num_nonrel_judged_ret, rbp, rbp_resid, unj),
/// following the m_*.c files of trec_eval 10, and checked line for line against trec_eval
/// 10.0 (tests/eval/trec_eval_ref). Gain measures (ndcg, dcg, ideal_dcg, ndcg_rel, Rndcg, G,
/// rbp) take trec_eval's `level=gain` pairs (`ndcg.1=3,2=9,4=4.5`), rbp and rbp_resid also
/// `p=` (persistence, default 0.9).
///
/// nDCG uses the raw grade as gain for every grade > 0 regardless of the relevance level, as
/// trec_eval does. Default cutoffs are trec_eval's: 5,10,15,20,30,100,200,500,1000 (P, recall,
/// ndcg_cut, map_cut, relative_P), 1,5,10 (success), 5,10,20 (unj); plumb's mrr_cut and judged
/// default to 10. Nicknames: `official` (runid num_q num_ret num_rel num_rel_ret map gm_map
/// Rprec bpref recip_rank iprec_at_recall P: trec_eval's default set), `all_trec` (trec_eval
/// 10's: adds relstring recall unj rbp rbp_resid infAP gm_bpref utility 11pt_avg ndcg
/// relative_P Rprec_mult success map_cut ndcg_cut ndcg_rel Rndcg binG G set_* and
/// num_nonrel_judged_ret; not dcg/ideal_dcg), `set`.
///
/// ir_measures names are accepted beside trec_eval's and print under the name given (after
/// trec_eval's columns, in command-line order): AP, AP@k (map, map_cut.k), P@k, R@k (recall),
/// RR (recip_rank), RR@k (mrr_cut.k), nDCG, nDCG@k (ndcg_cut.k), Judged@k, Success@k, IPrec@x
/// (iprec_at_recall.x), Bpref, infAP, Rprec, NumRet, NumRel, NumRelRet, NumQ, SetP, SetR, SetF,
/// SetAP, RBP, RBP(p=x). Per-measure options of ir_measures (rel=, judged_only=, gains, dcg=)
/// are refused with a pointer to -l / -J.

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "eval/qrels.hpp"

namespace plumb::eval {

/// Relevance value of a retrieved document, as in trec_eval's results_rel_list.
inline constexpr long kNotInQrels = -1;     ///< not in the qrels of the query (trec_eval NONPOOL)
inline constexpr long kNegativeGrade = -2;  ///< in the qrels with a negative grade (UNJUDGED)

/// Everything a measure sees of one query.
struct QueryJudgements {
    /// Relevance value of each retrieved document in rank order (after sorting and -M):
    /// the grade (>= 0) when judged, kNotInQrels or kNegativeGrade otherwise.
    std::span<const long> rels;
    /// Number of documents in the qrels with each grade >= 0 that occurs, by increasing grade.
    std::span<const GradeCount> level_counts;
    /// Minimum grade counted as relevant (trec_eval -l, default 1).
    long relevance_level = 1;
    /// iprec_at_recall: trec_eval 9's recall-level rounding, (long)(x * num_rel + 0.9),
    /// instead of trec_eval 10's lround(x * num_rel). The two differ when the fractional part
    /// of x * num_rel lies in (0.1, 0.5), e.g. x = 0.4 with 3 relevant documents.
    bool trec_eval_9_iprec = false;
    /// trec_eval -N: documents in the collection (only `utility` uses it). Default 0.
    long num_docs_in_coll = 0;
    /// Gender bias of each retrieved document in rank order (parallel to rels), one span per
    /// bias variant (index: tc 0, tf 1, bool 2): male - female of the passage's magnitudes
    /// (eval/gender.hpp), 0 for a passage without an entry. Filled by the Evaluator for the
    /// variants the selected bias measures need (EvalOptions::bias_tables); empty otherwise.
    std::span<const double> passage_bias[3];
};

/// How a value is printed and summarised.
enum class ValueKind {
    Float,  ///< printed "%6.4f"
    Long,   ///< printed "%ld"
    Text,   ///< relstring: a per-query string (QueryValues::relstring), no summary
};

/// One output value of a measure ("P_5", "map", ...).
struct Column {
    std::string name;  ///< printed name: trec_eval's (measure, measure_cutoff), or the
                       ///< ir_measures name the user gave ("nDCG@10")
    ValueKind kind = ValueKind::Float;
    bool per_query = true;  ///< printed per query with -q (false for num_q, gm_map)
    std::string trec_name;  ///< trec_eval's printed name of the value ("ndcg_cut_10")
};

/// A selection of measures with their parameters, in trec_eval's output order (registry order,
/// not command-line order).
class MeasureSet {
public:
    MeasureSet() = default;

    /// Parses trec_eval `-m` arguments, e.g. {"map", "P.5,10", "ndcg_cut.10", "official"}.
    /// As in trec_eval, the first parameter list given for a measure wins, cutoffs are sorted
    /// and must be positive and distinct, parameters of measures without cutoffs are ignored.
    /// Throws ConfigError naming the known measures for an unknown name or bad parameters.
    static MeasureSet parse(const std::vector<std::string>& specs);

    /// trec_eval's default selection (`official`).
    static MeasureSet official();

    /// Value columns in output order (runid excluded: see has_runid()).
    const std::vector<Column>& columns() const noexcept { return m_columns; }
    /// Index of a column by printed name ("P_10"), or -1.
    long column_index(std::string_view name) const noexcept;
    /// True when `runid` is selected (printed first in the summary).
    bool has_runid() const noexcept { return m_runid; }
    bool empty() const noexcept { return m_columns.empty() && !m_runid; }

    /// Computes all columns for one query into `out` (size columns().size()).
    void compute(const QueryJudgements& q, std::span<double> out) const;

    /// Summary of each column over per-query rows (rows in trec_eval order): mean for most,
    /// sum for num_ret/num_rel/num_rel_ret, count for num_q, geometric mean for gm_map.
    /// `num_queries` is the divisor (all qrels queries with -c).
    std::vector<double> summarize(const std::vector<std::vector<double>>& rows,
                                  std::size_t num_queries) const;

    /// Names accepted by parse(): measures in registry order, then nicknames.
    static std::vector<std::string> known_names();

    struct Selected {
        std::size_t measure = 0;     ///< index in the registry
        std::vector<double> params;  ///< cutoffs (ranks, or recall levels for iprec_at_recall)
        std::size_t first_column = 0;
    };

    /// Bias variants (0 tc, 1 tf, 2 bool) the selected gender-bias measures need
    /// (rab_tc_cut, arab_tf_cut, abs_rab_bool_cut, ...).
    const std::vector<int>& bias_variants() const noexcept { return m_bias_variants; }

    /// Length of `relstring` when selected (default 10), else -1.
    long relstring_length() const noexcept { return m_relstring; }

private:
    void add_column_set(std::size_t measure, bool given, const std::string& param_text,
                        const std::string* alias);
    std::vector<Selected> m_selected;
    std::vector<Column> m_columns;
    bool m_runid = false;
    long m_relstring = -1;
    std::vector<int> m_bias_variants;
};

}  // namespace plumb::eval
