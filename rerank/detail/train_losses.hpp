#pragma once
/// \file detail/train_losses.hpp
/// Training objectives as differentiable LibTorch functions (internal: includes Torch).
/// Definitions: ../shared/FORMULAS.md and the papers; every function returns a scalar (0-dim)
/// tensor averaged over the batch unless said otherwise, and checks shapes and dtypes
/// (InvalidArgument whose message starts with the function's name and gives the shapes it got).
/// All functions are vectorised (no per-element loops) and stateless, so they are safe to call
/// concurrently; LearnedLambda holds one parameter tensor and is used by one trainer at a time.
///
/// Score matrices are [B, C] floating tensors (B >= 1): row i = query i's candidates, column 0 =
/// its positive passage, columns 1..C-1 = negatives (hard and/or in-batch).

#include <torch/torch.h>

#include <cstdint>

namespace plumb::rerank::detail {

/// Pairwise hinge loss (paper 000, margin 1): mean over i and negatives j >= 1 of
/// max(0, margin - s[i,0] + s[i,j]). scores: [B, C], C >= 2; margin finite.
torch::Tensor hinge_loss(const torch::Tensor& scores, double margin = 1.0);

/// Softmax cross-entropy with the positive in column 0: mean over i of -log_softmax(s[i,:])[0]
/// (log_softmax, not log(softmax): stable for large scores). scores: [B, C], C >= 1 (C = 1 gives
/// 0 with zero gradient).
torch::Tensor softmax_ce_loss(const torch::Tensor& scores);

/// Column index behind contrastive_scores: int64 [B, C] of passage rows (0 .. B·G-1).
/// Without in_batch, C = G and row i = i·G, i·G+1, .., i·G+G-1. With in_batch, C = B·G and
/// row i = i·G first, then every other passage of the batch in batch order (other queries'
/// positives and hard negatives, and query i's own hard negatives). Use it to lay out per-passage
/// data (e.g. IBBR bias labels [B·G]) like the scores: `labels.index_select(0, idx.view(-1))
/// .view(idx.sizes())`. Throws InvalidArgument unless batch >= 1 and group_size >= 1.
torch::Tensor contrastive_column_index(std::int64_t batch, std::int64_t group_size, bool in_batch);

/// Similarity matrix for contrastive training of a bi-encoder (paper 003 Eq. 1, DPR style).
/// queries: [B, D]; passages: [B·G, D] (same floating dtype) where passages[i·G] is query i's
/// positive and passages[i·G + 1 .. i·G + G-1] its hard negatives (G >= 1). Returns [B, C]
/// scores laid out by contrastive_column_index (positive in column 0). `cosine` L2-normalises
/// both sides first (torch's normalize, eps 1e-12); scores are then divided by `temperature`
/// (finite, > 0).
torch::Tensor contrastive_scores(const torch::Tensor& queries, const torch::Tensor& passages,
                                 std::int64_t group_size, bool in_batch, bool cosine = false,
                                 double temperature = 1.0);

/// Contrastive loss (paper 003 Eq. 1) = softmax_ce_loss(contrastive_scores(...)).
torch::Tensor contrastive_loss(const torch::Tensor& queries, const torch::Tensor& passages,
                               std::int64_t group_size, bool in_batch, bool cosine = false,
                               double temperature = 1.0);

/// EqualizeIR product of experts (paper 003; FORMULAS.md): p_B = softmax(biased), p_R =
/// softmax(robust) over each row; log z = log_softmax(alpha·log p_B + log p_R); loss = mean of
/// -log z[i, 0]. `biased` carries no gradient (detached here; converted to robust's dtype).
/// alpha = 0 equals softmax_ce_loss(robust) (up to rounding). Shapes equal, [B, C];
/// alpha in [0, 1] (InvalidArgument otherwise).
torch::Tensor poe_loss(const torch::Tensor& biased, const torch::Tensor& robust, double alpha);

/// nPRF of one group per query (Beutel et al.; paper 004; FORMULAS.md):
///   nPRF_g(q) = 1/(n1_g·n0) Σ_{j relevant, label g} Σ_{k non-relevant} ½·R_j²·1[R_j >= R_k]
/// scores [B, C] floating (R), relevant [B, C] bool, labels [B, C] integral (-1 female,
/// 0 neutral, +1 male; the label of non-relevant passages is ignored), group = +1 (m) or -1 (f).
/// The indicator (ties count: R_j >= R_k) is computed without gradient, by sorting each row's
/// non-relevant scores and binary search (O(B·C·log C) time, O(B·C) memory); R_j² carries the
/// gradient: d nPRF / d R_j = R_j·#{k non-relevant: R_j >= R_k}/(n1_g·n0).
/// Returns {values [B] (scores' dtype), valid [B] bool}: valid[i] is false (value 0, zero
/// gradient) when row i has no relevant passage of the group or no non-relevant one.
/// NaN scores give unspecified counts.
struct GroupValues {
    torch::Tensor values;
    torch::Tensor valid;
};
GroupValues nprf(const torch::Tensor& scores, const torch::Tensor& relevant,
                 const torch::Tensor& labels, int group);

/// PRF_g = 1/(n1_g·n0) Σ_j Σ_k 1[R_j >= R_k] (the indicator version, no gradient; for
/// evaluation and tests), same layout and validity as nprf.
GroupValues prf(const torch::Tensor& scores, const torch::Tensor& relevant,
                const torch::Tensor& labels, int group);

/// IBBR pairwise difference: PD = 1/(|Pm|·|Pf|) Σ_c Σ_d (m[c] - f[d])², m = nPRF_m values of the
/// batch queries in P^m, f = nPRF_f of those in P^f (1-d floating tensors). A 0-dim zero
/// (no gradient) when either is empty.
torch::Tensor pd_loss(const torch::Tensor& male, const torch::Tensor& female);

/// IBBR t-statistic: TS = (mean_m - mean_f)² / (var_m/|Pm| + var_f/|Pf|), population
/// variances (divide by n). A 0-dim zero (no gradient) when either group is empty, and also
/// when the denominator is below `eps` (every value of each group equal, e.g. one query per
/// group: the statistic is undefined and, like a missing group, contributes nothing, instead of
/// an unbounded (m - f)²/eps spike).
torch::Tensor ts_loss(const torch::Tensor& male, const torch::Tensor& female, double eps = 1e-12);

enum class FairnessTerm { PD, TS };

/// Group sizes seen by ibbr_fairness (|P^m|, |P^f| of the batch).
struct FairnessGroups {
    std::int64_t male = 0;
    std::int64_t female = 0;
    /// Both groups present: the term is defined for this batch.
    bool defined() const { return male > 0 && female > 0; }
};

/// IBBR's fairness term for one batch: nPRF_m / nPRF_f of every row (a row belongs to P^m when
/// it has a valid nPRF_m, to P^f when valid nPRF_f; a row with relevant passages of both
/// labels is in both), then PD or TS. Same inputs as nprf. `groups`, when given, receives
/// |P^m| and |P^f| (e.g. for LearnedLambda::combine and logging).
torch::Tensor ibbr_fairness(const torch::Tensor& scores, const torch::Tensor& relevant,
                            const torch::Tensor& labels, FairnessTerm term,
                            FairnessGroups* groups = nullptr);

/// IBBR's fairness term over a bi-encoder batch (paper 004). R = contrastive scores (dot
/// product / temperature) of queries [B, D] and passages [B·G, D] laid out as in
/// contrastive_scores (passages[i·G] = query i's positive, the only relevant passage of row i);
/// labels [B·G] integral, d(p) of every passage in the same order. The non-relevant set g0 of
/// query i:
///  - own negatives (in_batch_negatives = false; the paper's choice: "the non-relevant set is
///    the query's own candidates"): passages[i·G+1 .. i·G+G-1];
///  - in-batch (in_batch_negatives = true): every other passage of the batch as well (other
///    queries' positives and negatives), the columns of contrastive_scores with in_batch.
/// Then ibbr_fairness (PD or TS). The ranking loss's own negatives setting is independent of
/// this one. G = 1 with own negatives leaves g0 empty: the term is 0 (groups empty).
/// Throws InvalidArgument as contrastive_scores, or when labels is not [B·G] integral.
///
/// `softmax_scores` (off: R = the scores, FORMULAS.md): R = the softmax of each row's scores
/// over its columns (the positive and its non-relevant set g0), R ∈ (0, 1) as paper 004 states
/// for PRF and nPRF ("If R(p) ∈ [0, 1] is the ranking score of passage p"). The indicator
/// 1[R_j >= R_k] is the same (softmax is monotone within a row); nPRF = ½R²·1[..] is unchanged
/// in form. With raw dot products R can be negative, where a larger R² means a LOWER score (the
/// fairness gradient then pushes a group's relevant passages down to raise its nPRF), and
/// shrinking every score lowers PD without changing any ranking; R ∈ (0, 1) removes both (all
/// scores equal gives R = 1/|row|, not 0).
torch::Tensor ibbr_batch_fairness(const torch::Tensor& queries, const torch::Tensor& passages,
                                  const torch::Tensor& labels, std::int64_t group_size,
                                  bool in_batch_negatives, FairnessTerm term,
                                  double temperature = 1.0, FairnessGroups* groups = nullptr,
                                  bool softmax_scores = false);

/// IBBR's "λ_fair as a trainable parameter (Auto)" (paper 004 §4.2). The paper gives no rule,
/// and minimising L_rank + λ·L_fair over λ itself drives λ to its lower bound (L_fair >= 0), so
/// the fairness term would switch itself off. Our reading (a documented choice): homoscedastic
/// uncertainty weighting (Kendall, Gal & Cipolla 2018) with one learned scalar s = -log λ:
///   L_total = L_rank + exp(-s)·L_fair + s,   λ = exp(-s), s clamped to [-log λ_max, -log λ_min].
/// For a fixed L_fair the optimum is λ = 1/L_fair, i.e. λ adapts so that the fairness term keeps
/// a constant weight relative to the ranking loss. Batches without both groups use L_rank alone
/// (no gradient for s), so missing groups do not inflate λ.
/// The trainer adds parameter() to its optimiser (no weight decay) and saves value() to resume.
class LearnedLambda {
public:
    /// initial, min_lambda, max_lambda finite, 0 < min_lambda <= initial <= max_lambda
    /// (InvalidArgument otherwise). The parameter is a float32 (or `dtype`) 0-dim leaf.
    explicit LearnedLambda(double initial = 1.0, double min_lambda = 1e-4, double max_lambda = 1e4,
                           torch::Dtype dtype = torch::kFloat32);

    /// The learned scalar s (0-dim, requires_grad); handle shares storage with this object.
    torch::Tensor parameter() const { return m_s; }
    /// Current λ = exp(-clamp(s)).
    double value() const;
    /// L_rank + λ·L_fair + s (clamped s) when `defined`, else L_rank. 0-dim inputs.
    torch::Tensor combine(const torch::Tensor& rank_loss, const torch::Tensor& fair_loss,
                          bool defined = true) const;

private:
    torch::Tensor clamped() const;
    torch::Tensor m_s;
    double m_lo, m_hi;  // bounds of s
};

}  // namespace plumb::rerank::detail
