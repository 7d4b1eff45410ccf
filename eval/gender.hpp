#pragma once
/// \file gender.hpp
/// Gender-definitional word lists and per-passage gender magnitudes (FORMULAS.md, "Gender bias
/// of passages and rankings"; Rekabsaz & Schedl 2020, IBBR paper 004 Eq. 1).
///
/// Tokenisation (FORMULAS.md, taken literally, as the reference implementation of Rekabsaz &
/// Schedl): the text is lower-cased (ASCII letters only; other bytes are kept) and split on runs
/// of ASCII whitespace. There is no stemming and no punctuation stripping, so "he," or "(she"
/// do NOT match the words "he"/"she". A passage's counts are c_f / c_m = number of tokens that
/// are female / male words (every occurrence counts).
///
/// Per-passage bias file (`docid<TAB>bias<TAB>female<TAB>male`): one file per variant (tc, tf,
/// bool); the writer starts it with a comment line `# plumb-gender-bias v1 variant=<v>`; the
/// reader skips blank lines and lines starting with '#', and, when both the caller and the
/// file's comment name a variant, checks they agree. Values are written with "%.17g" so that they
/// round-trip exactly.
///
/// All functions are thread-safe (GenderWordList is read-only after construction).

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "plugin/document_source.hpp"
#include "plugin/progress.hpp"

namespace plumb::eval {

enum class Gender : std::uint8_t { Female, Male };

/// A gender word list: lower-cased words mapped to female or male.
class GenderWordList {
public:
    GenderWordList() = default;

    /// Reads `word,f` / `word,m` lines (case of word and label ignored; surrounding whitespace
    /// trimmed; blank lines and lines starting with '#' skipped). A line without exactly one
    /// comma, an empty word, a word containing whitespace, a label other than f/m, or a word
    /// listed with both labels throws ParseError "<file>:<line>: ...". A word repeated with the
    /// same label is accepted. Throws IoError when the file cannot be read.
    static GenderWordList load(const std::filesystem::path& path);

    /// Adds a word (lower-cased). Throws InvalidArgument when it is empty, contains whitespace,
    /// or is already listed with the other gender.
    void add(std::string_view word, Gender gender);

    /// The gender of an already lower-cased token, or nullopt.
    std::optional<Gender> lookup(std::string_view token) const;

    std::size_t size() const noexcept { return m_words.size(); }
    std::size_t female_count() const noexcept { return m_female; }
    std::size_t male_count() const noexcept { return m_male; }

private:
    struct Hash {
        using is_transparent = void;
        std::size_t operator()(std::string_view s) const noexcept {
            return std::hash<std::string_view>{}(s);
        }
    };
    std::unordered_map<std::string, Gender, Hash, std::equal_to<>> m_words;
    std::size_t m_female = 0;
    std::size_t m_male = 0;
};

/// Lower-cases ASCII letters and splits on ASCII whitespace (the tokenisation above).
std::vector<std::string> gender_tokens(std::string_view text);

/// Gender-word occurrences in one text.
struct GenderCounts {
    std::uint32_t female = 0;  ///< c_f: tokens that are female words
    std::uint32_t male = 0;    ///< c_m: tokens that are male words
    /// IBBR magnitude: Σ_{w∈G_m} ln(1 + c(w,p)) - Σ_{w∈G_f} ln(1 + c(w,p)) (paper 004 Eq. 1).
    double ibbr_magnitude = 0.0;
};

/// Counts gender words in `text` (tokenisation above).
GenderCounts count_gender_words(std::string_view text, const GenderWordList& words);

/// The three magnitude variants of Rekabsaz & Schedl.
enum class BiasVariant : std::uint8_t { Tc, Tf, Bool };

/// "tc", "tf", "bool" (throws InvalidArgument otherwise) and back.
BiasVariant parse_bias_variant(std::string_view name);
const char* bias_variant_name(BiasVariant variant) noexcept;

/// A (bias, female, male) triple. bias = female - male at passage level (FORMULAS.md: tc =
/// (c_f - c_m, c_f, c_m)); ranking-level bias is reported as male - female (see bias_metrics).
struct BiasTriple {
    double bias = 0.0;
    double female = 0.0;
    double male = 0.0;
};

/// tc = (c_f - c_m, c_f, c_m); tf = (ln(c_f+1) - ln(c_m+1), ln(c_f+1), ln(c_m+1));
/// bool = (sgn c_f - sgn c_m, sgn c_f, sgn c_m).
BiasTriple passage_magnitude(const GenderCounts& counts, BiasVariant variant) noexcept;

/// IBBR bias label d(p) = sgn(mag(p)) ∈ {-1, 0, +1}; +1 = male-leaning.
int ibbr_label(const GenderCounts& counts) noexcept;

/// Query gender label: 'f' (only female words), 'm' (only male words), 'n' (neither). When both
/// occur the label is 'n' by default (BothPolicy::Neutral), or the gender with more tokens
/// (BothPolicy::Majority; a tie stays 'n').
enum class BothPolicy : std::uint8_t { Neutral, Majority };
char query_gender_label(const GenderCounts& counts, BothPolicy both = BothPolicy::Neutral) noexcept;

/// docid -> triple of one variant.
using BiasTable = std::unordered_map<std::string, BiasTriple>;

/// First line of the combined bias file `plumb debias gender` writes at its --output path:
/// a header row `docid tc tc_female tc_male tf tf_female tf_male bool bool_female bool_male
/// ibbr_magnitude ibbr_label` (TAB-separated) follows, then one row per passage.
inline constexpr std::string_view kCombinedBiasHeader = "# plumb-gender-bias-combined v1";

/// True when `path` starts with kCombinedBiasHeader. Throws IoError.
bool is_combined_bias_file(const std::filesystem::path& path);

/// Reads a bias file (format above), or the `expected` variant's three columns of a combined
/// bias file (which requires `expected`: ParseError otherwise). `expected` (if set) must match the
/// variant named in the file's comment, if it names one. Duplicate docids, a wrong field count,
/// non-numeric or non-finite values throw ParseError "<file>:<line>: ...".
BiasTable read_bias_file(const std::filesystem::path& path,
                         std::optional<BiasVariant> expected = std::nullopt);

/// The variant named by the file's `# ... variant=<v>` comment (first comment lines before any
/// data line), or nullopt when there is none. Throws IoError, ParseError for an unknown name.
std::optional<BiasVariant> bias_file_variant(const std::filesystem::path& path);

/// Writes `rows` (docid, triple) in the given order, atomically, with the variant comment.
void write_bias_file(const std::filesystem::path& path, BiasVariant variant,
                     const std::vector<std::pair<std::string, BiasTriple>>& rows);

/// Gender-word counts of each passage of `docids` (a repeated docid is counted once), from the
/// passage text in `docs`. An unknown docid throws InvalidArgument "passage '<id>' is not in
/// <docs_name>". `progress` gets (done, total) every 1024 docids; a cancel request stops early
/// and returns what was counted so far.
std::unordered_map<std::string, GenderCounts> gender_counts(
    const std::vector<std::string>& docids, const DocumentSource& docs, const GenderWordList& words,
    const ProgressCallback& progress = {}, const CancelToken* cancel = nullptr,
    const std::string& docs_name = "the passage source");

/// Computes the triple of `variant` for each docid from the passage text in `docs`, as
/// passage_magnitude() of gender_counts() (same errors, progress and cancellation).
BiasTable compute_bias_table(const std::vector<std::string>& docids, const DocumentSource& docs,
                             const GenderWordList& words, BiasVariant variant,
                             const ProgressCallback& progress = {},
                             const CancelToken* cancel = nullptr);

}  // namespace plumb::eval
