#pragma once
/// \file detail/standard_tokenizer.hpp
/// INTERNAL (not installed): Lucene 9's StandardTokenizer (the JFlex grammar implementing the
/// Unicode UAX#29 word-break rules, StandardTokenizerImpl.jflex) re-implemented over UTF-32 text
/// with ICU's character properties. Used by the "anserini" analyzer (analysis.hpp); its filters
/// are in english_filters.hpp. ICU stays inside the .cpp files.

#include <cstddef>
#include <cstdint>
#include <vector>

namespace plumb::index::detail {

/// Lucene's StandardTokenizer token types (StandardTokenizer.TOKEN_TYPES).
enum class TokenType : std::uint8_t {
    AlphaNum,        ///< <ALPHANUM>: letters and digits (UAX#29 WB5-WB13b)
    Num,             ///< <NUM>: digits only, joined by MidNum/MidNumLet/ExtendNumLet
    SoutheastAsian,  ///< <SOUTHEAST_ASIAN>: a run of Line_Break=Complex_Context (Thai, Lao, ...)
    Ideographic,     ///< <IDEOGRAPHIC>: ONE Han character
    Hiragana,        ///< <HIRAGANA>: ONE Hiragana character
    Katakana,        ///< <KATAKANA>: a run of Katakana
    Hangul,          ///< <HANGUL>: a run of Hangul letters
    Emoji,           ///< <EMOJI>: an emoji sequence (UTS #51 emoji_sequence)
};

/// "<ALPHANUM>", "<NUM>", ... as Lucene names them.
const char* token_type_name(TokenType type) noexcept;

/// A token: code-point offsets [begin, end) into the tokenized text, and its type.
struct StdToken {
    std::size_t begin = 0;
    std::size_t end = 0;
    TokenType type = TokenType::AlphaNum;
};

/// Lucene's default maximum token length (StandardAnalyzer.DEFAULT_MAX_TOKEN_LENGTH), in UTF-16
/// code units as in Java: longer tokens are chopped into pieces of at most this length.
inline constexpr std::size_t kMaxTokenLength = 255;

/// Tokenizes `n` UTF-32 code points (wchar_t is 32 bits on Linux) like Lucene 9's
/// StandardTokenizer: appends the tokens to `out` (cleared first). Segments of only
/// punctuation, symbols or space are dropped. Never throws except std::bad_alloc.
void standard_tokenize(const wchar_t* text, std::size_t n, std::vector<StdToken>& out,
                       std::size_t max_token_length = kMaxTokenLength);

}  // namespace plumb::index::detail
