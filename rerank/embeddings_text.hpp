#pragma once
/// \file embeddings_text.hpp
/// Word embeddings from the formats of GloVe, word2vec (text and binary) and fastText, as used by
/// TK.
///
/// Formats:
///  - GloVe: one `word v1 ... vd` line per word (fields separated by single spaces or runs of
///    ASCII whitespace);
///  - word2vec text (`-binary 0`) and fastText `.vec`: the same lines after a first line
///    `count dim` (fastText ends each line with a space, which is ignored);
///  - word2vec binary (`-binary 1`, e.g. GoogleNews-vectors-negative300.bin): the text header
///    `count dim\n`, then per word its bytes, one space, `dim` little-endian float32 and an
///    optional `\n` (the C tool writes one; gensim too).
/// Auto-detection: a first line of exactly two integers is a word2vec header; the first record
/// after it tells text (a UTF-8 line of a word and numbers) from binary.
///
/// The result has two reserved rows before the file's words (the OOV policy TK relies on):
///  - row 0 = kPaddingIndex, token "<pad>": all zeros, used for padding positions;
///  - row 1 = kOovIndex, token "<oov>": every word not in the vocabulary maps to it; its vector
///    is zeros by default, or the mean of the file's vectors (OovInit::Mean).
/// File words follow from row 2, in file order. Words are matched exactly (no case folding,
/// unless `lowercase` is set: then words are lower-cased (ASCII only) on load and lookup and the
/// first occurrence wins). A word that appears twice keeps its first vector; the later lines are
/// counted in `duplicates`. A file word equal to "<pad>" or "<oov>" is an ordinary word that
/// gets its own row; only the reserved indices carry the policy.
///
/// Errors: ParseError "<file>:<line>: ..." for a line whose vector has a different dimension
/// than the first (or than the word2vec header), a value that is not a finite float, invalid
/// UTF-8, an empty word, a bad word2vec header, or a word count not matching the header; IoError
/// when the file cannot be read. Binary files name the entry instead of a line
/// ("<file>: entry 3 of 10 ('word'): ..."): truncated entries, a word that is not UTF-8 (what a
/// wrong dimension in the header produces), non-finite values, data after the announced count.
/// A file in a known non-text format (a zip, pickle, safetensors, NumPy, ... file; see
/// checkpoint_format.hpp) is a ParseError naming that format.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "plugin/progress.hpp"

namespace plumb::rerank {

enum class EmbeddingsFormat {
    Auto,            ///< GloVe, or word2vec text / binary when the first line is `count dim`
    Glove,           ///< no header
    Word2Vec,        ///< header required; text or binary detected from the first record
    Word2VecText,    ///< header required, text (also fastText `.vec`)
    Word2VecBinary,  ///< header required, binary
};

enum class OovInit { Zeros, Mean };

struct EmbeddingsTextOptions {
    EmbeddingsFormat format = EmbeddingsFormat::Auto;
    std::size_t max_words = 0;  ///< keep only the first N file words (0 = all)
    bool lowercase = false;     ///< ASCII lower-case words on load and lookup
    OovInit oov_init = OovInit::Zeros;
    ProgressCallback progress;  ///< (bytes read, file size)
};

/// A vocabulary with its embedding matrix. Read-only after loading; safe to share.
struct WordEmbeddings {
    static constexpr std::int64_t kPaddingIndex = 0;
    static constexpr std::int64_t kOovIndex = 1;
    static constexpr std::int64_t kFirstWordIndex = 2;

    std::vector<std::string> words;  ///< by row; words[0] = "<pad>", words[1] = "<oov>"
    std::size_t dim = 0;
    std::vector<float> matrix;       ///< [words.size(), dim], row-major
    std::size_t duplicates = 0;      ///< duplicate lines skipped while loading
    bool lowercase = false;

    std::size_t rows() const noexcept { return words.size(); }
    /// Row of `word`, kOovIndex when unknown.
    std::int64_t index(std::string_view word) const;
    /// Rows of `words`, unknown words -> kOovIndex.
    std::vector<std::int64_t> indices(std::span<const std::string> words) const;
    std::span<const float> row(std::int64_t index) const;

    /// Rebuilds the word -> row map from `words` (call after filling `words` by hand, e.g. from
    /// load_word_list()). Rows 0 and 1 are reserved and never matched; among later rows the
    /// first occurrence of a word wins.
    void rebuild_index();

private:
    struct Hash {
        using is_transparent = void;
        std::size_t operator()(std::string_view s) const noexcept {
            return std::hash<std::string_view>{}(s);
        }
    };
    std::unordered_map<std::string, std::int64_t, Hash, std::equal_to<>> m_index;
};

/// Loads a GloVe, word2vec (text or binary) or fastText `.vec` file (see the file comment).
WordEmbeddings load_text_embeddings(const std::filesystem::path& path,
                                    const EmbeddingsTextOptions& options = {});

/// Reads a word list (one word per line, row = line index, e.g. a TK checkpoint's vocabulary
/// saved with save_word_list(WordEmbeddings::words)). Throws ParseError for invalid UTF-8.
std::vector<std::string> load_word_list(const std::filesystem::path& path);
/// Writes one word per line atomically; InvalidArgument when a word contains a line break.
void save_word_list(const std::filesystem::path& path, std::span<const std::string> words);

}  // namespace plumb::rerank
