#pragma once
/// \file registry.hpp
/// The stage registry: factories of first stages, re-rank stages and post-filters by type name.
/// The host owns a Registry (no global instance), adds plumb's built-in stages with
/// plumb::register_builtins(registry) (plugin/builtins/builtins.hpp), its own factories with
/// add_*(), and scorers from shared libraries with load_library() (C ABI: plugin/plugin_abi.h).
///
/// A factory receives the stage's JSON object (including "type") and a StageContext: the
/// directory that relative paths are resolved against, shared resources (e.g. an index opened
/// once for several stages) and the pipeline's document source. Factories reject unknown keys
/// with ConfigError (check_keys()). Registration is not thread-safe; creating stages from a
/// registry is (const).

#include <any>
#include <filesystem>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "plugin/document_source.hpp"
#include "plugin/stage.hpp"

namespace plumb {

class Registry;

/// Shared state while one pipeline (or several) is built from configurations.
class StageContext {
public:
    explicit StageContext(std::filesystem::path base_dir = {}) : m_base_dir(std::move(base_dir)) {}

    /// Directory of the configuration file (relative paths are resolved against it).
    const std::filesystem::path& base_dir() const noexcept { return m_base_dir; }
    void set_base_dir(std::filesystem::path dir) { m_base_dir = std::move(dir); }
    /// `p` made absolute against base_dir() when relative.
    std::filesystem::path resolve(const std::filesystem::path& p) const;

    /// The document source of the pipeline (set by a first stage over an index, or by the host).
    const std::shared_ptr<const DocumentSource>& documents() const noexcept { return m_documents; }
    /// Sets the document source unless one is already set.
    void offer_documents(std::shared_ptr<const DocumentSource> documents);
    void set_documents(std::shared_ptr<const DocumentSource> documents) {
        m_documents = std::move(documents);
    }

    /// The registry currently creating a stage (set by Registry::make_*; lets composite stages
    /// such as "hybrid" create their parts). Null outside a factory call.
    const Registry* registry() const noexcept { return m_registry; }
    void set_registry(const Registry* registry) noexcept { m_registry = registry; }

    /// A shared resource by key (e.g. "index:/abs/path"), created by `make` on first use.
    template <class T>
    std::shared_ptr<T> shared(const std::string& key,
                              const std::function<std::shared_ptr<T>()>& make) {
        std::lock_guard lock(m_mutex);
        auto it = m_resources.find(key);
        if (it != m_resources.end()) return std::any_cast<std::shared_ptr<T>>(it->second);
        auto value = make();
        m_resources.emplace(key, value);
        return value;
    }

private:
    std::filesystem::path m_base_dir;
    std::shared_ptr<const DocumentSource> m_documents;
    const Registry* m_registry = nullptr;
    std::mutex m_mutex;
    std::map<std::string, std::any> m_resources;
};

using RetrieverFactory = std::function<std::shared_ptr<const Retriever>(
    const nlohmann::json& config, StageContext& ctx)>;
using RerankFactory = std::function<std::shared_ptr<const RerankStage>(const nlohmann::json& config,
                                                                       StageContext& ctx)>;
using PostFilterFactory = std::function<std::shared_ptr<const PostFilter>(
    const nlohmann::json& config, StageContext& ctx)>;

class Registry {
public:
    Registry();
    ~Registry();
    Registry(Registry&&) noexcept;
    Registry& operator=(Registry&&) noexcept;

    /// Adds a factory; ConfigError when the type is empty or already registered in that kind.
    void add_retriever(const std::string& type, RetrieverFactory factory);
    void add_rerank(const std::string& type, RerankFactory factory);
    void add_post_filter(const std::string& type, PostFilterFactory factory);

    /// Creates a stage from its configuration object (its "type" selects the factory). Unknown
    /// type or missing "type" -> ConfigError listing the known types of that kind.
    std::shared_ptr<const Retriever> make_retriever(const nlohmann::json& config,
                                                    StageContext& ctx) const;
    std::shared_ptr<const RerankStage> make_rerank(const nlohmann::json& config,
                                                   StageContext& ctx) const;
    std::shared_ptr<const PostFilter> make_post_filter(const nlohmann::json& config,
                                                       StageContext& ctx) const;

    /// Registered type names, sorted.
    std::vector<std::string> retriever_types() const;
    std::vector<std::string> rerank_types() const;
    std::vector<std::string> post_filter_types() const;

    /// Loads a plugin library (dlopen) and registers its scorers as re-rank types (see
    /// plugin_abi.h). The library stays loaded as long as the registry or any stage created from
    /// it lives. ConfigError naming the library when it cannot be opened, lacks the entry point,
    /// has another ABI version, or its registration fails. Returns the plugin's name.
    std::string load_library(const std::filesystem::path& path);

private:
    struct Impl;
    std::unique_ptr<Impl> m_impl;
};

// ---- helpers for factories ----------------------------------------------------------------

/// ConfigError "<where>: unknown key "x" (known: a, b, ...)" unless every key of `config` is in
/// `allowed` ("type" is always allowed). ConfigError when `config` is not an object.
void check_keys(const nlohmann::json& config, std::initializer_list<std::string_view> allowed,
                const std::string& where);
/// Same with two lists: keys a family of stages shares and the stage's own.
void check_keys(const nlohmann::json& config, std::span<const std::string_view> common,
                std::initializer_list<std::string_view> own, const std::string& where);
/// Typed optional values; ConfigError naming `where` and the key on a wrong type.
std::string config_string(const nlohmann::json& config, const std::string& key,
                          const std::string& fallback, const std::string& where);
/// Required string (ConfigError when missing).
std::string config_required_string(const nlohmann::json& config, const std::string& key,
                                   const std::string& where);
std::size_t config_size(const nlohmann::json& config, const std::string& key, std::size_t fallback,
                        const std::string& where);
/// config_size() that must be positive (ConfigError for 0).
std::size_t config_positive_size(const nlohmann::json& config, const std::string& key,
                                 std::size_t fallback, const std::string& where);
double config_double(const nlohmann::json& config, const std::string& key, double fallback,
                     const std::string& where);
bool config_bool(const nlohmann::json& config, const std::string& key, bool fallback,
                 const std::string& where);

}  // namespace plumb
