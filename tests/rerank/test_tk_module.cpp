// TK's Torch module: the encoder layer against LibTorch's own nn::TransformerEncoderLayer,
// positional features against the allennlp formula, masking at the tensor level, and autograd
// (what a trainer needs).
#include <gtest/gtest.h>

#include <torch/torch.h>

#include <cmath>
#include <vector>

#include "plugin/error.hpp"
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
