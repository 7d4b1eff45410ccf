// `plumb bert-init` and its library (rerank/bert_init.hpp): the WordPiece vocabulary of a corpus
// (order and splitting derived by hand from the rules in bert_init.hpp), the folder loads as a
// Hugging Face BERT with the requested sizes (parameter count from BERT's architecture), and a
// few training steps of `plumb train --model cat` from it reduce the loss.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "plugin/error.hpp"
#include "plugin/text_io.hpp"
#include "rerank/bert_checkpoint.hpp"
#include "rerank/bert_init.hpp"
#include "rerank/wordpiece.hpp"
#include "tests/support/cli.hpp"
#include "tests/test_tmp.hpp"

namespace fs = std::filesystem;
using namespace plumb::rerank;

namespace {

void write(const fs::path& p, const std::string& text) {
    std::ofstream out(p, std::ios::binary);
    out << text;
}

std::vector<std::string> pieces(const WordPieceTokenizer& t, const std::string& text) {
    return t.tokenize(text);
}

}  // namespace

TEST(BertInitVocab, OrderIsSpecialsCharactersThenWordsByFrequency) {
    WordPieceVocabBuilder b;
    b.add_text("The cat sat.");
    b.add_text("the CAT!");
    // Words (lower-cased, punctuation split): the 2, cat 2, sat 1, "." 1, "!" 1.
    // Characters by code point: ! . a c e h s t.
    const std::vector<std::string> expected = {
        "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "!",   ".",   "a",   "c",   "e",   "h",
        "s",     "t",     "##!",   "##.",   "##a",    "##c", "##e", "##h", "##s", "##t", "cat",
        "the",   "sat"};
    EXPECT_EQ(b.build().tokens(), expected);
    EXPECT_EQ(b.distinct_words(), 5u);
}

TEST(BertInitVocab, BoundedSizeAndMinCountKeepTheMostFrequentWords) {
    WordPieceVocabOptions o;
    o.max_size = 18;  // 5 specials, 6 characters (a c e h s t) twice, 1 word
    WordPieceVocabBuilder b(o);
    b.add_text("the cat sat the cat");
    const auto v = b.build();
    ASSERT_EQ(v.size(), 18u);
    EXPECT_EQ(v.token(17), "cat");  // tie with "the" (2 each): byte order
    EXPECT_FALSE(v.contains("the"));

    WordPieceVocabOptions m;
    m.min_count = 2;
    WordPieceVocabBuilder bm(m);
    bm.add_text("the cat sat the cat");
    const auto vm = bm.build();
    EXPECT_TRUE(vm.contains("cat"));
    EXPECT_TRUE(vm.contains("the"));
    EXPECT_FALSE(vm.contains("sat"));
    // "sat" is still representable: its characters are in the vocabulary.
    auto tok = WordPieceTokenizer(std::make_shared<const Vocab>(vm));
    EXPECT_EQ(pieces(tok, "sat"), (std::vector<std::string>{"s", "##a", "##t"}));

    WordPieceVocabOptions tiny;
    tiny.max_size = 10;
    WordPieceVocabBuilder bt(tiny);
    bt.add_text("the cat sat");
    EXPECT_THROW(bt.build(), plumb::InvalidArgument);
}

TEST(BertInitVocab, UnknownWordsSplitIntoALongestWordAndCharacters) {
    WordPieceVocabBuilder b;
    b.add_text("token tokens zz café");
    auto tok = WordPieceTokenizer(std::make_shared<const Vocab>(b.build()));
    // Corpus words map to themselves (accents stripped after lower-casing: café -> cafe).
    EXPECT_EQ(pieces(tok, "Token tokens ZZ"), (std::vector<std::string>{"token", "tokens", "zz"}));
    EXPECT_EQ(pieces(tok, "café"), (std::vector<std::string>{"cafe"}));
    // New word of seen characters: the longest vocabulary word that begins it, then characters.
    EXPECT_EQ(pieces(tok, "tokenzet"),
              (std::vector<std::string>{"token", "##z", "##e", "##t"}));
    // A character never seen: the whole word is [UNK].
    EXPECT_EQ(pieces(tok, "tokenq"), (std::vector<std::string>{"[UNK]"}));
}

class BertInitCli : public ::testing::Test {
protected:
    fs::path dir;
    void SetUp() override {
        dir = plumb::test::process_dir("plumb_test_bert_init_");
        fs::remove_all(dir);
        fs::create_directories(dir);
    }
    void TearDown() override { fs::remove_all(dir); }
};

TEST_F(BertInitCli, FolderLoadsWithTheGivenSizesAndTrains) {
    // Four topics about animals, each with a passage that repeats its words (positive) and an
    // unrelated short text (negative).
    const std::vector<std::pair<std::string, std::string>> qp = {
        {"red fox den", "the red fox sleeps in a den under the hill"},
        {"blue whale song", "a blue whale sings a long song in the deep sea"},
        {"green frog pond", "the green frog jumps into the pond at night"},
        {"brown bear honey", "a brown bear eats honey from a hollow tree"}};
    const std::vector<std::string> negatives = {"a cold wind", "the old car", "rain on roofs",
                                                "short"};
    std::string corpus, topics, triples;
    for (std::size_t i = 0; i < qp.size(); ++i) {
        corpus += "p" + std::to_string(i) + "\t" + qp[i].second + "\n";
        corpus += "n" + std::to_string(i) + "\t" + negatives[i] + "\n";
        topics += "q" + std::to_string(i) + "\t" + qp[i].first + "\n";
    }
    for (int rep = 0; rep < 4; ++rep) {
        for (std::size_t i = 0; i < qp.size(); ++i) {
            triples += qp[i].first + "\t" + qp[i].second + "\t" + negatives[i] + "\n";
        }
    }
    write(dir / "corpus.tsv", corpus);
    write(dir / "topics.tsv", topics);
    write(dir / "triples.tsv", triples);

    const auto init = dir / "init";
    auto r = plumb::test::run_plumb("bert-init --quiet --corpus '" + (dir / "corpus.tsv").string() +
                                    "' --topics '" + (dir / "topics.tsv").string() +
                                    "' --output '" + init.string() +
                                    "' --layers 2 --hidden 32 --heads 2 --intermediate 64"
                                    " --max-positions 64 --seed 3");
    ASSERT_EQ(r.status, 0) << r.out;

    // config.json read as JSON, not through plumb's parser.
    std::ifstream cin(init / "config.json");
    const auto cfg = nlohmann::json::parse(cin);
    EXPECT_EQ(cfg["model_type"], "bert");
    EXPECT_EQ(cfg["num_hidden_layers"], 2);
    EXPECT_EQ(cfg["hidden_size"], 32);
    EXPECT_EQ(cfg["num_attention_heads"], 2);
    EXPECT_EQ(cfg["intermediate_size"], 64);
    EXPECT_EQ(cfg["max_position_embeddings"], 64);
    for (const char* f : {"vocab.txt", "model.safetensors", "tokenizer_config.json"})
        EXPECT_TRUE(fs::exists(init / f)) << f;

    const auto tok = WordPieceTokenizer::from_folder(init);
    const auto V = static_cast<std::int64_t>(tok.vocab().size());
    EXPECT_EQ(cfg["vocab_size"], V);
    EXPECT_EQ(tok.pad_id(), 0);
    // Every corpus and topic word maps to itself.
    for (const auto& [q, p] : qp) {
        for (const auto* text : {&q, &p}) {
            std::istringstream ws(*text);
            std::string w;
            while (ws >> w) EXPECT_EQ(pieces(tok, w), std::vector<std::string>{w}) << w;
        }
    }

    // Loads strictly as a BERT encoder; parameter count of BertModel with these sizes:
    // embeddings V*H + P*H + 2*H + LayerNorm 2H; per layer Q,K,V,O 4(H*H + H), two LayerNorms
    // 4H, feed-forward H*I + I + I*H + H.
    const auto model = load_bert_checkpoint(init);
    const std::int64_t H = 32, I = 64, P = 64, L = 2;
    const std::int64_t expected = V * H + P * H + 2 * H + 2 * H +
                                  L * (4 * (H * H + H) + 4 * H + H * I + I + I * H + H);
    std::int64_t count = 0;
    for (const auto& p : model.parameters()) {
        std::int64_t n = 1;
        for (auto d : p.shape) n *= d;
        count += n;
    }
    EXPECT_EQ(count, expected);
    EXPECT_NE(r.out.find(std::to_string(expected) + " parameters"), std::string::npos) << r.out;

    // The same seed gives the same weights; another seed other weights.
    const auto again = dir / "again";
    ASSERT_EQ(plumb::test::run_plumb("bert-init --quiet --corpus '" +
                                     (dir / "corpus.tsv").string() + "' --topics '" +
                                     (dir / "topics.tsv").string() + "' --output '" +
                                     again.string() +
                                     "' --layers 2 --hidden 32 --heads 2 --intermediate 64"
                                     " --max-positions 64 --seed 3")
                  .status,
              0);
    EXPECT_EQ(plumb::read_file(init / "model.safetensors"),
              plumb::read_file(again / "model.safetensors"));

    // --word-std 0.1: word embeddings N(0, 0.1²) (sample standard deviation of the V*H - H
    // values within 10 %, pad row 0); every other weight as with the default (same seed).
    const auto wide = dir / "wide";
    ASSERT_EQ(plumb::test::run_plumb("bert-init --quiet --corpus '" +
                                     (dir / "corpus.tsv").string() + "' --topics '" +
                                     (dir / "topics.tsv").string() + "' --output '" +
                                     wide.string() +
                                     "' --layers 2 --hidden 32 --heads 2 --intermediate 64"
                                     " --max-positions 64 --seed 3 --word-std 0.1")
                  .status,
              0);
    {
        const auto m2 = load_bert_checkpoint(wide);
        const auto w = m2.parameter("embeddings.word_embeddings.weight");
        ASSERT_EQ(static_cast<std::int64_t>(w.size()), V * H);
        double sum = 0, sq = 0;
        for (std::int64_t i = 0; i < H; ++i) EXPECT_EQ(w[static_cast<std::size_t>(i)], 0.0f);
        for (std::size_t i = static_cast<std::size_t>(H); i < w.size(); ++i) {
            sum += w[i];
            sq += double(w[i]) * w[i];
        }
        const double n = double(w.size()) - double(H);
        const double sd = std::sqrt(sq / n - (sum / n) * (sum / n));
        EXPECT_NEAR(sd, 0.1, 0.01);
        const auto w0 = model.parameter("embeddings.word_embeddings.weight");
        double sq0 = 0;
        for (auto v : w0) sq0 += double(v) * v;
        EXPECT_NEAR(std::sqrt(sq0 / n), 0.02, 0.003);  // the default: transformers' 0.02
        for (const auto& p : model.parameters()) {
            if (p.name == "embeddings.word_embeddings.weight") continue;
            EXPECT_EQ(m2.parameter(p.name), model.parameter(p.name)) << p.name;
        }
    }
    EXPECT_NE(plumb::test::run_plumb("bert-init --quiet --corpus '" +
                                     (dir / "corpus.tsv").string() + "' --output '" +
                                     (dir / "bad").string() + "' --word-std 0")
                  .status,
              0);

    // Training steps of BERT-CAT from the folder reduce the hinge loss (learning to prefer the 4
    // passages to the 4 unrelated texts): the last logged window's mean loss is well below the
    // first's (random init: ~1 = the margin).
    const auto out = dir / "cat";
    r = plumb::test::run_plumb("train --quiet --model cat --init '" + init.string() +
                               "' --output '" + out.string() + "' --triples '" +
                               (dir / "triples.tsv").string() +
                               "' --batch 4 --steps 80 --lr 1e-3 --warmup 0 --max-length 32"
                               " --threads 1 --log-every 20 --no-tune --seed 1");
    ASSERT_EQ(r.status, 0) << r.out;
    std::ifstream lin(out / "train_log.jsonl");
    std::vector<double> losses;
    std::string line;
    while (std::getline(lin, line)) {
        auto j = nlohmann::json::parse(line);
        if (j.contains("loss") && !j.contains("partial")) losses.push_back(j["loss"].get<double>());
    }
    ASSERT_GE(losses.size(), 2u) << plumb::read_file(out / "train_log.jsonl");
    EXPECT_LT(losses.back(), 0.5 * losses.front()) << plumb::read_file(out / "train_log.jsonl");
}

TEST_F(BertInitCli, BadInputNamesTheProblem) {
    write(dir / "corpus.tsv", "p1\tsome text\n");
    auto r = plumb::test::run_plumb("bert-init --quiet --corpus '" + (dir / "corpus.tsv").string() +
                                    "' --output '" + (dir / "x").string() +
                                    "' --hidden 30 --heads 4");
    EXPECT_NE(r.status, 0);
    EXPECT_NE(r.out.find("head"), std::string::npos) << r.out;
    EXPECT_FALSE(fs::exists(dir / "x"));

    write(dir / "bad.tsv", "p1\tok\np2\t\xff\xfe broken\n");
    r = plumb::test::run_plumb("bert-init --quiet --corpus '" + (dir / "bad.tsv").string() +
                               "' --output '" + (dir / "y").string() + "'");
    EXPECT_NE(r.status, 0);
    EXPECT_NE(r.out.find("bad.tsv"), std::string::npos) << r.out;
    EXPECT_FALSE(fs::exists(dir / "y"));
}
