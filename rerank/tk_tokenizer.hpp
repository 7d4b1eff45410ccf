#pragma once
/// \file tk_tokenizer.hpp
/// TK's word-level tokenization and vocabulary (no Torch).
///
/// The authors (matchmaker, allennlp) tokenised with an allennlp WordTokenizer and mapped words
/// to a GloVe vocabulary with a padding and an OOV entry. plumb approximates the word splitter:
///  - lower-casing of ASCII letters (on by default; GloVe 6B/42B are lower-cased; non-ASCII
///    letters are kept as they are, no Unicode case folding);
///  - a word is a maximal run of ASCII letters/digits and non-ASCII bytes (so UTF-8 words such
///    as "café" stay whole); every other byte (whitespace, punctuation, symbols) separates words
///    and is dropped. "don't" gives "don", "t"; "U.S." gives "u", "s". Unlike spaCy, punctuation
///    does not become tokens: the passage positions counted here are word positions.
/// Vocabulary ids: 0 = padding ("@@PADDING@@"), 1 = out of vocabulary ("@@UNKNOWN@@"), 2.. =
/// the words of the embedding file in file order.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace plumb::rerank {

/// Word -> id map of a TK model. Immutable after construction; safe to share between threads.
class TkVocabulary {
public:
    static constexpr std::int64_t kPaddingId = 0;
    static constexpr std::int64_t kOovId = 1;
    static constexpr std::string_view kPaddingToken = "@@PADDING@@";
    static constexpr std::string_view kOovToken = "@@UNKNOWN@@";

    /// Only the two reserved entries.
    TkVocabulary();
    /// Reserved entries, then `words` as ids 2, 3, .... A word repeated in `words` keeps its
    /// first id (later rows stay in the table, unreachable), as when a GloVe file repeats a word.
    /// Throws InvalidArgument for an empty word or one containing '\n' or '\r'.
    explicit TkVocabulary(std::vector<std::string> words);

    /// Reads a vocabulary file: one token per line, line n (1-based) is id n-1; lines 1 and 2
    /// must be the reserved tokens. Throws IoError / ParseError (file and line).
    static TkVocabulary load(const std::filesystem::path& path);
    /// Writes the file read by load(), atomically. Throws IoError.
    void save(const std::filesystem::path& path) const;

    /// Number of ids (including the two reserved ones) = rows of the embedding matrix.
    std::int64_t size() const noexcept { return static_cast<std::int64_t>(m_tokens.size()); }
    /// Id of `word` (exact match), kOovId when absent.
    std::int64_t id(std::string_view word) const;
    /// Token of `id`; throws InvalidArgument when out of range.
    const std::string& token(std::int64_t id) const;

private:
    struct Hash {
        using is_transparent = void;
        std::size_t operator()(std::string_view s) const noexcept {
            return std::hash<std::string_view>{}(s);
        }
    };
    void index_tokens();
    std::vector<std::string> m_tokens;
    std::unordered_map<std::string, std::int64_t, Hash, std::equal_to<>> m_ids;
};

/// Splits text into TK words (see the file comment); lower-cases ASCII when `lowercase`.
std::vector<std::string> tk_split_words(std::string_view text, bool lowercase = true);

/// Text -> ids with a vocabulary. Immutable; safe to share between threads.
class TkTokenizer {
public:
    TkTokenizer(std::shared_ptr<const TkVocabulary> vocabulary, bool lowercase = true);

    /// The words of `text`, at most `max_length` of them (0 = no limit).
    std::vector<std::string> words(std::string_view text, std::size_t max_length = 0) const;
    /// Ids of the words of `text` (OOV words -> 1), truncated to `max_length` (0 = no limit).
    std::vector<std::int64_t> encode(std::string_view text, std::size_t max_length = 0) const;

    const TkVocabulary& vocabulary() const noexcept { return *m_vocab; }
    bool lowercase() const noexcept { return m_lowercase; }

private:
    std::shared_ptr<const TkVocabulary> m_vocab;
    bool m_lowercase;
};

}  // namespace plumb::rerank
