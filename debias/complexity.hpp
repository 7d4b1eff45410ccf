#pragma once
/// \file complexity.hpp
/// Linguistic complexity of queries (EqualizeIR, paper 003; FORMULAS.md "Linguistic complexity"):
/// lexical indices (Lu 2012), syntactic indices (Lu 2010), a complexity score (mean of min-max
/// normalised indices over the query set) and easy/medium/hard buckets.
///
/// What each index is computed from, and where it approximates the original tools:
///  - Tokens: the query lower-cased, split into maximal runs of letters, digits and inner
///    apostrophes/hyphens (punctuation is not a word). N tokens, T types.
///  - Part of speech: WordNetLexicon (wordnet_pos.hpp) instead of the Stanford tagger of Lu's
///    analyser; lexical words = nouns, adjectives, adverbs and non-auxiliary verbs; types of
///    lexical words are counted on lemmas (as Lu's LCA does).
///  - D (vocd-D): vocd fits TTR(N) = (D/N)(sqrt(1 + 2N/D) - 1) to random 35..50-token samples,
///    which queries are too short for; we solve that model for D at the query's own N and TTR:
///    D = N·TTR² / (2(1 - TTR)). Undefined when TTR = 1: the set's maximum is used, as for Uber.
///  - Syntactic counts come from Link Grammar's constituency tree (constituency.hpp) instead of
///    the Stanford parser with Tregex patterns of L2SCA:
///      S  (sentences): sentences split on . ? ! (at least 1 for a non-empty query);
///      C  (clauses): S nodes with a finite verb in their own scope (not inside a nested S or
///         SBAR) that do not open with infinitival "to"; a verb is a word with Link Grammar
///         subscript v/w/q, or an untagged (null-linked) auxiliary or WordNet verb; fragments
///         such as "symptoms of flu" have 0 clauses;
///      T  (T-units): the top-level S of each sentence plus top-level S siblings joined by
///         coordination (independent clauses), never under an SBAR;
///      DC (dependent clauses): clauses under an SBAR;
///      CT (complex T-units): T-units containing a dependent clause;
///      VP: VP nodes whose parent is an S and that contain a verb in their own scope;
///      CP (coordinate phrases): NP, VP, ADJP or ADVP nodes with a coordinating conjunction
///         (and, or, but, nor) as a direct child word;
///      CN (complex nominals): NP nodes containing an adjective (POS from WordNet), a PP or an
///         SBAR, plus gerund-headed VPs acting as subjects are not detected (approximation).
///    MLS = N/S, MLT = N/T, MLC = N/C and the ratios C/S, VP/T, C/T, DC/C, DC/T, T/S, CT/T,
///    CP/T, CP/C, CN/T, CN/C; a ratio with a zero denominator is 0.
///  - Lexical ratios with a zero denominator are 0; LogTTR of a one-token query is 1.

#include <array>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "plugin/types.hpp"

namespace plumb::debias {

class WordNetLexicon;
class ConstituencyParser;

/// Names of the indices, in the order of QueryComplexity::indices.
inline constexpr std::array<const char*, 30> kComplexityIndexNames = {
    "TTR",  "CTTR", "RTTR",  "LogTTR", "Uber", "MSTTR50", "D",   "LV",   "VV1",  "SVV1",
    "CVV1", "VV2",  "NV",    "AdjV",   "AdvV", "ModV",    "MLS", "MLT",  "MLC",  "C/S",
    "VP/T", "C/T",  "DC/C",  "DC/T",   "T/S",  "CT/T",    "CP/T", "CP/C", "CN/T", "CN/C"};
inline constexpr std::size_t kNumComplexityIndices = kComplexityIndexNames.size();

/// Raw counts behind the indices of one query.
struct ComplexityCounts {
    std::size_t tokens = 0, types = 0;
    std::size_t lex_tokens = 0, lex_types = 0;
    std::size_t verb_tokens = 0, verb_types = 0, noun_types = 0, adj_types = 0, adv_types = 0;
    std::size_t sentences = 0, clauses = 0, tunits = 0, dep_clauses = 0, complex_tunits = 0;
    std::size_t verb_phrases = 0, coord_phrases = 0, complex_nominals = 0;
    bool parsed = true;  ///< false when Link Grammar found no linkage for some sentence
};

struct QueryComplexity {
    std::string qid;
    ComplexityCounts counts;
    std::array<double, kNumComplexityIndices> indices{};  ///< raw index values
    double score = 0.0;                                   ///< mean of normalised indices
    std::string bucket;                                   ///< "easy", "medium", "hard", ...
};

/// Lower-cased word tokens of a text (see the file comment).
std::vector<std::string> complexity_tokens(std::string_view text);

/// Lexical indices from counts and tokens (exposed for testing). Uber and D are NaN when
/// undefined (T = N); compute_complexity() replaces NaN by the set's maximum.
void lexical_indices(const ComplexityCounts& c, const std::vector<std::string>& tokens,
                     std::array<double, kNumComplexityIndices>& out);
/// Syntactic indices from counts.
void syntactic_indices(const ComplexityCounts& c, std::array<double, kNumComplexityIndices>& out);

struct ComplexityOptions {
    std::size_t buckets = 3;  ///< quantile buckets; 3 = terciles easy/medium/hard
    double parse_seconds = 2.0;
};

class ComplexityAnalyzer {
public:
    /// Loads WordNet from `wordnet_dir` and Link Grammar's English dictionary.
    explicit ComplexityAnalyzer(const std::string& wordnet_dir = "/usr/share/wordnet",
                                ComplexityOptions options = {});
    ~ComplexityAnalyzer();

    /// Counts and raw indices of one query (score and bucket left empty).
    QueryComplexity analyze(const Query& query) const;

    /// Every query's indices, complexity score (mean of min-max normalised indices, columns
    /// normalised over `queries`; a constant column contributes 0) and bucket (quantiles of the
    /// score: lowest third "easy", then "medium", "hard"; other bucket counts are named
    /// "b1".."bk"). Ties at a quantile edge go to the lower bucket.
    std::vector<QueryComplexity> analyze_all(const std::vector<Query>& queries) const;

private:
    ComplexityOptions m_options;
    std::unique_ptr<WordNetLexicon> m_lexicon;
    std::unique_ptr<ConstituencyParser> m_parser;
};

struct ParseNode;
/// Adds the syntactic counts (sentences, clauses, T-units, ...) of parsed sentences to `c`.
void count_syntax(const std::vector<ParseNode>& sentences, const WordNetLexicon& lexicon,
                  ComplexityCounts& c);

/// Score normalisation and bucketing over a set, separated for testing.
void finalize_complexity(std::vector<QueryComplexity>& rows, std::size_t buckets);

/// Writes a per-query TSV (qid, every index, score, bucket) atomically.
void write_complexity_tsv(const std::string& path, const std::vector<QueryComplexity>& rows);

}  // namespace plumb::debias
