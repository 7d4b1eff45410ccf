#pragma once
/// \file detail/tk_module.hpp
/// TK's LibTorch module (internal: includes Torch). Used by tk_model.cpp and by trainers.
///
/// Parameter / buffer names (= safetensors keys), D = embedding_dim, P = attention_dim(),
/// F = ff_dim, K = number of kernels, V = vocabulary size:
///   embeddings.weight                                   [V, D]
///   contextualizer.layers.<l>.self_attn.in_proj_weight  [3P, D]   (Q; K; V rows)
///   contextualizer.layers.<l>.self_attn.in_proj_bias    [3P]
///   contextualizer.layers.<l>.self_attn.out_proj.weight [D, P]
///   contextualizer.layers.<l>.self_attn.out_proj.bias   [D]
///   contextualizer.layers.<l>.linear1.weight / .bias    [F, D] / [F]
///   contextualizer.layers.<l>.linear2.weight / .bias    [D, F] / [D]
///   contextualizer.layers.<l>.norm1.weight / .bias      [D]   (after attention)
///   contextualizer.layers.<l>.norm2.weight / .bias      [D]   (after feed-forward)
///   mixer                                               [1]
///   kernel_bin_weights.weight                           [1, K]
///   mu, sigma (buffers)                                 [K]
///   mean_kernel only: dense_mean.weight [1, K], dense_comb.weight [1, 2], nn_scaler [1]
/// With P == D these match a PyTorch state_dict of matchmaker's ECAI20_TK (after reshaping
/// mu/sigma from [1,1,1,K] to [K]).

#include <torch/torch.h>

#include <cstdint>
#include <span>
#include <utility>
#include <string>
#include <vector>

#include "rerank/tk_model.hpp"

namespace plumb::rerank::detail {

/// One post-norm Transformer encoder layer (torch.nn.TransformerEncoderLayer semantics, ReLU,
/// no dropout) with attention width heads·head_dim.
class TkEncoderLayerImpl : public torch::nn::Module {
public:
    TkEncoderLayerImpl(std::int64_t dim, std::int64_t heads, std::int64_t head_dim,
                       std::int64_t ff_dim);
    /// x: [B, L, D] float; key_mask: [B, L] bool (true = real token). Returns [B, L, D].
    /// Runs BERT's kernels (detail/bert_attention.hpp): the projections and feed-forward
    /// through oneDNN's sgemm, attention per (sequence, head) without a [B, H, L, L] tensor;
    /// with grad mode on, the same kernels as autograd functions with their own backward
    /// passes. reference_kernels = true: forward_reference() instead.
    torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& key_mask);
    /// The same layer through ATen's generic ops (linear, batched matmul, masked_fill, softmax):
    /// the pre-kernel path, kept as the reference for tests and benchmarks.
    torch::Tensor forward_reference(const torch::Tensor& x, const torch::Tensor& key_mask);

    bool reference_kernels = false;  ///< not saved; see TkModuleImpl::set_reference_kernels

    torch::Tensor in_proj_weight, in_proj_bias, out_proj_weight, out_proj_bias;
    torch::nn::Linear linear1{nullptr}, linear2{nullptr};
    torch::nn::LayerNorm norm1{nullptr}, norm2{nullptr};

private:
    std::int64_t m_heads, m_head_dim;
};
TORCH_MODULE(TkEncoderLayer);

/// The whole TK model as a module. forward() works with autograd (outside InferenceMode) for
/// training; inference callers wrap calls in c10::InferenceMode.
class TkModuleImpl : public torch::nn::Module {
public:
    explicit TkModuleImpl(const TkConfig& config, std::int64_t vocab_size);

    /// q̂ or p̂: ids [B, L] int64, mask [B, L] bool; `passage` selects the positional offset.
    /// Returns [B, L, D], rows of padding positions zeroed. Throws InvalidArgument when L
    /// exceeds the configured maximum length.
    torch::Tensor contextualize(const torch::Tensor& ids, const torch::Tensor& mask,
                                bool passage);
    /// Kernel pooling + scoring from contextualised sequences: q_hat [B, Lq, D], q_mask [B, Lq],
    /// p_hat [B, Lp, D], p_mask [B, Lp]. Returns scores [B].
    torch::Tensor score_representations(const torch::Tensor& q_hat, const torch::Tensor& q_mask,
                                        const torch::Tensor& p_hat,
                                        const torch::Tensor& p_mask);
    /// Full model: scores [B] of query i vs passage i.
    torch::Tensor forward(const torch::Tensor& q_ids, const torch::Tensor& q_mask,
                          const torch::Tensor& p_ids, const torch::Tensor& p_mask);

    /// Sinusoidal features for positions first .. first+length-1: [length, D] (allennlp
    /// add_positional_features layout: sin for all timescales, then cos; odd D: zero column).
    static torch::Tensor positional_features(std::int64_t dim, std::int64_t first,
                                             std::int64_t length);

    /// true: every layer runs forward_reference() (ATen's generic ops, the pre-kernel path;
    /// for equivalence tests and before/after benchmarks). Default false. Not thread-safe
    /// against concurrent forward calls.
    void set_reference_kernels(bool on);

    /// Re-initialises all weights deterministically from `seed` (see TkModel::create).
    void reset_parameters(std::uint64_t seed);

    const TkConfig& config() const noexcept { return m_config; }

    torch::nn::Embedding embeddings{nullptr};
    std::vector<TkEncoderLayer> layers;
    torch::Tensor mixer;
    torch::nn::Linear kernel_bin_weights{nullptr};
    torch::Tensor mu, sigma;
    torch::nn::Linear dense_mean{nullptr}, dense_comb{nullptr};
    torch::Tensor nn_scaler;

private:
    TkConfig m_config;
    torch::Tensor m_pos_query, m_pos_passage;  // not saved: derived from the config
};
TORCH_MODULE(TkModule);

/// Packs token-id sequences into padded [B, L] int64 ids and a bool mask (L >= 1: an empty
/// sequence is one padding position with mask false). Used by inference and training alike.
std::pair<torch::Tensor, torch::Tensor> pack_token_ids(
    const std::vector<std::span<const std::int64_t>>& seqs);

/// Access to the module inside a TkModel (for trainers and tests). The module is shared: a
/// trainer that updates it changes the model.
struct TkModelAccess {
    static TkModule module(const TkModel& model);
};

}  // namespace plumb::rerank::detail
