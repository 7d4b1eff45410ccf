#include "rerank/bert.hpp"

#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>

#include "plugin/error.hpp"
#include "rerank/detail/bert_attention.hpp"
#include "rerank/detail/bert_modules.hpp"

namespace plumb::rerank {

namespace detail {

Activation parse_activation(const std::string& name) {
    if (name == "gelu") return Activation::Gelu;
    if (name == "gelu_new" || name == "gelu_pytorch_tanh" || name == "gelu_fast") {
        return Activation::GeluTanh;
    }
    if (name == "relu") return Activation::Relu;
    throw CheckpointError("config: hidden_act: unsupported activation '" + name +
                          "' (supported: gelu, gelu_new, gelu_pytorch_tanh, gelu_fast, relu)");
}

namespace {
torch::nn::Linear make_linear(std::int64_t in, std::int64_t out) {
    return torch::nn::Linear(torch::nn::LinearOptions(in, out).bias(true));
}
torch::nn::LayerNorm make_layer_norm(std::int64_t h, double eps) {
    return torch::nn::LayerNorm(
        torch::nn::LayerNormOptions({h}).eps(eps).elementwise_affine(true));
}
torch::Tensor apply_layer_norm(const torch::nn::LayerNorm& ln, const torch::Tensor& x) {
    return torch::layer_norm(x, ln->options.normalized_shape(), ln->weight, ln->bias,
                             ln->options.eps());
}
}  // namespace

BertEmbeddingsImpl::BertEmbeddingsImpl(const HfConfig& c) {
    word_embeddings = register_module(
        "word_embeddings", torch::nn::Embedding(c.vocab_size, c.hidden_size));
    position_embeddings = register_module(
        "position_embeddings", torch::nn::Embedding(c.max_position_embeddings, c.hidden_size));
    if (c.type_vocab_size > 0) {
        token_type_embeddings = register_module(
            "token_type_embeddings", torch::nn::Embedding(c.type_vocab_size, c.hidden_size));
    }
    LayerNorm = register_module("LayerNorm", make_layer_norm(c.hidden_size, c.layer_norm_eps));
}

torch::Tensor BertEmbeddingsImpl::forward(const torch::Tensor& ids, const torch::Tensor& types) {
    const auto length = ids.size(1);
    auto x = torch::embedding(word_embeddings->weight, ids);
    x.add_(position_embeddings->weight.narrow(0, 0, length).unsqueeze(0));
    if (token_type_embeddings) x.add_(torch::embedding(token_type_embeddings->weight, types));
    return apply_layer_norm(LayerNorm, x);
}

BertSelfAttentionImpl::BertSelfAttentionImpl(const HfConfig& c) {
    query = register_module("query", make_linear(c.hidden_size, c.hidden_size));
    key = register_module("key", make_linear(c.hidden_size, c.hidden_size));
    value = register_module("value", make_linear(c.hidden_size, c.hidden_size));
}

BertDenseNormImpl::BertDenseNormImpl(std::int64_t in, std::int64_t out, double eps) {
    dense = register_module("dense", make_linear(in, out));
    LayerNorm = register_module("LayerNorm", make_layer_norm(out, eps));
}

BertAttentionImpl::BertAttentionImpl(const HfConfig& c) {
    self = register_module("self", BertSelfAttention(c));
    output = register_module("output",
                             BertDenseNorm(c.hidden_size, c.hidden_size, c.layer_norm_eps));
}

BertIntermediateImpl::BertIntermediateImpl(const HfConfig& c) {
    dense = register_module("dense", make_linear(c.hidden_size, c.intermediate_size));
}

BertLayerImpl::BertLayerImpl(const HfConfig& c, Activation act)
    : heads(c.num_attention_heads), head_dim(c.head_dim()), activation(act) {
    attention = register_module("attention", BertAttention(c));
    intermediate = register_module("intermediate", BertIntermediate(c));
    output = register_module("output",
                             BertDenseNorm(c.intermediate_size, c.hidden_size, c.layer_norm_eps));
    refresh_fused();
}

void BertLayerImpl::refresh_fused() {
    torch::NoGradGuard no_grad;
    const auto& s = attention->self;
    fused_weight = torch::cat({s->query->weight, s->key->weight, s->value->weight}, 0).detach();
    fused_bias = torch::cat({s->query->bias, s->key->bias, s->value->bias}, 0).detach();
    fused_versions = {s->query->weight._version(), s->key->weight._version(),
                      s->value->weight._version(), s->query->bias._version(),
                      s->key->bias._version(),   s->value->bias._version()};
    if (int8) set_int8(true);  // rebuild the quantised copies from the current parameters
}

std::vector<std::int64_t> BertLayerImpl::int8_source_versions() const {
    const auto& s = attention->self;
    std::vector<std::int64_t> v;
    for (const auto* lin : {&s->query, &s->key, &s->value, &attention->output->dense,
                            &intermediate->dense, &output->dense}) {
        v.push_back((*lin)->weight._version());
        v.push_back((*lin)->bias._version());
    }
    return v;
}

void BertLayerImpl::set_int8(bool on) {
    if (!on) {
        int8.reset();
        return;
    }
    torch::NoGradGuard no_grad;
    const auto& s = attention->self;
    auto q = std::make_shared<Int8Projections>();
    q->qkv = Int8Linear(torch::cat({s->query->weight, s->key->weight, s->value->weight}, 0),
                        torch::cat({s->query->bias, s->key->bias, s->value->bias}, 0));
    const auto& ao = attention->output->dense;
    q->attention_output = Int8Linear(ao->weight, ao->bias);
    q->intermediate = Int8Linear(intermediate->dense->weight, intermediate->dense->bias);
    q->output = Int8Linear(output->dense->weight, output->dense->bias);
    q->versions = int8_source_versions();
    int8 = std::move(q);
}

bool BertLayerImpl::int8_current() const {
    return int8 && int8->versions == int8_source_versions();
}

bool BertLayerImpl::fused_current() const {
    const auto& s = attention->self;
    const std::array<std::int64_t, 6> now = {
        s->query->weight._version(), s->key->weight._version(), s->value->weight._version(),
        s->query->bias._version(),   s->key->bias._version(),   s->value->bias._version()};
    return now == fused_versions;
}

torch::Tensor BertDropout::apply(const torch::Tensor& x, double p) {
    if (p <= 0.0) return x;
    if (p >= 1.0) return x * 0.0;
    auto keep = torch::empty_like(x).bernoulli_(1.0 - p, generator);
    return x * keep * (1.0 / (1.0 - p));
}

torch::Tensor BertLayerImpl::forward_train(const torch::Tensor& x, const torch::Tensor& mask_add,
                                           BertDropout* dropout) {
    if (reference_kernels || x.scalar_type() != torch::kFloat32) {
        return forward_train_reference(x, mask_add, dropout);
    }
    // The inference kernels as autograd functions with their own backward passes (as TK's
    // layers): the Q/K/V projection from the real parameters (their concatenation is part of
    // the graph), attention per (sequence, head) with its dropout mask drawn here, in the
    // reference path's order and shape, then the projections through oneDNN's sgemm.
    const auto b = x.size(0), l = x.size(1);
    const auto& s = attention->self;
    auto w = torch::cat({s->query->weight, s->key->weight, s->value->weight}, 0);
    auto wb = torch::cat({s->query->bias, s->key->bias, s->value->bias}, 0);
    auto qkv = dense_linear_autograd(x, w, wb);
    torch::Tensor drop;
    if (dropout && dropout->attention > 0.0) {
        const double p = dropout->attention;
        drop = p >= 1.0 ? torch::zeros({b * heads, l, l})
                        : torch::empty({b * heads, l, l})
                              .bernoulli_(1.0 - p, dropout->generator)
                              .mul_(1.0 / (1.0 - p));
    }
    auto context = fused_self_attention_autograd(qkv, mask_add, heads, head_dim, drop);

    auto& ao = attention->output;
    auto a = dense_linear_autograd(context, ao->dense->weight, ao->dense->bias);
    if (dropout) a = dropout->apply(a, dropout->hidden);
    a = apply_layer_norm(ao->LayerNorm, a + x);

    auto mid = dense_linear_autograd(a, intermediate->dense->weight, intermediate->dense->bias);
    switch (activation) {
        case Activation::Gelu: mid = torch::gelu(mid); break;
        case Activation::GeluTanh: mid = torch::gelu(mid, "tanh"); break;
        case Activation::Relu: mid = torch::relu(mid); break;
    }
    auto o = dense_linear_autograd(mid, output->dense->weight, output->dense->bias);
    if (dropout) o = dropout->apply(o, dropout->hidden);
    return apply_layer_norm(output->LayerNorm, o + a);
}

torch::Tensor BertLayerImpl::forward_train_reference(const torch::Tensor& x,
                                                     const torch::Tensor& mask_add,
                                                     BertDropout* dropout) {
    // The same arithmetic as forward(), out of place, from the real parameters.
    const auto b = x.size(0), l = x.size(1), h = x.size(2);
    const auto& s = attention->self;
    auto w = torch::cat({s->query->weight, s->key->weight, s->value->weight}, 0);
    auto wb = torch::cat({s->query->bias, s->key->bias, s->value->bias}, 0);
    auto qkv = torch::linear(x, w, wb).view({b, l, 3, heads, head_dim}).permute({2, 0, 3, 1, 4});
    auto q = qkv[0], k = qkv[1], v = qkv[2];
    auto scores = torch::matmul(q, k.transpose(-2, -1));
    scores = scores * (1.0 / std::sqrt(static_cast<double>(head_dim))) + mask_add;
    auto probs = torch::softmax(scores, -1);
    if (dropout) probs = dropout->apply(probs, dropout->attention);
    auto context = torch::matmul(probs, v).permute({0, 2, 1, 3}).reshape({b, l, h});

    auto& ao = attention->output;
    auto a = torch::linear(context, ao->dense->weight, ao->dense->bias);
    if (dropout) a = dropout->apply(a, dropout->hidden);
    a = apply_layer_norm(ao->LayerNorm, a + x);

    auto mid = torch::linear(a, intermediate->dense->weight, intermediate->dense->bias);
    switch (activation) {
        case Activation::Gelu: mid = torch::gelu(mid); break;
        case Activation::GeluTanh: mid = torch::gelu(mid, "tanh"); break;
        case Activation::Relu: mid = torch::relu(mid); break;
    }
    auto o = torch::linear(mid, output->dense->weight, output->dense->bias);
    if (dropout) o = dropout->apply(o, dropout->hidden);
    return apply_layer_norm(output->LayerNorm, o + a);
}

torch::Tensor BertLayerImpl::forward(const torch::Tensor& x, const torch::Tensor& mask_add) {
    if (torch::GradMode::is_enabled()) return forward_train(x, mask_add, nullptr);  // autograd
    if (int8_current()) {
        const auto& q = *int8;
        auto context = fused_self_attention(q.qkv(x), mask_add, heads, head_dim);
        auto a = q.attention_output(context);
        a.add_(x);
        a = apply_layer_norm(attention->output->LayerNorm, a);
        auto mid = q.intermediate(a);
        switch (activation) {
            case Activation::Gelu: at::gelu_(mid); break;  // in place: no second [B*L, I]
            case Activation::GeluTanh: at::gelu_(mid, "tanh"); break;
            case Activation::Relu: mid.relu_(); break;
        }
        auto o = q.output(mid);
        o.add_(a);
        return apply_layer_norm(output->LayerNorm, o);
    }
    // One [B*L, H] x [H, 3H] projection, then attention per (sequence, head) on [B, L, 3H].
    torch::Tensor qkv;
    if (fused_current()) {
        qkv = dense_linear(x, fused_weight, fused_bias);
    } else {  // stale fused copy: the same product from the real parameters
        const auto& s = attention->self;
        qkv = torch::linear(x, torch::cat({s->query->weight, s->key->weight, s->value->weight}, 0),
                            torch::cat({s->query->bias, s->key->bias, s->value->bias}, 0));
    }
    auto context = fused_self_attention(qkv, mask_add, heads, head_dim);

    auto& ao = attention->output;
    auto a = dense_linear(context, ao->dense->weight, ao->dense->bias);
    a.add_(x);
    a = apply_layer_norm(ao->LayerNorm, a);

    auto mid = dense_linear(a, intermediate->dense->weight, intermediate->dense->bias);
    switch (activation) {
        case Activation::Gelu: at::gelu_(mid); break;  // in place: no second [B*L, I] tensor
        case Activation::GeluTanh: at::gelu_(mid, "tanh"); break;
        case Activation::Relu: mid.relu_(); break;
    }
    auto o = dense_linear(mid, output->dense->weight, output->dense->bias);
    o.add_(a);
    return apply_layer_norm(output->LayerNorm, o);
}

BertEncoderImpl::BertEncoderImpl(const HfConfig& c) {
    layer = register_module("layer", torch::nn::ModuleList());
    const auto act = parse_activation(c.hidden_act);
    for (std::int64_t i = 0; i < c.num_hidden_layers; ++i) layer->push_back(BertLayer(c, act));
}

BertPoolerImpl::BertPoolerImpl(const HfConfig& c) {
    dense = register_module("dense", make_linear(c.hidden_size, c.hidden_size));
}

BertNetImpl::BertNetImpl(const HfConfig& c, bool with_pooler, std::int64_t num_labels)
    : model_type(c.model_type) {
    embeddings = register_module("embeddings", BertEmbeddings(c));
    encoder = register_module("encoder", BertEncoder(c));
    if (with_pooler) {
        if (model_type == ModelType::Bert) {
            pooler = register_module("pooler", BertPooler(c));
        } else {
            pre_classifier =
                register_module("pre_classifier", make_linear(c.hidden_size, c.hidden_size));
        }
    }
    if (num_labels > 0) {
        classifier = register_module("classifier", make_linear(c.hidden_size, num_labels));
    }
}

torch::Tensor BertNetImpl::forward(const torch::Tensor& ids, const torch::Tensor& types,
                                   const torch::Tensor& mask) {
    const bool train_path = !c10::InferenceMode::is_enabled() &&
                            (is_training() || torch::GradMode::is_enabled());
    auto* drop = active_dropout();
    auto x = embeddings->forward(ids, types);
    if (drop) x = drop->apply(x, drop->hidden);
    // Additive key mask as transformers builds it: (1 - mask) * finfo(float32).min.
    auto mask_add = (1.0 - mask.to(torch::kFloat32))
                        .mul_(std::numeric_limits<float>::lowest())
                        .view({ids.size(0), 1, 1, ids.size(1)});
    for (const auto& m : *encoder->layer) {
        auto* layer = m->as<BertLayer>();
        x = train_path ? layer->forward_train(x, mask_add, drop) : layer->forward(x, mask_add);
    }
    return x;
}

BertDropout* BertNetImpl::active_dropout() {
    if (!dropout || !is_training() || c10::InferenceMode::is_enabled()) return nullptr;
    return dropout.get();
}

void BertNetImpl::set_reference_kernels(bool on) {
    for (const auto& m : *encoder->layer) m->as<BertLayer>()->reference_kernels = on;
}

void BertNetImpl::refresh_fused() {
    for (const auto& m : *encoder->layer) m->as<BertLayer>()->refresh_fused();
}

void BertNetImpl::set_int8(bool on) {
    for (const auto& m : *encoder->layer) m->as<BertLayer>()->set_int8(on);
}

namespace {
/// The head's small products: at inference through oneDNN's sgemm on the OpenMP pool, as the
/// encoder's (dense_linear). torch::linear runs them on OpenBLAS's pthreads, whose worker then
/// spins (sched_yield) after every batch and takes a core from the next batch's OpenMP threads
/// (bench/README.md, "int8 / fp32 with 1 host thread: bisect"). Training keeps torch::linear.
torch::Tensor head_linear(const torch::Tensor& x, const torch::Tensor& weight,
                          const torch::Tensor& bias) {
    if (torch::GradMode::is_enabled()) return torch::linear(x, weight, bias);
    return dense_linear(x, weight, bias);
}
}  // namespace

torch::Tensor BertNetImpl::pool(const torch::Tensor& cls) {
    if (pooler) return torch::tanh(head_linear(cls, pooler->dense->weight, pooler->dense->bias));
    return torch::relu(head_linear(cls, pre_classifier->weight, pre_classifier->bias));
}

torch::Tensor BertNetImpl::classify(const torch::Tensor& pooled) {
    return head_linear(pooled, classifier->weight, classifier->bias);
}

}  // namespace detail

// ---------------------------------------------------------------------------------------------

const char* pooling_name(Pooling pooling) noexcept {
    return pooling == Pooling::Cls ? "cls" : "mean";
}

const char* precision_name(Precision precision) noexcept {
    return precision == Precision::Int8 ? "int8" : "fp32";
}

Precision parse_precision(const std::string& name) {
    if (name == "fp32") return Precision::Fp32;
    if (name == "int8") return Precision::Int8;
    throw InvalidArgument("unknown precision '" + name + "' (known: fp32, int8)");
}

Pooling parse_pooling(const std::string& name) {
    if (name == "cls") return Pooling::Cls;
    if (name == "mean") return Pooling::Mean;
    throw InvalidArgument("unknown pooling '" + name + "' (known: cls, mean)");
}

void check_vocabulary_fits(const BertModel& model, const Vocab& vocab, const std::string& who) {
    if (static_cast<std::int64_t>(vocab.size()) > model.config().vocab_size) {
        throw InvalidArgument(who + ": vocabulary of " + std::to_string(vocab.size()) +
                              " tokens exceeds the model's " +
                              std::to_string(model.config().vocab_size) + " embeddings");
    }
}

std::vector<std::vector<std::size_t>> length_grouped_batches(std::span<const std::size_t> lengths,
                                                             std::size_t batch_size) {
    if (batch_size == 0) batch_size = 1;
    std::vector<std::size_t> order(lengths.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return lengths[a] > lengths[b]; });
    std::vector<std::vector<std::size_t>> batches;
    for (std::size_t i = 0; i < order.size(); i += batch_size) {
        auto end = std::min(order.size(), i + batch_size);
        batches.emplace_back(order.begin() + static_cast<std::ptrdiff_t>(i),
                             order.begin() + static_cast<std::ptrdiff_t>(end));
    }
    return batches;
}

// ---------------------------------------------------------------------------------------------

struct BertModel::Impl {
    HfConfig config;
    BertHeads heads;
    Precision precision = Precision::Fp32;
    mutable detail::BertNet net{nullptr};  // forward() is not const in LibTorch style
    std::map<std::string, torch::Tensor> params;  // name -> parameter tensor

    void check_sequence(const Encoding& e) const {
        if (e.input_ids.empty()) throw InvalidArgument("BertModel: empty sequence");
        if (static_cast<std::int64_t>(e.input_ids.size()) > config.max_position_embeddings) {
            throw InvalidArgument("BertModel: sequence of " + std::to_string(e.input_ids.size()) +
                                  " tokens exceeds max_position_embeddings " +
                                  std::to_string(config.max_position_embeddings));
        }
        if (!e.token_type_ids.empty() && e.token_type_ids.size() != e.input_ids.size()) {
            throw InvalidArgument("BertModel: token_type_ids and input_ids differ in length");
        }
        for (auto id : e.input_ids) {
            if (id < 0 || id >= config.vocab_size) {
                throw InvalidArgument("BertModel: token id " + std::to_string(id) +
                                      " outside the vocabulary of " +
                                      std::to_string(config.vocab_size));
            }
        }
        const auto types = std::max<std::int64_t>(config.type_vocab_size, 1);
        for (auto t : e.token_type_ids) {
            if (t < 0 || (config.type_vocab_size > 0 && t >= types)) {
                throw InvalidArgument("BertModel: token type " + std::to_string(t) +
                                      " outside type_vocab_size " +
                                      std::to_string(config.type_vocab_size));
            }
        }
    }

    /// Runs the encoder over length-grouped batches; `sink(indices, hidden [B,L,H], mask [B,L])`.
    template <class Sink>
    void run(std::span<const Encoding> seqs, std::size_t batch_size, Sink&& sink) const {
        std::vector<std::size_t> lengths(seqs.size());
        for (std::size_t i = 0; i < seqs.size(); ++i) {
            check_sequence(seqs[i]);
            lengths[i] = seqs[i].input_ids.size();
        }
        c10::InferenceMode guard;
        for (const auto& batch : length_grouped_batches(lengths, batch_size)) {
            const auto b = static_cast<std::int64_t>(batch.size());
            const auto l = static_cast<std::int64_t>(lengths[batch.front()]);
            auto ids = torch::full({b, l}, config.pad_token_id, torch::kInt64);
            auto types = torch::zeros({b, l}, torch::kInt64);
            auto mask = torch::zeros({b, l}, torch::kInt64);
            auto* pid = ids.data_ptr<std::int64_t>();
            auto* ptype = types.data_ptr<std::int64_t>();
            auto* pmask = mask.data_ptr<std::int64_t>();
            for (std::int64_t r = 0; r < b; ++r) {
                const auto& e = seqs[batch[static_cast<std::size_t>(r)]];
                std::copy(e.input_ids.begin(), e.input_ids.end(), pid + r * l);
                std::copy(e.token_type_ids.begin(), e.token_type_ids.end(), ptype + r * l);
                std::fill_n(pmask + r * l, e.input_ids.size(), std::int64_t{1});
            }
            auto hidden = net->forward(ids, types, mask);
            sink(batch, hidden, mask);
        }
    }

    static void copy_rows(const torch::Tensor& rows, std::span<const std::size_t> batch,
                          std::vector<float>& out, std::int64_t width) {
        auto c = rows.contiguous();
        const float* p = c.data_ptr<float>();
        for (std::size_t r = 0; r < batch.size(); ++r) {
            std::copy_n(p + static_cast<std::int64_t>(r) * width, width,
                        out.begin() + static_cast<std::ptrdiff_t>(batch[r]) * width);
        }
    }
};

BertModel::BertModel(HfConfig config, BertHeads heads, std::uint64_t seed)
    : m_impl(std::make_unique<Impl>()) {
    config.validate();
    if (config.position_embedding_type != "absolute") {
        throw CheckpointError("config: position_embedding_type: only 'absolute' is supported");
    }
    if (heads.num_labels < 0) throw InvalidArgument("BertModel: negative num_labels");
    if (heads.num_labels > 0 && !heads.pooler) {
        throw InvalidArgument("BertModel: a classifier head needs the pooler (BERT) or "
                              "pre_classifier (DistilBERT)");
    }
    m_impl->config = std::move(config);
    m_impl->heads = heads;
    const auto& c = m_impl->config;
    m_impl->net = detail::BertNet(c, heads.pooler, heads.num_labels);
    m_impl->net->eval();

    torch::NoGradGuard no_grad;
    auto gen = at::detail::createCPUGenerator(seed);
    for (auto& p : m_impl->net->named_parameters()) {
        const auto& name = p.key();
        auto& t = p.value();
        t.set_requires_grad(false);
        const bool is_ln = name.find("LayerNorm") != std::string::npos;
        if (name.size() > 5 && name.compare(name.size() - 5, 5, ".bias") == 0) {
            t.zero_();
        } else if (is_ln) {
            t.fill_(1.0);
        } else {
            t.normal_(0.0, 0.02, gen);
        }
        m_impl->params.emplace(name, t);
    }
    auto& emb = m_impl->net->embeddings;
    if (c.pad_token_id >= 0 && c.pad_token_id < c.vocab_size) {
        emb->word_embeddings->weight[c.pad_token_id].zero_();
    }
    if (c.model_type == ModelType::DistilBert && c.sinusoidal_pos_embds) {
        const auto dim = c.hidden_size;
        std::vector<float> table(static_cast<std::size_t>(c.max_position_embeddings * dim));
        for (std::int64_t pos = 0; pos < c.max_position_embeddings; ++pos) {
            for (std::int64_t j = 0; j < dim; ++j) {
                double angle = static_cast<double>(pos) /
                               std::pow(10000.0, 2.0 * static_cast<double>(j / 2) /
                                                     static_cast<double>(dim));
                table[static_cast<std::size_t>(pos * dim + j)] =
                    static_cast<float>((j % 2 == 0) ? std::sin(angle) : std::cos(angle));
            }
        }
        set_parameter("embeddings.position_embeddings.weight", table);
    }
    for (const auto& m : *m_impl->net->encoder->layer) m->as<detail::BertLayer>()->refresh_fused();
}

BertModel::~BertModel() = default;
BertModel::BertModel(BertModel&&) noexcept = default;
BertModel& BertModel::operator=(BertModel&&) noexcept = default;

const HfConfig& BertModel::config() const noexcept { return m_impl->config; }
const BertHeads& BertModel::heads() const noexcept { return m_impl->heads; }
std::int64_t BertModel::hidden_size() const noexcept { return m_impl->config.hidden_size; }

std::vector<ParameterInfo> BertModel::parameters() const {
    std::vector<ParameterInfo> out;
    for (const auto& [name, t] : m_impl->params) out.push_back({name, t.sizes().vec()});
    return out;
}

bool BertModel::has_parameter(const std::string& name) const {
    return m_impl->params.count(name) > 0;
}

std::vector<std::int64_t> BertModel::parameter_shape(const std::string& name) const {
    auto it = m_impl->params.find(name);
    if (it == m_impl->params.end()) throw InvalidArgument("BertModel: no parameter '" + name + "'");
    return it->second.sizes().vec();
}

void BertModel::set_parameter(const std::string& name, std::span<const float> values) {
    auto it = m_impl->params.find(name);
    if (it == m_impl->params.end()) throw InvalidArgument("BertModel: no parameter '" + name + "'");
    auto& t = it->second;
    if (static_cast<std::int64_t>(values.size()) != t.numel()) {
        throw InvalidArgument("BertModel: parameter '" + name + "' has " +
                              std::to_string(t.numel()) + " values, got " +
                              std::to_string(values.size()));
    }
    {
        torch::NoGradGuard no_grad;
        auto src = torch::from_blob(const_cast<float*>(values.data()), t.sizes(),
                                    torch::kFloat32);
        t.copy_(src);
    }
    const std::string prefix = "encoder.layer.";
    if (name.rfind(prefix, 0) == 0 && (name.find(".attention.self.") != std::string::npos ||
                                       m_impl->precision == Precision::Int8)) {
        auto layer = std::stoul(name.substr(prefix.size()));
        m_impl->net->encoder->layer->ptr<detail::BertLayerImpl>(layer)->refresh_fused();
    }
}

void BertModel::set_precision(Precision precision) {
    m_impl->net->set_int8(precision == Precision::Int8);
    m_impl->precision = precision;
}

Precision BertModel::precision() const noexcept { return m_impl->precision; }

std::vector<float> BertModel::parameter(const std::string& name) const {
    auto it = m_impl->params.find(name);
    if (it == m_impl->params.end()) throw InvalidArgument("BertModel: no parameter '" + name + "'");
    auto c = it->second.contiguous();
    return std::vector<float>(c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
}

std::vector<std::vector<float>> BertModel::last_hidden_states(std::span<const Encoding> sequences,
                                                              std::size_t batch_size) const {
    std::vector<std::vector<float>> out(sequences.size());
    const auto h = hidden_size();
    m_impl->run(sequences, batch_size,
                [&](std::span<const std::size_t> batch, const torch::Tensor& hidden,
                    const torch::Tensor&) {
                    auto c = hidden.contiguous();
                    const float* p = c.data_ptr<float>();
                    const auto l = c.size(1);
                    for (std::size_t r = 0; r < batch.size(); ++r) {
                        const auto n = static_cast<std::int64_t>(sequences[batch[r]].size());
                        const float* row = p + static_cast<std::int64_t>(r) * l * h;
                        out[batch[r]].assign(row, row + n * h);
                    }
                });
    return out;
}

std::vector<float> BertModel::embed(std::span<const Encoding> sequences, Pooling pooling,
                                    std::size_t batch_size) const {
    const auto h = hidden_size();
    std::vector<float> out(sequences.size() * static_cast<std::size_t>(h));
    m_impl->run(sequences, batch_size,
                [&](std::span<const std::size_t> batch, const torch::Tensor& hidden,
                    const torch::Tensor& mask) {
                    torch::Tensor pooled;
                    if (pooling == Pooling::Cls) {
                        pooled = hidden.select(1, 0);
                    } else {
                        auto m = mask.to(torch::kFloat32).unsqueeze(-1);  // [B, L, 1]
                        pooled = (hidden * m).sum(1) / m.sum(1);
                    }
                    Impl::copy_rows(pooled, batch, out, h);
                });
    return out;
}

std::vector<float> BertModel::pooled(std::span<const Encoding> sequences,
                                     std::size_t batch_size) const {
    if (!m_impl->heads.pooler) throw InvalidArgument("BertModel: the model has no pooler");
    const auto h = hidden_size();
    std::vector<float> out(sequences.size() * static_cast<std::size_t>(h));
    m_impl->run(sequences, batch_size,
                [&](std::span<const std::size_t> batch, const torch::Tensor& hidden,
                    const torch::Tensor&) {
                    Impl::copy_rows(m_impl->net->pool(hidden.select(1, 0)), batch, out, h);
                });
    return out;
}

std::vector<float> BertModel::logits(std::span<const Encoding> sequences,
                                     std::size_t batch_size) const {
    const auto labels = m_impl->heads.num_labels;
    if (labels <= 0) throw InvalidArgument("BertModel: the model has no classifier head");
    std::vector<float> out(sequences.size() * static_cast<std::size_t>(labels));
    m_impl->run(sequences, batch_size,
                [&](std::span<const std::size_t> batch, const torch::Tensor& hidden,
                    const torch::Tensor&) {
                    auto& net = m_impl->net;
                    Impl::copy_rows(net->classify(net->pool(hidden.select(1, 0))), batch, out,
                                    labels);
                });
    return out;
}

namespace detail {
BertNet BertModelAccess::net(const BertModel& model) { return model.m_impl->net; }
}  // namespace detail

}  // namespace plumb::rerank
