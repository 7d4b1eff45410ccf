#pragma once
/// \file hf_config.hpp
/// Hugging Face checkpoint folders: `config.json` of BERT and DistilBERT models, the tokenizer
/// settings of `tokenizer_config.json`, and where the files of a folder are.
///
/// BERT keys (transformers' BertConfig; defaults are BertConfig's, i.e. bert-base-uncased):
/// vocab_size 30522, hidden_size 768, num_hidden_layers 12, num_attention_heads 12,
/// intermediate_size 3072, hidden_act "gelu", max_position_embeddings 512, type_vocab_size 2,
/// layer_norm_eps 1e-12, pad_token_id 0, position_embedding_type "absolute".
/// DistilBERT keys (DistilBertConfig) are mapped onto the same fields: dim -> hidden_size,
/// n_layers -> num_hidden_layers, n_heads -> num_attention_heads, hidden_dim ->
/// intermediate_size, activation -> hidden_act, sinusoidal_pos_embds; defaults dim 768,
/// n_layers 6, n_heads 12, hidden_dim 3072, activation "gelu"; DistilBERT has no token types
/// (type_vocab_size 0) and a fixed layer-norm epsilon of 1e-12.
/// Labels follow PretrainedConfig: num_labels = size of id2label when present, else the
/// `num_labels` key, else 2.
///
/// Errors: CheckpointError "<file>: <key>: <problem>" for a missing file, invalid JSON, an
/// unsupported model_type, a key of the wrong type, or inconsistent values (hidden size not a
/// multiple of the heads, non-positive sizes, ...).

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace plumb::rerank {

enum class ModelType { Bert, DistilBert };

/// "bert" / "distilbert".
const char* model_type_name(ModelType type) noexcept;

/// The architecture hyper-parameters of a BERT-family encoder.
struct HfConfig {
    ModelType model_type = ModelType::Bert;
    std::int64_t vocab_size = 30522;
    std::int64_t hidden_size = 768;
    std::int64_t num_hidden_layers = 12;
    std::int64_t num_attention_heads = 12;
    std::int64_t intermediate_size = 3072;
    std::string hidden_act = "gelu";  ///< "gelu" (erf), "gelu_new"/"gelu_pytorch_tanh", "relu", ...
    std::int64_t max_position_embeddings = 512;
    std::int64_t type_vocab_size = 2;  ///< 0 for DistilBERT
    double layer_norm_eps = 1e-12;
    std::int64_t pad_token_id = 0;
    std::string position_embedding_type = "absolute";  ///< only "absolute" is supported by plumb
    bool sinusoidal_pos_embds = false;                 ///< DistilBERT only
    /// Dropout probabilities, used only when training (BERT: hidden_dropout_prob,
    /// attention_probs_dropout_prob, classifier_dropout (null = hidden_dropout_prob); DistilBERT:
    /// dropout, attention_dropout, seq_classif_dropout (default 0.2)). Defaults 0.1 as
    /// transformers'.
    double hidden_dropout_prob = 0.1;
    double attention_probs_dropout_prob = 0.1;
    std::optional<double> classifier_dropout;
    /// The classifier-head dropout in effect (classifier_dropout or hidden_dropout_prob).
    double effective_classifier_dropout() const noexcept {
        return classifier_dropout ? *classifier_dropout : hidden_dropout_prob;
    }
    std::int64_t num_labels = 2;
    std::vector<std::string> id2label;     ///< labels by id; empty when the file has none
    std::vector<std::string> architectures;  ///< e.g. {"BertForSequenceClassification"}

    /// The original JSON text this config was read from (empty for a config built in code);
    /// save_hf_config() keeps its unknown keys.
    std::string source_json;

    /// hidden_size / num_attention_heads.
    std::int64_t head_dim() const noexcept { return hidden_size / num_attention_heads; }
    /// Throws CheckpointError naming `file` and the first bad key when values are inconsistent.
    void validate(const std::string& file = "config") const;
};

/// Parses config.json text; `file` names it in errors.
HfConfig parse_hf_config(const std::string& json_text, const std::string& file = "config.json");
/// Reads `path` (a config.json file, or a folder holding one).
HfConfig load_hf_config(const std::filesystem::path& path);
/// The config as JSON text with the model type's own key names (BERT or DistilBERT), keeping
/// unknown keys of source_json, pretty-printed.
std::string hf_config_to_json(const HfConfig& config);
/// Writes config.json atomically (`path`: a file, or an existing folder to write config.json in).
void save_hf_config(const std::filesystem::path& path, const HfConfig& config);

/// Settings of tokenizer_config.json that change tokenization (transformers' BertTokenizer
/// arguments); unset fields keep the tokenizer's defaults.
struct HfTokenizerSettings {
    std::optional<bool> do_lower_case;
    std::optional<bool> strip_accents;  ///< null in the file = follow do_lower_case
    std::optional<bool> tokenize_chinese_chars;
    std::optional<std::int64_t> model_max_length;
};

/// Reads `<dir>/tokenizer_config.json` when present (all fields unset otherwise). Throws
/// CheckpointError for invalid JSON or wrongly typed keys.
HfTokenizerSettings load_hf_tokenizer_settings(const std::filesystem::path& dir);

/// The files of a Hugging Face checkpoint folder.
struct HfCheckpointFiles {
    std::filesystem::path dir;
    std::filesystem::path config;       ///< config.json (must exist)
    std::filesystem::path vocab;        ///< vocab.txt (must exist)
    std::filesystem::path weights;      ///< model.safetensors, else pytorch_model.bin
    std::filesystem::path tokenizer_config;  ///< tokenizer_config.json, empty when absent
};

/// Locates config.json, vocab.txt and the weights (model.safetensors, else pytorch_model.bin;
/// find_weights_file) in `dir`. Throws CheckpointError naming the folder and the missing file.
HfCheckpointFiles locate_hf_checkpoint(const std::filesystem::path& dir);

}  // namespace plumb::rerank
