// Training losses (rerank/detail/train_losses.hpp) against values worked out by hand from the
// definitions in FORMULAS.md and the papers (the arithmetic is in the comments), gradients
// against their closed forms and against central finite differences in double precision, and
// the vectorised nPRF against a naive double loop.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <functional>
#include <string>
#include <tuple>
#include <vector>

#include "plugin/error.hpp"
#include "rerank/detail/train_losses.hpp"

using namespace plumb::rerank::detail;

namespace {

torch::Tensor f64(std::vector<double> v, std::vector<std::int64_t> shape) {
    return torch::tensor(v, torch::kFloat64).view(shape).clone();
}

torch::Tensor f32(std::vector<float> v, std::vector<std::int64_t> shape) {
    return torch::tensor(v, torch::kFloat32).view(shape).clone();
}

torch::Tensor bools(std::vector<int> v, std::vector<std::int64_t> shape) {
    return torch::tensor(std::vector<std::int64_t>(v.begin(), v.end()), torch::kInt64)
        .view(shape)
        .to(torch::kBool);
}

torch::Tensor ints(std::vector<std::int64_t> v, std::vector<std::int64_t> shape) {
    return torch::tensor(v, torch::kInt64).view(shape).clone();
}

double val(const torch::Tensor& t) { return t.item<double>(); }

void expect_tensor_near(const torch::Tensor& got, const torch::Tensor& want, double tol) {
    ASSERT_EQ(got.sizes(), want.sizes());
    const auto g = got.to(torch::kFloat64).contiguous();
    const auto w = want.to(torch::kFloat64).contiguous();
    for (std::int64_t i = 0; i < g.numel(); ++i)
        EXPECT_NEAR(g.view(-1)[i].item<double>(), w.view(-1)[i].item<double>(), tol)
            << "element " << i;
}

/// Throws InvalidArgument whose message starts with `fn`.
void expect_invalid(const std::function<void()>& call, const std::string& fn) {
    try {
        call();
        ADD_FAILURE() << "no exception, expected InvalidArgument from " << fn;
    } catch (const plumb::InvalidArgument& e) {
        EXPECT_EQ(std::string(e.what()).rfind(fn + ":", 0), 0u) << e.what();
    }
}

/// Central finite differences of a scalar function of x (double) against autograd.
void expect_gradient_matches_fd(const std::function<torch::Tensor(const torch::Tensor&)>& f,
                                const torch::Tensor& x0, double h = 1e-6, double tol = 1e-6) {
    auto x = x0.clone().set_requires_grad(true);
    f(x).backward();
    ASSERT_TRUE(x.grad().defined());
    const auto analytic = x.grad().clone();
    const torch::NoGradGuard no_grad;
    auto flat = x0.clone().contiguous();
    for (std::int64_t i = 0; i < flat.numel(); ++i) {
        auto plus = flat.clone();
        auto minus = flat.clone();
        plus.view(-1)[i] += h;
        minus.view(-1)[i] -= h;
        const double fd = (val(f(plus)) - val(f(minus))) / (2 * h);
        const double a = analytic.view(-1)[i].item<double>();
        EXPECT_NEAR(a, fd, tol * (1 + std::abs(a))) << "element " << i;
    }
}

}  // namespace

// ---------------------------------------------------------------- hinge

TEST(TrainLosses, Hinge) {
    {
        SCOPED_TRACE("HingeByHand");
        // row 0: max(0, 1 - 2 + 0.5) = 0 (beyond the margin), max(0, 1 - 2 + 1.5) = 0.5
        // row 1: max(0, 1 - 0 + 3) = 4, max(0, 1 - 0 - 2) = 0
        // mean over the 4 pairs = 4.5 / 4 = 1.125
        auto s = f64({2, 0.5, 1.5, 0, 3, -2}, {2, 3}).set_requires_grad(true);
        const auto loss = hinge_loss(s);
        EXPECT_EQ(loss.dim(), 0);
        EXPECT_NEAR(val(loss), 1.125, 1e-12);
        loss.backward();
        // Active pairs: (0, 2) and (1, 1), each weighing 1/4: -1/4 on the positive, +1/4 on the
        // negative.
        expect_tensor_near(s.grad(), f64({-0.25, 0, 0.25, -0.25, 0.25, 0}, {2, 3}), 1e-12);

        // margin 0.5: row 0: 0, max(0, 0.5 - 0.5) = 0; row 1: 3.5, 0 -> 3.5 / 4 = 0.875
        EXPECT_NEAR(val(hinge_loss(s.detach(), 0.5)), 0.875, 1e-12);
    }

    {
        SCOPED_TRACE("HingeZeroBeyondMargin");
        // 1 - 5 + 1 = -3 and 1 - 5 + 2 = -2: both pairs are beyond the margin.
        auto s = f32({5, 1, 2}, {1, 3}).set_requires_grad(true);
        const auto loss = hinge_loss(s);
        EXPECT_EQ(val(loss), 0.0);
        loss.backward();
        EXPECT_EQ(val(s.grad().abs().sum()), 0.0);
    }

    {
        SCOPED_TRACE("HingeRejectsBadShapes");
        expect_invalid([] { hinge_loss(f32({1}, {1, 1})); }, "hinge_loss");          // C = 1
        expect_invalid([] { hinge_loss(f32({1, 2}, {2})); }, "hinge_loss");          // 1-d
        expect_invalid([] { hinge_loss(ints({1, 2}, {1, 2})); }, "hinge_loss");      // integral
        expect_invalid([] { hinge_loss(torch::zeros({0, 3})); }, "hinge_loss");      // B = 0
        expect_invalid([] { hinge_loss(f32({1, 2}, {1, 2}), NAN); }, "hinge_loss");  // margin
    }
}

// ---------------------------------------------------------------- cross-entropy

TEST(TrainLosses, SoftmaxCrossEntropy) {
    {
        SCOPED_TRACE("SoftmaxCrossEntropyByHand");
        // row 0 = [0, ln 2, 0]: p0 = 1 / (1 + 2 + 1) = 1/4 -> -ln p0 = ln 4
        // row 1 = [ln 2, 0, 0]: p0 = 2 / (2 + 1 + 1) = 1/2 -> ln 2
        // mean = (2 ln 2 + ln 2) / 2 = 1.5 ln 2
        const double l2 = std::log(2.0);
        auto s = f64({0, l2, 0, l2, 0, 0}, {2, 3}).set_requires_grad(true);
        const auto loss = softmax_ce_loss(s);
        EXPECT_NEAR(val(loss), 1.5 * l2, 1e-12);
        loss.backward();
        // d/ds = (softmax - onehot(0)) / B: row 0 (1/4 - 1, 1/2, 1/4) / 2, row 1 (1/2 - 1, 1/4,
        // 1/4) / 2
        expect_tensor_near(s.grad(), f64({-0.375, 0.25, 0.125, -0.25, 0.125, 0.125}, {2, 3}),
                           1e-12);
    }

    {
        SCOPED_TRACE("SoftmaxCrossEntropyIsStable");
        // [1000, 0]: loss = ln(1 + e^-1000) ~ 0; [0, 1000]: loss = 1000 + ln(1 + e^-1000) ~ 1000.
        const auto easy = softmax_ce_loss(f32({1000, 0}, {1, 2}));
        const auto hard = softmax_ce_loss(f32({0, 1000}, {1, 2}));
        EXPECT_TRUE(std::isfinite(val(easy)));
        EXPECT_NEAR(val(easy), 0.0, 1e-6);
        EXPECT_NEAR(val(hard), 1000.0, 1e-3);
        // One candidate: nothing to rank against, loss 0.
        EXPECT_EQ(val(softmax_ce_loss(f32({3}, {1, 1}))), 0.0);
        expect_invalid([] { softmax_ce_loss(f32({1, 2, 3}, {3})); }, "softmax_ce_loss");
    }
}

// ---------------------------------------------------------------- contrastive

namespace {
// q0 = (1, 0), q1 = (0, 1); G = 2: p0 = (1, 1) q0's positive, p1 = (2, 0) q0's hard negative,
// p2 = (0, 3) q1's positive, p3 = (1, -1) q1's hard negative.
// Dot products: q0·p = (1, 2, 0, 1), q1·p = (1, 0, 3, -1).
torch::Tensor cq() { return f64({1, 0, 0, 1}, {2, 2}); }
torch::Tensor cp() { return f64({1, 1, 2, 0, 0, 3, 1, -1}, {4, 2}); }
}  // namespace

TEST(TrainLosses, Contrastive) {
    {
        SCOPED_TRACE("ContrastiveColumnIndex");
        // Own positive first, then every other passage in batch order.
        expect_tensor_near(contrastive_column_index(2, 2, true),
                           ints({0, 1, 2, 3, 2, 0, 1, 3}, {2, 4}), 0);
        expect_tensor_near(contrastive_column_index(3, 1, true),
                           ints({0, 1, 2, 1, 0, 2, 2, 0, 1}, {3, 3}), 0);
        expect_tensor_near(contrastive_column_index(2, 3, false), ints({0, 1, 2, 3, 4, 5}, {2, 3}),
                           0);
        EXPECT_EQ(contrastive_column_index(1, 1, true).sizes().vec(),
                  (std::vector<std::int64_t>{1, 1}));
        expect_invalid([] { contrastive_column_index(0, 2, true); }, "contrastive_column_index");
        expect_invalid([] { contrastive_column_index(2, 0, false); }, "contrastive_column_index");
    }

    {
        SCOPED_TRACE("ContrastiveWithoutInBatchNegatives");
        // Own positive and hard negative only: row 0 = (1, 2), row 1 = (3, -1).
        expect_tensor_near(contrastive_scores(cq(), cp(), 2, false), f64({1, 2, 3, -1}, {2, 2}),
                           1e-12);
        // -log(e^1 / (e^1 + e^2)) = ln(1 + e); -log(e^3 / (e^3 + e^-1)) = ln(1 + e^-4)
        const double want = (std::log(1 + std::exp(1.0)) + std::log(1 + std::exp(-4.0))) / 2;
        EXPECT_NEAR(val(contrastive_loss(cq(), cp(), 2, false)), want, 1e-12);  // 0.6657058
    }

    {
        SCOPED_TRACE("ContrastiveWithInBatchNegatives");
        // Row 0 columns (p0, p1, p2, p3) = (1, 2, 0, 1); row 1 columns (p2, p0, p1, p3) = (3, 1, 0,
        // -1).
        const auto s = contrastive_scores(cq(), cp(), 2, true);
        expect_tensor_near(s, f64({1, 2, 0, 1, 3, 1, 0, -1}, {2, 4}), 1e-12);
        // row 0: ln(e + e² + 1 + e) - 1 = 1.6265234; row 1: ln(e³ + e + 1 + e^-1) - 3 = 0.1851825
        const double e = std::exp(1.0);
        const double want =
            (std::log(e + e * e + 1 + e) - 1 + std::log(e * e * e + e + 1 + 1 / e) - 3) / 2;
        EXPECT_NEAR(val(contrastive_loss(cq(), cp(), 2, true)), want, 1e-12);  // 0.9058529

        // Gradient flows to both encoders.
        auto q = cq().set_requires_grad(true);
        auto p = cp().set_requires_grad(true);
        contrastive_loss(q, p, 2, true).backward();
        EXPECT_GT(val(q.grad().abs().sum()), 0.0);
        EXPECT_GT(val(p.grad().abs().sum()), 0.0);
    }

    {
        SCOPED_TRACE("ContrastiveCosineAndTemperature");
        // Cosines: q0 = (1, 0) with p0 = (1, 1) -> 1/√2, p1 -> 1, p2 -> 0, p3 -> 1/√2;
        // q1 = (0, 1): p0 -> 1/√2, p1 -> 0, p2 -> 1, p3 -> -1/√2. Temperature 0.5 doubles them.
        const double r = std::sqrt(2.0);
        expect_tensor_near(contrastive_scores(cq(), cp(), 2, false, true, 0.5),
                           f64({r, 2, 2, -r}, {2, 2}), 1e-12);
        expect_tensor_near(contrastive_scores(cq(), cp(), 2, true, true, 0.5),
                           f64({r, 2, 0, r, 2, r, 0, -r}, {2, 4}), 1e-12);
        // loss: row 0 ln(1 + e^(2 - √2)), row 1 ln(1 + e^(-√2 - 2))
        const double want = (std::log(1 + std::exp(2 - r)) + std::log(1 + std::exp(-r - 2))) / 2;
        EXPECT_NEAR(val(contrastive_loss(cq(), cp(), 2, false, true, 0.5)), want, 1e-12);
        // Temperature alone divides the dot products: row 0 = (1, 2) / 2.
        expect_tensor_near(contrastive_scores(cq(), cp(), 2, false, false, 2.0),
                           f64({0.5, 1, 1.5, -0.5}, {2, 2}), 1e-12);
    }

    {
        SCOPED_TRACE("ContrastiveRejectsBadInput");
        const std::string fn = "contrastive_scores";
        expect_invalid([] { contrastive_scores(cq(), cp(), 3, true); }, fn);  // 4 != 2·3
        expect_invalid([] { contrastive_scores(cq(), cp(), 0, true); }, fn);  // G = 0
        expect_invalid([] { contrastive_scores(cq(), cp(), 2, true, false, 0.0); }, fn);
        expect_invalid([] { contrastive_scores(cq(), cp().narrow(1, 0, 1), 2, true); }, fn);  // D
        expect_invalid([] { contrastive_scores(cq(), cp().to(torch::kFloat32), 2, true); }, fn);
    }
}

// ---------------------------------------------------------------- EqualizeIR PoE

TEST(TrainLosses, ProductOfExperts) {
    {
        SCOPED_TRACE("PoeAlphaZeroEqualsCrossEntropy");
        torch::manual_seed(3);
        auto robust = torch::randn({4, 5}, torch::kFloat64).mul(3).set_requires_grad(true);
        const auto biased = torch::randn({4, 5}, torch::kFloat64).mul(3);
        const auto poe = poe_loss(biased, robust, 0.0);
        poe.backward();
        const auto g_poe = robust.grad().clone();
        robust.grad().zero_();
        const auto ce = softmax_ce_loss(robust);
        ce.backward();
        // log_softmax(log_softmax(r)) = log_softmax(r): equal up to rounding.
        EXPECT_NEAR(val(poe), val(ce), 1e-12);
        expect_tensor_near(g_poe, robust.grad(), 1e-12);
    }

    {
        SCOPED_TRACE("PoeAlphaOneByHand");
        // biased = (0, ln 3): log p_B = (ln 1/4, ln 3/4); robust = (ln 3, 0): log p_R = (ln 3/4, ln
        // 1/4). Sum = (ln 3/16, ln 3/16): equal, so z = (1/2, 1/2) and the loss = ln 2 (robust
        // alone would be -ln 3/4 = 0.288: the biased expert's confident mistake raises it).
        const double l3 = std::log(3.0);
        auto biased = f64({0, l3}, {1, 2}).set_requires_grad(true);
        auto robust = f64({l3, 0}, {1, 2}).set_requires_grad(true);
        const auto loss = poe_loss(biased, robust, 1.0);
        EXPECT_NEAR(val(loss), std::log(2.0), 1e-12);
        loss.backward();
        // d/d robust = softmax(α·log p_B + log p_R) - onehot(0) = (1/2 - 1, 1/2).
        expect_tensor_near(robust.grad(), f64({-0.5, 0.5}, {1, 2}), 1e-12);
        // The biased learner is frozen: no gradient reaches it.
        EXPECT_FALSE(biased.grad().defined());
    }

    {
        SCOPED_TRACE("PoeAlphaHalfByHand");
        // biased = (0, ln 4): p_B = (1/5, 4/5); ½·log p_B = (ln 1/√5, ln 2/√5); robust = (0, 0):
        // log p_R = (ln ½, ln ½). Sum ∝ (ln 1, ln 2) -> z = (1/3, 2/3) -> loss = ln 3.
        const auto loss = poe_loss(f64({0, std::log(4.0)}, {1, 2}), f64({0, 0}, {1, 2}), 0.5);
        EXPECT_NEAR(val(loss), std::log(3.0), 1e-12);
    }

    {
        SCOPED_TRACE("PoeGradientMatchesFiniteDifferences");
        torch::manual_seed(5);
        const auto biased = torch::randn({3, 4}, torch::kFloat64);
        expect_gradient_matches_fd([&](const torch::Tensor& r) { return poe_loss(biased, r, 0.3); },
                                   torch::randn({3, 4}, torch::kFloat64));
    }

    {
        SCOPED_TRACE("PoeRejectsBadInput");
        const auto a = f32({0, 1}, {1, 2});
        expect_invalid([&] { poe_loss(a, a, 1.5); }, "poe_loss");
        expect_invalid([&] { poe_loss(a, a, -0.1); }, "poe_loss");
        expect_invalid([&] { poe_loss(a, a, NAN); }, "poe_loss");
        expect_invalid([&] { poe_loss(f32({0, 1, 2}, {1, 3}), a, 0.1); }, "poe_loss");
    }
}

// ---------------------------------------------------------------- nPRF / PRF

namespace {
// Row 0: R = (1, 2, 2, 3), relevant (T, T, F, F), labels (+1, -1, 0, 0). Non-relevant R: {2, 3}.
//   male j = 0 (R = 1): beats neither -> PRF_m = 0 / (1·2) = 0, nPRF_m = 0 (valid).
//   female j = 1 (R = 2): 2 >= 2 (tie counts), not >= 3 -> PRF_f = 1/2,
//   nPRF_f = ½·2²·1 / 2 = 1.
// Row 1: R = (2, 0.5, 1, -1), relevant (T, T, F, F), labels (+1, +1, -1, 0). Non-relevant {1, -1}.
//   male j = 0 (R = 2) beats 2, j = 1 (R = 0.5) beats 1 -> PRF_m = 3 / (2·2) = 3/4,
//   nPRF_m = (½·4·2 + ½·0.25·1) / 4 = 4.125 / 4 = 1.03125. No relevant female: invalid.
//   (The -1 label of the non-relevant passage 2 is ignored.)
// Row 2: R = (1, 2, 3, 4) all relevant (labels +1, -1, 0, 0): n0 = 0 -> both invalid.
torch::Tensor pr_scores() { return f64({1, 2, 2, 3, 2, 0.5, 1, -1, 1, 2, 3, 4}, {3, 4}); }
torch::Tensor pr_relevant() { return bools({1, 1, 0, 0, 1, 1, 0, 0, 1, 1, 1, 1}, {3, 4}); }
torch::Tensor pr_labels() { return ints({1, -1, 0, 0, 1, 1, -1, 0, 1, -1, 0, 0}, {3, 4}); }
}  // namespace

TEST(TrainLosses, PrfAndNprfByHand) {
    {
        SCOPED_TRACE("PrfWithTiesByHand");
        const auto m = prf(pr_scores(), pr_relevant(), pr_labels(), +1);
        const auto f = prf(pr_scores(), pr_relevant(), pr_labels(), -1);
        expect_tensor_near(m.values, f64({0, 0.75, 0}, {3}), 1e-12);
        expect_tensor_near(m.valid, bools({1, 1, 0}, {3}), 0);
        expect_tensor_near(f.values, f64({0.5, 0, 0}, {3}), 1e-12);
        expect_tensor_near(f.valid, bools({1, 0, 0}, {3}), 0);
    }

    {
        SCOPED_TRACE("NprfWithTiesByHandAndGradient");
        auto s = pr_scores().set_requires_grad(true);
        const auto m = nprf(s, pr_relevant(), pr_labels(), +1);
        const auto f = nprf(s, pr_relevant(), pr_labels(), -1);
        expect_tensor_near(m.values, f64({0, 1.03125, 0}, {3}), 1e-12);
        expect_tensor_near(f.values, f64({1, 0, 0}, {3}), 1e-12);
        expect_tensor_near(m.valid, bools({1, 1, 0}, {3}), 0);
        expect_tensor_near(f.valid, bools({1, 0, 0}, {3}), 0);
        (m.values.sum() + f.values.sum()).backward();
        // d nPRF / d R_j = R_j · count_j / (n1·n0):
        //   row 0: male j = 0 count 0 -> 0; female j = 1: 2·1/2 = 1
        //   row 1: j = 0: 2·2/4 = 1; j = 1: 0.5·1/4 = 0.125
        //   row 2 (invalid) and non-relevant candidates: 0
        expect_tensor_near(s.grad(), f64({0, 1, 0, 0, 1, 0.125, 0, 0, 0, 0, 0, 0}, {3, 4}), 1e-12);
    }

    {
        SCOPED_TRACE("NprfRejectsBadInput");
        const auto s = pr_scores();
        const auto r = pr_relevant();
        const auto l = pr_labels();
        expect_invalid([&] { nprf(s, r, l, 0); }, "nprf");                      // group
        expect_invalid([&] { nprf(s, r.to(torch::kInt64), l, 1); }, "nprf");    // not bool
        expect_invalid([&] { nprf(s, r, l.to(torch::kFloat32), 1); }, "nprf");  // not integral
        expect_invalid([&] { nprf(s, r.narrow(1, 0, 3), l, 1); }, "nprf");      // shape
        expect_invalid([&] { prf(s.view(-1), r, l, 1); }, "prf");
    }
}

TEST(TrainLosses, NprfAgainstNaiveLoopAndAtScale) {
    {
        SCOPED_TRACE("NprfMatchesNaiveDoubleLoop");
        torch::manual_seed(11);
        const std::int64_t b = 4, c = 129;
        // Integer-valued scores in [-6, 6] make ties frequent; float32 like the trainer.
        const auto scores = torch::randint(-6, 7, {b, c}, torch::kInt64).to(torch::kFloat32);
        const auto relevant = torch::rand({b, c}).lt(0.1);
        const auto labels = torch::randint(-1, 2, {b, c}, torch::kInt64);
        for (int group : {+1, -1}) {
            const auto got = nprf(scores, relevant, labels, group);
            const auto got_prf = prf(scores, relevant, labels, group);
            for (std::int64_t i = 0; i < b; ++i) {
                double sum = 0, count = 0;
                std::int64_t n1 = 0, n0 = 0;
                for (std::int64_t k = 0; k < c; ++k) n0 += relevant[i][k].item<bool>() ? 0 : 1;
                for (std::int64_t j = 0; j < c; ++j) {
                    if (!relevant[i][j].item<bool>() || labels[i][j].item<std::int64_t>() != group)
                        continue;
                    ++n1;
                    const double rj = scores[i][j].item<double>();
                    for (std::int64_t k = 0; k < c; ++k) {
                        if (relevant[i][k].item<bool>()) continue;
                        if (rj >= scores[i][k].item<double>()) {
                            sum += 0.5 * rj * rj;
                            count += 1;
                        }
                    }
                }
                const bool valid = n1 > 0 && n0 > 0;
                EXPECT_EQ(got.valid[i].item<bool>(), valid) << "row " << i;
                const double want = valid ? sum / static_cast<double>(n1 * n0) : 0.0;
                const double want_prf = valid ? count / static_cast<double>(n1 * n0) : 0.0;
                EXPECT_NEAR(got.values[i].item<double>(), want, 1e-5 * (1 + want)) << "row " << i;
                EXPECT_NEAR(got_prf.values[i].item<double>(), want_prf, 1e-6) << "row " << i;
            }
        }
    }

    {
        SCOPED_TRACE("NprfScalesToLargeCandidateSets");
        // B = 32 queries x C = 4096 candidates (no B·C·C tensor): values finite, PRF in [0, 1],
        // the gradient reaches only the group's relevant candidates.
        torch::manual_seed(17);
        const std::int64_t b = 32, c = 4096;
        auto scores = torch::randn({b, c}).set_requires_grad(true);
        auto relevant = torch::zeros({b, c}, torch::kBool);
        relevant.narrow(1, 0, 2).fill_(true);
        auto labels = torch::zeros({b, c}, torch::kInt64);
        labels.select(1, 0).fill_(1);
        labels.select(1, 1).fill_(-1);
        const auto m = nprf(scores, relevant, labels, +1);
        const auto p = prf(scores, relevant, labels, +1);
        EXPECT_TRUE(m.valid.all().item<bool>());
        EXPECT_TRUE(torch::isfinite(m.values).all().item<bool>());
        EXPECT_GE(p.values.min().item<double>(), 0.0);
        EXPECT_LE(p.values.max().item<double>(), 1.0);
        m.values.sum().backward();
        EXPECT_EQ(scores.grad().narrow(1, 1, c - 1).abs().sum().item<double>(), 0.0);
    }
}

// ---------------------------------------------------------------- PD / TS

TEST(TrainLosses, PairwiseDifferenceAndTStatistic) {
    {
        SCOPED_TRACE("PairwiseDifferenceByHand");
        // m = (1, 3), f = (2): ((1-2)² + (3-2)²) / 2 = 1
        EXPECT_NEAR(val(pd_loss(f64({1, 3}, {2}), f64({2}, {1}))), 1.0, 1e-12);
        // m = (1, 2), f = (0, 4): (1 + 9 + 4 + 4) / 4 = 4.5
        auto m = f64({1, 2}, {2}).set_requires_grad(true);
        auto f = f64({0, 4}, {2}).set_requires_grad(true);
        const auto pd = pd_loss(m, f);
        EXPECT_NEAR(val(pd), 4.5, 1e-12);
        pd.backward();
        // d/dm_c = 2/4 Σ_d (m_c - f_d): m0: ½((1) + (-3)) = -1; m1: ½((2) + (-2)) = 0
        // d/df_d = -2/4 Σ_c (m_c - f_d): f0: -½(1 + 2) = -1.5; f1: -½((-3) + (-2)) = 2.5
        expect_tensor_near(m.grad(), f64({-1, 0}, {2}), 1e-12);
        expect_tensor_near(f.grad(), f64({-1.5, 2.5}, {2}), 1e-12);
    }

    {
        SCOPED_TRACE("TStatisticByHand");
        // m = (1, 3): mean 2, population variance (1 + 1) / 2 = 1
        // f = (0, 4, 8): mean 4, population variance (16 + 0 + 16) / 3 = 32/3
        // TS = (2 - 4)² / (1/2 + (32/3)/3) = 4 / (9/18 + 64/18) = 4 / (73/18) = 72/73
        EXPECT_NEAR(val(ts_loss(f64({1, 3}, {2}), f64({0, 4, 8}, {3}))), 72.0 / 73.0, 1e-12);
        // Symmetric in the groups.
        EXPECT_NEAR(val(ts_loss(f64({0, 4, 8}, {3}), f64({1, 3}, {2}))), 72.0 / 73.0, 1e-12);
    }

    {
        SCOPED_TRACE("EmptyOrDegenerateGroupsGiveZero");
        const auto empty = torch::zeros({0}, torch::kFloat64);
        const auto some = f64({1, 2}, {2}).set_requires_grad(true);
        for (const auto& t : {pd_loss(empty, some), pd_loss(some, empty), ts_loss(empty, some),
                              ts_loss(some, empty)}) {
            EXPECT_EQ(t.dim(), 0);
            EXPECT_EQ(val(t), 0.0);
            EXPECT_FALSE(t.requires_grad());
        }
        // One query per group: both variances 0, the statistic is undefined -> 0.
        EXPECT_EQ(val(ts_loss(f64({1}, {1}), f64({5}, {1}))), 0.0);
        // But PD is defined: (1 - 5)² = 16.
        EXPECT_NEAR(val(pd_loss(f64({1}, {1}), f64({5}, {1}))), 16.0, 1e-12);
        // One constant group and one varying: denominator = var_f / |Pf| > 0.
        // m = (1), f = (0, 2): var_f = 1, TS = (1 - 1)² / (0 + 1/2) = 0; f = (2, 4): mean 3,
        // TS = (1 - 3)² / (1/2) = 8.
        EXPECT_NEAR(val(ts_loss(f64({1}, {1}), f64({2, 4}, {2}))), 8.0, 1e-12);
        expect_invalid([] { pd_loss(f64({1, 2}, {1, 2}), f64({1}, {1})); }, "pd_loss");
        expect_invalid([] { ts_loss(f64({1}, {1}), ints({1}, {1})); }, "ts_loss");
    }

    {
        SCOPED_TRACE("PdAndTsGradientsMatchFiniteDifferences");
        torch::manual_seed(7);
        const auto male = torch::randn({4}, torch::kFloat64);
        const auto female = torch::randn({3}, torch::kFloat64);
        expect_gradient_matches_fd([&](const torch::Tensor& m) { return pd_loss(m, female); },
                                   male);
        expect_gradient_matches_fd([&](const torch::Tensor& f) { return pd_loss(male, f); },
                                   female);
        expect_gradient_matches_fd([&](const torch::Tensor& m) { return ts_loss(m, female); }, male,
                                   1e-6, 1e-5);
        expect_gradient_matches_fd([&](const torch::Tensor& f) { return ts_loss(male, f); }, female,
                                   1e-6, 1e-5);
    }
}

// ---------------------------------------------------------------- IBBR term

namespace {
// Positive in column 0 with bias label; non-relevant columns 1, 2 (labels ignored).
// row 0: R = (2, 1, 3), male: 2 >= 1 only -> nPRF_m = ½·4·1 / (1·2) = 1
// row 1: R = (3, 1, 2), male: beats both -> ½·9·2 / 2 = 4.5
// row 2: R = (1, 0, 2), female: beats 0 -> ½·1·1 / 2 = 0.25
// row 3: R = (5, 0, 0), neutral positive: in neither group
torch::Tensor ib_scores() { return f64({2, 1, 3, 3, 1, 2, 1, 0, 2, 5, 0, 0}, {4, 3}); }
torch::Tensor ib_relevant() { return bools({1, 0, 0, 1, 0, 0, 1, 0, 0, 1, 0, 0}, {4, 3}); }
torch::Tensor ib_labels() { return ints({1, 1, -1, 1, 0, 0, -1, 1, 1, 0, -1, 1}, {4, 3}); }
}  // namespace

TEST(TrainLosses, IbbrFairness) {
    {
        SCOPED_TRACE("IbbrFairnessByHand");
        FairnessGroups g;
        // PD = ((1 - 0.25)² + (4.5 - 0.25)²) / 2 = (0.5625 + 18.0625) / 2 = 9.3125
        const auto pd =
            ibbr_fairness(ib_scores(), ib_relevant(), ib_labels(), FairnessTerm::PD, &g);
        EXPECT_NEAR(val(pd), 9.3125, 1e-12);
        EXPECT_EQ(g.male, 2);
        EXPECT_EQ(g.female, 1);
        EXPECT_TRUE(g.defined());
        // TS: male mean 2.75, population variance (1.75² + 1.75²)/2 = 3.0625; female 0.25, var 0.
        // TS = 2.5² / (3.0625/2 + 0) = 6.25 / 1.53125 = 4.0816327
        const auto ts = ibbr_fairness(ib_scores(), ib_relevant(), ib_labels(), FairnessTerm::TS);
        EXPECT_NEAR(val(ts), 6.25 / 1.53125, 1e-12);

        // Only male positives (rows 0, 1): the batch lacks P^f -> 0, not defined.
        const auto pd2 = ibbr_fairness(ib_scores().narrow(0, 0, 2), ib_relevant().narrow(0, 0, 2),
                                       ib_labels().narrow(0, 0, 2), FairnessTerm::PD, &g);
        EXPECT_EQ(val(pd2), 0.0);
        EXPECT_EQ(g.male, 2);
        EXPECT_EQ(g.female, 0);
        EXPECT_FALSE(g.defined());
    }

    {
        SCOPED_TRACE("IbbrGradientMatchesFiniteDifferences");
        // Distinct scores away from ties: the indicator is locally constant, so the whole chain
        // (nPRF -> PD / TS) is differentiable there.
        torch::manual_seed(13);
        const auto scores = torch::randn({6, 5}, torch::kFloat64);
        auto relevant = torch::zeros({6, 5}, torch::kBool);
        relevant.select(1, 0).fill_(true);
        const auto labels = ints({1,  0, 0, 0, 0, -1, 0, 0, 0, 0, 1,  0, 0, 0, 0,
                                  -1, 0, 0, 0, 0, 1,  0, 0, 0, 0, -1, 0, 0, 0, 0},
                                 {6, 5});
        for (auto term : {FairnessTerm::PD, FairnessTerm::TS})
            expect_gradient_matches_fd(
                [&](const torch::Tensor& s) { return ibbr_fairness(s, relevant, labels, term); },
                scores, 1e-7, 1e-5);
    }
}

TEST(TrainLosses, IbbrBatchFairnessOwnVersusInBatchNegatives) {
    // B = 2 queries, G = 2 passages each, D = 1: q = (1, 1); passages p0 = 2 (q0's positive,
    // male), p1 = 1 (q0's negative), p2 = 3 (q1's positive, female), p3 = 0.5 (q1's negative).
    const auto labels = ints({1, 0, -1, 0}, {4});
    auto run = [&](bool in_batch, FairnessTerm term, FairnessGroups* g) {
        auto q = f64({1, 1}, {2, 1}).requires_grad_(true);
        auto p = f64({2, 1, 3, 0.5}, {4, 1}).requires_grad_(true);
        auto loss = ibbr_batch_fairness(q, p, labels, 2, in_batch, term, 1.0, g);
        if (!loss.requires_grad()) return std::make_tuple(val(loss), 0.0, 0.0);  // a constant 0
        loss.backward();
        return std::make_tuple(val(loss), val(p.grad()[0][0]), val(q.grad()[0][0]));
    };
    {
        SCOPED_TRACE("OwnNegatives");
        // The paper's set: q0's non-relevant = {p1}: nPRF_m(q0) = ½·2²·1[2 >= 1] / (1·1) = 2;
        // q1's = {p3}: nPRF_f(q1) = ½·3²·1[3 >= 0.5] = 4.5; PD = (2 - 4.5)² = 6.25.
        // dPD/dR00 = 2(2 - 4.5)·R00·1/1 = -5·2 = -10; R00 = q0·p0: d/dp0 = -10·q0 = -10,
        // d/dq0 = -10·p0 = -20.
        FairnessGroups g;
        const auto [pd, gp0, gq0] = run(false, FairnessTerm::PD, &g);
        EXPECT_NEAR(pd, 6.25, 1e-12);
        EXPECT_NEAR(gp0, -10.0, 1e-12);
        EXPECT_NEAR(gq0, -20.0, 1e-12);
        EXPECT_EQ(g.male, 1);
        EXPECT_EQ(g.female, 1);
    }
    {
        SCOPED_TRACE("InBatchNegatives");
        // Other queries' passages join the set: q0's non-relevant = {p1, p2, p3} with scores
        // 1, 3, 0.5: nPRF_m(q0) = ½·4·(1 + 0 + 1)/3 = 4/3; q1's = {p0, p1, p3} = 2, 1, 0.5, all
        // below 3: nPRF_f(q1) = ½·9·3/3 = 4.5; PD = (4/3 - 9/2)² = (19/6)² = 361/36.
        // dPD/dR00 = 2(4/3 - 9/2)·R00·2/3 = (-19/3)(4/3) = -76/9; p0 is also a non-relevant of
        // q1 there, which carries no gradient (indicator only): d/dp0 = -76/9.
        FairnessGroups g;
        const auto [pd, gp0, gq0] = run(true, FairnessTerm::PD, &g);
        EXPECT_NEAR(pd, 361.0 / 36.0, 1e-12);
        EXPECT_NEAR(gp0, -76.0 / 9.0, 1e-12);
        EXPECT_NEAR(gq0, -76.0 / 9.0 * 2.0, 1e-12);
    }
    {
        SCOPED_TRACE("OneQueryPerGroupTsIsZero");
        const auto [ts, gp0, gq0] = run(false, FairnessTerm::TS, nullptr);
        EXPECT_EQ(ts, 0.0);  // population variances 0: undefined, contributes nothing
        EXPECT_EQ(gp0, 0.0);
    }
    {
        SCOPED_TRACE("PositivesOnly");
        // G = 1: no own negatives, so no nPRF is defined and the term is 0; in-batch has some.
        auto q = f64({1, 1}, {2, 1});
        auto p = f64({2, 3}, {2, 1});
        FairnessGroups g;
        EXPECT_EQ(
            val(ibbr_batch_fairness(q, p, ints({1, -1}, {2}), 1, false, FairnessTerm::PD, 1.0, &g)),
            0.0);
        EXPECT_FALSE(g.defined());
        // In-batch: nPRF_m(q0) = ½·4·1[2 >= 3] = 0, nPRF_f(q1) = ½·9·1 = 4.5: PD = 20.25.
        EXPECT_NEAR(val(ibbr_batch_fairness(q, p, ints({1, -1}, {2}), 1, true, FairnessTerm::PD)),
                    20.25, 1e-12);
    }
    EXPECT_THROW(ibbr_batch_fairness(f64({1, 1}, {2, 1}), f64({2, 1, 3, 0.5}, {4, 1}),
                                     ints({1, 0, -1}, {3}), 2, false, FairnessTerm::PD),
                 plumb::InvalidArgument);
    EXPECT_THROW(ibbr_batch_fairness(f64({1, 1}, {2, 1}), f64({2, 1, 3, 0.5}, {4, 1}),
                                     f64({1, 0, -1, 0}, {4}), 2, false, FairnessTerm::PD),
                 plumb::InvalidArgument);
}

TEST(TrainLosses, IbbrBatchFairnessOnSoftmaxScores) {
    // softmax_scores: R = softmax of each row over its columns (own negatives: the positive and
    // its negative), R ∈ (0, 1) as paper 004 states. Same batch as above: rows (2, 1) and
    // (3, 0.5): R00 = σ(1), R10 = σ(2.5) (σ = logistic: a two-column softmax).
    const auto labels = ints({1, 0, -1, 0}, {4});
    const double r0 = 1.0 / (1.0 + std::exp(-1.0)), r1 = 1.0 / (1.0 + std::exp(-2.5));
    {
        auto q = f64({1, 1}, {2, 1}).requires_grad_(true);
        auto p = f64({2, 1, 3, 0.5}, {4, 1}).requires_grad_(true);
        auto loss =
            ibbr_batch_fairness(q, p, labels, 2, false, FairnessTerm::PD, 1.0, nullptr, true);
        // nPRF_m(q0) = ½R00²·1[R00 >= 1 - R00], nPRF_f(q1) = ½R10²: PD = (½r0² - ½r1²)².
        const double a = 0.5 * r0 * r0, b = 0.5 * r1 * r1;
        EXPECT_NEAR(val(loss), (a - b) * (a - b), 1e-12);
        loss.backward();
        // dPD/dR00 = 2(a - b)·R00; dR00/ds00 = R00(1 - R00) = -dR00/ds01; s00 = q0·p0, s01 =
        // q0·p1: d/dp0 = 2(a - b)·R00²(1 - R00)·q0, d/dq0 = the same factor·(p0 - p1) = d/dp0.
        const double g = 2.0 * (a - b) * r0 * r0 * (1.0 - r0);
        EXPECT_NEAR(val(p.grad()[0][0]), g, 1e-12);
        EXPECT_NEAR(val(p.grad()[1][0]), -g, 1e-12);
        EXPECT_NEAR(val(q.grad()[0][0]), g, 1e-12);
    }
    {
        // Moving one group's scores by a constant no longer changes the term: the male row's
        // scores (2, 1) become (12, 11) (passages 0 and 1 + 10, q0 = 1). Softmax: the same R00 =
        // σ(1), the same PD as above; raw: nPRF_m = ½·144 instead of ½·4 (PD (72 - 4.5)² vs
        // (2 - 4.5)²).
        auto q = f64({1, 1}, {2, 1});
        auto shifted = f64({12, 11, 3, 0.5}, {4, 1});
        const double a = 0.5 * r0 * r0, b = 0.5 * r1 * r1;
        EXPECT_NEAR(val(ibbr_batch_fairness(q, shifted, labels, 2, false, FairnessTerm::PD, 1.0,
                                            nullptr, true)),
                    (a - b) * (a - b), 1e-12);
        EXPECT_NEAR(val(ibbr_batch_fairness(q, shifted, labels, 2, false, FairnessTerm::PD, 1.0,
                                            nullptr, false)),
                    (72 - 4.5) * (72 - 4.5), 1e-9);
    }
    {
        // Negative raw scores turn the raw gradient around; the softmax keeps it. Rows:
        // male positive -1 vs -2 (margin 1), female positive -1.5 vs -3 (margin 1.5, the
        // favoured group). Raw: nPRF_m = ½·1 = 0.5 < nPRF_f = ½·2.25, and lowering PD means
        // lowering R_f² = RAISING the favoured female positive's score (dPD/dp2 < 0). Softmax:
        // R_f = σ(1.5) > R_m = σ(1), so PD lowers the female positive's score (dPD/dp2 > 0).
        auto grad_p2 = [&](bool softmax) {
            auto q = f64({1, 1}, {2, 1});
            auto p = f64({-1, -2, -1.5, -3}, {4, 1}).requires_grad_(true);
            ibbr_batch_fairness(q, p, labels, 2, false, FairnessTerm::PD, 1.0, nullptr, softmax)
                .backward();
            return val(p.grad()[2][0]);
        };
        EXPECT_LT(grad_p2(false), 0.0);
        EXPECT_GT(grad_p2(true), 0.0);
    }
}

// ---------------------------------------------------------------- learned λ

TEST(TrainLosses, LearnedLambda) {
    {
        SCOPED_TRACE("LearnedLambdaCombine");
        LearnedLambda lambda(2.0);
        EXPECT_NEAR(lambda.value(), 2.0, 1e-6);
        // s = -ln 2; L = 1 + 2·3 + (-ln 2) = 7 - ln 2; dL/ds = -e^-s·fair + 1 = -2·3 + 1 = -5
        const auto total = lambda.combine(torch::tensor(1.0f), torch::tensor(3.0f));
        EXPECT_NEAR(val(total), 7.0 - std::log(2.0), 1e-5);
        total.backward();
        EXPECT_NEAR(val(lambda.parameter().grad()), -5.0, 1e-5);

        // Without both groups: L_rank alone, nothing reaches s.
        LearnedLambda other(1.0);
        const auto rank_only = other.combine(torch::tensor(1.5f), torch::tensor(0.0f), false);
        EXPECT_EQ(val(rank_only), 1.5);
        EXPECT_FALSE(other.parameter().grad().defined());

        expect_invalid([] { LearnedLambda(0.0); }, "LearnedLambda");
        expect_invalid([] { LearnedLambda(10.0, 0.1, 5.0); }, "LearnedLambda");
        expect_invalid([] { LearnedLambda(1.0).combine(torch::ones({2}), torch::tensor(1.0)); },
                       "LearnedLambda::combine");
    }

    {
        SCOPED_TRACE("LearnedLambdaConvergesAndIsClamped");
        // With a constant L_fair = 4, min over s of e^-s·4 + s is at e^-s = 1/4: λ -> 0.25.
        LearnedLambda lambda(1.0);
        torch::optim::Adam opt({lambda.parameter()}, torch::optim::AdamOptions(0.05));
        for (int step = 0; step < 400; ++step) {
            opt.zero_grad();
            lambda.combine(torch::tensor(0.0f), torch::tensor(4.0f)).backward();
            opt.step();
        }
        EXPECT_NEAR(lambda.value(), 0.25, 0.01);

        // Bounds: λ in [0.5, 2] whatever s is.
        LearnedLambda bounded(1.0, 0.5, 2.0);
        {
            const torch::NoGradGuard no_grad;
            bounded.parameter().fill_(-std::log(10.0));
        }
        EXPECT_NEAR(bounded.value(), 2.0, 1e-6);
        const auto total = bounded.combine(torch::tensor(0.0f), torch::tensor(1.0f));
        EXPECT_NEAR(val(total), 2.0 - std::log(2.0), 1e-5);  // clamped s = -ln 2
        total.backward();
        EXPECT_EQ(val(bounded.parameter().grad()), 0.0);  // at the bound: no push further
    }
}
