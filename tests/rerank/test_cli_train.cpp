// `plumb train` end to end on a tiny generated corpus: every objective trains from the CLI and
// writes a model the stages load; bad inputs fail with the file and line.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "plugin/text_io.hpp"
#include "rerank/bi_encoder.hpp"
#include "rerank/cross_encoder.hpp"
#include "rerank/tk_model.hpp"
#include "tests/rerank/fixtures.hpp"
#include "tests/support/cli.hpp"
#include "tests/test_tmp.hpp"

namespace fs = std::filesystem;
using json = nlohmann::json;
using namespace plumb::rerank;
using plumb::test::copy_reference_model;
using plumb::test::write_text;

namespace {

/// `plumb <args>` with its output in `log` (tests/support/cli.hpp).
constexpr auto& run = plumb::test::run_plumb_to;

/// A generated corpus, its index, a BM25 run, a tiny TK init and BERT triples, made once.
class CliTrain : public ::testing::Test {
protected:
    static fs::path dir;

    static void SetUpTestSuite() {
        dir = plumb::test::process_dir("plumb_test_cli_train_");
        fs::create_directories(dir);
        auto log = dir / "setup.log";
        ASSERT_EQ(run("generate --quiet --output " + (dir / "gen").string() +
                          " --passages 300 --queries 20 --vocab 800 --seed 5",
                      log),
                  0)
            << plumb::read_file(log);
        ASSERT_EQ(run("index --quiet --corpus " + (dir / "gen" / "corpus.tsv").string() +
                          " --index " + (dir / "idx").string(),
                      log),
                  0)
            << plumb::read_file(log);
        ASSERT_EQ(run("search --quiet --index " + (dir / "idx").string() + " --topics " +
                          (dir / "gen" / "topics.tsv").string() + " --output " +
                          (dir / "bm25.run").string() + " --k 20",
                      log),
                  0)
            << plumb::read_file(log);
        // word vectors for the corpus words (deterministic, 8-d), then tk-init
        std::set<std::string> words;
        {
            std::istringstream in(plumb::read_file(dir / "gen" / "corpus.tsv"));
            std::string line;
            while (std::getline(in, line)) {
                auto tab = line.find('\t');
                std::istringstream ws(line.substr(tab + 1));
                std::string w;
                while (ws >> w) words.insert(w);
            }
        }
        std::string emb;
        unsigned h = 1;
        for (const auto& w : words) {
            emb += w;
            for (int k = 0; k < 8; ++k) {
                h = h * 1103515245u + 12345u;
                emb += " " + std::to_string(static_cast<double>((h >> 8) % 2001) / 1000.0 - 1.0);
            }
            emb += "\n";
        }
        write_text(dir / "emb.txt", emb);
        ASSERT_EQ(run("tk-init --embeddings " + (dir / "emb.txt").string() + " --output " +
                          (dir / "tk_init").string() +
                          " --layers 1 --heads 2 --head-dim 4 --ff-dim 8 --max-passage-length 64",
                      log),
                  0)
            << plumb::read_file(log);
        // text triples in the tiny BERT vocabulary, with gender words for IBBR
        write_text(dir / "triples.tsv",
                   plumb::test::triples_tsv(plumb::test::kTinyBertGenderedTriples, 16));
        write_text(dir / "gender.txt", plumb::test::kTinyGenderWords);
        copy_reference_model("tiny_bert_cat1", dir);
        copy_reference_model("tiny_bert_base", dir);
    }
    static void TearDownTestSuite() { fs::remove_all(dir); }

    static std::string common_qrels() {
        return " --qrels " + (dir / "gen" / "qrels.txt").string() + " --run " +
               (dir / "bm25.run").string() + " --topics " + (dir / "gen" / "topics.tsv").string() +
               " --index " + (dir / "idx").string();
    }
};
fs::path CliTrain::dir;

TEST_F(CliTrain, TkHingeFromQrelsAndRunWithValidation) {
    auto out = dir / "tk_hinge";
    auto log = dir / "tk_hinge.log";
    ASSERT_EQ(run("train --quiet --model tk --init " + (dir / "tk_init").string() + " --output " +
                      out.string() + common_qrels() +
                      " --negatives 2 --sample-depth 20 --batch 4 --steps 12 --threads 1"
                      " --lr-group kernels=0.01 --warmup 2 --clip 5 --validate-every 6"
                      " --patience 3 --select-metric mrr --tune-depths 5,10,20 --val-topics " +
                      (dir / "gen" / "topics.tsv").string() + " --val-qrels " +
                      (dir / "gen" / "qrels.txt").string() + " --val-run " +
                      (dir / "bm25.run").string() + " --val-depth 20 --log-every 3",
                  log),
              0)
        << plumb::read_file(log);
    auto text = plumb::read_file(log);
    EXPECT_NE(text.find("12 steps"), std::string::npos) << text;
    EXPECT_NE(text.find("best validation at step"), std::string::npos) << text;
    EXPECT_NE(text.find("tuned re-rank depth"), std::string::npos) << text;
    EXPECT_NO_THROW(TkModel::load(out / "best"));
    auto report = json::parse(plumb::read_file(out / "report.json"));
    EXPECT_EQ(report["steps"].get<int>(), 12);
    EXPECT_EQ(report["validations"].size(), 2u);
    // the trained model re-ranks through `plumb rerank`
    ASSERT_EQ(
        run("rerank --quiet --type tk --model " + (out / "best").string() + " --index " +
                (dir / "idx").string() + " --topics " + (dir / "gen" / "topics.tsv").string() +
                " --run " + (dir / "bm25.run").string() + " --depth 10 --output " +
                (dir / "tk.run").string(),
            log),
        0)
        << plumb::read_file(log);
    EXPECT_TRUE(fs::exists(dir / "tk.run"));
    // continuing a finished run from last/ with a larger budget
    ASSERT_EQ(run("train --quiet --model tk --output " + out.string() + common_qrels() +
                      " --negatives 2 --sample-depth 20 --batch 4 --steps 15 --threads 1 --resume",
                  log),
              0)
        << plumb::read_file(log);
    EXPECT_NE(plumb::read_file(log).find("resumed from step 12"), std::string::npos)
        << plumb::read_file(log);
}

TEST_F(CliTrain, TkFromIdTriples) {
    // qid <TAB> a judged passage <TAB> a BM25 passage not judged for it
    std::map<std::string, std::set<std::string>> rel;
    std::map<std::string, std::string> first_rel;
    {
        std::istringstream in(plumb::read_file(dir / "gen" / "qrels.txt"));
        std::string q, it, d;
        int g;
        while (in >> q >> it >> d >> g) {
            rel[q].insert(d);
            if (g > 0 && !first_rel.count(q)) first_rel[q] = d;
        }
    }
    std::string ids;
    {
        std::istringstream in(plumb::read_file(dir / "bm25.run"));
        std::string q, q0, d, rank, score, tag;
        std::set<std::string> done;
        while (in >> q >> q0 >> d >> rank >> score >> tag) {
            if (done.count(q) || !first_rel.count(q) || rel[q].count(d)) continue;
            ids += q + "\t" + first_rel[q] + "\t" + d + "\n";
            done.insert(q);
        }
    }
    ASSERT_FALSE(ids.empty());
    write_text(dir / "id_triples.tsv", ids);
    auto out = dir / "tk_ids";
    auto log = dir / "tk_ids.log";
    ASSERT_EQ(
        run("train --quiet --model tk --objective ce --init " + (dir / "tk_init").string() +
                " --output " + out.string() + " --id-triples " + (dir / "id_triples.tsv").string() +
                " --topics " + (dir / "gen" / "topics.tsv").string() + " --index " +
                (dir / "idx").string() + " --batch 4 --steps 4 --threads 1",
            log),
        0)
        << plumb::read_file(log);
    EXPECT_NO_THROW(TkModel::load(out / "best"));
}

TEST_F(CliTrain, CatCeFromTriples) {
    auto out = dir / "cat_ce";
    auto log = dir / "cat_ce.log";
    ASSERT_EQ(
        run("train --quiet --model cat --objective ce --init " + (dir / "tiny_bert_cat1").string() +
                " --output " + out.string() + " --triples " + (dir / "triples.tsv").string() +
                " --batch 4 --accumulation 2 --epochs 2 --lr 1e-3 --max-length 32 --threads 1",
            log),
        0)
        << plumb::read_file(log);
    // 16 triples x 2 epochs / (4 x 2) = 4 optimizer steps
    EXPECT_NE(plumb::read_file(log).find("4 steps, 32 examples"), std::string::npos)
        << plumb::read_file(log);
    EXPECT_NO_THROW(CrossEncoderStage::from_folder(out / "best"));
}

TEST_F(CliTrain, DotContrastiveAndIbbrFromTriples) {
    for (std::string objective : {"contrastive", "ibbr", "hinge"}) {
        auto out = dir / ("dot_" + objective);
        auto log = dir / ("dot_" + objective + ".log");
        std::string extra = objective == "ibbr"
                                ? " --gender-words " + (dir / "gender.txt").string() +
                                      " --fairness ts --lambda 0.5 --learn-lambda"
                                      " --fairness-negatives in-batch --fairness-scores softmax"
                                : "";
        ASSERT_EQ(run("train --quiet --model dot --objective " + objective + " --init " +
                          (dir / "tiny_bert_base").string() + " --output " + out.string() +
                          " --triples " + (dir / "triples.tsv").string() +
                          " --batch 4 --steps 4 --lr 1e-3 --query-max-length 16"
                          " --passage-max-length 24 --threads 1 --log-every 1" +
                          extra,
                      log),
                  0)
            << objective << ": " << plumb::read_file(log);
        EXPECT_NO_THROW(BiEncoder::from_folder(out / "best")) << objective;
        if (objective == "ibbr") {
            auto text = plumb::read_file(log);
            EXPECT_NE(text.find("lambda"), std::string::npos) << text;
            auto trainlog = plumb::read_file(out / "train_log.jsonl");
            EXPECT_NE(trainlog.find("\"fairness\""), std::string::npos) << trainlog;
            EXPECT_NE(trainlog.find("\"fairness_negatives\":\"in-batch\""), std::string::npos)
                << trainlog;
            EXPECT_NE(
                plumb::read_file(out / "report.json").find("\"fairness_negatives\": \"in-batch\""),
                std::string::npos);
            EXPECT_NE(trainlog.find("\"fairness_scores\":\"softmax\""), std::string::npos)
                << trainlog;
            EXPECT_NE(
                plumb::read_file(out / "report.json").find("\"fairness_scores\": \"softmax\""),
                std::string::npos);
        }
    }
}

TEST_F(CliTrain, TkPoeWithLessDataWeakLearner) {
    auto out = dir / "tk_poe";
    auto log = dir / "tk_poe.log";
    ASSERT_EQ(run("train --quiet --model tk --objective poe --alpha 0.1 --weak-strategy less-data"
                  " --weak-fraction 0.5 --init " +
                      (dir / "tk_init").string() + " --output " + out.string() + common_qrels() +
                      " --batch 4 --steps 4 --threads 1",
                  log),
              0)
        << plumb::read_file(log);
    EXPECT_NE(plumb::read_file(log).find("weak learner"), std::string::npos);
    EXPECT_NO_THROW(TkModel::load(out / "weak" / "best"));
    EXPECT_NO_THROW(TkModel::load(out / "best"));
}

TEST_F(CliTrain, TkPoeFewerStepsTruncatedSchedule) {
    // --weak-schedule truncated: the weak learner trains ceil(0.5 · 4) = 2 steps on the robust
    // run's 4-step schedule (multipliers 1, 3/4), not a 2-step one (1, 1/2).
    auto out = dir / "tk_poe_fewer";
    auto log = dir / "tk_poe_fewer.log";
    ASSERT_EQ(run("train --quiet --model tk --objective poe --alpha 0.1 --weak-strategy fewer-steps"
                  " --weak-fraction 0.5 --weak-schedule truncated --log-every 1 --init " +
                      (dir / "tk_init").string() + " --output " + out.string() + common_qrels() +
                      " --batch 4 --steps 4 --threads 1",
                  log),
              0)
        << plumb::read_file(log);
    std::vector<double> mult;
    bool start_seen = false;
    std::istringstream in(plumb::read_file(out / "weak" / "train_log.jsonl"));
    for (std::string line; std::getline(in, line);) {
        auto j = nlohmann::json::parse(line);
        if (j.value("event", "") == "start") {
            start_seen = true;
            EXPECT_EQ(j["max_steps"].get<int>(), 2) << line;
            EXPECT_EQ(j["schedule_steps"].get<int>(), 4) << line;
        }
        if (j.contains("lr_multiplier")) mult.push_back(j["lr_multiplier"].get<double>());
    }
    EXPECT_TRUE(start_seen);
    ASSERT_EQ(mult.size(), 2u);
    EXPECT_DOUBLE_EQ(mult[0], 1.0);
    EXPECT_DOUBLE_EQ(mult[1], 0.75);
    EXPECT_NE(run("train --quiet --model tk --objective poe --weak-strategy fewer-steps"
                  " --weak-schedule half --init " +
                      (dir / "tk_init").string() + " --output " + (dir / "x").string() +
                      common_qrels() + " --steps 4",
                  dir / "bad_sched.log"),
              0);
}

TEST_F(CliTrain, BadInputsFailWithFileAndLine) {
    auto log = dir / "bad.log";
    auto base = "train --quiet --model cat --objective ce --init " +
                (dir / "tiny_bert_cat1").string() + " --output " + (dir / "bad_out").string() +
                " --steps 2 --batch 2";
    // missing file
    EXPECT_EQ(run(base + " --triples " + (dir / "nope.tsv").string(), log), 1);
    EXPECT_NE(plumb::read_file(log).find("nope.tsv"), std::string::npos) << plumb::read_file(log);
    // a malformed line (no negative) on line 3
    write_text(dir / "broken.tsv",
               "where is the cat\tthe cat sat\ta red car\nwhat is the dog\tthe dog ran\tblue "
               "fish\nwhat is a fish\ta fish swim\n");
    EXPECT_EQ(
        run(base + " --triples " + (dir / "broken.tsv").string() + " --shuffle-buffer 0", log), 1);
    EXPECT_NE(plumb::read_file(log).find("broken.tsv:3"), std::string::npos)
        << plumb::read_file(log);
    // inconsistent options
    EXPECT_EQ(run("train --quiet --model tk --objective contrastive --init " +
                      (dir / "tk_init").string() + " --output " + (dir / "bad_out2").string() +
                      " --triples " + (dir / "triples.tsv").string(),
                  log),
              1);
    EXPECT_NE(plumb::read_file(log).find("bi-encoder"), std::string::npos) << plumb::read_file(log);
    // no data source
    EXPECT_EQ(run("train --quiet --model tk --init " + (dir / "tk_init").string() + " --output " +
                      (dir / "bad_out3").string(),
                  log),
              1);
}

}  // namespace
