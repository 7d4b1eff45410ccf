#pragma once
/// \file judgements.hpp
/// Minimal readers the debias tools share: TREC qrels (`qid 0 docid rel`, whitespace-separated)
/// and two-column TSV maps (`key<TAB>value`). Streaming, with ParseError naming file and line.

#include <cstddef>
#include <filesystem>
#include <map>
#include <string>
#include <unordered_set>
#include <vector>

namespace plumb::debias {

struct Judgement {
    std::string qid;
    std::string docid;
    int relevance = 0;
};

/// Reads qrels: TREC `qid iter docid rel` (4 whitespace-separated fields) or BEIR's
/// `query-id corpus-id score` TSV (3 fields, optional header line); the first judgement line
/// decides. Integer relevance. Blank lines and '#' comments are skipped. Throws IoError,
/// ParseError.
std::vector<Judgement> read_qrels(const std::filesystem::path& path);

/// Reads `key<TAB>value` lines (value may be empty; more than two fields is an error).
/// A duplicate key is a ParseError naming both lines. Blank lines are skipped.
std::map<std::string, std::string> read_tsv_map(const std::filesystem::path& path);

/// Document ids in the top `depth` of each query of a TREC run (eval::read_run; ranked by score
/// descending, ties by docid descending, as trec_eval does). Throws IoError, ParseError.
std::unordered_set<std::string> run_top_docids(const std::filesystem::path& run, std::size_t depth);

}  // namespace plumb::debias
