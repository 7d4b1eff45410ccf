#include "rerank/tk_stage.hpp"

#include <algorithm>
#include <atomic>
#include <nlohmann/json.hpp>
#include <string_view>
#include <utility>
#include <vector>

#include "plugin/error.hpp"
#include "plugin/log.hpp"
#include "rerank/tk_cache.hpp"
#include "rerank/torch_threads.hpp"

namespace plumb::rerank {

namespace {

std::string hex(std::uint64_t v) {
    static const char* digits = "0123456789abcdef";
    std::string s(16, '0');
    for (int i = 15; i >= 0; --i, v >>= 4) s[static_cast<std::size_t>(i)] = digits[v & 15];
    return s;
}

/// The cache a stage uses (see TkStageOptions::cache), or null.
std::shared_ptr<const TkPassageCache> open_stage_cache(const TkModel& model,
                                                       const std::filesystem::path* model_dir,
                                                       const std::string& option) {
    if (option == "none") return nullptr;
    const auto dim = static_cast<std::uint32_t>(model.config().embedding_dim);
    if (!option.empty()) {
        auto cache = TkPassageCache::open(option);
        if (cache->model_checksum() != model.checksum() || cache->dim() != dim) {
            throw ConfigError("TK passage cache " + option + " belongs to another model (checksum " +
                              hex(cache->model_checksum()) + ", dimension " +
                              std::to_string(cache->dim()) + "; this model: " +
                              hex(model.checksum()) + ", " + std::to_string(dim) +
                              "): rebuild it with plumb tk-cache");
        }
        return cache;
    }
    if (!model_dir) return nullptr;
    // Only look (and hash the weights) when the folder holds a cache at all.
    std::error_code ec;
    bool any = false;
    for (const auto& e : std::filesystem::directory_iterator(*model_dir, ec)) {
        const auto n = e.path().filename().string();
        if (n.rfind("passage-cache-", 0) == 0 && e.path().extension() == ".plumbtkc") {
            any = true;
            break;
        }
    }
    if (!any) return nullptr;
    const auto path = tk_cache_default_path(*model_dir, model.checksum());
    if (!std::filesystem::exists(path, ec)) return nullptr;
    auto cache = TkPassageCache::open(path);
    if (cache->model_checksum() != model.checksum() || cache->dim() != dim) {
        log(LogLevel::Warning, "TK passage cache " + path.string() +
                                   " belongs to another model (checksum " +
                                   hex(cache->model_checksum()) + "): ignored");
        return nullptr;
    }
    return cache;
}

class TkStage final : public plumb::RerankStage {
public:
    TkStage(std::shared_ptr<const TkModel> model, TkStageOptions options,
            const std::filesystem::path* model_dir)
        : m_model(std::move(model)), m_options(std::move(options)) {
        if (!m_model) throw InvalidArgument("TK stage: null model");
        if (m_options.depth == 0) throw InvalidArgument("TK stage: depth must be > 0");
        if (m_options.batch_size == 0) throw InvalidArgument("TK stage: batch size must be > 0");
        if (m_options.threads < 0) throw InvalidArgument("TK stage: threads must be >= 0");
        m_cache = open_stage_cache(*m_model, model_dir, m_options.cache);
    }

    std::string name() const override { return m_options.name; }
    std::size_t depth() const override { return m_options.depth; }

    std::vector<float> score(const Query& query,
                             std::span<const Candidate> candidates) const override {
        const std::size_t n = std::min(m_options.depth, candidates.size());
        if (!m_cache) {
            TorchThreadsScope threads(m_options.threads);
            std::vector<std::string_view> passages;
            passages.reserve(n);
            for (std::size_t i = 0; i < n; ++i) passages.emplace_back(candidates[i].text);
            return m_model->score(query.text, std::span<const std::string_view>(passages),
                                  m_options.batch_size);
        }
        std::vector<TkCachedPassage> hits;
        std::vector<std::size_t> hit_at, miss_at;
        std::vector<std::string_view> misses;
        for (std::size_t i = 0; i < n; ++i) {
            const auto& c = candidates[i];
            auto e = m_cache->find(c.docid);
            if (e && e->text_hash == tk_text_hash(c.text)) {
                hits.push_back(e->passage);
                hit_at.push_back(i);
                continue;
            }
            if (e && !m_warned.exchange(true)) {
                log(LogLevel::Warning, "TK passage cache " + m_cache->path().string() +
                                           ": the text of '" + c.docid +
                                           "' differs from the cached passage's; such passages "
                                           "are scored without the cache");
            }
            misses.emplace_back(c.text);
            miss_at.push_back(i);
        }
        std::vector<float> out(n, 0.0f);
        if (!hits.empty()) {
            // The query side is a few small Torch ops: on one thread (several cost more to wake
            // than the work, and their spinning slows the match); the match on `threads`.
            const int match_threads = m_options.threads > 0 ? m_options.threads : torch_threads();
            TorchThreadsScope one(1);
            auto s = m_model->score_cached(query.text, hits, match_threads);
            for (std::size_t k = 0; k < hits.size(); ++k) out[hit_at[k]] = s[k];
        }
        if (!misses.empty()) {
            TorchThreadsScope threads(m_options.threads);
            auto s = m_model->score(query.text, std::span<const std::string_view>(misses),
                                    m_options.batch_size);
            for (std::size_t k = 0; k < misses.size(); ++k) out[miss_at[k]] = s[k];
        }
        return out;
    }

private:
    std::shared_ptr<const TkModel> m_model;
    TkStageOptions m_options;
    std::shared_ptr<const TkPassageCache> m_cache;
    mutable std::atomic<bool> m_warned{false};
};

}  // namespace

std::unique_ptr<plumb::RerankStage> make_tk_stage(std::shared_ptr<const TkModel> model,
                                                  TkStageOptions options) {
    return std::make_unique<TkStage>(std::move(model), std::move(options), nullptr);
}

std::unique_ptr<plumb::RerankStage> make_tk_stage(const std::filesystem::path& model_dir,
                                                  TkStageOptions options) {
    auto model = std::make_shared<const TkModel>(TkModel::load(model_dir));
    return std::make_unique<TkStage>(std::move(model), std::move(options), &model_dir);
}

std::shared_ptr<const plumb::RerankStage> tk_stage_from_config(const nlohmann::json& c,
                                                               StageContext& ctx) {
    const std::string where = "re-rank stage tk";
    check_keys(c, {"model", "depth", "name", "batch_size", "threads", "cache"}, where);
    TkStageOptions o;
    o.depth = config_positive_size(c, "depth", o.depth, where);
    o.batch_size = config_positive_size(c, "batch_size", o.batch_size, where);
    o.threads = static_cast<int>(config_size(c, "threads", 0, where));
    o.name = config_string(c, "name", o.name, where);
    o.cache = config_string(c, "cache", o.cache, where);
    if (!o.cache.empty() && o.cache != "none") o.cache = ctx.resolve(o.cache).string();
    return make_tk_stage(ctx.resolve(config_required_string(c, "model", where)), o);
}

}  // namespace plumb::rerank
