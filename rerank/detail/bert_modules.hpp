#pragma once
/// \file detail/bert_modules.hpp
/// LibTorch modules of the BERT / DistilBERT encoder (internal: includes Torch, not installed).
/// Submodules and parameters are registered under Hugging Face BertModel names, so that
/// named_parameters() yields the checkpoint keys ("encoder.layer.0.attention.self.query.weight").
/// See rerank/bert.hpp for the architecture.

#include <torch/torch.h>

#include <cstdint>
#include <string>

#include "rerank/hf_config.hpp"

namespace plumb::rerank::detail {

enum class Activation { Gelu, GeluTanh, Relu };

/// Maps config.hidden_act to an activation; throws CheckpointError for unknown names.
Activation parse_activation(const std::string& name);

struct BertEmbeddingsImpl : torch::nn::Module {
    explicit BertEmbeddingsImpl(const HfConfig& config);
    /// ids, types: int64 [B, L] (types ignored without token type embeddings) -> [B, L, H].
    torch::Tensor forward(const torch::Tensor& ids, const torch::Tensor& types);

    torch::nn::Embedding word_embeddings{nullptr};
    torch::nn::Embedding position_embeddings{nullptr};
    torch::nn::Embedding token_type_embeddings{nullptr};  ///< null for DistilBERT
    torch::nn::LayerNorm LayerNorm{nullptr};
};
TORCH_MODULE(BertEmbeddings);

/// `attention.self`: query, key, value projections.
struct BertSelfAttentionImpl : torch::nn::Module {
    explicit BertSelfAttentionImpl(const HfConfig& config);
    torch::nn::Linear query{nullptr}, key{nullptr}, value{nullptr};
};
TORCH_MODULE(BertSelfAttention);

/// `attention.output` and `output`: dense + LayerNorm.
struct BertDenseNormImpl : torch::nn::Module {
    BertDenseNormImpl(std::int64_t in, std::int64_t out, double eps);
    torch::nn::Linear dense{nullptr};
    torch::nn::LayerNorm LayerNorm{nullptr};
};
TORCH_MODULE(BertDenseNorm);

struct BertAttentionImpl : torch::nn::Module {
    explicit BertAttentionImpl(const HfConfig& config);
    BertSelfAttention self{nullptr};
    BertDenseNorm output{nullptr};
};
TORCH_MODULE(BertAttention);

struct BertIntermediateImpl : torch::nn::Module {
    explicit BertIntermediateImpl(const HfConfig& config);
    torch::nn::Linear dense{nullptr};
};
TORCH_MODULE(BertIntermediate);

/// One post-LN transformer block. The query/key/value weights are also kept fused in one
/// [3H, H] matrix (refresh_fused() after changing them) so that the projection is one matmul.
struct BertLayerImpl : torch::nn::Module {
    BertLayerImpl(const HfConfig& config, Activation activation);
    /// x: [B, L, H]; mask_add: [B, 1, 1, L] additive key mask (0 or most negative float).
    torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& mask_add);
    void refresh_fused();

    BertAttention attention{nullptr};
    BertIntermediate intermediate{nullptr};
    BertDenseNorm output{nullptr};

    std::int64_t heads = 1;
    std::int64_t head_dim = 1;
    Activation activation = Activation::Gelu;
    torch::Tensor fused_weight;  ///< [3H, H], not a parameter
    torch::Tensor fused_bias;    ///< [3H]
};
TORCH_MODULE(BertLayer);

struct BertEncoderImpl : torch::nn::Module {
    explicit BertEncoderImpl(const HfConfig& config);
    torch::nn::ModuleList layer{nullptr};
};
TORCH_MODULE(BertEncoder);

struct BertPoolerImpl : torch::nn::Module {
    explicit BertPoolerImpl(const HfConfig& config);
    torch::nn::Linear dense{nullptr};
};
TORCH_MODULE(BertPooler);

/// The whole model: `embeddings`, `encoder`, and optionally `pooler` (BERT) or
/// `pre_classifier` (DistilBERT) and `classifier`.
struct BertNetImpl : torch::nn::Module {
    BertNetImpl(const HfConfig& config, bool pooler, std::int64_t num_labels);
    /// Last hidden states [B, L, H]. mask: int64/bool [B, L], 1 for real tokens.
    torch::Tensor forward(const torch::Tensor& ids, const torch::Tensor& types,
                          const torch::Tensor& mask);
    /// Pooler output from the [CLS] states [B, H].
    torch::Tensor pool(const torch::Tensor& cls);
    torch::Tensor classify(const torch::Tensor& pooled);

    ModelType model_type = ModelType::Bert;
    BertEmbeddings embeddings{nullptr};
    BertEncoder encoder{nullptr};
    BertPooler pooler{nullptr};                 ///< BERT only
    torch::nn::Linear pre_classifier{nullptr};  ///< DistilBERT only
    torch::nn::Linear classifier{nullptr};
};
TORCH_MODULE(BertNet);

}  // namespace plumb::rerank::detail
