#pragma once
/// \file detail/trainable.hpp
/// The models seen by the trainer (internal: includes Torch): TK, BERT-CAT and BERT-DOT
/// behind one interface that turns batches of TrainingExamples into score tensors with
/// autograd, names parameter groups, switches dropout, saves checkpoints in the formats the
/// re-rank stages load, and builds a re-rank stage over the current weights for validation.
///
/// Tokenisation happens here (TK: TkTokenizer; BERT: WordPieceTokenizer with the stages'
/// max lengths and passage-first truncation); every batch is padded to its longest member.
///
/// A Trainable starts in training mode (dropout on, as a new PyTorch module). In eval mode
/// (set_training(false)) score_batch() gives the scores of the model's re-rank stage for the
/// same (query, passage) pairs (up to float rounding), with autograd.
///
/// BERT: training runs the encoder through the real query/key/value parameters
/// (BertLayerImpl::forward_train); inference keeps a fused Q/K/V copy, which set_training(false),
/// stage() and save() refresh after optimizer steps (a stale copy is also detected by the
/// parameters' version counters and bypassed, so a stage never scores with old weights).
/// Dropout (BERT only; TK has none) follows the config's hidden_dropout_prob,
/// attention_probs_dropout_prob and classifier dropout, is drawn from a generator seeded with
/// TrainableOptions::seed, and is never applied under c10::InferenceMode (the stages).

#include <torch/torch.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "plugin/error.hpp"
#include "plugin/stage.hpp"
#include "rerank/bert.hpp"
#include "rerank/tk_model.hpp"
#include "rerank/train_data.hpp"
#include "rerank/wordpiece.hpp"

namespace plumb::rerank::detail {

enum class TrainableKind { Tk, Cat, Dot };

/// One optimizer parameter group.
struct ParamGroup {
    std::string name;                   ///< "embeddings", "contextualizer", "kernels", "encoder", "head", ...
    std::vector<torch::Tensor> params;  ///< parameters that require grad
    bool no_weight_decay = false;       ///< biases and LayerNorm weights (AdamW convention)
};

class Trainable {
public:
    virtual ~Trainable() = default;
    virtual TrainableKind kind() const noexcept = 0;

    /// Scores [B, 1+n] with autograd: row i = example i's query against its positive (column
    /// 0) and its negatives (columns 1..n, n = the batch's smallest negative count: extra
    /// negatives of longer examples are dropped). For BERT-DOT: the similarity of the query
    /// vector and each passage vector (dot or cosine as configured).
    virtual torch::Tensor score_batch(std::span<const TrainingExample> batch) = 0;

    /// Bi-encoders only (kind() == Dot; InvalidArgument otherwise): query vectors [B, D] and
    /// passage vectors [B·G, D] (example i's positive at row i·G, then its first G-1
    /// negatives; G = 1 + the batch's smallest negative count), with autograd; cosine
    /// similarity configured -> vectors L2-normalised.
    virtual std::pair<torch::Tensor, torch::Tensor> encode_batch(
        std::span<const TrainingExample> batch) {
        (void)batch;
        throw InvalidArgument("encode_batch: not a bi-encoder");
    }

    /// Parameter groups. TK: "embeddings" (word embeddings; absent when frozen),
    /// "contextualizer" (Transformer layers and the mixer α), "kernels" (kernel weights and
    /// the mean-kernel branch) — paper 000 trains the first two at 1e-4 and kernels at 1e-3.
    /// BERT: "encoder" (embeddings and layers) and "head" (pooler/classifier), each split into
    /// decay / no_weight_decay parameters (biases, LayerNorm weights).
    virtual std::vector<ParamGroup> parameter_groups() = 0;

    /// All parameters by their checkpoint names (for resume and hashing).
    virtual std::vector<std::pair<std::string, torch::Tensor>> named_parameters() = 0;

    /// Dropout on (true) or off. Validation and saving switch it off and back.
    virtual void set_training(bool training) = 0;

    /// A re-rank stage scoring with the current weights (shares the model: later weight changes
    /// are seen by the same stage object; it stays valid after this object is destroyed).
    virtual std::shared_ptr<const RerankStage> stage(std::size_t depth, std::size_t batch_size) = 0;

    /// Writes the model in the format its stage loads (TK: TkModel::save layout, read by
    /// TkModel::load / make_tk_stage; BERT: Hugging Face folder with config.json, vocab.txt,
    /// model.safetensors (F32) and tokenizer_config.json, read by CrossEncoderStage::from_folder
    /// (CAT, BertForSequenceClassification names) or BiEncoder::from_folder (DOT, BertModel
    /// names)), each file atomically.
    virtual void save(const std::filesystem::path& dir) = 0;
};

struct TrainableOptions {
    TrainableKind kind = TrainableKind::Tk;
    /// BERT: max tokens of a pair (CAT), of a query / passage (DOT).
    std::size_t max_length = 256;
    std::size_t query_max_length = 32;
    std::size_t passage_max_length = 200;
    std::string pooling = "cls";       ///< DOT: cls / mean
    std::string similarity = "dot";    ///< DOT: dot / cosine
    bool dropout = true;               ///< BERT: apply the config's dropout probabilities in training
    bool freeze_word_embeddings = false;  ///< BERT: word-embedding matrix not trained
    std::uint64_t seed = 42;           ///< dropout generator
};

/// Loads a checkpoint folder for training (TK: TkModel layout; BERT: Hugging Face folder; a
/// cross-encoder without a classifier gets a new 1-label head, initialised from `seed`).
/// Throws CheckpointError / IoError.
std::unique_ptr<Trainable> load_trainable(const std::filesystem::path& dir,
                                          const TrainableOptions& options);

/// Wraps an existing TK model (shared: training updates it).
std::unique_ptr<Trainable> make_trainable_tk(std::shared_ptr<TkModel> model);

/// Wraps an existing BERT model (shared: training updates it) as BERT-CAT (options.kind Cat;
/// the model needs a classifier head) or BERT-DOT (Dot; heads are not trained). save() writes
/// `tokenizer`'s vocabulary and settings. Throws InvalidArgument (no classifier for Cat, a
/// vocabulary larger than the model's, bad pooling / similarity, kind Tk).
std::unique_ptr<Trainable> make_trainable_bert(std::shared_ptr<BertModel> model,
                                               std::shared_ptr<const WordPieceTokenizer> tokenizer,
                                               const TrainableOptions& options);

}  // namespace plumb::rerank::detail
