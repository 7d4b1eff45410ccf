#pragma once
/// \file gender_scores.hpp
/// Per-passage gender bias files for a whole corpus or index, and query gender labels
/// (Rekabsaz & Schedl 2020; IBBR paper 004; FORMULAS.md). The word list, tokenisation, counts,
/// magnitudes, IBBR magnitude/label and the file formats are eval/gender.hpp's; this file only
/// streams a collection through them.
///
/// Outputs for --output P (P may end in ".tsv", which is then dropped from the prefix):
///  - `P.tsv` (or P itself when it ends in ".tsv"): every variant in one file: the line
///    eval::kCombinedBiasHeader, a column header, then `docid tc tc_female tc_male tf tf_female
///    tf_male bool bool_female bool_male ibbr_magnitude ibbr_label` (TABs); eval::read_bias_file
///    reads any one variant of it;
///  - `P.tc.tsv`, `P.tf.tsv`, `P.bool.tsv`: eval's bias file format (`# plumb-gender-bias v1
///    variant=<v>` then `docid<TAB>bias<TAB>female<TAB>male`, "%.17g"), readable with
///    eval::read_bias_file. Written streaming, line for line as eval::write_bias_file writes.
///  - `P.ibbr.tsv`: `docid<TAB>d`, d = IBBR label ∈ {-1, 0, 1} (eval::read_bias_labels format,
///    with a leading `#` comment line);
///  - `P.ibbr_magnitude.tsv`: `docid<TAB>magnitude` (IBBR Eq. 1, "%.17g", `#` comment first).
/// Duplicate document ids are not detected here (streaming); the readers reject them.

#include <cstdint>
#include <filesystem>
#include <string>

#include "plugin/progress.hpp"

namespace plumb::debias {

struct GenderScoreOptions {
    std::filesystem::path wordlist;
    std::filesystem::path corpus;     ///< one of corpus / index_dir
    std::string corpus_format;        ///< empty = by extension
    bool skip_bad = false;            ///< corpus: skip malformed lines
    std::filesystem::path index_dir;  ///< a committed plumb passage index
    std::filesystem::path output_prefix;
};

struct GenderScoreStats {
    std::uint64_t passages = 0;
    std::uint64_t with_female = 0;   ///< passages with c_f > 0
    std::uint64_t with_male = 0;     ///< passages with c_m > 0
    std::uint64_t ibbr_male = 0;     ///< label +1
    std::uint64_t ibbr_female = 0;   ///< label -1
    std::uint64_t ibbr_neutral = 0;  ///< label 0
    std::uint64_t skipped_bad = 0;
};

/// Scores every passage. Throws IoError, ParseError, IndexError, InvalidArgument (neither or
/// both of corpus / index_dir). Cancelling stops before anything is committed.
GenderScoreStats score_gender(const GenderScoreOptions& options,
                              const ProgressCallback& progress = {},
                              const CancelToken* cancel = nullptr);

/// The per-variant paths written for a prefix: suffix tc, tf, bool, ibbr, ibbr_magnitude.
std::filesystem::path gender_output_path(const std::filesystem::path& prefix,
                                         const std::string& suffix);
/// The combined file written for --output `output`.
std::filesystem::path gender_combined_path(const std::filesystem::path& output);

struct QueryGenderStats {
    std::uint64_t female = 0, male = 0, neutral = 0,
                  both = 0;  ///< both: queries with f and m words
};

/// Labels each topic (`qid<TAB>query` or BEIR queries.jsonl, index::read_topics) f / m / n with
/// eval::query_gender_label and writes `qid<TAB>label` (atomically). `majority` = resolve queries
/// with both genders by the larger count (eval::BothPolicy::Majority) instead of 'n'.
QueryGenderStats label_query_gender(const std::filesystem::path& wordlist,
                                    const std::filesystem::path& topics,
                                    const std::filesystem::path& output, bool majority = false);

}  // namespace plumb::debias
