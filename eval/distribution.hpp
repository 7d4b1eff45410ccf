#pragma once
/// \file distribution.hpp
/// Distribution of a per-query measure (EqualizeIR, paper 003: μ, σ and c_v = σ/μ of per-query
/// nDCG@10) and grouping of queries by a per-query attribute (complexity buckets, query types).
///
/// Documented choices:
/// - σ is the population standard deviation (divisor n) by default: the EqualizeIR paper reports
///   "standard deviation across test queries" without naming the estimator, and the query set is
///   the whole population being described. SdKind::Sample (divisor n - 1) is available.
/// - c_v = σ/μ is undefined (nullopt) when μ = 0.
/// - Attribute file: `qid<TAB>value`, one per line, blank lines and '#' lines skipped.
/// - Numeric attributes go into quantile buckets exactly like pandas.qcut: edges are the
///   quantiles at 0, 1/q, ..., 1 with linear interpolation (numpy's default), intervals are
///   right-closed (lo, hi] and the first includes its lower edge. Tied values therefore always
///   share a bucket (buckets may be unequal). Edges are computed over all values in the
///   attribute file. With q = 3 and no labels given the buckets are named easy / medium / hard:
///   LOW values are easy (for a complexity score, low complexity = easy).
/// - Fixed edges e_1 < ... < e_m give m + 1 buckets (-inf, e_1], (e_1, e_2], ..., (e_m, +inf).
/// - Categorical attributes: one group per distinct value, groups sorted by value.

#include <cstddef>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

namespace plumb::eval {

enum class SdKind { Population, Sample };

/// μ, σ and c_v of a sample.
struct DistributionStats {
    std::size_t n = 0;
    double mean = 0.0;         ///< 0 when n == 0
    double sd = 0.0;           ///< 0 when n == 0 (or n == 1 for Sample)
    std::optional<double> cv;  ///< sd / mean; nullopt when mean == 0 or n == 0
};

/// Describes `values` (all finite, else InvalidArgument).
DistributionStats describe(std::span<const double> values, SdKind kind = SdKind::Population);

/// qid -> raw attribute value, in file order.
struct QueryAttributes {
    std::vector<std::pair<std::string, std::string>> rows;
    /// True when every value parses as a finite number.
    bool numeric() const;
};

/// Reads `qid<TAB>value` lines. A line without a TAB, an empty qid or value, or a repeated qid
/// throws ParseError "<file>:<line>: ...".
QueryAttributes read_query_attributes(const std::filesystem::path& path);

enum class GroupingKind { Auto, Numeric, Categorical };

struct GroupingSpec {
    GroupingKind kind = GroupingKind::Auto;  ///< Auto: numeric when every value is a number
    std::size_t quantiles = 3;               ///< number of quantile buckets (numeric, no edges)
    std::vector<double> edges;               ///< fixed inner edges (numeric; overrides quantiles)
    /// Bucket names (numeric), one per bucket; default easy/medium/hard for 3 quantiles, else
    /// "Q1".."Qn" for quantiles and "<=e1", "(e1,e2]", ..., ">e_m" for edges.
    std::vector<std::string> labels;
};

/// An assignment of queries to named groups.
struct QueryGroups {
    std::vector<std::string> names;                      ///< group order for output
    std::unordered_map<std::string, std::size_t> group;  ///< qid -> index into names
    std::vector<double> edges;  ///< numeric grouping: all bucket edges used (incl. min/max)
};

/// Builds groups from attributes. Throws InvalidArgument when Numeric is requested but a value
/// is not a number, quantiles is 0, edges are not strictly increasing, the labels count does not
/// match the buckets, or there are no attribute rows.
QueryGroups group_queries(const QueryAttributes& attributes, const GroupingSpec& spec);

/// Per-group distribution of a per-query measure.
struct GroupStats {
    std::string name;
    DistributionStats stats;
};

/// Stats per group for the per-query `values` of `qids` (parallel arrays). Queries without a
/// group are counted in `unassigned` (if given) and left out. Groups without queries get n = 0.
std::vector<GroupStats> group_stats(std::span<const std::string> qids,
                                    std::span<const double> values, const QueryGroups& groups,
                                    SdKind kind = SdKind::Population,
                                    std::size_t* unassigned = nullptr);

/// Quantile of sorted values at p ∈ [0, 1] with linear interpolation (numpy "linear").
double quantile_sorted(std::span<const double> sorted, double p);

}  // namespace plumb::eval
