#pragma once
/// \file bi_encoder.hpp
/// BERT-DOT's encoder: queries and passages encoded separately (`[CLS] text [SEP]`), pooled
/// (CLS or mean), compared by dot product or cosine. Used by a re-rank stage
/// (bi_encoder_stage.hpp), a first stage over a FAISS index (dense_retriever.hpp) and
/// `plumb encode` (vector_store.hpp).
///
/// With Similarity::Cosine the vectors are L2-normalised at encoding time, so that the inner
/// product of stored vectors is the cosine (a FAISS inner-product index then ranks by cosine).
/// Everything is const after construction and safe to call concurrently; `threads` > 0 sets
/// Torch's intra-op threads for each call (TorchThreadsScope: process-wide, restored after).

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "rerank/bert.hpp"
#include "rerank/vector_store.hpp"
#include "rerank/wordpiece.hpp"

namespace plumb::rerank {

enum class Similarity { Dot, Cosine };
/// "dot" / "cosine".
const char* similarity_name(Similarity similarity) noexcept;
/// Parses "dot" / "cosine"; throws InvalidArgument.
Similarity parse_similarity(const std::string& name);

struct BiEncoderOptions {
    Pooling pooling = Pooling::Cls;
    Similarity similarity = Similarity::Dot;
    std::size_t batch_size = 32;
    std::size_t query_max_length = 64;     ///< tokens, [CLS]/[SEP] included
    std::size_t passage_max_length = 256;  ///< tokens, [CLS]/[SEP] included
    int threads = 0;                       ///< Torch intra-op threads during calls; 0 = unchanged
    /// from_folder() on a sentence-transformers folder (modules.json): its Pooling module
    /// (1_Pooling/config.json) decides `pooling` and a Normalize module makes `similarity`
    /// cosine, unless the caller set them explicitly (these flags); explicit values win.
    bool explicit_pooling = false;
    bool explicit_similarity = false;
};

/// What a sentence-transformers model folder says about pooling and normalisation.
struct SentenceTransformersConfig {
    std::filesystem::path transformer_dir;  ///< the BERT folder (the Transformer module's path)
    Pooling pooling = Pooling::Cls;
    bool pooling_known = false;  ///< false when the Pooling module names a mode plumb lacks
    std::string pooling_mode;    ///< the mode as named in the file, e.g. "max_tokens"
    bool normalize = false;      ///< a Normalize module follows the pooling
};

/// Reads `<dir>/modules.json` and the Pooling module's config.json; nullopt when the folder has
/// no modules.json. Throws CheckpointError naming the file for invalid JSON, several pooling
/// modes at once, or modules plumb cannot reproduce (e.g. Dense projections).
std::optional<SentenceTransformersConfig> read_sentence_transformers_config(
    const std::filesystem::path& dir);

/// The contextualized vectors of one passage's WordPiece tokens, [CLS] and [SEP] left out: a
/// dense retriever's passage-term representations, computed without the query (what ATS / MATS
/// compare, paper 000 Eq. 8-9).
struct PassageTokenVectors {
    std::vector<std::string> terms;       ///< WordPiece tokens ("##" pieces as in vocab.txt)
    std::vector<std::int64_t> positions;  ///< position ids in the encoded sequence ([CLS] = 0)
    std::int64_t dim = 0;
    std::vector<float> values;  ///< terms.size() x dim, row-major (last hidden states)
};

/// Text -> vector encoder (one shared model for queries and passages).
class BiEncoder {
public:
    /// Throws InvalidArgument for a null model/tokenizer or a vocabulary larger than the model's.
    BiEncoder(std::shared_ptr<const BertModel> model,
              std::shared_ptr<const WordPieceTokenizer> tokenizer, BiEncoderOptions options = {});
    /// Loads a Hugging Face folder (encoder weights only; heads in the file are ignored), or a
    /// sentence-transformers folder (see BiEncoderOptions::explicit_pooling). Throws
    /// CheckpointError when a sentence-transformers pooling mode is neither CLS nor mean and
    /// pooling is not explicit.
    static std::shared_ptr<BiEncoder> from_folder(const std::filesystem::path& dir,
                                                  BiEncoderOptions options = {});

    std::size_t dim() const noexcept;
    const BiEncoderOptions& options() const noexcept { return m_options; }
    /// Row-major [n x dim] query vectors.
    std::vector<float> encode_queries(std::span<const std::string_view> texts) const;
    /// Row-major [n x dim] passage vectors.
    std::vector<float> encode_passages(std::span<const std::string_view> texts) const;
    /// Per passage, its tokens' last hidden states as encode_passages() computes them before
    /// pooling (same tokenizer, passage_max_length, batches). A passage without tokens gives an
    /// empty entry.
    std::vector<PassageTokenVectors> passage_token_vectors(
        std::span<const std::string_view> texts) const;
    /// Similarity of two vectors of dim() floats (already normalised for cosine).
    float similarity(const float* a, const float* b) const noexcept;
    /// What a vector folder records about this encoder (pooling, similarity, dim, lengths,
    /// `model` as given).
    VectorStoreMeta store_meta(const std::string& model) const;

private:
    std::vector<float> encode(std::span<const std::string_view> texts, std::size_t max_length) const;
    std::shared_ptr<const BertModel> m_model;
    std::shared_ptr<const WordPieceTokenizer> m_tokenizer;
    BiEncoderOptions m_options;
};

/// The encoder keys of a "dot" or "dense" configuration: "batch_size", "pooling",
/// "similarity" (given keys win over a sentence-transformers folder's modules), "threads".
BiEncoderOptions bi_encoder_options_from_config(const nlohmann::json& config,
                                                const std::string& where);

}  // namespace plumb::rerank
