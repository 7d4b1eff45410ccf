// `plumb debias post-filter-sweep`: FA*IR and bias balance at several settings on one run, with
// effectiveness and bias of each filtered run next to the unfiltered one (table + plot + runs).
// The sweep itself is debias/post_filter_sweep.hpp; this file only parses options.
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <unordered_set>
#include <vector>

#include "debias/detail_cli.hpp"
#include "debias/post_filter_sweep.hpp"
#include "eval/detail_cli.hpp"
#include "eval/qrels.hpp"
#include "eval/run_retriever.hpp"
#include "index/document_sources.hpp"
#include "plugin/cli/command.hpp"
#include "plugin/cli/options.hpp"
#include "plugin/cli/progress_bar.hpp"
#include "plugin/error.hpp"

namespace {

struct SweepArgs {
    std::string run, bias_file, words, variant = "tc", corpus, index, format_in, output_dir, tag;
    plumb::eval::detail::QrelsArgs qrels;
    plumb::eval::detail::OutputArgs output{{"text", "markdown", "json"}};
    std::vector<std::string> budgets = {"0.01", "0.05", "0.1", "inf"};
    std::vector<double> fair_p = {0.1, 0.3, 0.5};
    std::vector<std::string> filters = {"fair_topk", "bias_balance"};
    std::size_t k = 10, depth = 0;
    double alpha = 0.1;
    bool no_adjust = false, quiet = false;
    std::string protected_group = "female";
};

double parse_budget(const std::string& text) {
    if (text == "inf" || text == "infinity") return std::numeric_limits<double>::infinity();
    try {
        std::size_t used = 0;
        const double b = std::stod(text, &used);
        if (used == text.size() && b >= 0 && std::isfinite(b)) return b;
    } catch (const std::exception&) {
    }
    throw plumb::InvalidArgument("--budgets: '" + text + "' is not a number >= 0 or inf");
}

void run_sweep(const SweepArgs& a) {
    a.output.check();
    plumb::debias::PostFilterSweepOptions o;
    o.k = a.k;
    o.depth = a.depth;
    o.alpha = a.alpha;
    o.adjust_alpha = !a.no_adjust;
    o.protected_group = a.protected_group;
    o.variant = plumb::eval::parse_bias_variant(a.variant);
    o.relevance_level = a.qrels.level;
    o.bias_file = a.bias_file;
    o.words = a.words;
    o.budgets.clear();
    o.fair_p.clear();
    for (const auto& f : a.filters) {
        if (f == "fair_topk") {
            o.fair_p = a.fair_p;
        } else if (f == "bias_balance" || f == "balance") {
            for (const auto& b : a.budgets) o.budgets.push_back(parse_budget(b));
        } else {
            throw plumb::InvalidArgument("--filters: '" + f + "' is not fair_topk or bias_balance");
        }
    }
    if (a.bias_file.empty() == a.words.empty())
        throw plumb::InvalidArgument("give --bias-file or --words (with --corpus or --index)");

    const auto run = plumb::eval::RunRetriever::open(a.run);
    plumb::StageContext ctx;
    if (!a.words.empty()) {
        if (a.corpus.empty() && a.index.empty())
            throw plumb::InvalidArgument("--words needs passage text: give --corpus or --index");
        std::unordered_set<std::string> wanted;
        if (!a.corpus.empty()) wanted = run->docids(run->max_depth());
        ctx.set_documents(
            plumb::index::open_document_source(a.index, a.corpus, &wanted, a.format_in));
    }
    const auto lists = run->retrieve(run->queries(), std::max<std::size_t>(1, run->max_depth()));
    const auto qrels =
        std::make_shared<const plumb::eval::Qrels>(plumb::eval::Qrels::load(a.qrels.path));

    plumb::cli::ProgressBar bar("post-filter sweep", "settings", !a.quiet);
    const auto sweep = plumb::debias::sweep_post_filters(lists, qrels, o, ctx, bar.callback());
    bar.finish();
    if (!a.output_dir.empty())
        plumb::debias::write_sweep(sweep, a.output_dir, a.tag.empty() ? run->run_id() : a.tag);
    const std::string& f = a.output.format;
    a.output.write(f == "json"       ? plumb::debias::sweep_json(sweep).dump(2) + "\n"
                   : f == "markdown" ? plumb::debias::sweep_markdown(sweep)
                                     : plumb::debias::sweep_text(sweep));
}

const plumb::cli::CommandRegistrar kRegistrar{
    "debias.postfiltersweep", [](CLI::App& app) {
        auto [c, a] = plumb::cli::add_command<SweepArgs>(
            plumb::debias::detail::debias_command(app), "post-filter-sweep",
            "FA*IR and bias balance at several settings: nDCG@k, MRR@k, RaB@k, |RaB@k|, ARaB@k "
            "of each filtered run next to the unfiltered one, a table and a plot",
            run_sweep);
        c->add_option("--run", a->run, "Input TREC run")->required();
        a->qrels.add(c, "Qrels (nDCG@k and MRR@k; only judged queries are measured)");
        c->add_option("--bias-file", a->bias_file,
                      "Per-passage bias file (plumb debias gender / gender-scores)");
        c->add_option("--words", a->words,
                      "Gender word list (word,f|m): bias from passage text (needs --corpus or "
                      "--index)");
        c->add_option("--variant", a->variant, "Passage bias variant tc | tf | bool")
            ->capture_default_str();
        // --corpus / --index as add_passage_options, but --format is this command's output.
        auto* corpus = c->add_option("--corpus", a->corpus, "Corpus (TSV or BEIR JSONL)");
        c->add_option("--index", a->index, "A plumb passage index directory")->excludes(corpus);
        c->add_option("--input-format", a->format_in, "Corpus format (default: by extension)")
            ->check(CLI::IsMember({"tsv", "jsonl"}));
        c->add_option("-k", a->k, "Cutoff of the filters and of the measures")
            ->check(plumb::cli::positive_count())
            ->capture_default_str();
        c->add_option("--filters", a->filters, "Filters swept: fair_topk, bias_balance")
            ->delimiter(',')
            ->capture_default_str();
        c->add_option("--budgets", a->budgets,
                      "bias_balance: score budgets (comma-separated numbers >= 0 or inf)")
            ->delimiter(',')
            ->capture_default_str();
        c->add_option("--depth", a->depth,
                      "bias_balance: candidates that may enter the top-k (0 = all)")
            ->capture_default_str();
        c->add_option("--fair-p", a->fair_p,
                      "fair_topk: target proportions of protected candidates (comma-separated, "
                      "in (0, 1))")
            ->delimiter(',')
            ->capture_default_str();
        c->add_option("--alpha", a->alpha, "fair_topk: significance")->capture_default_str();
        c->add_flag("--no-adjust", a->no_adjust,
                    "fair_topk: no multiple-testing adjustment of alpha");
        c->add_option("--protected", a->protected_group, "fair_topk: female | male | neutral")
            ->capture_default_str();
        c->add_option("--output-dir", a->output_dir,
                      "Write every run, sweep.txt/.md/.json and the plot sweep.png/.svg into this "
                      "folder (atomically)");
        c->add_option("--tag", a->tag, "Run tag of the written runs (default: the input's)");
        a->output.add(c);
        plumb::cli::add_quiet_flag(c, a->quiet, "No progress bar");
    }};

}  // namespace
