// Smoke tests of `plumb debias ...` through the built binary.
#include <gtest/gtest.h>

#include "debias_test_util.hpp"

using namespace debias_test;

namespace {
std::string cli() { return std::string("'") + PLUMB_CLI_PATH + "'"; }
std::string q(const std::filesystem::path& p) { return "'" + p.string() + "'"; }
}  // namespace

TEST(CliDebias, RotateIsDeterministicAndWritesOffsets) {
    auto dir = temp_dir();
    auto in = write(dir / "c.tsv", "d1\ta b c d e f\nd2\tg h i\n");
    for (const char* name : {"o1.tsv", "o2.tsv"}) {
        auto [rc, out] = run(cli() + " debias rotate --quiet --corpus " + q(in) + " --output " +
                             q(dir / name) + " --seed 17 --offsets " + q(dir / "off.tsv"));
        ASSERT_EQ(rc, 0) << out;
    }
    EXPECT_EQ(slurp(dir / "o1.tsv"), slurp(dir / "o2.tsv"));
    EXPECT_EQ(lines(dir / "o1.tsv").size(), 2u);
    EXPECT_EQ(lines(dir / "off.tsv").size(), 2u);
}

TEST(CliDebias, AnswerPositionsAndSurvivorshipWriteReportsAndPlots) {
    auto dir = temp_dir();
    write(dir / "c.tsv", "p1\tParis is the capital of France\n");
    write(dir / "qrels.txt", "q1 0 p1 1\n");
    write(dir / "answers.tsv", "q1\tthe capital\n");
    auto [rc, out] = run(cli() + " debias answer-positions --quiet --answers " + q(dir / "answers.tsv") +
                         " --qrels " + q(dir / "qrels.txt") + " --corpus " + q(dir / "c.tsv") +
                         " --output " + q(dir / "ap"));
    ASSERT_EQ(rc, 0) << out;
    EXPECT_NE(out.find("found: 1"), std::string::npos) << out;
    EXPECT_TRUE(is_png(dir / "ap.png"));
    EXPECT_TRUE(is_svg(dir / "ap.svg"));

    write(dir / "shown.tsv", "a\t1\td1\t0\na\t2\td2\t1\nb\t1\td3\t0\n");
    auto [rc2, out2] = run(cli() + " debias survivorship --quiet --input " + q(dir / "shown.tsv") +
                           " --output " + q(dir / "surv"));
    ASSERT_EQ(rc2, 0) << out2;
    EXPECT_EQ(lines(dir / "surv" / "S_2.qids"), (std::vector<std::string>{"a"}));
    EXPECT_TRUE(is_png(dir / "surv" / "first_rank.png"));
}

TEST(CliDebias, GenderAndQueryGender) {
    auto dir = temp_dir();
    write(dir / "w.txt", "she,f\nhe,m\n");
    write(dir / "c.tsv", "d1\tshe she he\n");
    write(dir / "t.tsv", "q1\tshe\n");
    auto [rc, out] = run(cli() + " debias gender --quiet --wordlist " + q(dir / "w.txt") + " --corpus " +
                         q(dir / "c.tsv") + " --output " + q(dir / "b"));
    ASSERT_EQ(rc, 0) << out;
    EXPECT_EQ(lines(dir / "b.tc.tsv").back(), "d1\t1\t2\t1");
    auto [rc2, out2] = run(cli() + " debias query-gender --wordlist " + q(dir / "w.txt") +
                           " --topics " + q(dir / "t.tsv") + " --output " + q(dir / "l.tsv"));
    ASSERT_EQ(rc2, 0) << out2;
    EXPECT_EQ(lines(dir / "l.tsv"), (std::vector<std::string>{"q1\tf"}));
}

TEST(CliDebias, BadInputExitsWithOneAndNamesTheLine) {
    auto dir = temp_dir();
    auto in = write(dir / "bad.tsv", "d1\tok\nbroken-line\n");
    auto [rc, out] =
        run(cli() + " debias rotate --quiet --corpus " + q(in) + " --output " + q(dir / "o.tsv"));
    EXPECT_EQ(rc, 1);
    EXPECT_NE(out.find("plumb: error:"), std::string::npos) << out;
    EXPECT_NE(out.find("bad.tsv:2"), std::string::npos) << out;
    EXPECT_FALSE(std::filesystem::exists(dir / "o.tsv"));
    auto [rc2, out2] = run(cli() + " debias rotate --quiet --output " + q(dir / "o.tsv"));
    EXPECT_EQ(rc2, 1) << out2;  // neither --corpus nor --triples
}

TEST(CliDebias, LiwcWritesCategoryVectorsAndRejectsABadDictionary) {
    auto dir = temp_dir();
    write(dir / "t.dic", "%\n1\tposemo\n2\tsocial\n%\nhapp*\t1\nfriend\t2\n");
    write(dir / "c.tsv", "d1\thappy friend x y\n");
    auto [rc, out] = run(cli() + " debias liwc --quiet --dic " + q(dir / "t.dic") + " --corpus " +
                         q(dir / "c.tsv") + " --output " + q(dir / "phi.tsv"));
    ASSERT_EQ(rc, 0) << out;
    EXPECT_EQ(lines(dir / "phi.tsv"),
              (std::vector<std::string>{"docid\tposemo\tsocial", "d1\t0.25\t0.25"}));
    write(dir / "bad.dic", "%\n1\tposemo\n%\nlike\t(02 134)125/464\n");  // conditional entry
    auto [rc2, out2] = run(cli() + " debias liwc --quiet --dic " + q(dir / "bad.dic") + " --corpus " +
                           q(dir / "c.tsv") + " --output " + q(dir / "phi2.tsv"));
    EXPECT_EQ(rc2, 1);
    EXPECT_NE(out2.find("bad.dic:4"), std::string::npos) << out2;
}

TEST(CliDebias, BalanceReportsFemaleAndMaleCountsAndOneToOneEqualisesThem) {
    // Category a: "aa", b: "bb". phi: f1 (1, 0), f2 (0, 1), m1 (10/11, 1/11), m2 (5/6, 1/6).
    // Best matches: f1 -> m1, f2 -> m2, m1 -> f1, m2 -> f1 (5/sqrt 26 = 0.981 > 1/sqrt 26):
    // pairs by cosine (f1,m1) 0.995, (f1,m2) 0.981, (f2,m2) 0.196. Ratio 0.75 of 4 training
    // lines: T = 3: (f1,m1) adds f1 and m1, (f1,m2) adds m2 only: f 1, m 2.
    // One-to-one: (f1,m1), then (f2,m2), which would exceed T: f 1, m 1.
    auto dir = temp_dir();
    write(dir / "t.dic", "%\n1\ta\n2\tb\n%\naa\t1\nbb\t2\n");
    write(dir / "pairs.tsv",
          "f1\tq f1\taa\nf2\tq f2\tbb\nm1\tq m1\taa aa aa aa aa aa aa aa aa aa bb\n"
          "m2\tq m2\taa aa aa aa aa bb\n");
    write(dir / "g.tsv", "f1\tf\nf2\tf\nm1\tm\nm2\tm\n");
    write(dir / "train.tsv", "a\tb\nc\td\ne\tf\ng\th\n");
    const std::string base = cli() + " debias balance --quiet --pairs " + q(dir / "pairs.tsv") +
                             " --query-gender " + q(dir / "g.tsv") + " --dic " +
                             q(dir / "t.dic") + " --train " + q(dir / "train.tsv") +
                             " --ratios 0.75";
    auto [rc, out] = run(base + " --output " + q(dir / "best"));
    ASSERT_EQ(rc, 0) << out;
    EXPECT_NE(out.find("target 3, added 3 (f 1, m 2)"), std::string::npos) << out;
    auto [rc1, out1] = run(base + " --one-to-one --output " + q(dir / "one"));
    ASSERT_EQ(rc1, 0) << out1;
    EXPECT_NE(out1.find("target 3, added 2 (f 1, m 1)"), std::string::npos) << out1;
    // --negatives: each added triple takes its own query's negative; a malformed negatives
    // file names its line.
    write(dir / "triples.tsv", "a\tb\tx\nc\td\tx\ne\tf\tx\ng\th\tx\n");
    write(dir / "neg.tsv", "f1\tn1\tneg f1\nf2\tn2\tneg f2\nm1\tn3\tneg m1\nm2\tn4\tneg m2\n");
    const std::string tri = cli() + " debias balance --quiet --pairs " + q(dir / "pairs.tsv") +
                            " --query-gender " + q(dir / "g.tsv") + " --dic " + q(dir / "t.dic") +
                            " --train " + q(dir / "triples.tsv") + " --ratios 0.5 --one-to-one";
    auto [rc2, out2] = run(tri + " --negatives " + q(dir / "neg.tsv") + " --output " +
                           q(dir / "neg"));
    ASSERT_EQ(rc2, 0) << out2;
    EXPECT_NE(out2.find("the pair's own query's"), std::string::npos) << out2;
    const auto added = slurp(dir / "neg" / "train_r0.5.tsv");
    EXPECT_NE(added.find("q f1\taa\tneg f1\n"), std::string::npos) << added;
    EXPECT_NE(added.find("q m1\taa aa aa aa aa aa aa aa aa aa bb\tneg m1\n"), std::string::npos)
        << added;
    write(dir / "neg_bad.tsv", "f1\tn1\tneg f1\nm1\n");
    auto [rc3, out3] = run(tri + " --negatives " + q(dir / "neg_bad.tsv") + " --output " +
                           q(dir / "neg_bad"));
    EXPECT_EQ(rc3, 1);
    EXPECT_NE(out3.find("neg_bad.tsv:2"), std::string::npos) << out3;
}
