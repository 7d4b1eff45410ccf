#include "rerank/detail/tk_module.hpp"

#include "rerank/detail/bert_attention.hpp"

#include <cmath>
#include <limits>
#include <random>

#include "plugin/error.hpp"

namespace plumb::rerank::detail {

namespace {

void copy_values(torch::Tensor& t, const std::vector<float>& v) {
    torch::NoGradGuard no_grad;
    auto src = torch::from_blob(const_cast<float*>(v.data()), t.sizes(), torch::kFloat32);
    t.copy_(src);
}

void fill_uniform(torch::Tensor& t, double bound, std::mt19937_64& rng) {
    std::uniform_real_distribution<float> dist(static_cast<float>(-bound),
                                               static_cast<float>(bound));
    std::vector<float> v(static_cast<std::size_t>(t.numel()));
    for (auto& x : v) x = dist(rng);
    copy_values(t, v);
}

void fill_constant(torch::Tensor& t, float value) {
    torch::NoGradGuard no_grad;
    t.fill_(value);
}

}  // namespace

TkEncoderLayerImpl::TkEncoderLayerImpl(std::int64_t dim, std::int64_t heads,
                                       std::int64_t head_dim, std::int64_t ff_dim)
    : m_heads(heads), m_head_dim(head_dim) {
    const std::int64_t p = heads * head_dim;
    auto attn = std::make_shared<torch::nn::Module>();
    in_proj_weight = attn->register_parameter("in_proj_weight", torch::empty({3 * p, dim}));
    in_proj_bias = attn->register_parameter("in_proj_bias", torch::zeros({3 * p}));
    auto out = torch::nn::Linear(torch::nn::LinearOptions(p, dim));
    attn->register_module("out_proj", out);
    out_proj_weight = out->weight;
    out_proj_bias = out->bias;
    register_module("self_attn", attn);
    linear1 = register_module("linear1", torch::nn::Linear(dim, ff_dim));
    linear2 = register_module("linear2", torch::nn::Linear(ff_dim, dim));
    norm1 = register_module(
        "norm1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({dim}).eps(1e-5)));
    norm2 = register_module(
        "norm2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({dim}).eps(1e-5)));
}

torch::Tensor TkEncoderLayerImpl::forward(const torch::Tensor& x, const torch::Tensor& key_mask) {
    if (reference_kernels || x.scalar_type() != torch::kFloat32) {
        return forward_reference(x, key_mask);
    }
    const auto b = x.size(0);
    const auto l = x.size(1);
    // Additive key mask: 0 for real tokens, the lowest float for padding (which the kernel
    // skips when it trails; elsewhere exp() of it is exactly 0, as masked_fill's).
    auto mask_add = (1.0 - key_mask.to(torch::kFloat32))
                        .mul_(std::numeric_limits<float>::lowest())
                        .view({b, 1, 1, l});
    if (!torch::GradMode::is_enabled()) {  // inference (InferenceMode or NoGradGuard)
        auto qkv = dense_linear(x, in_proj_weight, in_proj_bias);  // [B, L, 3P]
        auto ctx = fused_self_attention(qkv, mask_add, m_heads, m_head_dim);
        auto a = dense_linear(ctx, out_proj_weight, out_proj_bias);
        a.add_(x);
        auto h = norm1(a);
        auto mid = dense_linear(h, linear1->weight, linear1->bias);
        mid.relu_();
        auto o = dense_linear(mid, linear2->weight, linear2->bias);
        o.add_(h);
        return norm2(o);
    }
    // Training: the same kernels with their backward passes (autograd functions).
    auto qkv = dense_linear_autograd(x, in_proj_weight, in_proj_bias);
    auto ctx = fused_self_attention_autograd(qkv, mask_add, m_heads, m_head_dim);
    auto a = dense_linear_autograd(ctx, out_proj_weight, out_proj_bias);
    auto h = norm1(x + a);
    auto mid = torch::relu(dense_linear_autograd(h, linear1->weight, linear1->bias));
    return norm2(h + dense_linear_autograd(mid, linear2->weight, linear2->bias));
}

torch::Tensor TkEncoderLayerImpl::forward_reference(const torch::Tensor& x,
                                                    const torch::Tensor& key_mask) {
    const auto b = x.size(0);
    const auto l = x.size(1);
    const auto p = m_heads * m_head_dim;
    auto qkv = torch::nn::functional::linear(x, in_proj_weight, in_proj_bias);  // [B, L, 3P]
    auto split = [&](std::int64_t i) {
        return qkv.narrow(2, i * p, p).reshape({b, l, m_heads, m_head_dim}).transpose(1, 2);
    };
    auto q = split(0);  // [B, H, L, hd]
    auto k = split(1);
    auto v = split(2);
    auto scores = torch::matmul(q, k.transpose(-2, -1)) /
                  std::sqrt(static_cast<double>(m_head_dim));  // [B, H, L, L]
    // Padding keys get the lowest float: exp() of it is exactly 0 next to any real key, and a
    // sequence without real tokens attends uniformly instead of producing NaN.
    scores = scores.masked_fill(key_mask.logical_not().view({b, 1, 1, l}),
                                std::numeric_limits<float>::lowest());
    auto attn = torch::softmax(scores, -1);
    auto ctx = torch::matmul(attn, v).transpose(1, 2).reshape({b, l, p});
    auto a = torch::nn::functional::linear(ctx, out_proj_weight, out_proj_bias);
    auto h = norm1(x + a);
    return norm2(h + linear2(torch::relu(linear1(h))));
}

TkModuleImpl::TkModuleImpl(const TkConfig& config, std::int64_t vocab_size) : m_config(config) {
    m_config.validate();
    if (vocab_size < 2) throw InvalidArgument("TK: vocabulary size must be at least 2");
    const auto d = m_config.embedding_dim;
    const auto hd = m_config.attention_dim() / m_config.heads;
    const auto nk = static_cast<std::int64_t>(m_config.kernel_mu.size());

    embeddings = register_module("embeddings", torch::nn::Embedding(vocab_size, d));
    embeddings->weight.set_requires_grad(m_config.train_embeddings);

    auto ctx = std::make_shared<torch::nn::Module>();
    torch::nn::ModuleList list;
    for (std::int64_t i = 0; i < m_config.layers; ++i) {
        layers.emplace_back(d, m_config.heads, hd, m_config.ff_dim);
        list->push_back(layers.back());
    }
    ctx->register_module("layers", list);
    register_module("contextualizer", ctx);

    mixer = register_parameter("mixer", torch::full({1}, m_config.mixer_init));
    kernel_bin_weights = register_module(
        "kernel_bin_weights", torch::nn::Linear(torch::nn::LinearOptions(nk, 1).bias(false)));
    mu = register_buffer("mu", torch::tensor(m_config.kernel_mu, torch::kFloat32));
    sigma = register_buffer("sigma", torch::tensor(m_config.kernel_sigma, torch::kFloat32));
    if (m_config.mean_kernel) {
        dense_mean = register_module(
            "dense_mean", torch::nn::Linear(torch::nn::LinearOptions(nk, 1).bias(false)));
        dense_comb = register_module(
            "dense_comb", torch::nn::Linear(torch::nn::LinearOptions(2, 1).bias(false)));
        nn_scaler = register_parameter("nn_scaler", torch::full({1}, 0.01f));
    }
    m_pos_query = positional_features(d, 0, m_config.max_query_length);
    m_pos_passage = positional_features(d, m_config.passage_position_offset,
                                        m_config.max_passage_length);
}

void TkModuleImpl::set_reference_kernels(bool on) {
    for (auto& layer : layers) layer->reference_kernels = on;
}

torch::Tensor TkModuleImpl::positional_features(std::int64_t dim, std::int64_t first,
                                                std::int64_t length) {
    // allennlp add_positional_features(min_timescale 1, max_timescale 1e4).
    const std::int64_t nts = dim / 2;
    const double log_inc = nts > 1 ? std::log(1.0e4) / static_cast<double>(nts - 1) : 0.0;
    std::vector<float> out(static_cast<std::size_t>(length * dim), 0.0f);
    for (std::int64_t t = 0; t < length; ++t) {
        const double pos = static_cast<double>(first + t);
        for (std::int64_t i = 0; i < nts; ++i) {
            const double scaled = pos * std::exp(-static_cast<double>(i) * log_inc);
            out[static_cast<std::size_t>(t * dim + i)] = static_cast<float>(std::sin(scaled));
            out[static_cast<std::size_t>(t * dim + nts + i)] = static_cast<float>(std::cos(scaled));
        }
    }
    return torch::from_blob(out.data(), {length, dim}, torch::kFloat32).clone();
}

torch::Tensor TkModuleImpl::contextualize(const torch::Tensor& ids, const torch::Tensor& mask,
                                          bool passage) {
    const auto l = ids.size(1);
    const auto& pos = passage ? m_pos_passage : m_pos_query;
    if (l > pos.size(0)) {
        throw InvalidArgument("TK: sequence of " + std::to_string(l) + " tokens exceeds max_" +
                              (passage ? std::string("passage") : std::string("query")) +
                              "_length " + std::to_string(pos.size(0)));
    }
    auto e = embeddings(ids);  // [B, L, D]
    auto h = e + pos.narrow(0, 0, l);
    for (auto& layer : layers) h = layer(h, mask);
    auto out = mixer * e + (1 - mixer) * h;
    return out * mask.unsqueeze(-1).to(out.scalar_type());
}

torch::Tensor TkModuleImpl::score_representations(const torch::Tensor& q_hat,
                                                  const torch::Tensor& q_mask,
                                                  const torch::Tensor& p_hat,
                                                  const torch::Tensor& p_mask) {
    const auto b = p_hat.size(0);
    const auto lp = p_hat.size(1);
    // allennlp CosineMatrixAttention: x / (|x| + 1e-13).
    auto qn = q_hat / (q_hat.norm(2, -1, true) + 1e-13);
    auto pn = p_hat / (p_hat.norm(2, -1, true) + 1e-13);
    auto cosine = torch::matmul(qn, pn.transpose(1, 2));  // [B, Lq, Lp]
    auto diff = cosine.unsqueeze(-1) - mu;                // [B, Lq, Lp, K]
    auto kernels = torch::exp(-diff.pow(2) / (2 * sigma.pow(2)));
    auto pm = p_mask.to(torch::kFloat32).view({b, 1, lp, 1});
    auto per_kernel_query = (kernels * pm).sum(2);  // [B, Lq, K]
    auto qm = q_mask.to(torch::kFloat32).unsqueeze(-1);
    if (!m_config.mean_kernel) {
        auto log_sums = torch::log(torch::clamp_min(per_kernel_query, 1e-10)) * qm;
        return kernel_bin_weights(log_sums.sum(1)).squeeze(-1);
    }
    auto log_sums = torch::log2(torch::clamp_min(per_kernel_query, 1e-10)) * nn_scaler * qm;
    auto lengths = p_mask.to(torch::kFloat32).sum(1).view({b, 1, 1});
    auto mean_sums = per_kernel_query / (lengths + 1) * nn_scaler * qm;
    auto a = kernel_bin_weights(log_sums.sum(1));  // [B, 1]
    auto m = dense_mean(mean_sums.sum(1));         // [B, 1]
    return dense_comb(torch::cat({a, m}, 1)).squeeze(-1);
}

torch::Tensor TkModuleImpl::forward(const torch::Tensor& q_ids, const torch::Tensor& q_mask,
                                    const torch::Tensor& p_ids, const torch::Tensor& p_mask) {
    auto q_hat = contextualize(q_ids, q_mask, false);
    auto p_hat = contextualize(p_ids, p_mask, true);
    return score_representations(q_hat, q_mask, p_hat, p_mask);
}

void TkModuleImpl::reset_parameters(std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    const auto d = m_config.embedding_dim;
    {
        std::normal_distribution<float> dist(0.0f, 0.1f);
        auto& w = embeddings->weight;
        std::vector<float> v(static_cast<std::size_t>(w.numel()));
        for (auto& x : v) x = dist(rng);
        std::fill(v.begin(), v.begin() + 2 * d, 0.0f);  // padding and OOV rows
        copy_values(w, v);
    }
    for (auto& layer : layers) {
        const auto p = layer->in_proj_weight.size(0) / 3;
        fill_uniform(layer->in_proj_weight, std::sqrt(6.0 / static_cast<double>(d + 3 * p)),
                     rng);  // xavier_uniform_ as nn.MultiheadAttention
        fill_constant(layer->in_proj_bias, 0.0f);
        fill_uniform(layer->out_proj_weight, 1.0 / std::sqrt(static_cast<double>(p)), rng);
        fill_constant(layer->out_proj_bias, 0.0f);
        const auto ff = layer->linear1->weight.size(0);
        fill_uniform(layer->linear1->weight, 1.0 / std::sqrt(static_cast<double>(d)), rng);
        fill_uniform(layer->linear1->bias, 1.0 / std::sqrt(static_cast<double>(d)), rng);
        fill_uniform(layer->linear2->weight, 1.0 / std::sqrt(static_cast<double>(ff)), rng);
        fill_uniform(layer->linear2->bias, 1.0 / std::sqrt(static_cast<double>(ff)), rng);
        fill_constant(layer->norm1->weight, 1.0f);
        fill_constant(layer->norm1->bias, 0.0f);
        fill_constant(layer->norm2->weight, 1.0f);
        fill_constant(layer->norm2->bias, 0.0f);
    }
    fill_constant(mixer, m_config.mixer_init);
    fill_uniform(kernel_bin_weights->weight, 0.014, rng);  // matchzoo init, as the authors
    if (m_config.mean_kernel) {
        fill_uniform(dense_mean->weight, 0.014, rng);
        fill_uniform(dense_comb->weight, 1.0 / std::sqrt(2.0), rng);
        fill_constant(nn_scaler, 0.01f);
    }
}

std::pair<torch::Tensor, torch::Tensor> pack_token_ids(
    const std::vector<std::span<const std::int64_t>>& seqs) {
    std::size_t l = 1;
    for (const auto& s : seqs) l = std::max(l, s.size());
    const auto b = static_cast<std::int64_t>(seqs.size());
    auto ids = torch::zeros({b, static_cast<std::int64_t>(l)}, torch::kInt64);
    auto mask = torch::zeros({b, static_cast<std::int64_t>(l)}, torch::kBool);
    auto ia = ids.accessor<std::int64_t, 2>();
    auto ma = mask.accessor<bool, 2>();
    for (std::int64_t i = 0; i < b; ++i) {
        const auto& s = seqs[static_cast<std::size_t>(i)];
        for (std::size_t j = 0; j < s.size(); ++j) {
            ia[i][static_cast<std::int64_t>(j)] = s[j];
            ma[i][static_cast<std::int64_t>(j)] = true;
        }
    }
    return {ids, mask};
}

}  // namespace plumb::rerank::detail
