#pragma once
/// \file judgements.hpp
/// Readers the debias tools share: qrels as a flat list of judgements (read by eval::Qrels, the
/// evaluator's reader) and two-column TSV maps (`key<TAB>value`), with ParseError naming file
/// and line.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace plumb {
class LineReader;
}

namespace plumb::debias {

struct Judgement {
    std::string qid;
    std::string docid;
    long relevance = 0;
};

/// Reads qrels with eval::Qrels::load (TREC `qid iter docid rel` or BEIR's `query-id corpus-id
/// score` TSV; the formats, the errors and the duplicate check are that reader's) and lists
/// the judgements: queries in eval::Qrels::qids() order, each query's judgements in file order.
/// Throws IoError, ParseError (file:line).
std::vector<Judgement> read_qrels(const std::filesystem::path& path);

/// The first line of each key of a file being read: a key met again is a ParseError naming both
/// lines, "duplicate <what> '<key>' (first on line N)".
class FirstLines {
public:
    /// Records `key` at `reader`'s current line; throws ParseError when it was met before.
    void add(const LineReader& reader, const std::string& key, const char* what);

private:
    std::unordered_map<std::string, std::uint64_t> m_line;
};

/// Reads `key<TAB>value` lines (value may be empty; more than two fields is an error).
/// A duplicate key is a ParseError naming both lines. Blank lines are skipped.
std::map<std::string, std::string> read_tsv_map(const std::filesystem::path& path);

/// Document ids in the top `depth` of each query of a TREC run (eval::read_run; ranked by score
/// descending, ties by docid descending, as trec_eval does). Throws IoError, ParseError.
std::unordered_set<std::string> run_top_docids(const std::filesystem::path& run, std::size_t depth);

}  // namespace plumb::debias
