#pragma once
/// \file bias_metrics.hpp
/// Gender-bias measures over rankings (FORMULAS.md): RaB@t / ARaB@t (Rekabsaz & Schedl 2020),
/// pairwise ranking fairness PRF / nPRF and |ΔA-PRF| (Beutel et al. 2019, IBBR paper 004), and
/// the LIWC-style category difference between two query groups (paper 001).
///
/// Rankings are given as docids in rank order (best first), one list per query; use the
/// evaluator's ordering (score descending, trec_eval tie order) to build them from a run.
///
/// Documented choices:
/// - RaB_t(q) averages over the first min(t, |list|) passages; ARaB_t(q) averages RaB_t'(q) over
///   t' = 1..min(t, |list|). Queries with an empty list are skipped (counted in `empty`).
/// - A ranked passage missing from the bias table counts as (0, 0, 0) (no gender words) and is
///   counted in `missing`; with `strict` it throws InvalidArgument instead.
/// - Ranking-level bias = male - female (positive = leans male), as in FORMULAS.md; female and
///   male are the means of the passages' female and male components.
/// - PRF candidates are the retrieved passages of the query with their run scores; relevant
///   passages that were not retrieved take no part. g0 = retrieved non-relevant (unjudged counts
///   as non-relevant). PRF_m (PRF_f) is undefined when n1^m (n1^f) or n0 is 0; such queries are
///   left out of the corresponding mean.
/// - LIWC difference: per query, the mean category vector over its top-k passages (passages
///   without a vector are skipped and counted); per group, the mean over its queries (each query
///   weighs equally); difference = group A - group B.
///
/// All functions are pure and thread-safe.

#include <cstddef>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "eval/gender.hpp"
#include "eval/qrels.hpp"
#include "eval/run.hpp"

namespace plumb::eval {

/// One query's ranking: docids best first.
struct QueryRanking {
    std::string qid;
    std::vector<std::string> docids;
};

/// Rankings of every query of `run` in trec_eval's order (score descending, ties by docid
/// descending byte-wise), cut to `depth` documents (0 = all). Queries keep the run's order.
std::vector<QueryRanking> rankings_from_run(const Run& run, std::size_t depth = 0);

/// A (bias = male - female, female, male) triple at ranking level.
struct RankBias {
    double bias = 0.0;
    double female = 0.0;
    double male = 0.0;
};

/// RaB@t and ARaB@t of one query.
struct QueryRankBias {
    RankBias rab;
    RankBias arab;
};

struct RankBiasOptions {
    bool strict = false;  ///< throw on ranked passages missing from the bias table
};

/// RaB_t and ARaB_t of one ranking (t >= 1; throws InvalidArgument for t == 0 or an empty list).
/// `missing` (if given) is incremented for each of the top-t passages absent from `table`.
QueryRankBias query_rank_bias(std::span<const std::string> ranking, const BiasTable& table,
                              std::size_t t, const RankBiasOptions& options = {},
                              std::size_t* missing = nullptr);

/// Means over a query set for one cutoff.
struct RankBiasSummary {
    std::size_t cutoff = 0;
    std::size_t queries = 0;  ///< queries averaged (non-empty lists)
    std::size_t empty = 0;    ///< queries skipped because their list is empty
    std::size_t missing = 0;  ///< ranked passages (within the cutoff) without a bias entry
    RankBias rab;             ///< means over queries of RaB_t(q)
    RankBias arab;            ///< means over queries of ARaB_t(q)
};

/// RaB/ARaB means over `rankings` for each cutoff (each >= 1).
std::vector<RankBiasSummary> rank_bias(const std::vector<QueryRanking>& rankings,
                                       const BiasTable& table, std::span<const std::size_t> cutoffs,
                                       const RankBiasOptions& options = {});

/// PRF and nPRF of one query (see above); unset when undefined.
struct QueryPrf {
    std::size_t n1_male = 0;    ///< relevant candidates with d = +1
    std::size_t n1_female = 0;  ///< relevant candidates with d = -1
    std::size_t n0 = 0;         ///< non-relevant candidates
    std::optional<double> prf_male, prf_female;
    std::optional<double> nprf_male, nprf_female;
};

/// PRF_m/f(q) = (1/(n1·n0)) Σ_{j∈g1} Σ_{k∈g0} 1[R_j >= R_k]; nPRF adds the factor ½·R_j².
/// `scores`, `relevant` and `labels` (d ∈ {-1, 0, +1}) are parallel arrays over the candidates.
/// Throws InvalidArgument when the sizes differ or a label is not -1, 0 or +1.
QueryPrf query_prf(std::span<const double> scores, std::span<const bool> relevant,
                   std::span<const int> labels);

/// A scored candidate list of one query (run order irrelevant: scores decide).
struct ScoredRanking {
    std::string qid;
    std::vector<std::pair<std::string, double>> docs;  ///< (docid, score)
};

/// Scored lists of every query of `run` (file order within a query).
std::vector<ScoredRanking> scored_rankings_from_run(const Run& run);

/// PRF over a query set.
struct PrfSummary {
    std::size_t queries_male = 0;    ///< queries with a defined PRF_m
    std::size_t queries_female = 0;  ///< queries with a defined PRF_f
    double mean_prf_male = 0.0;      ///< 0 when queries_male == 0
    double mean_prf_female = 0.0;
    std::optional<double> delta;  ///< |mean PRF_m - mean PRF_f| (unset if a group is empty)
    std::size_t unlabelled = 0;   ///< candidates without a bias label (treated as d = 0)
    std::vector<std::pair<std::string, QueryPrf>> per_query;
};

/// PRF over `rankings` given the judgements `qrels` (relevant = grade >= `relevance_level`, as
/// trec_eval's -l; unjudged and negative grades are non-relevant) and passage labels
/// (docid -> d). Candidates without a label take d = 0 (counted in `unlabelled`).
PrfSummary prf(const std::vector<ScoredRanking>& rankings, const Qrels& qrels,
               const std::unordered_map<std::string, int>& labels, long relevance_level = 1);

/// Reads passage labels `docid<TAB>d` with d ∈ {-1, 0, 1} ('#' comments and blank lines
/// skipped). Bad lines / duplicates throw ParseError "<file>:<line>: ...".
std::unordered_map<std::string, int> read_bias_labels(const std::filesystem::path& path);

/// Per-passage category vectors: a header `docid<TAB>cat1<TAB>...<TAB>catK`, then rows
/// `docid<TAB>v1<TAB>...<TAB>vK` (finite numbers). Blank lines are skipped.
struct CategoryVectors {
    std::vector<std::string> categories;
    std::unordered_map<std::string, std::vector<double>> vectors;
};

/// Reads the format above; a missing header, a row with the wrong field count, a bad number or
/// a duplicate docid throws ParseError "<file>:<line>: ...".
CategoryVectors read_category_vectors(const std::filesystem::path& path);

/// Category means of two query groups, their signed difference (A - B) and its absolute value
/// |A - B| (paper 001's Table 2 reports the absolute difference).
struct CategoryDifference {
    std::vector<std::string> categories;
    std::vector<double> mean_a, mean_b, difference, abs_difference;
    std::size_t queries_a = 0, queries_b = 0;  ///< queries with at least one vector in top-k
    std::size_t missing = 0;                   ///< top-k passages without a vector
};

/// The LIWC-style difference over the top-`k` passages (default 10, paper 001).
CategoryDifference category_difference(const std::vector<QueryRanking>& group_a,
                                       const std::vector<QueryRanking>& group_b,
                                       const CategoryVectors& vectors, std::size_t k = 10);

}  // namespace plumb::eval
