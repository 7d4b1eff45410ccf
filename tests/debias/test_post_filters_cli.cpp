// CLI smoke test of `plumb debias post-filter` (values derived by hand in the comments).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "debias_test_util.hpp"

namespace {

int run(const std::string& args, const debias_test::fs::path& dir) {
    const std::string cmd = std::string(PLUMB_CLI_PATH) + " debias post-filter " + args + " --quiet >" +
                            (dir / "stdout.txt").string() + " 2>" + (dir / "stderr.txt").string();
    return WEXITSTATUS(std::system(cmd.c_str()));
}

std::vector<std::string> docids(const debias_test::fs::path& run) {
    std::vector<std::string> out;
    for (const auto& l : debias_test::lines(run)) {
        std::istringstream in(l);
        std::string qid, q0, doc;
        in >> qid >> q0 >> doc;
        out.push_back(qid + ":" + doc);
    }
    return out;
}

}  // namespace

TEST(PostFilterCli, FairTopKBalanceAndDedup) {
    auto dir = debias_test::temp_dir();
    const auto r = debias_test::write(dir / "run.txt",
                                      "q1 Q0 n1 1 12 r\nq1 Q0 n2 2 11 r\nq1 Q0 n3 3 10 r\n"
                                      "q1 Q0 n4 4 9 r\nq1 Q0 f5 5 8 r\nq2 Q0 a 1 3 r\n");
    const auto b = debias_test::write(dir / "bias.tsv",
                                      "n1\t-1\t0\t1\nn2\t-1\t0\t1\nn3\t0\t0\t0\nn4\t0\t0\t0\n"
                                      "f5\t1\t1\t0\na\t0\t0\t0\n");
    const std::string common = "--run " + r.string() + " --bias-file " + b.string() + " ";
    // FA*IR k=4, p=.5, alpha=.1 unadjusted: m(4) = 1 -> f5 moves to rank 4.
    ASSERT_EQ(run(common + "--filter fair_topk -k 4 --no-adjust -o " + (dir / "o1").string() +
                      " --report " + (dir / "rep.tsv").string(),
                  dir),
              0)
        << debias_test::slurp(dir / "stderr.txt");
    EXPECT_EQ(docids(dir / "o1"),
              (std::vector<std::string>{"q1:n1", "q1:n2", "q1:n3", "q1:f5", "q1:n4", "q2:a"}));
    const auto rep = debias_test::lines(dir / "rep.tsv");
    ASSERT_EQ(rep.size(), 3u);
    // q1 RaB@4 bias before (1+1+0+0)/4 = 0.5, after (1+1+0-1)/4 = 0.25; utility 42 -> 41.
    EXPECT_EQ(rep[1].substr(0, rep[1].find("\t27")), "q1\t0.5\t0.25\t42\t41");
    // Balance k=2, infinite budget: n2<->f5 (S: 2 -> 0) is the only swap reaching 0 besides
    // n1<->f5, and the cheaper (3 < 4).
    ASSERT_EQ(run(common + "--filter balance -k 2 --budget inf -o " + (dir / "o2").string(), dir),
              0);
    EXPECT_EQ(docids(dir / "o2"),
              (std::vector<std::string>{"q1:n1", "q1:f5", "q1:n2", "q1:n3", "q1:n4", "q2:a"}));
    // Dedup: n2 repeats n1 (Jaccard 1) and is removed.
    const auto c = debias_test::write(dir / "corpus.tsv",
                                      "n1\tthe cat sat on the mat\nn2\tThe cat sat on the mat\n"
                                      "n3\tx y z\nn4\tq r s\nf5\tthe cat sat\na\tfoo\n");
    ASSERT_EQ(run("--run " + r.string() + " --filter dedup --corpus " + c.string() + " -o " +
                      (dir / "o3").string(),
                  dir),
              0);
    EXPECT_EQ(docids(dir / "o3"),
              (std::vector<std::string>{"q1:n1", "q1:n3", "q1:n4", "q1:f5", "q2:a"}));
    // Errors: dedup without text, a bad budget, a bad JSON config.
    EXPECT_EQ(run("--run " + r.string() + " --filter dedup -o " + (dir / "o4").string(), dir), 1);
    EXPECT_NE(debias_test::slurp(dir / "stderr.txt").find("--corpus"), std::string::npos);
    EXPECT_EQ(run(common + "--filter balance --budget lots -o " + (dir / "o4").string(), dir), 1);
    EXPECT_EQ(
        run(common + "--config '{\"type\": \"fair_topk\", \"k\": -1}' -o " + (dir / "o4").string(),
            dir),
        1);
    EXPECT_FALSE(debias_test::fs::exists(dir / "o4"));
    debias_test::fs::remove_all(dir);
}

// `plumb debias post-filter-sweep`: the table of test_post_filter_sweep.cpp's run through the CLI
// (its numbers derived by hand there), the written folder, and a bad budget.
TEST(PostFilterCli, SweepWritesTableRunsAndPlot) {
    auto dir = debias_test::temp_dir();
    const auto r = debias_test::write(dir / "run.txt",
                                      "q1 Q0 n1 1 10 r\nq1 Q0 n2 2 9 r\nq1 Q0 f3 3 8 r\n"
                                      "q1 Q0 n4 4 7 r\nq2 Q0 a 1 5 r\nq2 Q0 b 2 4 r\n"
                                      "q3 Q0 x 1 1 r\n");
    const auto b = debias_test::write(dir / "bias.tsv",
                                      "n1\t-1\t0\t1\nn2\t-1\t0\t1\nf3\t1\t1\t0\nn4\t0\t0\t0\n"
                                      "a\t-2\t0\t2\nb\t1\t1\t0\nx\t-1\t0\t1\n");
    const auto q = debias_test::write(dir / "qrels.txt", "q1 0 f3 1\nq1 0 n1 0\nq2 0 a 2\n");
    auto sweep = [&](const std::string& args) {
        const std::string cmd = std::string(PLUMB_CLI_PATH) +
                                " debias post-filter-sweep --quiet --run " + r.string() +
                                " --qrels " + q.string() + " --bias-file " + b.string() +
                                " -k 2 --no-adjust " + args + " >" +
                                (dir / "stdout.txt").string() + " 2>" +
                                (dir / "stderr.txt").string();
        return WEXITSTATUS(std::system(cmd.c_str()));
    };
    ASSERT_EQ(sweep("--budgets 0.5,inf --fair-p 0.95 --format markdown --output-dir " +
                    (dir / "out").string()),
              0)
        << debias_test::slurp(dir / "stderr.txt");
    const auto md = debias_test::slurp(dir / "stdout.txt");
    // Unfiltered: nDCG@2 (0 + 1)/2, |RaB@2| (1 + 0.5)/2; budget inf: q1 gets f3 at rank 2.
    EXPECT_NE(md.find("| none | - | 0.5000 | 0.5000 | 0.7500 | 0.7500 | 1.1250 |"),
              std::string::npos)
        << md;
    EXPECT_NE(md.find("| bias_balance | budget=inf | 0.8155 | 0.7500 | 0.2500 | 0.2500 |"),
              std::string::npos)
        << md;
    EXPECT_NE(md.find("| fair_topk | p=0.95 | 0.8155 | 0.7500 | 0.2500 | 0.2500 | -0.3750 | 2 | 3 |"),
              std::string::npos)
        << md;
    for (const char* f : {"none.run", "fair_topk_p0.95.run", "bias_balance_budget0.5.run",
                          "bias_balance_budgetinf.run", "sweep.md", "sweep.json", "sweep.txt"})
        EXPECT_TRUE(debias_test::fs::exists(dir / "out" / f)) << f;
    EXPECT_TRUE(debias_test::is_png(dir / "out" / "sweep.png"));
    EXPECT_TRUE(debias_test::is_svg(dir / "out" / "sweep.svg"));
    EXPECT_EQ(sweep("--budgets lots --output-dir " + (dir / "bad").string()), 1);
    EXPECT_NE(debias_test::slurp(dir / "stderr.txt").find("lots"), std::string::npos);
    EXPECT_FALSE(debias_test::fs::exists(dir / "bad"));
    debias_test::fs::remove_all(dir);
}
