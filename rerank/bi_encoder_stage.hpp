#pragma once
/// \file bi_encoder_stage.hpp
/// BiEncoderStage: BERT-DOT (rerank/bi_encoder.hpp) as a re-rank stage, pipeline type "dot".
/// Const after construction and safe to call concurrently.

#include <cstddef>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <span>
#include <string>
#include <vector>

#include "plugin/registry.hpp"
#include "plugin/stage.hpp"
#include "rerank/bi_encoder.hpp"

namespace plumb::rerank {

struct BiEncoderStageOptions {
    std::size_t depth = 100;
    std::string name = "bert-dot";
};

/// BERT-DOT as a re-rank stage: score = similarity(query vector, passage vector), passages
/// encoded on the fly from candidate text.
class BiEncoderStage : public RerankStage {
public:
    BiEncoderStage(std::shared_ptr<const BiEncoder> encoder, BiEncoderStageOptions options = {});
    /// Pipeline factory "dot": {"model": HF_DIR, "depth", "name", "batch_size", "max_length",
    /// "pooling", "similarity", "threads"} (plugin/builtins/builtins.hpp).
    static std::shared_ptr<const RerankStage> from_config(const nlohmann::json& config,
                                                          StageContext& ctx);
    std::string name() const override { return m_options.name; }
    std::size_t depth() const override { return m_options.depth; }
    std::vector<float> score(const Query& query,
                             std::span<const Candidate> candidates) const override;

private:
    std::shared_ptr<const BiEncoder> m_encoder;
    BiEncoderStageOptions m_options;
};

}  // namespace plumb::rerank
