// `plumb audit --mats-model` (LibTorch CLI module): the MATS it reports for a TK model is the one
// `plumb debias mats` writes for the same model, passages and options (the value itself is
// tested against hand-computed ATS in test_mats.cpp; here the hook between the two commands).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

#include "debias_test_util.hpp"

namespace {

int plumb_cli(const std::string& args, const debias_test::fs::path& dir) {
    const std::string cmd = std::string(PLUMB_CLI_PATH) + " " + args + " >" +
                            (dir / "stdout.txt").string() + " 2>" + (dir / "stderr.txt").string();
    return WEXITSTATUS(std::system(cmd.c_str()));
}

}  // namespace

TEST(AuditMatsCli, MatsModelEqualsDebiasMats) {
    auto dir = debias_test::temp_dir();
    debias_test::write(dir / "glove.txt",
                       "the 0.1 0.2 0.3 0.4\ncat 1 0 0 0\nsat 0 1 0 0\nmat 0 0 1 0\non 0 0 0 1\n");
    ASSERT_EQ(plumb_cli("tk-init --embeddings " + (dir / "glove.txt").string() + " --output " +
                            (dir / "model").string() +
                            " --layers 1 --heads 2 --head-dim 0 --ff-dim 3 --quiet --seed 3",
                        dir),
              0)
        << debias_test::slurp(dir / "stderr.txt");
    const auto corpus = debias_test::write(dir / "corpus.tsv",
                                           "d1\tthe cat sat on the mat the cat\n"
                                           "d2\tcat on the mat sat the cat on\n"
                                           "d3\tthe mat the cat the sat\n");
    ASSERT_EQ(plumb_cli("debias mats --quiet --model " + (dir / "model").string() + " --corpus " +
                            corpus.string() + " --seed 5 --output " + (dir / "m").string(),
                        dir),
              0)
        << debias_test::slurp(dir / "stderr.txt");
    const auto expected = nlohmann::json::parse(debias_test::slurp(dir / "m.json"))["mats"];
    ASSERT_TRUE(expected.is_number());
    const auto run = debias_test::write(dir / "a.run", "q1 Q0 d1 1 3 r\n");
    ASSERT_EQ(plumb_cli("audit --quiet --run " + run.string() + " --name A --mats-model A," +
                            (dir / "model").string() + " --mats-corpus " + corpus.string() +
                            " --mats-seed 5 -o " + (dir / "out").string(),
                        dir),
              0)
        << debias_test::slurp(dir / "stderr.txt");
    const auto audit = nlohmann::json::parse(debias_test::slurp(dir / "out" / "audit.json"));
    EXPECT_DOUBLE_EQ(audit["position"][0]["mats"].get<double>(), expected.get<double>());
    // --mats-model without --mats-corpus is a configuration error naming the option.
    EXPECT_EQ(plumb_cli("audit --quiet --run " + run.string() + " --name A --mats-model A," +
                            (dir / "model").string() + " -o " + (dir / "out2").string(),
                        dir),
              1);
    EXPECT_NE(debias_test::slurp(dir / "stderr.txt").find("--mats-corpus"), std::string::npos);
    debias_test::fs::remove_all(dir);
}

// A BERT-DOT folder (Hugging Face, no plumb-tk config): debias mats detects it, contextualizes
// each passage without a query (its WordPiece tokens' last hidden states; the vectors are tested
// against the numpy reference in tests/rerank/test_bert.cpp) and reports a MATS; audit
// --mats-model computes the same; "--mats NAME,n/a" marks a run whose model has no passage-term
// vectors (BM25 here): shown without a value, not listed as a missing input.
TEST(AuditMatsCli, BertDotModelAndNotApplicableRuns) {
    auto dir = debias_test::temp_dir();
    const std::string model =
        (debias_test::fs::path(PLUMB_SOURCE_DIR) / "tests/rerank/reference/tiny_bert_base")
            .string();
    const auto corpus = debias_test::write(dir / "corpus.tsv",
                                           "d1\tthe cat sat on the mat . the cat\n"
                                           "d2\tcat on the mat sat the cat on\n"
                                           "d3\tthe mat the cat the sat\n");
    ASSERT_EQ(plumb_cli("debias mats --quiet --model " + model + " --corpus " + corpus.string() +
                            " --seed 5 --output " + (dir / "m").string(),
                        dir),
              0)
        << debias_test::slurp(dir / "stderr.txt");
    const auto report = nlohmann::json::parse(debias_test::slurp(dir / "m.json"));
    EXPECT_EQ(report["passages"].get<int>(), 3);
    ASSERT_TRUE(report["mats"].is_number()) << report.dump();
    // "--model-type tk" on the same folder fails with a message naming its config.json
    EXPECT_EQ(plumb_cli("debias mats --quiet --model-type tk --model " + model + " --corpus " +
                            corpus.string() + " --output " + (dir / "m2").string(),
                        dir),
              1);
    EXPECT_NE(debias_test::slurp(dir / "stderr.txt").find("config.json"), std::string::npos);
    // a cross-encoder (architectures: BertForSequenceClassification) is refused, naming the file
    const std::string cat =
        (debias_test::fs::path(PLUMB_SOURCE_DIR) / "tests/rerank/reference/tiny_bert_cat1")
            .string();
    EXPECT_EQ(plumb_cli("debias mats --quiet --model " + cat + " --corpus " + corpus.string() +
                            " --output " + (dir / "m3").string(),
                        dir),
              1);
    EXPECT_NE(debias_test::slurp(dir / "stderr.txt").find("cross-encoder"), std::string::npos);
    EXPECT_FALSE(debias_test::fs::exists(dir / "m3.json"));
    // a batch size of 0 is rejected at parsing (it would never advance)
    EXPECT_EQ(plumb_cli("debias mats --quiet --batch 0 --model " + model + " --corpus " +
                            corpus.string() + " --output " + (dir / "m4").string(),
                        dir),
              2);
    // a config.json that is not JSON is named
    debias_test::fs::create_directories(dir / "broken");
    debias_test::write(dir / "broken" / "config.json", "{not json");
    EXPECT_EQ(plumb_cli("debias mats --quiet --model " + (dir / "broken").string() +
                            " --corpus " + corpus.string() + " --output " + (dir / "m5").string(),
                        dir),
              1);
    EXPECT_NE(debias_test::slurp(dir / "stderr.txt").find("broken/config.json"),
              std::string::npos);
    const auto run = debias_test::write(dir / "a.run", "q1 Q0 d1 1 3 r\n");
    ASSERT_EQ(plumb_cli("audit --quiet --run " + run.string() + " --name DOT --run " +
                            run.string() + " --name BM25 --mats-model DOT," + model +
                            " --mats BM25,n/a --mats-corpus " + corpus.string() +
                            " --mats-seed 5 -o " + (dir / "out").string(),
                        dir),
              0)
        << debias_test::slurp(dir / "stderr.txt");
    const auto audit = nlohmann::json::parse(debias_test::slurp(dir / "out" / "audit.json"));
    EXPECT_DOUBLE_EQ(audit["position"][0]["mats"].get<double>(), report["mats"].get<double>());
    EXPECT_TRUE(audit["position"][1]["mats"].is_null()) << audit["position"].dump();
    const std::string md = debias_test::slurp(dir / "out" / "audit.md");
    EXPECT_EQ(md.find("MATS report of run BM25"), std::string::npos) << md;
    debias_test::fs::remove_all(dir);
}
