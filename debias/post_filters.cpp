#include "debias/post_filters.hpp"

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "debias/bias_balance.hpp"
#include "debias/fair_topk.hpp"
#include "debias/near_duplicates.hpp"
#include "plugin/error.hpp"
#include "plugin/json.hpp"

namespace plumb::debias {

namespace {

using nlohmann::json;

const json* field(const json& cfg, const char* key) {
    auto it = cfg.find(key);
    return it == cfg.end() ? nullptr : &*it;
}

double get_number(const json& cfg, const char* key, double def) {
    const json* v = field(cfg, key);
    if (!v) return def;
    if (!v->is_number())
        throw ConfigError(std::string("post-filter: '") + key + "' must be a number");
    return v->get<double>();
}

std::size_t get_count(const json& cfg, const char* key, std::size_t def) {
    const json* v = field(cfg, key);
    if (!v) return def;
    if (!v->is_number_unsigned()) {
        throw ConfigError(std::string("post-filter: '") + key + "' must be a non-negative integer");
    }
    return v->get<std::size_t>();
}

bool get_bool(const json& cfg, const char* key, bool def) {
    const json* v = field(cfg, key);
    if (!v) return def;
    if (!v->is_boolean())
        throw ConfigError(std::string("post-filter: '") + key + "' must be true or false");
    return v->get<bool>();
}

std::string get_string(const json& cfg, const char* key, const std::string& def) {
    const json* v = field(cfg, key);
    if (!v) return def;
    if (!v->is_string())
        throw ConfigError(std::string("post-filter: '") + key + "' must be a string");
    return v->get<std::string>();
}

void check_keys(const json& cfg, const std::set<std::string>& allowed, const std::string& type) {
    for (auto it = cfg.begin(); it != cfg.end(); ++it) {
        if (!allowed.count(it.key())) {
            throw ConfigError("post-filter '" + type + "': unknown key '" + it.key() + "'");
        }
    }
}

std::filesystem::path resolve(const PostFilterResources& res, const std::string& p) {
    std::filesystem::path path(p);
    if (path.is_relative() && !res.base_dir.empty()) return res.base_dir / path;
    return path;
}

}  // namespace

std::unique_ptr<BiasPostFilter> make_bias_post_filter(std::string_view json_config,
                                                      const PostFilterResources& resources) {
    json cfg;
    try {
        cfg = parse_json(json_config, "post-filter configuration");
    } catch (const ParseError& e) {
        throw ConfigError(e.what());
    }
    if (!cfg.is_object()) throw ConfigError("post-filter configuration must be a JSON object");
    const std::string type = get_string(cfg, "type", "");
    if (type.empty()) throw ConfigError("post-filter configuration needs a \"type\"");

    std::set<std::string> allowed{"type",    "k",    "bias_file",  "words",
                                  "variant", "name", "description"};
    PassageBias bias = resources.bias;
    std::string variant_name = get_string(cfg, "variant", "");
    if (!variant_name.empty()) {
        try {
            bias.variant = eval::parse_bias_variant(variant_name);
        } catch (const InvalidArgument& e) {
            throw ConfigError(std::string("post-filter: ") + e.what());
        }
    }
    if (auto f = get_string(cfg, "bias_file", ""); !f.empty()) {
        std::optional<eval::BiasVariant> expected;
        if (!variant_name.empty()) expected = bias.variant;
        bias.table = std::make_shared<const eval::BiasTable>(
            eval::read_bias_file(resolve(resources, f), expected));
    }
    if (auto f = get_string(cfg, "words", ""); !f.empty()) {
        bias.words = std::make_shared<const eval::GenderWordList>(
            eval::GenderWordList::load(resolve(resources, f)));
    }
    const std::size_t k = get_count(cfg, "k", 10);

    if (type == "fair_topk") {
        allowed.insert({"p", "alpha", "adjust_alpha", "protected"});
        check_keys(cfg, allowed, type);
        FairTopKOptions o;
        o.k = k;
        o.p = get_number(cfg, "p", 0.5);
        o.alpha = get_number(cfg, "alpha", 0.1);
        o.adjust_alpha = get_bool(cfg, "adjust_alpha", true);
        try {
            o.group = parse_protected_group(get_string(cfg, "protected", "female"));
        } catch (const InvalidArgument& e) {
            throw ConfigError(e.what());
        }
        return std::make_unique<FairTopK>(std::move(o), std::move(bias));
    }
    if (type == "bias_balance" || type == "balance") {
        allowed.insert({"budget", "depth"});
        check_keys(cfg, allowed, type);
        BiasBalanceOptions o;
        o.k = k;
        const json* b = field(cfg, "budget");
        if (b && b->is_string()) {
            const auto s = b->get<std::string>();
            if (s != "inf" && s != "infinity") {
                throw ConfigError("post-filter: 'budget' must be a number or \"inf\"");
            }
            o.budget = std::numeric_limits<double>::infinity();
        } else {
            o.budget = get_number(cfg, "budget", 0.0);
        }
        o.depth = get_count(cfg, "depth", 0);
        return std::make_unique<BiasBalance>(o, std::move(bias));
    }
    if (type == "near_duplicates" || type == "dedup") {
        allowed.insert({"shingle", "threshold", "demote", "depth"});
        check_keys(cfg, allowed, type);
        NearDuplicateOptions o;
        o.k = k;
        o.shingle = get_count(cfg, "shingle", 3);
        o.threshold = get_number(cfg, "threshold", 0.9);
        o.demote = get_bool(cfg, "demote", false);
        o.depth = get_count(cfg, "depth", 1000);
        return std::make_unique<NearDuplicates>(o, std::move(bias));
    }
    throw ConfigError("unknown post-filter type '" + type +
                      "' (fair_topk, bias_balance, near_duplicates)");
}

std::unique_ptr<PostFilter> make_post_filter(std::string_view json_config,
                                             const PostFilterResources& resources) {
    return make_bias_post_filter(json_config, resources);
}

}  // namespace plumb::debias
