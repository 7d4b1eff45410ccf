#pragma once
/// \file torchscript_stage.hpp
/// A generic cross-encoder re-rank stage over a TorchScript model (`torch::jit::load`), for
/// architectures plumb does not implement itself.
///
/// Input contract. The model's `forward` is called as
///     forward(input_ids, attention_mask, token_type_ids)
/// with three int64 tensors of shape [B, L] (B = pairs in the batch, L = longest pair of the
/// batch: dynamic padding), built by plumb's WordPiece tokenizer from `[CLS] query [SEP] passage
/// [SEP]` (token types 0 for the query part, 1 for the passage part; padding: pad id, type 0,
/// mask 0). With `pass_token_type_ids = false` only (input_ids, attention_mask) are passed
/// (e.g. a traced DistilBERT). It must return a float tensor (any floating dtype; converted to
/// float32) of shape [B] or [B, 1] (the score), or [B, C] with C >= 2 (the score is column
/// `positive_index`, default 1: the "relevant" logit of a 2-label head), or a tuple/list whose
/// first element is such a tensor (as Hugging Face models traced with return_dict=False
/// return). Anything else throws CheckpointError naming the model file and the shape found.
///
/// The model is run on CPU under c10::InferenceMode, in batches of `batch_size` pairs; when
/// `group_by_length` is set, the candidates of a query are sorted by tokenized length before
/// batching (less padding), and scores are returned in candidate order. Scores do not depend on
/// the batch size or grouping up to float tolerance, as long as the model honours the mask.
/// `threads` > 0 sets Torch's intra-op thread count while the stage scores (TorchThreadsScope,
/// restored afterwards; the setting is process-wide while it lasts); 0 leaves Torch's setting
/// alone. Thread
/// counts multiply with the host's threads. The stage is const after construction; concurrent
/// score() calls are allowed (the TorchScript interpreter is re-entrant for inference).
/// Also accepted as output: a dict with a "logits" entry.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <vector>
#include <nlohmann/json_fwd.hpp>

#include "plugin/registry.hpp"
#include "plugin/stage.hpp"
#include "rerank/wordpiece.hpp"

namespace plumb::rerank {

struct TorchScriptStageOptions {
    std::filesystem::path model;      ///< TorchScript file (torch.jit.save / Module::save)
    /// Folder with vocab.txt (and optionally tokenizer_config.json), or a vocab.txt file.
    std::filesystem::path tokenizer;
    WordPieceOptions tokenizer_options;  ///< overridden by tokenizer_config.json when present
    std::size_t depth = 100;          ///< candidates re-scored per query
    std::size_t batch_size = 32;      ///< pairs per forward call
    std::size_t max_length = 512;     ///< tokens per pair, [CLS]/[SEP] included
    Truncation truncation = Truncation::PassageFirst;
    std::int64_t positive_index = 1;  ///< column of a [B, C>=2] output used as the score
    bool pass_token_type_ids = true;  ///< pass token_type_ids as the third argument
    bool group_by_length = true;      ///< sort candidates by length before batching
    int threads = 0;                  ///< Torch intra-op threads while scoring; 0 = unchanged
    std::string name = "torchscript"; ///< stage name (score trace key)
};

class TorchScriptStage : public RerankStage {
public:
    /// Loads the model and tokenizer. Throws CheckpointError when the model file is missing or
    /// not a TorchScript archive (naming the file), InvalidArgument for bad options, and the
    /// tokenizer's errors (IoError/ParseError) for the vocabulary.
    explicit TorchScriptStage(TorchScriptStageOptions options);
    /// Pipeline factory "torchscript": {"model": FILE_OR_DIR, "depth", "name", "batch_size",
    /// "max_length", "threads", "token_type_ids"} (plugin/builtins/builtins.hpp).
    static std::shared_ptr<const RerankStage> from_config(const nlohmann::json& config,
                                                          StageContext& ctx);
    ~TorchScriptStage() override;
    TorchScriptStage(const TorchScriptStage&) = delete;
    TorchScriptStage& operator=(const TorchScriptStage&) = delete;

    std::string name() const override;
    std::size_t depth() const override;
    /// Scores of the first min(depth, size) candidates against `query`. Throws CheckpointError
    /// when the model fails or returns an unexpected shape.
    std::vector<float> score(const Query& query,
                             std::span<const Candidate> candidates) const override;

    /// Scores arbitrary (query, passage) pairs, in order (no depth limit).
    std::vector<float> score_pairs(std::string_view query,
                                   std::span<const std::string_view> passages) const;

    const TorchScriptStageOptions& options() const noexcept;
    const WordPieceTokenizer& tokenizer() const noexcept;

private:
    struct Impl;
    std::unique_ptr<Impl> m_impl;
};

/// Builds the stage from a model folder, for CLIs (`plumb rerank --type torchscript --model
/// DIR`): DIR holds the TorchScript file (`model.pt`, else the only `*.pt`/`*.ts`/`*.torchscript`
/// file), `vocab.txt` (+ optional `tokenizer_config.json`) and optionally `torchscript.json`
/// with any of {"positive_index": 1, "pass_token_type_ids": true, "max_length": 512} (these
/// override `base`). `path` may also be the TorchScript file itself, with vocab.txt beside it.
/// `base` supplies depth, batch size, threads, etc. Throws CheckpointError for a missing or
/// ambiguous model file or a bad torchscript.json.
std::unique_ptr<TorchScriptStage> make_torchscript_stage(const std::filesystem::path& path,
                                                         TorchScriptStageOptions base = {});

}  // namespace plumb::rerank
