#include "eval/position_table.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <unordered_set>

#include "plugin/error.hpp"
#include "plugin/json.hpp"

namespace plumb::eval {

TableFormat parse_table_format(std::string_view name) {
    if (name == "text") return TableFormat::Text;
    if (name == "markdown" || name == "md") return TableFormat::Markdown;
    if (name == "latex") return TableFormat::Latex;
    if (name == "json") return TableFormat::Json;
    throw InvalidArgument("unknown table format '" + std::string(name) +
                          "' (known: text, markdown, latex, json)");
}

namespace {

constexpr double kTieTolerance = 1e-12;

std::string num(double v, int decimals) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
    return buf;
}

std::string percent(const std::optional<double>& d) {
    if (!d) return "-";
    char buf[64];
    double v = *d * 100.0;
    if (std::fabs(v) < 0.05) v = 0.0;  // print 0.0% instead of -0.0%
    std::snprintf(buf, sizeof buf, "%+.1f%%", v);
    return buf;
}

std::string pad(const std::string& s, std::size_t w) {
    // Width in code points (the table contains Δ, †, ...: UTF-8).
    std::size_t cps = 0;
    for (unsigned char ch : s)
        if ((ch & 0xC0) != 0x80) ++cps;
    return cps >= w ? s : s + std::string(w - cps, ' ');
}

std::size_t width(const std::string& s) {
    std::size_t cps = 0;
    for (unsigned char ch : s)
        if ((ch & 0xC0) != 0x80) ++cps;
    return cps;
}

/// Renders a grid: `header` rows then body rows, columns padded; `sep` between columns.
std::string render_text(const std::vector<std::vector<std::string>>& lines) {
    std::vector<std::size_t> w;
    for (const auto& l : lines) {
        if (w.size() < l.size()) w.resize(l.size(), 0);
        for (std::size_t c = 0; c < l.size(); ++c) w[c] = std::max(w[c], width(l[c]));
    }
    std::string out;
    for (const auto& l : lines) {
        std::string line;
        for (std::size_t c = 0; c < l.size(); ++c) line += (c ? "  " : "") + pad(l[c], w[c]);
        while (!line.empty() && line.back() == ' ') line.pop_back();
        out += line + "\n";
    }
    return out;
}

/// A Markdown table cell: '|' (as in |RaB|) escaped so that it does not end the cell.
std::string md_cell(const std::string& s) {
    std::string out;
    for (char ch : s) {
        if (ch == '|') out += '\\';
        out += ch;
    }
    return out;
}

std::string render_markdown(const std::vector<std::string>& header,
                            const std::vector<std::vector<std::string>>& body,
                            std::size_t left_columns) {
    std::string out = "|";
    for (const auto& h : header) out += " " + md_cell(h) + " |";
    out += "\n|";
    for (std::size_t c = 0; c < header.size(); ++c) out += c < left_columns ? "---|" : "---:|";
    out += "\n";
    for (const auto& row : body) {
        out += "|";
        for (const auto& cell : row) out += " " + md_cell(cell) + " |";
        out += "\n";
    }
    return out;
}

/// Pairs of `results` (same column names) tested with compare_runs and the given options.
ComparisonTable compare(const std::vector<std::string>& names,
                        const std::vector<EvalResult>& results,
                        const std::vector<std::string>& columns, TestKind test,
                        Correction correction, double alpha, const WilcoxonOptions& wilcoxon,
                        std::optional<std::size_t> baseline = std::nullopt) {
    CompareOptions o;
    o.columns = columns;
    o.test = test;
    o.correction = correction;
    o.alpha = alpha;
    o.wilcoxon = wilcoxon;
    o.baseline = baseline;
    return compare_runs(names, results, o);
}

void check_columns(const EvalResult& r, const std::vector<std::string>& columns,
                   const std::string& what) {
    for (const auto& c : columns)
        if (r.column_index(c) < 0)
            throw InvalidArgument("position table: measure '" + c + "' not computed for " + what);
}

}  // namespace

PositionTable build_position_table(const std::vector<PositionRow>& rows,
                                   const PositionTableOptions& options) {
    if (rows.empty()) throw InvalidArgument("position table: no rows");
    if (options.columns.empty()) throw InvalidArgument("position table: no measure columns");
    if (options.labels.size() != options.columns.size())
        throw InvalidArgument("position table: " + std::to_string(options.labels.size()) +
                              " labels for " + std::to_string(options.columns.size()) +
                              " measures");
    if (!(options.alpha > 0.0 && options.alpha < 1.0))
        throw InvalidArgument("position table: alpha must be in (0, 1)");
    std::set<std::pair<std::string, std::string>> seen;
    for (const auto& r : rows) {
        if (!seen.emplace(r.model, r.training).second)
            throw InvalidArgument("position table: row (" + r.model + ", " + r.training +
                                  ") given twice");
        check_columns(r.original, options.columns, r.model + "/" + r.training + " (original)");
        check_columns(r.debiased, options.columns, r.model + "/" + r.training + " (debiased)");
    }

    PositionTable table;
    table.options = options;
    const std::size_t nm = options.columns.size();

    // Model blocks in order of first appearance; letters within a block.
    std::vector<std::string> models;
    std::map<std::string, std::vector<std::size_t>> block;
    for (std::size_t i = 0; i < rows.size(); ++i) {
        if (!block.count(rows[i].model)) models.push_back(rows[i].model);
        block[rows[i].model].push_back(i);
    }

    table.rows.resize(rows.size());
    // Orig vs Deb per row (raw p-values; corrected across rows below).
    for (std::size_t i = 0; i < rows.size(); ++i) {
        auto& out = table.rows[i];
        out.model = rows[i].model;
        out.training = rows[i].training;
        const auto& b = block[rows[i].model];
        out.letter =
            run_letter(static_cast<std::size_t>(std::find(b.begin(), b.end(), i) - b.begin()));
        const auto cmp =
            compare({"original", "debiased"}, {rows[i].original, rows[i].debiased}, options.columns,
                    options.test, Correction::None, options.alpha, options.wilcoxon);
        out.num_queries = cmp.num_queries;
        out.cells.resize(nm);
        for (const auto& p : cmp.pairs) {
            auto& cell = out.cells[p.column];
            cell.test = p;
            cell.original = cmp.means[0][p.column];
            cell.debiased = cmp.means[1][p.column];
            // Paper 000 (Table 3): relative to the debiased (rotated) test set, e.g. TK nDCG@10
            // 0.371 -> 0.307 is (0.307 - 0.371) / 0.307 = -20.8 %.
            if (cell.debiased != 0.0) cell.delta = (cell.debiased - cell.original) / cell.debiased;
        }
    }
    for (std::size_t c = 0; c < nm; ++c) {
        std::vector<double> pt, pw;
        for (const auto& r : table.rows) {
            pt.push_back(r.cells[c].test.t ? r.cells[c].test.t->p_value : 1.0);
            pw.push_back(r.cells[c].test.wilcoxon ? r.cells[c].test.wilcoxon->p_value : 1.0);
        }
        const auto at = adjust_p_values(pt, options.correction);
        const auto aw = adjust_p_values(pw, options.correction);
        for (std::size_t i = 0; i < table.rows.size(); ++i) {
            auto& cell = table.rows[i].cells[c];
            cell.test.p_t_adjusted = at[i];
            cell.test.p_wilcoxon_adjusted = aw[i];
            cell.test.significant =
                pair_significant(cell.test, options.test, options.alpha, table.rows[i].num_queries);
            cell.delta_significant = cell.test.significant;
        }
    }

    // Bold and training-type marks per model block.
    for (const auto& m : models) {
        const auto& b = block[m];
        for (std::size_t c = 0; c < nm; ++c) {
            std::optional<double> best;
            std::size_t defined = 0;
            for (auto i : b) {
                const auto& d = table.rows[i].cells[c].delta;
                if (!d) continue;
                ++defined;
                if (!best || std::fabs(*d) < *best) best = std::fabs(*d);
            }
            if (defined >= 2)
                for (auto i : b) {
                    auto& cell = table.rows[i].cells[c];
                    cell.bold = cell.delta && std::fabs(*cell.delta) <= *best + kTieTolerance;
                }
        }
        if (b.size() < 2) continue;
        std::vector<std::string> names;
        std::vector<EvalResult> orig, deb;
        for (auto i : b) {
            names.push_back(rows[i].training);
            orig.push_back(rows[i].original);
            deb.push_back(rows[i].debiased);
        }
        const auto co = compare(names, orig, options.columns, options.test, options.correction,
                                options.alpha, options.wilcoxon);
        const auto cd = compare(names, deb, options.columns, options.test, options.correction,
                                options.alpha, options.wilcoxon);
        for (std::size_t k = 0; k < b.size(); ++k)
            for (std::size_t c = 0; c < nm; ++c) {
                table.rows[b[k]].cells[c].marks_original = co.marks(k, c);
                table.rows[b[k]].cells[c].marks_debiased = cd.marks(k, c);
            }
    }
    return table;
}

std::string format_position_table(const PositionTable& t, TableFormat format, int decimals) {
    const auto& o = t.options;
    const std::size_t nm = o.columns.size();
    auto value = [&](double v, const std::string& marks, bool latex) {
        std::string s = num(v, decimals);
        if (marks.empty()) return s;
        return latex ? s + "$^{" + marks + "}$" : s + "^" + marks;
    };
    auto delta = [&](const PositionCell& cell, TableFormat f) {
        std::string s = percent(cell.delta);
        if (f == TableFormat::Latex) {
            s = latex_escape(s);
            if (cell.delta_significant) s += "$^\\dagger$";
            if (cell.bold) s = "\\textbf{" + s + "}";
        } else {
            if (cell.delta_significant) s += "†";
            if (cell.bold) s = "**" + s + "**";
        }
        return s;
    };
    std::string legend = "Δ % = (" + o.debiased_label + " - " + o.original_label + ") / " +
                         o.debiased_label +
                         "; **bold**: smallest |Δ| of the model's block; †: " + o.original_label +
                         " vs " + o.debiased_label +
                         " significant; ^ab: better than the model's training rows a, b on that "
                         "test set (test: " +
                         test_kind_name(o.test) + ", correction: " + correction_name(o.correction) +
                         ", alpha: " + num(o.alpha, 2) + ")";
    std::string out;
    switch (format) {
        case TableFormat::Text: {
            std::vector<std::vector<std::string>> lines;
            std::vector<std::string> h1{"", "", ""}, h2{"Model", "Training", "Sig"};
            for (std::size_t c = 0; c < nm; ++c) {
                h1.insert(h1.end(), {o.labels[c], "", ""});
                h2.insert(h2.end(), {o.original_label, o.debiased_label, "Δ"});
            }
            h1.push_back("");
            h2.push_back("queries");
            lines.push_back(h1);
            lines.push_back(h2);
            std::string prev;
            for (const auto& r : t.rows) {
                std::vector<std::string> l{r.model == prev ? "" : r.model, r.training, r.letter};
                prev = r.model;
                for (const auto& cell : r.cells) {
                    l.push_back(value(cell.original, cell.marks_original, false));
                    l.push_back(value(cell.debiased, cell.marks_debiased, false));
                    l.push_back(delta(cell, format));
                }
                l.push_back(std::to_string(r.num_queries));
                lines.push_back(l);
            }
            out = render_text(lines) + legend + "\n";
            break;
        }
        case TableFormat::Markdown: {
            std::vector<std::string> header{"Model", "Training", "Sig"};
            for (std::size_t c = 0; c < nm; ++c) {
                header.push_back(o.labels[c] + " " + o.original_label);
                header.push_back(o.labels[c] + " " + o.debiased_label);
                header.push_back(o.labels[c] + " Δ");
            }
            std::vector<std::vector<std::string>> body;
            std::string prev;
            for (const auto& r : t.rows) {
                std::vector<std::string> l{r.model == prev ? "" : r.model, r.training, r.letter};
                prev = r.model;
                for (const auto& cell : r.cells) {
                    l.push_back(value(cell.original, cell.marks_original, false));
                    l.push_back(value(cell.debiased, cell.marks_debiased, false));
                    l.push_back(delta(cell, format));
                }
                body.push_back(l);
            }
            out = render_markdown(header, body, 3) + "\n" + legend + "\n";
            break;
        }
        case TableFormat::Latex: {
            out = "\\begin{tabular}{lll";
            for (std::size_t c = 0; c < nm; ++c) out += "rrr";
            out += "}\n\\toprule\n & & ";
            for (std::size_t c = 0; c < nm; ++c)
                out += " & \\multicolumn{3}{c}{" + latex_escape(o.labels[c]) + "}";
            out += " \\\\\n";
            for (std::size_t c = 0; c < nm; ++c)
                out += "\\cmidrule(lr){" + std::to_string(4 + 3 * c) + "-" +
                       std::to_string(6 + 3 * c) + "}";
            out += "\nModel & Training & Sig";
            for (std::size_t c = 0; c < nm; ++c)
                out += " & " + latex_escape(o.original_label) + " & " +
                       latex_escape(o.debiased_label) + " & $\\Delta$";
            out += " \\\\\n\\midrule\n";
            std::string prev;
            for (const auto& r : t.rows) {
                if (!prev.empty() && r.model != prev) out += "\\midrule\n";
                out += (r.model == prev ? std::string() : latex_escape(r.model)) + " & " +
                       latex_escape(r.training) + " & \\textit{" + r.letter + "}";
                prev = r.model;
                for (const auto& cell : r.cells)
                    out += " & " + value(cell.original, cell.marks_original, true) + " & " +
                           value(cell.debiased, cell.marks_debiased, true) + " & " +
                           delta(cell, format);
                out += " \\\\\n";
            }
            out += "\\bottomrule\n\\end{tabular}\n";
            break;
        }
        case TableFormat::Json: {
            nlohmann::json j;
            j["measures"] = o.columns;
            j["labels"] = o.labels;
            j["test"] = test_kind_name(o.test);
            j["correction"] = correction_name(o.correction);
            j["alpha"] = o.alpha;
            auto& rows = j["rows"] = nlohmann::json::array();
            for (const auto& r : t.rows) {
                nlohmann::json row{{"model", r.model},
                                   {"training", r.training},
                                   {"letter", r.letter},
                                   {"num_queries", r.num_queries}};
                for (std::size_t c = 0; c < nm; ++c) {
                    const auto& cell = r.cells[c];
                    nlohmann::json e{{"original", cell.original},
                                     {"debiased", cell.debiased},
                                     {"delta", cell.delta ? nlohmann::json(*cell.delta)
                                                          : nlohmann::json(nullptr)},
                                     {"bold", cell.bold},
                                     {"delta_significant", cell.delta_significant},
                                     {"marks_original", cell.marks_original},
                                     {"marks_debiased", cell.marks_debiased}};
                    if (cell.test.t)
                        e["t"] = {{"t", cell.test.t->t},
                                  {"p", cell.test.t->p_value},
                                  {"p_adjusted", cell.test.p_t_adjusted}};
                    if (cell.test.wilcoxon)
                        e["wilcoxon"] = {{"w_plus", cell.test.wilcoxon->w_plus},
                                         {"w_minus", cell.test.wilcoxon->w_minus},
                                         {"p", cell.test.wilcoxon->p_value},
                                         {"p_adjusted", cell.test.p_wilcoxon_adjusted}};
                    row["cells"][o.columns[c]] = e;
                }
                rows.push_back(row);
            }
            out = j.dump(2) + "\n";
            break;
        }
    }
    return out;
}

// ------------------------------------------------------------------------------------------
// Bias table
// ------------------------------------------------------------------------------------------

namespace {

EvalResult per_query_result(const std::vector<std::pair<std::string, std::array<double, 3>>>& v) {
    EvalResult r;
    for (const char* name : {"rab", "arab", "abs_rab"}) {
        Column c;
        c.name = name;
        c.kind = ValueKind::Float;
        c.per_query = true;
        r.columns.push_back(c);
    }
    std::array<double, 3> sum{0, 0, 0};
    for (const auto& [qid, vals] : v) {
        QueryValues q;
        q.qid = qid;
        q.values = {vals[0], vals[1], vals[2]};
        r.queries.push_back(q);
        for (std::size_t i = 0; i < 3; ++i) sum[i] += vals[i];
    }
    const double n = v.empty() ? 1.0 : static_cast<double>(v.size());
    r.summary = {sum[0] / n, sum[1] / n, sum[2] / n};
    return r;
}

}  // namespace

BiasReport build_bias_table(const std::vector<BiasRow>& rows, const BiasTable& bias,
                            const std::unordered_map<std::string, int>& labels, const Qrels& qrels,
                            const BiasTableOptions& options) {
    if (rows.empty()) throw InvalidArgument("bias table: no rows");
    if (options.cutoff == 0) throw InvalidArgument("bias table: cutoff must be >= 1");
    if (!(options.alpha > 0.0 && options.alpha < 1.0))
        throw InvalidArgument("bias table: alpha must be in (0, 1)");
    if (options.baseline && *options.baseline >= rows.size())
        throw InvalidArgument("bias table: baseline index out of range");

    BiasReport report;
    report.options = options;
    report.has_prf = !labels.empty() && qrels.num_queries() > 0;
    std::vector<EvalResult> results;
    std::vector<std::string> names;
    const std::size_t cut[] = {options.cutoff};
    for (std::size_t i = 0; i < rows.size(); ++i) {
        const auto& in = rows[i];
        BiasTableRow r;
        r.name = in.name;
        r.letter = run_letter(i);
        r.mats = in.mats;
        const auto summary = rank_bias(in.rankings, bias, cut)[0];
        r.queries = summary.queries;
        r.rab = summary.rab;
        r.arab = summary.arab;
        std::vector<std::pair<std::string, std::array<double, 3>>> per_query;
        double abs_sum = 0.0;
        for (const auto& q : in.rankings) {
            if (q.docids.empty()) continue;
            const auto qb = query_rank_bias(q.docids, bias, options.cutoff);
            per_query.push_back({q.qid, {qb.rab.bias, qb.arab.bias, std::fabs(qb.rab.bias)}});
            abs_sum += std::fabs(qb.rab.bias);
        }
        r.abs_rab = per_query.empty() ? 0.0 : abs_sum / static_cast<double>(per_query.size());
        std::sort(per_query.begin(), per_query.end());
        results.push_back(per_query_result(per_query));
        names.push_back(in.name);
        if (report.has_prf && !in.scored.empty()) {
            const auto p = prf(in.scored, qrels, labels, options.min_relevance);
            r.delta_prf = p.delta;
        }
        report.rows.push_back(std::move(r));
    }
    if (rows.size() >= 2) {
        const auto cmp =
            compare(names, results, {"rab", "arab", "abs_rab"}, options.test, options.correction,
                    options.alpha, options.wilcoxon, options.baseline);
        report.paired_queries = cmp.num_queries;
        report.pairs = cmp.pairs;
        for (auto& p : report.pairs) {
            // Re-mark: the significant difference favours the row with the smaller |mean|.
            p.significant = pair_significant(p, options.test, options.alpha, cmp.num_queries);
            if (!p.significant || std::fabs(p.mean_a) == std::fabs(p.mean_b)) continue;
            const std::size_t better = std::fabs(p.mean_a) < std::fabs(p.mean_b) ? p.a : p.b;
            const std::size_t worse = better == p.a ? p.b : p.a;
            auto& row = report.rows[better];
            auto& marks = p.column == 0   ? row.marks_rab
                          : p.column == 1 ? row.marks_arab
                                          : row.marks_abs_rab;
            marks += run_letter(worse);
        }
        for (auto& r : report.rows) {
            // Letters in row order (a < b < ... < z < a1 ...): sort by the row index they name.
            auto sort_marks = [](std::string& s) {
                std::vector<std::string> parts;
                for (std::size_t i = 0; i < s.size();) {
                    std::size_t j = i + 1;
                    while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) ++j;
                    parts.push_back(s.substr(i, j - i));
                    i = j;
                }
                auto key = [](const std::string& l) {
                    const std::size_t hi = l.size() > 1 ? std::stoul(l.substr(1)) : 0;
                    return hi * 26 + static_cast<std::size_t>(l[0] - 'a');
                };
                std::sort(parts.begin(), parts.end(),
                          [&](const auto& x, const auto& y) { return key(x) < key(y); });
                s.clear();
                for (const auto& p : parts) s += p;
            };
            sort_marks(r.marks_rab);
            sort_marks(r.marks_arab);
            sort_marks(r.marks_abs_rab);
        }
    }
    return report;
}

std::string format_bias_table(const BiasReport& t, TableFormat format, int decimals) {
    const auto& o = t.options;
    const std::string k = std::to_string(o.cutoff);
    const std::string rab_h = "RaB@" + k + " (" + o.variant + ")";
    const std::string arab_h = "ARaB@" + k + " (" + o.variant + ")";
    const std::string abs_h = "|RaB|@" + k;
    auto opt = [&](const std::optional<double>& v) { return v ? num(*v, decimals) : "-"; };
    auto val = [&](double v, const std::string& marks, bool latex) {
        std::string s = num(v, decimals);
        if (marks.empty()) return s;
        return latex ? s + "$^{" + marks + "}$" : s + "^" + marks;
    };
    std::string legend =
        "RaB/ARaB: ranking bias male - female (mean over queries); |RaB|: mean "
        "of per-query |RaB|; ^ab: "
        "significantly less biased than rows a, b (paired per-query test: " +
        std::string(test_kind_name(o.test)) + ", correction: " + correction_name(o.correction) +
        ", alpha: " + num(o.alpha, 2) +
        (o.baseline ? ", against row " + run_letter(*o.baseline) : std::string(", all pairs")) +
        (t.rows.size() < 2 ? std::string("; one row: nothing tested)")
                           : "; " + std::to_string(t.paired_queries) + " paired queries)");
    std::string out;
    switch (format) {
        case TableFormat::Text:
        case TableFormat::Markdown: {
            std::vector<std::string> header{"Run", "Sig",      rab_h,  arab_h,
                                            abs_h, "|ΔA-PRF|", "MATS", "queries"};
            std::vector<std::vector<std::string>> body;
            for (const auto& r : t.rows)
                body.push_back({r.name, r.letter, val(r.rab.bias, r.marks_rab, false),
                                val(r.arab.bias, r.marks_arab, false),
                                val(r.abs_rab, r.marks_abs_rab, false), opt(r.delta_prf),
                                opt(r.mats), std::to_string(r.queries)});
            if (format == TableFormat::Text) {
                body.insert(body.begin(), header);
                out = render_text(body) + legend + "\n";
            } else {
                out = render_markdown(header, body, 2) + "\n" + legend + "\n";
            }
            break;
        }
        case TableFormat::Latex: {
            out = "\\begin{tabular}{llrrrrr}\n\\toprule\nRun & Sig & " + latex_escape(rab_h) +
                  " & " + latex_escape(arab_h) + " & " + latex_escape(abs_h) +
                  " & $|\\Delta$A-PRF$|$ & MATS \\\\\n\\midrule\n";
            for (const auto& r : t.rows)
                out += latex_escape(r.name) + " & \\textit{" + r.letter + "} & " +
                       val(r.rab.bias, r.marks_rab, true) + " & " +
                       val(r.arab.bias, r.marks_arab, true) + " & " +
                       val(r.abs_rab, r.marks_abs_rab, true) + " & " + opt(r.delta_prf) + " & " +
                       opt(r.mats) + " \\\\\n";
            out += "\\bottomrule\n\\end{tabular}\n";
            break;
        }
        case TableFormat::Json: {
            nlohmann::json j;
            j["cutoff"] = o.cutoff;
            j["variant"] = o.variant;
            j["test"] = test_kind_name(o.test);
            j["correction"] = correction_name(o.correction);
            j["alpha"] = o.alpha;
            j["paired_queries"] = t.paired_queries;
            auto& rows = j["rows"] = nlohmann::json::array();
            auto on = [](const std::optional<double>& v) {
                return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
            };
            for (const auto& r : t.rows)
                rows.push_back(
                    {{"run", r.name},
                     {"letter", r.letter},
                     {"queries", r.queries},
                     {"rab",
                      {{"bias", r.rab.bias}, {"female", r.rab.female}, {"male", r.rab.male}}},
                     {"arab",
                      {{"bias", r.arab.bias}, {"female", r.arab.female}, {"male", r.arab.male}}},
                     {"abs_rab", r.abs_rab},
                     {"marks_rab", r.marks_rab},
                     {"marks_arab", r.marks_arab},
                     {"marks_abs_rab", r.marks_abs_rab},
                     {"delta_prf", on(r.delta_prf)},
                     {"mats", on(r.mats)}});
            auto& cmp = j["comparisons"] = nlohmann::json::array();
            for (const auto& p : t.pairs) {
                nlohmann::json e{{"measure", p.column == 0   ? "rab"
                                             : p.column == 1 ? "arab"
                                                             : "abs_rab"},
                                 {"run_a", t.rows[p.a].name},
                                 {"run_b", t.rows[p.b].name},
                                 {"mean_a", p.mean_a},
                                 {"mean_b", p.mean_b},
                                 {"significant", p.significant}};
                if (p.t) e["p_t_adjusted"] = p.p_t_adjusted;
                if (p.wilcoxon) e["p_wilcoxon_adjusted"] = p.p_wilcoxon_adjusted;
                cmp.push_back(e);
            }
            out = j.dump(2) + "\n";
            break;
        }
    }
    return out;
}

std::optional<double> read_mats_json(const std::filesystem::path& path) {
    const nlohmann::json j = read_json_file(path);
    if (!j.is_object() || !j.contains("mats"))
        throw ParseError(path.string(), 0, "no \"mats\" member (plumb debias mats JSON expected)");
    if (j["mats"].is_null()) return std::nullopt;
    if (!j["mats"].is_number()) throw ParseError(path.string(), 0, "\"mats\" is not a number");
    return j["mats"].get<double>();
}

}  // namespace plumb::eval
