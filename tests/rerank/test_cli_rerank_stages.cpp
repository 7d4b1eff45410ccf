// `plumb rerank --type torchscript` and `--type tk` smoke tests (the TorchScript model's scores
// are hand-computable: Σ (id + 1) over the real tokens, with token ids from the numpy
// reference's own tokenization in tests/rerank/reference/expected.json).

#include <gtest/gtest.h>
#include <torch/script.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "plugin/text_io.hpp"
#include "rerank/tk_model.hpp"
#include "rerank/tk_stage.hpp"
#include "tests/support/cli.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/trec_run.hpp"

namespace fs = std::filesystem;

namespace {

const fs::path kRef = fs::path(PLUMB_SOURCE_DIR) / "tests/rerank/reference";

/// A scratch folder (tests/support/temp_dir.hpp) with this file's name prefix.
struct TempDir : plumb::test::TempDir {
    TempDir() : plumb::test::TempDir("plumb_test_cli_stages") {}
};

/// `plumb <args>` with its output in `log` (tests/support/cli.hpp).
constexpr auto& run = plumb::test::run_plumb_to;

/// The lines of a run file as written (tests/support/trec_run.hpp).
constexpr auto& read_run = plumb::test::read_run_lines;

struct Inputs {
    TempDir tmp;
    std::vector<std::string> queries, passages;
    std::vector<double> id_sums;  // Σ (id + 1) of [CLS] q [SEP] p [SEP]

    Inputs() {
        auto j = nlohmann::json::parse(plumb::read_file(kRef / "expected.json"));
        for (const auto& c : j.at("models").at("tiny_bert_cat1")) {
            if (c.at("kind") != "pair") continue;
            queries.push_back(c.at("text")[0]);
            passages.push_back(c.at("text")[1]);
            double s = 0;
            for (auto id : c.at("input_ids")) s += id.get<double>() + 1;
            id_sums.push_back(s);
        }
        std::ofstream corpus(tmp.path / "corpus.tsv");
        for (std::size_t i = 0; i < passages.size(); ++i)
            corpus << "p" << i << "\t" << passages[i] << "\n";
        std::ofstream topics(tmp.path / "topics.tsv");
        for (std::size_t i = 0; i < queries.size(); ++i)
            topics << "q" << i << "\t" << queries[i] << "\n";
        // Query i: all four passages, p_i last in the input run.
        std::ofstream runf(tmp.path / "in.run");
        for (std::size_t i = 0; i < queries.size(); ++i) {
            int rank = 1;
            for (std::size_t k = 1; k <= passages.size(); ++k) {
                const auto p = (i + k) % passages.size();
                runf << "q" << i << " Q0 p" << p << " " << rank << " " << 10 - rank << " bm25\n";
                ++rank;
            }
        }
    }
    std::string common(const fs::path& out) const {
        return " --corpus " + (tmp.path / "corpus.tsv").string() + " --topics " +
               (tmp.path / "topics.tsv").string() + " --run " + (tmp.path / "in.run").string() +
               " --quiet --output " + out.string();
    }
};

}  // namespace

TEST(CliRerankStages, TorchScriptScoresAreHandComputable) {
    Inputs in;
    const auto model_dir = in.tmp.path / "ts";
    fs::create_directories(model_dir);
    fs::copy_file(kRef / "tiny_bert_cat1/vocab.txt", model_dir / "vocab.txt");
    torch::jit::Module m("plumb_test_sum");
    m.define(R"(
def forward(self, input_ids, attention_mask, token_type_ids):
    return ((input_ids + 1) * attention_mask).sum(1).float()
)");
    m.save((model_dir / "model.pt").string());
    const auto out = in.tmp.path / "ts.run";
    ASSERT_EQ(run("rerank --type torchscript --model " + model_dir.string() +
                      " --depth 4 --batch 3" + in.common(out),
                  in.tmp.path / "log"),
              0)
        << plumb::read_file(in.tmp.path / "log");
    auto lines = read_run(out);
    ASSERT_EQ(lines.size(), 16u);
    for (const auto& l : lines) {
        // Pair (q_i, p_i) scores Σ (id + 1) of the reference's own token ids.
        if (l.qid.substr(1) == l.docid.substr(1)) {
            EXPECT_DOUBLE_EQ(l.score, in.id_sums[std::stoul(l.qid.substr(1))]) << l.qid;
        }
    }
    for (std::size_t i = 0; i + 1 < lines.size(); ++i) {
        if (lines[i].qid == lines[i + 1].qid) {
            EXPECT_GE(lines[i].score, lines[i + 1].score);
        }
    }
}

TEST(CliRerankStages, TkRerankKeepsTailBelowDepth) {
    Inputs in;
    namespace pr = plumb::rerank;
    pr::TkConfig c;
    c.embedding_dim = 8;
    c.layers = 1;
    c.heads = 2;
    c.head_dim = 4;
    c.ff_dim = 8;
    std::vector<std::string> words = {"the", "cat", "sat", "on",  "mat",   "what",  "is",   "dog",
                                      "a",   "big", "red", "ran", "hello", "world", "fish", "swim"};
    auto model = pr::TkModel::create(c, pr::TkVocabulary(words), {}, 3);
    const auto dir = in.tmp.path / "tk";
    model.save(dir);
    const auto out = in.tmp.path / "tk.run";
    ASSERT_EQ(run("rerank --type tk --model " + dir.string() + " --depth 3" + in.common(out),
                  in.tmp.path / "log"),
              0)
        << plumb::read_file(in.tmp.path / "log");
    auto lines = read_run(out);
    ASSERT_EQ(lines.size(), 16u);
    auto stage = pr::make_tk_stage(dir, {3, 64, 0, "tk", ""});
    for (std::size_t q = 0; q < 4; ++q) {
        // The input's 4th candidate (beyond depth 3) stays 4th, below the re-scored head.
        EXPECT_EQ(lines[q * 4 + 3].docid, "p" + std::to_string(q));
        EXPECT_LT(lines[q * 4 + 3].score, lines[q * 4 + 2].score);
        // The head carries the stage's scores (the CLI plumbs text and order correctly).
        plumb::Query query{"q" + std::to_string(q), in.queries[q]};
        std::vector<plumb::Candidate> cands;
        for (std::size_t k = 1; k <= 3; ++k) {
            const auto p = (q + k) % 4;
            cands.push_back({"p" + std::to_string(p), 0, in.passages[p], {}});
        }
        auto scores = stage->score(query, cands);
        for (std::size_t r = 0; r < 3; ++r) {
            const auto& l = lines[q * 4 + r];
            for (std::size_t k = 0; k < 3; ++k) {
                if (cands[k].docid == l.docid) {
                    EXPECT_NEAR(l.score, scores[k], 1e-5);
                }
            }
        }
    }
}
