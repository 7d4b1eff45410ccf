#pragma once
/// \file answer_positions.hpp
/// Answer-position audit (Hofstätter et al. 2021, Fig. 1; FORMULAS.md "Answer positions").
///
/// For each (query, relevant passage, answer string) the answer's token span is searched in the
/// passage: whitespace tokens, ASCII case-insensitive, exact token equality (no punctuation
/// stripping by default, so "Paris." does not match "Paris"; see strip_punctuation); the first
/// occurrence counts. The relative start is start_token / n (n = passage tokens), in [0, 1), and
/// is binned into `bins` equal bins. Triples whose answer does not occur verbatim are skipped
/// and counted.
///
/// Inputs:
///  - answers as TSV `qid<TAB>answer` (several lines per qid allowed) with qrels (relevance >=
///    min_relevance) and a corpus holding the relevant passages (streamed; only relevant passages
///    are kept in memory);
///  - or SQuAD-style JSON (`data[].paragraphs[].{context, qas[].{id, answers[].{text,
///    answer_start}}}`, the file is parsed whole): the passage is the paragraph context and the
///    start token is the token containing character `answer_start` (or the next token), no qrels
///    or corpus needed. Unanswerable SQuAD 2.0 questions (no answers) are ignored.
/// After rotation (optional, side by side with before):
///  - `offsets` (from rotate_corpus): the found span's start is mapped with r
///    (map_rotated_index) — exact, no second search;
///  - else `rotated_corpus`: the answer is searched again in the rotated passage (an answer that
///    wraps around the rotation point is then "not found");
///  - SQuAD input: `rotation_seed` rotates each context as rotate_passage would and maps.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "plugin/progress.hpp"

namespace plumb::debias {

/// Index of the first occurrence of `needle` as a contiguous token sequence in `haystack`
/// (ASCII case-insensitive token equality), or nullopt. An empty needle is never found.
std::optional<std::size_t> find_token_span(const std::vector<std::string_view>& haystack,
                                           const std::vector<std::string_view>& needle);

/// Whitespace-token index of the token that contains byte `offset` of `text`, or of the next
/// token when `offset` falls on whitespace; nullopt when no token starts at or after it.
std::optional<std::size_t> token_index_at(std::string_view text, std::size_t offset);

/// Bin of a relative position x ∈ [0, 1]: min(floor(x · bins), bins - 1).
std::size_t position_bin(double x, std::size_t bins);

struct AnswerPositionOptions {
    std::filesystem::path answers;  ///< TSV or SQuAD JSON (by extension .json)
    std::filesystem::path qrels;    ///< required for TSV answers
    std::filesystem::path corpus;   ///< required for TSV answers
    std::string corpus_format;      ///< empty = by extension
    int min_relevance = 1;
    /// TSV answers: compare tokens with leading/trailing ASCII punctuation removed on both sides
    /// ("Paris." matches "paris"); token positions and n are unchanged. Off by default (FORMULAS.md:
    /// exact token match).
    bool strip_punctuation = false;
    std::size_t bins = 10;
    std::filesystem::path rotated_corpus;        ///< optional (see file comment)
    std::filesystem::path offsets;               ///< optional, preferred over rotated_corpus
    std::optional<std::uint64_t> rotation_seed;  ///< SQuAD input: rotate contexts with this seed
};

struct PositionHistogram {
    std::vector<std::uint64_t> counts;  ///< one per bin
    std::uint64_t found = 0;
    std::uint64_t not_found = 0;  ///< answer not found verbatim (or not mappable)
    /// Proportion per bin (counts / found), 0 when nothing was found.
    std::vector<double> proportions() const;
};

struct AnswerPositionReport {
    std::size_t bins = 10;
    std::uint64_t answers = 0;                   ///< answer strings read
    std::uint64_t triples = 0;                   ///< (query, relevant passage, answer) examined
    std::uint64_t queries_without_relevant = 0;  ///< answer qids with no relevant judgement
    std::uint64_t missing_passages = 0;          ///< relevant docids absent from the corpus
    PositionHistogram before;
    std::optional<PositionHistogram> after;
    std::string after_method;  ///< "offsets", "rotated-corpus", "seed" or empty
};

/// Runs the audit. Throws IoError, ParseError (file:line), InvalidArgument (missing inputs,
/// bins == 0).
AnswerPositionReport audit_answer_positions(const AnswerPositionOptions& options,
                                            const ProgressCallback& progress = {});

/// Writes `<prefix>.txt`, `<prefix>.json` and the histogram plot `<prefix>.png`/`.svg`
/// (before and after side by side). Atomic writes.
void write_answer_position_report(const AnswerPositionReport& report,
                                  const std::filesystem::path& prefix);

}  // namespace plumb::debias
