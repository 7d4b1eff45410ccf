#include "plugin/registry.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "plugin/error.hpp"
#include "plugin/plugin_abi.h"

namespace plumb {

using nlohmann::json;

std::filesystem::path StageContext::resolve(const std::filesystem::path& p) const {
    if (p.empty() || p.is_absolute() || m_base_dir.empty()) return p;
    return m_base_dir / p;
}

void StageContext::offer_documents(std::shared_ptr<const DocumentSource> documents) {
    if (!m_documents) m_documents = std::move(documents);
}

namespace {

/// A dlopen handle, closed when the last user (registry or stage) is gone.
struct Library {
    void* handle = nullptr;
    std::string path;
    ~Library() {
        if (handle) dlclose(handle);
    }
};

struct PluginScorer {
    std::shared_ptr<Library> library;
    std::string plugin;
    plumb_scorer_create_fn create = nullptr;
    plumb_scorer_score_fn score = nullptr;
    plumb_scorer_destroy_fn destroy = nullptr;
};

/// A re-rank stage over a plugin scorer instance.
class PluginStage : public RerankStage {
public:
    PluginStage(PluginScorer scorer, void* instance, std::string name, std::size_t depth)
        : m_scorer(std::move(scorer)),
          m_instance(instance),
          m_name(std::move(name)),
          m_depth(depth) {}
    ~PluginStage() override {
        if (m_scorer.destroy) m_scorer.destroy(m_instance);
    }
    std::string name() const override { return m_name; }
    std::size_t depth() const override { return m_depth; }
    std::vector<float> score(const Query& query,
                             std::span<const Candidate> candidates) const override {
        std::vector<const char*> passages;
        passages.reserve(candidates.size());
        for (const auto& c : candidates) passages.push_back(c.text.c_str());
        std::vector<float> out(candidates.size(), 0.0f);
        if (m_scorer.score(m_instance, query.text.c_str(), passages.data(), passages.size(),
                           out.data()) != 0) {
            throw Error(m_name + ": plugin scorer failed (library " + m_scorer.library->path + ")");
        }
        return out;
    }

private:
    PluginScorer m_scorer;
    void* m_instance;
    std::string m_name;
    std::size_t m_depth;
};

std::string join(const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
    return s.empty() ? "none" : s;
}

template <class F>
std::vector<std::string> keys_of(const std::map<std::string, F>& m) {
    std::vector<std::string> out;
    for (const auto& [k, v] : m) out.push_back(k);
    return out;
}

template <class F>
const F& find_factory(const std::map<std::string, F>& m, const json& config, const char* kind) {
    if (!config.is_object())
        throw ConfigError(std::string(kind) + ": configuration must be an object");
    auto t = config.find("type");
    if (t == config.end() || !t->is_string()) {
        throw ConfigError(std::string(kind) + ": missing \"type\" (known: " + join(keys_of(m)) +
                          ")");
    }
    auto it = m.find(t->get<std::string>());
    if (it == m.end()) {
        throw ConfigError(std::string(kind) + ": unknown type \"" + t->get<std::string>() +
                          "\" (known: " + join(keys_of(m)) + ")");
    }
    return it->second;
}

}  // namespace

struct Registry::Impl {
    std::map<std::string, RetrieverFactory> retrievers;
    std::map<std::string, RerankFactory> rerankers;
    std::map<std::string, PostFilterFactory> filters;
    std::vector<std::shared_ptr<Library>> libraries;
};

Registry::Registry() : m_impl(std::make_unique<Impl>()) {}
Registry::~Registry() = default;
Registry::Registry(Registry&&) noexcept = default;
Registry& Registry::operator=(Registry&&) noexcept = default;

namespace {
template <class F>
void add_to(std::map<std::string, F>& m, const std::string& type, F f, const char* kind) {
    if (type.empty()) throw ConfigError(std::string("registry: empty ") + kind + " type");
    if (!f) throw ConfigError(std::string("registry: empty factory for ") + kind + " " + type);
    if (!m.emplace(type, std::move(f)).second) {
        throw ConfigError(std::string("registry: ") + kind + " type \"" + type +
                          "\" is already registered");
    }
}
}  // namespace

void Registry::add_retriever(const std::string& type, RetrieverFactory factory) {
    add_to(m_impl->retrievers, type, std::move(factory), "first stage");
}
void Registry::add_rerank(const std::string& type, RerankFactory factory) {
    add_to(m_impl->rerankers, type, std::move(factory), "re-rank stage");
}
void Registry::add_post_filter(const std::string& type, PostFilterFactory factory) {
    add_to(m_impl->filters, type, std::move(factory), "post-filter");
}

std::shared_ptr<const Retriever> Registry::make_retriever(const json& config,
                                                          StageContext& ctx) const {
    const auto& factory = find_factory(m_impl->retrievers, config, "first stage");
    ctx.set_registry(this);
    auto s = factory(config, ctx);
    if (!s) throw ConfigError("first stage: factory returned no stage");
    return s;
}
std::shared_ptr<const RerankStage> Registry::make_rerank(const json& config,
                                                         StageContext& ctx) const {
    const auto& factory = find_factory(m_impl->rerankers, config, "re-rank stage");
    ctx.set_registry(this);
    auto s = factory(config, ctx);
    if (!s) throw ConfigError("re-rank stage: factory returned no stage");
    return s;
}
std::shared_ptr<const PostFilter> Registry::make_post_filter(const json& config,
                                                             StageContext& ctx) const {
    const auto& factory = find_factory(m_impl->filters, config, "post-filter");
    ctx.set_registry(this);
    auto s = factory(config, ctx);
    if (!s) throw ConfigError("post-filter: factory returned no filter");
    return s;
}

std::vector<std::string> Registry::retriever_types() const { return keys_of(m_impl->retrievers); }
std::vector<std::string> Registry::rerank_types() const { return keys_of(m_impl->rerankers); }
std::vector<std::string> Registry::post_filter_types() const { return keys_of(m_impl->filters); }

namespace {
/// What the plugin's registration callback sees (api.host).
struct LoadingState {
    const std::map<std::string, RerankFactory>* existing = nullptr;
    std::map<std::string, RerankFactory> added;
    std::shared_ptr<Library> library;
    std::string plugin;
    std::string error;
};

extern "C" int plumb_registry_register_scorer(void* host, const char* name,
                                              plumb_scorer_create_fn create,
                                              plumb_scorer_score_fn score,
                                              plumb_scorer_destroy_fn destroy) {
    if (!host) return 1;
    auto& st = *static_cast<LoadingState*>(host);
    try {
        if (!name || !*name) {
            st.error = "a scorer has an empty name";
            return 1;
        }
        if (!score) {
            st.error = std::string("scorer ") + name + " has no score function";
            return 1;
        }
        if (st.existing->count(name) || st.added.count(name)) {
            st.error = std::string("re-rank type \"") + name + "\" is already registered";
            return 1;
        }
        PluginScorer scorer{st.library, st.plugin, create, score, destroy};
        std::string type = name;
        st.added[type] = [scorer, type](const json& config,
                                        StageContext&) -> std::shared_ptr<const RerankStage> {
            const std::string where = "re-rank stage " + type;
            check_keys(config, {"depth", "name", "config"}, where);
            std::size_t depth = config_size(config, "depth", 100, where);
            if (depth == 0) throw ConfigError(where + ": depth must be positive");
            std::string stage_name = config_string(config, "name", type, where);
            std::string sub = config.contains("config") ? config["config"].dump() : "{}";
            void* instance = nullptr;
            if (scorer.create) {
                instance = scorer.create(sub.c_str());
                if (!instance) {
                    throw ConfigError(where + ": the plugin (" + scorer.library->path +
                                      ") rejected the configuration " + sub);
                }
            }
            return std::make_shared<PluginStage>(scorer, instance, stage_name, depth);
        };
        return 0;
    } catch (const std::exception& e) {
        st.error = e.what();
        return 1;
    }
}
}  // namespace

std::string Registry::load_library(const std::filesystem::path& path) {
    const std::string where = "plugin library " + path.string();
    auto lib = std::make_shared<Library>();
    lib->path = path.string();
    // RTLD_LOCAL keeps the plugin's symbols private; a path without '/' would search the
    // system paths, so relative paths are made explicit.
    std::string open_path = path.has_parent_path() ? path.string() : "./" + path.string();
    lib->handle = dlopen(open_path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib->handle) {
        const char* e = dlerror();
        throw ConfigError(where + ": cannot load: " + (e ? e : "unknown error"));
    }
    auto entry =
        reinterpret_cast<plumb_plugin_entry_fn>(dlsym(lib->handle, PLUMB_PLUGIN_ENTRY_SYMBOL));
    if (!entry) throw ConfigError(where + ": no entry point " PLUMB_PLUGIN_ENTRY_SYMBOL);
    const plumb_plugin_info* info = entry();
    if (!info) throw ConfigError(where + ": entry point returned no plugin info");
    if (info->abi_version != PLUMB_PLUGIN_ABI_VERSION) {
        throw ConfigError(where + ": plugin ABI version " + std::to_string(info->abi_version) +
                          ", this plumb supports " + std::to_string(PLUMB_PLUGIN_ABI_VERSION));
    }
    if (!info->register_scorers) throw ConfigError(where + ": no registration function");
    std::string plugin_name = info->name ? info->name : path.stem().string();

    LoadingState state{&m_impl->rerankers, {}, lib, plugin_name, {}};
    plumb_host_api api{PLUMB_PLUGIN_ABI_VERSION, &state, &plumb_registry_register_scorer};
    int rc = info->register_scorers(&api);
    if (!state.error.empty()) throw ConfigError(where + ": " + state.error);
    if (rc != 0)
        throw ConfigError(where + ": registration failed (code " + std::to_string(rc) + ")");
    m_impl->rerankers.merge(state.added);
    m_impl->libraries.push_back(lib);
    return plugin_name;
}

// ---- helpers ---------------------------------------------------------------------------------

namespace {
void check_keys_in(const json& config, std::span<const std::string_view> common,
                   std::span<const std::string_view> own, const std::string& where) {
    if (!config.is_object()) throw ConfigError(where + ": configuration must be a JSON object");
    auto known_key = [&](const std::string& k) {
        return std::find(common.begin(), common.end(), k) != common.end() ||
               std::find(own.begin(), own.end(), k) != own.end();
    };
    for (auto it = config.begin(); it != config.end(); ++it) {
        if (it.key() == "type" || known_key(it.key())) continue;
        std::string known;
        for (auto list : {own, common}) {  // spans
            for (auto k : list) known += (known.empty() ? "" : ", ") + std::string(k);
        }
        throw ConfigError(where + ": unknown key \"" + it.key() +
                          "\" (known: " + (known.empty() ? "none" : known) + ")");
    }
}
}  // namespace

void check_keys(const json& config, std::initializer_list<std::string_view> allowed,
                const std::string& where) {
    check_keys_in(config, {}, std::span<const std::string_view>(allowed.begin(), allowed.size()),
                  where);
}

void check_keys(const json& config, std::span<const std::string_view> common,
                std::initializer_list<std::string_view> own, const std::string& where) {
    check_keys_in(config, common, std::span<const std::string_view>(own.begin(), own.size()),
                  where);
}

namespace {
const json* find_key(const json& config, const std::string& key) {
    if (!config.is_object()) return nullptr;
    auto it = config.find(key);
    return it == config.end() ? nullptr : &*it;
}
[[noreturn]] void wrong_type(const std::string& where, const std::string& key, const char* want) {
    throw ConfigError(where + ": \"" + key + "\" must be " + want);
}
}  // namespace

std::string config_string(const json& config, const std::string& key, const std::string& fallback,
                          const std::string& where) {
    const json* v = find_key(config, key);
    if (!v) return fallback;
    if (!v->is_string()) wrong_type(where, key, "a string");
    return v->get<std::string>();
}

std::string config_required_string(const json& config, const std::string& key,
                                   const std::string& where) {
    if (!find_key(config, key)) throw ConfigError(where + ": missing \"" + key + "\"");
    return config_string(config, key, {}, where);
}

std::size_t config_size(const json& config, const std::string& key, std::size_t fallback,
                        const std::string& where) {
    const json* v = find_key(config, key);
    if (!v) return fallback;
    if (!v->is_number_unsigned()) wrong_type(where, key, "a non-negative integer");
    return v->get<std::size_t>();
}

double config_double(const json& config, const std::string& key, double fallback,
                     const std::string& where) {
    const json* v = find_key(config, key);
    if (!v) return fallback;
    if (!v->is_number()) wrong_type(where, key, "a number");
    return v->get<double>();
}

bool config_bool(const json& config, const std::string& key, bool fallback,
                 const std::string& where) {
    const json* v = find_key(config, key);
    if (!v) return fallback;
    if (!v->is_boolean()) wrong_type(where, key, "true or false");
    return v->get<bool>();
}

std::size_t config_positive_size(const json& config, const std::string& key, std::size_t fallback,
                                 const std::string& where) {
    const std::size_t v = config_size(config, key, fallback, where);
    if (v == 0) throw ConfigError(where + ": \"" + key + "\" must be positive");
    return v;
}

}  // namespace plumb
