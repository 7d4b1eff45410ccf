#pragma once
/// \file rotation.hpp
/// Position-bias debiasing by rotation (Hofstätter et al. 2021, Eq. 7; FORMULAS.md).
///
/// A passage's whitespace tokens p_1..p_n become [p_r..p_n ; p_1..p_(r-1)], re-joined by single
/// spaces, with r drawn uniformly from {1..n}. r = 1 leaves the token sequence unchanged (but
/// whitespace runs are still normalised to single spaces). An empty passage (n = 0) is written
/// unchanged and recorded with r = 1, n = 0.
///
/// Reproducibility: r depends only on the seed and the passage *text* (not on its id or on the
/// order of the input): r = 1 + uniform_below(mt19937_64(mix(seed, FNV-1a(text))), n). The same
/// passage is therefore rotated the same way in a whole corpus, in a qrels-restricted corpus, in
/// training triples and in the answer-position audit, and the paper's "one debiased instance per
/// passage" holds. uniform_below is our own rejection-sampling mapping (portable, unlike
/// std::uniform_int_distribution), so outputs are identical across standard libraries.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "plugin/progress.hpp"

namespace plumb::debias {

/// Uniform integer in [0, n) from `gen` by rejection sampling (unbiased, portable).
/// Throws InvalidArgument when n == 0.
std::uint64_t uniform_below(std::mt19937_64& gen, std::uint64_t n);

/// 64-bit FNV-1a hash of `s`.
std::uint64_t fnv1a64(std::string_view s) noexcept;

/// Draws the rotation offset r ∈ {1..n} for a passage; 1 when n <= 1. Deterministic in
/// (seed, text). Thread-safe (no state).
std::size_t draw_rotation(std::uint64_t seed, std::string_view text, std::size_t n);

/// Eq. 7 on tokens: [t_r..t_n ; t_1..t_(r-1)] joined by single spaces. r is 1-based; requires
/// 1 <= r <= n, or r == 1 when tokens is empty (returns ""). Throws InvalidArgument otherwise.
std::string rotate_tokens(const std::vector<std::string_view>& tokens, std::size_t r);

/// 0-based token index `i` of the original passage → its index after rotation by r (1-based):
/// (i - (r - 1)) mod n. Requires i < n and 1 <= r <= n.
std::size_t map_rotated_index(std::size_t i, std::size_t r, std::size_t n);

struct RotatedPassage {
    std::string text;
    std::size_t r = 1;  ///< 1-based offset
    std::size_t n = 0;  ///< number of whitespace tokens
};

/// Tokenises on whitespace, draws r with draw_rotation and rotates.
RotatedPassage rotate_passage(std::uint64_t seed, std::string_view text);

struct RotateStats {
    std::uint64_t passages = 0;      ///< passages (or triple passages) read
    std::uint64_t rotated = 0;       ///< eligible passages (rotation applied, r may be 1)
    std::uint64_t unchanged_r1 = 0;  ///< eligible passages drawn r = 1 (incl. n <= 1)
    std::uint64_t not_selected = 0;  ///< passages copied unchanged (not judged in the qrels)
    std::uint64_t skipped_bad = 0;   ///< malformed input lines skipped (skip_bad)
};

struct RotateCorpusOptions {
    std::uint64_t seed = 0;
    /// Input format; empty = by extension (index::detect_corpus_format). Output has the same.
    std::string format;
    /// When set, only passages whose id is in this set are rotated; others are copied with their
    /// text unchanged (whitespace kept verbatim).
    std::optional<std::unordered_set<std::string>> only_ids;
    /// Side file `docid<TAB>r<TAB>n` (one line per rotated passage), empty = none.
    std::filesystem::path offsets;
    bool skip_bad = false;
    bool tabs_in_text = false;
};

/// Rotates a corpus (TSV `id<TAB>text` or BEIR JSONL; for JSONL only `text` is rotated, `_id` and
/// `title` are kept, other keys are not carried over). Streams; outputs are written atomically.
/// Throws IoError, ParseError, InvalidArgument.
RotateStats rotate_corpus(const std::filesystem::path& input, const std::filesystem::path& output,
                          const RotateCorpusOptions& options, const ProgressCallback& progress = {},
                          const CancelToken* cancel = nullptr);

/// Rotates the two passages of text training triples `query<TAB>pos<TAB>neg` (queries are kept).
/// The offsets side file, when given, has lines `line<TAB>pos|neg<TAB>r<TAB>n`. A line without
/// exactly three TAB-separated fields is a ParseError (or skipped and counted with skip_bad).
RotateStats rotate_triples(const std::filesystem::path& input, const std::filesystem::path& output,
                           std::uint64_t seed, const std::filesystem::path& offsets = {},
                           bool skip_bad = false, const ProgressCallback& progress = {},
                           const CancelToken* cancel = nullptr);

/// Reads `docid<TAB>r<TAB>n` offsets. Throws ParseError (file:line) on a malformed line or r
/// outside {1..max(n,1)}.
struct RotationOffset {
    std::size_t r = 1;
    std::size_t n = 0;
};
std::vector<std::pair<std::string, RotationOffset>> read_rotation_offsets(
    const std::filesystem::path& path);

}  // namespace plumb::debias
