#pragma once
/// \file detail/bert_modules.hpp
/// LibTorch modules of the BERT / DistilBERT encoder (internal: includes Torch, not installed).
/// Submodules and parameters are registered under Hugging Face BertModel names, so that
/// named_parameters() yields the checkpoint keys ("encoder.layer.0.attention.self.query.weight").
/// See rerank/bert.hpp for the architecture.

#include <torch/torch.h>

#include <array>
#include <cstdint>
#include <memory>
#include <string>

#include "rerank/bert.hpp"
#include "rerank/hf_config.hpp"
#include "rerank/detail/int8_linear.hpp"

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

/// Training-time dropout of a BertNet, placed as transformers does: after the embeddings'
/// LayerNorm (`hidden`), on the attention probabilities (`attention`), on the attention-output
/// and feed-forward-output projections before their residual additions (`hidden`), and on the
/// pooled output before the classifier (`classifier`, applied by the caller of classify()).
/// Masks are drawn from `generator` (seeded by the owner), never from Torch's global generator.
struct BertDropout {
    double hidden = 0.0;
    double attention = 0.0;
    double classifier = 0.0;
    at::Generator generator;
    /// x with each element zeroed with probability p and the rest scaled by 1/(1-p) (identity
    /// for p <= 0).
    torch::Tensor apply(const torch::Tensor& x, double p);
};

/// One post-LN transformer block. The query/key/value weights are also kept fused in one
/// [3H, H] matrix (refresh_fused() after changing them) so that the projection is one matmul.
///
/// Training: forward_train() projects with the real query/key/value parameters (so gradients
/// reach them) and applies dropout when given. It runs the inference kernels
/// (detail/bert_attention.hpp: oneDNN sgemm projections, attention per (sequence, head)) as
/// autograd functions with their own backward passes, as TK's layers do; the former path
/// (ATen's linear, batched matmul, softmax) stays as forward_train_reference(), selected by
/// `reference_kernels` (tests and benchmarks). Both draw the same dropout masks from the same
/// generator state (attention: one [B * heads, L, L] Bernoulli draw, then the two hidden ones). After an optimizer changed those parameters the
/// fused copy is stale: forward() then notices it (parameter version counters differ from the
/// ones recorded by refresh_fused()) and concatenates the parameters per call, which gives the
/// same numbers, only slower; refresh_fused() (called by detail::Trainable before inference and
/// saving) makes the fast path current again.
///
/// Int8 (set_int8(true), inference only): the four projections (fused query/key/value,
/// attention output, intermediate, output) run as Int8Linear layers quantised from the current
/// parameters; attention scores/softmax, GELU, residuals and LayerNorms stay fp32. The
/// quantised copies follow the parameters like the fused copy: refresh_fused() rebuilds them,
/// and while they are stale (parameter versions changed) forward() computes in fp32.
struct BertLayerImpl : torch::nn::Module {
    BertLayerImpl(const HfConfig& config, Activation activation);
    /// x: [B, L, H]; mask_add: [B, 1, 1, L] additive key mask (0 or most negative float).
    torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& mask_add);
    /// Same with autograd through the query/key/value parameters; `dropout` null = none.
    torch::Tensor forward_train(const torch::Tensor& x, const torch::Tensor& mask_add,
                                BertDropout* dropout);
    /// forward_train() through ATen's generic ops (the pre-kernel path; reference for tests).
    torch::Tensor forward_train_reference(const torch::Tensor& x, const torch::Tensor& mask_add,
                                          BertDropout* dropout);
    void refresh_fused();
    /// True when the fused copy matches the current query/key/value parameters.
    bool fused_current() const;
    /// Switches the int8 projections on (quantised from the current parameters) or off.
    void set_int8(bool on);
    /// True when int8 is on and its copies match the current parameters.
    bool int8_current() const;

    BertAttention attention{nullptr};
    BertIntermediate intermediate{nullptr};
    BertDenseNorm output{nullptr};

    std::int64_t heads = 1;
    std::int64_t head_dim = 1;
    Activation activation = Activation::Gelu;
    bool reference_kernels = false;  ///< training through forward_train_reference() (not saved)
    torch::Tensor fused_weight;  ///< [3H, H], not a parameter
    torch::Tensor fused_bias;    ///< [3H]
    std::array<std::int64_t, 6> fused_versions{};  ///< q/k/v weight, bias versions at refresh

    struct Int8Projections {
        Int8Linear qkv, attention_output, intermediate, output;
        std::vector<std::int64_t> versions;  ///< versions of the 12 source parameters
    };
    std::shared_ptr<const Int8Projections> int8;  ///< null = fp32 projections
    /// Version counters of the parameters the int8 copies are built from.
    std::vector<std::int64_t> int8_source_versions() const;
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
///
/// forward() takes the training path (real query/key/value parameters, autograd) whenever it
/// runs outside c10::InferenceMode with grad mode on or the module in training mode; dropout
/// (when `dropout` is set) only in training mode outside InferenceMode. Inference under
/// InferenceMode in eval mode uses the fused projections as before (bit-identical numerics).
struct BertNetImpl : torch::nn::Module {
    BertNetImpl(const HfConfig& config, bool pooler, std::int64_t num_labels);
    /// Last hidden states [B, L, H]. mask: int64/bool [B, L], 1 for real tokens.
    torch::Tensor forward(const torch::Tensor& ids, const torch::Tensor& types,
                          const torch::Tensor& mask);
    /// The dropout to apply now: `dropout` when in training mode outside InferenceMode, else null.
    BertDropout* active_dropout();
    /// refresh_fused() of every layer.
    void refresh_fused();
    /// true: every layer trains through forward_train_reference() (ATen's generic ops, the
    /// pre-kernel path; tests and benchmarks). Not thread-safe against concurrent forward calls.
    void set_reference_kernels(bool on);
    /// set_int8() of every layer.
    void set_int8(bool on);
    /// Pooler output from the [CLS] states [B, H].
    torch::Tensor pool(const torch::Tensor& cls);
    torch::Tensor classify(const torch::Tensor& pooled);

    ModelType model_type = ModelType::Bert;
    BertEmbeddings embeddings{nullptr};
    BertEncoder encoder{nullptr};
    BertPooler pooler{nullptr};                 ///< BERT only
    torch::nn::Linear pre_classifier{nullptr};  ///< DistilBERT only
    torch::nn::Linear classifier{nullptr};
    std::shared_ptr<BertDropout> dropout;  ///< training-time dropout; null = none
};
TORCH_MODULE(BertNet);

/// Access to the network inside a BertModel (for trainers and tests). The network is shared:
/// changing its parameters changes the model (call BertNet::refresh_fused() before inference
/// for full speed). Parameters of a BertModel are created with requires_grad false.
struct BertModelAccess {
    static BertNet net(const BertModel& model);
};

}  // namespace plumb::rerank::detail
