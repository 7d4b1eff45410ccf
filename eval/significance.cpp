#include "eval/significance.hpp"

#include <algorithm>
#include <boost/math/distributions/normal.hpp>
#include <boost/math/distributions/students_t.hpp>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>

#include "plugin/error.hpp"

namespace plumb::eval {

namespace {

void check_pairs(std::span<const double> a, std::span<const double> b, const char* what) {
    if (a.size() != b.size()) {
        throw InvalidArgument(std::string(what) + ": paired samples differ in size (" +
                              std::to_string(a.size()) + " vs " + std::to_string(b.size()) + ")");
    }
    for (std::size_t i = 0; i < a.size(); ++i) {
        if (!std::isfinite(a[i]) || !std::isfinite(b[i])) {
            throw InvalidArgument(std::string(what) + ": value " + std::to_string(i) +
                                  " is not finite");
        }
    }
}

/// Two-sided upper tail 2·P(N(0,1) >= |z|), capped at 1.
double two_sided_normal(double z) {
    boost::math::normal_distribution<double> normal(0.0, 1.0);
    return std::min(1.0, 2.0 * boost::math::cdf(boost::math::complement(normal, std::fabs(z))));
}

}  // namespace

TTestResult paired_t_test(std::span<const double> a, std::span<const double> b) {
    check_pairs(a, b, "paired t-test");
    const std::size_t n = a.size();
    if (n < 2)
        throw InvalidArgument("paired t-test: needs at least 2 pairs, got " + std::to_string(n));
    TTestResult r;
    r.n = n;
    r.df = static_cast<double>(n - 1);
    double sum = 0.0;
    for (std::size_t i = 0; i < n; ++i) sum += a[i] - b[i];
    r.mean_diff = sum / static_cast<double>(n);
    double ss = 0.0;
    for (std::size_t i = 0; i < n; ++i) {
        const double e = (a[i] - b[i]) - r.mean_diff;
        ss += e * e;
    }
    r.sd_diff = std::sqrt(ss / r.df);
    // Constant differences: the t statistic degenerates (0/0 or x/0).
    if (r.sd_diff <= kZeroTolerance * std::max(1.0, std::fabs(r.mean_diff))) {
        if (std::fabs(r.mean_diff) <= kZeroTolerance) {
            r.t = 0.0;
            r.p_value = 1.0;
        } else {
            r.t = r.mean_diff > 0 ? std::numeric_limits<double>::infinity()
                                  : -std::numeric_limits<double>::infinity();
            r.p_value = 0.0;
        }
        return r;
    }
    r.t = r.mean_diff / (r.sd_diff / std::sqrt(static_cast<double>(n)));
    boost::math::students_t_distribution<double> dist(r.df);
    r.p_value =
        std::min(1.0, 2.0 * boost::math::cdf(boost::math::complement(dist, std::fabs(r.t))));
    return r;
}

std::vector<std::uint64_t> signed_rank_counts(std::size_t n) {
    if (n > 60)
        throw InvalidArgument("signed_rank_counts: n must be <= 60, got " + std::to_string(n));
    const std::size_t max_sum = n * (n + 1) / 2;
    // counts[w] = number of subsets of {1..k} with sum w, built up for k = 1..n (0/1 knapsack).
    std::vector<std::uint64_t> counts(max_sum + 1, 0);
    counts[0] = 1;
    for (std::size_t k = 1; k <= n; ++k) {
        const std::size_t top = k * (k + 1) / 2;
        for (std::size_t w = top; w >= k; --w) counts[w] += counts[w - k];
    }
    return counts;
}

WilcoxonResult wilcoxon_signed_rank(std::span<const double> a, std::span<const double> b,
                                    const WilcoxonOptions& options) {
    check_pairs(a, b, "Wilcoxon signed-rank test");
    struct Diff {
        double abs;
        bool positive;
    };
    std::vector<Diff> diffs;
    diffs.reserve(a.size());
    WilcoxonResult r;
    for (std::size_t i = 0; i < a.size(); ++i) {
        const double d = a[i] - b[i];
        if (std::fabs(d) <= kZeroTolerance) {
            ++r.n_zero;
            continue;
        }
        diffs.push_back({std::fabs(d), d > 0});
    }
    const std::size_t n = diffs.size();
    r.n = n;
    if (n == 0) {
        r.p_value = 1.0;
        return r;
    }
    std::sort(diffs.begin(), diffs.end(),
              [](const Diff& x, const Diff& y) { return x.abs < y.abs; });

    // Mid-ranks over runs of tied |d|; tie-correction term Σ(t³ - t).
    double tie_term = 0.0;
    std::size_t i = 0;
    while (i < n) {
        std::size_t j = i + 1;
        while (j < n && diffs[j].abs - diffs[i].abs <= kZeroTolerance * std::max(1.0, diffs[i].abs))
            ++j;
        const double t = static_cast<double>(j - i);
        const double rank = (static_cast<double>(i + 1) + static_cast<double>(j)) / 2.0;
        for (std::size_t k = i; k < j; ++k) (diffs[k].positive ? r.w_plus : r.w_minus) += rank;
        if (j - i > 1) {
            r.ties = true;
            tie_term += t * t * t - t;
        }
        i = j;
    }
    r.statistic = std::min(r.w_plus, r.w_minus);

    bool exact = false;
    switch (options.method) {
        case WilcoxonMethod::Auto:
            exact = !r.ties && n <= options.exact_max_n;
            break;
        case WilcoxonMethod::Exact:
            if (r.ties) throw InvalidArgument("Wilcoxon exact test: tied differences");
            if (n > 60) throw InvalidArgument("Wilcoxon exact test: more than 60 differences");
            exact = true;
            break;
        case WilcoxonMethod::Normal:
            exact = false;
            break;
    }
    r.exact = exact;
    const double nd = static_cast<double>(n);
    if (exact) {
        // Without ties every rank sum is an integer. p = 2·P(W+ <= min(W+, W-)) by symmetry.
        const auto counts = signed_rank_counts(n);
        const auto s = static_cast<std::size_t>(std::llround(r.statistic));
        long double below = 0.0L;
        for (std::size_t w = 0; w <= s && w < counts.size(); ++w)
            below += static_cast<long double>(counts[w]);
        const long double total = std::ldexp(1.0L, static_cast<int>(n));
        r.p_value = std::min(1.0, static_cast<double>(2.0L * below / total));
        return r;
    }
    const double mean = nd * (nd + 1.0) / 4.0;
    const double var = nd * (nd + 1.0) * (2.0 * nd + 1.0) / 24.0 - tie_term / 48.0;
    if (var <= 0.0) {
        r.p_value = 1.0;
        return r;
    }
    double dev = r.statistic - mean;  // <= 0 since statistic = min(W+, W-)
    if (options.continuity_correction && dev != 0.0) dev -= (dev > 0 ? 0.5 : -0.5);
    r.z = dev / std::sqrt(var);
    r.p_value = two_sided_normal(r.z);
    return r;
}

std::vector<double> adjust_p_values(std::span<const double> p, Correction correction) {
    for (double v : p) {
        if (!(v >= 0.0 && v <= 1.0)) throw InvalidArgument("adjust_p_values: p outside [0, 1]");
    }
    const std::size_t m = p.size();
    std::vector<double> out(p.begin(), p.end());
    switch (correction) {
        case Correction::None:
            break;
        case Correction::Bonferroni:
            for (double& v : out) v = std::min(1.0, v * static_cast<double>(m));
            break;
        case Correction::Holm: {
            std::vector<std::size_t> order(m);
            std::iota(order.begin(), order.end(), std::size_t{0});
            std::stable_sort(order.begin(), order.end(),
                             [&](std::size_t x, std::size_t y) { return p[x] < p[y]; });
            double running = 0.0;
            for (std::size_t k = 0; k < m; ++k) {
                const double adj = std::min(1.0, static_cast<double>(m - k) * p[order[k]]);
                running = std::max(running, adj);
                out[order[k]] = running;
            }
            break;
        }
    }
    return out;
}

Correction parse_correction(std::string_view name) {
    if (name == "none") return Correction::None;
    if (name == "bonferroni") return Correction::Bonferroni;
    if (name == "holm") return Correction::Holm;
    throw InvalidArgument("unknown correction '" + std::string(name) +
                          "' (known: none, bonferroni, holm)");
}

const char* correction_name(Correction correction) noexcept {
    switch (correction) {
        case Correction::None:
            return "none";
        case Correction::Bonferroni:
            return "bonferroni";
        case Correction::Holm:
            return "holm";
    }
    return "?";
}

}  // namespace plumb::eval
