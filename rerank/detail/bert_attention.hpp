#pragma once
/// \file detail/bert_attention.hpp
/// Inference kernel of BERT self-attention (internal: includes Torch, not installed).

#include <torch/torch.h>

#include <cstdint>

namespace plumb::rerank::detail {

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
/// Inference only (no autograd graph).
/// x W^T + b (torch::linear's result, up to float rounding) through oneDNN's sgemm when
/// LibTorch's oneDNN library is loaded (else torch::linear). Called outside a parallel region,
/// oneDNN threads the product over the same OpenMP pool as at::parallel_for, instead of
/// OpenBLAS's own pthreads (whose hand-offs with the OpenMP workers, spinning on 2 cores,
/// cost MiniLM-sized layers a large part of their time). x: float32 [..., K]; weight [N, K];
/// bias [N] or undefined. Inference only (no autograd graph).
torch::Tensor dense_linear(const torch::Tensor& x, const torch::Tensor& weight,
                           const torch::Tensor& bias);

torch::Tensor fused_self_attention(const torch::Tensor& qkv, const torch::Tensor& mask_add,
                                   std::int64_t heads, std::int64_t head_dim);

}  // namespace plumb::rerank::detail
