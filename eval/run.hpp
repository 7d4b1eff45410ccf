#pragma once
/// \file run.hpp
/// Reading TREC runs (`qid Q0 docid rank score tag`) as trec_eval does (get_trec_results.c):
/// whitespace-separated, at least six fields (fields after the tag are ignored), the rank
/// column ignored, the score parsed as a double. Empty lines and lines starting with '#' are
/// skipped. MS MARCO's 3-column runs (`qid<TAB>pid<TAB>rank`, the official MRR@10 script's
/// input) are read too: the layout is fixed by the first content line (3 fields = MS MARCO,
/// mixing layouts is an error), the score of a line is -rank (so documents rank in rank
/// order; equal ranks tie and fall back to docid order) and the run id is empty. Unlike trec_eval,
/// a score that is not a number is an error (trec_eval's atof reads it as 0), as is a duplicate
/// (qid, docid) (trec_eval rejects those too, without a line).
///
/// RunReader streams a run one query at a time: a run sorted (grouped) by qid is processed
/// with memory proportional to one query's lines. read_run() loads a whole run grouped by qid
/// for runs in any order.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace plumb::eval {

/// One run line: where the docid sits in RunQuery::docids, the score and the 1-based line.
struct RunDoc {
    std::uint32_t offset = 0;
    std::uint32_t length = 0;
    double score = 0.0;
    std::uint64_t line = 0;
};

/// The lines of one query, in file order.
struct RunQuery {
    std::string qid;
    std::string docids;  ///< concatenated document ids
    std::vector<RunDoc> docs;

    std::string_view docid(const RunDoc& d) const noexcept {
        return std::string_view(docids.data() + d.offset, d.length);
    }
    void add(std::string_view docid, double score, std::uint64_t line);
    void clear() noexcept {
        qid.clear();
        docids.clear();
        docs.clear();
    }
};

/// Streams a run file block by block: each block is a maximal sequence of consecutive lines
/// with the same qid. Not thread-safe.
class RunReader {
public:
    /// Opens `path` ("-" = standard input). Throws IoError.
    explicit RunReader(const std::filesystem::path& path);
    ~RunReader();
    RunReader(const RunReader&) = delete;
    RunReader& operator=(const RunReader&) = delete;

    /// Reads the next block into `out` (cleared first). Returns false at end of file.
    /// Throws ParseError (file:line) for a malformed line or a non-numeric score.
    bool next(RunQuery& out);

    /// Tag (6th column) of the last line read so far; trec_eval reports the last line's tag.
    const std::string& run_id() const noexcept;
    /// File name for error messages ("<stdin>" for "-").
    const std::string& name() const noexcept;
    std::uint64_t bytes_read() const noexcept;
    /// File size in bytes, 0 when unknown.
    std::uint64_t size() const noexcept;

private:
    struct Impl;
    std::unique_ptr<Impl> m_impl;
};

/// A whole run grouped by qid.
struct Run {
    std::string name;               ///< file name, for error messages
    std::string run_id;             ///< tag of the last line
    std::vector<RunQuery> queries;  ///< in order of first appearance; lines in file order
};

/// Reads a whole run (lines of a query may be scattered through the file). Throws like
/// RunReader::next.
Run read_run(const std::filesystem::path& path);

/// Reads a run written in parts (e.g. by MPI ranks or separate jobs, each holding some queries)
/// as the one run their concatenation is: a query's lines from several parts are joined, in
/// part order. Throws like read_run, and ParseError (file:line) for a (qid, docid) pair that
/// occurs twice, within a part or across parts (naming the other place). Run::name joins the
/// parts' names with " + ". Throws InvalidArgument when `parts` is empty.
Run read_run_parts(const std::vector<std::filesystem::path>& parts);

/// The parts named by a run argument: "A,B,C" when that is not an existing file and every
/// comma-separated name is non-empty, else the argument itself.
std::vector<std::filesystem::path> run_parts(const std::string& argument);

}  // namespace plumb::eval
