#pragma once
/// \file detail/train_losses.hpp
/// Training objectives as differentiable LibTorch functions (internal: includes Torch).
/// Definitions: ../shared/FORMULAS.md and the papers; every function returns a scalar (0-dim)
/// tensor averaged over the batch unless said otherwise, and checks shapes (InvalidArgument
/// naming the function and the shapes it got).
///
/// Score matrices are [B, C]: row i = query i's candidates, column 0 = its positive passage,
/// columns 1..C-1 = negatives (hard and/or in-batch).

#include <torch/torch.h>

#include <cstdint>

namespace plumb::rerank::detail {

/// Pairwise hinge loss (paper 000, margin 1): mean over i and negatives j >= 1 of
/// max(0, margin - s[i,0] + s[i,j]). scores: [B, C], C >= 2.
torch::Tensor hinge_loss(const torch::Tensor& scores, double margin = 1.0);

/// Softmax cross-entropy with the positive in column 0: mean over i of -log_softmax(s[i,:])[0].
torch::Tensor softmax_ce_loss(const torch::Tensor& scores);

/// Similarity matrix for contrastive training of a bi-encoder (paper 003 Eq. 1, DPR style).
/// queries: [B, D]; passages: [B·G, D] where passages[i·G] is query i's positive and
/// passages[i·G + 1 .. i·G + G-1] its hard negatives (G >= 1). Returns [B, C] scores with the
/// positive in column 0: with in_batch, C = B·G (query i against every passage of the batch,
/// columns reordered so that its own positive comes first, then all other passages in batch
/// order); without, C = G (its own positive and hard negatives). `cosine` normalises the
/// vectors first; scores are divided by `temperature` (> 0).
torch::Tensor contrastive_scores(const torch::Tensor& queries, const torch::Tensor& passages,
                                 std::int64_t group_size, bool in_batch, bool cosine = false,
                                 double temperature = 1.0);

/// Contrastive loss = softmax_ce_loss(contrastive_scores(...)).
torch::Tensor contrastive_loss(const torch::Tensor& queries, const torch::Tensor& passages,
                               std::int64_t group_size, bool in_batch, bool cosine = false,
                               double temperature = 1.0);

/// EqualizeIR product of experts (paper 003; FORMULAS.md): p_B = softmax(biased), p_R =
/// softmax(robust) over each row; log z = log_softmax(alpha·log p_B + log p_R); loss = mean of
/// -log z[i, 0]. `biased` carries no gradient (detached here). alpha = 0 equals
/// softmax_ce_loss(robust). alpha in [0, 1] (InvalidArgument otherwise).
torch::Tensor poe_loss(const torch::Tensor& biased, const torch::Tensor& robust, double alpha);

/// nPRF of one group per query (Beutel et al.; paper 004; FORMULAS.md):
///   nPRF_g(q) = 1/(n1_g·n0) Σ_{j relevant, label g} Σ_{k non-relevant} ½·R_j²·1[R_j >= R_k]
/// scores [B, C] (R), relevant [B, C] bool, labels [B, C] int (-1 female, 0 neutral, +1 male;
/// the label of non-relevant passages is ignored), group = +1 (m) or -1 (f). The indicator is
/// computed without gradient; R_j² carries it. Returns {values [B], valid [B] bool}: valid[i]
/// is false (value 0) when row i has no relevant passage of the group or no non-relevant one.
struct GroupValues {
    torch::Tensor values;
    torch::Tensor valid;
};
GroupValues nprf(const torch::Tensor& scores, const torch::Tensor& relevant,
                 const torch::Tensor& labels, int group);

/// PRF_g (the indicator version, no gradient; for evaluation and tests), same layout.
GroupValues prf(const torch::Tensor& scores, const torch::Tensor& relevant,
                const torch::Tensor& labels, int group);

/// IBBR pairwise difference: PD = 1/(|Pm|·|Pf|) Σ_c Σ_d (m[c] - f[d])², m = nPRF_m values of the
/// batch queries in P^m, f = nPRF_f of those in P^f (1-d tensors). 0 (a tensor, no gradient
/// needed) when either is empty.
torch::Tensor pd_loss(const torch::Tensor& male, const torch::Tensor& female);

/// IBBR t-statistic: TS = (mean_m - mean_f)² / (var_m/|Pm| + var_f/|Pf|), population
/// variances; 0 when either group is empty. A zero denominator (both groups constant) gets a
/// small epsilon (1e-12) so the value stays finite.
torch::Tensor ts_loss(const torch::Tensor& male, const torch::Tensor& female);

enum class FairnessTerm { PD, TS };

/// IBBR's fairness term for one batch: nPRF_m / nPRF_f of every row (a row belongs to P^m when
/// it has a valid nPRF_m, to P^f when valid nPRF_f), then PD or TS.
torch::Tensor ibbr_fairness(const torch::Tensor& scores, const torch::Tensor& relevant,
                            const torch::Tensor& labels, FairnessTerm term);

}  // namespace plumb::rerank::detail
