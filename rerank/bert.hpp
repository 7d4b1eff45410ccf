#pragma once
/// \file bert.hpp
/// The BERT / DistilBERT encoder (LibTorch, CPU) matching Hugging Face numerics, behind a
/// Torch-free interface.
///
/// Architecture (transformers' BertModel / DistilBertModel, inference only, no dropout):
///  - embeddings: LayerNorm(word + position [+ token type]) with the config's epsilon
///    (DistilBERT: no token types; learned or sinusoidal positions, read from the checkpoint);
///  - N post-LN blocks: x = LN(x + SelfAttention(x)), x = LN(x + W2 act(W1 x)), where the
///    self-attention adds the most negative float to the scores of padded keys (as HF does with
///    finfo.min) and act is erf GELU ("gelu"), tanh GELU ("gelu_new", "gelu_pytorch_tanh") or ReLU;
///  - optional heads: BERT's pooler tanh(W h_[CLS]) then `classifier`; DistilBERT's
///    ReLU(pre_classifier h_[CLS]) then `classifier` (DistilBertForSequenceClassification).
/// Parameters carry the Hugging Face BertModel names ("embeddings.word_embeddings.weight",
/// "encoder.layer.3.attention.self.query.weight", "pooler.dense.bias", "classifier.weight", ...)
/// for both architectures; rerank/bert_checkpoint.hpp maps them to and from checkpoint files.
///
/// Threads: inference runs under c10::InferenceMode on the calling thread and uses Torch's
/// intra-op thread pool. Torch's thread count is process-wide configuration: plumb never
/// changes it implicitly; TorchThreadsScope (rerank/torch_threads.hpp) sets it for a scope when
/// a caller asked for it.
/// Host threads calling a model concurrently multiply with the intra-op threads.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "rerank/hf_config.hpp"
#include "rerank/wordpiece.hpp"

namespace plumb::rerank {

/// How a sequence of hidden states becomes one vector.
enum class Pooling {
    Cls,   ///< the hidden state of the first token ([CLS])
    Mean,  ///< the mean over the non-padding tokens
};
/// "cls" / "mean".
const char* pooling_name(Pooling pooling) noexcept;
/// Parses "cls" / "mean"; throws InvalidArgument otherwise.
Pooling parse_pooling(const std::string& name);

/// Arithmetic of the encoder's linear layers at inference.
///
/// Int8 accuracy contract: the four projections of every Transformer block (query/key/value,
/// attention output, intermediate, output) use int8 weights quantised per output row
/// (symmetric, scale max|w|/127) and uint8 activations quantised per call over the whole batch
/// (asymmetric min/max), with int32 accumulation; embeddings, attention scores and softmax,
/// GELU, residuals, LayerNorms, the pooler and the classifier stay fp32. It is an
/// approximation: each projection's output carries a relative error of about 1-2 % of its
/// largest magnitude, so scores differ from fp32 (tests: rerank/README.md) and, because the
/// activation scale is per batch, a pair's score can depend slightly on the pairs batched with
/// it. Training always runs in fp32.
enum class Precision {
    Fp32,  ///< float32 everywhere (default)
    Int8,  ///< dynamic int8 quantisation of the block projections (inference only)
};
/// "fp32" / "int8".
const char* precision_name(Precision precision) noexcept;
/// Parses "fp32" / "int8"; throws InvalidArgument otherwise.
Precision parse_precision(const std::string& name);

/// Name and shape of one model parameter.
struct ParameterInfo {
    std::string name;
    std::vector<std::int64_t> shape;
};

/// Which heads a BertModel carries besides the encoder.
struct BertHeads {
    /// BERT: the pooler (`pooler.dense`); DistilBERT: `pre_classifier`. Needed by `classifier`.
    bool pooler = false;
    /// Labels of the `classifier` head (0 = none; 1 or 2 for cross-encoders, any >= 1 allowed).
    std::int64_t num_labels = 0;
};

namespace detail {
struct BertModelAccess;
}

/// A BERT or DistilBERT encoder with optional classification heads. Inference methods are const
/// and safe to call concurrently; set_parameter() is not (call it before sharing the model).
/// Movable, not copyable.
class BertModel {
public:
    /// A randomly initialised model (as transformers initialises: normal(0, 0.02) weights, zero
    /// biases, unit LayerNorm, zero padding row; DistilBERT sinusoidal positions when the config
    /// says so), deterministic for a given seed. Throws CheckpointError for an invalid config
    /// (HfConfig::validate), InvalidArgument for heads that need a pooler it lacks.
    BertModel(HfConfig config, BertHeads heads = {}, std::uint64_t seed = 0);
    ~BertModel();
    BertModel(BertModel&&) noexcept;
    BertModel& operator=(BertModel&&) noexcept;

    const HfConfig& config() const noexcept;
    const BertHeads& heads() const noexcept;
    std::int64_t hidden_size() const noexcept;

    /// All parameters with their internal (BertModel-style) names, sorted by name.
    std::vector<ParameterInfo> parameters() const;
    /// True when `name` is a parameter of this model.
    bool has_parameter(const std::string& name) const;
    /// Shape of parameter `name` (InvalidArgument when unknown).
    std::vector<std::int64_t> parameter_shape(const std::string& name) const;
    /// Copies `values` (row-major, numel of the parameter) into parameter `name`. Throws
    /// InvalidArgument for an unknown name or a size mismatch. Not thread-safe.
    void set_parameter(const std::string& name, std::span<const float> values);
    /// A copy of parameter `name` (row-major).
    std::vector<float> parameter(const std::string& name) const;

    /// Switches inference to `precision` (see Precision). Int8 quantises the current parameters
    /// now; set_parameter() afterwards re-quantises the layer it changed. Throws
    /// InvalidArgument when LibTorch has no quantized engine. Not thread-safe (call it before
    /// sharing the model).
    void set_precision(Precision precision);
    Precision precision() const noexcept;

    /// Last hidden states of one or more sequences: a flat row-major [length x hidden] vector per
    /// sequence (padding removed). Sequences are grouped by length into batches of at most
    /// `batch_size` (dynamic padding); the result is in input order. Throws InvalidArgument for
    /// empty sequences, ids outside the vocabulary or sequences longer than the positions.
    std::vector<std::vector<float>> last_hidden_states(std::span<const Encoding> sequences,
                                                       std::size_t batch_size = 32) const;
    /// One pooled vector per sequence, row-major [n x hidden].
    std::vector<float> embed(std::span<const Encoding> sequences, Pooling pooling,
                             std::size_t batch_size = 32) const;
    /// The pooler output per sequence ([n x hidden]; tanh pooler for BERT, ReLU pre-classifier
    /// for DistilBERT). Throws InvalidArgument without a pooler.
    std::vector<float> pooled(std::span<const Encoding> sequences,
                              std::size_t batch_size = 32) const;
    /// Classifier logits per sequence, row-major [n x num_labels]. Throws InvalidArgument
    /// without a classifier.
    std::vector<float> logits(std::span<const Encoding> sequences,
                              std::size_t batch_size = 32) const;

private:
    friend struct detail::BertModelAccess;
    struct Impl;
    std::unique_ptr<Impl> m_impl;
};

/// Throws InvalidArgument ("<who>: vocabulary of N tokens exceeds the model's M embeddings")
/// when `vocab` has more tokens than `model` has embedding rows (ids past them are invalid).
void check_vocabulary_fits(const BertModel& model, const Vocab& vocab, const std::string& who);

/// Batches of sequence indices grouped by length: indices sorted by decreasing length (ties by
/// index), cut into consecutive groups of at most `batch_size` (0 is treated as 1). Every
/// index appears exactly once. Pure; used by all batched inference.
std::vector<std::vector<std::size_t>> length_grouped_batches(std::span<const std::size_t> lengths,
                                                             std::size_t batch_size);

}  // namespace plumb::rerank
