#pragma once
/// \file run_retriever.hpp
/// A TREC run as a pipeline's first stage: `plumb rerank` and `plumb debias post-filter` re-rank
/// or filter an existing run through the same Pipeline (plugin/pipeline.hpp) as a configured
/// search, so every stage is built one way (its factory) whatever surface drives it.

#include <filesystem>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <span>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "eval/run.hpp"
#include "plugin/registry.hpp"
#include "plugin/stage.hpp"

namespace plumb::eval {

class RunRetriever : public Retriever {
public:
    /// The run's lists in the order trec_eval ranks them (score descending, ties by docid
    /// descending), whatever the order of its lines; scores as in the file.
    explicit RunRetriever(const Run& run);
    /// Reads the run file (any line order, gzip, 3- or 6-column lines: eval/run.hpp).
    static std::shared_ptr<const RunRetriever> open(const std::filesystem::path& path);
    /// Pipeline factory: {"type": "run", "run": "path"} (relative to the configuration).
    static std::shared_ptr<const Retriever> from_config(const nlohmann::json& config,
                                                        StageContext& ctx);

    std::string name() const override { return "run"; }
    /// The first k candidates of each query's list; an empty list for a query the run lacks.
    std::vector<RankedList> retrieve(std::span<const Query> queries, std::size_t k) const override;

    /// Queries of the run in order of first appearance (their text is empty).
    const std::vector<Query>& queries() const noexcept { return m_queries; }
    /// Documents among the first `depth` of any query's list (e.g. the passages whose text a
    /// re-ranker at that depth needs).
    std::unordered_set<std::string> docids(std::size_t depth) const;
    /// Longest list of the run.
    std::size_t max_depth() const noexcept { return m_max_depth; }
    /// The run's tag (its last line's).
    const std::string& run_id() const noexcept { return m_run_id; }

private:
    std::vector<Query> m_queries;
    std::unordered_map<std::string, RankedList> m_lists;
    std::size_t m_max_depth = 0;
    std::string m_run_id;
};

}  // namespace plumb::eval
