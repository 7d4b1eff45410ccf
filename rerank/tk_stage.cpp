#include "rerank/tk_stage.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string_view>
#include <utility>
#include <vector>

#include "plugin/error.hpp"
#include "rerank/torch_threads.hpp"

namespace plumb::rerank {

namespace {

class TkStage final : public plumb::RerankStage {
public:
    TkStage(std::shared_ptr<const TkModel> model, TkStageOptions options)
        : m_model(std::move(model)), m_options(std::move(options)) {
        if (!m_model) throw InvalidArgument("TK stage: null model");
        if (m_options.depth == 0) throw InvalidArgument("TK stage: depth must be > 0");
        if (m_options.batch_size == 0) throw InvalidArgument("TK stage: batch size must be > 0");
        if (m_options.threads < 0) throw InvalidArgument("TK stage: threads must be >= 0");
    }

    std::string name() const override { return m_options.name; }
    std::size_t depth() const override { return m_options.depth; }

    std::vector<float> score(const Query& query,
                             std::span<const Candidate> candidates) const override {
        const std::size_t n = std::min(m_options.depth, candidates.size());
        std::vector<std::string_view> passages;
        passages.reserve(n);
        for (std::size_t i = 0; i < n; ++i) passages.emplace_back(candidates[i].text);
        TorchThreadsScope threads(m_options.threads);
        return m_model->score(query.text, std::span<const std::string_view>(passages),
                              m_options.batch_size);
    }

private:
    std::shared_ptr<const TkModel> m_model;
    TkStageOptions m_options;
};

}  // namespace

std::unique_ptr<plumb::RerankStage> make_tk_stage(std::shared_ptr<const TkModel> model,
                                                  TkStageOptions options) {
    return std::make_unique<TkStage>(std::move(model), std::move(options));
}

std::unique_ptr<plumb::RerankStage> make_tk_stage(const std::filesystem::path& model_dir,
                                                  TkStageOptions options) {
    auto model = std::make_shared<const TkModel>(TkModel::load(model_dir));
    return make_tk_stage(std::move(model), std::move(options));
}


std::shared_ptr<const plumb::RerankStage> tk_stage_from_config(const nlohmann::json& c,
                                                               StageContext& ctx) {
    const std::string where = "re-rank stage tk";
    check_keys(c, {"model", "depth", "name", "batch_size", "threads"}, where);
    TkStageOptions o;
    o.depth = config_positive_size(c, "depth", o.depth, where);
    o.batch_size = config_positive_size(c, "batch_size", o.batch_size, where);
    o.threads = static_cast<int>(config_size(c, "threads", 0, where));
    o.name = config_string(c, "name", o.name, where);
    return make_tk_stage(ctx.resolve(config_required_string(c, "model", where)), o);
}

}  // namespace plumb::rerank
