// `plumb debias post-filter`: applies one bias-aware post-filter (FA*IR, bias balance,
// near-duplicate removal; debias/post_filters.hpp) to every query of a TREC run and writes the
// re-ordered run, with bias and utility before/after per query (--report) and on average.
// Registered after `plumb debias` (name order) and added to it as a subcommand.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "debias/detail_cli.hpp"
#include "debias/post_filters.hpp"
#include "eval/run_retriever.hpp"
#include "index/document_sources.hpp"
#include "plugin/cli/command.hpp"
#include "plugin/cli/options.hpp"
#include "plugin/cli/progress_bar.hpp"
#include "plugin/error.hpp"
#include "plugin/json.hpp"
#include "plugin/pipeline.hpp"
#include "plugin/text_io.hpp"
#include "plugin/trec_run.hpp"

namespace {

using nlohmann::json;

struct PostFilterArgs {
    std::string run, output, filter, config, bias_file, words, variant, corpus, format, index;
    std::string tag, report, protected_group = "female";
    std::size_t k = 10, depth = 0, shingle = 3;
    double p = 0.5, alpha = 0.1, threshold = 0.9;
    std::string budget = "0";
    bool no_adjust = false, demote = false, quiet = false;
    const CLI::App* cmd = nullptr;  // to tell given options from defaults
};

json build_config(const PostFilterArgs& a) {
    const CLI::App& cmd = *a.cmd;
    if (!a.config.empty()) {
        if (cmd.count("--filter") || cmd.count("-k") || cmd.count("--p") || cmd.count("--alpha") ||
            cmd.count("--budget") || cmd.count("--threshold")) {
            throw plumb::InvalidArgument(
                "debias post-filter: --config replaces --filter and the filter options");
        }
        if (a.config.front() == '{') return plumb::parse_json(a.config, "--config");
        return plumb::read_json_file(a.config);
    }
    if (a.filter.empty()) throw plumb::InvalidArgument("debias post-filter: --filter or --config");
    json cfg;
    cfg["type"] = a.filter;
    cfg["k"] = a.k;
    if (a.filter == "fair_topk") {
        cfg["p"] = a.p;
        cfg["alpha"] = a.alpha;
        cfg["adjust_alpha"] = !a.no_adjust;
        cfg["protected"] = a.protected_group;
    } else if (a.filter == "balance" || a.filter == "bias_balance") {
        if (a.budget == "inf" || a.budget == "infinity") {
            cfg["budget"] = "inf";
        } else {
            try {
                std::size_t used = 0;
                const double b = std::stod(a.budget, &used);
                if (used != a.budget.size()) throw std::invalid_argument("trailing");
                cfg["budget"] = b;
            } catch (const std::exception&) {
                throw plumb::InvalidArgument(
                    "debias post-filter: --budget must be a number or "
                    "inf, not '" +
                    a.budget + "'");
            }
        }
        cfg["depth"] = a.depth;
    } else if (a.filter == "dedup" || a.filter == "near_duplicates") {
        cfg["shingle"] = a.shingle;
        cfg["threshold"] = a.threshold;
        cfg["demote"] = a.demote;
        cfg["depth"] = a.depth == 0 ? std::size_t{1000} : a.depth;
    }
    return cfg;
}

/// A measure of a post-filter's report by name (0 when absent).
double measure(const plumb::StageMeasures& m, std::string_view name) {
    for (const auto& [k, v] : m) {
        if (k == name) return v;
    }
    return 0.0;
}

void run_post_filter(const PostFilterArgs& a) {
    json cfg = build_config(a);
    if (!a.bias_file.empty()) cfg["bias_file"] = a.bias_file;
    if (!a.words.empty()) cfg["words"] = a.words;
    if (!a.variant.empty()) cfg["variant"] = a.variant;

    // The run is the pipeline's first stage; the filter is built by its registered factory.
    const auto run = plumb::eval::RunRetriever::open(a.run);
    plumb::StageContext ctx;
    const std::string type = cfg.is_object() ? cfg.value("type", std::string()) : std::string();
    const bool needs_text = type == "dedup" || type == "near_duplicates" || cfg.contains("words");
    if (!a.corpus.empty() && !a.index.empty()) {
        throw plumb::InvalidArgument("debias post-filter: give --corpus or --index, not both");
    }
    if (!a.index.empty() || !a.corpus.empty()) {
        std::unordered_set<std::string> wanted;
        if (!a.corpus.empty()) wanted = run->docids(run->max_depth());
        ctx.set_documents(plumb::index::open_document_source(a.index, a.corpus, &wanted, a.format));
    } else if (needs_text) {
        throw plumb::InvalidArgument("debias post-filter: filter '" + type +
                                     "' needs passage text: give --corpus or --index");
    }
    plumb::PipelineSpec spec;
    spec.first_stage = run;
    spec.post_filters.push_back(plumb::debias::make_post_filter(cfg, ctx));
    spec.k = std::max<std::size_t>(1, run->max_depth());
    spec.candidates = spec.k;
    const plumb::Pipeline pipeline(std::move(spec));
    const std::string filter_name = pipeline.spec().post_filters.front()->name();

    plumb::cli::ProgressBar bar("post-filter", "queries", !a.quiet);
    plumb::BatchOptions batch;
    batch.progress = bar.callback();
    auto results = pipeline.search_batch(run->queries(), batch);
    bar.finish();
    std::vector<plumb::RankedList> lists;
    std::vector<plumb::StageMeasures> reports;
    lists.reserve(results.size());
    reports.reserve(results.size());
    for (auto& r : results) {
        lists.push_back(std::move(r.list));
        reports.push_back(r.reports.empty() ? plumb::StageMeasures{}
                                            : std::move(r.reports.front().measures));
    }
    plumb::write_trec_run(a.output, lists, a.tag.empty() ? run->run_id() : a.tag);

    if (!a.report.empty()) {
        plumb::AtomicFile out(a.report);
        out.write(
            "qid\tbias_before\tbias_after\tutility_before\tutility_after\tdcg_before\t"
            "dcg_after\tprotected_before\tprotected_after\tfeasible\tremoved\tscore_loss\t"
            "missing_bias\n");
        for (std::size_t i = 0; i < reports.size(); ++i) {
            const auto& r = reports[i];
            auto count = [&](const char* m) { return static_cast<std::size_t>(measure(r, m)); };
            out.write(fmt::format(
                "{}\t{:.17g}\t{:.17g}\t{:.17g}\t{:.17g}\t{:.17g}\t{:.17g}\t{}\t{}\t{}\t{}"
                "\t{:.17g}\t{}\n",
                lists[i].qid, measure(r, "bias_before"), measure(r, "bias_after"),
                measure(r, "utility_before"), measure(r, "utility_after"), measure(r, "dcg_before"),
                measure(r, "dcg_after"), count("protected_before"), count("protected_after"),
                count("feasible"), count("removed"), measure(r, "score_loss"),
                count("missing_bias")));
        }
        out.commit();
    }

    double bb = 0, ba = 0, abb = 0, aba = 0, ub = 0, ua = 0, db = 0, da = 0;
    std::size_t changed = 0, infeasible = 0, removed = 0, missing = 0;
    for (const auto& r : reports) {
        bb += measure(r, "bias_before");
        ba += measure(r, "bias_after");
        abb += std::abs(measure(r, "bias_before"));
        aba += std::abs(measure(r, "bias_after"));
        ub += measure(r, "utility_before");
        ua += measure(r, "utility_after");
        db += measure(r, "dcg_before");
        da += measure(r, "dcg_after");
        changed += measure(r, "changed") != 0.0;
        infeasible += measure(r, "feasible") == 0.0;
        removed += static_cast<std::size_t>(measure(r, "removed"));
        missing += static_cast<std::size_t>(measure(r, "missing_bias"));
    }
    const double n = reports.empty() ? 1.0 : static_cast<double>(reports.size());
    std::printf(
        "filter %s  k %zu  queries %zu  changed %zu\n", filter_name.c_str(),
        reports.empty() ? std::size_t{0} : static_cast<std::size_t>(measure(reports.front(), "k")),
        reports.size(), changed);
    std::printf("RaB bias  before %.6f  after %.6f   |RaB| before %.6f  after %.6f\n", bb / n,
                ba / n, abb / n, aba / n);
    std::printf("utility   before %.6f  after %.6f   DCG before %.6f  after %.6f\n", ub / n, ua / n,
                db / n, da / n);
    if (filter_name == "fair_topk") std::printf("infeasible queries %zu\n", infeasible);
    if (removed) std::printf("near-duplicates removed %zu\n", removed);
    if (missing) std::printf("top-k passages without a bias value %zu\n", missing);
}

const plumb::cli::CommandRegistrar kRegistrar{
    "debias.postfilter", [](CLI::App& app) {
        auto [c, a] = plumb::cli::add_command<PostFilterArgs>(
            plumb::debias::detail::debias_command(app), "post-filter",
            "Re-orders a run with a bias-aware post-filter (FA*IR fair top-k, bias balance within "
            "a score budget, near-duplicate removal)",
            run_post_filter);
        a->cmd = c;
        c->add_option("--run", a->run, "Input TREC run")->required();
        c->add_option("--output,-o", a->output, "Output TREC run")->required();
        c->add_option("--filter", a->filter, "fair_topk | balance | dedup");
        c->add_option("--config", a->config,
                      "Filter configuration as JSON text or a JSON file (instead of --filter and "
                      "its options; see debias/post_filters.hpp)");
        c->add_option("--bias-file", a->bias_file,
                      "Per-passage bias file (plumb debias gender-scores)");
        c->add_option(
            "--words", a->words,
            "Gender word list (word,f|m): magnitudes from passage text (needs --corpus or "
            "--index)");
        c->add_option("--variant", a->variant, "tc | tf | bool (default tc)");
        c->add_option("-k", a->k, "Cutoff (FA*IR prefix length, balanced RaB@k, report)")
            ->capture_default_str();
        c->add_option("--p", a->p, "fair_topk: minimum proportion of protected")
            ->capture_default_str();
        c->add_option("--alpha", a->alpha, "fair_topk: significance")->capture_default_str();
        c->add_flag("--no-adjust", a->no_adjust,
                    "fair_topk: no multiple-testing adjustment of alpha");
        c->add_option("--protected", a->protected_group, "fair_topk: female | male | neutral")
            ->capture_default_str();
        c->add_option("--budget", a->budget, "balance: score budget (number or inf)")
            ->capture_default_str();
        c->add_option("--depth", a->depth,
                      "balance: candidates that may enter the top-k (0 = all); dedup: candidates "
                      "examined (0 = 1000)")
            ->capture_default_str();
        c->add_option("--shingle", a->shingle, "dedup: words per shingle")->capture_default_str();
        c->add_option("--threshold", a->threshold,
                      "dedup: Jaccard at or above which a passage is a "
                      "near-duplicate")
            ->capture_default_str();
        c->add_flag("--demote", a->demote,
                    "dedup: move near-duplicates to the end instead of removing");
        c->add_option("--corpus", a->corpus, "Passages (TSV or BEIR JSONL) for passage text");
        plumb::cli::add_input_format_option(c, a->format, "Corpus format tsv | jsonl (default: by extension)");
        c->add_option("--index", a->index, "Passage index (plumb index) for passage text");
        c->add_option("--tag", a->tag, "Run tag of the output (default: the input's)");
        c->add_option("--report", a->report, "Per-query TSV of bias and utility before/after");
        plumb::cli::add_quiet_flag(c, a->quiet, "No progress bar");
    }};

}  // namespace
