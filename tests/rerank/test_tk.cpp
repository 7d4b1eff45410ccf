// TK: tokenizer, kernel pooling on hand-built cases, masking, save/load, checkpoint errors,
// batch-size independence, the re-rank stage. Torch-free (weights are set through the
// safetensors file the model loads).
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "plugin/error.hpp"
#include "plugin/text_io.hpp"
#include "rerank/safetensors.hpp"
#include "rerank/tk_model.hpp"
#include "rerank/tk_stage.hpp"
#include "rerank/tk_tokenizer.hpp"
#include "tests/rerank/fixtures.hpp"
#include "tests/test_tmp.hpp"

namespace fs = std::filesystem;
using namespace plumb::rerank;
using plumb::test::write_text;

namespace {

fs::path temp_dir(const std::string& name) {
    auto dir = plumb::test::process_dir("plumb_test_tk_") / name;
    fs::remove_all(dir);
    fs::create_directories(dir);
    return dir;
}

/// Replaces some tensors of a saved model's safetensors file.
void patch_weights(const fs::path& dir, const std::map<std::string, TensorData>& replace,
                   bool add_extra = false, const std::string& drop = {}) {
    const auto path = dir / "model.safetensors";
    std::map<std::string, TensorData> all;
    {
        SafetensorsFile st(path);
        for (const auto& v : st.tensors()) {
            if (v.name == drop) continue;
            TensorData d;
            d.dtype = v.dtype;
            d.shape = v.shape;
            d.bytes.assign(v.bytes.begin(), v.bytes.end());
            all.emplace(v.name, std::move(d));
        }
    }
    for (const auto& [k, v] : replace) all[k] = v;
    if (add_extra) {
        std::vector<float> one{1.0f};
        all.emplace("extra.weight", TensorData::from_float32({1}, one));
    }
    save_safetensors(path, all);
}

/// 2-d embeddings: a = (1,0), b = (0,1), c = (-1,0), d = (2,0); OOV and padding rows zero.
/// α = 1 (mixer 1): q̂ = q exactly. Kernel weights W: `w` (11 values).
fs::path hand_model(const std::string& name, const std::vector<float>& w,
                    bool mean_kernel = false) {
    TkConfig c;
    c.mean_kernel = mean_kernel;
    c.embedding_dim = 2;
    c.layers = 1;
    c.heads = 1;
    c.head_dim = 0;
    c.ff_dim = 2;
    c.mixer_init = 1.0f;
    c.max_passage_length = 16;
    std::vector<float> emb = {0, 0, 0, 0, 1, 0, 0, 1, -1, 0, 2, 0};
    auto m = TkModel::create(c, TkVocabulary({"a", "b", "c", "d"}), emb, 7);
    auto dir = temp_dir(name);
    m.save(dir);
    patch_weights(dir, {{"kernel_bin_weights.weight", TensorData::from_float32({1, 11}, w)}});
    return dir;
}

/// A small random model (contextualisation active, α = 0.5).
TkModel random_model(std::uint64_t seed = 3, bool mean_kernel = false) {
    TkConfig c;
    c.embedding_dim = 8;
    c.layers = 2;
    c.heads = 2;
    c.head_dim = 3;
    c.ff_dim = 5;
    c.max_query_length = 8;
    c.max_passage_length = 40;
    c.mean_kernel = mean_kernel;
    std::vector<std::string> words;
    for (int i = 0; i < 30; ++i) words.push_back("w" + std::to_string(i));
    return TkModel::create(c, TkVocabulary(words), {}, seed);
}

std::string random_text(std::mt19937& rng, int n) {
    std::string s;
    std::uniform_int_distribution<int> w(0, 34);  // w30..w34 are OOV
    for (int i = 0; i < n; ++i) s += "W" + std::to_string(w(rng)) + (i % 4 == 3 ? ". " : " ");
    return s;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Tokenizer and vocabulary

TEST(TkTokenizer, SplitsOnNonAlphanumericAndLowercases) {
    EXPECT_EQ(tk_split_words("Hello, World! It's 2-fold: U.S.A."),
              (std::vector<std::string>{"hello", "world", "it", "s", "2", "fold", "u", "s", "a"}));
    EXPECT_EQ(tk_split_words("Caf\xC3\xA9 au-lait", false),
              (std::vector<std::string>{"Caf\xC3\xA9", "au", "lait"}));
    EXPECT_TRUE(tk_split_words("  ,;!  ").empty());
}

TEST(TkTokenizer, MapsWordsToIdsWithOovAndTruncation) {
    auto v = std::make_shared<const TkVocabulary>(std::vector<std::string>{"the", "cat", "sat"});
    EXPECT_EQ(v->size(), 5);
    TkTokenizer t(v);
    EXPECT_EQ(t.encode("The cat sat on THE mat"),
              (std::vector<std::int64_t>{2, 3, 4, 1, 2, 1}));
    EXPECT_EQ(t.encode("The cat sat on THE mat", 3), (std::vector<std::int64_t>{2, 3, 4}));
    // Reserved tokens are not words.
    EXPECT_EQ(v->id("@@UNKNOWN@@"), TkVocabulary::kOovId);
    EXPECT_EQ(v->token(0), "@@PADDING@@");
    EXPECT_THROW(v->token(5), plumb::InvalidArgument);
}

TEST(TkVocabulary, SaveLoadRoundTripAndDuplicates) {
    TkVocabulary v({"x", "y", "x"});
    EXPECT_EQ(v.size(), 5);
    EXPECT_EQ(v.id("x"), 2);  // first occurrence wins
    auto dir = temp_dir("vocab");
    v.save(dir / "vocab.txt");
    auto w = TkVocabulary::load(dir / "vocab.txt");
    EXPECT_EQ(w.size(), 5);
    EXPECT_EQ(w.id("y"), 3);
    EXPECT_EQ(w.token(4), "x");
}

TEST(TkVocabulary, BadFileNamesFileAndLine) {
    auto dir = temp_dir("badvocab");
    write_text(dir / "v1.txt", "@@PADDING@@\nunk\nx\n");
    try {
        TkVocabulary::load(dir / "v1.txt");
        FAIL();
    } catch (const plumb::ParseError& e) {
        EXPECT_EQ(e.line(), 2u);
        EXPECT_NE(std::string(e.what()).find("v1.txt:2"), std::string::npos);
    }
    write_text(dir / "v2.txt", "@@PADDING@@\n@@UNKNOWN@@\nx\n\ny\n");
    try {
        TkVocabulary::load(dir / "v2.txt");
        FAIL();
    } catch (const plumb::ParseError& e) {
        EXPECT_EQ(e.line(), 4u);
    }
    EXPECT_THROW(TkVocabulary({"ok", "bad\nword"}), plumb::InvalidArgument);
}

// ---------------------------------------------------------------------------------------------
// Kernel pooling on hand-built cases

TEST(TkModel, KernelPoolingByHand) {
    // W: 1 on the exact-match kernel (μ = 1), 0.5 on μ = 0.1, 2 on μ = -0.9, 0 elsewhere.
    std::vector<float> w(11, 0.0f);
    w[0] = 1.0f;
    w[5] = 0.5f;
    w[10] = 2.0f;
    auto m = TkModel::load(hand_model("hand", w));
    EXPECT_FLOAT_EQ(m.mixer(), 1.0f);
    // Query "a b", passage "a c d": cos(a, ·) = 1, -1, 1; cos(b, ·) = 0, 0, 0.
    // K(m) = exp(-(m - μ)² / 0.02); sums below 1e-10 are clamped: L = ln(1e-10).
    // μ = 1:    a: 2 + e^{-200}                  -> ln 2;   b: 3·e^{-50} < 1e-10 -> L
    // μ = 0.1:  a: 2·e^{-40.5} + e^{-60.5} -> L;            b: 3·e^{-0.5}       -> ln 3 - 0.5
    // μ = -0.9: a: 2·e^{-180.5} + e^{-0.5}        -> -0.5;   b: 3·e^{-40.5}      -> L
    const double L = std::log(1e-10);
    const double expected =
        1.0 * (std::log(2.0) + L) + 0.5 * (L + std::log(3.0) - 0.5) + 2.0 * (-0.5 + L);
    std::vector<std::string> p{"a c d"};
    auto s = m.score("a b", p);
    ASSERT_EQ(s.size(), 1u);
    EXPECT_NEAR(s[0], expected, 2e-3);

    // An OOV passage word has a zero vector: cos 0 with every query term (allennlp's
    // x / (|x| + 1e-13)). Passage "a c d zzz":
    // μ = 1:    a: 2 + ... -> ln 2;                      b: 4·e^{-50}  -> L
    // μ = 0.1:  a: e^{-0.5} (zzz) + 2·e^{-40.5} + ... -> -0.5;   b: 4·e^{-0.5} -> ln 4 - 0.5
    // μ = -0.9: a: e^{-0.5} + e^{-40.5} + ... -> -0.5;  b: 4·e^{-40.5} -> L
    const double expected_oov =
        1.0 * (std::log(2.0) + L) + 0.5 * (-0.5 + std::log(4.0) - 0.5) + 2.0 * (-0.5 + L);
    std::vector<std::string> p2{"a c d zzz"};
    EXPECT_NEAR(m.score("a b", p2)[0], expected_oov, 2e-3);
}

TEST(TkModel, KernelPoolingClampsEmptySums) {
    // Only the μ = 1 kernel, query "b", passage "c": Σ_j K = e^{-(0-1)²/0.02} = e^{-50}
    // (> 1e-10? no: e^{-50} ≈ 1.9e-22 < 1e-10, so the sum is clamped): s = ln(1e-10).
    std::vector<float> w(11, 0.0f);
    w[0] = 1.0f;
    auto m = TkModel::load(hand_model("clamp", w));
    std::vector<std::string> p{"c"};
    EXPECT_NEAR(m.score("b", p)[0], std::log(1e-10), 1e-3);
    // An empty passage (no words): every sum is 0 -> clamped. Empty query: no terms -> 0.
    std::vector<std::string> empty{""};
    EXPECT_NEAR(m.score("b", empty)[0], std::log(1e-10), 1e-3);
    EXPECT_FLOAT_EQ(m.score("", p)[0], 0.0f);
    EXPECT_FLOAT_EQ(m.score(",,,", p)[0], 0.0f);
}

TEST(TkModel, MeanKernelBranchByHand) {
    // TK_v1 branch: W = e_0 (μ = 1) on log2 sums, W_mean = e_0 on length-normalised sums,
    // combination (1, 2), scaler 0.5. Query "a", passage "a d c" (3 terms): Σ_j K(μ=1) = 2.
    //   log branch:  log2(2) · 0.5 = 0.5;   mean branch: 2 / (3 + 1) · 0.5 = 0.25
    //   s = 1 · 0.5 + 2 · 0.25 = 1
    std::vector<float> w(11, 0.0f);
    w[0] = 1.0f;
    auto dir = hand_model("mean_kernel", w, true);
    std::vector<float> comb{1.0f, 2.0f}, scaler{0.5f};
    patch_weights(dir, {{"dense_mean.weight", TensorData::from_float32({1, 11}, w)},
                        {"dense_comb.weight", TensorData::from_float32({1, 2}, comb)},
                        {"nn_scaler", TensorData::from_float32({1}, scaler)}});
    auto m = TkModel::load(dir);
    std::vector<std::string> p{"a d c"};
    EXPECT_NEAR(m.score("a", p)[0], 1.0f, 1e-5f);
}

TEST(TkModel, PaddingDoesNotChangeScores) {
    auto m = random_model();
    std::mt19937 rng(1);
    const std::string q = "w1 w2 w3";
    std::vector<std::string> short_and_long{"w1 w5 w9 w2", random_text(rng, 39)};
    std::vector<std::string> alone{"w1 w5 w9 w2"};
    // Scored alone (no padding) vs batched with a 39-word passage (padded to 39).
    const float a = m.score(q, alone, 8)[0];
    const float b = m.score(q, short_and_long, 8)[0];
    EXPECT_NEAR(a, b, 1e-5f);
    EXPECT_TRUE(std::isfinite(a));
}

TEST(TkModel, ScoresIndependentOfBatchSize) {
    for (bool mean_kernel : {false, true}) {
        auto m = random_model(11, mean_kernel);
        std::mt19937 rng(5);
        std::vector<std::string> passages;
        for (int i = 0; i < 23; ++i) passages.push_back(random_text(rng, 1 + (i * 7) % 45));
        passages.push_back("");
        auto ref = m.score("w3 w4 w30 w7", passages, 1);
        for (std::size_t bs : {2u, 5u, 64u}) {
            auto s = m.score("w3 w4 w30 w7", passages, bs);
            ASSERT_EQ(s.size(), ref.size());
            for (std::size_t i = 0; i < s.size(); ++i) EXPECT_NEAR(s[i], ref[i], 1e-5f) << i;
        }
        // Not all equal: the model does look at the passages.
        EXPECT_NE(ref[0], ref[5]);
    }
}

TEST(TkModel, TruncatesToMaxLengths) {
    auto m = random_model();
    std::mt19937 rng(2);
    std::string p = random_text(rng, 40);  // max_passage_length = 40
    std::vector<std::string> ps{p, p + " w1 w2 w3 w4"};
    auto s = m.score("w1 w2 w3 w4 w5 w6 w7 w8", ps);
    EXPECT_NEAR(s[0], s[1], 1e-6f);
    auto s2 = m.score("w1 w2 w3 w4 w5 w6 w7 w8 w9 w10", ps);  // max_query_length = 8
    EXPECT_NEAR(s[0], s2[0], 1e-6f);
}

TEST(TkModel, PassageVectorsAreTheContextualisedTerms) {
    // With α = 1 the vectors are the word embeddings themselves.
    std::vector<float> w(11, 0.0f);
    auto m = TkModel::load(hand_model("vectors", w));
    auto tv = m.passage_vectors("D, a zzz");
    ASSERT_EQ(tv.terms, (std::vector<std::string>{"d", "a", "zzz"}));
    EXPECT_EQ(tv.ids, (std::vector<std::int64_t>{5, 2, 1}));
    EXPECT_EQ(tv.positions, (std::vector<std::int64_t>{0, 1, 2}));
    ASSERT_EQ(tv.dim, 2);
    EXPECT_EQ(tv.values, (std::vector<float>{2, 0, 1, 0, 0, 0}));

    // Random model: batch results equal single results; positions matter (same word, different
    // vectors at different positions).
    auto r = random_model();
    std::vector<std::string_view> ps{"w1 w2 w1", "w3", "w4 w5 w6 w7 w8"};
    auto all = r.passage_vectors(ps, 2);
    ASSERT_EQ(all.size(), 3u);
    for (std::size_t i = 0; i < ps.size(); ++i) {
        auto one = r.passage_vectors(ps[i]);
        ASSERT_EQ(one.values.size(), all[i].values.size());
        for (std::size_t k = 0; k < one.values.size(); ++k) {
            EXPECT_NEAR(one.values[k], all[i].values[k], 1e-5f);
        }
    }
    auto v0 = all[0].row(0);
    auto v2 = all[0].row(2);
    float diff = 0;
    for (std::size_t k = 0; k < v0.size(); ++k) diff += std::abs(v0[k] - v2[k]);
    EXPECT_GT(diff, 1e-4f);
}

// ---------------------------------------------------------------------------------------------
// Save / load

TEST(TkModel, SaveLoadRoundTrip) {
    for (bool mean_kernel : {false, true}) {
        auto m = random_model(21, mean_kernel);
        auto dir = temp_dir(mean_kernel ? "roundtrip_mean" : "roundtrip");
        m.save(dir);
        EXPECT_TRUE(fs::exists(dir / "config.json"));
        EXPECT_TRUE(fs::exists(dir / "vocab.txt"));
        auto l = TkModel::load(dir);
        EXPECT_EQ(l.config().embedding_dim, 8);
        EXPECT_EQ(l.config().head_dim, 3);
        EXPECT_EQ(l.config().kernel_mu, tk_default_kernel_mu());
        EXPECT_EQ(l.config().mean_kernel, mean_kernel);
        EXPECT_EQ(l.vocabulary().size(), m.vocabulary().size());
        EXPECT_EQ(l.parameter_count(), m.parameter_count());
        std::vector<std::string> ps{"w1 w2 w3", "w9 w1 w4 w4 w30", "w2"};
        auto a = m.score("w1 w4", ps);
        auto b = l.score("w1 w4", ps);
        for (std::size_t i = 0; i < a.size(); ++i) EXPECT_FLOAT_EQ(a[i], b[i]);
    }
}

TEST(TkModel, ParameterCountMatchesArchitecture) {
    // V = 32, D = 8, P = 2·3 = 6, F = 5, K = 11, 2 layers:
    // embeddings 256; per layer: in_proj 18·8 + 18, out_proj 8·6 + 8, linear1 5·8 + 5,
    // linear2 8·5 + 8, norms 4·8 = 144+18+48+8+40+5+40+8+32 = 343; mixer 1; W 11.
    EXPECT_EQ(random_model().parameter_count(), 256 + 2 * 343 + 1 + 11);
}

TEST(TkModel, CheckpointErrors) {
    auto m = random_model();
    auto base = temp_dir("errors_base");
    m.save(base);
    auto fresh = [&](const std::string& name) {
        auto d = temp_dir(name);
        for (const auto& f : {"config.json", "vocab.txt", "model.safetensors"}) {
            fs::copy_file(base / f, d / f);
        }
        return d;
    };
    auto expect_checkpoint_error = [](const fs::path& d, const std::string& needle) {
        try {
            TkModel::load(d);
            ADD_FAILURE() << "no error for " << d;
        } catch (const plumb::CheckpointError& e) {
            EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
        }
    };
    {  // truncated weights
        auto d = fresh("truncated");
        fs::resize_file(d / "model.safetensors", fs::file_size(d / "model.safetensors") - 100);
        EXPECT_THROW(TkModel::load(d), plumb::CheckpointError);
    }
    {  // vocabulary with one more entry than vocab_size
        auto d = fresh("vocab_mismatch");
        std::ofstream(d / "vocab.txt", std::ios::app) << "extra\n";
        expect_checkpoint_error(d, "vocab_size");
    }
    {  // config dims not matching the tensors
        auto d = fresh("dim_mismatch");
        auto cfg = plumb::read_file(d / "config.json");
        auto pos = cfg.find("\"ff_dim\": 5");
        ASSERT_NE(pos, std::string::npos);
        cfg.replace(pos, 11, "\"ff_dim\": 6");
        write_text(d / "config.json", cfg);
        expect_checkpoint_error(d, "linear1");
    }
    {  // wrong format tag, unsupported version, bad JSON, missing field
        auto d = fresh("format");
        auto cfg = plumb::read_file(d / "config.json");
        auto tagged = cfg;
        tagged.replace(tagged.find("plumb-tk"), 8, "other-tk");
        write_text(d / "config.json", tagged);
        expect_checkpoint_error(d, "format");
        auto versioned = cfg;
        versioned.replace(versioned.find("\"version\": 1"), 12, "\"version\": 2");
        write_text(d / "config.json", versioned);
        expect_checkpoint_error(d, "version 2");
        write_text(d / "config.json", "{\"format\": \"plumb-tk\", ");
        expect_checkpoint_error(d, "invalid JSON");
        auto missing = cfg;
        missing.replace(missing.find("\"layers\""), 8, "\"layerz\"");
        write_text(d / "config.json", missing);
        expect_checkpoint_error(d, "layers");
    }
    {  // unexpected and missing tensors
        auto d = fresh("extra");
        patch_weights(d, {}, true);
        expect_checkpoint_error(d, "extra.weight");
        auto d2 = fresh("missing");
        patch_weights(d2, {}, false, "mixer");
        expect_checkpoint_error(d2, "mixer");
    }
    EXPECT_THROW(TkModel::load(temp_dir("empty")), plumb::IoError);
}

TEST(TkModel, CreateRejectsBadInput) {
    TkConfig c;
    c.embedding_dim = 10;
    c.heads = 3;
    c.head_dim = 0;  // 10 not divisible by 3
    EXPECT_THROW(TkModel::create(c, TkVocabulary()), plumb::ConfigError);
    c.heads = 2;
    c.kernel_sigma.pop_back();
    EXPECT_THROW(TkModel::create(c, TkVocabulary()), plumb::ConfigError);
    TkConfig ok;
    ok.embedding_dim = 4;
    ok.heads = 2;
    ok.head_dim = 0;
    std::vector<float> wrong(7, 0.0f);
    EXPECT_THROW(TkModel::create(ok, TkVocabulary({"a"}), wrong), plumb::InvalidArgument);
    auto m = TkModel::create(ok, TkVocabulary({"a"}));
    std::vector<std::string> ps{"a"};
    EXPECT_THROW(m.score("a", ps, 0), plumb::InvalidArgument);
    std::vector<std::vector<std::int64_t>> bad_ids{{2, 3}};
    std::vector<std::int64_t> q{2};
    EXPECT_THROW(m.score_ids(q, bad_ids), plumb::InvalidArgument);
}

// ---------------------------------------------------------------------------------------------
// Stage

TEST(TkStage, ReranksBySoftTermMatches) {
    // Only the exact-match kernel, weight 1: s = Σ_i ln(max(#exact matches of q_i, 1e-10))
    // (other terms add < e^{-50} per passage term). Query "a b":
    //   "c c"     -> b, a: no match: 2·ln(1e-10)
    //   "a d b"   -> a matches a and d (cos 1): ln 2 + ln 1
    //   "a"       -> ln 1 + ln(1e-10)
    //   "b b a a" -> ln 2 + ln 2   (best)
    std::vector<float> w(11, 0.0f);
    w[0] = 1.0f;
    auto dir = hand_model("stage", w);
    TkStageOptions opt;
    opt.depth = 4;
    opt.batch_size = 3;
    opt.threads = 1;
    auto stage = make_tk_stage(dir, opt);
    EXPECT_EQ(stage->name(), "tk");
    EXPECT_EQ(stage->depth(), 4u);
    plumb::RankedList list{"q1", {}};
    for (auto [id, text] : std::vector<std::pair<std::string, std::string>>{
             {"p1", "c c"}, {"p2", "a d b"}, {"p3", "a"}, {"p4", "b b a a"}, {"p5", "a b"}}) {
        plumb::Candidate c;
        c.docid = id;
        c.text = text;
        c.score = 10.0f - static_cast<float>(list.candidates.size());
        list.candidates.push_back(c);
    }
    std::vector<plumb::Query> queries{{"q1", "a b"}};
    stage->rerank(queries, std::span<plumb::RankedList>(&list, 1));
    std::vector<std::string> order;
    for (const auto& c : list.candidates) order.push_back(c.docid);
    EXPECT_EQ(order, (std::vector<std::string>{"p4", "p2", "p3", "p1", "p5"}));
    EXPECT_NEAR(list.candidates[0].score, 2 * std::log(2.0), 1e-4);
    EXPECT_NEAR(list.candidates[1].score, std::log(2.0), 1e-4);
    EXPECT_NEAR(list.candidates[3].score, 2 * std::log(1e-10), 1e-3);
    ASSERT_EQ(list.candidates[0].trace.size(), 1u);
    EXPECT_EQ(list.candidates[0].trace[0].stage, "tk");
    EXPECT_TRUE(list.candidates[4].trace.empty());  // beyond depth: untouched, kept last

    TkStageOptions bad;
    bad.depth = 0;
    EXPECT_THROW(make_tk_stage(dir, bad), plumb::InvalidArgument);
    EXPECT_THROW(make_tk_stage(temp_dir("nomodel"), opt), plumb::IoError);
}
