// BERT / DistilBERT encoder against reference outputs computed independently in numpy
// (tests/rerank/reference/bert_reference.py), checkpoint round trips and bad checkpoints.

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "plugin/error.hpp"
#include "plugin/text_io.hpp"
#include "rerank/bert.hpp"
#include "rerank/bert_checkpoint.hpp"
#include "rerank/bi_encoder.hpp"
#include "rerank/safetensors.hpp"
#include "rerank/torch_threads.hpp"
#include "tests/support/temp_dir.hpp"

namespace fs = std::filesystem;
using namespace plumb::rerank;

namespace {

const fs::path kRef = fs::path(PLUMB_SOURCE_DIR) / "tests/rerank/reference";

struct Case {
    Encoding enc;
    std::vector<float> hidden, cls, mean, pooled, logits;
};

std::vector<float> floats(const nlohmann::json& j) { return j.get<std::vector<float>>(); }

std::vector<Case> load_cases(const std::string& model) {
    static const auto expected = nlohmann::json::parse(plumb::read_file(kRef / "expected.json"));
    std::vector<Case> out;
    for (const auto& c : expected.at("models").at(model)) {
        Case k;
        k.enc.input_ids = c.at("input_ids").get<std::vector<std::int64_t>>();
        k.enc.token_type_ids = c.at("token_type_ids").get<std::vector<std::int64_t>>();
        k.enc.attention_mask.assign(k.enc.input_ids.size(), 1);
        k.hidden = floats(c.at("last_hidden"));
        k.cls = floats(c.at("cls"));
        k.mean = floats(c.at("mean"));
        k.pooled = floats(c.at("pooled"));
        if (c.contains("logits")) k.logits = floats(c.at("logits"));
        out.push_back(std::move(k));
    }
    return out;
}

std::vector<Encoding> encodings(const std::vector<Case>& cases) {
    std::vector<Encoding> e;
    for (const auto& c : cases) e.push_back(c.enc);
    return e;
}

void expect_near(const std::vector<float>& got, const std::vector<float>& want, double tol,
                 const std::string& what) {
    ASSERT_EQ(got.size(), want.size()) << what;
    for (std::size_t i = 0; i < got.size(); ++i) {
        ASSERT_NEAR(got[i], want[i], tol) << what << " [" << i << "]";
    }
}

std::vector<float> row(const std::vector<float>& flat, std::size_t r, std::size_t width) {
    return {flat.begin() + static_cast<std::ptrdiff_t>(r * width),
            flat.begin() + static_cast<std::ptrdiff_t>((r + 1) * width)};
}

/// A scratch folder (tests/support/temp_dir.hpp) with this file's name prefix.
struct TempDir : plumb::test::TempDir {
    TempDir() : plumb::test::TempDir("plumb_test_bert") {}
};

void copy_folder(const fs::path& from, const fs::path& to) {
    fs::create_directories(to);
    for (const auto& e : fs::directory_iterator(from)) {
        fs::copy_file(e.path(), to / e.path().filename(), fs::copy_options::overwrite_existing);
    }
}

// Rewrites <dir>/model.safetensors after `edit` changes the tensor map.
template <class Edit>
void rewrite_weights(const fs::path& dir, Edit edit) {
    std::map<std::string, TensorData> tensors;
    {
        SafetensorsFile f(dir / "model.safetensors");
        for (const auto& t : f.tensors()) {
            TensorData d;
            d.dtype = t.dtype;
            d.shape = t.shape;
            d.bytes.assign(t.bytes.begin(), t.bytes.end());
            tensors.emplace(t.name, std::move(d));
        }
    }
    edit(tensors);
    save_safetensors(dir / "model.safetensors", tensors);
}

class ReferenceModels : public ::testing::TestWithParam<std::string> {};

}  // namespace

// A BERT-DOT encoder's passage-term vectors (ATS / MATS input): the numpy reference's last hidden
// states of the passage's tokens, [CLS] and [SEP] left out, with the WordPiece tokens and their
// positions in the sequence; a passage without tokens gives an empty entry.
TEST(BiEncoderTokenVectors, AreTheReferenceHiddenStatesWithoutClsAndSep) {
    const auto cases = load_cases("tiny_bert_base");
    ASSERT_EQ(cases.size(), 7u);
    const auto& sat = cases[4];   // "the cat sat": [CLS] the cat sat [SEP]
    const auto& cars = cases[6];  // "big red cars swimming on the mat .": [UNK] inside
    auto enc = BiEncoder::from_folder(kRef / "tiny_bert_base");
    const std::vector<std::string_view> texts = {"the cat sat", "",
                                                 "big red cars swimming on the mat ."};
    const auto got = enc->passage_token_vectors(texts);
    ASSERT_EQ(got.size(), 3u);
    const auto vocab = Vocab::load(kRef / "tiny_bert_base" / "vocab.txt");
    for (const auto& [i, c] : {std::pair{0, &sat}, std::pair{2, &cars}}) {
        const auto& g = got[static_cast<std::size_t>(i)];
        const std::size_t n = c->enc.input_ids.size() - 2;
        ASSERT_EQ(g.dim, 8);
        ASSERT_EQ(g.terms.size(), n);
        ASSERT_EQ(g.positions.size(), n);
        for (std::size_t k = 0; k < n; ++k) {
            EXPECT_EQ(g.terms[k], vocab.token(c->enc.input_ids[k + 1])) << k;
            EXPECT_EQ(g.positions[k], static_cast<std::int64_t>(k + 1));
        }
        const std::vector<float> want(c->hidden.begin() + 8, c->hidden.begin() + 8 * (n + 1));
        expect_near(g.values, want, 1e-5, "passage " + std::to_string(i));
    }
    EXPECT_EQ(got[2].terms[4], "[UNK]");  // "swimming"
    EXPECT_TRUE(got[1].terms.empty());
    EXPECT_TRUE(got[1].values.empty());
}

TEST_P(ReferenceModels, MatchIndependentNumpyReference) {
    const auto name = GetParam();
    auto cases = load_cases(name);
    auto model = load_bert_checkpoint(kRef / name);
    const auto h = static_cast<std::size_t>(model.hidden_size());
    ASSERT_EQ(h, 8u);
    auto seqs = encodings(cases);

    // All sequences in one padded batch: padding must not change the real tokens' states.
    auto hidden = model.last_hidden_states(seqs, 64);
    auto cls = model.embed(seqs, Pooling::Cls, 64);
    auto mean = model.embed(seqs, Pooling::Mean, 64);
    for (std::size_t i = 0; i < cases.size(); ++i) {
        expect_near(hidden[i], cases[i].hidden, 1e-5,
                    name + " hidden of case " + std::to_string(i));
        expect_near(row(cls, i, h), cases[i].cls, 1e-5, name + " cls " + std::to_string(i));
        expect_near(row(mean, i, h), cases[i].mean, 1e-5, name + " mean " + std::to_string(i));
    }
    if (model.heads().pooler) {
        auto pooled = model.pooled(seqs, 64);
        for (std::size_t i = 0; i < cases.size(); ++i) {
            expect_near(row(pooled, i, h), cases[i].pooled, 1e-5, name + " pooled");
        }
    }
    if (model.heads().num_labels > 0) {
        const auto labels = static_cast<std::size_t>(model.heads().num_labels);
        auto logits = model.logits(seqs, 64);
        for (std::size_t i = 0; i < cases.size(); ++i) {
            expect_near(row(logits, i, labels), cases[i].logits, 1e-5, name + " logits");
        }
    } else {
        EXPECT_THROW(model.logits(seqs), plumb::InvalidArgument);
    }
}

INSTANTIATE_TEST_SUITE_P(Bert, ReferenceModels,
                         ::testing::Values("tiny_bert_cat1", "tiny_bert_cat2_gelu_new",
                                           "tiny_bert_base", "tiny_distilbert_cat2"));

TEST(BertCheckpoint, DetectsPrefixAndHeads) {
    BertCheckpointInfo info;
    auto cat = load_bert_checkpoint(kRef / "tiny_bert_cat1", {}, &info);
    EXPECT_EQ(info.prefix, "bert.");
    EXPECT_TRUE(info.heads.pooler);
    EXPECT_EQ(info.heads.num_labels, 1);

    auto base = load_bert_checkpoint(kRef / "tiny_bert_base", {}, &info);
    EXPECT_EQ(info.prefix, "");
    EXPECT_FALSE(info.heads.pooler);
    EXPECT_EQ(info.heads.num_labels, 0);

    auto distil = load_bert_checkpoint(kRef / "tiny_distilbert_cat2", {}, &info);
    EXPECT_EQ(info.prefix, "distilbert.");
    EXPECT_EQ(info.heads.num_labels, 2);
    EXPECT_EQ(distil.config().model_type, ModelType::DistilBert);

    // Encoder only: heads in the file are ignored, not loaded.
    BertCheckpointOptions enc;
    enc.heads = HeadSelection::EncoderOnly;
    auto e = load_bert_checkpoint(kRef / "tiny_bert_cat1", enc, &info);
    EXPECT_EQ(info.heads.num_labels, 0);
    EXPECT_EQ(info.ignored.size(), 4u);  // pooler weight/bias, classifier weight/bias

    // Classifier required but absent.
    BertCheckpointOptions need;
    need.heads = HeadSelection::Classifier;
    EXPECT_THROW(load_bert_checkpoint(kRef / "tiny_bert_base", need), plumb::CheckpointError);
}

TEST(BertCheckpoint, DistilBertNames) {
    EXPECT_EQ(checkpoint_tensor_name(ModelType::DistilBert,
                                     "encoder.layer.1.attention.self.query.weight", "distilbert."),
              "distilbert.transformer.layer.1.attention.q_lin.weight");
    EXPECT_EQ(checkpoint_tensor_name(ModelType::DistilBert,
                                     "encoder.layer.0.attention.output.LayerNorm.bias", ""),
              "transformer.layer.0.sa_layer_norm.bias");
    EXPECT_EQ(checkpoint_tensor_name(ModelType::DistilBert, "encoder.layer.3.output.dense.weight",
                                     "distilbert."),
              "distilbert.transformer.layer.3.ffn.lin2.weight");
    EXPECT_EQ(checkpoint_tensor_name(ModelType::DistilBert,
                                     "encoder.layer.3.output.LayerNorm.weight", "distilbert."),
              "distilbert.transformer.layer.3.output_layer_norm.weight");
    EXPECT_EQ(checkpoint_tensor_name(ModelType::Bert, "classifier.weight", "bert."),
              "classifier.weight");
    EXPECT_EQ(checkpoint_tensor_name(ModelType::Bert, "pooler.dense.bias", "bert."),
              "bert.pooler.dense.bias");
}

TEST(BertInference, IndependentOfBatchSizeAndThreads) {
    auto model = load_bert_checkpoint(kRef / "tiny_bert_cat1");
    auto seqs = encodings(load_cases("tiny_bert_cat1"));
    auto all = model.logits(seqs, 64);
    for (std::size_t bs : {1u, 2u, 3u}) {
        expect_near(model.logits(seqs, bs), all, 1e-5, "batch size " + std::to_string(bs));
    }
    std::vector<float> one, two;
    {
        TorchThreadsScope t(1);
        EXPECT_EQ(torch_threads(), 1);
        one = model.logits(seqs, 4);
    }
    {
        TorchThreadsScope t(2);
        EXPECT_EQ(torch_threads(), 2);
        two = model.logits(seqs, 4);
    }
    expect_near(one, all, 1e-5, "1 thread");
    expect_near(two, all, 1e-5, "2 threads");
}

TEST(TorchThreads, ScopeLimitsAndRestoresOpenBlasThreads) {
    // ATen's GEMMs run on OpenBLAS's own threads: a scope's count applies to them too (the TK
    // stage's 1-thread query side otherwise spun OpenBLAS's threads; bench/README.md).
    auto get = reinterpret_cast<int (*)()>(::dlsym(RTLD_DEFAULT, "openblas_get_num_threads"));
    if (!get) GTEST_SKIP() << "the BLAS is not OpenBLAS";
    const int before = get();
    {
        TorchThreadsScope one(1);
        EXPECT_EQ(get(), 1);
        {
            TorchThreadsScope two(2);
            EXPECT_EQ(get(), 2);
            TorchThreadsScope same(2);  // nothing to change, nothing to restore
            EXPECT_EQ(get(), 2);
        }
        EXPECT_EQ(get(), 1);
        TorchThreadsScope none(0);  // 0 leaves everything alone
        EXPECT_EQ(get(), 1);
    }
    EXPECT_EQ(get(), before);
}

TEST(BertInference, RejectsBadInput) {
    auto model = load_bert_checkpoint(kRef / "tiny_bert_base");
    std::vector<Encoding> bad(1);
    EXPECT_THROW(model.embed(bad, Pooling::Cls), plumb::InvalidArgument);  // empty
    bad[0].input_ids = {2, 30, 3};                                         // vocab is 30
    EXPECT_THROW(model.embed(bad, Pooling::Cls), plumb::InvalidArgument);
    bad[0].input_ids.assign(33, 5);  // 32 positions
    EXPECT_THROW(model.embed(bad, Pooling::Cls), plumb::InvalidArgument);
    bad[0].input_ids = {2, 5, 3};
    bad[0].token_type_ids = {0, 2, 0};  // 2 token types
    EXPECT_THROW(model.embed(bad, Pooling::Cls), plumb::InvalidArgument);
}

TEST(BertCheckpoint, RoundTripGivesIdenticalOutputs) {
    for (std::string name : {"tiny_bert_cat1", "tiny_distilbert_cat2", "tiny_bert_base"}) {
        auto model = load_bert_checkpoint(kRef / name);
        TempDir tmp;
        save_bert_checkpoint(model, tmp.path / "m");
        BertCheckpointInfo info;
        auto again = load_bert_checkpoint(tmp.path / "m", {}, &info);
        EXPECT_EQ(info.heads.num_labels, model.heads().num_labels);
        for (const auto& p : model.parameters()) {
            EXPECT_EQ(again.parameter(p.name), model.parameter(p.name)) << p.name;
        }
        auto seqs = encodings(load_cases(name));
        EXPECT_EQ(again.embed(seqs, Pooling::Mean), model.embed(seqs, Pooling::Mean));
    }
}

TEST(BertCheckpoint, RandomInitRoundTripAndHalfPrecision) {
    HfConfig c;
    c.vocab_size = 50;
    c.hidden_size = 12;
    c.num_hidden_layers = 1;
    c.num_attention_heads = 3;
    c.intermediate_size = 20;
    c.max_position_embeddings = 16;
    BertModel a(c, {true, 2}, 7), b(c, {true, 2}, 7), other(c, {true, 2}, 8);
    EXPECT_EQ(a.parameter("classifier.weight"), b.parameter("classifier.weight"));
    EXPECT_NE(a.parameter("classifier.weight"), other.parameter("classifier.weight"));
    EXPECT_EQ(a.parameter("embeddings.LayerNorm.weight"), std::vector<float>(12, 1.0f));

    TempDir tmp;
    save_bert_checkpoint(a, tmp.path / "bf16", DType::BF16);
    auto h = load_bert_checkpoint(tmp.path / "bf16");
    auto w = a.parameter("encoder.layer.0.attention.self.key.weight");
    auto wh = h.parameter("encoder.layer.0.attention.self.key.weight");
    ASSERT_EQ(w.size(), wh.size());
    for (std::size_t i = 0; i < w.size(); ++i)
        EXPECT_NEAR(wh[i], w[i], std::abs(w[i]) / 128 + 1e-9);
}

TEST(BertCheckpoint, MismatchedCheckpointsListEveryProblem) {
    TempDir tmp;
    const auto dir = tmp.path / "m";
    copy_folder(kRef / "tiny_bert_cat1", dir);
    rewrite_weights(dir, [](auto& t) {
        t.erase("bert.encoder.layer.1.output.dense.weight");
        t.erase("bert.embeddings.LayerNorm.bias");
        auto& q = t.at("bert.encoder.layer.0.attention.self.query.bias");
        q.shape = {4};
        q.bytes.resize(16);
        t.emplace("bert.encoder.layer.2.output.dense.weight",
                  TensorData::from_float32({1}, std::vector<float>{1.0f}));
        t.emplace("cls.predictions.bias", TensorData::from_float32({1}, std::vector<float>{1.0f}));
    });
    try {
        load_bert_checkpoint(dir);
        FAIL() << "no error";
    } catch (const plumb::CheckpointError& e) {
        std::string m = e.what();
        EXPECT_NE(m.find("model.safetensors"), std::string::npos) << m;
        EXPECT_NE(m.find("missing: bert.embeddings.LayerNorm.bias, "
                         "bert.encoder.layer.1.output.dense.weight"),
                  std::string::npos)
            << m;
        EXPECT_NE(m.find("mis-shaped: bert.encoder.layer.0.attention.self.query.bias [4] "
                         "expected [8]"),
                  std::string::npos)
            << m;
        EXPECT_NE(m.find("unexpected: bert.encoder.layer.2.output.dense.weight"), std::string::npos)
            << m;
        EXPECT_EQ(m.find("cls.predictions"), std::string::npos) << m;  // auxiliary: ignored
    }
}

TEST(BertCheckpoint, WrongConfigAndTruncatedFileFail) {
    {  // config says more layers than the file has
        TempDir tmp;
        const auto dir = tmp.path / "m";
        copy_folder(kRef / "tiny_bert_base", dir);
        auto text = plumb::read_file(dir / "config.json");
        auto pos = text.find("\"num_hidden_layers\": 2");
        ASSERT_NE(pos, std::string::npos);
        text.replace(pos, 22, "\"num_hidden_layers\": 3");
        std::ofstream(dir / "config.json") << text;
        EXPECT_THROW(load_bert_checkpoint(dir), plumb::CheckpointError);
    }
    {  // truncated weights
        TempDir tmp;
        const auto dir = tmp.path / "m";
        copy_folder(kRef / "tiny_bert_base", dir);
        fs::resize_file(dir / "model.safetensors", fs::file_size(dir / "model.safetensors") - 100);
        EXPECT_THROW(load_bert_checkpoint(dir), plumb::CheckpointError);
    }
    {  // classifier rows disagree with id2label
        TempDir tmp;
        const auto dir = tmp.path / "m";
        copy_folder(kRef / "tiny_bert_cat2_gelu_new", dir);
        rewrite_weights(dir, [](auto& t) {
            t.at("classifier.weight") =
                TensorData::from_float32({3, 8}, std::vector<float>(24, 0.5f));
            t.at("classifier.bias") = TensorData::from_float32({3}, std::vector<float>(3, 0.0f));
        });
        EXPECT_THROW(load_bert_checkpoint(dir), plumb::CheckpointError);
    }
    {  // no weights
        TempDir tmp;
        fs::create_directories(tmp.path / "m");
        fs::copy_file(kRef / "tiny_bert_base/config.json", tmp.path / "m/config.json");
        EXPECT_THROW(load_bert_checkpoint(tmp.path / "m"), plumb::CheckpointError);
    }
}

TEST(LengthGroupedBatches, GroupsByDecreasingLengthAndCoversAll) {
    std::vector<std::size_t> lengths{3, 9, 1, 9, 5};
    auto b = length_grouped_batches(lengths, 2);
    ASSERT_EQ(b.size(), 3u);
    EXPECT_EQ(b[0], (std::vector<std::size_t>{1, 3}));
    EXPECT_EQ(b[1], (std::vector<std::size_t>{4, 0}));
    EXPECT_EQ(b[2], (std::vector<std::size_t>{2}));
    EXPECT_EQ(length_grouped_batches(lengths, 0).size(), 5u);
    EXPECT_TRUE(length_grouped_batches({}, 4).empty());
}

TEST(BertModelInit, DistilBertSinusoidalPositions) {
    HfConfig c;
    c.model_type = ModelType::DistilBert;
    c.type_vocab_size = 0;
    c.vocab_size = 20;
    c.hidden_size = 6;
    c.num_hidden_layers = 1;
    c.num_attention_heads = 2;
    c.intermediate_size = 8;
    c.max_position_embeddings = 4;
    c.sinusoidal_pos_embds = true;
    BertModel m(c);
    auto w = m.parameter("embeddings.position_embeddings.weight");
    ASSERT_EQ(w.size(), 24u);
    // Row pos, column j: sin (j even) / cos (j odd) of pos / 10000^(2 floor(j/2) / 6).
    EXPECT_NEAR(w[0 * 6 + 0], 0.0, 1e-7);
    EXPECT_NEAR(w[0 * 6 + 1], 1.0, 1e-7);
    EXPECT_NEAR(w[1 * 6 + 0], std::sin(1.0), 1e-6);
    EXPECT_NEAR(w[1 * 6 + 1], std::cos(1.0), 1e-6);
    EXPECT_NEAR(w[3 * 6 + 2], std::sin(3.0 / std::pow(10000.0, 2.0 / 6)), 1e-6);
    EXPECT_NEAR(w[3 * 6 + 5], std::cos(3.0 / std::pow(10000.0, 4.0 / 6)), 1e-6);
    EXPECT_FALSE(m.has_parameter("embeddings.token_type_embeddings.weight"));
    EXPECT_EQ(m.parameter("embeddings.word_embeddings.weight")[0], 0.0f);  // [PAD] row zeroed
}

TEST(BertInference, ConcurrentCallsGiveSameResults) {
    auto model = load_bert_checkpoint(kRef / "tiny_bert_cat1");
    auto seqs = encodings(load_cases("tiny_bert_cat1"));
    const auto want = model.logits(seqs, 64);
    std::vector<std::vector<float>> got(4);
    std::vector<std::thread> threads;
    for (std::size_t t = 0; t < got.size(); ++t) {
        threads.emplace_back([&, t] {
            for (int r = 0; r < 5; ++r) got[t] = model.logits(seqs, 1 + t);
        });
    }
    for (auto& t : threads) t.join();
    for (const auto& g : got) expect_near(g, want, 1e-5, "concurrent");
}
