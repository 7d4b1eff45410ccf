#include "rerank/bert_checkpoint.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "plugin/error.hpp"
#include "rerank/checkpoint_format.hpp"

namespace plumb::rerank {

namespace {

bool starts_with(const std::string& s, const std::string& p) { return s.rfind(p, 0) == 0; }
bool ends_with(const std::string& s, const std::string& p) {
    return s.size() >= p.size() && s.compare(s.size() - p.size(), p.size(), p) == 0;
}

bool is_head(const std::string& name) {
    return starts_with(name, "classifier.") || starts_with(name, "pre_classifier.");
}

// Pre-training heads and buffers that a re-ranker never needs.
bool is_auxiliary(const std::string& name) {
    return starts_with(name, "cls.") || starts_with(name, "vocab_transform.") ||
           starts_with(name, "vocab_layer_norm.") || starts_with(name, "vocab_projector.") ||
           ends_with(name, "position_ids");
}

// internal suffix of a layer parameter -> DistilBERT suffix.
const std::vector<std::pair<std::string, std::string>>& distil_layer_names() {
    static const std::vector<std::pair<std::string, std::string>> names = {
        {"attention.self.query.", "attention.q_lin."},
        {"attention.self.key.", "attention.k_lin."},
        {"attention.self.value.", "attention.v_lin."},
        {"attention.output.dense.", "attention.out_lin."},
        {"attention.output.LayerNorm.", "sa_layer_norm."},
        {"intermediate.dense.", "ffn.lin1."},
        {"output.dense.", "ffn.lin2."},
        {"output.LayerNorm.", "output_layer_norm."},
    };
    return names;
}

std::string join_limited(const std::vector<std::string>& items) {
    std::string s;
    const std::size_t shown = std::min<std::size_t>(items.size(), 10);
    for (std::size_t i = 0; i < shown; ++i) s += (i ? ", " : "") + items[i];
    if (items.size() > shown) s += ", ... (" + std::to_string(items.size()) + " in all)";
    return s;
}

std::string detect_prefix(const SafetensorsFile& weights, ModelType type) {
    const std::string p = type == ModelType::Bert ? "bert." : "distilbert.";
    for (const auto& t : weights.tensors()) {
        if (starts_with(t.name, p)) return p;
    }
    return "";
}

bool is_float(DType d) { return d == DType::F32 || d == DType::F16 || d == DType::BF16; }

}  // namespace

std::string checkpoint_tensor_name(ModelType type, const std::string& name,
                                   const std::string& prefix) {
    if (is_head(name)) return name;
    if (type == ModelType::Bert) return prefix + name;
    const std::string layer = "encoder.layer.";
    if (starts_with(name, layer)) {
        auto dot = name.find('.', layer.size());
        if (dot != std::string::npos) {
            std::string index = name.substr(layer.size(), dot - layer.size());
            std::string rest = name.substr(dot + 1);
            for (const auto& [from, to] : distil_layer_names()) {
                if (starts_with(rest, from)) {
                    return prefix + "transformer.layer." + index + "." + to +
                           rest.substr(from.size());
                }
            }
        }
    }
    return prefix + name;  // embeddings.* keep their names
}

BertModel load_bert_weights(const HfConfig& config, const SafetensorsFile& weights,
                            const BertCheckpointOptions& options, BertCheckpointInfo* info) {
    const auto type = config.model_type;
    const std::string file = weights.path_name();
    const std::string prefix = detect_prefix(weights, type);

    // Heads present in the file.
    const std::string pooler_name = type == ModelType::Bert
                                        ? prefix + "pooler.dense.weight"
                                        : std::string("pre_classifier.weight");
    const bool file_pooler = weights.contains(pooler_name);
    std::int64_t file_labels = 0;
    if (const auto* c = weights.find("classifier.weight")) {
        if (c->shape.size() != 2 || c->shape[0] < 1) {
            throw CheckpointError(file + ": tensor 'classifier.weight' has shape " +
                                  shape_string(c->shape) + ", expected [num_labels, " +
                                  std::to_string(config.hidden_size) + "]");
        }
        file_labels = c->shape[0];
    }
    BertHeads heads;
    switch (options.heads) {
        case HeadSelection::EncoderOnly: break;
        case HeadSelection::Auto:
            heads.pooler = file_pooler || file_labels > 0;
            heads.num_labels = file_labels;
            break;
        case HeadSelection::Classifier:
            heads.pooler = true;
            heads.num_labels = std::max<std::int64_t>(file_labels, 1);
            break;
    }
    if (heads.num_labels > 0 && file_labels > 0 && !config.id2label.empty() &&
        static_cast<std::int64_t>(config.id2label.size()) != file_labels) {
        throw CheckpointError(file + ": classifier has " + std::to_string(file_labels) +
                              " labels but config.json lists " +
                              std::to_string(config.id2label.size()) + " in id2label");
    }

    BertModel model(config, heads);
    std::vector<std::string> missing, misshaped;
    std::set<std::string> used;
    for (const auto& p : model.parameters()) {
        const auto name = checkpoint_tensor_name(type, p.name, prefix);
        const auto* t = weights.find(name);
        if (!t) {
            missing.push_back(name);
            continue;
        }
        used.insert(name);
        if (!is_float(t->dtype)) {
            misshaped.push_back(name + " (dtype " + dtype_name(t->dtype) + ", expected a float)");
            continue;
        }
        if (t->shape != p.shape) {
            misshaped.push_back(name + " " + shape_string(t->shape) + " expected " +
                                shape_string(p.shape));
            continue;
        }
        model.set_parameter(p.name, to_float32(*t));
    }
    std::vector<std::string> unexpected, ignored;
    for (const auto& t : weights.tensors()) {
        if (used.count(t.name)) continue;
        const std::string bare = starts_with(t.name, prefix) ? t.name.substr(prefix.size()) : t.name;
        const bool skipped_head =
            options.heads == HeadSelection::EncoderOnly &&
            (is_head(t.name) || starts_with(bare, "pooler."));
        if (is_auxiliary(bare) || skipped_head || options.allow_unexpected) {
            ignored.push_back(t.name);
        } else {
            unexpected.push_back(t.name);
        }
    }
    if (!missing.empty() || !misshaped.empty() || !unexpected.empty()) {
        std::string msg = file + ": checkpoint does not match the " + model_type_name(type) +
                          " architecture of its config";
        if (!missing.empty()) msg += "; missing: " + join_limited(missing);
        if (!misshaped.empty()) msg += "; mis-shaped: " + join_limited(misshaped);
        if (!unexpected.empty()) msg += "; unexpected: " + join_limited(unexpected);
        throw CheckpointError(msg);
    }
    if (info) {
        info->prefix = prefix;
        info->heads = heads;
        info->ignored = std::move(ignored);
    }
    return model;
}

BertModel load_bert_checkpoint(const std::filesystem::path& dir,
                               const BertCheckpointOptions& options, BertCheckpointInfo* info) {
    const auto config_path = dir / "config.json";
    if (!std::filesystem::exists(config_path)) {
        throw CheckpointError(dir.string() + ": no config.json");
    }
    const auto weights_path = find_weights_file(dir);
    auto config = load_hf_config(config_path);
    SafetensorsFile weights = load_weights_file(weights_path);
    return load_bert_weights(config, weights, options, info);
}

void save_bert_checkpoint(const BertModel& model, const std::filesystem::path& dir,
                          DType dtype, const Vocab* vocab) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) throw IoError(dir.string() + ": cannot create folder: " + ec.message());
    HfConfig config = model.config();
    const auto& heads = model.heads();
    const auto type = config.model_type;
    std::string prefix;
    if (type == ModelType::DistilBert) {
        prefix = "distilbert.";
        config.architectures = {heads.num_labels > 0 ? "DistilBertForSequenceClassification"
                                                     : "DistilBertModel"};
    } else if (heads.num_labels > 0) {
        prefix = "bert.";
        config.architectures = {"BertForSequenceClassification"};
    } else {
        config.architectures = {"BertModel"};
    }
    if (heads.num_labels > 0) {
        config.num_labels = heads.num_labels;
        config.id2label.clear();
        for (std::int64_t i = 0; i < heads.num_labels; ++i) {
            config.id2label.push_back("LABEL_" + std::to_string(i));
        }
    }
    std::map<std::string, TensorData> tensors;
    for (const auto& p : model.parameters()) {
        auto values = model.parameter(p.name);
        tensors.emplace(checkpoint_tensor_name(type, p.name, prefix),
                        TensorData::from_float32(p.shape, values, dtype));
    }
    save_safetensors(dir / "model.safetensors", tensors, {{"format", "pt"}});
    save_hf_config(dir / "config.json", config);
    if (vocab) vocab->save(dir / "vocab.txt");
}

}  // namespace plumb::rerank
