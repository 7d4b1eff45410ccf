#pragma once
/// \file hybrid_retriever.hpp
/// Fusion of several first stages (e.g. BM25 and dense retrieval) into one: reciprocal rank
/// fusion of any number, or min-max interpolation of two (rerank/fusion.hpp).

#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <span>
#include <string>
#include <vector>

#include "plugin/registry.hpp"
#include "plugin/stage.hpp"

namespace plumb::rerank {

class HybridRetriever : public Retriever {
public:
    /// `method` "rrf" (any number of parts, constant `rrf_k`) or "interp" (two parts,
    /// alpha * first + (1 - alpha) * second of min-max normalised scores).
    HybridRetriever(std::vector<std::shared_ptr<const Retriever>> parts, std::string method,
                    double alpha, double rrf_k, std::string name);
    /// Pipeline factory "hybrid": {"stages": [first stage, ...], "method": "rrf" | "interp",
    /// "alpha": 0.5, "rrf_k": 60, "name": "hybrid"}; the parts are built by the registry of
    /// `ctx` (plugin/builtins/builtins.hpp).
    static std::shared_ptr<const Retriever> from_config(const nlohmann::json& config,
                                                        StageContext& ctx);

    std::string name() const override { return m_name; }
    /// Each part retrieves k per query; the fused list is cut to k.
    std::vector<RankedList> retrieve(std::span<const Query> queries, std::size_t k) const override;

private:
    std::vector<std::shared_ptr<const Retriever>> m_parts;
    std::string m_method;
    double m_alpha, m_rrf_k;
    std::string m_name;
};

}  // namespace plumb::rerank
