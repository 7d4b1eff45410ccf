// `plumb eval` against the official trec_eval: every case of tests/eval/trec_eval_ref/cases.tsv
// runs `plumb eval <args>` and compares its standard output, line for line, with what
// trec_eval 10.0 printed for the same inputs (expected/*.out.gz; how they were made:
// tests/eval/trec_eval_ref/README.md). The cases cover trec_eval's own `make quicktest` and
// randomized qrels and runs (graded and negative grades, score ties, runs whose queries come
// grouped, in reverse numeric order or fully interleaved, queries only in the run or only in
// the qrels, MS MARCO 3-column runs, ir_measures names), with and without -c.
#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/cli.hpp"

namespace fs = std::filesystem;

namespace {

const fs::path kRef = fs::path(PLUMB_SOURCE_DIR) / "tests/eval/trec_eval_ref";

struct Case {
    std::string name, expected, args;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

std::vector<Case> load_cases() {
    std::vector<Case> out;
    std::ifstream in(kRef / "cases.tsv");
    std::string line;
    while (std::getline(in, line)) {
        if (line.empty()) continue;
        const auto t1 = line.find('\t'), t2 = line.find('\t', t1 + 1);
        out.push_back({line.substr(0, t1), line.substr(t1 + 1, t2 - t1 - 1), line.substr(t2 + 1)});
    }
    return out;
}

std::string gunzip(const fs::path& p) {
    gzFile f = gzopen(p.c_str(), "rb");
    std::string out;
    if (!f) return out;
    char buf[65536];
    int n;
    while ((n = gzread(f, buf, sizeof buf)) > 0) out.append(buf, static_cast<std::size_t>(n));
    gzclose(f);
    return out;
}

/// The case's arguments with relative file paths (testdata/..., random/...) made absolute.
std::string with_folder(const std::string& args) {
    std::istringstream in(args);
    std::string word, out;
    while (in >> word) {
        if (word.rfind("testdata/", 0) == 0 || word.rfind("random/", 0) == 0) {
            word = "'" + (kRef / word).string() + "'";
        }
        out += (out.empty() ? "" : " ") + word;
    }
    return out;
}

std::vector<std::string> lines(const std::string& s) {
    std::vector<std::string> out;
    std::istringstream in(s);
    std::string l;
    while (std::getline(in, l)) out.push_back(l);
    return out;
}

class TrecEvalConformance : public ::testing::TestWithParam<Case> {};

TEST_P(TrecEvalConformance, SameOutputAsTrecEval) {
    const Case& c = GetParam();
    const std::string expected = gunzip(kRef / "expected" / c.expected);
    ASSERT_FALSE(expected.empty()) << "missing fixture " << c.expected;
    // (paths in the cases are relative to the fixture folder)
    const auto r = plumb::test::run_plumb("eval " + with_folder(c.args), false);
    const std::string& got = r.out;
    ASSERT_EQ(r.status, 0) << "plumb eval " << c.args;
    if (got == expected) return;
    const auto e = lines(expected), g = lines(got);
    std::size_t shown = 0;
    std::ostringstream diff;
    for (std::size_t i = 0; i < std::max(e.size(), g.size()) && shown < 12; ++i) {
        const std::string el = i < e.size() ? e[i] : "<none>", gl = i < g.size() ? g[i] : "<none>";
        if (el != gl) {
            diff << "line " << i + 1 << "\n  trec_eval: " << el << "\n  plumb:     " << gl << "\n";
            ++shown;
        }
    }
    ADD_FAILURE() << "plumb eval " << c.args << " differs from trec_eval (" << e.size() << " vs "
                  << g.size() << " lines):\n"
                  << diff.str();
}

INSTANTIATE_TEST_SUITE_P(Cases, TrecEvalConformance, ::testing::ValuesIn(load_cases()),
                         [](const ::testing::TestParamInfo<Case>& info) {
                             return info.param.name;
                         });

TEST(TrecEvalConformanceFixtures, CasesAreThere) {
    // A missing cases.tsv would instantiate no test at all: make that a failure.
    EXPECT_GE(load_cases().size(), 100u);
}

}  // namespace
