#pragma once
/// \file wordpiece.hpp
/// WordPiece tokenization faithful to Hugging Face's BERT tokenizer (the fast tokenizer's
/// BertNormalizer + BertPreTokenizer + WordPiece; transformers' Python BertTokenizer with
/// options.nfc), with pair encoding for cross-encoders and batch encoding with dynamic padding.
/// Differential test: tests/rerank/reference/wordpiece_hf (tokenizers.js, three normaliser
/// settings, identical ids).
///
/// Basic tokenization, in order:
///  1. special tokens ([CLS], [SEP], [PAD], [MASK], [UNK]) written in the text are kept whole
///     (the text between them is tokenized separately), as the slow and fast tokenizers do;
///  2. clean text: drop U+0000, U+FFFD and control characters (Unicode category C*, except TAB,
///     LF, CR); map whitespace (space, TAB, LF, CR, category Zs) to a space;
///  3. when tokenize_chinese_chars: spaces around CJK ideographs (U+4E00-9FFF, 3400-4DBF,
///     20000-2A6DF, 2A700-2B73F, 2B740-2B81F, 2B820-2CEAF, F900-FAFF, 2F800-2FA1F);
///  4. split on whitespace (with options.nfc: Unicode NFC normalisation first, as transformers'
///     Python BertTokenizer does since 4.x; the Rust "fast" tokenizer that AutoTokenizer and
///     sentence-transformers load, and tokenizers.js, do not normalise: the default);
///  5. per word: when lowercase, full Unicode lower-casing, then accent stripping unless
///     strip_accents == false (NFD, drop category Mn); without lowercase, accents are stripped
///     only when strip_accents == true;
///  6. punctuation split: every punctuation character (ASCII 33-47, 58-64, 91-96, 123-126, or
///     Unicode category P*) becomes a word of its own.
/// WordPiece: per word, [UNK] when longer than max_input_chars_per_word code points (100);
/// otherwise greedy longest-match-first against the vocabulary, continuation pieces prefixed
/// with "##"; a word that cannot be fully decomposed becomes a single [UNK].
///
/// Input must be valid UTF-8 (InvalidArgument otherwise). The tokenizer is immutable after
/// construction and safe to use from several threads.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace plumb::rerank {

/// A WordPiece vocabulary: one token per line, id = 0-based line index (vocab.txt). As in
/// transformers' load_vocab, a token listed twice maps to its last line. Lines are UTF-8
/// (ParseError file:line otherwise); a BOM on line 1 and CR line ends are removed.
class Vocab {
public:
    Vocab() = default;
    /// Tokens by id.
    explicit Vocab(std::vector<std::string> tokens);
    /// Reads vocab.txt. Throws IoError / ParseError.
    static Vocab load(const std::filesystem::path& path);
    /// Writes one token per line, atomically. Throws InvalidArgument when a token contains a
    /// line break.
    void save(const std::filesystem::path& path) const;

    std::size_t size() const noexcept { return m_tokens.size(); }
    /// Id of `token`, or -1 when absent.
    std::int64_t id(std::string_view token) const noexcept;
    bool contains(std::string_view token) const noexcept { return id(token) >= 0; }
    /// Token of `id` (InvalidArgument when out of range).
    const std::string& token(std::int64_t id) const;
    const std::vector<std::string>& tokens() const noexcept { return m_tokens; }

private:
    struct Hash {
        using is_transparent = void;
        std::size_t operator()(std::string_view s) const noexcept {
            return std::hash<std::string_view>{}(s);
        }
    };
    std::vector<std::string> m_tokens;
    std::unordered_map<std::string, std::int64_t, Hash, std::equal_to<>> m_ids;
};

/// How a pair longer than max_length is shortened.
enum class Truncation {
    /// plumb's default for re-ranking: remove tokens from the end of the passage until the pair
    /// fits; only when the query alone does not fit (query > max_length - 3) is the query cut to
    /// max_length - 3 tokens, and the passage is then empty.
    PassageFirst,
    /// transformers' 'longest_first': remove from the end of the longer sequence one token at a
    /// time (ties: from the passage).
    LongestFirst,
};

struct WordPieceOptions {
    bool lowercase = true;                    ///< do_lower_case (bert-base-uncased: true)
    std::optional<bool> strip_accents;        ///< unset: follows lowercase
    bool tokenize_chinese_chars = true;
    /// NFC before splitting (the Python BertTokenizer of transformers 4.x); false: the fast
    /// tokenizer's behaviour. Only a cased vocabulary without accent stripping can tell the two
    /// apart, and only on text that is not already NFC.
    bool nfc = false;
    bool split_special_tokens_in_text = true; ///< keep "[SEP]" etc. written in the text whole
    std::size_t max_input_chars_per_word = 100;
    std::string unk_token = "[UNK]";
    std::string cls_token = "[CLS]";
    std::string sep_token = "[SEP]";
    std::string pad_token = "[PAD]";
    std::string mask_token = "[MASK]";
    /// Further words never split nor lower-cased (besides the five special tokens).
    std::vector<std::string> never_split;
};

/// Splits text into words (steps 1-6 above). Needs no vocabulary.
class WordPieceTokenizer;

class BasicTokenizer {
public:
    explicit BasicTokenizer(WordPieceOptions options = {});
    ~BasicTokenizer();
    BasicTokenizer(BasicTokenizer&&) noexcept;
    BasicTokenizer& operator=(BasicTokenizer&&) noexcept;

    /// Words of `text`. Throws InvalidArgument for invalid UTF-8.
    std::vector<std::string> tokenize(std::string_view text) const;
    const WordPieceOptions& options() const noexcept;

private:
    friend class WordPieceTokenizer;
    struct Impl;
    std::unique_ptr<Impl> m_impl;
};

/// One encoded sequence (no padding): input ids, token type ids (0 for [CLS] q [SEP], 1 for
/// p [SEP]) and the attention mask (all ones).
struct Encoding {
    std::vector<std::int64_t> input_ids;
    std::vector<std::int64_t> token_type_ids;
    std::vector<std::int64_t> attention_mask;
    std::size_t size() const noexcept { return input_ids.size(); }
};

/// A padded batch, row-major [batch, length]; padding positions hold pad id, type 0, mask 0.
/// `length` is the longest sequence of the batch (dynamic padding).
struct BatchEncoding {
    std::size_t batch = 0;
    std::size_t length = 0;
    std::vector<std::int64_t> input_ids;
    std::vector<std::int64_t> token_type_ids;
    std::vector<std::int64_t> attention_mask;
    std::vector<std::size_t> lengths;  ///< unpadded length of each row
};

/// Pads encodings to their longest (pad_id, type 0, mask 0).
BatchEncoding pad_batch(std::span<const Encoding> encodings, std::int64_t pad_id);

/// BertTokenizer: BasicTokenizer + WordPiece + special tokens.
class WordPieceTokenizer {
public:
    /// Throws InvalidArgument when [UNK], [CLS], [SEP] or [PAD] is missing from the vocabulary
    /// ([MASK] is optional: mask_id() is -1 without it).
    WordPieceTokenizer(std::shared_ptr<const Vocab> vocab, WordPieceOptions options = {});
    ~WordPieceTokenizer();
    WordPieceTokenizer(WordPieceTokenizer&&) noexcept;
    WordPieceTokenizer& operator=(WordPieceTokenizer&&) noexcept;

    /// From a Hugging Face folder: vocab.txt plus tokenizer_config.json's do_lower_case,
    /// strip_accents and tokenize_chinese_chars when present (they override `options`).
    static WordPieceTokenizer from_folder(const std::filesystem::path& dir,
                                          WordPieceOptions options = {});

    /// WordPiece tokens of `text` (no [CLS]/[SEP]).
    std::vector<std::string> tokenize(std::string_view text) const;
    /// Token ids of `text` (no [CLS]/[SEP]); stops after `max_tokens` ids (0 = no limit), which
    /// gives the same prefix as tokenizing everything and truncating.
    std::vector<std::int64_t> encode_ids(std::string_view text, std::size_t max_tokens = 0) const;

    /// `[CLS] text [SEP]`, truncated to max_length (>= 2) total tokens.
    Encoding encode(std::string_view text, std::size_t max_length) const;
    /// `[CLS] query [SEP] passage [SEP]` with token types 0/1, at most max_length (>= 3) tokens.
    Encoding encode_pair(std::string_view query, std::string_view passage, std::size_t max_length,
                         Truncation truncation = Truncation::PassageFirst) const;
    /// Same from ids already computed (no special tokens), e.g. a query encoded once per batch.
    Encoding encode_pair_ids(std::span<const std::int64_t> query_ids,
                             std::span<const std::int64_t> passage_ids, std::size_t max_length,
                             Truncation truncation = Truncation::PassageFirst) const;
    /// One query against many passages, padded to the longest pair.
    BatchEncoding encode_pairs(std::string_view query, std::span<const std::string_view> passages,
                               std::size_t max_length,
                               Truncation truncation = Truncation::PassageFirst) const;

    const Vocab& vocab() const noexcept;
    const WordPieceOptions& options() const noexcept;
    std::int64_t cls_id() const noexcept;
    std::int64_t sep_id() const noexcept;
    std::int64_t pad_id() const noexcept;
    std::int64_t unk_id() const noexcept;
    std::int64_t mask_id() const noexcept;

private:
    struct Impl;
    std::unique_ptr<Impl> m_impl;
};

}  // namespace plumb::rerank
