#include "rerank/tk_model.hpp"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <mutex>
#include <numeric>
#include <set>
#include <utility>

#include "plugin/error.hpp"
#include "plugin/hash.hpp"
#include "plugin/json.hpp"
#include "plugin/text_io.hpp"
#include "rerank/detail/tk_cache_kernels.hpp"
#include "rerank/detail/tk_module.hpp"
#include "rerank/safetensors.hpp"

namespace plumb::rerank {

namespace {

constexpr const char* kConfigFile = "config.json";
constexpr const char* kVocabFile = "vocab.txt";
constexpr const char* kWeightsFile = "model.safetensors";

/// Ids of one sequence truncated to `max_len`.
std::span<const std::int64_t> truncated(std::span<const std::int64_t> ids, std::int64_t max_len) {
    return ids.first(std::min<std::size_t>(ids.size(), static_cast<std::size_t>(max_len)));
}

void check_ids(std::span<const std::int64_t> ids, std::int64_t vocab_size) {
    for (auto id : ids) {
        if (id < 0 || id >= vocab_size) {
            throw InvalidArgument("TK: token id " + std::to_string(id) +
                                  " outside the vocabulary [0, " + std::to_string(vocab_size) +
                                  ")");
        }
    }
}

/// Indices 0..n-1 ordered by length (stable), for dynamic padding.
std::vector<std::size_t> by_length(const std::vector<std::span<const std::int64_t>>& seqs) {
    std::vector<std::size_t> order(seqs.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return seqs[a].size() < seqs[b].size(); });
    return order;
}

nlohmann::json config_to_json(const TkConfig& c, std::int64_t vocab_size) {
    nlohmann::json j;
    j["format"] = kTkFormat;
    j["version"] = kTkFormatVersion;
    j["vocab_size"] = vocab_size;
    j["embedding_dim"] = c.embedding_dim;
    j["layers"] = c.layers;
    j["heads"] = c.heads;
    j["head_dim"] = c.attention_dim() / c.heads;
    j["ff_dim"] = c.ff_dim;
    j["kernels_mu"] = c.kernel_mu;
    j["kernels_sigma"] = c.kernel_sigma;
    j["mixer_init"] = c.mixer_init;
    j["passage_position_offset"] = c.passage_position_offset;
    j["max_query_length"] = c.max_query_length;
    j["max_passage_length"] = c.max_passage_length;
    j["mean_kernel"] = c.mean_kernel;
    j["train_embeddings"] = c.train_embeddings;
    j["lowercase"] = c.lowercase;
    j["vocab_file"] = kVocabFile;
    j["weights_file"] = kWeightsFile;
    return j;
}

template <class T>
T field(const nlohmann::json& j, const char* key, const std::string& file) {
    if (!j.contains(key)) throw CheckpointError(file + ": missing field '" + key + "'");
    try {
        return j.at(key).get<T>();
    } catch (const nlohmann::json::exception& e) {
        throw CheckpointError(file + ": field '" + key + "': " + e.what());
    }
}

}  // namespace

std::vector<float> tk_default_kernel_mu() {
    return {1.0f, 0.9f, 0.7f, 0.5f, 0.3f, 0.1f, -0.1f, -0.3f, -0.5f, -0.7f, -0.9f};
}

std::int64_t TkConfig::attention_dim() const noexcept {
    if (heads <= 0) return 0;
    return head_dim > 0 ? heads * head_dim : embedding_dim;
}

void TkConfig::validate() const {
    auto positive = [](std::int64_t v, const char* name) {
        if (v <= 0) throw ConfigError(std::string("TK config: ") + name + " must be > 0");
    };
    positive(embedding_dim, "embedding_dim");
    if (layers < 0) throw ConfigError("TK config: layers must be >= 0");
    positive(heads, "heads");
    if (head_dim < 0) throw ConfigError("TK config: head_dim must be >= 0");
    if (head_dim == 0 && embedding_dim % heads != 0) {
        throw ConfigError("TK config: embedding_dim " + std::to_string(embedding_dim) +
                          " is not divisible by heads " + std::to_string(heads) +
                          " (set head_dim)");
    }
    positive(ff_dim, "ff_dim");
    positive(max_query_length, "max_query_length");
    positive(max_passage_length, "max_passage_length");
    if (passage_position_offset < 0) {
        throw ConfigError("TK config: passage_position_offset must be >= 0");
    }
    if (kernel_mu.empty()) throw ConfigError("TK config: no kernels");
    if (kernel_mu.size() != kernel_sigma.size()) {
        throw ConfigError("TK config: " + std::to_string(kernel_mu.size()) + " kernel means but " +
                          std::to_string(kernel_sigma.size()) + " widths");
    }
    for (float s : kernel_sigma) {
        if (!(s > 0.0f) || !std::isfinite(s)) throw ConfigError("TK config: sigma must be > 0");
    }
    for (float m : kernel_mu) {
        if (!std::isfinite(m)) throw ConfigError("TK config: mu must be finite");
    }
    if (!std::isfinite(mixer_init)) throw ConfigError("TK config: mixer_init must be finite");
}

struct TkModel::Impl {
    TkConfig config;
    std::shared_ptr<const TkVocabulary> vocab;
    TkTokenizer tokenizer;
    detail::TkModule module;
    std::once_flag checksum_once;
    std::uint64_t checksum = 0;

    Impl(TkConfig c, std::shared_ptr<const TkVocabulary> v)
        : config(std::move(c)),
          vocab(std::move(v)),
          tokenizer(vocab, config.lowercase),
          module(config, vocab->size()) {}

    /// Contextualised sequences of a batch.
    torch::Tensor contextualize(const std::vector<std::span<const std::int64_t>>& seqs,
                                bool passage, torch::Tensor& mask) {
        auto packed = detail::pack_token_ids(seqs);
        mask = packed.second;
        return module->contextualize(packed.first, packed.second, passage);
    }
};

TkModel::TkModel(std::unique_ptr<Impl> impl) : m_impl(std::move(impl)) {}
TkModel::TkModel(TkModel&&) noexcept = default;
TkModel& TkModel::operator=(TkModel&&) noexcept = default;
TkModel::~TkModel() = default;

TkModel TkModel::create(const TkConfig& config, TkVocabulary vocabulary,
                        std::span<const float> embeddings, std::uint64_t seed) {
    config.validate();
    auto vocab = std::make_shared<const TkVocabulary>(std::move(vocabulary));
    const auto rows = vocab->size();
    const auto d = config.embedding_dim;
    if (!embeddings.empty() && static_cast<std::int64_t>(embeddings.size()) != rows * d) {
        throw InvalidArgument("TK: embedding matrix has " + std::to_string(embeddings.size()) +
                              " values, expected vocabulary size " + std::to_string(rows) + " × " +
                              std::to_string(d));
    }
    auto impl = std::make_unique<Impl>(config, vocab);
    impl->module->reset_parameters(seed);
    if (!embeddings.empty()) {
        torch::NoGradGuard no_grad;
        auto src =
            torch::from_blob(const_cast<float*>(embeddings.data()), {rows, d}, torch::kFloat32);
        impl->module->embeddings->weight.copy_(src);
        impl->module->embeddings->weight[0].zero_();
    }
    impl->module->eval();
    return TkModel(std::move(impl));
}

void TkModel::save(const std::filesystem::path& dir) const {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) throw IoError("cannot create directory " + dir.string() + ": " + ec.message());
    std::map<std::string, TensorData> tensors;
    auto add = [&](const std::string& name, const torch::Tensor& t) {
        auto c = t.detach().to(torch::kFloat32).contiguous();
        std::vector<std::int64_t> shape(c.sizes().begin(), c.sizes().end());
        tensors.emplace(name,
                        TensorData::from_float32(
                            shape, std::span<const float>(c.data_ptr<float>(),
                                                          static_cast<std::size_t>(c.numel()))));
    };
    for (const auto& p : m_impl->module->named_parameters(true)) add(p.key(), p.value());
    for (const auto& b : m_impl->module->named_buffers(true)) add(b.key(), b.value());
    save_safetensors(dir / kWeightsFile, tensors,
                     {{"format", kTkFormat}, {"version", std::to_string(kTkFormatVersion)}});
    m_impl->vocab->save(dir / kVocabFile);
    AtomicFile cfg(dir / kConfigFile);
    cfg.write(config_to_json(m_impl->config, m_impl->vocab->size()).dump(2));
    cfg.write("\n");
    cfg.commit();
}

TkModel TkModel::load(const std::filesystem::path& dir) {
    const auto cfg_path = dir / kConfigFile;
    const std::string cfg_name = cfg_path.string();
    nlohmann::json j;
    try {
        j = read_json_file(cfg_path);
    } catch (const ParseError& e) {
        throw CheckpointError(e.what());
    }
    if (!j.is_object()) throw CheckpointError(cfg_name + ": not a JSON object");
    const auto format = j.value("format", std::string());
    if (format != kTkFormat) {
        throw CheckpointError(cfg_name + ": format '" + format + "' is not '" + kTkFormat + "'");
    }
    const auto version = field<int>(j, "version", cfg_name);
    if (version != kTkFormatVersion) {
        throw CheckpointError(cfg_name + ": unsupported plumb-tk version " +
                              std::to_string(version) + " (this build reads version " +
                              std::to_string(kTkFormatVersion) + ")");
    }
    TkConfig c;
    c.embedding_dim = field<std::int64_t>(j, "embedding_dim", cfg_name);
    c.layers = field<std::int64_t>(j, "layers", cfg_name);
    c.heads = field<std::int64_t>(j, "heads", cfg_name);
    c.head_dim = field<std::int64_t>(j, "head_dim", cfg_name);
    c.ff_dim = field<std::int64_t>(j, "ff_dim", cfg_name);
    c.kernel_mu = field<std::vector<float>>(j, "kernels_mu", cfg_name);
    c.kernel_sigma = field<std::vector<float>>(j, "kernels_sigma", cfg_name);
    c.mixer_init = field<float>(j, "mixer_init", cfg_name);
    c.passage_position_offset = field<std::int64_t>(j, "passage_position_offset", cfg_name);
    c.max_query_length = field<std::int64_t>(j, "max_query_length", cfg_name);
    c.max_passage_length = field<std::int64_t>(j, "max_passage_length", cfg_name);
    c.mean_kernel = field<bool>(j, "mean_kernel", cfg_name);
    c.train_embeddings = field<bool>(j, "train_embeddings", cfg_name);
    c.lowercase = field<bool>(j, "lowercase", cfg_name);
    const auto vocab_size = field<std::int64_t>(j, "vocab_size", cfg_name);
    const auto vocab_file = field<std::string>(j, "vocab_file", cfg_name);
    const auto weights_file = field<std::string>(j, "weights_file", cfg_name);
    try {
        c.validate();
    } catch (const ConfigError& e) {
        throw CheckpointError(cfg_name + ": " + e.what());
    }

    auto vocab = std::make_shared<const TkVocabulary>(TkVocabulary::load(dir / vocab_file));
    if (vocab->size() != vocab_size) {
        throw CheckpointError(cfg_name + ": vocab_size " + std::to_string(vocab_size) + " but " +
                              (dir / vocab_file).string() + " has " +
                              std::to_string(vocab->size()) + " entries");
    }

    auto impl = std::make_unique<Impl>(c, vocab);
    SafetensorsFile st(dir / weights_file);
    std::set<std::string> expected;
    auto load_into = [&](const std::string& name, torch::Tensor& t) {
        expected.insert(name);
        std::vector<std::int64_t> shape(t.sizes().begin(), t.sizes().end());
        auto values = st.float32(name, shape);  // throws CheckpointError on shape mismatch
        torch::NoGradGuard no_grad;
        t.copy_(torch::from_blob(values.data(), t.sizes(), torch::kFloat32));
    };
    for (auto& p : impl->module->named_parameters(true)) load_into(p.key(), p.value());
    for (auto& b : impl->module->named_buffers(true)) load_into(b.key(), b.value());
    for (const auto& name : st.names()) {
        if (!expected.count(name)) {
            throw CheckpointError(st.path_name() + ": unexpected tensor '" + name +
                                  "' for this TK configuration");
        }
    }
    impl->module->eval();
    return TkModel(std::move(impl));
}

const TkConfig& TkModel::config() const noexcept { return m_impl->config; }
const TkTokenizer& TkModel::tokenizer() const noexcept { return m_impl->tokenizer; }
const TkVocabulary& TkModel::vocabulary() const noexcept { return *m_impl->vocab; }

float TkModel::mixer() const { return m_impl->module->mixer.item<float>(); }

std::int64_t TkModel::parameter_count() const {
    std::int64_t n = 0;
    for (const auto& p : m_impl->module->parameters(true)) n += p.numel();
    return n;
}

std::vector<float> TkModel::score(std::string_view query,
                                  std::span<const std::string_view> passages,
                                  std::size_t batch_size) const {
    const auto& c = m_impl->config;
    auto q = m_impl->tokenizer.encode(query, static_cast<std::size_t>(c.max_query_length));
    std::vector<std::vector<std::int64_t>> p;
    p.reserve(passages.size());
    for (auto s : passages) {
        p.push_back(m_impl->tokenizer.encode(s, static_cast<std::size_t>(c.max_passage_length)));
    }
    return score_ids(q, p, batch_size);
}

std::vector<float> TkModel::score(std::string_view query, std::span<const std::string> passages,
                                  std::size_t batch_size) const {
    std::vector<std::string_view> views(passages.begin(), passages.end());
    return score(query, std::span<const std::string_view>(views), batch_size);
}

std::vector<float> TkModel::score_ids(std::span<const std::int64_t> query_ids,
                                      std::span<const std::vector<std::int64_t>> passage_ids,
                                      std::size_t batch_size) const {
    if (batch_size == 0) throw InvalidArgument("TK: batch size must be > 0");
    const auto& c = m_impl->config;
    const auto vocab_size = m_impl->vocab->size();
    std::vector<float> out(passage_ids.size(), 0.0f);
    if (passage_ids.empty()) return out;
    auto q = truncated(query_ids, c.max_query_length);
    check_ids(q, vocab_size);
    std::vector<std::span<const std::int64_t>> seqs;
    seqs.reserve(passage_ids.size());
    for (const auto& p : passage_ids) {
        seqs.push_back(truncated(p, c.max_passage_length));
        check_ids(seqs.back(), vocab_size);
    }

    c10::InferenceMode guard;
    torch::Tensor q_mask;
    auto q_hat = m_impl->contextualize({q}, false, q_mask);  // [1, Lq, D]
    const auto order = by_length(seqs);
    for (std::size_t begin = 0; begin < order.size(); begin += batch_size) {
        const std::size_t end = std::min(order.size(), begin + batch_size);
        std::vector<std::span<const std::int64_t>> batch;
        for (std::size_t i = begin; i < end; ++i) batch.push_back(seqs[order[i]]);
        torch::Tensor p_mask;
        auto p_hat = m_impl->contextualize(batch, true, p_mask);
        const auto b = static_cast<std::int64_t>(batch.size());
        auto scores = m_impl->module
                          ->score_representations(q_hat.expand({b, -1, -1}), q_mask.expand({b, -1}),
                                                  p_hat, p_mask)
                          .contiguous();
        const float* s = scores.data_ptr<float>();
        for (std::size_t i = begin; i < end; ++i) out[order[i]] = s[i - begin];
    }
    return out;
}

std::vector<TkTermVectors> TkModel::passage_vectors(std::span<const std::string_view> passages,
                                                    std::size_t batch_size) const {
    if (batch_size == 0) throw InvalidArgument("TK: batch size must be > 0");
    const auto& c = m_impl->config;
    std::vector<TkTermVectors> out(passages.size());
    std::vector<std::vector<std::int64_t>> ids(passages.size());
    for (std::size_t i = 0; i < passages.size(); ++i) {
        auto& tv = out[i];
        tv.terms =
            m_impl->tokenizer.words(passages[i], static_cast<std::size_t>(c.max_passage_length));
        tv.dim = c.embedding_dim;
        for (std::size_t k = 0; k < tv.terms.size(); ++k) {
            tv.ids.push_back(m_impl->vocab->id(tv.terms[k]));
            tv.positions.push_back(static_cast<std::int64_t>(k));
        }
        ids[i] = tv.ids;
    }
    std::vector<std::span<const std::int64_t>> seqs(ids.begin(), ids.end());
    const auto order = by_length(seqs);
    c10::InferenceMode guard;
    for (std::size_t begin = 0; begin < order.size(); begin += batch_size) {
        const std::size_t end = std::min(order.size(), begin + batch_size);
        std::vector<std::span<const std::int64_t>> batch;
        for (std::size_t i = begin; i < end; ++i) batch.push_back(seqs[order[i]]);
        torch::Tensor mask;
        auto hat = m_impl->contextualize(batch, true, mask).contiguous();  // [B, L, D]
        const auto l = hat.size(1);
        const float* data = hat.data_ptr<float>();
        for (std::size_t i = begin; i < end; ++i) {
            auto& tv = out[order[i]];
            const std::size_t n = tv.terms.size();
            const auto d = static_cast<std::size_t>(tv.dim);
            const float* row0 = data + (i - begin) * static_cast<std::size_t>(l) * d;
            tv.values.assign(row0, row0 + n * d);
        }
    }
    return out;
}

TkTermVectors TkModel::passage_vectors(std::string_view passage) const {
    return std::move(passage_vectors(std::span<const std::string_view>(&passage, 1))[0]);
}

std::vector<std::int64_t> TkModel::passage_ids(std::string_view passage) const {
    return m_impl->tokenizer.encode(
        passage, static_cast<std::size_t>(m_impl->config.max_passage_length));
}

std::uint64_t TkModel::checksum() const {
    std::call_once(m_impl->checksum_once, [this] {
        std::uint64_t h = fnv1a64(config_to_json(m_impl->config, m_impl->vocab->size()).dump());
        for (std::int64_t i = 0; i < m_impl->vocab->size(); ++i) {
            h = fnv1a64(m_impl->vocab->token(i), h);
            h = fnv1a64(std::string_view("\n", 1), h);
        }
        auto add = [&](const std::string& name, const torch::Tensor& t) {
            h = fnv1a64(name, h);
            auto c = t.detach().to(torch::kFloat32).contiguous();
            const auto* bits = reinterpret_cast<const std::uint32_t*>(c.data_ptr<float>());
            const auto n = static_cast<std::size_t>(c.numel());
            for (std::size_t i = 0; i < n; ++i) h = splitmix64(h ^ bits[i]);
        };
        c10::InferenceMode guard;
        // named_parameters / named_buffers are in registration order: stable for a config.
        for (const auto& p : m_impl->module->named_parameters(true)) add(p.key(), p.value());
        for (const auto& b : m_impl->module->named_buffers(true)) add(b.key(), b.value());
        m_impl->checksum = h;
    });
    return m_impl->checksum;
}

std::vector<float> TkModel::score_cached(std::string_view query,
                                         std::span<const TkCachedPassage> passages,
                                         int threads) const {
    const auto& c = m_impl->config;
    std::vector<float> out(passages.size(), 0.0f);
    if (passages.empty()) return out;
    auto q = m_impl->tokenizer.encode(query, static_cast<std::size_t>(c.max_query_length));
    // No query terms: every Σ_i is empty, the score 0 (as score()).
    if (q.empty()) return out;
    c10::InferenceMode guard;
    auto& module = m_impl->module;
    torch::Tensor qn;
    {
        torch::Tensor q_mask;
        std::vector<std::span<const std::int64_t>> seqs{std::span<const std::int64_t>(q)};
        auto q_hat = m_impl->contextualize(seqs, false, q_mask)[0];  // [Lq, D]
        qn = (q_hat / (q_hat.norm(2, -1, true) + 1e-13)).contiguous();
    }
    auto to_vec = [](const torch::Tensor& t) {
        auto f = t.detach().to(torch::kFloat32).contiguous().view({-1});
        return std::vector<float>(f.data_ptr<float>(), f.data_ptr<float>() + f.numel());
    };
    detail::TkPooling pooling;
    pooling.mu = to_vec(module->mu);
    pooling.sigma = to_vec(module->sigma);
    pooling.weights = to_vec(module->kernel_bin_weights->weight);
    pooling.mean_kernel = c.mean_kernel;
    if (c.mean_kernel) {
        pooling.mean_weights = to_vec(module->dense_mean->weight);
        auto comb = to_vec(module->dense_comb->weight);
        pooling.comb[0] = comb[0];
        pooling.comb[1] = comb[1];
        pooling.scaler = module->nn_scaler.item<float>();
    }
    const auto dim = static_cast<std::size_t>(c.embedding_dim);
    detail::tk_score_cached(
        std::span<const float>(qn.data_ptr<float>(), static_cast<std::size_t>(qn.numel())),
        q.size(), dim, passages, pooling, out.data(), threads);
    return out;
}

int tk_intra_op_threads() { return torch::get_num_threads(); }

void tk_set_intra_op_threads(int n) {
    if (n <= 0) throw InvalidArgument("intra-op threads must be > 0");
    torch::set_num_threads(n);
}

namespace detail {
TkModule TkModelAccess::module(const TkModel& model) { return model.m_impl->module; }
}  // namespace detail

}  // namespace plumb::rerank
