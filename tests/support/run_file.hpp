#pragma once
/// \file run_file.hpp
/// Reading back a TREC run file that a test had `plumb` write.
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/files.hpp"

namespace plumb::test {

/// One line of a TREC run: `qid Q0 docid rank score tag`.
struct RunLine {
    std::string qid, q0, docid;
    int rank = 0;
    double score = 0;
    std::string tag;
};

/// The lines of the run file `path` in file order, up to the first that does not parse as six
/// whitespace-separated fields. Throws std::runtime_error when the file cannot be read.
inline std::vector<RunLine> read_run_lines(const std::filesystem::path& path) {
    std::vector<RunLine> out;
    std::istringstream in(read_text(path));
    RunLine l;
    while (in >> l.qid >> l.q0 >> l.docid >> l.rank >> l.score >> l.tag) out.push_back(l);
    return out;
}

}  // namespace plumb::test
