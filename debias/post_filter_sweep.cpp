#include "debias/post_filter_sweep.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <unordered_set>

#include "debias/plot.hpp"
#include "debias/post_filters.hpp"
#include "eval/evaluator.hpp"
#include "plugin/atomic_directory.hpp"
#include "plugin/error.hpp"
#include "plugin/text_io.hpp"
#include "plugin/trec_run.hpp"

namespace plumb::debias {
namespace {

using nlohmann::json;

/// "0.05", "0.3", "inf": the shortest text that reads back to the value (%.6g is enough for
/// settings typed by a user).
std::string value_text(double v) {
    if (std::isinf(v)) return "inf";
    return fmt::format("{:.6g}", v);
}

/// A measure's mean over the judged queries, by trec_eval name.
double mean_of(const eval::EvalResult& result, const std::string& name) {
    return result.summary_value(name);
}

std::string bias_variant_text(eval::BiasVariant v) { return eval::bias_variant_name(v); }

}  // namespace

std::string SweepRow::label() const {
    if (parameter.empty()) return filter;
    return filter + " " + parameter + "=" + value_text(value);
}

namespace {

/// The table the measures use: the filters' own (shared) copy of the bias file, or computed from
/// the passages' text for every docid of `lists`.
std::shared_ptr<const eval::BiasTable> measure_bias_table(const std::vector<RankedList>& lists,
                                                          const PostFilterSweepOptions& options,
                                                          StageContext& ctx) {
    if (!options.bias_file.empty())
        return shared_bias_table(ctx, ctx.resolve(options.bias_file), options.variant);
    if (options.words.empty())
        throw InvalidArgument("post-filter sweep: a bias file or a gender word list is needed");
    if (!ctx.documents())
        throw InvalidArgument(
            "post-filter sweep: a gender word list needs passage text (a corpus or an index)");
    const auto words = eval::GenderWordList::load(ctx.resolve(options.words));
    std::vector<std::string> docids;
    std::unordered_set<std::string> seen;
    for (const auto& l : lists)
        for (const auto& c : l.candidates)
            if (seen.insert(c.docid).second) docids.push_back(c.docid);
    return std::make_shared<const eval::BiasTable>(
        eval::compute_bias_table(docids, *ctx.documents(), words, options.variant));
}

}  // namespace

PostFilterSweep sweep_post_filters(const std::vector<RankedList>& lists,
                                   std::shared_ptr<const eval::Qrels> qrels,
                                   const PostFilterSweepOptions& options, StageContext& ctx,
                                   const ProgressCallback& progress, const CancelToken* cancel) {
    if (options.k == 0) throw InvalidArgument("post-filter sweep: k must be at least 1");
    const auto bias = measure_bias_table(lists, options, ctx);
    const std::string variant = bias_variant_text(options.variant);
    const std::string k = std::to_string(options.k);

    // The evaluator with the bias table of the variant (the one the filters see).
    eval::EvalOptions eval_options;
    eval_options.relevance_level = options.relevance_level;
    eval_options.use_list_order = false;  // filters rewrite scores to follow the new order
    eval_options.bias_tables[static_cast<int>(options.variant)] = bias;
    const auto measures = eval::MeasureSet::parse(
        {"ndcg_cut." + k, "mrr_cut." + k, "rab_" + variant + "_cut." + k,
         "abs_rab_" + variant + "_cut." + k, "arab_" + variant + "_cut." + k});
    const eval::Evaluator evaluator(std::move(qrels), measures, eval_options);
    const std::string suffix = "_cut_" + k;

    // The filters' configurations, one per setting, built by their factories.
    struct Setting {
        std::string filter, parameter;
        double value;
        json config;
    };
    std::vector<Setting> settings;
    for (double p : options.fair_p) {
        json c = {{"type", "fair_topk"},
                  {"k", options.k},
                  {"p", p},
                  {"alpha", options.alpha},
                  {"adjust_alpha", options.adjust_alpha},
                  {"protected", options.protected_group}};
        settings.push_back({"fair_topk", "p", p, std::move(c)});
    }
    for (double b : options.budgets) {
        if (std::isnan(b) || b < 0)
            throw InvalidArgument("post-filter sweep: budget " + value_text(b) +
                                  " is not a number >= 0");
        json c = {{"type", "bias_balance"}, {"k", options.k}, {"depth", options.depth}};
        if (std::isinf(b))
            c["budget"] = "inf";
        else
            c["budget"] = b;
        settings.push_back({"bias_balance", "budget", b, std::move(c)});
    }

    for (auto& setting : settings) {  // the bias source of the filters
        setting.config["variant"] = variant;
        if (!options.bias_file.empty())
            setting.config["bias_file"] = options.bias_file;
        else
            setting.config["words"] = options.words;
    }

    PostFilterSweep out;
    out.k = options.k;
    out.variant = variant;
    auto measure_row = [&](SweepRow& row) {
        const auto result = evaluator.evaluate(row.lists);
        row.ndcg = mean_of(result, "ndcg" + suffix);
        row.mrr = mean_of(result, "mrr" + suffix);
        row.rab = mean_of(result, "rab_" + variant + suffix);
        row.abs_rab = mean_of(result, "abs_rab_" + variant + suffix);
        row.arab = mean_of(result, "arab_" + variant + suffix);
        return result.queries.size();
    };
    SweepRow none;
    none.filter = "none";
    none.lists = lists;
    out.queries = measure_row(none);
    out.rows.push_back(std::move(none));

    const auto total = static_cast<std::uint64_t>(settings.size());
    if (progress) progress(0, total);
    for (std::size_t s = 0; s < settings.size(); ++s) {
        if (cancel && cancel->requested()) throw Error("post-filter sweep cancelled");
        auto& setting = settings[s];
        const auto made = make_post_filter(setting.config, ctx);
        const auto* filter = dynamic_cast<const BiasPostFilter*>(made.get());
        if (!filter)
            throw InvalidArgument("post-filter sweep: '" + setting.filter +
                                  "' is not a "
                                  "bias-aware post-filter");
        SweepRow row;
        row.filter = setting.filter;
        row.parameter = setting.parameter;
        row.value = setting.value;
        row.lists = lists;
        double loss = 0.0;
        for (auto& list : row.lists) {
            const Query query{list.qid, {}};
            const auto report = filter->apply_with_report(query, list);
            row.changed += report.changed;
            row.infeasible += !report.feasible;
            loss += report.score_loss;
        }
        row.score_loss = row.lists.empty() ? 0.0 : loss / static_cast<double>(row.lists.size());
        measure_row(row);
        out.rows.push_back(std::move(row));
        if (progress) progress(s + 1, total);
    }
    return out;
}

namespace {

struct Cell {
    std::vector<std::string> header;
    std::vector<std::vector<std::string>> rows;
};

Cell table_cells(const PostFilterSweep& sweep) {
    const std::string k = std::to_string(sweep.k);
    Cell t;
    t.header = {"filter",          "setting",   "nDCG@" + k, "MRR@" + k,   "RaB@" + k,
                "|RaB@" + k + "|", "ARaB@" + k, "changed",   "infeasible", "score loss"};
    for (const auto& r : sweep.rows) {
        const bool none = r.parameter.empty();
        t.rows.push_back({r.filter, none ? "-" : r.parameter + "=" + value_text(r.value),
                          fmt::format("{:.4f}", r.ndcg), fmt::format("{:.4f}", r.mrr),
                          fmt::format("{:.4f}", r.rab), fmt::format("{:.4f}", r.abs_rab),
                          fmt::format("{:.4f}", r.arab), none ? "-" : std::to_string(r.changed),
                          r.filter == "fair_topk" ? std::to_string(r.infeasible) : "-",
                          r.filter == "bias_balance" ? fmt::format("{:.4f}", r.score_loss) : "-"});
    }
    return t;
}

std::string caption(const PostFilterSweep& sweep) {
    return fmt::format(
        "Post-filters at several settings: {} judged queries, cutoff {}, passage bias variant {} "
        "(RaB = male - female; |RaB| is the per-query absolute value averaged).",
        sweep.queries, sweep.k, sweep.variant);
}

}  // namespace

std::string sweep_text(const PostFilterSweep& sweep) {
    const auto t = table_cells(sweep);
    std::vector<std::size_t> w(t.header.size());
    for (std::size_t c = 0; c < w.size(); ++c) {
        w[c] = t.header[c].size();
        for (const auto& r : t.rows) w[c] = std::max(w[c], r[c].size());
    }
    auto line = [&](const std::vector<std::string>& cells) {
        std::string out;
        for (std::size_t c = 0; c < cells.size(); ++c) {
            if (c) out += "  ";
            // Names left-aligned, numbers right-aligned.
            const std::string padding(w[c] - cells[c].size(), ' ');
            out += c < 2 ? cells[c] + padding : padding + cells[c];
        }
        while (!out.empty() && out.back() == ' ') out.pop_back();
        return out + "\n";
    };
    std::string out = caption(sweep) + "\n" + line(t.header);
    for (const auto& r : t.rows) out += line(r);
    return out;
}

std::string sweep_markdown(const PostFilterSweep& sweep) {
    const auto t = table_cells(sweep);
    auto line = [](const std::vector<std::string>& cells) {
        std::string out = "|";
        for (const auto& c : cells) {
            std::string escaped;
            for (char ch : c) escaped += ch == '|' ? std::string("\\|") : std::string(1, ch);
            out += " " + escaped + " |";
        }
        return out + "\n";
    };
    std::string out = caption(sweep) + "\n\n" + line(t.header) + "|";
    for (std::size_t c = 0; c < t.header.size(); ++c) out += c < 2 ? "---|" : "---:|";
    out += "\n";
    for (const auto& r : t.rows) out += line(r);
    return out;
}

nlohmann::json sweep_json(const PostFilterSweep& sweep) {
    json rows = json::array();
    for (const auto& r : sweep.rows) {
        json row = {{"filter", r.filter},   {"ndcg", r.ndcg},
                    {"mrr", r.mrr},         {"rab", r.rab},
                    {"abs_rab", r.abs_rab}, {"arab", r.arab},
                    {"changed", r.changed}, {"run", sweep_run_file_name(r)}};
        if (!r.parameter.empty()) {
            row["parameter"] = r.parameter;
            // JSON has no infinity: an unbounded budget is the string "inf".
            if (std::isinf(r.value))
                row["value"] = "inf";
            else
                row["value"] = r.value;
        }
        if (r.filter == "fair_topk") row["infeasible"] = r.infeasible;
        if (r.filter == "bias_balance") row["score_loss"] = r.score_loss;
        rows.push_back(std::move(row));
    }
    return {{"k", sweep.k},
            {"queries", sweep.queries},
            {"variant", sweep.variant},
            {"rows", std::move(rows)}};
}

void write_sweep_plot(const PostFilterSweep& sweep, const std::filesystem::path& prefix) {
    ScatterChart chart;
    const std::string k = std::to_string(sweep.k);
    chart.title = "Cost of fairness: |RaB@" + k + "| against nDCG@" + k;
    chart.x_label = "nDCG@" + k;
    chart.y_label = "|RaB@" + k + "| (" + sweep.variant + ")";
    for (const auto& r : sweep.rows) {
        auto it = std::find_if(chart.series.begin(), chart.series.end(),
                               [&](const XYSeries& s) { return s.name == r.filter; });
        if (it == chart.series.end()) {
            chart.series.push_back({r.filter, {}, {}, {}, r.filter != "none"});
            it = std::prev(chart.series.end());
        }
        it->x.push_back(r.ndcg);
        it->y.push_back(r.abs_rab);
        it->labels.push_back(r.parameter.empty()
                                 ? "unfiltered"
                                 : (r.parameter == "budget" ? "B=" : "p=") + value_text(r.value));
    }
    write_scatter_chart(chart, prefix);
}

std::string sweep_run_file_name(const SweepRow& row) {
    if (row.parameter.empty()) return row.filter + ".run";
    return row.filter + "_" + row.parameter + value_text(row.value) + ".run";
}

void write_sweep(const PostFilterSweep& sweep, const std::filesystem::path& dir,
                 const std::string& tag) {
    AtomicDirectory out(dir);
    for (const auto& r : sweep.rows)
        write_trec_run((out.path() / sweep_run_file_name(r)).string(), r.lists, tag);
    auto write_text = [&](const char* name, const std::string& text) {
        AtomicFile f(out.path() / name);
        f.write(text);
        f.commit();
    };
    write_text("sweep.txt", sweep_text(sweep));
    write_text("sweep.md", sweep_markdown(sweep));
    write_text("sweep.json", sweep_json(sweep).dump(2) + "\n");
    write_sweep_plot(sweep, out.path() / "sweep");
    out.commit();
}

}  // namespace plumb::debias
