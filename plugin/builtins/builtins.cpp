#include "plugin/builtins/builtins.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "debias/post_filters.hpp"
#include "index/bm25_retriever.hpp"
#include "index/corpus.hpp"
#include "plugin/error.hpp"
#include "plugin/pipeline_config.hpp"
#include "plugin/text_io.hpp"
#include "plugin/trec_run.hpp"
#include "rerank/bi_encoder.hpp"
#include "rerank/cross_encoder.hpp"
#include "rerank/dense_index.hpp"
#include "rerank/fusion.hpp"
#include "rerank/tk_stage.hpp"
#include "rerank/torchscript_stage.hpp"

namespace plumb {

using nlohmann::json;

namespace {

std::string key_of(const std::filesystem::path& p) {
    std::error_code ec;
    auto c = std::filesystem::weakly_canonical(p, ec);
    return (ec ? p : c).string();
}

/// The passage index at `dir`, opened once per context.
std::shared_ptr<const index::PassageIndex> passage_index(StageContext& ctx,
                                                         const std::filesystem::path& dir) {
    return ctx.shared<const index::PassageIndex>("index:" + key_of(dir),
                                                 [&] { return index::PassageIndex::open(dir); });
}

std::size_t positive(std::size_t v, const char* key, const std::string& where) {
    if (v == 0) throw ConfigError(where + ": \"" + key + "\" must be positive");
    return v;
}

std::shared_ptr<const Retriever> make_bm25(const json& c, StageContext& ctx) {
    const std::string where = "first stage bm25";
    check_keys(c,
               {"index", "k1", "b", "lucene_norms", "rm3", "fb_docs", "fb_terms",
                "original_query_weight", "threads"},
               where);
    auto dir = ctx.resolve(config_required_string(c, "index", where));
    index::SearchOptions o;
    o.bm25.k1 = static_cast<float>(config_double(c, "k1", o.bm25.k1, where));
    o.bm25.b = static_cast<float>(config_double(c, "b", o.bm25.b, where));
    o.bm25.lucene_norms = config_bool(c, "lucene_norms", false, where);
    o.rm3 = config_bool(c, "rm3", false, where);
    o.rm3_params.fb_docs = config_size(c, "fb_docs", o.rm3_params.fb_docs, where);
    o.rm3_params.fb_terms = config_size(c, "fb_terms", o.rm3_params.fb_terms, where);
    o.rm3_params.original_query_weight = static_cast<float>(
        config_double(c, "original_query_weight", o.rm3_params.original_query_weight, where));
    auto threads =
        static_cast<unsigned>(positive(config_size(c, "threads", 1, where), "threads", where));
    auto idx = passage_index(ctx, dir);
    auto searcher = ctx.shared<const index::Bm25Searcher>(
        "bm25:" + key_of(dir), [&] { return std::make_shared<const index::Bm25Searcher>(idx); });
    ctx.offer_documents(idx);
    return std::make_shared<index::Bm25Retriever>(searcher, o, threads);
}

rerank::BiEncoderOptions bi_encoder_options(const json& c, const std::string& where) {
    rerank::BiEncoderOptions o;
    o.batch_size = positive(config_size(c, "batch_size", o.batch_size, where), "batch_size", where);
    try {
        o.pooling = rerank::parse_pooling(config_string(c, "pooling", "cls", where));
        o.similarity = rerank::parse_similarity(config_string(c, "similarity", "dot", where));
        // Keys given in the config win over a sentence-transformers folder's modules.
        o.explicit_pooling = c.contains("pooling");
        o.explicit_similarity = c.contains("similarity");
    } catch (const InvalidArgument& e) {
        throw ConfigError(where + ": " + e.what());
    }
    o.threads = static_cast<int>(config_size(c, "threads", 0, where));
    return o;
}

std::shared_ptr<const Retriever> make_dense(const json& c, StageContext& ctx) {
    const std::string where = "first stage dense";
    check_keys(c,
               {"model", "vectors", "index", "name", "batch_size", "pooling", "similarity",
                "ef_search", "threads"},
               where);
    auto model = ctx.resolve(config_required_string(c, "model", where));
    auto vectors = ctx.resolve(config_required_string(c, "vectors", where));
    auto options = bi_encoder_options(c, where);
    auto ef = static_cast<int>(config_size(c, "ef_search", 0, where));
    std::string name = config_string(c, "name", "dense", where);
    if (c.contains("index")) {
        ctx.offer_documents(passage_index(ctx, ctx.resolve(config_string(c, "index", "", where))));
    }
    std::shared_ptr<const rerank::BiEncoder> encoder =
        rerank::BiEncoder::from_folder(model, options);
    auto dense = std::make_shared<const rerank::DenseIndex>(
        rerank::DenseIndex::load(vectors, encoder->dim(), ef));
    return std::make_shared<rerank::DenseRetriever>(encoder, dense, name);
}

/// Fusion of several first stages (reciprocal rank fusion or min-max interpolation of two).
class HybridRetriever : public Retriever {
public:
    HybridRetriever(std::vector<std::shared_ptr<const Retriever>> parts, std::string method,
                    double alpha, double rrf_k, std::string name)
        : m_parts(std::move(parts)),
          m_method(std::move(method)),
          m_alpha(alpha),
          m_rrf_k(rrf_k),
          m_name(std::move(name)) {}
    std::string name() const override { return m_name; }
    std::vector<RankedList> retrieve(std::span<const Query> queries, std::size_t k) const override {
        std::vector<std::vector<RankedList>> runs;
        for (const auto& p : m_parts) runs.push_back(p->retrieve(queries, k));
        std::vector<RankedList> out;
        for (std::size_t q = 0; q < queries.size(); ++q) {
            std::vector<RankedList> lists;
            for (auto& r : runs)
                lists.push_back(q < r.size() ? r[q] : RankedList{queries[q].id, {}});
            RankedList fused =
                m_method == "rrf"
                    ? rerank::reciprocal_rank_fusion(lists, m_rrf_k, k, m_name)
                    : rerank::interpolate_scores(lists[0], lists[1], m_alpha, k, m_name);
            fused.qid = queries[q].id;
            out.push_back(std::move(fused));
        }
        return out;
    }

private:
    std::vector<std::shared_ptr<const Retriever>> m_parts;
    std::string m_method;
    double m_alpha, m_rrf_k;
    std::string m_name;
};

std::shared_ptr<const Retriever> make_hybrid(const json& c, StageContext& ctx) {
    const std::string where = "first stage hybrid";
    check_keys(c, {"stages", "method", "alpha", "rrf_k", "name"}, where);
    auto it = c.find("stages");
    if (it == c.end() || !it->is_array() || it->size() < 2) {
        throw ConfigError(where + ": \"stages\" must be an array of at least two first stages");
    }
    std::string method = config_string(c, "method", "rrf", where);
    if (method != "rrf" && method != "interp") {
        throw ConfigError(where + ": unknown method \"" + method + "\" (known: rrf, interp)");
    }
    if (method == "interp" && it->size() != 2) {
        throw ConfigError(where + ": \"interp\" fuses exactly two stages");
    }
    double alpha = config_double(c, "alpha", 0.5, where);
    if (!(alpha >= 0 && alpha <= 1)) throw ConfigError(where + ": \"alpha\" must be in [0, 1]");
    double rrf_k = config_double(c, "rrf_k", 60.0, where);
    if (rrf_k < 0) throw ConfigError(where + ": \"rrf_k\" must be >= 0");
    std::vector<std::shared_ptr<const Retriever>> parts;
    const Registry* registry = ctx.registry();
    if (!registry) throw ConfigError(where + ": no registry in the stage context");
    for (const auto& s : *it) parts.push_back(registry->make_retriever(s, ctx));
    return std::make_shared<HybridRetriever>(std::move(parts), method, alpha, rrf_k,
                                             config_string(c, "name", "hybrid", where));
}

std::shared_ptr<const RerankStage> make_tk(const json& c, StageContext& ctx) {
    const std::string where = "re-rank stage tk";
    check_keys(c, {"model", "depth", "name", "batch_size", "threads"}, where);
    rerank::TkStageOptions o;
    o.depth = positive(config_size(c, "depth", o.depth, where), "depth", where);
    o.batch_size = positive(config_size(c, "batch_size", o.batch_size, where), "batch_size", where);
    o.threads = static_cast<int>(config_size(c, "threads", 0, where));
    o.name = config_string(c, "name", o.name, where);
    return rerank::make_tk_stage(ctx.resolve(config_required_string(c, "model", where)), o);
}

std::shared_ptr<const RerankStage> make_cat(const json& c, StageContext& ctx) {
    const std::string where = "re-rank stage cat";
    check_keys(
        c,
        {"model", "depth", "name", "batch_size", "max_length", "label", "log_softmax", "threads"},
        where);
    rerank::CrossEncoderOptions o;
    o.depth = positive(config_size(c, "depth", o.depth, where), "depth", where);
    o.batch_size = positive(config_size(c, "batch_size", o.batch_size, where), "batch_size", where);
    o.max_length = positive(config_size(c, "max_length", o.max_length, where), "max_length", where);
    if (c.contains("label")) {
        if (!c["label"].is_number_integer())
            throw ConfigError(where + ": \"label\" must be an integer");
        o.label = c["label"].get<std::int64_t>();
    }
    o.log_softmax = config_bool(c, "log_softmax", false, where);
    o.threads = static_cast<int>(config_size(c, "threads", 0, where));
    o.name = config_string(c, "name", o.name, where);
    return rerank::CrossEncoderStage::from_folder(
        ctx.resolve(config_required_string(c, "model", where)), o);
}

std::shared_ptr<const RerankStage> make_dot(const json& c, StageContext& ctx) {
    const std::string where = "re-rank stage dot";
    check_keys(c,
               {"model", "depth", "name", "batch_size", "pooling", "similarity", "threads",
                "max_length"},
               where);
    auto options = bi_encoder_options(c, where);
    options.passage_max_length = positive(
        config_size(c, "max_length", options.passage_max_length, where), "max_length", where);
    rerank::BiEncoderStageOptions so;
    so.depth = positive(config_size(c, "depth", so.depth, where), "depth", where);
    so.name = config_string(c, "name", so.name, where);
    std::shared_ptr<const rerank::BiEncoder> encoder = rerank::BiEncoder::from_folder(
        ctx.resolve(config_required_string(c, "model", where)), options);
    return std::make_shared<rerank::BiEncoderStage>(encoder, so);
}

std::shared_ptr<const RerankStage> make_torchscript(const json& c, StageContext& ctx) {
    const std::string where = "re-rank stage torchscript";
    check_keys(c,
               {"model", "depth", "name", "batch_size", "max_length", "threads", "token_type_ids"},
               where);
    rerank::TorchScriptStageOptions o;
    o.pass_token_type_ids = config_bool(c, "token_type_ids", true, where);
    o.depth = positive(config_size(c, "depth", o.depth, where), "depth", where);
    o.batch_size = positive(config_size(c, "batch_size", o.batch_size, where), "batch_size", where);
    o.max_length = positive(config_size(c, "max_length", o.max_length, where), "max_length", where);
    o.threads = static_cast<int>(config_size(c, "threads", 0, where));
    o.name = config_string(c, "name", o.name, where);
    return rerank::make_torchscript_stage(ctx.resolve(config_required_string(c, "model", where)),
                                          o);
}

}  // namespace

void register_builtins(Registry& registry) {
    registry.add_retriever("bm25", make_bm25);
    registry.add_retriever("dense", make_dense);
    registry.add_retriever("hybrid", make_hybrid);
    registry.add_rerank("tk", make_tk);
    registry.add_rerank("cat", make_cat);
    registry.add_rerank("dot", make_dot);
    registry.add_rerank("torchscript", make_torchscript);
    debias::register_post_filters(registry);
}

namespace {

std::vector<SearchResult> run_topics(const Pipeline& pipeline, const std::filesystem::path& topics,
                                     const std::filesystem::path& run,
                                     const PipelineRunOptions& options) {
    index::TopicReadOptions topic_options;
    topic_options.fields = options.topic_fields;
    auto queries = index::read_topics(topics, topic_options);
    BatchOptions b;
    b.threads = options.threads;
    b.progress = options.progress;
    b.cancel = options.cancel;
    auto results = pipeline.search_batch(queries, b);
    std::vector<RankedList> lists;
    lists.reserve(results.size());
    for (auto& r : results) lists.push_back(r.list);
    if (!options.report.empty()) {
        AtomicFile out(options.report);
        out.write("qid\tstage\tmeasure\tvalue\n");
        for (const auto& r : results) {
            for (const auto& rep : r.reports) {
                for (const auto& [measure, value] : rep.measures) {
                    out.write(fmt::format("{}\t{}\t{}\t{:.17g}\n", r.list.qid, rep.stage, measure,
                                          value));
                }
            }
        }
        out.commit();
    }
    write_trec_run(run.string(), lists, options.tag);
    return results;
}

}  // namespace

std::size_t run_pipeline(const Pipeline& pipeline, const std::filesystem::path& topics,
                         const std::filesystem::path& run, const PipelineRunOptions& options) {
    return run_topics(pipeline, topics, run, options).size();
}

std::string format_report_means(const std::vector<SearchResult>& results) {
    // (stage, measure) in first-seen order -> (sum, count).
    std::vector<std::pair<std::string, std::string>> keys;
    std::vector<std::pair<double, std::size_t>> sums;
    for (const auto& r : results) {
        for (const auto& rep : r.reports) {
            for (const auto& [measure, value] : rep.measures) {
                std::size_t i = 0;
                while (i < keys.size() &&
                       !(keys[i].first == rep.stage && keys[i].second == measure))
                    ++i;
                if (i == keys.size()) {
                    keys.emplace_back(rep.stage, measure);
                    sums.emplace_back(0.0, 0);
                }
                sums[i].first += value;
                ++sums[i].second;
            }
        }
    }
    if (keys.empty()) return {};
    std::size_t sw = 5, mw = 7;
    for (const auto& [stage, measure] : keys) {
        sw = std::max(sw, stage.size());
        mw = std::max(mw, measure.size());
    }
    std::string out = fmt::format("{:<{}}  {:<{}}  {:>8}  {:>14}\n", "stage", sw, "measure", mw,
                                  "queries", "mean");
    for (std::size_t i = 0; i < keys.size(); ++i) {
        out += fmt::format("{:<{}}  {:<{}}  {:>8}  {:>14.6g}\n", keys[i].first, sw, keys[i].second,
                           mw, sums[i].second, sums[i].first / static_cast<double>(sums[i].second));
    }
    return out;
}

std::string format_stage_stats(const std::vector<StageStats>& stats) {
    std::size_t width = 5;
    for (const auto& s : stats) width = std::max(width, s.stage.size());
    std::string out = fmt::format("{:<{}}  {:>8}  {:>10}  {:>10}  {:>10}\n", "stage", width,
                                  "count", "mean_ms", "p50_ms", "p99_ms");
    for (const auto& s : stats) {
        out += fmt::format("{:<{}}  {:>8}  {:>10.3f}  {:>10.3f}  {:>10.3f}\n", s.stage, width,
                           s.count, s.mean_ms, s.p50_ms, s.p99_ms);
    }
    return out;
}

std::string run_pipeline_config(const std::filesystem::path& config,
                                const std::filesystem::path& topics,
                                const std::filesystem::path& run,
                                const std::vector<std::filesystem::path>& plugins,
                                const PipelineRunOptions& options, bool stats) {
    Registry registry;
    register_builtins(registry);
    for (const auto& p : plugins) registry.load_library(p);
    Pipeline pipeline = load_pipeline(config, registry);
    auto results = run_topics(pipeline, topics, run, options);
    if (!stats) return {};
    std::string out = format_stage_stats(pipeline.stats());
    std::string means = format_report_means(results);
    if (!means.empty()) out += "\n" + means;
    return out;
}

}  // namespace plumb
