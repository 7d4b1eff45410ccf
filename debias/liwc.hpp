#pragma once
/// \file liwc.hpp
/// LIWC-format dictionaries (`.dic`) and φ(d), the per-category token proportions of a passage
/// (Bigdeli et al., paper 001; FORMULAS.md "Balanced relevance judgements").
///
/// Format: a categories block between two lines holding only `%`, with lines `id<TAB>name`
/// (integer id, unique; name unique), then word lines `word<TAB>id id ...` (ids separated by
/// TABs or spaces; every id must be declared). A trailing `*` makes the word a prefix pattern
/// (`abandon*` matches "abandon", "abandoned", ...). Words are lower-cased (ASCII). A word listed
/// twice gets the union of its categories. Blank lines are ignored. Lines end with LF, CRLF or a
/// lone CR (classic Mac OS line ends, as in some public LIWC-format dictionaries).
/// Multi-word entries (`kind of<TAB>1 2`: the word field, before the first TAB, holds several
/// whitespace-separated words) are phrases matched against consecutive passage tokens; a `*` in
/// a phrase is not supported (bad line).
/// Bad lines: LIWC2015's conditional entries (`like (02 134)125/464`), an undeclared or
/// non-integer id, a word without ids, a `*` not at the end, or a malformed category line. By
/// default a bad line throws ParseError naming file and line; with `skip_bad` it is skipped and
/// counted (line numbers kept). A missing or unterminated `%` block is always an error.
///
/// Lookup: an exact (non-wildcard) entry wins; otherwise the LONGEST matching prefix pattern
/// gives the categories (LIWC itself documents no precedence between overlapping wildcards;
/// the longest prefix is the most specific).
///
/// Passage tokens for φ: ASCII lower-cased whitespace tokens with leading and trailing ASCII
/// punctuation removed (LIWC counts words, not punctuation); tokens that become empty are not
/// counted. Scanning the tokens left to right, the longest phrase entry starting at a token
/// matches first (its tokens are consumed: they are not matched again one by one); otherwise
/// the token is looked up alone. φ_c(d) = (matches of category c) / (counted tokens of d), 0 for
/// an empty passage: a phrase counts once per category, like one word (our choice; the
/// denominator stays the token count). A token counts once per category it belongs to.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "plugin/progress.hpp"

namespace plumb::debias {

struct LiwcCategory {
    int id = 0;
    std::string name;
};

class LiwcDictionary {
public:
    /// Reads a `.dic` file. Throws IoError, ParseError (file:line).
    static LiwcDictionary load(const std::filesystem::path& path, bool skip_bad = false);
    /// Parses dictionary text; `name` is used in error messages.
    static LiwcDictionary parse(std::string_view text, const std::string& name,
                                bool skip_bad = false);

    const std::vector<LiwcCategory>& categories() const noexcept { return m_categories; }
    /// Category id by name (exact) or by decimal id string; nullopt when unknown.
    std::optional<int> find_category(std::string_view name_or_id) const;
    /// Category ids of a lower-cased token (exact entry, else longest prefix pattern); empty
    /// when the token is not in the dictionary.
    const std::vector<int>& lookup(std::string_view token) const;

    /// Category ids of a phrase (lower-cased tokens joined by single spaces), nullptr when it is
    /// not a multi-word entry.
    const std::vector<int>* lookup_phrase(const std::string& words) const;
    /// Most words in a multi-word entry (0 without phrases).
    std::size_t max_phrase_words() const noexcept { return m_max_phrase_words; }

    std::size_t exact_entries() const noexcept { return m_exact.size(); }
    std::size_t phrase_entries() const noexcept { return m_phrases.size(); }
    std::size_t prefix_entries() const noexcept { return m_prefix.size(); }
    /// Lines skipped as bad (skip_bad) and their 1-based numbers.
    const std::vector<std::uint64_t>& skipped_lines() const noexcept { return m_skipped; }

private:
    std::vector<LiwcCategory> m_categories;
    std::unordered_map<std::string, std::vector<int>> m_exact;
    std::unordered_map<std::string, std::vector<int>> m_prefix;
    std::size_t m_max_prefix = 0;
    std::unordered_map<std::string, std::vector<int>> m_phrases;
    std::size_t m_max_phrase_words = 0;
    std::vector<std::uint64_t> m_skipped;
};

/// Tokens counted by φ (see file comment).
std::vector<std::string> liwc_tokens(std::string_view text);

/// φ(d) over `categories` (ids, in the given order). Thread-safe.
std::vector<double> liwc_phi(std::string_view text, const LiwcDictionary& dic,
                             const std::vector<int>& categories);

/// Resolves a list of category names or ids (empty list = all categories, in file order).
/// Throws InvalidArgument naming an unknown category.
std::vector<int> resolve_categories(const LiwcDictionary& dic,
                                    const std::vector<std::string>& names);

/// Cosine similarity; 0 when either vector is all zeros. Throws InvalidArgument on size mismatch.
double cosine_similarity(const std::vector<double>& a, const std::vector<double>& b);

struct PhiFileOptions {
    std::filesystem::path corpus;     ///< one of corpus / index_dir
    std::string corpus_format;        ///< empty = by extension
    bool skip_bad = false;            ///< corpus: skip malformed lines
    std::filesystem::path index_dir;  ///< a committed plumb passage index
    /// When set, only these passages (e.g. the top-k of a run); with an index they are looked up
    /// directly instead of scanning. Ids absent from the collection are counted as missing.
    std::optional<std::unordered_set<std::string>> only_ids;
};

struct PhiFileStats {
    std::uint64_t written = 0;
    std::uint64_t missing = 0;  ///< only_ids not found in the collection
    std::uint64_t skipped_bad = 0;
};

/// Writes φ of every passage (or of only_ids) in eval's category-vector format
/// (eval::read_category_vectors): a header `docid<TAB><category name>...`, then
/// `docid<TAB>φ_1...` ("%.17g"). Streams the corpus; atomic output. With only_ids and a corpus,
/// a duplicate id is written once. Throws IoError, ParseError, IndexError, InvalidArgument.
PhiFileStats write_phi_file(const PhiFileOptions& options, const LiwcDictionary& dic,
                            const std::vector<int>& categories, const std::filesystem::path& output,
                            const ProgressCallback& progress = {},
                            const CancelToken* cancel = nullptr);

}  // namespace plumb::debias
