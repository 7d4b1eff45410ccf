// `plumb debias complexity`: linguistic complexity of queries (paper 003) and, given qrels and a
// run, the EqualizeIR evaluation (μ, σ, c_v of a per-query measure, overall and per bucket).
// Registered after `plumb debias` (name order) and added to it as subcommands.
#include <fmt/format.h>

#include <cmath>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>

#include "debias/complexity.hpp"
#include "debias/detail_cli.hpp"
#include "debias/plot.hpp"
#include "eval/distribution.hpp"
#include "eval/evaluator.hpp"
#include "index/corpus.hpp"
#include "plugin/cli/command.hpp"
#include "plugin/cli/options.hpp"
#include "plugin/cli/progress_bar.hpp"
#include "plugin/error.hpp"
#include "plugin/text_io.hpp"

namespace {

using nlohmann::json;

json stats_json(const plumb::eval::DistributionStats& s) {
    json j = {{"n", s.n}, {"mean", s.mean}, {"sd", s.sd}};
    j["cv"] = s.cv ? json(*s.cv) : json(nullptr);
    return j;
}

std::string cv_text(const plumb::eval::DistributionStats& s) {
    return s.cv ? fmt::format("{:.4f}", *s.cv) : "-";
}

struct ComplexityArgs {
    std::string topics, output, wordnet = "/usr/share/wordnet", qrels, run;
    std::string measure = "ndcg_cut.10";
    std::string topic_field = "title";
    std::size_t buckets = 3;
    bool quiet = false;
};

void run_complexity(const ComplexityArgs& a) {
    plumb::index::TopicReadOptions topic_options;
    topic_options.fields = plumb::index::parse_topic_fields(a.topic_field);
    auto queries = plumb::index::read_topics(a.topics, topic_options);
    plumb::debias::ComplexityOptions opt;
    opt.buckets = a.buckets;
    plumb::debias::ComplexityAnalyzer analyzer(a.wordnet, opt);
    std::vector<plumb::debias::QueryComplexity> rows;
    {
        plumb::cli::ProgressBar bar("complexity", "queries", !a.quiet);
        for (std::size_t i = 0; i < queries.size(); ++i) {
            rows.push_back(analyzer.analyze(queries[i]));
            bar.update(i + 1, queries.size());
        }
    }
    plumb::debias::finalize_complexity(rows, a.buckets);
    plumb::debias::write_complexity_tsv(a.output + ".tsv", rows);

    std::vector<std::string> bucket_names;
    for (const auto& r : rows) {
        if (std::find(bucket_names.begin(), bucket_names.end(), r.bucket) == bucket_names.end()) {
            bucket_names.push_back(r.bucket);
        }
    }
    std::sort(bucket_names.begin(), bucket_names.end(), [](const auto& x, const auto& y) {
        auto rank = [](const std::string& s) {
            return s == "easy" ? 0 : s == "medium" ? 1 : s == "hard" ? 2 : 3;
        };
        return std::make_pair(rank(x), x) < std::make_pair(rank(y), y);
    });
    json report;
    report["queries"] = rows.size();
    std::size_t unparsed = 0;
    for (const auto& r : rows) unparsed += r.counts.parsed ? 0 : 1;
    report["unparsed_queries"] = unparsed;
    std::string text = fmt::format("linguistic complexity of {} queries ({} without a full parse)\n",
                                   rows.size(), unparsed);
    text += fmt::format("{:<8} {:>6} {:>12}\n", "bucket", "n", "mean score");
    for (const auto& b : bucket_names) {
        std::vector<double> s;
        for (const auto& r : rows) {
            if (r.bucket == b) s.push_back(r.score);
        }
        auto st = plumb::eval::describe(s);
        report["buckets"][b]["complexity"] = stats_json(st);
        text += fmt::format("{:<8} {:>6} {:>12.4f}\n", b, st.n, st.mean);
    }

    if (!a.qrels.empty()) {
        if (a.run.empty()) throw plumb::InvalidArgument("debias complexity: --qrels needs --run");
        auto result = plumb::eval::evaluate_files(a.qrels, a.run, {a.measure});
        if (result.columns.size() != 1) {
            throw plumb::InvalidArgument("debias complexity: -m must name one measure with one "
                                         "cutoff, got '" + a.measure + "'");
        }
        const std::string column = result.columns[0].name;
        std::map<std::string, std::string> bucket_of;
        for (const auto& r : rows) bucket_of[r.qid] = r.bucket;
        std::vector<double> all;
        std::map<std::string, std::vector<double>> per;
        for (const auto& q : result.queries) {
            auto it = bucket_of.find(q.qid);
            if (it == bucket_of.end()) continue;  // evaluated query not in the topics file
            all.push_back(q.values[0]);
            per[it->second].push_back(q.values[0]);
        }
        auto overall = plumb::eval::describe(all);
        report["measure"] = column;
        report["overall"] = stats_json(overall);
        text += fmt::format("\n{} by complexity bucket (EqualizeIR: mu up, sigma and c_v down)\n",
                            column);
        text += fmt::format("{:<8} {:>6} {:>8} {:>8} {:>8}\n", "bucket", "n", "mu", "sigma", "c_v");
        text += fmt::format("{:<8} {:>6} {:>8.4f} {:>8.4f} {:>8}\n", "all", overall.n,
                            overall.mean, overall.sd, cv_text(overall));
        plumb::debias::BarChart chart;
        chart.title = column + " by query complexity";
        chart.x_label = "complexity bucket";
        chart.y_label = column;
        plumb::debias::PlotSeries series;
        series.name = column;
        for (const auto& b : bucket_names) {
            auto st = plumb::eval::describe(per[b]);
            report["buckets"][b]["measure"] = stats_json(st);
            text += fmt::format("{:<8} {:>6} {:>8.4f} {:>8.4f} {:>8}\n", b, st.n, st.mean, st.sd,
                                cv_text(st));
            chart.categories.push_back(b);
            series.values.push_back(st.mean);
            series.sd.push_back(st.sd);
        }
        chart.series.push_back(series);
        plumb::debias::write_bar_chart(chart, a.output + "." + column);
    }
    plumb::AtomicFile jf(a.output + ".json");
    jf.write(report.dump(2) + "\n");
    jf.commit();
    plumb::AtomicFile tf(a.output + ".txt");
    tf.write(text);
    tf.commit();
    std::fputs(text.c_str(), stdout);
}

void add_complexity(CLI::App& app) {
    auto [c, a] = plumb::cli::add_command<ComplexityArgs>(
        plumb::debias::detail::debias_command(app), "complexity",
        "Linguistic complexity of queries (Lu's lexical and syntactic indices), buckets, and a "
        "measure's mu/sigma/c_v per bucket",
        run_complexity);
    plumb::cli::add_topics_options(c, a->topics, a->topic_field);
    c->add_option("--output,-o", a->output,
                  "Output prefix: PREFIX.tsv (per query), .json, .txt, and with --run a plot "
                  "PREFIX.<measure>.png/.svg")
        ->required();
    c->add_option("--buckets", a->buckets, "Quantile buckets (3 = easy/medium/hard)")
        ->capture_default_str();
    c->add_option("--wordnet", a->wordnet, "WordNet dictionary folder")->capture_default_str();
    c->add_option("--qrels", a->qrels, "Qrels for the per-bucket evaluation");
    c->add_option("--run", a->run, "Run to evaluate per bucket");
    c->add_option("-m,--measure", a->measure, "trec_eval measure with one cutoff")
        ->capture_default_str();
    plumb::cli::add_quiet_flag(c, a->quiet, "No progress bar");
}

const plumb::cli::CommandRegistrar kRegistrar{"debias.complexity", add_complexity};

}  // namespace
