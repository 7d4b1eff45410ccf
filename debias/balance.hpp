#pragma once
/// \file balance.hpp
/// Balanced relevance judgements (Bigdeli et al., paper 001; FORMULAS.md).
///
/// Inputs: generated (query, passage) pairs, a gender label per query (f/m/n, e.g. from
/// `plumb debias query-gender`), a LIWC dictionary and chosen categories, and the original
/// training set. Procedure (the paper gives the idea, not every detail; our choices are marked):
///  1. φ(d) of every passage of a female or male query (liwc_phi); neutral and unlabelled queries
///     are ignored (and not kept in memory).
///     Queries whose φ is all zeros cannot be compared by cosine and are left out of matching
///     (counted as `unmatchable`). (choice)
///  2. Matching (paper §2.2: "for each query in one gender identity, we identify a matching query
///     from the other gender identity such that their associated relevant documents'
///     psychological characteristics are most similar"): every female query is matched to the
///     male query of highest cos(φ(d_f), φ(d_m)), and every male query to the female query of
///     highest cosine; ties go to the earlier query in the pairs file. This is NOT a one-to-one
///     assignment: a query may be the best match of several others. The matched pairs are the
///     union of both directions without duplicates. Cost O(|F|·|M|·K).
///     One-to-one (option, `--one-to-one`): each query is in at most one pair, so every pair
///     adds one female and one male query and the added counts are equal. The pairs are the
///     greedy matching by decreasing cosine (ties: female qid, then male qid, ascending): the
///     best remaining edge is taken, its two queries removed, and so on. It is computed without
///     storing |F|·|M| cosines, by rounds that match every mutually best remaining pair (with a
///     strict order on edges these are exactly the greedy's pairs); each round costs
///     O(|F|·|M|·K) and matches at least one pair. (choice: greedy, not the maximum-weight
///     assignment, which would need O(n³) time and pairs no more similar on the whole.)
///  3. Augmentation at ratio r: target T = round(r · N) added examples (N = training examples).
///     Matched pairs are taken by decreasing cosine (ties: female qid, then male qid); a pair
///     adds both of its (query, own relevant passage) examples — passages are not swapped —
///     except that a query already added is not added twice. Adding stops before a pair would
///     exceed T (so at most T are added; fewer when the pairs run out, reported). (choice)
///     The output is the original training set followed by the added examples, in the training
///     set's own format: 2 fields `query<TAB>passage` are appended as such; 3 fields
///     `query<TAB>pos<TAB>neg` get as negative the passage of another generated pair drawn with
///     the seeded generator (a random negative; the paper trains with its framework's negatives),
///     or, with a negatives file (`--negatives`, `qid<TAB>docid<TAB>passage`), a negative of the
///     pair's OWN query from it (one drawn with the seeded generator when the file holds several
///     for the qid; a selected pair without one is an error naming the file): negatives made the
///     way the original triples' were (e.g. hard / BM25 negatives of the query), so that the
///     added triples teach what the original ones teach rather than an easy contrast with
///     unrelated passages. (choice)

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "debias/liwc.hpp"
#include "plugin/progress.hpp"

namespace plumb::debias {

/// One generated pair. TSV `qid<TAB>query<TAB>passage` or `qid<TAB>query<TAB>docid<TAB>passage`.
struct GeneratedPair {
    std::string qid;
    std::string query;
    std::string docid;  ///< = qid for the 3-field form
    std::string passage;
};

/// Reads generated pairs (3 or 4 TAB-separated fields). Every line is validated; when `keep` is
/// given only pairs whose qid it accepts are stored (streaming: memory grows with the kept pairs
/// only) and `total`, when given, receives the number of pairs read. A duplicate qid among the
/// stored pairs is a ParseError naming both lines.
std::vector<GeneratedPair> read_generated_pairs(
    const std::filesystem::path& path, const std::function<bool(std::string_view qid)>& keep = {},
    std::size_t* total = nullptr);

/// Reads query gender labels `qid<TAB>f|m|n`, keeping the f and m ones (neutral queries are not
/// matched, so they are not stored). A label other than f/m/n, a wrong field count or a
/// duplicate f/m qid is a ParseError naming file and line.
std::unordered_map<std::string, char> read_gendered_queries(const std::filesystem::path& path);

struct Match {
    std::size_t female = 0;  ///< index into the pairs
    std::size_t male = 0;
    double cosine = 0.0;
    bool female_to_male = false;  ///< found as the best male match of the female query
    bool male_to_female = false;  ///< found as the best female match of the male query
};

struct MatchResult {
    std::vector<Match> matches;  ///< sorted by decreasing cosine, then female qid, male qid
    std::size_t female_queries = 0;
    std::size_t male_queries = 0;
    std::size_t neutral_or_unlabelled = 0;
    std::size_t unmatchable = 0;  ///< f/m queries whose φ is all zeros
};

/// Steps 1-2 on precomputed φ vectors: `phi[i]` for pair i, `gender[i]` ∈ {'f','m','n'}.
/// Throws InvalidArgument on size mismatch.
MatchResult match_cross_gender(const std::vector<GeneratedPair>& pairs,
                               const std::vector<char>& gender,
                               const std::vector<std::vector<double>>& phi,
                               const ProgressCallback& progress = {},
                               const CancelToken* cancel = nullptr);

/// Step 2, one-to-one: the greedy matching described above (each match has both direction
/// flags set). Same inputs and errors as match_cross_gender.
MatchResult match_one_to_one(const std::vector<GeneratedPair>& pairs,
                             const std::vector<char>& gender,
                             const std::vector<std::vector<double>>& phi,
                             const ProgressCallback& progress = {},
                             const CancelToken* cancel = nullptr);

/// Reads negatives `qid<TAB>docid<TAB>passage` (or `qid<TAB>passage`), keeping those whose qid
/// `keep` accepts (all when empty): qid -> passages in file order. A wrong field count, an empty
/// qid or passage, or invalid UTF-8 is a ParseError naming file and line.
std::unordered_map<std::string, std::vector<std::string>> read_negatives(
    const std::filesystem::path& path, const std::function<bool(std::string_view qid)>& keep = {});

/// Step 3 selection: indices of pairs to add (in order) for target T, at most T.
std::vector<std::size_t> select_augmentation(const MatchResult& result, std::size_t target);

struct BalanceOptions {
    std::filesystem::path pairs;
    std::filesystem::path query_gender;  ///< `qid<TAB>f|m|n`
    std::filesystem::path dictionary;
    std::vector<std::string> categories;  ///< names or ids; empty = all
    std::filesystem::path train;          ///< original training set (2 or 3 fields per line)
    /// Negatives of the generated queries (read_negatives); empty = another pair's passage.
    std::filesystem::path negatives;
    std::vector<double> ratios;           ///< each in [0, 10]
    std::uint64_t seed = 0;
    bool skip_bad_dictionary_lines = false;
    bool one_to_one = false;  ///< match_one_to_one instead of best matches in both directions
    std::filesystem::path output_dir;
};

struct RatioOutput {
    double ratio = 0;
    std::size_t target = 0;
    std::size_t added = 0;
    std::size_t added_female = 0;
    std::size_t added_male = 0;
    std::filesystem::path file;
};

struct BalanceReport {
    std::size_t pairs = 0;
    std::size_t train_examples = 0;
    MatchResult match;
    std::vector<RatioOutput> outputs;
    std::vector<std::string> categories;
    std::size_t dictionary_lines_skipped = 0;
};

/// Runs the whole procedure and writes into output_dir: `train_r<ratio>.tsv` per ratio,
/// `matches.tsv` (`female_qid<TAB>male_qid<TAB>cosine<TAB>direction`), `phi.tsv` (φ of every
/// f/m passage, header `docid<TAB>cat...`, the category-vector format eval reads),
/// `report.txt`, `report.json` and `cosine.png`/`.svg` (histogram of matched cosines).
BalanceReport run_balance(const BalanceOptions& options, const ProgressCallback& progress = {},
                          const CancelToken* cancel = nullptr);

}  // namespace plumb::debias
