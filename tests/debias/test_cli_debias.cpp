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
