// CLI smoke test of `plumb debias complexity` with the per-bucket evaluation.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "plugin/text_io.hpp"
#include "tests/test_tmp.hpp"

namespace fs = std::filesystem;

TEST(ComplexityCli, WritesTableReportAndPlot) {
    fs::path dir = plumb::test::process_dir("plumb_cx_cli_");
    fs::create_directories(dir);
    std::ofstream(dir / "topics.tsv") << "q1\tcheap flights\n"
                                         "q2\twhat is the capital of france\n"
                                         "q3\thow long does it take to boil an egg when you are "
                                         "at high altitude\n";
    std::ofstream(dir / "qrels") << "q1 0 d1 1\nq2 0 d2 1\nq3 0 d3 1\n";
    // q1: relevant at rank 1 -> nDCG@10 = 1; q2: relevant at rank 2 -> 1/log2(3);
    // q3: relevant not retrieved -> 0.
    std::ofstream(dir / "run") << "q1 Q0 d1 1 2 r\nq1 Q0 d9 2 1 r\n"
                                  "q2 Q0 d8 1 2 r\nq2 Q0 d2 2 1 r\n"
                                  "q3 Q0 d7 1 1 r\n";
    std::string cmd = std::string(PLUMB_CLI_PATH) + " debias complexity --quiet --topics " +
                      (dir / "topics.tsv").string() + " --output " + (dir / "cx").string() +
                      " --qrels " + (dir / "qrels").string() + " --run " + (dir / "run").string() +
                      " -m ndcg_cut.10 > /dev/null";
    ASSERT_EQ(std::system(cmd.c_str()), 0);
    auto tsv = plumb::read_file(dir / "cx.tsv");
    EXPECT_EQ(std::count(tsv.begin(), tsv.end(), '\n'), 4);  // header + 3 queries
    auto report = nlohmann::json::parse(plumb::read_file(dir / "cx.json"));
    double want = (1.0 + 1.0 / std::log2(3.0) + 0.0) / 3.0;
    EXPECT_NEAR(report["overall"]["mean"].get<double>(), want, 1e-4);
    EXPECT_EQ(report["queries"].get<int>(), 3);
    EXPECT_TRUE(fs::file_size(dir / "cx.ndcg_cut_10.png") > 100);
    EXPECT_TRUE(fs::file_size(dir / "cx.ndcg_cut_10.svg") > 100);
    // Missing topics file: a clear error, exit status 1.
    std::string bad = std::string(PLUMB_CLI_PATH) + " debias complexity --topics " +
                      (dir / "missing.tsv").string() + " --output " + (dir / "x").string() +
                      " 2> /dev/null";
    EXPECT_EQ(WEXITSTATUS(std::system(bad.c_str())), 1);
    fs::remove_all(dir);
}
