#include "rerank/bi_encoder_stage.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "plugin/error.hpp"

namespace plumb::rerank {

BiEncoderStage::BiEncoderStage(std::shared_ptr<const BiEncoder> encoder,
                               BiEncoderStageOptions options)
    : m_encoder(std::move(encoder)), m_options(std::move(options)) {
    if (!m_encoder) throw InvalidArgument("BiEncoderStage: null encoder");
}

std::vector<float> BiEncoderStage::score(const Query& query,
                                         std::span<const Candidate> candidates) const {
    const auto n = std::min(m_options.depth, candidates.size());
    std::string_view qtext = query.text;
    auto q = m_encoder->encode_queries(std::span<const std::string_view>(&qtext, 1));
    std::vector<std::string_view> texts;
    texts.reserve(n);
    for (std::size_t i = 0; i < n; ++i) texts.push_back(candidates[i].text);
    auto p = m_encoder->encode_passages(texts);
    std::vector<float> scores(n);
    const auto d = m_encoder->dim();
    for (std::size_t i = 0; i < n; ++i)
        scores[i] = m_encoder->similarity(q.data(), p.data() + i * d);
    return scores;
}

std::shared_ptr<const RerankStage> BiEncoderStage::from_config(const nlohmann::json& c,
                                                               StageContext& ctx) {
    const std::string where = "re-rank stage dot";
    check_keys(
        c,
        {"model", "depth", "name", "batch_size", "pooling", "similarity", "threads", "max_length"},
        where);
    auto options = bi_encoder_options_from_config(c, where);
    options.passage_max_length =
        config_positive_size(c, "max_length", options.passage_max_length, where);
    BiEncoderStageOptions so;
    so.depth = config_positive_size(c, "depth", so.depth, where);
    so.name = config_string(c, "name", so.name, where);
    std::shared_ptr<const BiEncoder> encoder =
        BiEncoder::from_folder(ctx.resolve(config_required_string(c, "model", where)), options);
    return std::make_shared<const BiEncoderStage>(encoder, so);
}

}  // namespace plumb::rerank
