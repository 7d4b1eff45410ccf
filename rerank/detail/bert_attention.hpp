#pragma once
/// \file detail/bert_attention.hpp
/// Kernels of BERT self-attention and projections, used by BERT and TK, with autograd variants
/// for training (internal: includes Torch, not installed).

#include <torch/torch.h>

#include <cstdint>

namespace plumb::rerank::detail {

/// x W^T + b (torch::linear's result, up to float rounding) through oneDNN's sgemm when
/// LibTorch's oneDNN library is loaded (else torch::linear). Called outside a parallel region,
/// oneDNN threads the product over the same OpenMP pool as at::parallel_for, instead of
/// OpenBLAS's own pthreads (whose hand-offs with the OpenMP workers, spinning on 2 cores,
/// cost MiniLM-sized layers a large part of their time). x: float32 [..., K]; weight [N, K];
/// bias [N] or undefined. Inference only (no autograd graph; see dense_linear_autograd).
torch::Tensor dense_linear(const torch::Tensor& x, const torch::Tensor& weight,
                           const torch::Tensor& bias);

/// softmax(Q K^T / sqrt(head_dim) + mask_add) V for all heads, from the fused projection.
/// qkv: float32 [B, L, 3H] (query, key, value blocks of H = heads * head_dim, each split into
/// heads of head_dim); mask_add: additive key mask broadcastable to [B, 1, 1, L].
/// Returns the context [B, L, H] (heads concatenated), as the unfused computation does.
///
/// Work is split over (sequence, head) pairs on the intra-op threads; each pair runs its two
/// small matrix products single-threaded (oneDNN's sgemm when LibTorch's oneDNN library is
/// loaded, else ATen) and a row softmax on an L x L block that stays in cache, so no
/// [B, heads, L, L] tensor is materialised and no per-head GEMM is split across threads.
/// Keys whose mask value is below half the lowest float (padding) are skipped, which is exact:
/// their softmax weight underflows to 0 in the unfused computation as well.
/// No autograd graph (see fused_self_attention_autograd). `probs`, when given, receives the
/// softmax weights [B * heads, L, L] (pair i = sequence i / heads, head i % heads; columns of
/// skipped padding keys are 0), for the backward pass (before dropout).
///
/// `dropout`, when defined and not empty: float [B * heads, L, L] (laid out as `probs`), multiplied into the
/// softmax weights before they weight the values (training-time attention dropout: 0 for a
/// dropped weight, 1/(1-p) for a kept one; BERT's attention_probs_dropout_prob).
torch::Tensor fused_self_attention(const torch::Tensor& qkv, const torch::Tensor& mask_add,
                                   std::int64_t heads, std::int64_t head_dim,
                                   torch::Tensor* probs = nullptr,
                                   const torch::Tensor& dropout = {});

/// Gradient of fused_self_attention with respect to qkv [B, L, 3H], from the gradient of its
/// context [B, L, H] and the forward call's qkv, mask_add and probs. Per (sequence, head) pair
/// on the intra-op threads, single-threaded sgemm (as the forward): dV = P^T dC, dP = dC V^T,
/// dS = P ⊙ (dP - rowsum(dP ⊙ P)), dQ = dS K / sqrt(hd), dK = dS^T Q / sqrt(hd). Skipped
/// padding keys get zero gradient (their weight is exactly 0). The mask gets no gradient.
/// With the forward call's `dropout` D: dV = (P ⊙ D)^T dC and dP = (dC V^T) ⊙ D.
torch::Tensor fused_self_attention_backward(const torch::Tensor& grad_context,
                                            const torch::Tensor& qkv,
                                            const torch::Tensor& mask_add,
                                            const torch::Tensor& probs, std::int64_t heads,
                                            std::int64_t head_dim,
                                            const torch::Tensor& dropout = {});

/// fused_self_attention with autograd (a torch::autograd::Function whose backward is
/// fused_self_attention_backward) when grad mode is on and qkv requires grad; else the
/// inference kernel itself. Saves the [B * heads, L, L] weights (and `dropout`) for the
/// backward pass.
torch::Tensor fused_self_attention_autograd(const torch::Tensor& qkv,
                                            const torch::Tensor& mask_add, std::int64_t heads,
                                            std::int64_t head_dim,
                                            const torch::Tensor& dropout = {});

/// dense_linear with autograd: forward through oneDNN's sgemm, backward dX = G W and
/// dW = G^T X through oneDNN's sgemm too (threaded by oneDNN over the OpenMP pool), db = Σ G.
/// Without grad: dense_linear; without oneDNN: torch::linear.
torch::Tensor dense_linear_autograd(const torch::Tensor& x, const torch::Tensor& weight,
                                    const torch::Tensor& bias);

/// Row-major C[m, n] = alpha op(A) op(B) + beta C, op(A) = A [m, k] or A^T (A stored [k, m]),
/// op(B) = B [k, n] or B^T (B stored [n, k]): one oneDNN sgemm call (single-threaded inside an
/// OpenMP parallel region, threaded outside), or ATen's mm when oneDNN is not loaded.
void sgemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k,
           float alpha, const float* a, std::int64_t lda, const float* b, std::int64_t ldb,
           float beta, float* c, std::int64_t ldc);

}  // namespace plumb::rerank::detail
