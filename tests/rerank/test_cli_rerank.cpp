// CLI smoke tests of `plumb rerank`, `plumb encode` and `plumb dense-search` on the tiny
// reference models (expected values from tests/rerank/reference/expected.json, computed in
// numpy independently of plumb).

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "plugin/text_io.hpp"
#include "tests/support/cli.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/trec_run.hpp"

namespace fs = std::filesystem;

namespace {

const fs::path kRef = fs::path(PLUMB_SOURCE_DIR) / "tests/rerank/reference";

/// A scratch folder (tests/support/temp_dir.hpp) with this file's name prefix.
struct TempDir : plumb::test::TempDir {
    TempDir() : plumb::test::TempDir("plumb_test_cli_rerank") {}
};

/// `plumb <args>` with its output in `log` (tests/support/cli.hpp).
constexpr auto& run = plumb::test::run_plumb_to;

/// The lines of a run file as written (tests/support/trec_run.hpp).
constexpr auto& read_run = plumb::test::read_run_lines;

struct Fixture {
    TempDir tmp;
    std::vector<std::string> queries, passages;
    std::vector<double> logits;  // tiny_bert_cat1, pair i
    std::vector<std::string> singles;

    Fixture() {
        auto j = nlohmann::json::parse(plumb::read_file(kRef / "expected.json"));
        for (const auto& c : j.at("models").at("tiny_bert_cat1")) {
            if (c.at("kind") == "pair") {
                queries.push_back(c.at("text")[0]);
                passages.push_back(c.at("text")[1]);
                logits.push_back(c.at("logits")[0]);
            } else {
                singles.push_back(c.at("text")[0]);
            }
        }
        std::ofstream corpus(tmp.path / "corpus.tsv");
        for (std::size_t i = 0; i < passages.size(); ++i)
            corpus << "p" << i << "\t" << passages[i] << "\n";
        for (std::size_t i = 0; i < singles.size(); ++i)
            corpus << "s" << i << "\t" << singles[i] << "\n";
        std::ofstream topics(tmp.path / "topics.tsv");
        for (std::size_t i = 0; i < queries.size(); ++i)
            topics << "q" << i << "\t" << queries[i] << "\n";
        // Each query: its own passage first, then s0 (beyond depth 1), then s1.
        std::ofstream runf(tmp.path / "bm25.run");
        for (std::size_t i = 0; i < queries.size(); ++i) {
            runf << "q" << i << " Q0 p" << i << " 1 9.5 bm25\n";
            runf << "q" << i << " Q0 s0 2 8.5 bm25\n";
            runf << "q" << i << " Q0 s1 3 7.5 bm25\n";
        }
    }
};

}  // namespace

TEST(CliRerank, CrossEncoderRescoresHeadKeepsTail) {
    Fixture f;
    const auto out = f.tmp.path / "cat.run";
    ASSERT_EQ(run("rerank --corpus " + (f.tmp.path / "corpus.tsv").string() + " --topics " +
                      (f.tmp.path / "topics.tsv").string() + " --run " +
                      (f.tmp.path / "bm25.run").string() + " --model " +
                      (kRef / "tiny_bert_cat1").string() +
                      " --type cat --depth 1 --batch 2 --threads 1 --quiet --output " + out.string(),
                  f.tmp.path / "log"),
              0)
        << plumb::read_file(f.tmp.path / "log");
    auto lines = read_run(out);
    ASSERT_EQ(lines.size(), 12u);
    for (std::size_t i = 0; i < 4; ++i) {
        const auto& head = lines[i * 3];
        EXPECT_EQ(head.qid, "q" + std::to_string(i));
        EXPECT_EQ(head.docid, "p" + std::to_string(i));
        EXPECT_EQ(head.rank, 1);
        EXPECT_NEAR(head.score, f.logits[i], 1e-5);
        EXPECT_EQ(lines[i * 3 + 1].docid, "s0");
        EXPECT_EQ(lines[i * 3 + 2].docid, "s1");
        EXPECT_LT(lines[i * 3 + 1].score, head.score);
        EXPECT_LT(lines[i * 3 + 2].score, lines[i * 3 + 1].score);
    }
}

TEST(CliRerank, BadInputFailsWithMessage) {
    Fixture f;
    const std::string common = " --topics " + (f.tmp.path / "topics.tsv").string() + " --run " +
                               (f.tmp.path / "bm25.run").string() + " --output " +
                               (f.tmp.path / "x.run").string() + " --quiet";
    {  // a run document missing from the corpus
        std::ofstream c(f.tmp.path / "small.tsv");
        c << "p0\t" << f.passages[0] << "\n";
    }
    EXPECT_EQ(run("rerank --corpus " + (f.tmp.path / "small.tsv").string() + " --model " +
                      (kRef / "tiny_bert_cat1").string() + " --type cat" + common,
                  f.tmp.path / "log"),
              1);
    auto log = plumb::read_file(f.tmp.path / "log");
    EXPECT_NE(log.find("plumb: error:"), std::string::npos) << log;
    EXPECT_NE(log.find("'s0'"), std::string::npos) << log;
    // A model without a classifier as a cross-encoder.
    EXPECT_EQ(run("rerank --corpus " + (f.tmp.path / "corpus.tsv").string() + " --model " +
                      (kRef / "tiny_bert_base").string() + " --type cat" + common,
                  f.tmp.path / "log"),
              1);
    EXPECT_NE(plumb::read_file(f.tmp.path / "log").find("classifier"), std::string::npos);
    EXPECT_FALSE(fs::exists(f.tmp.path / "x.run"));
    // Unknown type.
    EXPECT_NE(run("rerank --corpus " + (f.tmp.path / "corpus.tsv").string() + " --model " +
                      (kRef / "tiny_bert_cat1").string() + " --type nope" + common,
                  f.tmp.path / "log"),
              0);
}

TEST(CliRerank, QuantizeInt8AndBadValues) {
    Fixture f;
    const auto out = f.tmp.path / "int8.run";
    const std::string common = "rerank --corpus " + (f.tmp.path / "corpus.tsv").string() +
                               " --topics " + (f.tmp.path / "topics.tsv").string() + " --run " +
                               (f.tmp.path / "bm25.run").string() + " --model " +
                               (kRef / "tiny_bert_cat1").string() + " --depth 3 --quiet";
    ASSERT_EQ(run(common + " --type cat --quantize int8 --output " + out.string(),
                  f.tmp.path / "log"),
              0)
        << plumb::read_file(f.tmp.path / "log");
    auto lines = read_run(out);
    ASSERT_EQ(lines.size(), 12u);
    // int8 scores approximate the reference logits of each query's own passage (the model is
    // 2 x 8: rows of 8 weights, so the tolerance is loose; see rerank/README.md).
    for (const auto& l : lines) {
        if (l.docid[0] != 'p') continue;
        const auto i = static_cast<std::size_t>(std::stoi(l.docid.substr(1)));
        EXPECT_NEAR(l.score, f.logits[i], 0.05) << l.qid << " " << l.docid;
    }
    // A query's int8 lines do not depend on the other queries of the topics file (activations
    // are quantised per forward pass, and each query has its own passes): re-ranked alone, every
    // query gives the lines it has in the run of all queries, byte for byte.
    const auto all_text = plumb::read_file(out);
    std::istringstream topics(plumb::read_file(f.tmp.path / "topics.tsv"));
    std::string topic;
    std::size_t alone = 0;
    while (std::getline(topics, topic)) {
        const std::string qid = topic.substr(0, topic.find('\t'));
        const auto one = f.tmp.path / ("topic-" + qid + ".tsv");
        std::ofstream(one) << topic << "\n";
        const auto one_run = f.tmp.path / ("bm25-" + qid + ".run");
        {
            std::istringstream bm25(plumb::read_file(f.tmp.path / "bm25.run"));
            std::ofstream keep(one_run);
            for (std::string l; std::getline(bm25, l);)
                if (l.rfind(qid + " ", 0) == 0) keep << l << "\n";
        }
        const auto one_out = f.tmp.path / ("int8-" + qid + ".run");
        const std::string solo = "rerank --corpus " + (f.tmp.path / "corpus.tsv").string() +
                                 " --topics " + one.string() + " --run " + one_run.string() +
                                 " --model " +
                                 (kRef / "tiny_bert_cat1").string() + " --depth 3 --quiet";
        ASSERT_EQ(run(solo + " --type cat --quantize int8 --output " + one_out.string(),
                      f.tmp.path / "log"),
                  0)
            << plumb::read_file(f.tmp.path / "log");
        std::istringstream all_lines(all_text);
        std::string line, expected;
        while (std::getline(all_lines, line))
            if (line.rfind(qid + " ", 0) == 0) expected += line + "\n";
        ASSERT_FALSE(expected.empty()) << qid;
        EXPECT_EQ(plumb::read_file(one_out), expected) << qid;
        ++alone;
    }
    EXPECT_EQ(alone, 4u);
    // Bad values: CLI11 rejects other names; a quantised type other than cat is an error.
    EXPECT_NE(run(common + " --type cat --quantize int4 --output " + out.string() + "2",
                  f.tmp.path / "log"),
              0);
    EXPECT_NE(plumb::read_file(f.tmp.path / "log").find("int4"), std::string::npos);
    EXPECT_EQ(run(common + " --type dot --quantize int8 --output " + out.string() + "3",
                  f.tmp.path / "log"),
              1);
    EXPECT_NE(plumb::read_file(f.tmp.path / "log").find("--quantize applies to --type cat only"),
              std::string::npos)
        << plumb::read_file(f.tmp.path / "log");
    EXPECT_FALSE(fs::exists(f.tmp.path / "int8.run3"));
}

TEST(CliRerank, EncodeDenseSearchAndFusion) {
    Fixture f;
    const auto vec = f.tmp.path / "vec";
    ASSERT_EQ(run("encode --corpus " + (f.tmp.path / "corpus.tsv").string() + " --model " +
                      (kRef / "tiny_bert_base").string() + " --output " + vec.string() +
                      " --similarity cosine --chunk 3 --factory HNSW8,Flat --quiet",
                  f.tmp.path / "log"),
              0)
        << plumb::read_file(f.tmp.path / "log");
    EXPECT_TRUE(fs::exists(vec / "index.faiss"));
    EXPECT_TRUE(fs::exists(vec / "chunk-000002.vec"));  // 7 passages in chunks of 3
    // Queries identical to passages: cosine 1 with themselves, the maximum.
    {
        std::ofstream t(f.tmp.path / "same.tsv");
        for (std::size_t i = 0; i < f.singles.size(); ++i)
            t << "t" << i << "\t" << f.singles[i] << "\n";
    }
    const auto out = f.tmp.path / "dense.run";
    ASSERT_EQ(run("dense-search --vectors " + vec.string() + " --model " +
                      (kRef / "tiny_bert_base").string() + " --topics " +
                      (f.tmp.path / "same.tsv").string() + " --k 3 --ef-search 32 --quiet --output " +
                      out.string(),
                  f.tmp.path / "log"),
              0)
        << plumb::read_file(f.tmp.path / "log");
    auto lines = read_run(out);
    ASSERT_EQ(lines.size(), 9u);
    for (std::size_t i = 0; i < f.singles.size(); ++i) {
        EXPECT_EQ(lines[i * 3].qid, "t" + std::to_string(i));
        EXPECT_EQ(lines[i * 3].docid, "s" + std::to_string(i));
        EXPECT_NEAR(lines[i * 3].score, 1.0, 1e-5);
    }
    // Fused with a run holding one other document per query: RRF keeps both.
    {
        std::ofstream r(f.tmp.path / "other.run");
        for (std::size_t i = 0; i < f.singles.size(); ++i) r << "t" << i << " Q0 p0 1 3.0 bm25\n";
    }
    ASSERT_EQ(
        run("dense-search --vectors " + vec.string() + " --model " +
                (kRef / "tiny_bert_base").string() + " --topics " +
                (f.tmp.path / "same.tsv").string() + " --k 3 --quiet --fuse-bm25 " +
                (f.tmp.path / "other.run").string() + " --fusion rrf --output " + out.string(),
            f.tmp.path / "log"),
        0)
        << plumb::read_file(f.tmp.path / "log");
    lines = read_run(out);
    ASSERT_FALSE(lines.empty());
    // t0: s0 (dense rank 1) and p0 (bm25 rank 1) tie at 1/61: docid order puts p0 first.
    EXPECT_EQ(lines[0].qid, "t0");
    EXPECT_NEAR(lines[0].score, 1.0 / 61, 1e-6);
    // Encoding again resumes: nothing new to do, folder complete.
    ASSERT_EQ(run("encode --corpus " + (f.tmp.path / "corpus.tsv").string() + " --model " +
                      (kRef / "tiny_bert_base").string() + " --output " + vec.string() +
                      " --similarity cosine --chunk 3 --no-index --quiet",
                  f.tmp.path / "log"),
              0);
    EXPECT_NE(plumb::read_file(f.tmp.path / "log").find("(7 from an earlier run)"),
              std::string::npos)
        << plumb::read_file(f.tmp.path / "log");
    // Another pooling into the same folder is refused.
    EXPECT_EQ(run("encode --corpus " + (f.tmp.path / "corpus.tsv").string() + " --model " +
                      (kRef / "tiny_bert_base").string() + " --output " + vec.string() +
                      " --similarity cosine --pooling mean --quiet",
                  f.tmp.path / "log"),
              1);
}
