// Int8 cross-encoders (rerank/bert.hpp Precision::Int8, rerank/detail/int8_linear.hpp):
//  - one quantised linear layer against a worst-case error bound derived from the quantisation
//    steps (not from the code's output);
//  - a random model: int8 is really used (differs from fp32), stays within the stated relative
//    tolerance, follows set_parameter() and switches back to bit-identical fp32;
//  - a cross-encoder trained in the test: nDCG@10 of int8 within 0.005 of fp32;
//  - bad option values are clear errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "plugin/error.hpp"
#include "plugin/registry.hpp"
#include "rerank/bert.hpp"
#include "rerank/cross_encoder.hpp"
#include "rerank/detail/int8_linear.hpp"
#include "rerank/train_data.hpp"
#include "rerank/trainer.hpp"
#include "tests/rerank/fixtures.hpp"
#include "tests/support/temp_dir.hpp"

namespace fs = std::filesystem;
using namespace plumb::rerank;

namespace {

struct TempDir : plumb::test::TempDir {
    TempDir() : plumb::test::TempDir("plumb_test_int8") {}
};

HfConfig small_config() {
    HfConfig c;
    c.vocab_size = 50;
    c.hidden_size = 64;
    c.num_hidden_layers = 2;
    c.num_attention_heads = 4;
    c.intermediate_size = 128;
    c.max_position_embeddings = 32;
    c.type_vocab_size = 2;
    return c;
}

std::vector<Encoding> some_sequences() {
    std::vector<Encoding> seqs;
    for (int s = 0; s < 6; ++s) {
        Encoding e;
        const int n = 5 + 3 * s;
        for (int i = 0; i < n; ++i) {
            e.input_ids.push_back(1 + (7 * i + 11 * s) % 49);
            e.token_type_ids.push_back(i < n / 2 ? 0 : 1);
        }
        seqs.push_back(e);
    }
    return seqs;
}

/// Projection weights x4 (std 0.08 instead of 0.02): the blocks then change the hidden states
/// substantially, so an error in a quantised projection cannot hide behind the residuals.
void strengthen(BertModel& m) {
    for (const auto& p : m.parameters()) {
        const auto& n = p.name;
        if (n.rfind("encoder.layer.", 0) != 0 || n.find("LayerNorm") != std::string::npos ||
            n.size() < 7 || n.compare(n.size() - 7, 7, ".weight") != 0) {
            continue;
        }
        auto v = m.parameter(n);
        for (auto& f : v) f *= 4.0f;
        m.set_parameter(n, v);
    }
}

double relative_rms(const std::vector<std::vector<float>>& a,
                    const std::vector<std::vector<float>>& b) {
    double num = 0, den = 0;
    for (std::size_t s = 0; s < a.size(); ++s) {
        for (std::size_t i = 0; i < a[s].size(); ++i) {
            num += std::pow(double(a[s][i]) - b[s][i], 2);
            den += double(b[s][i]) * b[s][i];
        }
    }
    return std::sqrt(num / den);
}

}  // namespace

TEST(Int8Linear, WithinTheQuantisationBound) {
    if (plumb::rerank::detail::int8_engine_name().empty()) GTEST_SKIP() << "no quantized engine";
    torch::manual_seed(3);
    const std::int64_t out = 24, in = 40, rows = 7;
    auto w = torch::randn({out, in}) * 0.05;
    auto b = torch::randn({out}) * 0.1;
    auto x = torch::randn({rows, in}) * 2.0 + 0.5;
    x[2][3] = 9.0;  // an outlier widens the activation step
    plumb::rerank::detail::Int8Linear lin(w, b);
    auto y = lin(x);
    ASSERT_EQ(y.sizes(), (torch::IntArrayRef{rows, out}));
    // 3-d input: the same rows
    auto y3 = lin(x.view({1, rows, in}));
    EXPECT_TRUE(torch::equal(y3.view({rows, out}), y));

    // Bound: weights rounded to steps s_w[r] = max|w_r|/127, activations to steps of at most
    // s_x = (max(x,0) - min(x,0)) / 127 (7-bit range, covering the 8-bit case), so each
    // product x w is off by at most |x| s_w/2 + |w| s_x/2 + s_w s_x/4, summed over inputs.
    auto xa = x.accessor<float, 2>();
    auto wa = w.accessor<float, 2>();
    auto ya = y.accessor<float, 2>();
    const double xmax = std::max(0.0, x.max().item<double>());
    const double xmin = std::min(0.0, x.min().item<double>());
    const double sx = (xmax - xmin) / 127.0;
    double max_diff = 0, max_ratio = 0;
    for (std::int64_t r = 0; r < out; ++r) {
        double wmax = 0;
        for (std::int64_t j = 0; j < in; ++j) wmax = std::max(wmax, std::abs(double(wa[r][j])));
        const double sw = wmax / 127.0;
        for (std::int64_t i = 0; i < rows; ++i) {
            double exact = b[r].item<double>(), bound = 1e-5;
            for (std::int64_t j = 0; j < in; ++j) {
                exact += double(xa[i][j]) * wa[r][j];
                bound += std::abs(xa[i][j]) * sw / 2 + std::abs(wa[r][j]) * sx / 2 + sw * sx / 4;
            }
            const double diff = std::abs(ya[i][r] - exact);
            EXPECT_LE(diff, bound) << "row " << i << " output " << r;
            max_diff = std::max(max_diff, diff);
            max_ratio = std::max(max_ratio, diff / bound);
        }
    }
    std::printf("int8 linear: max |error| %.5f, at most %.0f %% of its bound\n", max_diff,
                100 * max_ratio);
    EXPECT_GT(max_diff, 1e-6) << "the result is exactly fp32: nothing was quantised";
}

TEST(Int8Bert, CloseToFp32FollowsParametersAndSwitchesBack) {
    if (plumb::rerank::detail::int8_engine_name().empty()) GTEST_SKIP() << "no quantized engine";
    BertHeads heads{true, 1};
    BertModel fp(small_config(), heads, 7);
    BertModel q(small_config(), heads, 7);
    strengthen(fp);
    strengthen(q);
    q.set_precision(Precision::Int8);
    EXPECT_EQ(q.precision(), Precision::Int8);
    const auto seqs = some_sequences();
    const auto ref = fp.last_hidden_states(seqs, 4);
    const auto got = q.last_hidden_states(seqs, 4);
    const double err = relative_rms(got, ref);
    std::printf("int8 vs fp32 last hidden states: %.4f relative RMS\n", err);
    // The contract of rerank/README.md: last hidden states within 2 % relative RMS.
    EXPECT_LT(err, 0.02);
    // ... while the projections matter: the same model with transformers' 0.02 weights is
    // far away (so a wrong quantised projection cannot pass as rounding).
    BertModel plain(small_config(), heads, 7);
    EXPECT_GT(relative_rms(plain.last_hidden_states(seqs, 4), ref), 0.2);
    EXPECT_GT(err, 1e-6) << "int8 gave fp32's numbers: not quantised";

    // Concurrent calls give the serial results.
    std::vector<std::vector<std::vector<float>>> par(2);
    std::thread t1([&] { par[0] = q.last_hidden_states(seqs, 4); });
    std::thread t2([&] { par[1] = q.last_hidden_states(seqs, 4); });
    t1.join();
    t2.join();
    EXPECT_EQ(par[0], got);
    EXPECT_EQ(par[1], got);

    // set_parameter after quantising re-quantises: same numbers as quantising afterwards.
    const std::string name = "encoder.layer.1.intermediate.dense.weight";
    auto v = fp.parameter(name);
    for (auto& f : v) f *= -1.5f;
    q.set_parameter(name, v);
    BertModel q2(small_config(), heads, 7);
    strengthen(q2);
    q2.set_parameter(name, v);
    q2.set_precision(Precision::Int8);
    EXPECT_EQ(q.last_hidden_states(seqs, 4), q2.last_hidden_states(seqs, 4));

    // Back to fp32: bit-identical to a model that never was quantised.
    fp.set_parameter(name, v);
    q.set_precision(Precision::Fp32);
    EXPECT_EQ(q.last_hidden_states(seqs, 4), fp.last_hidden_states(seqs, 4));
}

TEST(Int8Bert, ParseAndStageOptionErrors) {
    EXPECT_EQ(parse_precision("fp32"), Precision::Fp32);
    EXPECT_EQ(parse_precision("int8"), Precision::Int8);
    EXPECT_STREQ(precision_name(Precision::Int8), "int8");
    EXPECT_THROW(parse_precision("int4"), plumb::InvalidArgument);
    EXPECT_THROW(parse_precision("INT8"), plumb::InvalidArgument);

    const auto dir = plumb::test::kRerankReference / "tiny_bert_cat1";
    plumb::StageContext ctx;
    for (const auto& bad : {nlohmann::json("int4"), nlohmann::json(8), nlohmann::json(true)}) {
        nlohmann::json c = {{"model", dir.string()}, {"quantize", bad}};
        try {
            CrossEncoderStage::from_config(c, ctx);
            ADD_FAILURE() << "accepted quantize " << bad.dump();
        } catch (const plumb::ConfigError& e) {
            EXPECT_NE(std::string(e.what()).find("\"quantize\" must be"), std::string::npos)
                << e.what();
        }
    }
    if (plumb::rerank::detail::int8_engine_name().empty()) return;
    nlohmann::json ok = {{"model", dir.string()}, {"quantize", "int8"}};
    auto stage = CrossEncoderStage::from_config(ok, ctx);
    auto* cat = dynamic_cast<const CrossEncoderStage*>(stage.get());
    ASSERT_NE(cat, nullptr);
    EXPECT_EQ(cat->model().precision(), Precision::Int8);

    // A model in another precision than the options ask for is refused.
    auto fp = std::make_shared<const BertModel>(small_config(), BertHeads{true, 1}, 1);
    auto tok = std::make_shared<const WordPieceTokenizer>(WordPieceTokenizer::from_folder(dir));
    CrossEncoderOptions o;
    o.precision = Precision::Int8;
    EXPECT_THROW(CrossEncoderStage(fp, tok, o), plumb::InvalidArgument);
}

namespace {
/// nDCG@10 with one relevant passage per query: 1 / log2(1 + rank of the relevant passage).
double ndcg10(const CrossEncoderStage& stage) {
    const auto& rows = plumb::test::kTinyBertTriples;
    std::vector<std::string_view> passages;  // all positives and negatives
    for (const auto& r : rows) {
        passages.push_back(r[1]);
        passages.push_back(r[2]);
    }
    double sum = 0;
    for (std::size_t q = 0; q < rows.size(); ++q) {
        auto s = stage.score_pairs(rows[q][0], passages);
        const float rel = s[2 * q];
        std::size_t rank = 1;
        for (std::size_t i = 0; i < s.size(); ++i) {
            if (i != 2 * q && s[i] >= rel) ++rank;  // ties count against the relevant one
        }
        sum += rank <= 10 ? 1.0 / std::log2(1.0 + double(rank)) : 0.0;
    }
    return sum / double(rows.size());
}
}  // namespace

TEST(Int8Bert, TrainedCrossEncoderKeepsNdcg) {
    if (plumb::rerank::detail::int8_engine_name().empty()) GTEST_SKIP() << "no quantized engine";
    TempDir t;
    auto init = plumb::test::copy_reference_model("tiny_bert_cat1", t.path);
    // Each query's negatives: its own negative and every other query's passages (so the model
    // must match query and passage, not learn which passages are positives).
    const auto& rows = plumb::test::kTinyBertTriples;
    std::string triples;
    for (std::size_t q = 0; q < rows.size(); ++q) {
        for (std::size_t o = 0; o < rows.size(); ++o) {
            for (int k = 1; k <= 2; ++k) {
                if (o == q && k == 1) continue;
                triples += std::string(rows[q][0]) + "\t" + std::string(rows[q][1]) + "\t" +
                           std::string(rows[o][k]) + "\n";
            }
        }
    }
    plumb::test::write_text(t.path / "triples.tsv", triples);
    TrainOptions o;
    o.model = ModelKind::Cat;
    o.objective = Objective::CrossEntropy;
    o.init = init;
    o.output = t.path / "out";
    o.batch_size = 4;
    o.max_steps = 600;
    o.lr = 3e-3;
    o.linear_decay = false;
    o.threads = 1;
    o.log_every = 100;
    o.max_length = 32;
    o.tune_depths.clear();
    StreamOptions so;
    so.seed = 5;
    so.shuffle_buffer = 8;
    so.epochs = 0;  // cycle until max_steps
    TrainingStream stream(open_text_triples(t.path / "triples.tsv"), so);
    auto r = train(o, stream);

    CrossEncoderOptions fo;
    auto fp = CrossEncoderStage::from_folder(r.best_model, fo);
    CrossEncoderOptions qo;
    qo.precision = Precision::Int8;
    auto q = CrossEncoderStage::from_folder(r.best_model, qo);
    const double n_fp = ndcg10(*fp), n_q = ndcg10(*q);
    // The model learned (8 candidates, random order: expected nDCG@10 about 0.58).
    EXPECT_GT(n_fp, 0.9) << n_fp;
    std::printf("nDCG@10 over 4 queries x 8 passages: fp32 %.4f, int8 %.4f\n", n_fp, n_q);
    EXPECT_LE(std::abs(n_q - n_fp), 0.005) << "fp32 " << n_fp << " int8 " << n_q;
    // The scores themselves stay close (relative to their spread).
    std::vector<std::string_view> ps;
    for (const auto& row : rows) ps.push_back(row[1]), ps.push_back(row[2]);
    auto a = fp->score_pairs(rows[0][0], ps), b = q->score_pairs(rows[0][0], ps);
    const float spread = *std::max_element(a.begin(), a.end()) - *std::min_element(a.begin(), a.end());
    for (std::size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(b[i], a[i], 0.1 * spread) << i;
}

TEST(Int8Bert, QueryScoresDoNotDependOnTheOtherQueriesOfAGroup) {
    // Pipeline::search_batch hands a stage several queries' lists at once (BatchOptions::group).
    // An int8 forward batch quantises its activations with one scale, so pairs of one query
    // batched with another query's pairs would get other scores than the query searched alone;
    // the int8 stage therefore scores each list in its own batches: a query's scores are the
    // same whatever queries share its group.
    if (plumb::rerank::detail::int8_engine_name().empty()) GTEST_SKIP() << "no quantized engine";
    CrossEncoderOptions qo;
    qo.precision = Precision::Int8;
    qo.batch_size = 16;
    auto stage = CrossEncoderStage::from_folder(
        plumb::test::kRerankReference / "tiny_bert_cat1", qo);
    const auto& rows = plumb::test::kTinyBertTriples;
    std::vector<plumb::Query> queries;
    std::vector<plumb::RankedList> lists;
    for (std::size_t q = 0; q < rows.size(); ++q) {
        queries.push_back({"q" + std::to_string(q), std::string(rows[q][0])});
        plumb::RankedList l;
        l.qid = queries.back().id;
        // Each query's own passages plus, for some queries, long repeated text: the group's
        // activations then span a wider range than any single query's.
        for (std::size_t o = 0; o < rows.size(); ++o) {
            std::string text(rows[o][(q + o) % 2 + 1]);
            if (q % 2 == 1) {
                for (int rep = 0; rep < 4; ++rep) text += " " + std::string(rows[o][1]);
            }
            l.candidates.push_back({"d" + std::to_string(o), 0.0f, text, {}});
        }
        lists.push_back(std::move(l));
    }
    auto together = lists;
    stage->rerank(queries, together);
    for (std::size_t q = 0; q < queries.size(); ++q) {
        std::vector<plumb::RankedList> alone{lists[q]};
        stage->rerank(std::span<const plumb::Query>(&queries[q], 1), alone);
        ASSERT_EQ(alone[0].candidates.size(), together[q].candidates.size());
        for (std::size_t i = 0; i < alone[0].candidates.size(); ++i) {
            EXPECT_EQ(alone[0].candidates[i].docid, together[q].candidates[i].docid) << q;
            EXPECT_EQ(alone[0].candidates[i].score, together[q].candidates[i].score)
                << "query " << q << " candidate " << i;
        }
    }
}
