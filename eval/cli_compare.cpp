// `plumb compare`, `plumb eval-groups`, `plumb eval-subsets`: comparing runs with significance
// tests, per-query distributions by query group, and query subsets (survivorship analysis).
// Thin layers over eval/compare.hpp, eval/distribution.hpp and eval/subsets.hpp.
#include <cstdio>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "eval/compare.hpp"
#include "eval/detail_cli.hpp"
#include "eval/distribution.hpp"
#include "eval/evaluator.hpp"
#include "eval/subsets.hpp"
#include "plugin/cli/command.hpp"
#include "plugin/cli/options.hpp"
#include "plugin/cli/output.hpp"
#include "plugin/error.hpp"
#include "plugin/text_io.hpp"

namespace plumb::eval {
namespace {

using detail::fixed;
using detail::pad;

std::string fixed_cv(const std::optional<double>& cv) { return cv ? fixed(*cv) : "-"; }

std::vector<double> parse_edges(const std::string& spec) {
    std::vector<double> out;
    std::vector<std::string_view> parts;
    split(spec, ',', parts);
    for (auto p : parts) {
        try {
            std::size_t used = 0;
            const std::string s(trim(p));
            out.push_back(std::stod(s, &used));
            if (used != s.size()) throw std::invalid_argument(s);
        } catch (const std::exception&) {
            throw ConfigError("--edges: '" + std::string(p) + "' is not a number");
        }
    }
    return out;
}

std::vector<std::string> parse_list(const std::string& spec) {
    std::vector<std::string> out;
    std::vector<std::string_view> parts;
    split(spec, ',', parts);
    for (auto p : parts) out.emplace_back(trim(p));
    return out;
}

// ------------------------------------------------------------------------------------------
// plumb compare
// ------------------------------------------------------------------------------------------

struct CompareArgs {
    detail::QrelsArgs qrels;
    detail::RunArgs runs;
    std::vector<std::string> measures;
    std::string baseline;
    bool all_pairs = false;
    detail::SignificanceArgs significance{"none"};
    detail::OutputArgs out{{"text", "json", "csv", "latex"}};
    std::size_t max_docs = 0;
    int decimals = 4;
    std::string bias_file;
};

void run_compare(const CompareArgs& a) {
    if (a.runs.runs.size() < 2) throw ConfigError("compare: give at least two --run files");
    if (!a.baseline.empty() && a.all_pairs)
        throw ConfigError("compare: --baseline and --all-pairs exclude each other");
    const auto names = a.runs.display_names();
    CompareOptions options;
    options.test = a.significance.test_kind();
    options.correction = a.significance.correction_kind();
    options.alpha = a.significance.alpha;
    if (!a.baseline.empty()) {
        for (std::size_t i = 0; i < names.size(); ++i)
            if (names[i] == a.baseline || a.runs.runs[i] == a.baseline) options.baseline = i;
        if (!options.baseline)
            throw ConfigError("compare: --baseline '" + a.baseline + "' is not one of the runs");
    }
    const auto format = parse_compare_format(a.out.format);
    auto measures = MeasureSet::parse(
        a.measures.empty() ? std::vector<std::string>{"ndcg_cut.10", "mrr_cut.10", "recall.10"}
                           : a.measures);
    EvalOptions eo;
    eo.complete = true;  // every qrels query in every run: the pairs line up (missing = 0)
    eo.relevance_level = a.qrels.level;
    load_bias_tables(eo, measures, a.bias_file);
    if (a.max_docs > 0) eo.max_docs_per_query = a.max_docs;
    auto qrels = std::make_shared<const Qrels>(Qrels::load(a.qrels.path));
    Evaluator evaluator(qrels, std::move(measures), eo);
    std::vector<EvalResult> results;
    for (const auto& r : a.runs.runs) results.push_back(detail::evaluate_run_argument(evaluator, r));
    const auto table = compare_runs(names, results, options);
    a.out.write(format_comparison(table, format, a.decimals));
}

// ------------------------------------------------------------------------------------------
// plumb eval-groups
// ------------------------------------------------------------------------------------------

struct GroupsArgs {
    detail::QrelsArgs qrels;
    detail::RunArgs runs;
    std::vector<std::string> measures;
    std::string groups;
    std::string edges;
    std::size_t quantiles = 3;
    std::string labels;
    std::string kind = "auto";
    std::string sd = "population";
    bool judged_only_queries = false;
    detail::OutputArgs out{{"text", "json", "csv"}};
};

void run_groups(const GroupsArgs& a) {
    if (a.runs.runs.empty()) throw ConfigError("eval-groups: give at least one --run");
    const auto names = a.runs.display_names();
    const SdKind sd = a.sd == "population" ? SdKind::Population
                      : a.sd == "sample"   ? SdKind::Sample
                                           : throw ConfigError("--sd must be population or sample");
    a.out.check();
    std::optional<QueryGroups> groups;
    if (!a.groups.empty()) {
        GroupingSpec spec;
        if (a.kind == "numeric")
            spec.kind = GroupingKind::Numeric;
        else if (a.kind == "categorical")
            spec.kind = GroupingKind::Categorical;
        else if (a.kind != "auto")
            throw ConfigError("--kind must be auto, numeric or categorical");
        spec.quantiles = a.quantiles;
        if (!a.edges.empty()) spec.edges = parse_edges(a.edges);
        if (!a.labels.empty()) spec.labels = parse_list(a.labels);
        groups = group_queries(read_query_attributes(a.groups), spec);
    } else if (!a.edges.empty() || !a.labels.empty()) {
        throw ConfigError("--edges/--labels need --groups");
    }
    auto measures = MeasureSet::parse(a.measures.empty() ? std::vector<std::string>{"ndcg_cut.10"}
                                                         : a.measures);
    EvalOptions eo;
    eo.complete = !a.judged_only_queries;
    eo.relevance_level = a.qrels.level;
    auto qrels = std::make_shared<const Qrels>(Qrels::load(a.qrels.path));
    Evaluator evaluator(qrels, std::move(measures), eo);

    nlohmann::json json = nlohmann::json::array();
    std::string text, csv = "run,measure,group,n,mean,sd,cv\n";
    for (std::size_t r = 0; r < a.runs.runs.size(); ++r) {
        const auto result = detail::evaluate_run_argument(evaluator, a.runs.runs[r]);
        std::vector<std::string> qids;
        for (const auto& q : result.queries) qids.push_back(q.qid);
        for (const auto& col : result.columns) {
            if (!col.per_query || col.kind != ValueKind::Float) continue;
            const auto values = result.column_values(col.name);
            std::vector<GroupStats> rows{{"all", describe(values, sd)}};
            std::size_t unassigned = 0;
            if (groups) {
                auto g = group_stats(qids, values, *groups, sd, &unassigned);
                rows.insert(rows.end(), g.begin(), g.end());
            }
            text += names[r] + "  " + col.name +
                    (groups ? "  (queries without a group: " + std::to_string(unassigned) + ")"
                            : std::string()) +
                    "\n";
            text += "  " + pad("group", 14) + "  " + pad("n", 6) + "  mean    sd      c_v\n";
            nlohmann::json jrows = nlohmann::json::array();
            for (const auto& g : rows) {
                text += "  " + pad(g.name, 14) + "  " + pad(std::to_string(g.stats.n), 6) + "  " +
                        fixed(g.stats.mean) + "  " + fixed(g.stats.sd) + "  " +
                        fixed_cv(g.stats.cv) + "\n";
                csv += names[r] + "," + col.name + "," + g.name + "," + std::to_string(g.stats.n) +
                       "," + fixed(g.stats.mean, 10) + "," + fixed(g.stats.sd, 10) + "," +
                       (g.stats.cv ? fixed(*g.stats.cv, 10) : "") + "\n";
                jrows.push_back(
                    {{"group", g.name},
                     {"n", g.stats.n},
                     {"mean", g.stats.mean},
                     {"sd", g.stats.sd},
                     {"cv", g.stats.cv ? nlohmann::json(*g.stats.cv) : nlohmann::json(nullptr)}});
            }
            json.push_back({{"run", names[r]},
                            {"measure", col.name},
                            {"unassigned", unassigned},
                            {"groups", jrows}});
        }
    }
    a.out.write(text, csv, json.dump(2) + "\n");
}

// ------------------------------------------------------------------------------------------
// plumb eval-subsets
// ------------------------------------------------------------------------------------------

struct SubsetsArgs {
    detail::QrelsArgs qrels;
    detail::RunArgs runs;
    std::string measure = "mrr_cut.10";
    std::string shown;
    std::string qids;
    std::string types;
    unsigned max_rank = 0;
    detail::OutputArgs out{{"text", "json", "csv"}};
};

void run_subsets(const SubsetsArgs& a) {
    if (a.runs.runs.empty()) throw ConfigError("eval-subsets: give at least one --run");
    if (a.shown.empty() == a.qids.empty())
        throw ConfigError("eval-subsets: give exactly one of --shown and --qids");
    a.out.check();
    const auto names = a.runs.display_names();
    auto measures = MeasureSet::parse({a.measure});
    EvalOptions eo;
    eo.complete = true;  // every judged query; a query missing from the run scores 0
    eo.relevance_level = a.qrels.level;
    auto qrels = std::make_shared<const Qrels>(Qrels::load(a.qrels.path));
    Evaluator evaluator(qrels, std::move(measures), eo);
    std::vector<std::string> columns;
    std::vector<std::vector<std::unordered_map<std::string, double>>> per_run;  // [run][col]
    for (const auto& run : a.runs.runs) {
        const auto result = detail::evaluate_run_argument(evaluator, run);
        if (columns.empty())
            for (const auto& c : result.columns)
                if (c.per_query && c.kind == ValueKind::Float) columns.push_back(c.name);
        std::vector<std::unordered_map<std::string, double>> maps(columns.size());
        for (std::size_t c = 0; c < columns.size(); ++c) {
            const auto idx = static_cast<std::size_t>(result.column_index(columns[c]));
            for (const auto& q : result.queries) maps[c][q.qid] = q.values[idx];
        }
        per_run.push_back(std::move(maps));
    }
    if (columns.empty()) throw ConfigError("eval-subsets: -m must name a per-query measure");

    std::ostringstream text;
    std::string csv;
    nlohmann::json json;
    if (!a.qids.empty()) {
        // Mean over the listed queries that have judgements.
        const auto ids = read_qid_list(a.qids);
        std::vector<std::string> judged;
        for (const auto& q : ids)
            if (qrels->find(q)) judged.push_back(q);
        text << "queries listed: " << ids.size() << "  with judgements: " << judged.size() << "\n"
             << pad("run", 20);
        for (const auto& c : columns) text << "  " << pad(c, 10);
        text << "\n";
        csv = "run,measure,num_queries,mean\n";
        json["queries_listed"] = ids.size();
        json["queries_judged"] = judged.size();
        for (std::size_t r = 0; r < a.runs.runs.size(); ++r) {
            text << pad(names[r], 20);
            for (std::size_t c = 0; c < columns.size(); ++c) {
                double sum = 0;
                for (const auto& q : judged) {
                    auto it = per_run[r][c].find(q);
                    if (it != per_run[r][c].end()) sum += it->second;
                }
                const double mean = judged.empty() ? 0.0 : sum / static_cast<double>(judged.size());
                text << "  " << pad(fixed(mean), 10);
                csv += names[r] + "," + columns[c] + "," + std::to_string(judged.size()) + "," +
                       fixed(mean, 10) + "\n";
                json["runs"][names[r]][columns[c]] = mean;
            }
            text << "\n";
        }
    } else {
        const auto shown = read_shown_ranks(a.shown);
        std::unordered_map<std::string, std::string> types;
        if (!a.types.empty())
            for (auto& [q, t] : read_query_attributes(a.types).rows) types.emplace(q, t);
        csv = "measure,subset,num_queries,run,mean\n";
        for (std::size_t c = 0; c < columns.size(); ++c) {
            std::vector<std::unordered_map<std::string, double>> maps;
            for (const auto& run : per_run) maps.push_back(run[c]);
            const auto rows = survivorship_table(shown, maps, a.max_rank);
            text << columns[c] << " by subset (S_k: queries with a selected passage in ranks "
                 << "1..k; All: every shown query)\n"
                 << pad("rank", 6) << "  " << pad("queries", 8);
            for (const auto& n : names) text << "  " << pad(n, std::max<std::size_t>(n.size(), 8));
            text << "\n";
            nlohmann::json jrows = nlohmann::json::array();
            for (const auto& row : rows) {
                text << pad(row.label, 6) << "  " << pad(std::to_string(row.num_queries), 8);
                nlohmann::json jr{{"subset", row.label}, {"num_queries", row.num_queries}};
                for (std::size_t r = 0; r < names.size(); ++r) {
                    text << "  "
                         << pad(fixed(row.means[r], 5), std::max<std::size_t>(names[r].size(), 8));
                    csv += columns[c] + "," + row.label + "," + std::to_string(row.num_queries) +
                           "," + names[r] + "," + fixed(row.means[r], 10) + "\n";
                    jr["means"][names[r]] = row.means[r];
                }
                text << "\n";
                jrows.push_back(jr);
            }
            json["subsets"][columns[c]] = jrows;
            text << "\n";
        }
        const auto un = unanswered_by_type(shown, types);
        text << "unanswered queries (no selected passage)\n"
             << pad("type", 14) << "  " << pad("total", 8) << "  " << pad("unanswered", 10)
             << "  share\n";
        nlohmann::json ju = nlohmann::json::array();
        for (const auto& u : un) {
            text << pad(u.type, 14) << "  " << pad(std::to_string(u.total), 8) << "  "
                 << pad(std::to_string(u.unanswered), 10) << "  " << fixed(u.share) << "\n";
            ju.push_back({{"type", u.type},
                          {"total", u.total},
                          {"unanswered", u.unanswered},
                          {"share", u.share}});
        }
        json["unanswered"] = ju;
        if (a.out.format == "csv") {
            csv += "\ntype,total,unanswered,share\n";
            for (const auto& u : un)
                csv += u.type + "," + std::to_string(u.total) + "," + std::to_string(u.unanswered) +
                       "," + fixed(u.share, 10) + "\n";
        }
    }
    a.out.write(text.str(), csv, json.dump(2) + "\n");
}

const cli::CommandRegistrar kCompareCommand("compare", [](CLI::App& app) {
    auto a = std::make_shared<CompareArgs>();
    auto* sub = app.add_subcommand(
        "compare", "Compare runs: mean measures with paired t / Wilcoxon tests and marks");
    a->qrels.add(sub, "qrels file (qid iter docid rel)");
    a->runs.add(sub,
                "run file (repeat for each run; >= 2); A,B,... = the parts of one run (e.g. "
                "written by MPI ranks), read as their concatenation");
    sub->add_option("-m,--measure", a->measures,
                    "measure, trec_eval -m syntax (repeatable; default ndcg_cut.10 mrr_cut.10 "
                    "recall.10)");
    sub->add_option("--baseline", a->baseline,
                    "compare every run against this run (name or "
                    "path); default: all pairs");
    sub->add_flag("--all-pairs", a->all_pairs, "test every pair of runs (the default)");
    a->significance.add(sub);
    a->out.add(sub);
    sub->add_option("-M,--max-docs", a->max_docs, "evaluate only the top M documents per query");
    sub->add_option("--decimals", a->decimals, "digits of the means (default 4)")
        ->check(CLI::Range(0, 17));
    sub->add_option("--bias-file", a->bias_file,
                    "passage gender bias (plumb debias gender) for rab_V_cut.k, arab_V_cut.k, "
                    "abs_rab_V_cut.k (V = tc, tf, bool)");
    sub->footer(
        "Queries: every qrels query (as trec_eval -c; a query missing from a run scores 0).\n"
        "Marks: runs get letters a, b, c...; a value carries the letters of the runs it is\n"
        "significantly better than (adjusted p < alpha; family = pairs of one measure).");
    sub->callback([a]() { run_compare(*a); });
});

const cli::CommandRegistrar kGroupsCommand("eval-groups", [](CLI::App& app) {
    auto a = std::make_shared<GroupsArgs>();
    auto* sub = app.add_subcommand(
        "eval-groups",
        "Per-query distribution (mean, sd, c_v = sd/mean) overall and per query group");
    a->qrels.add(sub);
    a->runs.add(sub);
    sub->add_option("-m,--measure", a->measures, "measure (repeatable; default ndcg_cut.10)");
    sub->add_option("--groups", a->groups, "query attribute file qid<TAB>value");
    sub->add_option("--kind", a->kind, "auto | numeric | categorical (default auto)");
    sub->add_option("--quantiles", a->quantiles,
                    "numeric: number of quantile buckets (default 3: easy/medium/hard, low = easy)")
        ->check(plumb::cli::positive_count());
    sub->add_option("--edges", a->edges, "numeric: fixed inner edges e1,e2,... (right-closed)");
    sub->add_option("--labels", a->labels, "bucket names, comma-separated");
    sub->add_option("--sd", a->sd, "population | sample (default population)");
    sub->add_flag("--judged-run-queries-only", a->judged_only_queries,
                  "only queries in both qrels and run (default: every qrels query, missing = 0)");
    a->out.add(sub);
    sub->callback([a]() { run_groups(*a); });
});

const cli::CommandRegistrar kSubsetsCommand("eval-subsets", [](CLI::App& app) {
    auto a = std::make_shared<SubsetsArgs>();
    auto* sub = app.add_subcommand(
        "eval-subsets", "Evaluate on query subsets: a qid list, or the survivorship subsets S_k");
    a->qrels.add(sub);
    a->runs.add(sub);
    sub->add_option("-m,--measure", a->measure, "measure (default mrr_cut.10 = MRR@10)");
    sub->add_option("--shown", a->shown,
                    "annotator-shown ranks: qid<TAB>rank<TAB>docid<TAB>is_selected");
    sub->add_option("--qids", a->qids, "qid list (one per line): mean over these queries");
    sub->add_option("--types", a->types, "query types qid<TAB>type (unanswered share per type)");
    sub->add_option("--max-rank", a->max_rank, "largest k of S_k (default: largest shown rank)");
    a->out.add(sub);
    sub->callback([a]() { run_subsets(*a); });
});

}  // namespace
}  // namespace plumb::eval
