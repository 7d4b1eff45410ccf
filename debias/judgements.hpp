#pragma once
/// \file judgements.hpp
/// Minimal readers the debias tools share: TREC qrels (`qid 0 docid rel`, whitespace-separated)
/// and two-column TSV maps (`key<TAB>value`). Streaming, with ParseError naming file and line.

#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace plumb::debias {

struct Judgement {
    std::string qid;
    std::string docid;
    int relevance = 0;
};

/// Reads TREC qrels: 4 whitespace-separated fields, integer relevance. Blank lines are skipped.
/// Throws IoError, ParseError.
std::vector<Judgement> read_qrels(const std::filesystem::path& path);

/// Reads `key<TAB>value` lines (value may be empty; more than two fields is an error).
/// A duplicate key is a ParseError naming both lines. Blank lines are skipped.
std::map<std::string, std::string> read_tsv_map(const std::filesystem::path& path);

}  // namespace plumb::debias
