#include "plugin/builtins/builtins.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "debias/post_filters.hpp"
#include "eval/run_retriever.hpp"
#include "index/bm25_retriever.hpp"
#include "index/corpus.hpp"
#include "plugin/error.hpp"
#include "plugin/pipeline_config.hpp"
#include "plugin/text_io.hpp"
#include "plugin/trec_run.hpp"
#include "rerank/bi_encoder_stage.hpp"
#include "rerank/cross_encoder.hpp"
#include "rerank/dense_retriever.hpp"
#include "rerank/fusion.hpp"
#include "rerank/hybrid_retriever.hpp"
#include "rerank/tk_stage.hpp"
#include "rerank/torchscript_stage.hpp"

namespace plumb {

using nlohmann::json;

void register_builtins(Registry& registry) {
    // One line per stage type; each factory lives in its stage's file.
    registry.add_retriever("bm25", index::Bm25Retriever::from_config);
    registry.add_retriever("dense", rerank::DenseRetriever::from_config);
    registry.add_retriever("hybrid", rerank::HybridRetriever::from_config);
    registry.add_retriever("run", eval::RunRetriever::from_config);
    registry.add_rerank("tk", rerank::tk_stage_from_config);
    registry.add_rerank("cat", rerank::CrossEncoderStage::from_config);
    registry.add_rerank("dot", rerank::BiEncoderStage::from_config);
    registry.add_rerank("torchscript", rerank::TorchScriptStage::from_config);
    debias::register_post_filters(registry);
}

namespace {

std::string report_lines(const std::vector<SearchResult>& results) {
    std::string out;
    for (const auto& r : results) {
        for (const auto& rep : r.reports) {
            for (const auto& [measure, value] : rep.measures) {
                out += fmt::format("{}\t{}\t{}\t{:.17g}\n", r.list.qid, rep.stage, measure, value);
            }
        }
    }
    return out;
}

std::vector<SearchResult> run_topics(const Pipeline& pipeline, const std::filesystem::path& topics,
                                     const std::filesystem::path& run,
                                     const PipelineRunOptions& options) {
    index::TopicReadOptions topic_options;
    topic_options.fields = options.topic_fields;
    auto queries = index::read_topics(topics, topic_options);
    std::span<const Query> part(queries);
    if (options.part) {
        const auto [first, count] = options.part(queries.size());
        if (first > queries.size() || count > queries.size() - first) {
            throw InvalidArgument("run_pipeline: part out of range");
        }
        part = part.subspan(first, count);
    }
    BatchOptions b;
    b.threads = options.threads;
    b.progress = options.progress;
    b.cancel = options.cancel;
    auto results = pipeline.search_batch(part, b);
    if (options.part && options.emit) {
        std::string lines;
        for (const auto& r : results) lines += format_trec_run(r.list, options.tag);
        options.emit(std::move(lines), options.report.empty() ? std::string() : report_lines(results));
        return results;
    }
    std::vector<RankedList> lists;
    lists.reserve(results.size());
    for (auto& r : results) lists.push_back(r.list);
    if (!options.report.empty()) {
        AtomicFile out(options.report);
        out.write(format_report_header());
        out.write(report_lines(results));
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

std::string format_report_header() { return "qid\tstage\tmeasure\tvalue\n"; }

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
