// Trainable TK, BERT-CAT and BERT-DOT (rerank/detail/trainable.hpp): eval-mode scores equal the
// re-rank stages' scores, gradients reach every parameter group, a few optimizer steps raise
// s(pos) - s(neg), the BERT fused Q/K/V copy is refreshed, saved checkpoints load into the
// stages with identical scores, dropout is seeded and only on in training mode.
#include <gtest/gtest.h>
#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "plugin/error.hpp"
#include "rerank/bert.hpp"
#include "rerank/bert_checkpoint.hpp"
#include "rerank/bi_encoder.hpp"
#include "rerank/bi_encoder_stage.hpp"
#include "rerank/cross_encoder.hpp"
#include "rerank/detail/bert_attention.hpp"
#include "rerank/detail/bert_modules.hpp"
#include "rerank/detail/tk_module.hpp"
#include "rerank/detail/trainable.hpp"
#include "rerank/hf_config.hpp"
#include "rerank/tk_model.hpp"
#include "rerank/tk_stage.hpp"
#include "tests/support/temp_dir.hpp"

namespace fs = std::filesystem;
using namespace plumb::rerank;
using plumb::Candidate;
using plumb::Query;
namespace rd = plumb::rerank::detail;

namespace {

/// A scratch folder (tests/support/temp_dir.hpp) with this file's name prefix.
struct TempDir : plumb::test::TempDir {
    TempDir() : plumb::test::TempDir("plumb_test_trainable") {}
};

const std::vector<std::string> kWords = {
    "the", "cat",  "dog", "sat",  "on",    "mat", "a",     "bird",  "flew", "over",  "house",
    "red", "blue", "car", "tree", "green", "big", "small", "river", "hill", "quick", "brown"};

std::vector<TrainingExample> examples() {
    TrainingExample a;
    a.query = "the red cat";
    a.positive = "a red cat sat on the mat";
    a.negatives = {"the bird flew over the house", "big blue car near a tree"};
    TrainingExample b;
    b.query = "bird over river";
    b.positive = "a small bird flew over the river and the hill";
    b.negatives = {"the dog sat", "quick brown dog on a green hill", "unused third negative"};
    return {a, b};
}

/// Scores of example `e`'s positive and first `n` negatives through a re-rank stage.
std::vector<float> stage_scores(const plumb::RerankStage& stage, const TrainingExample& e,
                                std::size_t n) {
    std::vector<Candidate> cands;
    Candidate c;
    c.docid = "pos";
    c.text = e.positive;
    cands.push_back(c);
    for (std::size_t j = 0; j < n; ++j) {
        c.docid = "neg" + std::to_string(j);
        c.text = e.negatives[j];
        cands.push_back(c);
    }
    return stage.score(Query{"q", e.query}, cands);
}

/// Asserts that score_batch rows equal the stage's scores (n = 2 negatives: the batch minimum).
void expect_matches_stage(rd::Trainable& t, const plumb::RerankStage& stage, double tol) {
    auto batch = examples();
    torch::Tensor s = t.score_batch(batch);
    ASSERT_EQ(s.dim(), 2);
    ASSERT_EQ(s.size(0), 2);
    ASSERT_EQ(s.size(1), 3);  // positive + 2 negatives (the batch's smallest count)
    for (std::size_t i = 0; i < batch.size(); ++i) {
        auto ref = stage_scores(stage, batch[i], 2);
        for (std::size_t j = 0; j < 3; ++j) {
            EXPECT_NEAR(s[static_cast<std::int64_t>(i)][static_cast<std::int64_t>(j)].item<float>(),
                        ref[j], tol)
                << "example " << i << " column " << j;
        }
    }
}

/// Pairwise hinge loss, margin 1, over (positive, first negative) and (positive, second).
torch::Tensor hinge(const torch::Tensor& s) {
    auto pos = s.select(1, 0).unsqueeze(1);
    auto neg = s.narrow(1, 1, s.size(1) - 1);
    return torch::clamp_min(1.0 - pos + neg, 0.0).mean();
}

/// Mean of s(pos) - s(neg) over the batch, without autograd.
double margin(rd::Trainable& t, const std::vector<TrainingExample>& batch) {
    torch::NoGradGuard ng;
    auto s = t.score_batch(batch);
    return (s.select(1, 0).unsqueeze(1) - s.narrow(1, 1, s.size(1) - 1)).mean().item<double>();
}

void expect_gradients_in_every_group(rd::Trainable& t, const std::set<std::string>& names) {
    auto groups = t.parameter_groups();
    std::set<std::string> seen;
    for (auto& g : groups) {
        seen.insert(g.name);
        for (auto& p : g.params) {
            ASSERT_TRUE(p.requires_grad()) << g.name;
            if (p.grad().defined()) p.grad().zero_();
        }
    }
    EXPECT_EQ(seen, names);
    auto loss = hinge(t.score_batch(examples()));
    ASSERT_GT(loss.item<double>(), 0.0);
    loss.backward();
    for (auto& g : groups) {
        double total = 0.0;
        for (auto& p : g.params) {
            ASSERT_TRUE(p.grad().defined()) << g.name;
            total += p.grad().abs().sum().item<double>();
        }
        EXPECT_GT(total, 0.0) << "group " << g.name << (g.no_weight_decay ? " (no decay)" : "");
    }
}

/// Runs `steps` Adam steps of the hinge loss on one repeated batch; returns (first, last) loss.
std::pair<double, double> train_steps(rd::Trainable& t, int steps, double lr) {
    std::vector<torch::Tensor> params;
    for (auto& g : t.parameter_groups())
        params.insert(params.end(), g.params.begin(), g.params.end());
    torch::optim::Adam opt(params, torch::optim::AdamOptions(lr));
    auto batch = examples();
    double first = 0, last = 0;
    for (int i = 0; i < steps; ++i) {
        opt.zero_grad();
        auto loss = hinge(t.score_batch(batch));
        if (i == 0) first = loss.item<double>();
        last = loss.item<double>();
        loss.backward();
        opt.step();
    }
    return {first, last};
}

// ----------------------------------------------------------------------------------------- TK

TkConfig tiny_tk_config() {
    TkConfig c;
    c.embedding_dim = 8;
    c.layers = 2;
    c.heads = 2;
    c.head_dim = 4;
    c.ff_dim = 6;
    c.max_query_length = 6;
    c.max_passage_length = 12;
    return c;
}

std::shared_ptr<TkModel> tiny_tk(const TkConfig& c = tiny_tk_config()) {
    return std::make_shared<TkModel>(TkModel::create(c, TkVocabulary(kWords), {}, 5));
}

// ---------------------------------------------------------------------------------------- BERT

std::vector<std::string> bert_vocab() {
    std::vector<std::string> v = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};
    v.insert(v.end(), kWords.begin(), kWords.end());
    v.push_back("##s");
    return v;
}

HfConfig tiny_bert_config() {
    HfConfig c;
    c.vocab_size = static_cast<std::int64_t>(bert_vocab().size());
    c.hidden_size = 32;
    c.num_hidden_layers = 2;
    c.num_attention_heads = 4;
    c.intermediate_size = 64;
    c.max_position_embeddings = 64;
    c.num_labels = 1;
    return c;
}

/// A tiny BERT checkpoint folder: with a 1-label classifier (`labels` 1), a 2-label one, or
/// encoder only (0).
fs::path tiny_bert_folder(const fs::path& dir, std::int64_t labels, std::uint64_t seed = 3) {
    auto c = tiny_bert_config();
    if (labels > 0) c.num_labels = labels;
    BertModel m(c, BertHeads{labels > 0, labels}, seed);
    Vocab vocab(bert_vocab());
    save_bert_checkpoint(m, dir, DType::F32, &vocab);
    return dir;
}

rd::TrainableOptions cat_options(bool dropout = false) {
    rd::TrainableOptions o;
    o.kind = rd::TrainableKind::Cat;
    o.max_length = 24;
    o.dropout = dropout;
    o.seed = 11;
    return o;
}

rd::TrainableOptions dot_options(const std::string& pooling, const std::string& similarity) {
    rd::TrainableOptions o;
    o.kind = rd::TrainableKind::Dot;
    o.query_max_length = 8;
    o.passage_max_length = 12;
    o.pooling = pooling;
    o.similarity = similarity;
    o.dropout = false;
    return o;
}

}  // namespace

// ----------------------------------------------------------------------------------------- TK

TEST(TrainableTk, EvalScoresEqualTheStage) {
    auto t = rd::make_trainable_tk(tiny_tk());
    EXPECT_EQ(t->kind(), rd::TrainableKind::Tk);
    t->set_training(false);
    auto stage = t->stage(10, 2);
    expect_matches_stage(*t, *stage, 1e-5);
}

TEST(TrainableTk, GroupsGetGradients) {
    auto t = rd::make_trainable_tk(tiny_tk());
    expect_gradients_in_every_group(*t, {"embeddings", "contextualizer", "kernels"});
    // kernel weights are in "kernels", the mixer in "contextualizer" (no decay)
    bool mixer_found = false;
    for (auto& g : t->parameter_groups()) {
        for (auto& p : g.params) {
            if (p.numel() == 1 && g.name == "contextualizer" && g.no_weight_decay)
                mixer_found = true;
            if (g.name == "kernels") {
                EXPECT_EQ(p.numel(), 11);  // W of the 11 kernels
            }
        }
    }
    EXPECT_TRUE(mixer_found);
}

TEST(TrainableTk, FrozenEmbeddingsAreInNoGroupAndStay) {
    auto c = tiny_tk_config();
    c.train_embeddings = false;
    auto model = tiny_tk(c);
    auto t = rd::make_trainable_tk(model);
    for (auto& g : t->parameter_groups()) EXPECT_NE(g.name, "embeddings");
    auto emb = rd::TkModelAccess::module(*model)->embeddings->weight;
    EXPECT_FALSE(emb.requires_grad());
    auto before = emb.clone();
    train_steps(*t, 3, 1e-2);
    EXPECT_TRUE(torch::equal(before, emb));
    // named_parameters still lists it (checkpoint names)
    bool listed = false;
    for (auto& [name, p] : t->named_parameters()) listed |= name == "embeddings.weight";
    EXPECT_TRUE(listed);
}

TEST(TrainableTk, StepsRaiseTheMarginAndTheSharedStageSeesThem) {
    auto model = tiny_tk();
    auto t = rd::make_trainable_tk(model);
    auto stage = t->stage(10, 4);  // created before training: must see the new weights
    const auto batch = examples();
    const double before = margin(*t, batch);
    auto [first, last] = train_steps(*t, 25, 1e-2);
    EXPECT_LT(last, first);
    EXPECT_GT(margin(*t, batch), before);
    t->set_training(false);
    expect_matches_stage(*t, *stage, 1e-5);
}

TEST(TrainableTk, SaveThenLoadGivesIdenticalScores) {
    TempDir tmp;
    auto t = rd::make_trainable_tk(tiny_tk());
    train_steps(*t, 3, 1e-2);
    t->set_training(false);
    t->save(tmp.path / "tk");
    auto loaded = make_tk_stage(tmp.path / "tk", TkStageOptions{10, 4, 0, "tk", ""});
    auto mine = t->stage(10, 4);
    for (const auto& e : examples()) {
        auto a = stage_scores(*mine, e, 2);
        auto b = stage_scores(*loaded, e, 2);
        for (std::size_t j = 0; j < a.size(); ++j) EXPECT_EQ(a[j], b[j]);
    }
    // load_trainable reads the same folder
    rd::TrainableOptions o;
    o.kind = rd::TrainableKind::Tk;
    auto again = rd::load_trainable(tmp.path / "tk", o);
    again->set_training(false);
    expect_matches_stage(*again, *mine, 1e-5);
}

TEST(TrainableTk, BadInput) {
    auto t = rd::make_trainable_tk(tiny_tk());
    auto batch = examples();
    batch[1].negatives.clear();
    EXPECT_THROW(t->score_batch(batch), plumb::InvalidArgument);
    EXPECT_THROW(t->score_batch({}), plumb::InvalidArgument);
    EXPECT_THROW(t->encode_batch(examples()), plumb::InvalidArgument);
    EXPECT_THROW(rd::make_trainable_tk(nullptr), plumb::InvalidArgument);
}

// ------------------------------------------------------------------------------------ BERT-CAT

TEST(TrainableCat, EvalScoresEqualTheStageForOneAndTwoLabels) {
    for (std::int64_t labels : {1, 2}) {
        TempDir tmp;
        auto t = rd::load_trainable(tiny_bert_folder(tmp.path / "m", labels), cat_options(true));
        EXPECT_EQ(t->kind(), rd::TrainableKind::Cat);
        t->set_training(false);
        auto own = t->stage(10, 3);
        expect_matches_stage(*t, *own, 1e-5);
        CrossEncoderOptions o;
        o.max_length = 24;
        auto loaded = CrossEncoderStage::from_folder(tmp.path / "m", o);
        expect_matches_stage(*t, *loaded, 1e-5);
    }
}

TEST(TrainableCat, NewHeadIsSeededAndSaved) {
    TempDir tmp;
    auto dir = tiny_bert_folder(tmp.path / "enc", 0);
    EXPECT_THROW(CrossEncoderStage::from_folder(dir), plumb::CheckpointError);  // no classifier
    auto a = rd::load_trainable(dir, cat_options());
    auto b = rd::load_trainable(dir, cat_options());
    auto o = cat_options();
    o.seed = 12;
    auto c = rd::load_trainable(dir, o);
    for (auto* t : {a.get(), b.get(), c.get()}) t->set_training(false);
    torch::NoGradGuard ng;
    auto sa = a->score_batch(examples()), sb = b->score_batch(examples()),
         sc = c->score_batch(examples());
    EXPECT_TRUE(torch::equal(sa, sb));
    EXPECT_FALSE(torch::equal(sa, sc));
    // head: pooler + classifier, 1 label
    std::set<std::string> names;
    for (auto& [name, p] : a->named_parameters()) names.insert(name);
    EXPECT_TRUE(names.count("classifier.weight"));
    EXPECT_TRUE(names.count("pooler.dense.weight"));
    a->save(tmp.path / "cat");
    CrossEncoderOptions so;
    so.max_length = 24;
    auto stage = CrossEncoderStage::from_folder(tmp.path / "cat", so);
    EXPECT_EQ(stage->model().heads().num_labels, 1);
    expect_matches_stage(*a, *stage, 1e-5);
    EXPECT_TRUE(fs::exists(tmp.path / "cat" / "tokenizer_config.json"));
    EXPECT_TRUE(fs::exists(tmp.path / "cat" / "vocab.txt"));
}

TEST(TrainableCat, GroupsGetGradients) {
    TempDir tmp;
    auto t = rd::load_trainable(tiny_bert_folder(tmp.path / "m", 1), cat_options());
    expect_gradients_in_every_group(*t, {"encoder", "head"});
    for (auto& g : t->parameter_groups()) {
        // no-decay groups hold exactly 1-d tensors (biases, LayerNorm weights)
        for (auto& p : g.params) {
            if (g.no_weight_decay) {
                EXPECT_EQ(p.dim(), 1) << g.name;
            }
        }
    }
}

TEST(TrainableCat, StepsRaiseTheMargin) {
    TempDir tmp;
    auto t = rd::load_trainable(tiny_bert_folder(tmp.path / "m", 1), cat_options());
    const auto batch = examples();
    const double before = margin(*t, batch);
    auto [first, last] = train_steps(*t, 10, 1e-3);
    EXPECT_LT(last, first);
    EXPECT_GT(margin(*t, batch), before);
    // after optimizer steps the stage (refreshed by set_training(false)) scores like the model
    t->set_training(false);
    auto stage = t->stage(10, 3);
    expect_matches_stage(*t, *stage, 1e-5);
}

TEST(TrainableCat, FusedCopyIsRefreshedAfterAParameterChange) {
    TempDir tmp;
    const auto dir = tiny_bert_folder(tmp.path / "m", 1);
    auto t = rd::load_trainable(dir, cat_options());
    t->set_training(false);
    auto stage = t->stage(10, 3);
    const auto e = examples()[0];
    const auto old_scores = stage_scores(*stage, e, 2);
    auto& cat = dynamic_cast<const CrossEncoderStage&>(*stage);
    auto net = rd::BertModelAccess::net(cat.model());
    auto layer = net->encoder->layer->ptr<rd::BertLayerImpl>(0);
    {
        torch::NoGradGuard ng;
        layer->attention->self->query->weight.add_(0.5);
        layer->attention->self->value->bias.add_(0.3);
    }
    EXPECT_FALSE(layer->fused_current());
    // even before the refresh the stage must not use the stale copy
    const auto mid_scores = stage_scores(*stage, e, 2);
    t->set_training(false);
    EXPECT_TRUE(layer->fused_current());
    const auto new_scores = stage_scores(*stage, e, 2);
    EXPECT_NE(new_scores[0], old_scores[0]);
    for (std::size_t j = 0; j < 3; ++j) EXPECT_EQ(mid_scores[j], new_scores[j]);
    expect_matches_stage(*t, *stage, 1e-5);
    // the fresh fused projection equals concatenating the parameters
    auto& s = layer->attention->self;
    EXPECT_TRUE(torch::equal(layer->fused_weight,
                             torch::cat({s->query->weight, s->key->weight, s->value->weight}, 0)));
}

TEST(TrainableCat, SaveThenFromFolderGivesIdenticalScores) {
    TempDir tmp;
    auto t = rd::load_trainable(tiny_bert_folder(tmp.path / "m", 1), cat_options(true));
    train_steps(*t, 2, 1e-3);
    t->set_training(false);
    t->save(tmp.path / "out");
    CrossEncoderOptions o;
    o.max_length = 24;
    auto loaded = CrossEncoderStage::from_folder(tmp.path / "out", o);
    auto mine = t->stage(10, 32);
    for (const auto& e : examples()) {
        auto a = stage_scores(*mine, e, 2);
        auto b = stage_scores(*loaded, e, 2);
        for (std::size_t j = 0; j < a.size(); ++j) EXPECT_EQ(a[j], b[j]);
    }
}

TEST(TrainableCat, DropoutOnlyInTrainingModeAndSeeded) {
    TempDir tmp;
    const auto dir = tiny_bert_folder(tmp.path / "m", 1);
    auto t = rd::load_trainable(dir, cat_options(true));
    auto u = rd::load_trainable(dir, cat_options(true));
    torch::NoGradGuard ng;
    t->set_training(true);
    u->set_training(true);
    auto a1 = t->score_batch(examples());
    auto a2 = t->score_batch(examples());
    EXPECT_FALSE(torch::equal(a1, a2));                         // new masks each pass
    EXPECT_TRUE(torch::equal(a1, u->score_batch(examples())));  // same seed, same masks
    t->set_training(false);
    auto b1 = t->score_batch(examples());
    auto b2 = t->score_batch(examples());
    EXPECT_TRUE(torch::equal(b1, b2));
    // the stage never applies dropout, even while the model is in training mode
    auto stage = t->stage(10, 3);
    t->set_training(true);
    auto s1 = stage_scores(*stage, examples()[0], 2);
    auto s2 = stage_scores(*stage, examples()[0], 2);
    EXPECT_EQ(s1, s2);
    // without dropout, training mode scores equal eval mode scores
    auto v = rd::load_trainable(dir, cat_options(false));
    v->set_training(true);
    EXPECT_TRUE(torch::allclose(v->score_batch(examples()), b1, 1e-5, 1e-6));
}

TEST(TrainableCat, FrozenWordEmbeddingsAreInNoGroupAndStay) {
    TempDir tmp;
    auto o = cat_options();
    o.freeze_word_embeddings = true;
    auto t = rd::load_trainable(tiny_bert_folder(tmp.path / "m", 1), o);
    torch::Tensor words, positions;
    for (auto& [name, p] : t->named_parameters()) {
        if (name == "embeddings.word_embeddings.weight") words = p;
        if (name == "embeddings.position_embeddings.weight") positions = p;
    }
    ASSERT_TRUE(words.defined() && positions.defined());  // still listed (checkpoint names)
    EXPECT_FALSE(words.requires_grad());
    EXPECT_TRUE(positions.requires_grad());
    for (auto& g : t->parameter_groups()) {
        for (auto& p : g.params) EXPECT_FALSE(p.is_same(words)) << g.name;
    }
    const auto w0 = words.clone(), p0 = positions.clone();
    train_steps(*t, 3, 1e-2);
    EXPECT_TRUE(torch::equal(w0, words));
    EXPECT_FALSE(torch::equal(p0, positions));  // the rest trains
}

// ------------------------------------------------------------------------------------ BERT-DOT

TEST(TrainableDot, EvalScoresEqualTheStage) {
    for (const auto& [pooling, similarity] :
         std::vector<std::pair<std::string, std::string>>{{"cls", "dot"}, {"mean", "cosine"}}) {
        TempDir tmp;
        auto t = rd::load_trainable(tiny_bert_folder(tmp.path / "m", 0),
                                    dot_options(pooling, similarity));
        EXPECT_EQ(t->kind(), rd::TrainableKind::Dot);
        t->set_training(false);
        auto stage = t->stage(10, 3);
        expect_matches_stage(*t, *stage, 1e-5);
        auto [q, p] = t->encode_batch(examples());
        EXPECT_EQ(q.sizes(), (std::vector<std::int64_t>{2, 32}));
        EXPECT_EQ(p.sizes(), (std::vector<std::int64_t>{6, 32}));
        if (similarity == "cosine") {
            EXPECT_NEAR(q[0].norm().item<double>(), 1.0, 1e-5);
            EXPECT_NEAR(p[5].norm().item<double>(), 1.0, 1e-5);
        }
        // row i·G + j of p is example i's passage j: score_batch = q_i · p_{i·G+j}
        auto s = t->score_batch(examples());
        EXPECT_NEAR(s[1][2].item<double>(), (q[1] * p[5]).sum().item<double>(), 1e-5);
    }
}

TEST(TrainableDot, GradientsStepsAndSave) {
    TempDir tmp;
    // a checkpoint with a classifier: the bi-encoder ignores the heads
    auto t = rd::load_trainable(tiny_bert_folder(tmp.path / "m", 1), dot_options("cls", "dot"));
    expect_gradients_in_every_group(*t, {"encoder"});
    const auto batch = examples();
    const double before = margin(*t, batch);
    auto [first, last] = train_steps(*t, 10, 1e-3);
    EXPECT_LT(last, first);
    EXPECT_GT(margin(*t, batch), before);
    t->set_training(false);
    t->save(tmp.path / "dot");
    BiEncoderOptions o;
    o.query_max_length = 8;
    o.passage_max_length = 12;
    auto enc = BiEncoder::from_folder(tmp.path / "dot", o);
    BiEncoderStage loaded(enc);
    auto mine = t->stage(10, 3);
    for (const auto& e : examples()) {
        auto a = stage_scores(*mine, e, 2);
        auto b = stage_scores(loaded, e, 2);
        for (std::size_t j = 0; j < a.size(); ++j) EXPECT_EQ(a[j], b[j]);
    }
}

TEST(TrainableDot, BadOptions) {
    TempDir tmp;
    const auto dir = tiny_bert_folder(tmp.path / "m", 0);
    EXPECT_THROW(rd::load_trainable(dir, dot_options("max", "dot")), plumb::InvalidArgument);
    EXPECT_THROW(rd::load_trainable(dir, dot_options("cls", "l2")), plumb::InvalidArgument);
    EXPECT_THROW(rd::load_trainable(tmp.path / "missing", dot_options("cls", "dot")), plumb::Error);
}

TEST(TrainableCat, DistilBertWithFixedSinusoidalPositions) {
    TempDir tmp;
    auto c = tiny_bert_config();
    c.model_type = ModelType::DistilBert;
    c.type_vocab_size = 0;
    c.sinusoidal_pos_embds = true;
    c.num_labels = 2;
    {
        BertModel m(c, BertHeads{true, 2}, 4);
        Vocab vocab(bert_vocab());
        save_bert_checkpoint(m, tmp.path / "d", DType::F32, &vocab);
    }
    auto t = rd::load_trainable(tmp.path / "d", cat_options(true));
    torch::Tensor positions;
    for (auto& [name, p] : t->named_parameters()) {
        if (name == "embeddings.position_embeddings.weight") positions = p;
    }
    ASSERT_TRUE(positions.defined());
    EXPECT_FALSE(positions.requires_grad());  // transformers freezes sinusoidal positions
    for (auto& g : t->parameter_groups()) {
        for (auto& p : g.params) EXPECT_FALSE(p.is_same(positions)) << g.name;
    }
    const auto before = positions.clone();
    train_steps(*t, 2, 1e-3);
    EXPECT_TRUE(torch::equal(before, positions));
    t->set_training(false);
    CrossEncoderOptions o;
    o.max_length = 24;
    t->save(tmp.path / "out");
    auto loaded = CrossEncoderStage::from_folder(tmp.path / "out", o);
    expect_matches_stage(*t, *loaded, 1e-5);
}

TEST(TrainableConfig, DropoutProbabilitiesAreReadAndWritten) {
    const std::string bert = R"({"model_type": "bert", "vocab_size": 30, "hidden_size": 8,
        "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 16,
        "hidden_dropout_prob": 0.2, "attention_probs_dropout_prob": 0.3,
        "classifier_dropout": null})";
    auto c = parse_hf_config(bert);
    EXPECT_DOUBLE_EQ(c.hidden_dropout_prob, 0.2);
    EXPECT_DOUBLE_EQ(c.attention_probs_dropout_prob, 0.3);
    EXPECT_FALSE(c.classifier_dropout.has_value());
    EXPECT_DOUBLE_EQ(c.effective_classifier_dropout(), 0.2);  // null -> hidden dropout
    auto again = parse_hf_config(hf_config_to_json(c));
    EXPECT_DOUBLE_EQ(again.hidden_dropout_prob, 0.2);
    EXPECT_DOUBLE_EQ(again.attention_probs_dropout_prob, 0.3);
    EXPECT_FALSE(again.classifier_dropout.has_value());

    auto defaults = parse_hf_config(R"({"model_type": "bert"})");
    EXPECT_DOUBLE_EQ(defaults.hidden_dropout_prob, 0.1);  // transformers' BertConfig defaults
    EXPECT_DOUBLE_EQ(defaults.attention_probs_dropout_prob, 0.1);

    const std::string distil = R"({"model_type": "distilbert", "vocab_size": 30, "dim": 8,
        "n_layers": 1, "n_heads": 2, "hidden_dim": 16, "dropout": 0.15,
        "attention_dropout": 0.05, "seq_classif_dropout": 0.25})";
    auto d = parse_hf_config(distil);
    EXPECT_DOUBLE_EQ(d.hidden_dropout_prob, 0.15);
    EXPECT_DOUBLE_EQ(d.attention_probs_dropout_prob, 0.05);
    EXPECT_DOUBLE_EQ(d.effective_classifier_dropout(), 0.25);
    auto d2 = parse_hf_config(hf_config_to_json(d));
    EXPECT_DOUBLE_EQ(d2.hidden_dropout_prob, 0.15);
    EXPECT_DOUBLE_EQ(d2.attention_probs_dropout_prob, 0.05);
    EXPECT_DOUBLE_EQ(d2.effective_classifier_dropout(), 0.25);
    EXPECT_DOUBLE_EQ(
        parse_hf_config(R"({"model_type": "distilbert"})").effective_classifier_dropout(),
        0.2);  // DistilBertConfig's seq_classif_dropout default

    EXPECT_THROW(parse_hf_config(R"({"model_type": "bert", "hidden_dropout_prob": 1.5})"),
                 plumb::CheckpointError);
    EXPECT_THROW(parse_hf_config(R"({"model_type": "bert", "classifier_dropout": -0.1})"),
                 plumb::CheckpointError);
    EXPECT_THROW(parse_hf_config(R"({"model_type": "bert", "hidden_dropout_prob": "x"})"),
                 plumb::CheckpointError);
}

TEST(TrainableTk, SameModelSameScoresAfterSameSteps) {
    // Two identical models trained by the same steps stay identical (no hidden randomness).
    auto a = rd::make_trainable_tk(tiny_tk());
    auto b = rd::make_trainable_tk(tiny_tk());
    train_steps(*a, 3, 1e-2);
    train_steps(*b, 3, 1e-2);
    torch::NoGradGuard ng;
    EXPECT_TRUE(torch::equal(a->score_batch(examples()), b->score_batch(examples())));
}

TEST(Trainable, EmptyTextsGiveFiniteScoresAndGradients) {
    TempDir tmp;
    auto batch = examples();
    batch[0].query = "";
    batch[0].positive = "";
    batch[1].negatives[0] = "   ";
    auto check = [&](rd::Trainable& t, const char* what) {
        SCOPED_TRACE(what);
        t.set_training(false);
        auto s = t.score_batch(batch);
        EXPECT_TRUE(torch::isfinite(s).all().item<bool>());
        auto stage = t.stage(10, 2);
        for (std::size_t i = 0; i < batch.size(); ++i) {
            auto ref = stage_scores(*stage, batch[i], 2);
            for (std::size_t j = 0; j < 3; ++j) {
                EXPECT_NEAR(
                    s[static_cast<std::int64_t>(i)][static_cast<std::int64_t>(j)].item<float>(),
                    ref[j], 1e-5);
            }
        }
        hinge(s).backward();
        for (auto& g : t.parameter_groups()) {
            for (auto& p : g.params) {
                if (p.grad().defined()) {
                    EXPECT_TRUE(torch::isfinite(p.grad()).all().item<bool>()) << g.name;
                }
            }
        }
    };
    auto tk = rd::make_trainable_tk(tiny_tk());
    check(*tk, "tk");
    auto cat = rd::load_trainable(tiny_bert_folder(tmp.path / "c", 1), cat_options());
    check(*cat, "cat");
    auto dot =
        rd::load_trainable(tiny_bert_folder(tmp.path / "d", 0), dot_options("mean", "cosine"));
    check(*dot, "dot");
}

TEST(TrainableTk, BatchesOfManyPassagesGroupedByLengthEqualOnePaddedBatch) {
    // 9 examples x (1 + 2) = 27 passages of 1..12 words: score_batch contextualises them in
    // length-sorted groups of 16; scores and every gradient must equal one padded batch.
    auto model = tiny_tk();
    auto t = rd::make_trainable_tk(model);
    std::mt19937 rng(3);
    std::uniform_int_distribution<std::size_t> word(0, kWords.size() - 1), len(1, 14);
    auto text = [&](std::size_t n) {
        std::string s;
        for (std::size_t i = 0; i < n; ++i) s += (i ? " " : "") + kWords[word(rng)];
        return s;
    };
    std::vector<TrainingExample> batch(9);
    for (auto& e : batch) {
        e.query = text(3);
        e.positive = text(len(rng));
        e.negatives = {text(len(rng)), text(len(rng))};
    }
    auto mod = rd::TkModelAccess::module(*model);
    auto grads = [&] {
        std::map<std::string, torch::Tensor> g;
        for (const auto& kv : mod->named_parameters(true)) {
            if (kv.value().grad().defined()) {
                g[kv.key()] = kv.value().grad().clone();
                kv.value().grad().zero_();
            }
        }
        return g;
    };
    mod->zero_grad();
    auto s = t->score_batch(batch);  // [9, 3]
    (s * torch::linspace(-1.0, 1.0, 27).view({9, 3})).sum().backward();
    auto g_grouped = grads();
    // The same scores from one padded batch through the module.
    const auto& c = model->config();
    std::vector<std::vector<std::int64_t>> qs, ps;
    for (const auto& e : batch) {
        for (const std::string* p : {&e.positive, &e.negatives[0], &e.negatives[1]}) {
            qs.push_back(model->tokenizer().encode(e.query, std::size_t(c.max_query_length)));
            ps.push_back(model->tokenizer().encode(*p, std::size_t(c.max_passage_length)));
        }
    }
    std::vector<std::span<const std::int64_t>> qv(qs.begin(), qs.end()), pv(ps.begin(), ps.end());
    auto [q_ids, q_mask] = rd::pack_token_ids(qv);
    auto [p_ids, p_mask] = rd::pack_token_ids(pv);
    auto ref = mod->forward(q_ids, q_mask, p_ids, p_mask).view({9, 3});
    (ref * torch::linspace(-1.0, 1.0, 27).view({9, 3})).sum().backward();
    auto g_ref = grads();
    EXPECT_TRUE(torch::allclose(s.detach(), ref.detach(), 1e-5, 1e-5));
    ASSERT_EQ(g_grouped.size(), g_ref.size());
    for (const auto& [name, gr] : g_ref) {
        EXPECT_TRUE(torch::allclose(g_grouped.at(name), gr, 1e-4, 1e-6)) << name;
    }
}

// ------------------------------------------------------- BERT training through the kernels
// BertLayerImpl::forward_train runs BERT's inference kernels with their own backward passes
// (detail/bert_attention.hpp); forward_train_reference is the former ATen path, whose autograd
// is the independent derivation the kernels' gradients are checked against.

namespace {

/// Every gradient of a BertNet's encoder (and the pooler) for a weighted sum of its pooled
/// outputs, through the kernels or the reference path; dropout (0.1 / 0.1) from a generator
/// seeded with `seed` when `dropout`.
std::pair<torch::Tensor, std::map<std::string, torch::Tensor>> bert_grads(
    rd::BertNet& net, bool reference, bool dropout, const torch::Tensor& ids,
    const torch::Tensor& types, const torch::Tensor& mask) {
    net->set_reference_kernels(reference);
    net->train(true);
    if (dropout) {
        auto d = std::make_shared<rd::BertDropout>();
        d->hidden = 0.1;
        d->attention = 0.1;
        d->generator = at::detail::createCPUGenerator(19);
        net->dropout = d;
    } else {
        net->dropout.reset();
    }
    net->zero_grad();
    auto hidden = net->forward(ids, types, mask);
    auto pooled = net->pool(hidden.select(1, 0));
    auto w = torch::linspace(-1.0, 1.3, hidden.numel()).view(hidden.sizes());
    ((hidden * w).sum() + pooled.sum()).backward();
    std::map<std::string, torch::Tensor> g;
    for (const auto& kv : net->named_parameters(true)) {
        if (kv.value().grad().defined()) g[kv.key()] = kv.value().grad().clone();
    }
    net->set_reference_kernels(false);
    return {hidden.detach(), g};
}

}  // namespace

TEST(BertKernels, TrainingGradientsEqualTheReferencePath) {
    auto c = tiny_bert_config();
    BertModel m(c, BertHeads{true, 1}, 5);
    auto net = rd::BertModelAccess::net(m);
    {
        // Non-trivial biases and norms (the initialisation zeroes biases, sets norms to 1).
        torch::NoGradGuard ng;
        torch::manual_seed(7);
        for (auto& kv : net->named_parameters(true)) {
            if (kv.key().find("bias") != std::string::npos) kv.value().uniform_(-0.2, 0.2);
            if (kv.key().find("LayerNorm.weight") != std::string::npos) {
                kv.value().uniform_(0.5, 1.5);
            }
        }
    }
    for (auto& p : net->parameters()) p.set_requires_grad(true);
    // Three sequences: full length, trailing padding (skipped keys), padding inside (additive).
    auto ids = torch::tensor({{2, 7, 8, 3, 9, 10, 11, 3}, {2, 12, 3, 13, 3, 0, 0, 0},
                              {2, 14, 0, 15, 3, 16, 17, 3}},
                             torch::kInt64);
    auto types = torch::tensor({{0, 0, 0, 0, 1, 1, 1, 1}, {0, 0, 0, 1, 1, 0, 0, 0},
                                {0, 0, 0, 0, 0, 1, 1, 1}},
                               torch::kInt64);
    auto mask = ids.ne(0).to(torch::kInt64);
    mask[2][2] = 0;
    for (const bool dropout : {false, true}) {
        auto [h_ref, g_ref] = bert_grads(net, true, dropout, ids, types, mask);
        auto [h_new, g_new] = bert_grads(net, false, dropout, ids, types, mask);
        // With dropout, equal outputs show both paths drew the same masks.
        EXPECT_TRUE(torch::allclose(h_new, h_ref, 1e-5, 1e-5))
            << dropout << " " << (h_new - h_ref).abs().max().item<float>();
        ASSERT_EQ(g_new.size(), g_ref.size());
        EXPECT_GE(g_ref.size(), 30u);  // embeddings, 2 layers x 16, pooler
        for (const auto& [name, gr] : g_ref) {
            ASSERT_TRUE(g_new.contains(name)) << name;
            const auto& gn = g_new.at(name);
            const float scale = gr.abs().max().item<float>();
            EXPECT_GT(scale, 0.0f) << name;  // every parameter is exercised
            EXPECT_LE((gn - gr).abs().max().item<float>(), 1e-4f * (1.0f + scale))
                << dropout << " " << name;
        }
    }
    // Dropout changes the outputs (the masks are applied at all).
    auto [h0, g0] = bert_grads(net, false, false, ids, types, mask);
    auto [h1, g1] = bert_grads(net, false, true, ids, types, mask);
    EXPECT_FALSE(torch::allclose(h0, h1, 1e-3, 1e-3));
}

TEST(BertKernels, AttentionBackwardWithDropoutMatchesAutograd) {
    // softmax(Q K^T / sqrt(hd) + mask) ⊙ D, times V, against ATen's autograd, with trailing
    // padding (skipped keys), padding inside and a dropout mask D of zeros and 1/(1-p).
    torch::manual_seed(3);
    const std::int64_t b = 2, l = 5, heads = 2, hd = 3, h = heads * hd;
    auto qkv = torch::randn({b, l, 3 * h}, torch::requires_grad());
    auto keep = torch::ones({b, l});
    keep[0][3] = 0;
    keep[0][4] = 0;
    keep[1][1] = 0;
    auto mask_add = ((1.0 - keep) * std::numeric_limits<float>::lowest()).view({b, 1, 1, l});
    auto drop = torch::empty({b * heads, l, l}).bernoulli_(0.7).mul_(1.0 / 0.7);
    ASSERT_GT(drop.eq(0).sum().item<std::int64_t>(), 0);
    auto gc = torch::randn({b, l, h});

    auto ctx = rd::fused_self_attention_autograd(qkv, mask_add, heads, hd, drop);
    (ctx * gc).sum().backward();
    auto g_kernel = qkv.grad().clone();
    qkv.grad().zero_();

    auto split = [&](std::int64_t i) {
        return qkv.narrow(2, i * h, h).reshape({b, l, heads, hd}).transpose(1, 2);
    };
    auto scores = torch::matmul(split(0), split(1).transpose(-2, -1)) / std::sqrt(double(hd));
    scores = scores.masked_fill(keep.eq(0).view({b, 1, 1, l}),
                                std::numeric_limits<float>::lowest());
    auto p = torch::softmax(scores, -1) * drop.view({b, heads, l, l});
    auto ref = torch::matmul(p, split(2)).transpose(1, 2).reshape({b, l, h});
    (ref * gc).sum().backward();
    EXPECT_TRUE(torch::allclose(ctx.detach(), ref.detach(), 1e-5, 1e-5));
    EXPECT_TRUE(torch::allclose(g_kernel, qkv.grad(), 1e-4, 1e-5))
        << (g_kernel - qkv.grad()).abs().max().item<float>();
}
