// TK's Torch module: the encoder layer against LibTorch's own nn::TransformerEncoderLayer,
// positional features against the allennlp formula, masking at the tensor level, and autograd
// (what a trainer needs).
#include <gtest/gtest.h>

#include <torch/torch.h>

#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "plugin/error.hpp"
#include "rerank/detail/bert_attention.hpp"
#include "rerank/detail/tk_module.hpp"
#include "rerank/tk_model.hpp"

using namespace plumb::rerank;
using plumb::rerank::detail::TkModelAccess;
namespace tkd = plumb::rerank::detail;

namespace {

TkConfig small_config() {
    TkConfig c;
    c.embedding_dim = 8;
    c.layers = 2;
    c.heads = 2;
    c.head_dim = 0;  // 4 per head: nn.MultiheadAttention layout
    c.ff_dim = 6;
    c.max_query_length = 6;
    c.max_passage_length = 12;
    return c;
}

TkModel model_with(const TkConfig& c, std::uint64_t seed = 9) {
    std::vector<std::string> words;
    for (int i = 0; i < 20; ++i) words.push_back("w" + std::to_string(i));
    return TkModel::create(c, TkVocabulary(words), {}, seed);
}

}  // namespace

TEST(TkModule, EncoderLayerMatchesLibTorchTransformerEncoderLayer) {
    torch::manual_seed(0);
    const std::int64_t d = 8, heads = 2, ff = 6, b = 3, l = 5;
    tkd::TkEncoderLayer mine(d, heads, d / heads, ff);
    torch::nn::TransformerEncoderLayer ref(
        torch::nn::TransformerEncoderLayerOptions(d, heads).dim_feedforward(ff).dropout(0.0));
    ref->eval();
    {
        torch::NoGradGuard ng;
        for (auto* t : {&mine->in_proj_weight, &mine->in_proj_bias, &mine->out_proj_weight,
                        &mine->out_proj_bias}) {
            t->uniform_(-0.5, 0.5);
        }
        mine->linear1->weight.uniform_(-0.5, 0.5);
        mine->linear2->bias.uniform_(-0.5, 0.5);
        mine->norm1->weight.uniform_(0.5, 1.5);
        mine->norm2->bias.uniform_(-0.5, 0.5);
        ref->self_attn->in_proj_weight.copy_(mine->in_proj_weight);
        ref->self_attn->in_proj_bias.copy_(mine->in_proj_bias);
        ref->self_attn->out_proj->weight.copy_(mine->out_proj_weight);
        ref->self_attn->out_proj->bias.copy_(mine->out_proj_bias);
        ref->linear1->weight.copy_(mine->linear1->weight);
        ref->linear1->bias.copy_(mine->linear1->bias);
        ref->linear2->weight.copy_(mine->linear2->weight);
        ref->linear2->bias.copy_(mine->linear2->bias);
        ref->norm1->weight.copy_(mine->norm1->weight);
        ref->norm1->bias.copy_(mine->norm1->bias);
        ref->norm2->weight.copy_(mine->norm2->weight);
        ref->norm2->bias.copy_(mine->norm2->bias);
    }
    auto x = torch::randn({b, l, d});
    auto mask = torch::ones({b, l}, torch::kBool);
    mask[1][4] = false;
    mask[2][2] = false;
    mask[2][3] = false;
    mask[2][4] = false;
    torch::NoGradGuard ng;
    auto out = mine(x, mask);
    // LibTorch: [L, B, D], key padding mask true = padding.
    auto expected = ref->forward(x.transpose(0, 1), /*src_mask=*/torch::Tensor(),
                                 /*src_key_padding_mask=*/mask.logical_not())
                        .transpose(0, 1);
    for (std::int64_t i = 0; i < b; ++i) {
        for (std::int64_t j = 0; j < l; ++j) {
            if (!mask[i][j].item<bool>()) continue;
            EXPECT_TRUE(torch::allclose(out[i][j], expected[i][j], 1e-5, 1e-5))
                << i << "," << j << "\n"
                << out[i][j] << expected[i][j];
        }
    }
}

TEST(TkModule, PositionalFeaturesFollowTheSinusoidFormulaWithOffset) {
    // D = 4: two timescales 1 and 1e4 (log increment ln(1e4)/(2-1)): [sin t, sin t/1e4,
    // cos t, cos t/1e4]. Passage term 0 uses t = 500.
    auto f = tkd::TkModuleImpl::positional_features(4, 500, 2);
    ASSERT_EQ(f.sizes(), (std::vector<std::int64_t>{2, 4}));
    const double t0 = 500, t1 = 501;
    std::vector<double> e{std::sin(t0), std::sin(t0 / 1e4), std::cos(t0), std::cos(t0 / 1e4),
                          std::sin(t1), std::sin(t1 / 1e4), std::cos(t1), std::cos(t1 / 1e4)};
    auto a = f.contiguous();
    for (int i = 0; i < 8; ++i) EXPECT_NEAR(a.data_ptr<float>()[i], e[i], 1e-5) << i;
    // Odd D: last column zero. D = 5 -> 2 timescales + a zero column.
    auto g = tkd::TkModuleImpl::positional_features(5, 3, 1);
    EXPECT_FLOAT_EQ(g[0][4].item<float>(), 0.0f);
    EXPECT_NEAR(g[0][0].item<float>(), std::sin(3.0), 1e-6);
}

TEST(TkModule, PaddingMasksAtTensorLevel) {
    auto m = model_with(small_config());
    auto mod = TkModelAccess::module(m);
    c10::InferenceMode guard;
    auto q = torch::tensor({{2, 5, 7}}, torch::kInt64);
    auto qm = torch::ones({1, 3}, torch::kBool);
    auto p = torch::tensor({{3, 4, 5, 1, 9}}, torch::kInt64);
    auto pm = torch::ones({1, 5}, torch::kBool);
    auto s = mod->forward(q, qm, p, pm);
    // Padded query (2 extra positions with arbitrary ids) and padded passage.
    auto q2 = torch::tensor({{2, 5, 7, 11, 0}}, torch::kInt64);
    auto qm2 = torch::tensor({{true, true, true, false, false}});
    auto p2 = torch::tensor({{3, 4, 5, 1, 9, 6, 6, 0}}, torch::kInt64);
    auto pm2 = torch::tensor({{true, true, true, true, true, false, false, false}});
    auto s2 = mod->forward(q2, qm2, p2, pm2);
    EXPECT_NEAR(s.item<float>(), s2.item<float>(), 1e-5);
    // Padded positions of the contextualised output are zero vectors.
    auto hat = mod->contextualize(p2, pm2, true);
    EXPECT_EQ(hat[0][6].abs().sum().item<float>(), 0.0f);
    // Longer than max_passage_length (12) is refused.
    auto too_long = torch::ones({1, 13}, torch::kInt64);
    EXPECT_THROW(mod->contextualize(too_long, torch::ones({1, 13}, torch::kBool), true),
                 plumb::InvalidArgument);
}

TEST(TkModule, TrainableWithAutograd) {
    auto c = small_config();
    auto m = model_with(c);
    auto mod = TkModelAccess::module(m);
    // Stable parameter names (checkpoint keys).
    auto named = mod->named_parameters(true);
    for (const char* k : {"embeddings.weight", "contextualizer.layers.1.self_attn.in_proj_weight",
                          "contextualizer.layers.0.linear2.bias", "mixer",
                          "kernel_bin_weights.weight"}) {
        EXPECT_TRUE(named.contains(k)) << k;
    }
    EXPECT_TRUE(mod->named_buffers(true).contains("mu"));
    EXPECT_FALSE(named.contains("mu"));

    auto q = torch::tensor({{2, 5, 7}}, torch::kInt64).expand({2, 3});
    auto qm = torch::ones({2, 3}, torch::kBool);
    auto p = torch::tensor({{2, 5, 9, 0}, {8, 8, 3, 4}}, torch::kInt64);
    auto pm = torch::tensor({{true, true, true, false}, {true, true, true, true}});
    auto scores = mod->forward(q, qm, p, pm);
    ASSERT_EQ(scores.sizes(), (std::vector<std::int64_t>{2}));
    // Pairwise hinge with margin 1 (paper 000): positive = passage 0.
    auto loss = torch::clamp_min(1 - scores[0] + scores[1], 0);
    loss.backward();
    EXPECT_TRUE(mod->mixer.grad().defined());
    EXPECT_GT(mod->kernel_bin_weights->weight.grad().abs().sum().item<float>(), 0.0f);
    EXPECT_GT(mod->embeddings->weight.grad().abs().sum().item<float>(), 0.0f);
    EXPECT_GT(mod->layers[0]->in_proj_weight.grad().abs().sum().item<float>(), 0.0f);
    EXPECT_FALSE(mod->mu.requires_grad());

    // Frozen embeddings.
    c.train_embeddings = false;
    auto frozen = model_with(c);
    EXPECT_FALSE(TkModelAccess::module(frozen)->embeddings->weight.requires_grad());
}

TEST(TkModule, CreateIsDeterministicUnderSeed) {
    auto a = model_with(small_config(), 5);
    auto b = model_with(small_config(), 5);
    auto c = model_with(small_config(), 6);
    auto pa = TkModelAccess::module(a)->named_parameters(true);
    auto pb = TkModelAccess::module(b)->named_parameters(true);
    auto pc = TkModelAccess::module(c)->named_parameters(true);
    for (const auto& kv : pa) {
        EXPECT_TRUE(torch::equal(kv.value(), pb[kv.key()])) << kv.key();
    }
    EXPECT_FALSE(torch::equal(pa["kernel_bin_weights.weight"], pc["kernel_bin_weights.weight"]));
    // Kernel weights within ±0.014 (matchzoo init); mixer 0.5; padding/OOV rows zero.
    EXPECT_LE(pa["kernel_bin_weights.weight"].abs().max().item<float>(), 0.014f);
    EXPECT_FLOAT_EQ(pa["mixer"].item<float>(), 0.5f);
    EXPECT_EQ(pa["embeddings.weight"].narrow(0, 0, 2).abs().sum().item<float>(), 0.0f);
}

// ---------------------------------------------------------------------------------------------
// TK's layers through BERT's kernels (detail/bert_attention.hpp) against the pre-kernel path
// (forward_reference: ATen's linear, batched matmul, masked_fill, softmax), which
// EncoderLayerMatchesLibTorchTransformerEncoderLayer ties to torch::nn::TransformerEncoderLayer.

namespace {

TkConfig wide_config() {
    // Attention width P = 4 x 6 = 24 != D = 16 (paper 000's layout, scaled down).
    TkConfig c;
    c.embedding_dim = 16;
    c.layers = 2;
    c.heads = 4;
    c.head_dim = 6;
    c.ff_dim = 10;
    c.max_query_length = 8;
    c.max_passage_length = 40;
    return c;
}

TkModel wide_model(std::uint64_t seed = 3) {
    std::vector<std::string> words;
    for (int i = 0; i < 60; ++i) words.push_back("w" + std::to_string(i));
    auto m = TkModel::create(wide_config(), TkVocabulary(words), {}, seed);
    // Non-trivial biases and norms (create() zeroes the attention biases, sets norms to 1).
    torch::NoGradGuard ng;
    torch::manual_seed(seed);
    for (auto& layer : TkModelAccess::module(m)->layers) {
        layer->in_proj_bias.uniform_(-0.3, 0.3);
        layer->out_proj_bias.uniform_(-0.3, 0.3);
        layer->norm1->weight.uniform_(0.5, 1.5);
        layer->norm2->bias.uniform_(-0.3, 0.3);
    }
    return m;
}

std::string words_text(std::mt19937& rng, int n) {
    std::uniform_int_distribution<int> w(0, 59);
    std::string s;
    for (int i = 0; i < n; ++i) s += (i ? " w" : "w") + std::to_string(w(rng));
    return s;
}

}  // namespace

TEST(TkKernels, LayerMatchesReferencePathWithPadding) {
    torch::manual_seed(1);
    tkd::TkEncoderLayer layer(16, 4, 6, 10);
    {
        torch::NoGradGuard ng;
        for (auto& p : layer->parameters()) p.uniform_(-0.5, 0.5);
    }
    auto x = torch::randn({4, 7, 16});
    auto mask = torch::ones({4, 7}, torch::kBool);
    for (int j = 3; j < 7; ++j) mask[1][j] = false;  // trailing padding (skipped keys)
    mask[2][2] = false;                               // padding inside (additive mask)
    for (int j = 0; j < 7; ++j) mask[3][j] = false;   // no real token: uniform attention
    c10::InferenceMode guard;
    auto fused = layer(x, mask);
    auto ref = layer->forward_reference(x, mask);
    EXPECT_TRUE(torch::allclose(fused, ref, 1e-5, 1e-5))
        << (fused - ref).abs().max().item<float>();
}

TEST(TkKernels, ScoresEqualTheReferencePath) {
    auto m = wide_model();
    std::mt19937 rng(5);
    std::vector<std::string> passages;
    for (int i = 0; i < 25; ++i) passages.push_back(words_text(rng, 1 + i % 13 + i));
    passages.push_back("");  // no words: one padding position
    const std::string query = words_text(rng, 4);
    auto fused = m.score(query, passages, 8);
    auto vecs = m.passage_vectors(std::vector<std::string_view>{passages[3], passages[20]});
    TkModelAccess::module(m)->set_reference_kernels(true);
    auto ref = m.score(query, passages, 8);
    auto ref_vecs = m.passage_vectors(std::vector<std::string_view>{passages[3], passages[20]});
    ASSERT_EQ(fused.size(), ref.size());
    for (std::size_t i = 0; i < ref.size(); ++i) {
        EXPECT_NEAR(fused[i], ref[i], 1e-5 * (1 + std::abs(ref[i]))) << i;
    }
    for (std::size_t p = 0; p < 2; ++p) {
        ASSERT_EQ(vecs[p].values.size(), ref_vecs[p].values.size());
        for (std::size_t i = 0; i < vecs[p].values.size(); ++i) {
            EXPECT_NEAR(vecs[p].values[i], ref_vecs[p].values[i], 1e-5) << p << "," << i;
        }
    }
}

TEST(TkKernels, GradientsEqualTheReferencePath) {
    // The same loss through both paths; every parameter's gradient compared (ATen's autograd
    // of the reference path is the independent derivation of the kernels' backward passes).
    auto m = wide_model(11);
    auto mod = TkModelAccess::module(m);
    auto q = torch::tensor({{2, 5, 7, 9}, {3, 4, 0, 0}, {8, 12, 13, 0}}, torch::kInt64);
    auto qm = q.ne(0);
    std::vector<std::vector<std::int64_t>> ps{{2, 5, 9, 14, 22, 30, 31}, {8, 8, 3}, {40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50}};
    std::vector<std::span<const std::int64_t>> spans(ps.begin(), ps.end());
    auto [p, pm] = tkd::pack_token_ids(spans);
    auto grads = [&](bool reference) {
        mod->set_reference_kernels(reference);
        mod->zero_grad();
        auto s = mod->forward(q, qm, p, pm);
        // Weighted sum so that every score's gradient differs.
        (s * torch::tensor({1.0f, -0.7f, 0.4f})).sum().backward();
        std::map<std::string, torch::Tensor> g;
        for (const auto& kv : mod->named_parameters(true)) {
            if (kv.value().grad().defined()) g[kv.key()] = kv.value().grad().clone();
        }
        return std::make_pair(s.detach(), g);
    };
    auto [s_ref, g_ref] = grads(true);
    auto [s_new, g_new] = grads(false);
    EXPECT_TRUE(torch::allclose(s_new, s_ref, 1e-5, 1e-5));
    ASSERT_EQ(g_new.size(), g_ref.size());
    for (const auto& [name, gr] : g_ref) {
        ASSERT_TRUE(g_new.contains(name)) << name;
        const auto& gn = g_new.at(name);
        const float scale = gr.abs().max().item<float>();
        EXPECT_GT(scale, 0.0f) << name;  // the test must exercise every parameter
        EXPECT_LE((gn - gr).abs().max().item<float>(), 1e-4f * (1.0f + scale)) << name;
    }
}

TEST(TkKernels, AttentionBackwardMatchesAutogradWithMasks) {
    // The kernel's own backward against ATen autograd of softmax(Q K^T / sqrt(hd) + mask) V,
    // with trailing padding (skipped keys) and padding inside (additive mask).
    torch::manual_seed(2);
    const std::int64_t b = 3, l = 6, heads = 2, hd = 5, h = heads * hd;
    auto qkv = torch::randn({b, l, 3 * h}, torch::requires_grad());
    auto keep = torch::ones({b, l});
    keep[0][4] = 0;
    keep[0][5] = 0;
    keep[1][1] = 0;
    auto mask_add = ((1.0 - keep) * std::numeric_limits<float>::lowest()).view({b, 1, 1, l});
    auto gc = torch::randn({b, l, h});

    auto ctx = tkd::fused_self_attention_autograd(qkv, mask_add, heads, hd);
    (ctx * gc).sum().backward();
    auto g_kernel = qkv.grad().clone();
    qkv.grad().zero_();

    auto split = [&](std::int64_t i) {
        return qkv.narrow(2, i * h, h).reshape({b, l, heads, hd}).transpose(1, 2);
    };
    auto scores = torch::matmul(split(0), split(1).transpose(-2, -1)) / std::sqrt(double(hd));
    scores = scores.masked_fill(keep.eq(0).view({b, 1, 1, l}),
                                std::numeric_limits<float>::lowest());
    auto ref = torch::matmul(torch::softmax(scores, -1), split(2)).transpose(1, 2).reshape({b, l, h});
    (ref * gc).sum().backward();
    EXPECT_TRUE(torch::allclose(ctx.detach(), ref.detach(), 1e-5, 1e-5));
    EXPECT_TRUE(torch::allclose(g_kernel, qkv.grad(), 1e-4, 1e-5))
        << (g_kernel - qkv.grad()).abs().max().item<float>();
    // Skipped keys and values get no gradient.
    EXPECT_EQ(g_kernel[0].narrow(0, 4, 2).narrow(1, h, 2 * h).abs().sum().item<float>(), 0.0f);
}

TEST(TkKernels, DenseLinearBackwardMatchesAutograd) {
    torch::manual_seed(4);
    auto x = torch::randn({2, 3, 7}, torch::requires_grad());
    auto w = torch::randn({5, 7}, torch::requires_grad());
    auto bias = torch::randn({5}, torch::requires_grad());
    auto g = torch::randn({2, 3, 5});
    (tkd::dense_linear_autograd(x, w, bias) * g).sum().backward();
    auto gx = x.grad().clone(), gw = w.grad().clone(), gb = bias.grad().clone();
    x.grad().zero_();
    w.grad().zero_();
    bias.grad().zero_();
    (torch::linear(x, w, bias) * g).sum().backward();
    EXPECT_TRUE(torch::allclose(gx, x.grad(), 1e-5, 1e-5));
    EXPECT_TRUE(torch::allclose(gw, w.grad(), 1e-5, 1e-5));
    EXPECT_TRUE(torch::allclose(gb, bias.grad(), 1e-5, 1e-5));
    // A frozen input (TK's first layer under frozen embeddings) gets no gradient; W still does.
    auto frozen = x.detach();
    w.grad().zero_();
    (tkd::dense_linear_autograd(frozen, w, bias) * g).sum().backward();
    EXPECT_FALSE(frozen.grad().defined());
    EXPECT_TRUE(torch::allclose(w.grad(), gw, 1e-5, 1e-5));
}
