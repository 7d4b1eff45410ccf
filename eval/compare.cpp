#include "eval/compare.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "plugin/error.hpp"

namespace plumb::eval {

TestKind parse_test_kind(std::string_view name) {
    if (name == "t") return TestKind::T;
    if (name == "wilcoxon") return TestKind::Wilcoxon;
    if (name == "both") return TestKind::Both;
    throw InvalidArgument("unknown test '" + std::string(name) + "' (known: t, wilcoxon, both)");
}

const char* test_kind_name(TestKind kind) noexcept {
    switch (kind) {
        case TestKind::T:
            return "t";
        case TestKind::Wilcoxon:
            return "wilcoxon";
        case TestKind::Both:
            return "both";
    }
    return "?";
}

bool pair_significant(const PairResult& p, TestKind test, double alpha,
                      std::size_t num_queries) noexcept {
    bool sig = num_queries >= 2 && p.mean_a != p.mean_b;
    if (test != TestKind::Wilcoxon) sig = sig && p.t && p.p_t_adjusted < alpha;
    if (test != TestKind::T) sig = sig && p.wilcoxon && p.p_wilcoxon_adjusted < alpha;
    return sig;
}

CompareFormat parse_compare_format(std::string_view name) {
    if (name == "text") return CompareFormat::Text;
    if (name == "json") return CompareFormat::Json;
    if (name == "csv") return CompareFormat::Csv;
    if (name == "latex") return CompareFormat::Latex;
    throw InvalidArgument("unknown format '" + std::string(name) +
                          "' (known: text, json, csv, latex)");
}

std::string run_letter(std::size_t i) {
    std::string s(1, static_cast<char>('a' + i % 26));
    if (i >= 26) s += std::to_string(i / 26);
    return s;
}

bool better_mean(const std::string& column, double x, double y) {
    // Gender-bias measures: |RaB| lower is better. Signed RaB/ARaB have no better side: a
    // significant signed difference says nothing about which is nearer 0 (+0.10 vs -0.11).
    if (column.rfind("abs_rab_", 0) == 0) return x < y;
    if (column.rfind("rab_", 0) == 0 || column.rfind("arab_", 0) == 0) return false;
    return x > y;
}

std::string ComparisonTable::marks(std::size_t r, std::size_t column) const {
    std::vector<std::size_t> beaten;
    const std::string& name = columns[column];
    for (const auto& p : pairs) {
        if (p.column != column || !p.significant) continue;
        if (p.a == r && better_mean(name, p.mean_a, p.mean_b)) beaten.push_back(p.b);
        if (p.b == r && better_mean(name, p.mean_b, p.mean_a)) beaten.push_back(p.a);
    }
    std::sort(beaten.begin(), beaten.end());
    std::string s;
    for (auto i : beaten) s += run_letter(i);
    return s;
}

ComparisonTable compare_runs(const std::vector<std::string>& names,
                             const std::vector<EvalResult>& results,
                             const CompareOptions& options) {
    if (results.size() < 2) throw InvalidArgument("compare: needs at least 2 runs");
    if (names.size() != results.size())
        throw InvalidArgument("compare: " + std::to_string(names.size()) + " names for " +
                              std::to_string(results.size()) + " runs");
    if (options.baseline && *options.baseline >= results.size())
        throw InvalidArgument("compare: baseline index out of range");
    if (!(options.alpha > 0.0 && options.alpha < 1.0))
        throw InvalidArgument("compare: alpha must be in (0, 1)");

    ComparisonTable table;
    table.runs = names;
    table.options = options;
    table.columns = options.columns;
    if (table.columns.empty()) {
        for (const auto& c : results[0].columns)
            if (c.per_query && c.kind == ValueKind::Float) table.columns.push_back(c.name);
    }
    if (table.columns.empty()) throw InvalidArgument("compare: no per-query measure to compare");

    // Column indices per run.
    std::vector<std::vector<long>> col(results.size());
    for (std::size_t r = 0; r < results.size(); ++r) {
        for (const auto& name : table.columns) {
            const long idx = results[r].column_index(name);
            if (idx < 0)
                throw InvalidArgument("compare: measure '" + name + "' not computed for run '" +
                                      names[r] + "'");
            col[r].push_back(idx);
        }
    }
    // Queries present in every result, in the first result's order.
    std::vector<std::vector<const QueryValues*>> rows(results.size());
    for (const auto& q : results[0].queries) {
        std::vector<const QueryValues*> found{&q};
        for (std::size_t r = 1; r < results.size(); ++r) {
            const auto* other = results[r].query(q.qid);
            if (!other) break;
            found.push_back(other);
        }
        if (found.size() != results.size()) continue;
        for (std::size_t r = 0; r < results.size(); ++r) rows[r].push_back(found[r]);
    }
    table.num_queries = rows[0].size();
    const std::size_t nq = table.num_queries;

    // values[r][c] = per-query values.
    std::vector<std::vector<std::vector<double>>> values(results.size());
    table.means.assign(results.size(), std::vector<double>(table.columns.size(), 0.0));
    for (std::size_t r = 0; r < results.size(); ++r) {
        values[r].resize(table.columns.size());
        for (std::size_t c = 0; c < table.columns.size(); ++c) {
            auto& v = values[r][c];
            v.reserve(nq);
            for (const auto* q : rows[r])
                v.push_back(q->values[static_cast<std::size_t>(col[r][c])]);
            double sum = 0.0;
            for (double x : v) sum += x;
            table.means[r][c] = nq == 0 ? 0.0 : sum / static_cast<double>(nq);
        }
    }

    // Pairs to test.
    std::vector<std::pair<std::size_t, std::size_t>> pairs;
    if (options.baseline) {
        for (std::size_t r = 0; r < results.size(); ++r)
            if (r != *options.baseline) pairs.emplace_back(r, *options.baseline);
    } else {
        for (std::size_t a = 0; a < results.size(); ++a)
            for (std::size_t b = a + 1; b < results.size(); ++b) pairs.emplace_back(a, b);
    }
    const bool do_t = options.test != TestKind::Wilcoxon;
    const bool do_w = options.test != TestKind::T;
    for (std::size_t c = 0; c < table.columns.size(); ++c) {
        std::vector<double> pt, pw;
        const std::size_t first = table.pairs.size();
        for (auto [a, b] : pairs) {
            PairResult p;
            p.column = c;
            p.a = a;
            p.b = b;
            p.mean_a = table.means[a][c];
            p.mean_b = table.means[b][c];
            if (nq >= 2) {
                if (do_t) p.t = paired_t_test(values[a][c], values[b][c]);
                if (do_w)
                    p.wilcoxon = wilcoxon_signed_rank(values[a][c], values[b][c], options.wilcoxon);
            }
            pt.push_back(p.t ? p.t->p_value : 1.0);
            pw.push_back(p.wilcoxon ? p.wilcoxon->p_value : 1.0);
            table.pairs.push_back(p);
        }
        const auto adj_t = adjust_p_values(pt, options.correction);
        const auto adj_w = adjust_p_values(pw, options.correction);
        for (std::size_t i = 0; i < pairs.size(); ++i) {
            auto& p = table.pairs[first + i];
            p.p_t_adjusted = adj_t[i];
            p.p_wilcoxon_adjusted = adj_w[i];
            p.significant = pair_significant(p, options.test, options.alpha, nq);
        }
    }
    return table;
}

namespace {

std::string num(double v, int decimals) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
    return buf;
}

std::string pval(double p) {
    char buf[64];
    if (p < 1e-4)
        std::snprintf(buf, sizeof buf, "%.2e", p);
    else
        std::snprintf(buf, sizeof buf, "%.4f", p);
    return buf;
}

std::string pad(const std::string& s, std::size_t w) {
    return s.size() >= w ? s : s + std::string(w - s.size(), ' ');
}

std::string csv_field(const std::string& s) {
    if (s.find_first_of(",\"\n") == std::string::npos) return s;
    std::string out = "\"";
    for (char ch : s) {
        if (ch == '"') out += '"';
        out += ch;
    }
    return out + "\"";
}

std::string opt_num(bool has, double v) {
    if (!has) return "";
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.10g", v);
    return buf;
}

}  // namespace

std::string latex_escape(const std::string& s) {
    std::string out;
    for (char ch : s) {
        switch (ch) {
            case '_':
            case '&':
            case '%':
            case '#':
            case '$':
            case '{':
            case '}':
                out += '\\';
                out += ch;
                break;
            case '\\':
                out += "\\textbackslash{}";
                break;
            case '^':
                out += "\\^{}";
                break;
            case '~':
                out += "\\~{}";
                break;
            default:
                out += ch;
        }
    }
    return out;
}

std::string format_comparison(const ComparisonTable& t, CompareFormat format, int decimals) {
    std::string out;
    const std::size_t nr = t.runs.size();
    const std::size_t nc = t.columns.size();
    switch (format) {
        case CompareFormat::Text: {
            out += "queries: " + std::to_string(t.num_queries) +
                   "  test: " + test_kind_name(t.options.test) +
                   "  correction: " + correction_name(t.options.correction) +
                   "  alpha: " + opt_num(true, t.options.alpha) +
                   (t.options.baseline ? "  baseline: " + t.runs[*t.options.baseline]
                                       : std::string("  all pairs")) +
                   "\n";
            std::size_t wr = 3;
            for (const auto& r : t.runs) wr = std::max(wr, r.size());
            std::vector<std::vector<std::string>> cells(nr, std::vector<std::string>(nc));
            std::vector<std::size_t> wc(nc);
            for (std::size_t c = 0; c < nc; ++c) {
                wc[c] = t.columns[c].size();
                for (std::size_t r = 0; r < nr; ++r) {
                    const auto m = t.marks(r, c);
                    cells[r][c] = num(t.means[r][c], decimals) + (m.empty() ? "" : "^" + m);
                    wc[c] = std::max(wc[c], cells[r][c].size());
                }
            }
            out += pad("run", wr) + "  sig";
            for (std::size_t c = 0; c < nc; ++c) out += "  " + pad(t.columns[c], wc[c]);
            while (!out.empty() && out.back() == ' ') out.pop_back();
            out += "\n";
            for (std::size_t r = 0; r < nr; ++r) {
                out += pad(t.runs[r], wr) + "  " + pad(run_letter(r), 3);
                for (std::size_t c = 0; c < nc; ++c) out += "  " + pad(cells[r][c], wc[c]);
                while (!out.empty() && out.back() == ' ') out.pop_back();
                out += "\n";
            }
            out += "\n" + pad("measure", 12) +
                   "  pair      diff      p(t)      p(t)adj   "
                   "p(W)      p(W)adj   sig\n";
            for (const auto& p : t.pairs) {
                std::string line = pad(t.columns[p.column], 12) + "  " +
                                   pad(run_letter(p.a) + " vs " + run_letter(p.b), 8) + "  ";
                const double diff = p.mean_a - p.mean_b;
                line += pad((diff >= 0 ? "+" : "") + num(diff, decimals), 8) + "  ";
                line += pad(p.t ? pval(p.t->p_value) : "-", 8) + "  ";
                line += pad(p.t ? pval(p.p_t_adjusted) : "-", 8) + "  ";
                line += pad(p.wilcoxon ? pval(p.wilcoxon->p_value) : "-", 8) + "  ";
                line += pad(p.wilcoxon ? pval(p.p_wilcoxon_adjusted) : "-", 8) + "  ";
                line += p.significant ? "*" : "";
                while (!line.empty() && line.back() == ' ') line.pop_back();
                out += line + "\n";
            }
            break;
        }
        case CompareFormat::Json: {
            nlohmann::json j;
            j["runs"] = t.runs;
            j["measures"] = t.columns;
            j["num_queries"] = t.num_queries;
            j["test"] = test_kind_name(t.options.test);
            j["correction"] = correction_name(t.options.correction);
            j["alpha"] = t.options.alpha;
            j["baseline"] = t.options.baseline ? nlohmann::json(t.runs[*t.options.baseline])
                                               : nlohmann::json(nullptr);
            auto& rows = j["table"] = nlohmann::json::array();
            for (std::size_t r = 0; r < nr; ++r) {
                nlohmann::json row;
                row["run"] = t.runs[r];
                row["letter"] = run_letter(r);
                for (std::size_t c = 0; c < nc; ++c) {
                    row["means"][t.columns[c]] = t.means[r][c];
                    row["marks"][t.columns[c]] = t.marks(r, c);
                }
                rows.push_back(row);
            }
            auto& cmp = j["comparisons"] = nlohmann::json::array();
            for (const auto& p : t.pairs) {
                nlohmann::json e;
                e["measure"] = t.columns[p.column];
                e["run_a"] = t.runs[p.a];
                e["run_b"] = t.runs[p.b];
                e["mean_a"] = p.mean_a;
                e["mean_b"] = p.mean_b;
                if (p.t) {
                    e["t"] = {{"t", p.t->t},
                              {"df", p.t->df},
                              {"p", p.t->p_value},
                              {"p_adjusted", p.p_t_adjusted}};
                }
                if (p.wilcoxon) {
                    e["wilcoxon"] = {
                        {"w_plus", p.wilcoxon->w_plus}, {"w_minus", p.wilcoxon->w_minus},
                        {"n", p.wilcoxon->n},           {"exact", p.wilcoxon->exact},
                        {"p", p.wilcoxon->p_value},     {"p_adjusted", p.p_wilcoxon_adjusted}};
                }
                e["significant"] = p.significant;
                cmp.push_back(e);
            }
            out = j.dump(2) + "\n";
            break;
        }
        case CompareFormat::Csv: {
            out =
                "measure,run_a,run_b,mean_a,mean_b,diff,t,p_t,p_t_adj,w_plus,w_minus,"
                "p_wilcoxon,p_wilcoxon_adj,significant\n";
            for (const auto& p : t.pairs) {
                out += csv_field(t.columns[p.column]) + "," + csv_field(t.runs[p.a]) + "," +
                       csv_field(t.runs[p.b]) + "," + opt_num(true, p.mean_a) + "," +
                       opt_num(true, p.mean_b) + "," + opt_num(true, p.mean_a - p.mean_b) + ",";
                out += opt_num(p.t.has_value(), p.t ? p.t->t : 0) + "," +
                       opt_num(p.t.has_value(), p.t ? p.t->p_value : 0) + "," +
                       opt_num(p.t.has_value(), p.p_t_adjusted) + ",";
                out += opt_num(p.wilcoxon.has_value(), p.wilcoxon ? p.wilcoxon->w_plus : 0) + "," +
                       opt_num(p.wilcoxon.has_value(), p.wilcoxon ? p.wilcoxon->w_minus : 0) + "," +
                       opt_num(p.wilcoxon.has_value(), p.wilcoxon ? p.wilcoxon->p_value : 0) + "," +
                       opt_num(p.wilcoxon.has_value(), p.p_wilcoxon_adjusted) + ",";
                out += p.significant ? "1\n" : "0\n";
            }
            break;
        }
        case CompareFormat::Latex: {
            out = "\\begin{tabular}{ll" + std::string(nc, 'r') + "}\n\\toprule\nRun & Sig";
            for (const auto& c : t.columns) out += " & " + latex_escape(c);
            out += " \\\\\n\\midrule\n";
            for (std::size_t r = 0; r < nr; ++r) {
                out += latex_escape(t.runs[r]) + " & \\textit{" + run_letter(r) + "}";
                for (std::size_t c = 0; c < nc; ++c) {
                    const auto m = t.marks(r, c);
                    out +=
                        " & " + num(t.means[r][c], decimals) + (m.empty() ? "" : "$^{" + m + "}$");
                }
                out += " \\\\\n";
            }
            out += "\\bottomrule\n\\end{tabular}\n";
            break;
        }
    }
    return out;
}

}  // namespace plumb::eval
