#pragma once
/// \file survivorship.hpp
/// Survivorship audit of annotator-shown rankings (Gupta 2021, paper 002; FORMULAS.md).
///
/// Inputs (by extension):
///  - `.json`: the official MS MARCO QnA v2.1 layout, one object of columns keyed by row
///    ("query_id": {"0": 1102432, ...}, "query_type": {...}, "passages": {"0": [{"is_selected":
///    0, "passage_text": ..., "url": ...}, ...]}, other columns ignored). Parsed with a streaming
///    SAX handler that keeps only ids, types, marks and (when mapping to a corpus) a 64-bit hash
///    of each passage text, so the 1 GB train file fits in little memory.
///  - `.jsonl`: one object per line with `query_id`, `query_type` (optional) and `passages` in
///    shown order.
///  - otherwise: the shown-ranks TSV of eval/subsets.hpp (`qid<TAB>rank<TAB>docid<TAB>
///    is_selected`), read with eval::read_shown_ranks; query types from an optional
///    `qid<TAB>type` file.
/// Ranks are the 1-based positions in the shown list; a query without shown passages cannot be
/// represented in the shown-ranks format and is dropped (an input without any is an error). QnA
/// passages carry no id: the docid is the MS MARCO passage id found by exact text match in `corpus`
/// when one is given (the passage collection was built from these texts), else (or when not found)
/// the synthetic `<qid>_<rank>`.
///
/// Outputs in a directory: `shown_ranks.tsv` (eval's format, so `plumb eval` can use it),
/// `query_types.tsv` (`qid<TAB>type`, when types are known), the subset files `S_<k>.qids`
/// (k = 1..K, one qid per line, eval::read_qid_list format) and `all.qids`, `report.txt`,
/// `report.json`, and `first_rank.png`/`.svg` (distribution of the first relevant rank, with
/// the unanswered queries as the last bar).

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "plugin/progress.hpp"

namespace plumb::debias {

struct SurvivorshipOptions {
    std::filesystem::path input;
    std::filesystem::path types;   ///< optional `qid<TAB>type` (TSV input)
    std::filesystem::path corpus;  ///< optional: map QnA passage texts to corpus docids
    std::string corpus_format;     ///< empty = by extension
    unsigned max_k = 0;            ///< subsets S_1..S_max_k; 0 = the largest shown rank
    std::filesystem::path output_dir;
};

struct SurvivorshipTypeRow {
    std::string type;  ///< "all" first
    std::size_t total = 0;
    std::size_t unanswered = 0;
    double share = 0.0;
};

struct SurvivorshipReport {
    std::size_t queries = 0;
    std::size_t unanswered = 0;
    std::vector<SurvivorshipTypeRow> by_type;    ///< "all", then types by name
    std::map<unsigned, std::size_t> first_rank;  ///< first relevant rank -> queries
    std::vector<std::size_t> subset_sizes;       ///< |S_k| for k = 1..K (index k-1)
    std::size_t passages_mapped = 0;             ///< QnA passages mapped to corpus ids
    std::size_t passages_synthetic = 0;          ///< QnA passages given `<qid>_<rank>`
};

/// Converts MS MARCO QnA JSON/JSONL to the shown-ranks TSV (and types TSV when `types_out` is
/// non-empty). Returns (mapped, synthetic) passage counts. Throws IoError, ParseError.
std::pair<std::size_t, std::size_t> convert_qna_to_shown_ranks(
    const std::filesystem::path& input, const std::filesystem::path& shown_out,
    const std::filesystem::path& types_out, const std::filesystem::path& corpus = {},
    const std::string& corpus_format = {}, const ProgressCallback& progress = {});

/// Runs the audit and writes the outputs listed above. Throws IoError, ParseError,
/// InvalidArgument.
SurvivorshipReport run_survivorship(const SurvivorshipOptions& options,
                                    const ProgressCallback& progress = {});

}  // namespace plumb::debias
