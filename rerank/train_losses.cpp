// train_losses.cpp: training objectives (see detail/train_losses.hpp, FORMULAS.md).
#include "rerank/detail/train_losses.hpp"

#include <cmath>
#include <limits>
#include <sstream>
#include <string>

#include "plugin/error.hpp"

namespace plumb::rerank::detail {
namespace {

std::string shape_of(const torch::Tensor& t) {
    if (!t.defined()) return "undefined";
    std::ostringstream os;
    os << t.sizes() << ' ' << t.scalar_type();
    return os.str();
}

[[noreturn]] void fail(const char* fn, const std::string& message) {
    throw InvalidArgument(std::string(fn) + ": " + message);
}

/// A [B, C] floating score matrix with B >= 1 and C >= min_columns.
void check_scores(const char* fn, const char* name, const torch::Tensor& t,
                  std::int64_t min_columns) {
    if (!t.defined() || t.dim() != 2 || !t.is_floating_point() || t.size(0) < 1 ||
        t.size(1) < min_columns)
        fail(fn, std::string(name) + " must be a floating [B, C] tensor with B >= 1 and C >= " +
                     std::to_string(min_columns) + ", got " + shape_of(t));
}

void check_vector(const char* fn, const char* name, const torch::Tensor& t) {
    if (!t.defined() || t.dim() != 1 || !t.is_floating_point())
        fail(fn, std::string(name) + " must be a 1-d floating tensor, got " + shape_of(t));
}

torch::Tensor zero_like_scalar(const torch::Tensor& t) {
    return torch::zeros({}, t.options().requires_grad(false));
}

/// What nPRF and PRF share: the group's relevant mask, the number of non-relevant candidates
/// each candidate scores >= (ties count), and the pair-count normaliser n1_g·n0 per row.
struct PairCounts {
    torch::Tensor in_group;  // [B, C] bool: relevant with label == group
    torch::Tensor beaten;    // [B, C] scores' dtype: #{k non-relevant: R_j >= R_k}
    torch::Tensor denom;     // [B] scores' dtype: max(n1_g·n0, 1)
    torch::Tensor valid;     // [B] bool: n1_g > 0 and n0 > 0
};

PairCounts pair_counts(const char* fn, const torch::Tensor& scores, const torch::Tensor& relevant,
                       const torch::Tensor& labels, int group) {
    check_scores(fn, "scores", scores, 1);
    if (!relevant.defined() || relevant.scalar_type() != torch::kBool ||
        relevant.sizes() != scores.sizes())
        fail(fn, "relevant must be a bool tensor shaped like scores " + shape_of(scores) +
                     ", got " + shape_of(relevant));
    if (!labels.defined() || labels.sizes() != scores.sizes() ||
        !c10::isIntegralType(labels.scalar_type(), /*includeBool=*/false))
        fail(fn, "labels must be an integral tensor shaped like scores " + shape_of(scores) +
                     ", got " + shape_of(labels));
    if (group != 1 && group != -1)
        fail(fn, "group must be +1 (male) or -1 (female), got " + std::to_string(group));

    const torch::NoGradGuard no_grad;
    const auto s = scores.detach().contiguous();
    const auto non_relevant = relevant.logical_not();
    const auto n0 = non_relevant.sum(1);  // [B] int64
    // Non-relevant scores sorted ascending per row, relevant slots pushed to +inf (the end);
    // searchsorted(right) then counts the entries <= R_j. Capping by n0 drops the +inf slots a
    // score of +inf would count.
    const auto sorted =
        std::get<0>(s.masked_fill(relevant, std::numeric_limits<double>::infinity()).sort(1));
    auto beaten = torch::searchsorted(sorted, s, /*out_int32=*/false, /*right=*/true);
    beaten = torch::minimum(beaten, n0.unsqueeze(1));

    PairCounts out;
    out.in_group = relevant.logical_and(labels == group);
    const auto n1 = out.in_group.sum(1);
    out.valid = (n1 > 0).logical_and(n0 > 0);
    out.beaten = beaten.to(s.scalar_type());
    out.denom = (n1 * n0).clamp_min(1).to(s.scalar_type());
    return out;
}

void check_temperature(const char* fn, double temperature) {
    if (!std::isfinite(temperature) || temperature <= 0.0)
        fail(fn, "temperature must be finite and > 0, got " + std::to_string(temperature));
}

}  // namespace

torch::Tensor hinge_loss(const torch::Tensor& scores, double margin) {
    check_scores("hinge_loss", "scores", scores, 2);
    if (!std::isfinite(margin)) fail("hinge_loss", "margin must be finite");
    const auto positive = scores.narrow(1, 0, 1);                    // [B, 1]
    const auto negatives = scores.narrow(1, 1, scores.size(1) - 1);  // [B, C-1]
    return (negatives - positive + margin).clamp_min(0.0).mean();
}

torch::Tensor softmax_ce_loss(const torch::Tensor& scores) {
    check_scores("softmax_ce_loss", "scores", scores, 1);
    return -torch::log_softmax(scores, 1).select(1, 0).mean();
}

torch::Tensor contrastive_column_index(std::int64_t batch, std::int64_t group_size, bool in_batch) {
    if (batch < 1 || group_size < 1)
        fail("contrastive_column_index", "batch and group_size must be >= 1, got " +
                                             std::to_string(batch) + " and " +
                                             std::to_string(group_size));
    const auto opts = torch::TensorOptions().dtype(torch::kInt64);
    const auto own = (torch::arange(batch, opts) * group_size).unsqueeze(1);   // [B, 1]
    if (!in_batch) return own + torch::arange(group_size, opts).unsqueeze(0);  // [B, G]
    // Row i: own positive i·G, then 0..N-1 without i·G in order: skip by shifting those >= i·G.
    const std::int64_t n = batch * group_size;
    const auto rest = torch::arange(n - 1, opts).unsqueeze(0);   // [1, N-1]
    const auto shifted = rest + rest.ge(own).to(torch::kInt64);  // [B, N-1]
    return torch::cat({own, shifted}, 1);                        // [B, N]
}

torch::Tensor contrastive_scores(const torch::Tensor& queries, const torch::Tensor& passages,
                                 std::int64_t group_size, bool in_batch, bool cosine,
                                 double temperature) {
    constexpr const char* fn = "contrastive_scores";
    check_scores(fn, "queries", queries, 1);
    check_temperature(fn, temperature);
    if (group_size < 1) fail(fn, "group_size must be >= 1, got " + std::to_string(group_size));
    const std::int64_t b = queries.size(0);
    const std::int64_t d = queries.size(1);
    if (!passages.defined() || passages.dim() != 2 || passages.size(0) != b * group_size ||
        passages.size(1) != d || passages.scalar_type() != queries.scalar_type())
        fail(fn, "passages must be [B*G, D] = [" + std::to_string(b * group_size) + ", " +
                     std::to_string(d) + "] of the queries' dtype, got " + shape_of(passages) +
                     " (queries " + shape_of(queries) + ", G = " + std::to_string(group_size) +
                     ")");
    namespace F = torch::nn::functional;
    auto q = queries;
    auto p = passages;
    if (cosine) {
        q = F::normalize(q, F::NormalizeFuncOptions().p(2).dim(1));
        p = F::normalize(p, F::NormalizeFuncOptions().p(2).dim(1));
    }
    torch::Tensor scores;
    if (in_batch) {
        const auto idx = contrastive_column_index(b, group_size, true).to(q.device());
        scores = q.matmul(p.t()).gather(1, idx);  // [B, B·G]
    } else {
        scores = torch::bmm(p.view({b, group_size, d}), q.unsqueeze(2)).squeeze(2);  // [B, G]
    }
    return temperature == 1.0 ? scores : scores / temperature;
}

torch::Tensor contrastive_loss(const torch::Tensor& queries, const torch::Tensor& passages,
                               std::int64_t group_size, bool in_batch, bool cosine,
                               double temperature) {
    return softmax_ce_loss(
        contrastive_scores(queries, passages, group_size, in_batch, cosine, temperature));
}

torch::Tensor poe_loss(const torch::Tensor& biased, const torch::Tensor& robust, double alpha) {
    constexpr const char* fn = "poe_loss";
    check_scores(fn, "robust", robust, 1);
    check_scores(fn, "biased", biased, 1);
    if (biased.sizes() != robust.sizes())
        fail(fn, "biased " + shape_of(biased) + " and robust " + shape_of(robust) +
                     " must have the same shape");
    if (!(alpha >= 0.0 && alpha <= 1.0))
        fail(fn, "alpha must be in [0, 1], got " + std::to_string(alpha));
    const auto log_pb =
        torch::log_softmax(biased.detach().to(robust.scalar_type()).to(robust.device()), 1);
    const auto log_pr = torch::log_softmax(robust, 1);
    return -torch::log_softmax(alpha * log_pb + log_pr, 1).select(1, 0).mean();
}

GroupValues nprf(const torch::Tensor& scores, const torch::Tensor& relevant,
                 const torch::Tensor& labels, int group) {
    const auto c = pair_counts("nprf", scores, relevant, labels, group);
    // Σ_j ½·R_j²·count_j over the group's relevant j; count_j and the mask are constants.
    const auto weight = c.beaten * c.in_group.to(c.beaten.scalar_type());
    const auto values = (0.5 * scores.pow(2) * weight).sum(1) / c.denom;
    return {values, c.valid};
}

GroupValues prf(const torch::Tensor& scores, const torch::Tensor& relevant,
                const torch::Tensor& labels, int group) {
    const auto c = pair_counts("prf", scores, relevant, labels, group);
    const auto weight = c.beaten * c.in_group.to(c.beaten.scalar_type());
    return {weight.sum(1) / c.denom, c.valid};
}

torch::Tensor pd_loss(const torch::Tensor& male, const torch::Tensor& female) {
    check_vector("pd_loss", "male", male);
    check_vector("pd_loss", "female", female);
    if (male.numel() == 0 || female.numel() == 0) return zero_like_scalar(male);
    const auto f = female.to(male.scalar_type());
    return (male.unsqueeze(1) - f.unsqueeze(0)).pow(2).mean();
}

torch::Tensor ts_loss(const torch::Tensor& male, const torch::Tensor& female, double eps) {
    check_vector("ts_loss", "male", male);
    check_vector("ts_loss", "female", female);
    if (!(eps >= 0.0) || !std::isfinite(eps))
        fail("ts_loss", "eps must be finite and >= 0, got " + std::to_string(eps));
    if (male.numel() == 0 || female.numel() == 0) return zero_like_scalar(male);
    const auto f = female.to(male.scalar_type());
    const auto mean_m = male.mean();
    const auto mean_f = f.mean();
    const auto var_m = (male - mean_m).pow(2).mean();  // population variances
    const auto var_f = (f - mean_f).pow(2).mean();
    const auto denom =
        var_m / static_cast<double>(male.numel()) + var_f / static_cast<double>(f.numel());
    const double d = denom.item<double>();
    if (!(d >= eps) || d == 0.0) return zero_like_scalar(male);  // undefined statistic
    return (mean_m - mean_f).pow(2) / denom;
}

torch::Tensor ibbr_fairness(const torch::Tensor& scores, const torch::Tensor& relevant,
                            const torch::Tensor& labels, FairnessTerm term,
                            FairnessGroups* groups) {
    const auto m = nprf(scores, relevant, labels, +1);
    const auto f = nprf(scores, relevant, labels, -1);
    const auto male = m.values.masked_select(m.valid);
    const auto female = f.values.masked_select(f.valid);
    if (groups != nullptr) {
        groups->male = male.numel();
        groups->female = female.numel();
    }
    return term == FairnessTerm::PD ? pd_loss(male, female) : ts_loss(male, female);
}

torch::Tensor ibbr_batch_fairness(const torch::Tensor& queries, const torch::Tensor& passages,
                                  const torch::Tensor& labels, std::int64_t group_size,
                                  bool in_batch_negatives, FairnessTerm term, double temperature,
                                  FairnessGroups* groups, bool softmax_scores) {
    auto scores =
        contrastive_scores(queries, passages, group_size, in_batch_negatives, false, temperature);
    if (softmax_scores) scores = torch::softmax(scores, 1);
    if (!labels.defined() || labels.dim() != 1 || labels.size(0) != passages.size(0) ||
        c10::isFloatingType(labels.scalar_type()) || labels.scalar_type() == torch::kBool)
        fail("ibbr_batch_fairness", "labels must be integral [" + std::to_string(passages.size(0)) +
                                        "], got " + shape_of(labels));
    const auto idx = contrastive_column_index(queries.size(0), group_size, in_batch_negatives);
    const auto column_labels =
        labels.to(torch::kInt64).index_select(0, idx.view(-1)).view(idx.sizes());
    auto relevant = torch::zeros({scores.size(0), scores.size(1)}, torch::kBool);
    relevant.index_put_({torch::indexing::Slice(), 0}, true);
    return ibbr_fairness(scores, relevant, column_labels, term, groups);
}

LearnedLambda::LearnedLambda(double initial, double min_lambda, double max_lambda,
                             torch::Dtype dtype) {
    if (!std::isfinite(initial) || !std::isfinite(min_lambda) || !std::isfinite(max_lambda) ||
        !(min_lambda > 0.0) || !(min_lambda <= initial) || !(initial <= max_lambda))
        fail("LearnedLambda", "need finite 0 < min_lambda <= initial <= max_lambda, got " +
                                  std::to_string(min_lambda) + " <= " + std::to_string(initial) +
                                  " <= " + std::to_string(max_lambda));
    if (!c10::isFloatingType(dtype)) fail("LearnedLambda", "dtype must be floating");
    m_lo = -std::log(max_lambda);
    m_hi = -std::log(min_lambda);
    m_s = torch::full({}, -std::log(initial), torch::TensorOptions().dtype(dtype))
              .set_requires_grad(true);
}

torch::Tensor LearnedLambda::clamped() const { return m_s.clamp(m_lo, m_hi); }

double LearnedLambda::value() const {
    const torch::NoGradGuard no_grad;
    return std::exp(-clamped().item<double>());
}

torch::Tensor LearnedLambda::combine(const torch::Tensor& rank_loss, const torch::Tensor& fair_loss,
                                     bool defined) const {
    if (!rank_loss.defined() || rank_loss.numel() != 1 || !rank_loss.is_floating_point())
        fail("LearnedLambda::combine",
             "rank_loss must be a floating scalar, got " + shape_of(rank_loss));
    if (!defined) return rank_loss;
    if (!fair_loss.defined() || fair_loss.numel() != 1 || !fair_loss.is_floating_point())
        fail("LearnedLambda::combine",
             "fair_loss must be a floating scalar, got " + shape_of(fair_loss));
    const auto s = clamped().to(rank_loss.scalar_type());
    return rank_loss + torch::exp(-s) * fair_loss.reshape({}) + s;
}

}  // namespace plumb::rerank::detail
