#pragma once
/// \file analysis.hpp
/// Text analysis shared by indexing and querying (same chain on both sides: BM25, RM3).
///
/// Two analyzers, chosen at index time (AnalyzerKind) and recorded in the index:
///
/// - "lucene3" (default; every index built before the choice existed): Lucene++ 3.0.8's
///   StandardTokenizer (Lucene 3's classic grammar: "11-fold", "1.5-fold", "e-mail" stay one
///   token, max length 255) -> StandardFilter (drops a trailing "'s", dots in acronyms) ->
///   LowerCaseFilter -> StopFilter with Lucene's 33 English stop words -> Lucene++'s
///   PorterStemFilter. Note: Lucene++ 3.0.8's PorterStemmer compares and copies suffixes with
///   byte counts on 4-byte wchar_t, so multi-letter suffix rules misfire ("relational" ->
///   "relati", "generalization" -> "generaliza", "mating" -> "mati"; Porter gives "relat",
///   "gener", "mate"). Kept as it is so that existing indexes keep their meaning.
/// - "anserini": Anserini's DefaultEnglishAnalyzer on Lucene 9 (what its BM25 regressions
///   use): StandardTokenizer (Unicode UAX#29 word breaks, Lucene 9's JFlex grammar, re-implemented
///   on ICU's character properties: "11-fold" -> "11", "fold"; each CJK ideograph one token;
///   max length 255, longer tokens chopped) -> EnglishPossessiveFilter ('s, \u2019s, \uFF07s)
///   -> LowerCaseFilter -> StopFilter (EnglishAnalyzer.ENGLISH_STOP_WORDS_SET, the same 33
///   words) -> PorterStemFilter (a correct Porter stemmer with Lucene's departures).
///
/// Stop-word removal and stemming can be switched off for either; the configuration is recorded
/// in the index and checked when it is opened.

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace plumb::index {

/// The tokenizer and filter chain (see the file comment).
enum class AnalyzerKind {
    Lucene3,   ///< Lucene++ 3.0.8's classic StandardTokenizer chain (default)
    Anserini,  ///< Anserini's DefaultEnglishAnalyzer (Lucene 9, UAX#29 word breaks)
};

/// "lucene3" or "anserini" (the `plumb index --analyzer` values).
const char* analyzer_kind_name(AnalyzerKind kind) noexcept;
/// Inverse of analyzer_kind_name(); throws ConfigError naming the known analyzers.
AnalyzerKind parse_analyzer_kind(std::string_view name);

/// Analysis configuration. Recorded in the index metadata.
struct AnalysisOptions {
    bool stem = true;  ///< Porter stemming (Lucene PorterStemFilter)
    bool stop = true;  ///< remove Lucene's English stop words
    AnalyzerKind analyzer = AnalyzerKind::Lucene3;  ///< tokenizer and filter chain

    /// Stable name recorded in the index: "standard+lowercase+stop+porter" for lucene3 (as
    /// before the choice existed), "uax29+possessive+lowercase+stop+porter" for anserini
    /// ("+stop" / "+porter" absent when switched off).
    std::string name() const;
    /// Inverse of name(); throws IndexError for an unknown name.
    static AnalysisOptions from_name(const std::string& name);
    bool operator==(const AnalysisOptions&) const = default;
};

/// Turns UTF-8 text into analysed terms (UTF-8). Thread-safe: analyze() may be called
/// concurrently (each thread keeps its own token stream chain).
class Analyzer {
public:
    explicit Analyzer(AnalysisOptions options = {});
    const AnalysisOptions& options() const noexcept { return m_options; }

    /// Analysed terms in text order (duplicates kept). Never throws on odd characters: text that
    /// yields no token gives an empty vector. Invalid UTF-8 is decoded leniently.
    std::vector<std::string> analyze(std::string_view text) const;

private:
    AnalysisOptions m_options;
};

}  // namespace plumb::index
