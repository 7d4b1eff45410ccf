#pragma once
/// \file detail/english_filters.hpp
/// INTERNAL (not installed): the token filters of Anserini's DefaultEnglishAnalyzer (Lucene 9's
/// EnglishPossessiveFilter, LowerCaseFilter, StopFilter with EnglishAnalyzer's stop set,
/// PorterStemFilter), on UTF-32 terms in place. Used by the "anserini" analyzer after
/// standard_tokenizer.hpp. ICU stays inside english_filters.cpp.

#include <cstddef>

namespace plumb::index::detail {

/// Porter stemmer with Lucene's departures (PorterStemmer.java: "bli" -> "ble", "logi" -> "log",
/// words of fewer than 3 characters untouched). Stems `word[0, len)` in place (lowercase
/// expected; non-ASCII characters count as consonants) and returns the new length (<= len).
std::size_t porter_stem(wchar_t* word, std::size_t len) noexcept;

/// Lucene's EnglishAnalyzer.ENGLISH_STOP_WORDS_SET (33 words; the set Anserini uses).
bool is_english_stop_word(const wchar_t* term, std::size_t len) noexcept;

/// The filters of Anserini's DefaultEnglishAnalyzer after the tokenizer, on one token in place:
/// EnglishPossessiveFilter (drops a trailing 's, \u2019s or \uFF07s, s or S), LowerCaseFilter
/// (per code point, Unicode simple lowercase), StopFilter (when `stop`), PorterStemFilter (when
/// `stem`). Returns the new length; 0 = the token was removed.
std::size_t english_filter(wchar_t* term, std::size_t len, bool stop, bool stem) noexcept;

}  // namespace plumb::index::detail
