#pragma once
/// \file cross_encoder.hpp
/// BERT-CAT: a cross-encoder re-rank stage. Each (query, passage) pair is encoded as
/// `[CLS] query [SEP] passage [SEP]` (token types 0 / 1, passage truncated first to max_length)
/// and scored by the classifier head: the logit of a 1-label head, or one label's logit of a
/// 2-label head (default label 1, "relevant"; configurable, optionally as a log-probability).
///
/// Batching: candidates (of one query, or of all queries in rerank()) are tokenized, grouped by
/// length and run in batches of batch_size with dynamic padding; scores do not depend on
/// batch size or thread count beyond float tolerance. The stage is const after construction and
/// safe to call concurrently (each call runs on the calling thread plus Torch's intra-op
/// threads). `threads` > 0 sets Torch's intra-op thread count for the duration of each call
/// (TorchThreadsScope: process-wide, restored afterwards); 0 leaves it alone.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>
#include <nlohmann/json_fwd.hpp>

#include "plugin/registry.hpp"
#include "plugin/stage.hpp"
#include "rerank/bert.hpp"
#include "rerank/wordpiece.hpp"

namespace plumb::rerank {

struct CrossEncoderOptions {
    std::size_t depth = 100;       ///< candidates re-scored per query
    std::size_t batch_size = 32;   ///< pairs per forward pass
    std::size_t max_length = 512;  ///< tokens per pair, special tokens included
    Truncation truncation = Truncation::PassageFirst;
    /// Label whose logit is the score; -1 = automatic (0 for a 1-label head, 1 otherwise).
    std::int64_t label = -1;
    /// Score = log_softmax(logits)[label] instead of the raw logit (needs >= 2 labels).
    bool log_softmax = false;
    /// Inference arithmetic (rerank/bert.hpp Precision; int8 = dynamic quantisation of the
    /// Transformer blocks' projections). from_folder() quantises the loaded model; the
    /// constructor requires a given model to be in this precision already.
    Precision precision = Precision::Fp32;
    int threads = 0;                ///< Torch intra-op threads during calls; 0 = unchanged
    std::string name = "bert-cat";  ///< stage name (score trace key)
};

class CrossEncoderStage : public RerankStage {
public:
    /// Throws InvalidArgument when the model has no classifier, the label is out of range,
    /// log_softmax is asked for a 1-label head, the tokenizer's vocabulary is larger than the
    /// model's embedding table, or the model's precision differs from options.precision
    /// (BertModel::set_precision() before sharing it); max_length is capped at the model's
    /// positions.
    CrossEncoderStage(std::shared_ptr<const BertModel> model,
                      std::shared_ptr<const WordPieceTokenizer> tokenizer,
                      CrossEncoderOptions options = {});
    ~CrossEncoderStage() override;

    /// Loads a Hugging Face cross-encoder folder (config.json, vocab.txt, model.safetensors,
    /// optional tokenizer_config.json). Throws CheckpointError, IoError, ParseError.
    /// Pipeline factory "cat": {"model": HF_DIR, "depth", "name", "batch_size", "max_length",
    /// "label", "log_softmax", "threads", "quantize": "fp32" | "int8"}
    /// (plugin/builtins/builtins.hpp). from_folder() applies options.precision to the model.
    static std::shared_ptr<const RerankStage> from_config(const nlohmann::json& config,
                                                          StageContext& ctx);
    static std::unique_ptr<CrossEncoderStage> from_folder(const std::filesystem::path& dir,
                                                          CrossEncoderOptions options = {});

    std::string name() const override;
    std::size_t depth() const override;
    std::vector<float> score(const Query& query,
                             std::span<const Candidate> candidates) const override;
    /// Batches the top-depth candidates of all lists together, then applies the scores.
    void rerank(std::span<const Query> queries, std::span<RankedList> lists) const override;

    /// Scores arbitrary pairs (no depth limit), in order.
    std::vector<float> score_pairs(std::string_view query,
                                   std::span<const std::string_view> passages) const;

    const CrossEncoderOptions& options() const noexcept { return m_options; }
    const BertModel& model() const noexcept { return *m_model; }

private:
    std::vector<float> score_encodings(std::span<const Encoding> pairs) const;

    std::shared_ptr<const BertModel> m_model;
    std::shared_ptr<const WordPieceTokenizer> m_tokenizer;
    CrossEncoderOptions m_options;
    std::int64_t m_label = 0;
};

}  // namespace plumb::rerank
