#pragma once
// Shared body of the pipeline-configuration targets: a registry of stand-in stages (they read
// their options with the registry helpers a real factory uses, but load nothing), so that a
// configuration is parsed, validated and built as far as a real one would be. "plugins"
// entries resolve against the (empty) scratch folder, so they fail to load with a ConfigError.
#include <nlohmann/json.hpp>

#include "plugin/pipeline_config.hpp"
#include "plugin/registry.hpp"
#include "tests/fuzz/fuzz_support.hpp"

namespace plumb::fuzz {

class NullRetriever : public Retriever {
public:
    std::string name() const override { return "null"; }
    std::vector<RankedList> retrieve(std::span<const Query> queries, std::size_t) const override {
        std::vector<RankedList> out(queries.size());
        for (std::size_t i = 0; i < queries.size(); ++i) {
            out[i].qid = queries[i].id;
            out[i].candidates.push_back(Candidate{"d1", 1.0f, {}, {{"null", 1.0f}}});
        }
        return out;
    }
};

class NullStage : public RerankStage {
public:
    NullStage(std::string name, std::size_t depth) : m_name(std::move(name)), m_depth(depth) {}
    std::string name() const override { return m_name; }
    std::size_t depth() const override { return m_depth; }
    StageNeeds needs() const override { return {false}; }
    std::vector<float> score(const Query&, std::span<const Candidate> c) const override {
        return std::vector<float>(c.size(), 0.5f);
    }

private:
    std::string m_name;
    std::size_t m_depth;
};

class NullFilter : public PostFilter {
public:
    explicit NullFilter(std::string name) : m_name(std::move(name)) {}
    std::string name() const override { return m_name; }
    void apply(const Query&, RankedList&) const override {}

private:
    std::string m_name;
};

inline Registry make_registry() {
    Registry r;
    r.add_retriever("bm25", [](const nlohmann::json& c, StageContext&) {
        check_keys(c, {"index", "k1", "b", "threads"}, "bm25");
        (void)config_required_string(c, "index", "bm25");
        (void)config_double(c, "k1", 0.9, "bm25");
        (void)config_double(c, "b", 0.4, "bm25");
        (void)config_size(c, "threads", 1, "bm25");
        return std::make_shared<NullRetriever>();
    });
    r.add_rerank("tk", [](const nlohmann::json& c, StageContext&) {
        check_keys(c, {"model", "depth", "name", "half"}, "tk");
        (void)config_string(c, "model", "", "tk");
        (void)config_bool(c, "half", false, "tk");
        return std::make_shared<NullStage>(config_string(c, "name", "tk", "tk"),
                                           config_size(c, "depth", 100, "tk"));
    });
    r.add_post_filter("fair_topk", [](const nlohmann::json& c, StageContext&) {
        check_keys(c, {"p", "alpha", "k", "name"}, "fair_topk");
        (void)config_double(c, "p", 0.5, "fair_topk");
        (void)config_double(c, "alpha", 0.1, "fair_topk");
        (void)config_size(c, "k", 10, "fair_topk");
        return std::make_shared<NullFilter>(config_string(c, "name", "fair_topk", "fair_topk"));
    });
    return r;
}

/// Builds the pipeline of `text` and runs one query through it.
template <class Build>
void build_pipeline(Build&& build) {
    expect_clean([&] {
        Registry r = make_registry();
        StageContext ctx(scratch_dir());
        Pipeline p = build(r, ctx);
        (void)p.search(Query{"q", "text"});
    });
}

}  // namespace plumb::fuzz
