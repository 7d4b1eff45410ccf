#include "plugin/pipeline_config.hpp"

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "plugin/error.hpp"

namespace plumb {

using nlohmann::json;

namespace {

std::uint64_t line_of(std::string_view text, std::size_t byte) {
    std::uint64_t line = 1;
    for (std::size_t i = 0; i < byte && i < text.size(); ++i) {
        if (text[i] == '\n') ++line;
    }
    return line;
}

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

}  // namespace

Pipeline pipeline_from_json(std::string_view json_text, Registry& registry, StageContext& ctx,
                            const std::string& source) {
    json config;
    try {
        config = json::parse(json_text);
    } catch (const json::parse_error& e) {
        throw ParseError(source, line_of(json_text, e.byte ? e.byte - 1 : 0), e.what());
    }
    if (!config.is_object()) throw ParseError(source, 0, "the configuration must be a JSON object");
    try {
        return build(config, registry, ctx);
    } catch (const ConfigError& e) {
        throw ConfigError(source + ": " + e.what());
    }
}

Pipeline load_pipeline(const std::filesystem::path& file, Registry& registry, StageContext* ctx) {
    std::ifstream in(file, std::ios::binary);
    if (!in) throw IoError("cannot open pipeline configuration " + file.string());
    std::stringstream ss;
    ss << in.rdbuf();
    if (in.bad()) throw IoError("cannot read pipeline configuration " + file.string());
    std::filesystem::path dir = std::filesystem::absolute(file).parent_path();
    if (ctx) {
        ctx->set_base_dir(dir);
        return pipeline_from_json(ss.str(), registry, *ctx, file.string());
    }
    StageContext local(dir);
    return pipeline_from_json(ss.str(), registry, local, file.string());
}

}  // namespace plumb
