#pragma once
/// \file trec_run.hpp
/// Reading a TREC run a test wrote, line by line as written (no re-ranking: eval::read_run
/// ranks as trec_eval does).
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace plumb::test {

/// One line `qid Q0 docid rank score tag` of a run.
struct RunLine {
    std::string qid, docid;
    int rank;
    double score;
};

/// The lines of the run file `path` in file order, up to the first malformed one.
inline std::vector<RunLine> read_run_lines(const std::filesystem::path& path) {
    std::vector<RunLine> out;
    std::ifstream in(path);
    std::string qid, q0, docid, tag;
    int rank;
    double score;
    while (in >> qid >> q0 >> docid >> rank >> score >> tag)
        out.push_back({qid, docid, rank, score});
    return out;
}

}  // namespace plumb::test
