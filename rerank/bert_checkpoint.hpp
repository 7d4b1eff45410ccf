#pragma once
/// \file bert_checkpoint.hpp
/// Hugging Face BERT / DistilBERT checkpoints (config.json + model.safetensors, or
/// pytorch_model.bin as torch.save writes it) to and from BertModel.
///
/// Tensor names in the file:
///  - BERT: BertModel names (`embeddings.*`, `encoder.layer.N.*`, optional `pooler.dense.*`),
///    with or without the `bert.` prefix (BertForSequenceClassification / BertModel), plus the
///    cross-encoder head `classifier.{weight,bias}` with 1 or more labels.
///  - DistilBERT: `[distilbert.]embeddings.{word_embeddings,position_embeddings,LayerNorm}`,
///    `[distilbert.]transformer.layer.N.attention.{q_lin,k_lin,v_lin,out_lin}`,
///    `...sa_layer_norm`, `...ffn.{lin1,lin2}`, `...output_layer_norm`, plus the head
///    `pre_classifier` and `classifier` (DistilBertForSequenceClassification).
/// Loading is strict: every tensor the architecture needs must be present with its exact shape
/// and a float dtype (F32, F16 or BF16; converted to float32), and a tensor the architecture
/// does not know is an error, except the auxiliary tensors of pre-training heads, which are
/// ignored: `cls.*` (BERT MLM/NSP heads), `vocab_transform.*`, `vocab_layer_norm.*`,
/// `vocab_projector.*` (DistilBERT MLM head) and `*.position_ids` buffers. A mismatch throws
/// one CheckpointError naming the file and listing all missing, unexpected and mis-shaped
/// tensors (first 10 of each kind, with counts).

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "rerank/bert.hpp"
#include "rerank/hf_config.hpp"
#include "rerank/safetensors.hpp"

namespace plumb::rerank {

/// Which heads to take from a checkpoint.
enum class HeadSelection {
    Auto,        ///< whatever the file holds (pooler / pre_classifier, classifier)
    EncoderOnly, ///< ignore pooler and classifier tensors (bi-encoders)
    Classifier,  ///< require pooler (or pre_classifier) and classifier (cross-encoders)
};

struct BertCheckpointOptions {
    HeadSelection heads = HeadSelection::Auto;
    /// Ignore tensors the architecture does not know instead of failing (they are still
    /// reported in BertCheckpointInfo::ignored).
    bool allow_unexpected = false;
};

/// What a load found.
struct BertCheckpointInfo {
    std::string prefix;                ///< "bert.", "distilbert." or ""
    BertHeads heads;                   ///< heads loaded
    std::vector<std::string> ignored;  ///< file tensors not loaded (auxiliary or allowed)
};

/// The checkpoint name of internal parameter `name` (see BertModel) for `type` under `prefix`
/// ("bert." / "distilbert." / ""); heads (`classifier`, `pre_classifier`) never take the prefix.
std::string checkpoint_tensor_name(ModelType type, const std::string& name,
                                   const std::string& prefix);

/// Builds a model for `config` from the tensors of `weights`. Throws CheckpointError (see the
/// file comment).
BertModel load_bert_weights(const HfConfig& config, const SafetensorsFile& weights,
                            const BertCheckpointOptions& options = {},
                            BertCheckpointInfo* info = nullptr);

/// Loads `<dir>/config.json` and `<dir>/model.safetensors`, or `<dir>/pytorch_model.bin` when
/// there is no safetensors file (see checkpoint_format.hpp: the same tensors give the same
/// model). Throws CheckpointError (naming the format found when a file is not in the format
/// its name announces), IoError.
BertModel load_bert_checkpoint(const std::filesystem::path& dir,
                               const BertCheckpointOptions& options = {},
                               BertCheckpointInfo* info = nullptr);

/// Writes `<dir>/config.json` and `<dir>/model.safetensors` (atomically each; `dir` is created)
/// with Hugging Face names: BertForSequenceClassification (prefix `bert.`) when the model has a
/// classifier, else BertModel names without prefix; DistilBERT with prefix `distilbert.`.
/// `vocab`, when given, is written as vocab.txt. Tensors are stored as `dtype` (F32, F16, BF16).
void save_bert_checkpoint(const BertModel& model, const std::filesystem::path& dir,
                          DType dtype = DType::F32, const Vocab* vocab = nullptr);

}  // namespace plumb::rerank
