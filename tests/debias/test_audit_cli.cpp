// CLI smoke test of `plumb audit` (the numbers are derived by hand in test_audit.cpp; here the
// options reach the library, the folder is written, and bad input exits 1 naming file and line).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <string>

#include "debias_test_util.hpp"

namespace {

int audit(const std::string& args, const debias_test::fs::path& dir) {
    const std::string cmd = std::string(PLUMB_CLI_PATH) + " audit --quiet " + args + " >" +
                            (dir / "stdout.txt").string() + " 2>" + (dir / "stderr.txt").string();
    return WEXITSTATUS(std::system(cmd.c_str()));
}

}  // namespace

TEST(AuditCli, WritesTheFolderAndSkipsAxesWithoutInputs) {
    auto dir = debias_test::temp_dir();
    const auto run = debias_test::write(dir / "a.run",
                                        "q1 Q0 p1 1 3 A\nq1 Q0 p2 2 2 A\nq2 Q0 p3 1 3 A\n"
                                        "q2 Q0 p4 2 2 A\n");
    const auto qrels = debias_test::write(dir / "qrels", "q1 0 p2 1\nq2 0 p3 1\n");
    const auto corpus =
        debias_test::write(dir / "corpus.tsv", "p1\the\np2\tshe\np3\tx\np4\the him\n");
    const auto words = debias_test::write(dir / "words.txt", "she,f\nhe,m\nhim,m\n");
    const auto shown =
        debias_test::write(dir / "shown.tsv", "q1\t1\tp2\t1\nq2\t1\tp4\t0\nq2\t2\tp3\t1\n");
    const std::string common = "--run " + run.string() + " --name A --qrels " + qrels.string() +
                               " --words " + words.string() + " --corpus " + corpus.string() +
                               " --shown-ranks " + shown.string() + " ";
    ASSERT_EQ(audit(common + "-o " + (dir / "out").string(), dir), 0)
        << debias_test::slurp(dir / "stderr.txt");
    const auto md = debias_test::slurp(dir / "stdout.txt");
    EXPECT_EQ(md, debias_test::slurp(dir / "out" / "audit.md"));
    // Position and complexity have no inputs; gender and survivorship are computed.
    EXPECT_NE(md.find("| position | skipped (missing: MATS report of run A"), std::string::npos)
        << md;
    EXPECT_NE(md.find("| complexity | skipped (missing: queries: --topics"), std::string::npos);
    // Gender, all queries: q1 (p1 he, p2 she) (1 - 1)/2 = 0; q2 (x; he him) 2/2 = 1 -> RaB 0.5.
    EXPECT_NE(md.find("| A | 2 | 0.5000 |"), std::string::npos) << md;
    // Survivorship: S_1 = {q1} (RR 1/2: p2 at rank 2), All = {q1, q2} (q2 RR 1).
    EXPECT_NE(md.find("| S_1 | 1 | 0.5000 |"), std::string::npos) << md;
    EXPECT_NE(md.find("| All | 2 | 0.7500 |"), std::string::npos) << md;
    EXPECT_TRUE(debias_test::is_png(dir / "out" / "gender.png"));
    EXPECT_TRUE(debias_test::is_svg(dir / "out" / "survivorship.svg"));
    EXPECT_FALSE(debias_test::fs::exists(dir / "out" / "position.png"));

    // A malformed shown-rankings line: exit 1, file and line named, no folder written.
    const auto bad = debias_test::write(dir / "bad.tsv", "q1\t1\tp2\t1\nq2\t0\tp4\t0\n");
    EXPECT_EQ(audit("--run " + run.string() + " --qrels " + qrels.string() + " --shown-ranks " +
                        bad.string() + " -o " + (dir / "bad_out").string(),
                    dir),
              1);
    EXPECT_NE(debias_test::slurp(dir / "stderr.txt").find("bad.tsv:2"), std::string::npos)
        << debias_test::slurp(dir / "stderr.txt");
    EXPECT_FALSE(debias_test::fs::exists(dir / "bad_out"));
    // --mats for a run that does not exist.
    EXPECT_EQ(audit(common + "--mats B,x.json -o " + (dir / "bad_out").string(), dir), 1);
    EXPECT_NE(debias_test::slurp(dir / "stderr.txt").find("no --run named 'B'"), std::string::npos);
    debias_test::fs::remove_all(dir);
}
