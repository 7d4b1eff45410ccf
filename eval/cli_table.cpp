// `plumb position-table` and `plumb bias-table`: the position-bias paper's Table 3 layout
// (original vs debiased test set per model and training set, Δ %, bold, significance marks) and
// the bias table of the main job (RaB, ARaB, |ΔA-PRF|, MATS). Thin layers over
// eval/position_table.hpp.
#include <map>
#include <memory>
#include <set>
#include <string>
#include <unordered_set>
#include <vector>

#include "eval/detail_cli.hpp"
#include "eval/evaluator.hpp"
#include "eval/position_table.hpp"
#include "eval/qrels.hpp"
#include "eval/run.hpp"
#include "plugin/cli/command.hpp"
#include "plugin/cli/options.hpp"
#include "plugin/cli/output.hpp"
#include "plugin/error.hpp"
#include "plugin/text_io.hpp"

namespace plumb::eval {
namespace {

/// Splits `spec` at its first `n - 1` commas (the last field, a path, may contain commas).
std::vector<std::string> split_spec(const std::string& spec, std::size_t n,
                                    const std::string& option, const std::string& form) {
    std::vector<std::string> out;
    std::size_t start = 0;
    for (std::size_t i = 0; i + 1 < n; ++i) {
        const auto comma = spec.find(',', start);
        if (comma == std::string::npos) break;
        out.emplace_back(trim(std::string_view(spec).substr(start, comma - start)));
        start = comma + 1;
    }
    out.emplace_back(trim(std::string_view(spec).substr(start)));
    if (out.size() != n) throw ConfigError(option + " '" + spec + "': expected " + form);
    for (const auto& f : out)
        if (f.empty())
            throw ConfigError(option + " '" + spec + "': empty field (expected " + form + ")");
    return out;
}

std::string default_label(const std::string& column) {
    static const std::map<std::string, std::string> known = {
        {"ndcg_cut_10", "nDCG@10"}, {"mrr_cut_10", "MRR@10"}, {"recall_10", "Recall@10"},
        {"recip_rank", "MRR"},      {"map", "MAP"},           {"ndcg", "nDCG"}};
    auto it = known.find(column);
    return it == known.end() ? column : it->second;
}

struct PositionArgs {
    detail::QrelsArgs qrels;
    std::string qrels_debiased;
    std::vector<std::string> runs;
    std::vector<std::string> measures;
    std::vector<std::string> labels;
    std::string original_label = "Orig.";
    std::string debiased_label = "Deb.";
    detail::SignificanceArgs significance{"holm"};
    detail::OutputArgs out{{"text", "markdown", "latex", "json"}};
    int decimals = 3;
};

void run_position(const PositionArgs& a) {
    PositionTableOptions o;
    o.test = a.significance.test_kind();
    o.correction = a.significance.correction_kind();
    o.alpha = a.significance.alpha;
    o.original_label = a.original_label;
    o.debiased_label = a.debiased_label;
    const auto format = parse_table_format(a.out.format);
    const std::vector<std::string> specs =
        a.measures.empty() ? std::vector<std::string>{"ndcg_cut.10", "mrr_cut.10", "recall.10"}
                           : a.measures;
    o.columns.clear();
    for (const auto& s : specs) {
        const auto set = MeasureSet::parse({s});
        for (const auto& c : set.columns())
            if (c.per_query && c.kind == ValueKind::Float) o.columns.push_back(c.name);
    }
    if (o.columns.empty()) throw ConfigError("position-table: -m names no per-query measure");
    if (!a.labels.empty()) {
        if (a.labels.size() != o.columns.size())
            throw ConfigError("position-table: " + std::to_string(a.labels.size()) +
                              " --label values for " + std::to_string(o.columns.size()) +
                              " measure columns");
        o.labels = a.labels;
    } else {
        o.labels.clear();
        for (const auto& c : o.columns) o.labels.push_back(default_label(c));
    }

    EvalOptions eo;
    eo.complete = true;  // every judged query in every run (missing = 0): the pairs line up
    eo.relevance_level = a.qrels.level;
    auto qo = std::make_shared<const Qrels>(Qrels::load(a.qrels.path));
    auto qd = a.qrels_debiased.empty()
                  ? qo
                  : std::make_shared<const Qrels>(Qrels::load(a.qrels_debiased));
    Evaluator eval_o(qo, MeasureSet::parse(specs), eo);
    Evaluator eval_d(qd, MeasureSet::parse(specs), eo);

    // (model, training) in order of first appearance -> paths per test set.
    std::vector<std::pair<std::string, std::string>> order;
    std::map<std::pair<std::string, std::string>, std::pair<std::string, std::string>> paths;
    for (const auto& spec : a.runs) {
        const auto f = split_spec(spec, 4, "--run", "MODEL,TRAINING,orig|deb,PATH");
        const std::pair<std::string, std::string> key{f[0], f[1]};
        if (!paths.count(key)) order.push_back(key);
        auto& p = paths[key];
        std::string* slot = nullptr;
        if (f[2] == "orig" || f[2] == "original")
            slot = &p.first;
        else if (f[2] == "deb" || f[2] == "debiased")
            slot = &p.second;
        else
            throw ConfigError("--run '" + spec + "': test set must be orig or deb");
        if (!slot->empty())
            throw ConfigError("--run '" + spec + "': " + f[0] + "/" + f[1] + " " + f[2] +
                              " given twice");
        *slot = f[3];
    }
    std::vector<PositionRow> rows;
    for (const auto& key : order) {
        const auto& [po, pd] = paths[key];
        if (po.empty() || pd.empty())
            throw ConfigError("--run: " + key.first + "/" + key.second +
                              " needs both an orig "
                              "and a deb run");
        PositionRow r;
        r.model = key.first;
        r.training = key.second;
        r.original = eval_o.evaluate_run(po);
        r.debiased = eval_d.evaluate_run(pd);
        rows.push_back(std::move(r));
    }
    if (rows.empty()) throw ConfigError("position-table: give --run specs");
    const auto table = build_position_table(rows, o);
    a.out.write(format_position_table(table, format, a.decimals));
}

struct BiasTableArgs {
    std::vector<std::string> runs;
    std::string bias_file;
    std::string variant = "tc";
    std::size_t cutoff = 10;
    std::string labels;
    detail::QrelsArgs qrels;
    std::vector<std::string> mats;
    std::string baseline;
    std::string queries;
    detail::SignificanceArgs significance{"holm"};
    detail::OutputArgs out{{"text", "markdown", "latex", "json"}};
    int decimals = 4;
};

void run_bias_table(const BiasTableArgs& a) {
    BiasTableOptions o;
    o.cutoff = a.cutoff;
    o.variant = a.variant;
    o.test = a.significance.test_kind();
    o.correction = a.significance.correction_kind();
    o.alpha = a.significance.alpha;
    o.min_relevance = a.qrels.level;
    const auto format = parse_table_format(a.out.format);
    const auto table = read_bias_file(a.bias_file, parse_bias_variant(a.variant));
    if (a.labels.empty() != a.qrels.path.empty())
        throw ConfigError("bias-table: --labels and --qrels go together (|dA-PRF|)");
    std::unordered_map<std::string, int> labels;
    if (!a.labels.empty()) labels = read_bias_labels(a.labels);
    std::unordered_set<std::string> keep;
    if (!a.queries.empty())
        for (auto& q : read_query_subset(a.queries)) keep.insert(std::move(q));

    std::map<std::string, std::string> mats_files;
    for (const auto& spec : a.mats) {
        const auto f = split_spec(spec, 2, "--mats", "RUN_NAME,FILE.json");
        mats_files[f[0]] = f[1];
    }
    std::vector<BiasRow> rows;
    std::set<std::string> names;
    for (const auto& spec : a.runs) {
        const auto f = split_spec(spec, 2, "--run", "NAME,PATH");
        if (!names.insert(f[0]).second) throw ConfigError("--run: name '" + f[0] + "' repeats");
        const Run run = read_run(f[1]);
        BiasRow r;
        r.name = f[0];
        r.rankings = rankings_from_run(run);
        r.scored = scored_rankings_from_run(run);
        if (!keep.empty()) {
            std::erase_if(r.rankings, [&](const QueryRanking& q) { return !keep.count(q.qid); });
            std::erase_if(r.scored, [&](const ScoredRanking& q) { return !keep.count(q.qid); });
        }
        if (auto it = mats_files.find(f[0]); it != mats_files.end())
            r.mats = read_mats_json(it->second);
        rows.push_back(std::move(r));
    }
    for (const auto& [name, file] : mats_files)
        if (!names.count(name))
            throw ConfigError("--mats '" + name + "," + file + "': no --run named '" + name + "'");
    if (rows.empty()) throw ConfigError("bias-table: give --run specs");
    if (!a.baseline.empty()) {
        for (std::size_t i = 0; i < rows.size(); ++i)
            if (rows[i].name == a.baseline) o.baseline = i;
        if (!o.baseline)
            throw ConfigError("bias-table: --baseline '" + a.baseline + "' is not a run");
    }
    const Qrels qrels = a.qrels.path.empty() ? Qrels() : Qrels::load(a.qrels.path);
    const auto report = build_bias_table(rows, table, labels, qrels, o);
    a.out.write(format_bias_table(report, format, a.decimals));
}

const cli::CommandRegistrar kPositionTableCommand("position-table", [](CLI::App& app) {
    auto a = std::make_shared<PositionArgs>();
    auto* sub = app.add_subcommand(
        "position-table",
        "Table 3 of the position-bias paper: models x training sets on the original and the "
        "debiased test set, delta %, bold = smallest |delta| per block, significance marks");
    a->qrels.add(sub, "qrels of the original test set");
    sub->add_option("--qrels-debiased", a->qrels_debiased,
                    "qrels of the debiased test set (default: --qrels)");
    sub->add_option("--run", a->runs,
                    "MODEL,TRAINING,orig|deb,PATH (repeat; each model/training needs both)")
        ->required();
    sub->add_option("-m,--measure", a->measures,
                    "measure, trec_eval -m syntax (repeatable; default ndcg_cut.10 mrr_cut.10 "
                    "recall.10)");
    sub->add_option("--label", a->labels, "heading per measure column (repeat, in order)");
    sub->add_option("--original-label", a->original_label, "heading of the original test set");
    sub->add_option("--debiased-label", a->debiased_label, "heading of the debiased test set");
    a->significance.add(sub);
    a->out.add(sub);
    sub->add_option("--decimals", a->decimals, "digits of the means (default 3)")
        ->check(CLI::Range(0, 17));
    sub->footer(
        "Delta % = (Deb - Orig) / Deb (paper 000). Bold (**x**): smallest |delta| of a model's "
        "rows per\n"
        "measure. Dagger: Orig vs Deb significant for that row (paired by qid; family = rows of\n"
        "one measure). ^ab: better than the model's training rows a, b on the same test set.\n"
        "Queries: every qrels query (as trec_eval -c; missing from a run = 0).");
    sub->callback([a]() { run_position(*a); });
});

const cli::CommandRegistrar kBiasTableCommand("bias-table", [](CLI::App& app) {
    auto a = std::make_shared<BiasTableArgs>();
    auto* sub = app.add_subcommand(
        "bias-table",
        "Bias table: RaB@t, ARaB@t (male - female), |dA-PRF| and MATS per run, with marks");
    sub->add_option("--run", a->runs, "NAME,PATH (repeat, one row each)")->required();
    sub->add_option("--bias-file", a->bias_file,
                    "per-passage bias file (plumb debias gender --output; combined or one variant)")
        ->required();
    sub->add_option("--variant", a->variant, "tc | tf | bool (default tc)");
    sub->add_option("--cutoff", a->cutoff, "t of RaB@t / ARaB@t (default 10)")
        ->check(plumb::cli::positive_count());
    sub->add_option("--labels", a->labels,
                    "passage labels docid<TAB>d for |dA-PRF| (plumb debias gender: BIAS.ibbr.tsv)");
    a->qrels.add(sub, "qrels for |dA-PRF| (with --labels)", false,
                 "minimum relevant grade for PRF (default 1)");
    sub->add_option("--mats", a->mats,
                    "RUN_NAME,FILE.json: MATS of that row's model (plumb debias mats; repeat)");
    sub->add_option("--queries", a->queries,
                    "query subset: qid, qid<TAB>... or qid,... lines (first field: qid)");
    sub->add_option("--baseline", a->baseline,
                    "test every row against this row (default: all pairs)");
    a->significance.add(sub);
    a->out.add(sub);
    sub->add_option("--decimals", a->decimals, "digits (default 4)")->check(CLI::Range(0, 17));
    sub->footer(
        "^ab on RaB/ARaB: this row is significantly less biased than rows a, b (paired test on\n"
        "the signed per-query values; the smaller |mean| wins). |dA-PRF| and MATS: no test.");
    sub->callback([a]() { run_bias_table(*a); });
});

}  // namespace
}  // namespace plumb::eval
