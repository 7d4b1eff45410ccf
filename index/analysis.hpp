#pragma once
/// \file analysis.hpp
/// Text analysis shared by indexing and querying (same chain on both sides).
///
/// Default chain, like Anserini's DefaultEnglishAnalyzer as far as Lucene++ 3.0.8 allows:
/// Lucene StandardTokenizer (max token length 255) -> StandardFilter (drops a trailing "'s",
/// dots in acronyms; Lucene 3 has no EnglishPossessiveFilter) -> LowerCaseFilter ->
/// StopFilter with Lucene's 33 English stop words (the list Anserini uses) -> Porter stemmer.
/// Stop-word removal and stemming can be switched off; the configuration is recorded in the index
/// and checked when it is opened.

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace plumb::index {

/// Analysis configuration. Recorded in the index metadata.
struct AnalysisOptions {
    bool stem = true;  ///< Porter stemming (Lucene PorterStemFilter)
    bool stop = true;  ///< remove Lucene's English stop words

    /// Stable name recorded in the index, e.g. "standard+lowercase+stop+porter".
    std::string name() const;
    /// Inverse of name(); throws IndexError for an unknown name.
    static AnalysisOptions from_name(const std::string& name);
    bool operator==(const AnalysisOptions&) const = default;
};

/// Turns UTF-8 text into analysed terms (UTF-8). Thread-safe: analyze() may be called
/// concurrently (each thread keeps its own Lucene++ token stream chain).
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
