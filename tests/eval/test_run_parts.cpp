// Runs written in parts (e.g. by MPI ranks or separate jobs): `plumb eval QRELS PART1 PART2`
// and `plumb compare --run PART1,PART2` evaluate them as the one run their concatenation is.
// References: the same command on the concatenated file, and values worked out by hand.
#include <gtest/gtest.h>

#include <string>

#include "eval/run.hpp"
#include "plugin/error.hpp"
#include "tests/support/cli.hpp"
#include "tests/support/files.hpp"
#include "tests/support/temp_dir.hpp"

namespace {

// q1: d1 (rel) d2; q2: d3 d4 (rel); q3 only in part 2: d5 (rel).
const char* kQrels = "q1 0 d1 1\nq2 0 d4 1\nq3 0 d5 1\n";
const char* kPart1 = "q1 Q0 d1 1 2.0 t\nq1 Q0 d2 2 1.0 t\nq2 Q0 d3 1 3.0 t\n";
const char* kPart2 = "q2 Q0 d4 2 2.5 t\nq3 Q0 d5 1 1.0 t\n";

}  // namespace

TEST(RunParts, EvalReadsPartsAsTheirConcatenation) {
    plumb::test::TempDir dir("plumb_run_parts");
    const auto q = plumb::test::write_file(dir.path / "qrels", kQrels);
    const auto p1 = plumb::test::write_file(dir.path / "part1", kPart1);
    const auto p2 = plumb::test::write_file(dir.path / "part2", kPart2);
    const auto whole =
        plumb::test::write_file(dir.path / "whole", std::string(kPart1) + kPart2);
    const auto a = plumb::test::run_plumb("eval -q -m recip_rank " + q.string() + " " +
                                          p1.string() + " " + p2.string());
    const auto b = plumb::test::run_plumb("eval -q -m recip_rank " + q.string() + " " +
                                          whole.string());
    ASSERT_EQ(a.status, 0) << a.out;
    EXPECT_EQ(a.out, b.out);
    // By hand: q1 1, q2 (d3 3.0 above d4 2.5) 1/2, q3 1: mean 2.5 / 3.
    EXPECT_NE(a.out.find("recip_rank            \tq2\t0.5000"), std::string::npos) << a.out;
    EXPECT_NE(a.out.find("recip_rank            \tall\t0.8333"), std::string::npos) << a.out;

    // compare: --run A,B is one run (named by --name), equal to the concatenated file.
    const std::string cmp = "compare --qrels " + q.string() + " -m recip_rank --name r --name s ";
    const auto c = plumb::test::run_plumb(cmp + "--run " + p1.string() + "," + p2.string() +
                                          " --run " + whole.string());
    ASSERT_EQ(c.status, 0) << c.out;
    // Both rows 0.8333 (part 1 alone would score q3 0: 0.5000).
    const auto first = c.out.find("0.8333");
    ASSERT_NE(first, std::string::npos) << c.out;
    EXPECT_NE(c.out.find("0.8333", first + 1), std::string::npos) << c.out;
    EXPECT_EQ(c.out.find("0.5000"), std::string::npos) << c.out;

    // A (qid, docid) pair in both parts: an error naming both places.
    const auto dup = plumb::test::write_file(dir.path / "dup", "q1 Q0 d1 1 0.5 t\n");
    const auto e = plumb::test::run_plumb("eval " + q.string() + " " + p1.string() + " " +
                                          dup.string());
    EXPECT_EQ(e.status, 1);
    EXPECT_NE(e.out.find(dup.string() + ":1: duplicate document 'd1' for query 'q1' (also at " +
                         p1.string() + ":1)"),
              std::string::npos)
        << e.out;
}

TEST(RunParts, RunPartsSplitsOnlyWhenNoSuchFile) {
    plumb::test::TempDir dir("plumb_run_parts");
    const auto comma = plumb::test::write_file(dir.path / "a,b", "x");
    EXPECT_EQ(plumb::eval::run_parts(comma.string()).size(), 1u);
    const auto parts = plumb::eval::run_parts("x.run,y.run");
    ASSERT_EQ(parts.size(), 2u);
    EXPECT_EQ(parts[1], "y.run");
    EXPECT_EQ(plumb::eval::run_parts("x.run,").size(), 1u);  // an empty name: not parts
    EXPECT_THROW(plumb::eval::read_run_parts({}), plumb::InvalidArgument);
}
