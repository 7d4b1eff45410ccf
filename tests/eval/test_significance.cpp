// Significance tests against textbook values and an independent reference.
//
// Reference values marked "scipy" were computed offline with scipy 1.10.1 (Debian
// python3-scipy): scipy.stats.ttest_rel / ttest_1samp and scipy.stats.wilcoxon(method=...,
// correction=..., zero_method='wilcox'); small exact cases are also derived by hand below.

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "eval/significance.hpp"
#include "plugin/error.hpp"

using namespace plumb::eval;

namespace {
std::vector<double> zeros(std::size_t n) { return std::vector<double>(n, 0.0); }
}  // namespace

TEST(PairedTTest, HandComputedDifferences) {
    // d = 1..5: mean 3, sample variance (4+1+0+1+4)/4 = 2.5, sd = 1.58114,
    // t = 3 / (1.58114/sqrt(5)) = 3 / 0.707107 = 4.242641 (= 3·sqrt(2)), df = 4.
    // Two-sided p (scipy ttest_1samp([1,2,3,4,5], 0)): 0.013235599563682695.
    std::vector<double> a{1, 2, 3, 4, 5};
    auto r = paired_t_test(a, zeros(5));
    EXPECT_EQ(r.n, 5u);
    EXPECT_DOUBLE_EQ(r.mean_diff, 3.0);
    EXPECT_NEAR(r.sd_diff, std::sqrt(2.5), 1e-12);
    EXPECT_NEAR(r.t, 3.0 * std::sqrt(2.0), 1e-12);
    EXPECT_DOUBLE_EQ(r.df, 4.0);
    EXPECT_NEAR(r.p_value, 0.013235599563682695, 1e-12);
}

TEST(PairedTTest, StudentSleepData) {
    // Student (1908) / Cushny-Peebles sleep data (R's `sleep`): extra hours of sleep of 10
    // patients under two drugs. R: t.test(extra ~ group, paired = TRUE) gives t = -4.0621,
    // df = 9, p-value = 0.002833. scipy ttest_rel(y, x): t = 4.062127683382037,
    // p = 0.00283289019738427.
    std::vector<double> x{0.7, -1.6, -0.2, -1.2, -0.1, 3.4, 3.7, 0.8, 0.0, 2.0};
    std::vector<double> y{1.9, 0.8, 1.1, 0.1, -0.1, 4.4, 5.5, 1.6, 4.6, 3.4};
    auto r = paired_t_test(y, x);
    EXPECT_NEAR(r.t, 4.062127683382037, 1e-9);
    EXPECT_NEAR(r.p_value, 0.00283289019738427, 1e-10);
    auto rev = paired_t_test(x, y);
    EXPECT_NEAR(rev.t, -4.062127683382037, 1e-9);
    EXPECT_NEAR(rev.p_value, r.p_value, 1e-15);
}

TEST(PairedTTest, MeasureLikeValues) {
    // d = (0.25, 0.25, 0.5, -0.25, 0.5, 0.25): mean 1.5/6 = 0.25; squared deviations
    // 0,0,0.0625,0.25,0.0625,0 -> ss 0.375, var 0.075, sd 0.273861, t = 0.25/(0.273861/sqrt 6)
    // = 2.236068 (= sqrt 5), df 5; scipy ttest_rel: p = 0.0755868184216124.
    std::vector<double> a{0.5, 0.75, 1.0, 0.25, 0.5, 1.0};
    std::vector<double> b{0.25, 0.5, 0.5, 0.5, 0.0, 0.75};
    auto r = paired_t_test(a, b);
    EXPECT_NEAR(r.t, std::sqrt(5.0), 1e-12);
    EXPECT_NEAR(r.p_value, 0.0755868184216124, 1e-12);
}

TEST(PairedTTest, DegenerateAndBadInput) {
    std::vector<double> a{0.5, 0.5, 0.5};
    auto same = paired_t_test(a, a);
    EXPECT_EQ(same.t, 0.0);
    EXPECT_EQ(same.p_value, 1.0);
    std::vector<double> b{0.25, 0.25, 0.25};
    auto shift = paired_t_test(a, b);  // constant non-zero difference
    EXPECT_TRUE(std::isinf(shift.t));
    EXPECT_GT(shift.t, 0);
    EXPECT_EQ(shift.p_value, 0.0);
    std::vector<double> one{1.0};
    EXPECT_THROW(paired_t_test(one, one), plumb::InvalidArgument);
    EXPECT_THROW(paired_t_test(a, one), plumb::InvalidArgument);
    std::vector<double> nan{0.1, NAN, 0.3};
    EXPECT_THROW(paired_t_test(a, nan), plumb::InvalidArgument);
}

TEST(SignedRankCounts, SmallNByHand) {
    // n = 3: subsets of {1,2,3} by sum: 0:{} 1:{1} 2:{2} 3:{3},{1,2} 4:{1,3} 5:{2,3} 6:{1,2,3}
    EXPECT_EQ(signed_rank_counts(3), (std::vector<std::uint64_t>{1, 1, 1, 2, 1, 1, 1}));
    // n = 4 total 16, sums 0..10: 1,1,1,2,2,2,2,2,1,1,1.
    EXPECT_EQ(signed_rank_counts(4), (std::vector<std::uint64_t>{1, 1, 1, 2, 2, 2, 2, 2, 1, 1, 1}));
    auto c20 = signed_rank_counts(20);
    std::uint64_t total = 0;
    for (auto c : c20) total += c;
    EXPECT_EQ(total, std::uint64_t{1} << 20);
    EXPECT_EQ(signed_rank_counts(0), (std::vector<std::uint64_t>{1}));
    EXPECT_THROW(signed_rank_counts(61), plumb::InvalidArgument);
}

TEST(Wilcoxon, ExactByHand) {
    // d = (1, 2, 3, -4): ranks 1..4, W+ = 6, W- = 4, T = 4. With n = 4 (16 sign patterns)
    // P(W <= 4) = (1+1+1+2+2)/16 = 7/16, two-sided p = 14/16 = 0.875 (scipy: 0.875).
    std::vector<double> d{1, 2, 3, -4};
    auto r = wilcoxon_signed_rank(d, zeros(4));
    EXPECT_TRUE(r.exact);
    EXPECT_FALSE(r.ties);
    EXPECT_DOUBLE_EQ(r.w_plus, 6.0);
    EXPECT_DOUBLE_EQ(r.w_minus, 4.0);
    EXPECT_DOUBLE_EQ(r.statistic, 4.0);
    EXPECT_DOUBLE_EQ(r.p_value, 0.875);

    // All five differences positive: T = 0, p = 2·(1/32) = 0.0625 (scipy: 0.0625).
    std::vector<double> pos{1, 2, 3, 4, 5};
    auto p = wilcoxon_signed_rank(pos, zeros(5));
    EXPECT_DOUBLE_EQ(p.statistic, 0.0);
    EXPECT_DOUBLE_EQ(p.p_value, 0.0625);
}

TEST(Wilcoxon, ExactTwelveAgainstScipy) {
    // |d| ranks: 0.125->1, 0.25->2 (neg), 0.5->3, 1.5->4, 2->5, 3->6 (neg), 4.5->7, 6->8,
    // 7.5->9, 8->10 (neg), 9->11, 10->12. W- = 2 + 6 + 10 = 18, W+ = 78 - 18 = 60.
    // scipy wilcoxon(d, method='exact'): statistic 18, p = 0.10986328125 (= 450/4096).
    std::vector<double> d{0.5, -0.25, 1.5, 2, -3, 4.5, 0.125, 6, 7.5, -8, 9, 10};
    auto r = wilcoxon_signed_rank(d, zeros(d.size()));
    EXPECT_TRUE(r.exact);
    EXPECT_DOUBLE_EQ(r.w_minus, 18.0);
    EXPECT_DOUBLE_EQ(r.w_plus, 60.0);
    EXPECT_DOUBLE_EQ(r.p_value, 0.10986328125);
    // Normal approximation of the same data: mean 12·13/4 = 39, var 12·13·25/24 = 162.5,
    // z = (18 - 39 + 0.5)/sqrt(162.5) = -1.60814; scipy (approx, correction): 0.10780182537536617.
    auto n = wilcoxon_signed_rank(d, zeros(d.size()), {WilcoxonMethod::Normal, 25, true});
    EXPECT_FALSE(n.exact);
    EXPECT_NEAR(n.z, -20.5 / std::sqrt(162.5), 1e-12);
    EXPECT_NEAR(n.p_value, 0.10780182537536617, 1e-12);
}

TEST(Wilcoxon, TiesAndZerosUseNormalApproximation) {
    // d = 1,1,-1,2,2,3,-3,4,0,5,5,5,-6,7,8: the zero is dropped (n = 14). |d| mid-ranks:
    // 1 (x3) -> 2, 2 (x2) -> 4.5, 3 (x2) -> 6.5, 4 -> 8, 5 (x3) -> 10, 6 -> 12, 7 -> 13, 8 -> 14.
    // W- = 2 + 6.5 + 12 = 20.5. Tie groups 3,2,2,3: Σ(t³-t) = 24+6+6+24 = 60.
    // var = 14·15·29/24 - 60/48 = 253.75 - 1.25 = 252.5; mean = 52.5.
    // scipy (approx, correction=True): 0.047440322802555085; correction=False:
    // 0.044029098735850654.
    std::vector<double> d{1, 1, -1, 2, 2, 3, -3, 4, 0, 5, 5, 5, -6, 7, 8};
    auto r = wilcoxon_signed_rank(d, zeros(d.size()));
    EXPECT_FALSE(r.exact);
    EXPECT_TRUE(r.ties);
    EXPECT_EQ(r.n, 14u);
    EXPECT_EQ(r.n_zero, 1u);
    EXPECT_DOUBLE_EQ(r.w_minus, 20.5);
    EXPECT_DOUBLE_EQ(r.w_plus, 105.0 - 20.5);
    EXPECT_NEAR(r.z, (20.5 - 52.5 + 0.5) / std::sqrt(252.5), 1e-12);
    EXPECT_NEAR(r.p_value, 0.047440322802555085, 1e-12);
    auto nc = wilcoxon_signed_rank(d, zeros(d.size()), {WilcoxonMethod::Auto, 25, false});
    EXPECT_NEAR(nc.p_value, 0.044029098735850654, 1e-12);
    EXPECT_THROW(wilcoxon_signed_rank(d, zeros(d.size()), {WilcoxonMethod::Exact, 25, true}),
                 plumb::InvalidArgument);
}

TEST(Wilcoxon, SleepDataFloatingPointTie) {
    // Sleep data differences y - x: 1.2, 2.4, 1.3, 1.3, 0, 1.0, 1.8, 0.8, 4.6, 1.4. The two 1.3
    // differ in binary (1.1+0.2 vs 0.1+1.2) but are one tie; the 0 is dropped: n = 9, W- = 0,
    // var = 9·10·19/24 - (8-2)/48 = 71.125, z = (0 - 22.5 + 0.5)/sqrt(71.125).
    // scipy wilcoxon(y, x, method='approx', correction=True): p = 0.009090698015925054.
    std::vector<double> x{0.7, -1.6, -0.2, -1.2, -0.1, 3.4, 3.7, 0.8, 0.0, 2.0};
    std::vector<double> y{1.9, 0.8, 1.1, 0.1, -0.1, 4.4, 5.5, 1.6, 4.6, 3.4};
    auto r = wilcoxon_signed_rank(y, x);
    EXPECT_EQ(r.n, 9u);
    EXPECT_TRUE(r.ties);
    EXPECT_FALSE(r.exact);
    EXPECT_DOUBLE_EQ(r.w_minus, 0.0);
    EXPECT_NEAR(r.z, -22.0 / std::sqrt(71.125), 1e-12);
    EXPECT_NEAR(r.p_value, 0.009090698015925054, 1e-12);
}

TEST(Wilcoxon, LargeSampleAndEdges) {
    // 40 differences (one tie at 1.197): normal approximation. scipy (approx, correction=True):
    // statistic 226, p = 0.013643847780284038.
    std::vector<double> d{-0.405, 0.361,  -0.075, 0.51,  0.564, -0.836, -0.967, 1.094,
                          -0.352, -0.414, 1.489,  0.176, 1.091, 0.191,  0.598,  -0.623,
                          0.587,  1.17,   0.308,  0.853, 0.679, -0.84,  0.896,  0.478,
                          -0.247, -0.922, 1.164,  0.182, 0.797, 1.197,  0.785,  1.303,
                          -0.013, 1.002,  0.112,  1.339, 1.197, -0.756, -0.66,  -0.458};
    auto r = wilcoxon_signed_rank(d, zeros(d.size()));
    EXPECT_FALSE(r.exact);
    EXPECT_DOUBLE_EQ(r.statistic, 226.0);
    EXPECT_NEAR(r.p_value, 0.013643847780284038, 1e-12);

    std::vector<double> a{0.1, 0.2};
    auto none = wilcoxon_signed_rank(a, a);  // every difference zero
    EXPECT_EQ(none.n, 0u);
    EXPECT_EQ(none.n_zero, 2u);
    EXPECT_EQ(none.p_value, 1.0);
    std::vector<double> b{0.1};
    EXPECT_THROW(wilcoxon_signed_rank(a, b), plumb::InvalidArgument);
}

TEST(Corrections, BonferroniAndHolmByHand) {
    std::vector<double> p{0.01, 0.04, 0.03, 0.5};
    // Bonferroni, m = 4: 0.04, 0.16, 0.12, 1 (2.0 capped).
    auto bon = adjust_p_values(p, Correction::Bonferroni);
    EXPECT_NEAR(bon[0], 0.04, 1e-15);
    EXPECT_NEAR(bon[1], 0.16, 1e-15);
    EXPECT_NEAR(bon[2], 0.12, 1e-15);
    EXPECT_EQ(bon[3], 1.0);
    // Holm: sorted 0.01, 0.03, 0.04, 0.5 -> 4·0.01 = 0.04, 3·0.03 = 0.09, 2·0.04 = 0.08 -> max
    // with previous 0.09, 1·0.5 = 0.5. In input order: 0.04, 0.09, 0.09, 0.5.
    auto holm = adjust_p_values(p, Correction::Holm);
    EXPECT_NEAR(holm[0], 0.04, 1e-15);
    EXPECT_NEAR(holm[1], 0.09, 1e-15);
    EXPECT_NEAR(holm[2], 0.09, 1e-15);
    EXPECT_NEAR(holm[3], 0.5, 1e-15);
    EXPECT_EQ(adjust_p_values(p, Correction::None), p);
    EXPECT_TRUE(adjust_p_values(std::vector<double>{}, Correction::Holm).empty());
    std::vector<double> bad{0.5, 1.5};
    EXPECT_THROW(adjust_p_values(bad, Correction::Holm), plumb::InvalidArgument);
    EXPECT_EQ(parse_correction("holm"), Correction::Holm);
    EXPECT_THROW(parse_correction("sidak"), plumb::InvalidArgument);
}
