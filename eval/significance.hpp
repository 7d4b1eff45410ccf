#pragma once
/// \file significance.hpp
/// Paired significance tests over per-query measure values, and multiple-comparison corrections.
///
/// Both tests take two equally long vectors of paired observations (one value per query, same
/// query order) and test the two-sided null hypothesis "no difference". All functions are pure
/// and thread-safe.
///
/// Conventions (documented choices):
/// - Differences are d_i = a_i - b_i. |d_i| <= kZeroTolerance is treated as an exact zero, and two
///   |d| values within kZeroTolerance of each other are ties, so that values such as 0.3-0.1 and
///   0.5-0.3 (equal on paper, not in binary floating point) are ranked as the tie they are.
/// - Wilcoxon: zero differences are dropped before ranking (Wilcoxon's original method, scipy's
///   default zero_method="wilcox"); the exact null distribution of W+ is used when at most
///   `exact_max_n` (default 25) non-zero differences remain and none of their |d| are tied;
///   otherwise the normal approximation with tie correction of the variance and continuity
///   correction is used, as in scipy.stats.wilcoxon(correction=True).

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace plumb::eval {

/// Differences whose magnitude is at most this are zero; |d| closer than this are ties.
inline constexpr double kZeroTolerance = 1e-12;

/// Result of a paired two-sided t-test (Student's t on the differences, df = n - 1).
struct TTestResult {
    std::size_t n = 0;       ///< number of pairs
    double mean_diff = 0.0;  ///< mean of a - b
    double sd_diff = 0.0;    ///< sample standard deviation of a - b (divisor n - 1)
    double t = 0.0;          ///< mean_diff / (sd_diff / sqrt(n)); ±inf when sd is 0 and mean not
    double df = 0.0;         ///< degrees of freedom, n - 1
    double p_value = 1.0;    ///< two-sided p-value
};

/// Paired two-sided t-test of a against b. When every difference is (numerically) zero the result
/// is t = 0, p = 1; when the differences are constant but non-zero, t = ±inf and p = 0.
/// Throws InvalidArgument when the sizes differ or n < 2, or a value is not finite.
TTestResult paired_t_test(std::span<const double> a, std::span<const double> b);

/// How the Wilcoxon p-value is obtained.
enum class WilcoxonMethod {
    Auto,    ///< exact when n <= exact_max_n and no ties, else normal approximation
    Exact,   ///< exact null distribution (throws InvalidArgument if ties or n > 60)
    Normal,  ///< normal approximation (tie- and continuity-corrected)
};

struct WilcoxonOptions {
    WilcoxonMethod method = WilcoxonMethod::Auto;
    /// Largest number of non-zero differences for which Auto uses the exact distribution.
    std::size_t exact_max_n = 25;
    /// Continuity correction (±0.5) in the normal approximation (scipy's correction=True).
    bool continuity_correction = true;
};

/// Result of a two-sided Wilcoxon signed-rank test on paired values.
struct WilcoxonResult {
    std::size_t n = 0;       ///< pairs with a non-zero difference (the ranked ones)
    std::size_t n_zero = 0;  ///< pairs with a zero difference (dropped)
    double w_plus = 0.0;     ///< sum of ranks of positive differences (a > b)
    double w_minus = 0.0;    ///< sum of ranks of negative differences
    double statistic = 0.0;  ///< min(w_plus, w_minus), scipy's two-sided statistic
    bool exact = false;      ///< true when the exact distribution was used
    bool ties = false;       ///< true when some |d| are tied (mid-ranks used)
    double z = 0.0;          ///< (statistic - mean - cc)/sd as scipy, cc = ±0.5; 0 if exact
    double p_value = 1.0;    ///< two-sided p-value; 1 when n == 0
};

/// Wilcoxon signed-rank test of a against b. Throws InvalidArgument when sizes differ, a value
/// is not finite, or the Exact method is asked for with ties or more than 60 differences.
WilcoxonResult wilcoxon_signed_rank(std::span<const double> a, std::span<const double> b,
                                    const WilcoxonOptions& options = {});

/// Number of subsets of {1..n} whose sum is w, for w = 0..n(n+1)/2: the exact null distribution
/// of W+ times 2^n. Requires n <= 60 (throws InvalidArgument otherwise; counts stay exact in
/// 64 bits).
std::vector<std::uint64_t> signed_rank_counts(std::size_t n);

/// Multiple-comparison correction of a family of p-values.
enum class Correction { None, Bonferroni, Holm };

/// Adjusted p-values, in the input order. Bonferroni: min(1, m·p). Holm (step-down): with
/// p_(1) <= ... <= p_(m), adj_(i) = max_{j<=i} min(1, (m - j + 1)·p_(j)). Rejecting adj <= alpha
/// controls the family-wise error rate at alpha. Throws InvalidArgument for p outside [0, 1].
std::vector<double> adjust_p_values(std::span<const double> p, Correction correction);

/// Parses "none", "bonferroni", "holm" (throws InvalidArgument otherwise).
Correction parse_correction(std::string_view name);

/// The name parse_correction() reads ("none", "bonferroni", "holm").
const char* correction_name(Correction correction) noexcept;

}  // namespace plumb::eval
