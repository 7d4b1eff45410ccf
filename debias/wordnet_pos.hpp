#pragma once
/// \file wordnet_pos.hpp
/// Part of speech of English words from WordNet's database files (Debian's wordnet-base:
/// /usr/share/wordnet/index.{noun,verb,adj,adv} and the *.exc exception lists).
///
/// WordNet is a lexicon, not a tagger: a word is given the part of speech under which its base
/// form (found with WordNet's own morphy rules and exception lists) has the most sense-tagged
/// occurrences in the SemCor counts of the index files (tagsense_cnt), ties broken by sense
/// count, then noun > verb > adjective > adverb. Closed-class words (determiners, pronouns,
/// prepositions, conjunctions, auxiliaries and modals, wh-words) are tagged `Function` from a
/// fixed list before WordNet is consulted, since WordNet lists some of them as nouns ("a", "i").
/// This approximates the POS tagger of Lu's Lexical Complexity Analyzer on short queries.

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

namespace plumb::debias {

enum class Pos { Unknown, Function, Noun, Verb, Adjective, Adverb };

const char* pos_name(Pos p) noexcept;

class WordNetLexicon {
public:
    /// Default location of Debian's wordnet-base files.
    static constexpr const char* kDefaultDir = "/usr/share/wordnet";

    /// Loads the four index files and exception lists. Throws IoError when a file is missing,
    /// ParseError (file:line) when one is malformed.
    explicit WordNetLexicon(const std::filesystem::path& dir = kDefaultDir);
    ~WordNetLexicon();
    WordNetLexicon(WordNetLexicon&&) noexcept;
    WordNetLexicon& operator=(WordNetLexicon&&) noexcept;

    /// Part of speech of a lower-cased word. Thread-safe (read-only after construction).
    Pos tag(std::string_view word) const;
    /// Base form of `word` under `pos` (morphy), or empty when WordNet does not know it.
    std::string lemma(std::string_view word, Pos pos) const;
    /// True for auxiliary verbs and modals (be, have, do, can, will, ...), which Lu (2012) does
    /// not count as lexical verbs.
    static bool is_auxiliary(std::string_view word) noexcept;

private:
    struct Impl;
    std::unique_ptr<Impl> m_impl;
};

}  // namespace plumb::debias
