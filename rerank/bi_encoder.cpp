#include "rerank/bi_encoder.hpp"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "plugin/error.hpp"
#include "plugin/json.hpp"
#include "plugin/registry.hpp"
#include "rerank/bert_checkpoint.hpp"
#include "rerank/torch_threads.hpp"

namespace plumb::rerank {

const char* similarity_name(Similarity similarity) noexcept {
    return similarity == Similarity::Dot ? "dot" : "cosine";
}

Similarity parse_similarity(const std::string& name) {
    if (name == "dot") return Similarity::Dot;
    if (name == "cosine") return Similarity::Cosine;
    throw InvalidArgument("unknown similarity '" + name + "' (known: dot, cosine)");
}

BiEncoder::BiEncoder(std::shared_ptr<const BertModel> model,
                     std::shared_ptr<const WordPieceTokenizer> tokenizer, BiEncoderOptions options)
    : m_model(std::move(model)), m_tokenizer(std::move(tokenizer)), m_options(options) {
    if (!m_model || !m_tokenizer) throw InvalidArgument("BiEncoder: null model/tokenizer");
    check_vocabulary_fits(*m_model, m_tokenizer->vocab(), "BiEncoder");
    const auto positions = static_cast<std::size_t>(m_model->config().max_position_embeddings);
    m_options.query_max_length = std::min(m_options.query_max_length, positions);
    m_options.passage_max_length = std::min(m_options.passage_max_length, positions);
    if (m_options.query_max_length < 2 || m_options.passage_max_length < 2) {
        throw InvalidArgument("BiEncoder: max lengths must be >= 2");
    }
}

namespace {

nlohmann::json read_json(const std::filesystem::path& path) {
    try {
        return read_json_file(path);
    } catch (const ParseError& e) {
        throw CheckpointError(e.what());
    }
}

}  // namespace

std::optional<SentenceTransformersConfig> read_sentence_transformers_config(
    const std::filesystem::path& dir) {
    const auto modules_path = dir / "modules.json";
    std::error_code ec;
    if (!std::filesystem::exists(modules_path, ec)) return std::nullopt;
    const auto modules = read_json(modules_path);
    const std::string file = modules_path.string();
    if (!modules.is_array()) throw CheckpointError(file + ": expected an array of modules");
    SentenceTransformersConfig st;
    st.transformer_dir = dir;
    bool have_transformer = false, have_pooling = false;
    for (const auto& m : modules) {
        if (!m.is_object() || !m.contains("type") || !m["type"].is_string()) {
            throw CheckpointError(file + ": every module needs a string 'type'");
        }
        const std::string type = m["type"].get<std::string>();
        const std::string path =
            m.contains("path") && m["path"].is_string() ? m["path"].get<std::string>() : "";
        const std::string prefix = "sentence_transformers.models.";
        const std::string kind = type.rfind(prefix, 0) == 0 ? type.substr(prefix.size()) : type;
        if (kind == "Transformer") {
            if (have_transformer || have_pooling) {
                throw CheckpointError(file + ": plumb reads one Transformer module first");
            }
            have_transformer = true;
            st.transformer_dir = dir / path;
        } else if (kind == "Pooling") {
            if (!have_transformer || have_pooling) {
                throw CheckpointError(file + ": a Pooling module must follow one Transformer");
            }
            have_pooling = true;
            const auto config_path = dir / path / "config.json";
            if (!std::filesystem::exists(config_path, ec)) {
                throw CheckpointError(config_path.string() + ": missing (Pooling module '" + path +
                                      "')");
            }
            const auto c = read_json(config_path);
            if (!c.is_object()) throw CheckpointError(config_path.string() + ": not an object");
            std::vector<std::string> modes;
            for (const auto& [key, value] : c.items()) {
                const std::string p = "pooling_mode_";
                if (key.rfind(p, 0) == 0 && value.is_boolean() && value.get<bool>()) {
                    modes.push_back(key.substr(p.size()));
                }
            }
            if (modes.empty() && c.contains("pooling_mode") && c["pooling_mode"].is_string()) {
                modes.push_back(c["pooling_mode"].get<std::string>());
            }
            if (modes.size() != 1) {
                throw CheckpointError(config_path.string() +
                                      ": expected exactly one pooling "
                                      "mode, found " +
                                      std::to_string(modes.size()) +
                                      " (plumb pools by CLS or mean)");
            }
            st.pooling_mode = modes[0];
            if (st.pooling_mode == "cls_token" || st.pooling_mode == "cls") {
                st.pooling = Pooling::Cls;
                st.pooling_known = true;
            } else if (st.pooling_mode == "mean_tokens" || st.pooling_mode == "mean") {
                st.pooling = Pooling::Mean;
                st.pooling_known = true;
            }
        } else if (kind == "Normalize") {
            if (!have_pooling) throw CheckpointError(file + ": Normalize before Pooling");
            st.normalize = true;
        } else {
            throw CheckpointError(file + ": module '" + type + "' (" + path +
                                  ") is not supported: plumb reproduces Transformer, Pooling "
                                  "(CLS or mean) and Normalize only");
        }
    }
    if (!have_transformer || !have_pooling) {
        throw CheckpointError(file + ": expected a Transformer and a Pooling module");
    }
    return st;
}

std::shared_ptr<BiEncoder> BiEncoder::from_folder(const std::filesystem::path& folder,
                                                  BiEncoderOptions options) {
    std::filesystem::path dir = folder;
    if (auto st = read_sentence_transformers_config(folder)) {
        dir = st->transformer_dir;
        if (!options.explicit_pooling) {
            if (!st->pooling_known) {
                throw CheckpointError(folder.string() + ": sentence-transformers pooling mode '" +
                                      st->pooling_mode + "' is not supported (plumb: cls, mean)");
            }
            options.pooling = st->pooling;
        }
        if (!options.explicit_similarity && st->normalize) {
            options.similarity = Similarity::Cosine;
        }
    }
    BertCheckpointOptions ck;
    ck.heads = HeadSelection::EncoderOnly;
    auto model = std::make_shared<const BertModel>(load_bert_checkpoint(dir, ck));
    auto tok = std::make_shared<const WordPieceTokenizer>(WordPieceTokenizer::from_folder(dir));
    return std::make_shared<BiEncoder>(std::move(model), std::move(tok), options);
}

std::size_t BiEncoder::dim() const noexcept {
    return static_cast<std::size_t>(m_model->hidden_size());
}

std::vector<float> BiEncoder::encode(std::span<const std::string_view> texts,
                                     std::size_t max_length) const {
    std::vector<Encoding> enc;
    enc.reserve(texts.size());
    for (auto t : texts) enc.push_back(m_tokenizer->encode(t, max_length));
    std::vector<float> out;
    {
        TorchThreadsScope threads(m_options.threads);
        out = m_model->embed(enc, m_options.pooling, m_options.batch_size);
    }
    if (m_options.similarity == Similarity::Cosine) {
        const auto d = dim();
        for (std::size_t i = 0; i < texts.size(); ++i) {
            float* row = out.data() + i * d;
            double norm = 0;
            for (std::size_t j = 0; j < d; ++j) norm += double(row[j]) * row[j];
            norm = std::sqrt(norm);
            if (norm > 0) {
                for (std::size_t j = 0; j < d; ++j) row[j] = static_cast<float>(row[j] / norm);
            }
        }
    }
    return out;
}

std::vector<PassageTokenVectors> BiEncoder::passage_token_vectors(
    std::span<const std::string_view> texts) const {
    std::vector<Encoding> enc;
    enc.reserve(texts.size());
    for (auto t : texts) enc.push_back(m_tokenizer->encode(t, m_options.passage_max_length));
    std::vector<std::vector<float>> hidden;
    {
        TorchThreadsScope threads(m_options.threads);
        hidden = m_model->last_hidden_states(enc, m_options.batch_size);
    }
    const auto d = static_cast<std::size_t>(m_model->hidden_size());
    const auto& vocab = m_tokenizer->vocab();
    std::vector<PassageTokenVectors> out(texts.size());
    for (std::size_t i = 0; i < texts.size(); ++i) {
        const auto& ids = enc[i].input_ids;  // [CLS] tokens... [SEP]
        auto& o = out[i];
        o.dim = static_cast<std::int64_t>(d);
        if (ids.size() < 3) continue;
        const std::size_t n = ids.size() - 2;
        o.terms.reserve(n);
        o.positions.reserve(n);
        for (std::size_t k = 1; k <= n; ++k) {
            o.terms.push_back(vocab.token(ids[k]));
            o.positions.push_back(static_cast<std::int64_t>(k));
        }
        o.values.assign(hidden[i].begin() + static_cast<std::ptrdiff_t>(d),
                        hidden[i].begin() + static_cast<std::ptrdiff_t>((n + 1) * d));
    }
    return out;
}

std::vector<float> BiEncoder::encode_queries(std::span<const std::string_view> texts) const {
    return encode(texts, m_options.query_max_length);
}

std::vector<float> BiEncoder::encode_passages(std::span<const std::string_view> texts) const {
    return encode(texts, m_options.passage_max_length);
}

float BiEncoder::similarity(const float* a, const float* b) const noexcept {
    double s = 0;
    for (std::size_t j = 0, d = dim(); j < d; ++j) s += double(a[j]) * b[j];
    return static_cast<float>(s);
}

VectorStoreMeta BiEncoder::store_meta(const std::string& model) const {
    VectorStoreMeta m;
    m.dim = dim();
    m.meta["model"] = model;
    m.meta["pooling"] = pooling_name(m_options.pooling);
    m.meta["similarity"] = similarity_name(m_options.similarity);
    m.meta["passage_max_length"] = std::to_string(m_options.passage_max_length);
    return m;
}

BiEncoderOptions bi_encoder_options_from_config(const nlohmann::json& c, const std::string& where) {
    BiEncoderOptions o;
    o.batch_size = config_positive_size(c, "batch_size", o.batch_size, where);
    try {
        o.pooling = parse_pooling(config_string(c, "pooling", "cls", where));
        o.similarity = parse_similarity(config_string(c, "similarity", "dot", where));
        o.explicit_pooling = c.contains("pooling");
        o.explicit_similarity = c.contains("similarity");
    } catch (const InvalidArgument& e) {
        throw ConfigError(where + ": " + e.what());
    }
    o.threads = static_cast<int>(config_size(c, "threads", 0, where));
    return o;
}

}  // namespace plumb::rerank
