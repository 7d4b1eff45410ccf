#pragma once
/// \file tk_model.hpp
/// TK (Transformer-Kernel; Hofstätter et al., ECAI 2020; paper 000 §2.4), Torch-free API.
///
/// Scoring (FORMULAS.md):
///   q̂_i = α·q_i + (1-α)·TF(q + pos_q)_i,  p̂_j = α·p_j + (1-α)·TF(p + pos_p)_j
///   M_ij = cos(q̂_i, p̂_j);  K^k_ij = exp(-(M_ij - μ_k)² / (2σ_k²))
///   s = Σ_k W_k · Σ_i log(max(Σ_j K^k_ij, 1e-10))
/// with padding passage terms out of every Σ_j and padding query terms out of Σ_i.
///
/// Semantics follow the authors' public code (matchmaker, models/published/ecai20_tk.py):
///  - α ("mixer") is one learned scalar, initialised to 0.5; it mixes the raw word embeddings
///    (without positional features) with the Transformer output.
///  - TF = `layers` post-norm Transformer encoder layers like torch.nn.TransformerEncoderLayer
///    (self-attention with key padding mask, residual, LayerNorm eps 1e-5; ReLU feed-forward,
///    residual, LayerNorm), dropout 0. Input = embeddings + sinusoidal positional features
///    (allennlp's add_positional_features: sin of all timescales then cos, timescales 1..1e4).
///  - Query positions are 0, 1, ...; passage term j gets the features of position
///    j + passage_position_offset (500): the same table, shifted, as ecai20_tk.py's
///    positional_features_d = features(max_len + 500)[500:].
///  - Attention width: the authors' ECAI'20 code uses nn.TransformerEncoderLayer, i.e. heads
///    split the 300-d embedding (head size 300/heads). Paper 000 reports "16 heads of size 32"
///    which is the earlier TK_v1 (allennlp StackedSelfAttentionEncoder) with a 512-d attention
///    projection. plumb supports both: Q/K/V project D -> heads·head_dim and the output projects
///    back to D; head_dim = 0 means D / heads (exactly nn.MultiheadAttention, parameter names
///    as in a PyTorch state_dict). Defaults: 16 heads × 32 (paper 000), feed-forward 100.
///  - cos uses x / (‖x‖ + 1e-13) (allennlp CosineMatrixAttention): a zero vector has cos 0.
///  - The ECAI'20 per-kernel "alpha scaler" inside the log (initialised to 1) is not used.
///  - mean_kernel (off by default) = TK_v1's extra branch: the log branch becomes
///    log2(max(Σ_j K, 1e-10))·scaler, a second branch Σ_i (Σ_j K)/(passage length + 1)·scaler
///    with its own kernel weights, and a 2-weight linear layer combines both; scaler is a learned
///    scalar initialised to 0.01.
///  - Word embeddings: row 0 (padding) is zero; row 1 (OOV) is zero for random initialisation
///    and as given by the caller otherwise (plumb tk-init: zeros, or the mean vector with
///    --oov-mean; the authors' allennlp setup drew a random vector for it). With a zero OOV row
///    an OOV word enters the contextualisation only through its position.
///  - Kernel weights W (no bias) initialised uniformly in ±0.014 (matchzoo, as the authors).
///
/// Thread safety: a TkModel is immutable after construction (load/create); score() and
/// passage_vectors() may be called concurrently. Torch's intra-op threads are a global setting
/// of the process (see TkStageOptions::threads) and multiply with the caller's threads.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "rerank/tk_tokenizer.hpp"

namespace plumb::rerank {

inline constexpr const char* kTkFormat = "plumb-tk";
inline constexpr int kTkFormatVersion = 1;

/// μ of the 11 kernels of paper 000: 1.0 (exact match), 0.9, 0.7, ..., -0.9.
std::vector<float> tk_default_kernel_mu();

/// Architecture and input settings of a TK model (saved in its config.json).
struct TkConfig {
    std::int64_t embedding_dim = 300;  ///< GloVe 300-d (paper 000)
    std::int64_t layers = 2;           ///< paper 000
    std::int64_t heads = 16;           ///< paper 000
    std::int64_t head_dim = 32;        ///< paper 000; 0 = embedding_dim / heads
    std::int64_t ff_dim = 100;         ///< paper 000
    std::vector<float> kernel_mu = tk_default_kernel_mu();
    std::vector<float> kernel_sigma = std::vector<float>(11, 0.1f);  ///< paper 000
    float mixer_init = 0.5f;                  ///< ecai20_tk.py
    std::int64_t passage_position_offset = 500;  ///< paper 000
    std::int64_t max_query_length = 30;       ///< matchmaker default
    std::int64_t max_passage_length = 200;    ///< matchmaker default
    bool mean_kernel = false;                 ///< TK_v1's length-normalised branch
    bool train_embeddings = true;             ///< false freezes the word embeddings
    bool lowercase = true;                    ///< tokenizer lower-casing

    /// heads · (head_dim or embedding_dim / heads).
    std::int64_t attention_dim() const noexcept;
    /// Throws ConfigError naming the bad field.
    void validate() const;
};

/// Contextualised vectors p̂ of one passage: one row per word (after truncation to the model's
/// max_passage_length), in passage order.
struct TkTermVectors {
    std::vector<std::string> terms;      ///< the words (tokenizer output)
    std::vector<std::int64_t> ids;       ///< vocabulary ids (1 = OOV)
    std::vector<std::int64_t> positions; ///< absolute word positions 0, 1, ... (the positional
                                         ///< features used are position + 500)
    std::int64_t dim = 0;
    std::vector<float> values;  ///< terms.size() × dim, row-major

    std::span<const float> row(std::size_t i) const {
        return {values.data() + i * static_cast<std::size_t>(dim), static_cast<std::size_t>(dim)};
    }
};

/// One passage of TK's passage cache (rerank/tk_cache.hpp): `length` rows of embedding_dim
/// values, row j = p̂_j / (‖p̂_j‖ + 1e-13) (the passage side of the cosine match), either IEEE
/// fp16 (`rows`) or int8 with one float scale per row (`rows_int8`, `scales`: value =
/// scales[j] · rows_int8[j·D + d]); exactly one of `rows` / `rows_int8` is set (both null when
/// length is 0 is fine).
struct TkCachedPassage {
    const std::uint16_t* rows = nullptr;
    std::uint32_t length = 0;
    const std::int8_t* rows_int8 = nullptr;
    const float* scales = nullptr;
};

class TkModel;
namespace detail {
struct TkModelAccess;
}

/// A TK model: tokenizer + Torch module (PIMPL). Movable; shared read-only via
/// std::shared_ptr<const TkModel>.
class TkModel {
public:
    /// A new, untrained model. `embeddings`: vocabulary.size() × embedding_dim floats (row 0 is
    /// overwritten with zeros), or empty for random N(0, 0.1²) word vectors (rows 0, 1 zero). Other
    /// weights are initialised as PyTorch does (Xavier-uniform attention projections, uniform
    /// ±1/sqrt(fan_in) linear layers), from a private generator seeded with `seed` (the global
    /// Torch generator is not touched). Throws ConfigError / InvalidArgument.
    static TkModel create(const TkConfig& config, TkVocabulary vocabulary,
                          std::span<const float> embeddings = {}, std::uint64_t seed = 42);

    /// Loads a model directory: config.json (format "plumb-tk", version 1), the vocabulary file
    /// and the safetensors weights it names. Every tensor's shape is checked against the config
    /// (the embedding rows against the vocabulary size); missing, unexpected, truncated or
    /// mis-shaped tensors throw CheckpointError, unknown formats/versions too; IoError when a
    /// file cannot be read.
    static TkModel load(const std::filesystem::path& dir);
    /// Writes config.json, vocab.txt and model.safetensors (F32) into `dir` (created), each
    /// atomically.
    void save(const std::filesystem::path& dir) const;

    TkModel(TkModel&&) noexcept;
    TkModel& operator=(TkModel&&) noexcept;
    ~TkModel();

    const TkConfig& config() const noexcept;
    const TkTokenizer& tokenizer() const noexcept;
    const TkVocabulary& vocabulary() const noexcept;
    /// Learned scalar α.
    float mixer() const;
    /// Number of scalars in all parameters (embeddings included).
    std::int64_t parameter_count() const;

    /// Scores of `query` against each passage (higher = more relevant). Passages are sorted by
    /// length and scored in batches of at most `batch_size`, each padded to its longest member
    /// (dynamic padding); results do not depend on batch_size beyond float rounding. Runs under
    /// c10::InferenceMode.
    std::vector<float> score(std::string_view query, std::span<const std::string_view> passages,
                             std::size_t batch_size = 64) const;
    std::vector<float> score(std::string_view query, std::span<const std::string> passages,
                             std::size_t batch_size = 64) const;
    /// Same from token ids (already truncated or not: truncated here to the max lengths).
    std::vector<float> score_ids(std::span<const std::int64_t> query_ids,
                                 std::span<const std::vector<std::int64_t>> passage_ids,
                                 std::size_t batch_size = 64) const;

    /// Contextualised passage vectors p̂ (the input of the match matrix), for ATS/MATS.
    std::vector<TkTermVectors> passage_vectors(std::span<const std::string_view> passages,
                                               std::size_t batch_size = 64) const;
    TkTermVectors passage_vectors(std::string_view passage) const;

    /// Scores of `query` against passages whose contextualised, normalised vectors were
    /// computed earlier (TK's passage cache): only the query is contextualised here (on Torch's
    /// current intra-op threads: one is fastest for a query, see TkStage); the cosine match and
    /// kernel pooling run on `threads` threads (0 = Torch's intra-op count; rerank/detail/
    /// tk_cache_kernels.hpp). Equals score() up to the fp16 rounding of the passage vectors.
    std::vector<float> score_cached(std::string_view query,
                                    std::span<const TkCachedPassage> passages,
                                    int threads = 0) const;
    /// Token ids of a passage exactly as score() uses them (truncated to max_passage_length).
    std::vector<std::int64_t> passage_ids(std::string_view passage) const;

    /// 64-bit checksum of the model: configuration, vocabulary and every parameter and buffer
    /// value (FNV-1a over names and the configuration, splitmix64 over the float bits). Ties a
    /// passage cache to the weights it was computed with. Computed once (thread-safe).
    std::uint64_t checksum() const;

private:
    friend struct detail::TkModelAccess;
    struct Impl;
    explicit TkModel(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> m_impl;
};

/// Torch's intra-op thread count as seen from the calling thread.
int tk_intra_op_threads();
/// Sets Torch's intra-op thread count (n > 0; InvalidArgument otherwise). With OpenMP this is
/// the calling thread's setting; it multiplies with the host's own threads.
void tk_set_intra_op_threads(int n);

}  // namespace plumb::rerank
