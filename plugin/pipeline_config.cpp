#include "plugin/pipeline_config.hpp"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "plugin/error.hpp"
#include "plugin/json.hpp"
#include "plugin/text_io.hpp"

namespace plumb {

using nlohmann::json;

namespace {

const json& array_of(const json& config, const char* key, const std::string& where) {
    static const json empty = json::array();
    auto it = config.find(key);
    if (it == config.end()) return empty;
    if (!it->is_array()) throw ConfigError(where + ": \"" + key + "\" must be an array");
    return *it;
}

Pipeline build(const json& config, Registry& registry, StageContext& ctx) {
    const std::string where = "pipeline";
    check_keys(config,
               {"description", "plugins", "first_stage", "rerank", "post_filters", "k",
                "candidates", "return_text"},
               where);
    if (config.contains("type")) throw ConfigError(where + ": unknown key \"type\"");
    config_string(config, "description", "", where);
    for (const auto& lib : array_of(config, "plugins", where)) {
        if (!lib.is_string()) throw ConfigError(where + ": \"plugins\" must list paths");
        registry.load_library(ctx.resolve(lib.get<std::string>()));
    }
    PipelineSpec spec;
    auto fs = config.find("first_stage");
    if (fs == config.end()) throw ConfigError(where + ": missing \"first_stage\"");
    spec.first_stage = registry.make_retriever(*fs, ctx);
    for (const auto& r : array_of(config, "rerank", where)) {
        spec.rerankers.push_back(registry.make_rerank(r, ctx));
    }
    for (const auto& f : array_of(config, "post_filters", where)) {
        spec.post_filters.push_back(registry.make_post_filter(f, ctx));
    }
    spec.k = config_size(config, "k", spec.k, where);
    spec.candidates = config_size(config, "candidates", 0, where);
    spec.return_text = config_bool(config, "return_text", false, where);
    spec.documents = ctx.documents();
    try {
        return Pipeline(std::move(spec));
    } catch (const InvalidArgument& e) {
        throw ConfigError(e.what());
    }
}

// ---- YAML -> JSON (YAML 1.2 core schema for plain scalars) ---------------------------------

bool one_of(const std::string& s, std::initializer_list<const char*> options) {
    return std::any_of(options.begin(), options.end(), [&](const char* o) { return s == o; });
}

/// Integer of the core schema ([-+]?[0-9]+, 0o[0-7]+, 0x[0-9a-fA-F]+) if `s` is one.
bool yaml_integer(const std::string& s, json& out) {
    std::string_view v(s);
    bool negative = false;
    int base = 10;
    if (v.size() > 2 && v[0] == '0' && (v[1] == 'o' || v[1] == 'x')) {
        base = v[1] == 'o' ? 8 : 16;
        v.remove_prefix(2);
    } else if (!v.empty() && (v[0] == '-' || v[0] == '+')) {
        negative = v[0] == '-';
        v.remove_prefix(1);
    }
    if (v.empty()) return false;
    for (char c : v) {
        bool ok = base == 16 ? std::isxdigit(static_cast<unsigned char>(c)) != 0
                             : (c >= '0' && c < static_cast<char>('0' + base));
        if (!ok) return false;
    }
    std::uint64_t u = 0;
    auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), u, base);
    if (ec != std::errc() || end != v.data() + v.size()) {
        out = std::strtod(s.c_str(), nullptr);  // out of range: a (decimal) float
        return base == 10;
    }
    if (!negative) {
        out = u;
    } else if (u <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) + 1) {
        out = u == 0 ? std::int64_t{0} : static_cast<std::int64_t>(0 - u);
    } else {
        out = -static_cast<double>(u);
    }
    return true;
}

/// Float of the core schema if `s` is one.
bool yaml_float(const std::string& s, json& out) {
    std::string_view v(s);
    double sign = 1;
    if (!v.empty() && (v[0] == '-' || v[0] == '+')) {
        sign = v[0] == '-' ? -1 : 1;
        v.remove_prefix(1);
    }
    if (v == ".inf" || v == ".Inf" || v == ".INF") {
        out = sign * std::numeric_limits<double>::infinity();
        return true;
    }
    if (s == ".nan" || s == ".NaN" || s == ".NAN") {
        out = std::numeric_limits<double>::quiet_NaN();
        return true;
    }
    // [-+]? ( \.[0-9]+ | [0-9]+ ( \. [0-9]* )? ) ( [eE] [-+]? [0-9]+ )?
    std::size_t i = 0, digits = 0;
    while (i < v.size() && std::isdigit(static_cast<unsigned char>(v[i]))) ++i, ++digits;
    if (i < v.size() && v[i] == '.') {
        ++i;
        while (i < v.size() && std::isdigit(static_cast<unsigned char>(v[i]))) ++i, ++digits;
    }
    if (digits == 0) return false;
    if (i < v.size() && (v[i] == 'e' || v[i] == 'E')) {
        ++i;
        if (i < v.size() && (v[i] == '-' || v[i] == '+')) ++i;
        std::size_t exp = 0;
        while (i < v.size() && std::isdigit(static_cast<unsigned char>(v[i]))) ++i, ++exp;
        if (exp == 0) return false;
    }
    if (i != v.size()) return false;
    out = std::strtod(s.c_str(), nullptr);
    return true;
}

json plain_scalar(const std::string& s) {
    if (one_of(s, {"", "~", "null", "Null", "NULL"})) return nullptr;
    if (one_of(s, {"true", "True", "TRUE"})) return true;
    if (one_of(s, {"false", "False", "FALSE"})) return false;
    json number;
    if (yaml_integer(s, number) || yaml_float(s, number)) return number;
    return s;
}

/// Bounds on the JSON a YAML text may expand to: aliases let a 1 KB text name 10^9 nodes
/// ("billion laughs"), so the number of nodes built is limited in proportion to the text.
struct YamlBudget {
    std::uint64_t nodes_left;
    std::size_t max_depth = 256;
};

/// Counts the documents of a YAML stream without building them; remembers where the last one's
/// first node is (where YAML::Node::Mark() would point).
struct DocumentCounter : YAML::EventHandler {
    std::size_t documents = 0;
    std::uint64_t last_line = 0;  ///< 1-based, 0 when unknown
    bool fresh = false;
    void at(const YAML::Mark& m) {
        if (fresh) last_line = m.is_null() ? last_line : static_cast<std::uint64_t>(m.line) + 1;
        fresh = false;
    }
    void OnDocumentStart(const YAML::Mark& m) override {
        ++documents;
        last_line = m.is_null() ? 0 : static_cast<std::uint64_t>(m.line) + 1;
        fresh = true;
    }
    void OnDocumentEnd() override {}
    void OnNull(const YAML::Mark& m, YAML::anchor_t) override { at(m); }
    void OnAlias(const YAML::Mark& m, YAML::anchor_t) override { at(m); }
    void OnScalar(const YAML::Mark& m, const std::string&, YAML::anchor_t,
                  const std::string&) override {
        at(m);
    }
    void OnSequenceStart(const YAML::Mark& m, const std::string&, YAML::anchor_t,
                         YAML::EmitterStyle::value) override {
        at(m);
    }
    void OnSequenceEnd() override {}
    void OnMapStart(const YAML::Mark& m, const std::string&, YAML::anchor_t,
                    YAML::EmitterStyle::value) override {
        at(m);
    }
    void OnMapEnd() override {}
};

/// Line of a second document in `text`, if there is one. Reads at most two documents:
/// YAML::LoadAll never returns on some inputs (yaml-cpp 0.7: a lone "," yields empty documents
/// without consuming input, and LoadAll collects them until memory runs out).
std::optional<std::uint64_t> second_document_line(const std::string& text) {
    std::istringstream in(text);
    YAML::Parser parser(in);
    DocumentCounter counter;
    for (int i = 0; i < 2 && parser.HandleNextDocument(counter); ++i) {
    }
    if (counter.documents > 1) return counter.last_line;
    return std::nullopt;
}

std::uint64_t mark_line(const YAML::Node& node) {
    const auto m = node.Mark();
    return m.is_null() ? 0 : static_cast<std::uint64_t>(m.line) + 1;
}

json yaml_to_json(const YAML::Node& node, const std::string& source, YamlBudget& budget,
                  std::size_t depth) {
    if (budget.nodes_left == 0) {
        throw ParseError(source, mark_line(node),
                         "invalid YAML: aliases expand to too many nodes (more than 1,000 + 64 "
                         "per byte of the text)");
    }
    --budget.nodes_left;
    if (depth > budget.max_depth) {
        throw ParseError(
            source, mark_line(node),
            "invalid YAML: nested deeper than " + std::to_string(budget.max_depth) + " levels");
    }
    switch (node.Type()) {
        case YAML::NodeType::Undefined:
        case YAML::NodeType::Null:
            return nullptr;
        case YAML::NodeType::Scalar: {
            const std::string& tag = node.Tag();
            // Quoted or !!str: a string; other explicit tags are resolved like plain scalars.
            if (tag == "!" || tag == "tag:yaml.org,2002:str") return node.Scalar();
            json v = plain_scalar(node.Scalar());
            if (v.is_number_float() && std::isinf(v.get<double>()) &&
                node.Scalar().find("inf") == std::string::npos &&
                node.Scalar().find("Inf") == std::string::npos &&
                node.Scalar().find("INF") == std::string::npos) {
                throw ParseError(source, mark_line(node),
                                 "invalid YAML: number out of range: " + node.Scalar());
            }
            return v;
        }
        case YAML::NodeType::Sequence: {
            json out = json::array();
            for (const auto& item : node)
                out.push_back(yaml_to_json(item, source, budget, depth + 1));
            return out;
        }
        case YAML::NodeType::Map: {
            json out = json::object();
            for (const auto& kv : node) {
                if (!kv.first.IsScalar()) {
                    throw ParseError(source, static_cast<std::uint64_t>(kv.first.Mark().line) + 1,
                                     "mapping keys must be plain strings");
                }
                const std::string& key = kv.first.Scalar();
                if (out.contains(key)) {
                    throw ParseError(source, static_cast<std::uint64_t>(kv.first.Mark().line) + 1,
                                     "duplicate key \"" + key + "\"");
                }
                out[key] = yaml_to_json(kv.second, source, budget, depth + 1);
            }
            return out;
        }
    }
    return nullptr;
}

bool is_yaml_file(const std::filesystem::path& file) {
    std::string ext = file.extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return ext == ".yaml" || ext == ".yml";
}

Pipeline from_config(const json& config, Registry& registry, StageContext& ctx,
                     const std::string& source) {
    if (!config.is_object()) throw ParseError(source, 0, "the configuration must be an object");
    try {
        return build(config, registry, ctx);
    } catch (const ConfigError& e) {
        throw ConfigError(source + ": " + e.what());
    }
}

}  // namespace

Pipeline pipeline_from_yaml(std::string_view yaml_text, Registry& registry, StageContext& ctx,
                            const std::string& source) {
    json config;
    try {
        const std::string text(yaml_text);
        if (const auto second = second_document_line(text)) {
            throw ParseError(source, *second,
                             "invalid YAML: a second document (one pipeline per file)");
        }
        const YAML::Node doc = YAML::Load(text);
        YamlBudget budget{1000 + 64 * static_cast<std::uint64_t>(yaml_text.size())};
        if (doc.IsDefined() && !doc.IsNull()) config = yaml_to_json(doc, source, budget, 1);
    } catch (const YAML::Exception& e) {
        throw ParseError(source, e.mark.is_null() ? 0 : static_cast<std::uint64_t>(e.mark.line) + 1,
                         "invalid YAML: " + e.msg);
    }
    return from_config(config, registry, ctx, source);
}

Pipeline pipeline_from_json(std::string_view json_text, Registry& registry, StageContext& ctx,
                            const std::string& source) {
    return from_config(parse_json(json_text, source), registry, ctx, source);
}

Pipeline load_pipeline(const std::filesystem::path& file, Registry& registry, StageContext* ctx) {
    const std::string text = read_file(file, std::size_t{64} << 20);
    std::filesystem::path dir = std::filesystem::absolute(file).parent_path();
    StageContext local(dir);
    StageContext& c = ctx ? *ctx : local;
    c.set_base_dir(dir);
    return is_yaml_file(file) ? pipeline_from_yaml(text, registry, c, file.string())
                              : pipeline_from_json(text, registry, c, file.string());
}

}  // namespace plumb
