#include "rerank/hf_config.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "plugin/error.hpp"
#include "plugin/json.hpp"
#include "plugin/text_io.hpp"
#include "rerank/checkpoint_format.hpp"

namespace plumb::rerank {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

const char* model_type_name(ModelType type) noexcept {
    return type == ModelType::DistilBert ? "distilbert" : "bert";
}

namespace {

[[noreturn]] void fail(const std::string& file, const std::string& key, const std::string& what) {
    throw CheckpointError(file + ": " + (key.empty() ? "" : key + ": ") + what);
}

json parse_json(const std::string& text, const std::string& file) {
    try {
        return plumb::parse_json(text, file);
    } catch (const ParseError& e) {
        throw CheckpointError(e.what());
    }
}

void get_int(const json& j, const char* key, std::int64_t& out, const std::string& file) {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) return;
    if (!it->is_number_integer()) fail(file, key, "expected an integer, got " + it->dump());
    out = it->get<std::int64_t>();
}

void get_double(const json& j, const char* key, double& out, const std::string& file) {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) return;
    if (!it->is_number()) fail(file, key, "expected a number, got " + it->dump());
    out = it->get<double>();
}

void get_string(const json& j, const char* key, std::string& out, const std::string& file) {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) return;
    if (!it->is_string()) fail(file, key, "expected a string, got " + it->dump());
    out = it->get<std::string>();
}

void get_bool(const json& j, const char* key, bool& out, const std::string& file) {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) return;
    if (!it->is_boolean()) fail(file, key, "expected true/false, got " + it->dump());
    out = it->get<bool>();
}

}  // namespace

void HfConfig::validate(const std::string& file) const {
    auto positive = [&](const char* key, std::int64_t v) {
        if (v <= 0) fail(file, key, "must be positive, got " + std::to_string(v));
    };
    const bool distil = model_type == ModelType::DistilBert;
    positive("vocab_size", vocab_size);
    positive(distil ? "dim" : "hidden_size", hidden_size);
    positive(distil ? "n_layers" : "num_hidden_layers", num_hidden_layers);
    positive(distil ? "n_heads" : "num_attention_heads", num_attention_heads);
    positive(distil ? "hidden_dim" : "intermediate_size", intermediate_size);
    positive("max_position_embeddings", max_position_embeddings);
    // Sane upper bounds, checked before any tensor is allocated: a config is untrusted input,
    // and "vocab_size": 1e12 must be an error naming the file, not a 4 TB allocation. The
    // bounds are far above every published BERT-family model (largest vocabularies ~250k,
    // widths 8k, depths < 100, positions 8k-32k).
    auto at_most = [&](const char* key, std::int64_t v, std::int64_t max) {
        if (v > max) {
            fail(file, key,
                 std::to_string(v) + " is beyond the supported maximum " + std::to_string(max));
        }
    };
    at_most("vocab_size", vocab_size, 4'000'000);
    at_most(distil ? "dim" : "hidden_size", hidden_size, 16'384);
    at_most(distil ? "n_layers" : "num_hidden_layers", num_hidden_layers, 512);
    at_most(distil ? "n_heads" : "num_attention_heads", num_attention_heads, 1'024);
    at_most(distil ? "hidden_dim" : "intermediate_size", intermediate_size, 131'072);
    at_most("max_position_embeddings", max_position_embeddings, 1'048'576);
    at_most("type_vocab_size", type_vocab_size, 1'024);
    at_most("num_labels", num_labels, 1'000'000);
    // Parameters of the encoder (embeddings, per layer 4 h^2 + 2 h i, classifier), at most
    // 2^33 (32 GiB in fp32): no larger model fits this library's in-memory loading.
    const double h = static_cast<double>(hidden_size);
    const double params =
        (static_cast<double>(vocab_size) + static_cast<double>(max_position_embeddings) +
         static_cast<double>(std::max<std::int64_t>(type_vocab_size, 0))) *
            h +
        static_cast<double>(num_hidden_layers) *
            (4.0 * h * h + 2.0 * h * static_cast<double>(intermediate_size)) +
        h * static_cast<double>(num_labels);
    if (params > 8589934592.0) {
        fail(file, "",
             "the configured model has about " + std::to_string(params / 1e9) +
                 " billion parameters, beyond the supported 8.6 billion");
    }
    if (hidden_size % num_attention_heads != 0) {
        fail(file, distil ? "dim" : "hidden_size",
             std::to_string(hidden_size) + " is not a multiple of the number of attention heads (" +
                 std::to_string(num_attention_heads) + ")");
    }
    if (!distil && type_vocab_size <= 0) {
        fail(file, "type_vocab_size", "must be positive, got " + std::to_string(type_vocab_size));
    }
    if (!(layer_norm_eps > 0.0)) fail(file, "layer_norm_eps", "must be positive");
    if (pad_token_id < 0 || pad_token_id >= vocab_size) {
        fail(file, "pad_token_id", std::to_string(pad_token_id) + " outside the vocabulary");
    }
    if (num_labels <= 0) fail(file, "num_labels", "must be positive");
    if (!id2label.empty() && static_cast<std::int64_t>(id2label.size()) != num_labels) {
        fail(file, "id2label",
             "has " + std::to_string(id2label.size()) + " labels but num_labels is " +
                 std::to_string(num_labels));
    }
    if (position_embedding_type != "absolute") {
        fail(file, "position_embedding_type",
             "'" + position_embedding_type + "' is not supported (only 'absolute')");
    }
    if (hidden_act.empty()) fail(file, distil ? "activation" : "hidden_act", "empty");
    auto probability = [&](const char* key, double p) {
        if (!(p >= 0.0 && p < 1.0)) fail(file, key, "must be in [0, 1), got " + std::to_string(p));
    };
    probability(distil ? "dropout" : "hidden_dropout_prob", hidden_dropout_prob);
    probability(distil ? "attention_dropout" : "attention_probs_dropout_prob",
                attention_probs_dropout_prob);
    if (classifier_dropout) {
        probability(distil ? "seq_classif_dropout" : "classifier_dropout", *classifier_dropout);
    }
}

HfConfig parse_hf_config(const std::string& json_text, const std::string& file) {
    const json j = parse_json(json_text, file);
    if (!j.is_object()) fail(file, "", "expected a JSON object");
    HfConfig c;
    c.source_json = json_text;
    std::string type;
    get_string(j, "model_type", type, file);
    if (type.empty()) fail(file, "model_type", "missing (expected \"bert\" or \"distilbert\")");
    if (type == "bert") {
        c.model_type = ModelType::Bert;
        get_int(j, "vocab_size", c.vocab_size, file);
        get_int(j, "hidden_size", c.hidden_size, file);
        get_int(j, "num_hidden_layers", c.num_hidden_layers, file);
        get_int(j, "num_attention_heads", c.num_attention_heads, file);
        get_int(j, "intermediate_size", c.intermediate_size, file);
        get_string(j, "hidden_act", c.hidden_act, file);
        get_int(j, "max_position_embeddings", c.max_position_embeddings, file);
        get_int(j, "type_vocab_size", c.type_vocab_size, file);
        get_double(j, "layer_norm_eps", c.layer_norm_eps, file);
        get_string(j, "position_embedding_type", c.position_embedding_type, file);
        get_double(j, "hidden_dropout_prob", c.hidden_dropout_prob, file);
        get_double(j, "attention_probs_dropout_prob", c.attention_probs_dropout_prob, file);
        if (auto it = j.find("classifier_dropout"); it != j.end() && !it->is_null()) {
            double v = 0.0;
            get_double(j, "classifier_dropout", v, file);
            c.classifier_dropout = v;
        }
    } else if (type == "distilbert") {
        c.model_type = ModelType::DistilBert;
        c.num_hidden_layers = 6;
        c.type_vocab_size = 0;
        get_int(j, "vocab_size", c.vocab_size, file);
        get_int(j, "dim", c.hidden_size, file);
        get_int(j, "n_layers", c.num_hidden_layers, file);
        get_int(j, "n_heads", c.num_attention_heads, file);
        get_int(j, "hidden_dim", c.intermediate_size, file);
        get_string(j, "activation", c.hidden_act, file);
        get_int(j, "max_position_embeddings", c.max_position_embeddings, file);
        get_bool(j, "sinusoidal_pos_embds", c.sinusoidal_pos_embds, file);
        get_double(j, "dropout", c.hidden_dropout_prob, file);
        get_double(j, "attention_dropout", c.attention_probs_dropout_prob, file);
        double seq = 0.2;
        get_double(j, "seq_classif_dropout", seq, file);
        c.classifier_dropout = seq;
    } else {
        fail(file, "model_type",
             "'" + type + "' is not supported (expected \"bert\" or \"distilbert\")");
    }
    get_int(j, "pad_token_id", c.pad_token_id, file);

    // Labels, as PretrainedConfig: id2label wins over num_labels; default 2.
    if (auto it = j.find("id2label"); it != j.end() && !it->is_null()) {
        if (!it->is_object())
            fail(file, "id2label", "expected an object {\"0\": \"LABEL_0\", ...}");
        std::vector<std::pair<std::int64_t, std::string>> labels;
        for (auto l = it->begin(); l != it->end(); ++l) {
            std::int64_t id = -1;
            try {
                std::size_t pos = 0;
                id = std::stoll(l.key(), &pos);
                if (pos != l.key().size()) id = -1;
            } catch (const std::exception&) {
                id = -1;
            }
            if (id < 0) fail(file, "id2label", "key '" + l.key() + "' is not a label id");
            if (!l.value().is_string())
                fail(file, "id2label", "label of " + l.key() + " is not a string");
            labels.emplace_back(id, l.value().get<std::string>());
        }
        std::sort(labels.begin(), labels.end());
        for (std::size_t i = 0; i < labels.size(); ++i) {
            if (labels[i].first != static_cast<std::int64_t>(i)) {
                fail(file, "id2label", "ids must be 0.." + std::to_string(labels.size() - 1));
            }
            c.id2label.push_back(labels[i].second);
        }
        c.num_labels = static_cast<std::int64_t>(c.id2label.size());
        if (auto n = j.find("num_labels");
            n != j.end() && n->is_number_integer() && n->get<std::int64_t>() != c.num_labels) {
            fail(file, "num_labels",
                 "is " + n->dump() + " but id2label has " + std::to_string(c.num_labels) +
                     " labels");
        }
    } else {
        get_int(j, "num_labels", c.num_labels, file);
    }
    if (auto it = j.find("architectures"); it != j.end() && !it->is_null()) {
        if (!it->is_array()) fail(file, "architectures", "expected an array of strings");
        for (const auto& a : *it) {
            if (!a.is_string()) fail(file, "architectures", "expected an array of strings");
            c.architectures.push_back(a.get<std::string>());
        }
    }
    c.validate(file);
    return c;
}

HfConfig load_hf_config(const fs::path& path) {
    fs::path file = path;
    std::error_code ec;
    if (fs::is_directory(path, ec)) file = path / "config.json";
    if (!fs::exists(file, ec)) fail(file.string(), "", "config file not found");
    std::string text;
    try {
        text = read_file(file);
    } catch (const IoError& e) {
        throw CheckpointError(e.what());
    }
    return parse_hf_config(text, file.string());
}

std::string hf_config_to_json(const HfConfig& c) {
    json j = json::object();
    if (!c.source_json.empty()) {
        json src = parse_json(c.source_json, "config");
        if (src.is_object()) j = std::move(src);
    }
    // Drop the other family's keys so that a converted config stays unambiguous.
    for (const char* k : {"hidden_size",
                          "num_hidden_layers",
                          "num_attention_heads",
                          "intermediate_size",
                          "hidden_act",
                          "type_vocab_size",
                          "layer_norm_eps",
                          "position_embedding_type",
                          "dim",
                          "n_layers",
                          "n_heads",
                          "hidden_dim",
                          "activation",
                          "sinusoidal_pos_embds",
                          "hidden_dropout_prob",
                          "attention_probs_dropout_prob",
                          "classifier_dropout",
                          "dropout",
                          "attention_dropout",
                          "seq_classif_dropout"}) {
        j.erase(k);
    }
    if (!c.architectures.empty()) j["architectures"] = c.architectures;
    j["model_type"] = model_type_name(c.model_type);
    j["vocab_size"] = c.vocab_size;
    if (c.model_type == ModelType::Bert) {
        j["hidden_size"] = c.hidden_size;
        j["num_hidden_layers"] = c.num_hidden_layers;
        j["num_attention_heads"] = c.num_attention_heads;
        j["intermediate_size"] = c.intermediate_size;
        j["hidden_act"] = c.hidden_act;
        j["type_vocab_size"] = c.type_vocab_size;
        j["layer_norm_eps"] = c.layer_norm_eps;
        j["position_embedding_type"] = c.position_embedding_type;
        j["hidden_dropout_prob"] = c.hidden_dropout_prob;
        j["attention_probs_dropout_prob"] = c.attention_probs_dropout_prob;
        if (c.classifier_dropout) {
            j["classifier_dropout"] = *c.classifier_dropout;
        } else {
            j["classifier_dropout"] = nullptr;
        }
    } else {
        j["dim"] = c.hidden_size;
        j["n_layers"] = c.num_hidden_layers;
        j["n_heads"] = c.num_attention_heads;
        j["hidden_dim"] = c.intermediate_size;
        j["activation"] = c.hidden_act;
        j["sinusoidal_pos_embds"] = c.sinusoidal_pos_embds;
        j["dropout"] = c.hidden_dropout_prob;
        j["attention_dropout"] = c.attention_probs_dropout_prob;
        j["seq_classif_dropout"] = c.effective_classifier_dropout();
    }
    j["max_position_embeddings"] = c.max_position_embeddings;
    j["pad_token_id"] = c.pad_token_id;
    j.erase("id2label");
    j.erase("label2id");
    if (!c.id2label.empty()) {
        json id2 = json::object(), l2id = json::object();
        for (std::size_t i = 0; i < c.id2label.size(); ++i) {
            id2[std::to_string(i)] = c.id2label[i];
            l2id[c.id2label[i]] = i;
        }
        j["id2label"] = std::move(id2);
        j["label2id"] = std::move(l2id);
    }
    j["num_labels"] = c.num_labels;
    return j.dump(2) + "\n";
}

void save_hf_config(const fs::path& path, const HfConfig& config) {
    config.validate(path.string());
    fs::path file = path;
    std::error_code ec;
    if (fs::is_directory(path, ec)) file = path / "config.json";
    AtomicFile out(file);
    out.write(hf_config_to_json(config));
    out.commit();
}

HfTokenizerSettings load_hf_tokenizer_settings(const fs::path& dir) {
    HfTokenizerSettings s;
    const fs::path file = dir / "tokenizer_config.json";
    std::error_code ec;
    if (!fs::exists(file, ec)) return s;
    std::string text;
    try {
        text = read_file(file);
    } catch (const IoError& e) {
        throw CheckpointError(e.what());
    }
    const json j = parse_json(text, file.string());
    if (!j.is_object()) fail(file.string(), "", "expected a JSON object");
    auto opt_bool = [&](const char* key, std::optional<bool>& out) {
        auto it = j.find(key);
        if (it == j.end() || it->is_null()) return;
        if (!it->is_boolean()) fail(file.string(), key, "expected true/false, got " + it->dump());
        out = it->get<bool>();
    };
    opt_bool("do_lower_case", s.do_lower_case);
    opt_bool("strip_accents", s.strip_accents);
    opt_bool("tokenize_chinese_chars", s.tokenize_chinese_chars);
    if (auto it = j.find("model_max_length"); it != j.end() && !it->is_null()) {
        // transformers writes a huge float (1e30) when there is no limit.
        if (it->is_number_integer()) {
            s.model_max_length = it->get<std::int64_t>();
        } else if (!it->is_number()) {
            fail(file.string(), "model_max_length", "expected a number, got " + it->dump());
        }
    }
    return s;
}

HfCheckpointFiles locate_hf_checkpoint(const fs::path& dir) {
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) fail(dir.string(), "", "not a checkpoint folder");
    HfCheckpointFiles f;
    f.dir = dir;
    f.config = dir / "config.json";
    f.vocab = dir / "vocab.txt";
    if (!fs::exists(f.config, ec)) fail(dir.string(), "", "missing config.json");
    if (!fs::exists(f.vocab, ec)) fail(dir.string(), "", "missing vocab.txt");
    f.weights = find_weights_file(dir);
    if (fs::exists(dir / "tokenizer_config.json", ec))
        f.tokenizer_config = dir / "tokenizer_config.json";
    return f;
}

}  // namespace plumb::rerank
