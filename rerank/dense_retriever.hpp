#pragma once
/// \file dense_retriever.hpp
/// DenseRetriever: BERT-DOT (rerank/bi_encoder.hpp) as a first stage over a FAISS index of
/// passage vectors (rerank/dense_index.hpp), pipeline type "dense". Const after construction and
/// safe to call concurrently.

#include <cstddef>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <span>
#include <string>
#include <vector>

#include "plugin/registry.hpp"
#include "plugin/stage.hpp"
#include "rerank/bi_encoder.hpp"
#include "rerank/dense_index.hpp"

namespace plumb::rerank {

/// BERT-DOT as a first stage: query vectors searched in a DenseIndex. Lists are best first,
/// ties broken by docid ascending.
class DenseRetriever : public Retriever {
public:
    /// Throws IndexError when the index dimension differs from the encoder's.
    DenseRetriever(std::shared_ptr<const BiEncoder> encoder,
                   std::shared_ptr<const DenseIndex> index, std::string name = "dense");
    /// Pipeline factory "dense": {"model": HF_DIR, "vectors": DIR, "index": DIR (optional
    /// document source), "name", "batch_size", "pooling", "similarity", "ef_search",
    /// "threads"} (plugin/builtins/builtins.hpp).
    static std::shared_ptr<const Retriever> from_config(const nlohmann::json& config,
                                                        StageContext& ctx);
    std::string name() const override { return m_name; }
    std::vector<RankedList> retrieve(std::span<const Query> queries, std::size_t k) const override;

private:
    std::shared_ptr<const BiEncoder> m_encoder;
    std::shared_ptr<const DenseIndex> m_index;
    std::string m_name;
};

}  // namespace plumb::rerank
