#include "eval/measures.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "eval/detail_parse.hpp"
#include "plugin/error.hpp"

namespace plumb::eval {

namespace {

// ---------------------------------------------------------------------------------------------
// Shared counts (form_res_rels.c)
// ---------------------------------------------------------------------------------------------

/// Documents in the qrels with grade >= relevance level (grades < 0 never count).
long num_rel_of(const QueryJudgements& q) {
    long n = 0;
    for (std::size_t g = 0; g < q.level_counts.size(); ++g) {
        if (static_cast<long>(g) >= q.relevance_level) n += q.level_counts[g];
    }
    return n;
}

/// Relevant retrieved: judged (grade >= 0) documents with grade >= relevance level.
long num_rel_ret_of(const QueryJudgements& q) {
    long n = 0;
    for (long r : q.rels) {
        if (r >= 0 && r >= q.relevance_level) ++n;
    }
    return n;
}

long num_ret_of(const QueryJudgements& q) { return static_cast<long>(q.rels.size()); }

// ---------------------------------------------------------------------------------------------
// Measures. `p` holds the cutoffs, `out` one slot per cutoff (or one slot).
// ---------------------------------------------------------------------------------------------

using Params = std::span<const double>;

void m_num_q(const QueryJudgements&, Params, double* out) { out[0] = 1.0; }

void m_num_ret(const QueryJudgements& q, Params, double* out) {
    out[0] = static_cast<double>(num_ret_of(q));
}

void m_num_rel(const QueryJudgements& q, Params, double* out) {
    out[0] = static_cast<double>(num_rel_of(q));
}

void m_num_rel_ret(const QueryJudgements& q, Params, double* out) {
    out[0] = static_cast<double>(num_rel_ret_of(q));
}

/// Average precision (m_map.c); also gm_map's per-query value.
void m_map(const QueryJudgements& q, Params, double* out) {
    long rel_so_far = 0;
    double sum = 0.0;
    const long n = num_ret_of(q);
    for (long i = 0; i < n; ++i) {
        if (q.rels[static_cast<std::size_t>(i)] >= q.relevance_level) {
            ++rel_so_far;
            sum += static_cast<double>(rel_so_far) / static_cast<double>(i + 1);
        }
    }
    out[0] = rel_so_far ? sum / static_cast<double>(num_rel_of(q)) : 0.0;
}

/// R-precision (m_Rprec.c).
void m_Rprec(const QueryJudgements& q, Params, double* out) {
    const long num_rel = num_rel_of(q);
    const long look = std::min(num_ret_of(q), num_rel);
    out[0] = 0.0;
    if (look == 0) return;
    long rel_so_far = 0;
    for (long i = 0; i < look; ++i) {
        if (q.rels[static_cast<std::size_t>(i)] >= q.relevance_level) ++rel_so_far;
    }
    out[0] = static_cast<double>(rel_so_far) / static_cast<double>(num_rel);
}

/// bpref (m_bpref.c): documents not in the qrels or with a negative grade are skipped.
void m_bpref(const QueryJudgements& q, Params, double* out) {
    const long num_rel = num_rel_of(q);
    long num_nonrel = 0;
    for (long j = 0; j < q.relevance_level && j < static_cast<long>(q.level_counts.size()); ++j) {
        num_nonrel += q.level_counts[static_cast<std::size_t>(j)];
    }
    long nonrel_so_far = 0;
    double bpref = 0.0;
    for (long r : q.rels) {
        if (r == kNotInQrels || r == kNegativeGrade) continue;
        if (r >= 0 && r < q.relevance_level) {
            ++nonrel_so_far;
        } else {
            if (nonrel_so_far > 0) {
                bpref += 1.0 - static_cast<double>(std::min(nonrel_so_far, num_rel)) /
                                   static_cast<double>(std::min(num_nonrel, num_rel));
            } else {
                bpref += 1.0;
            }
        }
    }
    if (num_rel) bpref /= static_cast<double>(num_rel);
    out[0] = bpref;
}

/// Reciprocal rank of the first relevant document (m_recip_rank.c).
void m_recip_rank(const QueryJudgements& q, Params, double* out) {
    out[0] = 0.0;
    for (std::size_t i = 0; i < q.rels.size(); ++i) {
        if (q.rels[i] >= q.relevance_level) {
            out[0] = 1.0 / static_cast<double>(i + 1);
            return;
        }
    }
}

/// Interpolated precision at recall levels (m_iprec_at_recall.c; trec_eval 10 rounds the
/// number of relevant documents a level needs with lround, trec_eval 9 with +0.9 truncation).
void m_iprec_at_recall(const QueryJudgements& q, Params p, double* out) {
    const long np = static_cast<long>(p.size());
    for (long c = 0; c < np; ++c) out[c] = 0.0;
    const long num_ret = num_ret_of(q);
    if (num_ret == 0) return;  // trec_eval would divide 0 by 0 here
    const long num_rel = num_rel_of(q);
    const long num_rel_ret = num_rel_ret_of(q);
    std::vector<long> cut(p.size());
    for (long c = 0; c < np; ++c) {
        const double x = p[static_cast<std::size_t>(c)] * static_cast<double>(num_rel);
        cut[static_cast<std::size_t>(c)] =
            q.trec_eval_9_iprec ? static_cast<long>(x + 0.9) : std::lround(x);
    }
    long current = np - 1;
    while (current >= 0 && cut[static_cast<std::size_t>(current)] > num_rel_ret) --current;
    double precis = static_cast<double>(num_rel_ret) / static_cast<double>(num_ret);
    double int_precis = precis;
    long rel_so_far = num_rel_ret;
    for (long i = num_ret; i > 0 && rel_so_far > 0; --i) {
        precis = static_cast<double>(rel_so_far) / static_cast<double>(i);
        if (int_precis < precis) int_precis = precis;
        if (q.rels[static_cast<std::size_t>(i - 1)] >= q.relevance_level) {
            while (current >= 0 && rel_so_far == cut[static_cast<std::size_t>(current)]) {
                out[current] = int_precis;
                --current;
            }
            --rel_so_far;
        }
    }
    while (current >= 0) {
        out[current] = int_precis;
        --current;
    }
}

/// Walks the ranking and calls `at(cutoff_index, rel_so_far)` at each cutoff, trec_eval style:
/// a cutoff beyond the list sees every retrieved document.
template <class OnRel, class AtCut>
void walk_cutoffs(const QueryJudgements& q, Params p, OnRel on_rel, AtCut at) {
    std::size_t ci = 0;
    const std::size_t n = q.rels.size();
    for (std::size_t i = 0; i < n; ++i) {
        if (static_cast<double>(i) == p[ci]) {
            at(ci);
            if (++ci == p.size()) return;
        }
        on_rel(i);
    }
    while (ci < p.size()) at(ci++);
}

/// Precision at k (m_P.c).
void m_P(const QueryJudgements& q, Params p, double* out) {
    long rel_so_far = 0;
    walk_cutoffs(
        q, p, [&](std::size_t i) { if (q.rels[i] >= q.relevance_level) ++rel_so_far; },
        [&](std::size_t c) { out[c] = static_cast<double>(rel_so_far) / p[c]; });
}

/// Recall at k (m_recall.c); 0 when the query has no relevant document.
void m_recall(const QueryJudgements& q, Params p, double* out) {
    const long num_rel = num_rel_of(q);
    if (num_rel == 0) {
        for (std::size_t c = 0; c < p.size(); ++c) out[c] = 0.0;
        return;
    }
    long rel_so_far = 0;
    walk_cutoffs(
        q, p, [&](std::size_t i) { if (q.rels[i] >= q.relevance_level) ++rel_so_far; },
        [&](std::size_t c) {
            out[c] = static_cast<double>(rel_so_far) / static_cast<double>(num_rel);
        });
}

/// Success at k (m_success.c).
void m_success(const QueryJudgements& q, Params p, double* out) {
    long rel_so_far = 0;
    walk_cutoffs(
        q, p, [&](std::size_t i) { if (q.rels[i] >= q.relevance_level) ++rel_so_far; },
        [&](std::size_t c) { out[c] = rel_so_far ? 1.0 : 0.0; });
}

/// AP over the top k (m_map_cut.c).
void m_map_cut(const QueryJudgements& q, Params p, double* out) {
    const long num_rel = num_rel_of(q);
    if (num_rel == 0) {
        for (std::size_t c = 0; c < p.size(); ++c) out[c] = 0.0;
        return;
    }
    long rel_so_far = 0;
    double sum = 0.0;
    walk_cutoffs(
        q, p,
        [&](std::size_t i) {
            if (q.rels[i] >= q.relevance_level) {
                ++rel_so_far;
                sum += static_cast<double>(rel_so_far) / static_cast<double>(i + 1);
            }
        },
        [&](std::size_t c) { out[c] = sum / static_cast<double>(num_rel); });
}

/// nDCG over the whole list (m_ndcg.c with default gains: gain = grade; the relevance level
/// is not used).
void m_ndcg(const QueryJudgements& q, Params, double* out) {
    const auto& counts = q.level_counts;
    const long nlevels = static_cast<long>(counts.size());
    auto gain = [&](long r) { return (r >= 0 && r < nlevels) ? static_cast<double>(r) : 0.0; };
    double results_dcg = 0.0, ideal_dcg = 0.0;
    long cur = nlevels - 1;
    double ideal_gain = cur >= 0 ? static_cast<double>(cur) : 0.0;
    long num_at_level = 0;
    const long num_ret = num_ret_of(q);
    long i = 0;
    auto next_ideal = [&]() {
        ++num_at_level;
        while (cur >= 0 && num_at_level > counts[static_cast<std::size_t>(cur)]) {
            num_at_level = 1;
            --cur;
            ideal_gain = cur >= 0 ? static_cast<double>(cur) : 0.0;
        }
    };
    for (; i < num_ret && ideal_gain > 0.0; ++i) {
        double g = gain(q.rels[static_cast<std::size_t>(i)]);
        if (g != 0) results_dcg += g / std::log2(static_cast<double>(i + 2));
        next_ideal();
        if (ideal_gain > 0.0) ideal_dcg += ideal_gain / std::log2(static_cast<double>(i + 2));
    }
    for (; i < num_ret; ++i) {
        double g = gain(q.rels[static_cast<std::size_t>(i)]);
        if (g != 0) results_dcg += g / std::log2(static_cast<double>(i + 2));
    }
    while (ideal_gain > 0.0) {
        next_ideal();
        if (ideal_gain > 0.0) ideal_dcg += ideal_gain / std::log2(static_cast<double>(i + 2));
        ++i;
    }
    out[0] = ideal_dcg > 0.0 ? results_dcg / ideal_dcg : 0.0;
}

/// nDCG at k (m_ndcg_cut.c): DCG of the top k over the ideal DCG of the top k.
void m_ndcg_cut(const QueryJudgements& q, Params p, double* out) {
    double sum = 0.0;
    walk_cutoffs(
        q, p,
        [&](std::size_t i) {
            double g = static_cast<double>(q.rels[i]);
            if (g > 0) sum += g / std::log2(static_cast<double>(i + 2));
        },
        [&](std::size_t c) { out[c] = sum; });
    const auto& counts = q.level_counts;
    std::size_t ci = 0;
    long cur = static_cast<long>(counts.size()) - 1;
    long lvl_count = 0;
    double ideal_dcg = 0.0;
    for (std::size_t i = 0;; ++i) {
        ++lvl_count;
        while (cur > 0 && lvl_count > counts[static_cast<std::size_t>(cur)]) {
            --cur;
            lvl_count = 1;
        }
        if (cur <= 0) break;
        if (static_cast<double>(i) == p[ci]) {
            if (ideal_dcg > 0.0) out[ci] /= ideal_dcg;
            if (++ci == p.size()) break;
        }
        ideal_dcg += static_cast<double>(cur) / std::log2(static_cast<double>(i + 2));
    }
    for (; ci < p.size(); ++ci) {
        if (ideal_dcg > 0.0) out[ci] /= ideal_dcg;
    }
}

/// plumb: reciprocal rank of the first relevant document within the top k, else 0
/// (MS MARCO MRR@10).
void m_mrr_cut(const QueryJudgements& q, Params p, double* out) {
    std::size_t first = 0;  // 1-based rank of the first relevant, 0 = none
    for (std::size_t i = 0; i < q.rels.size(); ++i) {
        if (q.rels[i] >= q.relevance_level) {
            first = i + 1;
            break;
        }
    }
    for (std::size_t c = 0; c < p.size(); ++c) {
        out[c] = (first > 0 && static_cast<double>(first) <= p[c])
                     ? 1.0 / static_cast<double>(first)
                     : 0.0;
    }
}

/// plumb: documents of the top k that appear in the qrels (any grade) / k.
void m_judged(const QueryJudgements& q, Params p, double* out) {
    long judged = 0;
    walk_cutoffs(
        q, p, [&](std::size_t i) { if (q.rels[i] != kNotInQrels) ++judged; },
        [&](std::size_t c) { out[c] = static_cast<double>(judged) / p[c]; });
}

// ---------------------------------------------------------------------------------------------
// Registry, in trec_eval's measure order (measures.c) with plumb's extras last.
// ---------------------------------------------------------------------------------------------

enum class ParamKind { None, LongCutoffs, DoubleCutoffs };
enum class Aggregate { None, Mean, Sum, Count, GeoMean };

struct MeasureDef {
    const char* name;
    ParamKind params;
    std::vector<double> defaults;
    ValueKind kind;
    Aggregate aggregate;
    bool per_query;
    void (*compute)(const QueryJudgements&, Params, double*);
};

const std::vector<double> kStdCutoffs = {5, 10, 15, 20, 30, 100, 200, 500, 1000};

const std::vector<MeasureDef>& registry() {
    static const std::vector<MeasureDef> r = {
        {"runid", ParamKind::None, {}, ValueKind::Float, Aggregate::None, false, nullptr},
        {"num_q", ParamKind::None, {}, ValueKind::Long, Aggregate::Count, false, m_num_q},
        {"num_ret", ParamKind::None, {}, ValueKind::Long, Aggregate::Sum, true, m_num_ret},
        {"num_rel", ParamKind::None, {}, ValueKind::Long, Aggregate::Sum, true, m_num_rel},
        {"num_rel_ret", ParamKind::None, {}, ValueKind::Long, Aggregate::Sum, true,
         m_num_rel_ret},
        {"map", ParamKind::None, {}, ValueKind::Float, Aggregate::Mean, true, m_map},
        {"gm_map", ParamKind::None, {}, ValueKind::Float, Aggregate::GeoMean, false, m_map},
        {"Rprec", ParamKind::None, {}, ValueKind::Float, Aggregate::Mean, true, m_Rprec},
        {"bpref", ParamKind::None, {}, ValueKind::Float, Aggregate::Mean, true, m_bpref},
        {"recip_rank", ParamKind::None, {}, ValueKind::Float, Aggregate::Mean, true,
         m_recip_rank},
        {"iprec_at_recall", ParamKind::DoubleCutoffs,
         {0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0}, ValueKind::Float,
         Aggregate::Mean, true, m_iprec_at_recall},
        {"P", ParamKind::LongCutoffs, kStdCutoffs, ValueKind::Float, Aggregate::Mean, true, m_P},
        {"recall", ParamKind::LongCutoffs, kStdCutoffs, ValueKind::Float, Aggregate::Mean, true,
         m_recall},
        {"ndcg", ParamKind::None, {}, ValueKind::Float, Aggregate::Mean, true, m_ndcg},
        {"ndcg_cut", ParamKind::LongCutoffs, kStdCutoffs, ValueKind::Float, Aggregate::Mean,
         true, m_ndcg_cut},
        {"map_cut", ParamKind::LongCutoffs, kStdCutoffs, ValueKind::Float, Aggregate::Mean, true,
         m_map_cut},
        {"success", ParamKind::LongCutoffs, {1, 5, 10}, ValueKind::Float, Aggregate::Mean, true,
         m_success},
        {"mrr_cut", ParamKind::LongCutoffs, {10}, ValueKind::Float, Aggregate::Mean, true,
         m_mrr_cut},
        {"judged", ParamKind::LongCutoffs, {10}, ValueKind::Float, Aggregate::Mean, true,
         m_judged},
    };
    return r;
}

const std::vector<std::string> kOfficial = {"runid", "num_q",      "num_ret",         "num_rel",
                                            "num_rel_ret", "map",  "gm_map",          "Rprec",
                                            "bpref", "recip_rank", "iprec_at_recall", "P"};

long find_measure(std::string_view name) {
    const auto& r = registry();
    for (std::size_t i = 0; i < r.size(); ++i) {
        if (name == r[i].name) return static_cast<long>(i);
    }
    return -1;
}

std::string known_list() {
    std::string s;
    for (const auto& n : MeasureSet::known_names()) {
        if (!s.empty()) s += ", ";
        s += n;
    }
    return s;
}

std::vector<double> parse_cutoffs(const std::string& measure, const std::string& text,
                                  bool integral) {
    std::vector<double> out;
    std::size_t start = 0;
    for (;;) {
        std::size_t comma = text.find(',', start);
        std::string_view item(text.data() + start,
                              (comma == std::string::npos ? text.size() : comma) - start);
        if (integral) {
            long v = 0;
            if (!detail::parse_long(item, v)) {
                throw ConfigError("measure '" + measure + "': cutoff '" + std::string(item) +
                                  "' is not an integer");
            }
            out.push_back(static_cast<double>(v));
        } else {
            double v = 0;
            if (!detail::parse_double(item, v)) {
                throw ConfigError("measure '" + measure + "': parameter '" + std::string(item) +
                                  "' is not a number");
            }
            out.push_back(v);
        }
        if (comma == std::string::npos) break;
        start = comma + 1;
    }
    std::sort(out.begin(), out.end());
    if (integral && out.front() <= 0) {
        throw ConfigError("measure '" + measure + "': cutoffs must be positive");
    }
    for (std::size_t i = 1; i < out.size(); ++i) {
        if (out[i] == out[i - 1]) {
            throw ConfigError("measure '" + measure + "': duplicate cutoffs");
        }
    }
    return out;
}

std::string column_name(const MeasureDef& def, double param) {
    char buf[64];
    if (def.params == ParamKind::LongCutoffs) {
        std::snprintf(buf, sizeof buf, "%s_%ld", def.name, static_cast<long>(param));
    } else {
        std::snprintf(buf, sizeof buf, "%s_%3.2f", def.name, param);
    }
    return buf;
}

}  // namespace

std::vector<std::string> MeasureSet::known_names() {
    std::vector<std::string> out;
    for (const auto& d : registry()) out.emplace_back(d.name);
    out.emplace_back("official");
    return out;
}

MeasureSet MeasureSet::official() { return parse({"official"}); }

MeasureSet MeasureSet::parse(const std::vector<std::string>& specs) {
    const auto& reg = registry();
    std::vector<bool> marked(reg.size(), false);
    std::map<std::string, std::string> params;  // first parameter list per measure name
    for (const auto& spec : specs) {
        std::string name = spec;
        std::size_t dot = spec.find('.');
        if (dot != std::string::npos) {
            name = spec.substr(0, dot);
            std::string p = spec.substr(dot + 1);
            if (p.empty()) {
                throw ConfigError("improper measure '" + spec + "': empty parameter list");
            }
            params.emplace(name, p);
        }
        if (name == "official") {
            for (const auto& n : kOfficial) marked[static_cast<std::size_t>(find_measure(n))] = true;
            continue;
        }
        long idx = find_measure(name);
        if (idx < 0) {
            throw ConfigError("unknown measure '" + spec + "' (known: " + known_list() + ")");
        }
        marked[static_cast<std::size_t>(idx)] = true;
    }
    MeasureSet set;
    for (std::size_t i = 0; i < reg.size(); ++i) {
        if (!marked[i]) continue;
        const MeasureDef& def = reg[i];
        if (!def.compute) {  // runid
            set.m_runid = true;
            continue;
        }
        Selected sel;
        sel.measure = i;
        sel.first_column = set.m_columns.size();
        auto it = params.find(def.name);
        if (def.params == ParamKind::None) {
            if (it != params.end() && std::string(def.name) == "ndcg") {
                throw ConfigError("measure 'ndcg': custom gain parameters are not supported");
            }
            set.m_columns.push_back({def.name, def.kind, def.per_query});
        } else {
            sel.params = it != params.end()
                             ? parse_cutoffs(def.name, it->second,
                                             def.params == ParamKind::LongCutoffs)
                             : def.defaults;
            for (double p : sel.params) {
                set.m_columns.push_back({column_name(def, p), def.kind, def.per_query});
            }
        }
        set.m_selected.push_back(std::move(sel));
    }
    return set;
}

long MeasureSet::column_index(std::string_view name) const noexcept {
    for (std::size_t i = 0; i < m_columns.size(); ++i) {
        if (m_columns[i].name == name) return static_cast<long>(i);
    }
    return -1;
}

void MeasureSet::compute(const QueryJudgements& q, std::span<double> out) const {
    if (out.size() != m_columns.size()) {
        throw InvalidArgument("MeasureSet::compute: output has " + std::to_string(out.size()) +
                              " slots, expected " + std::to_string(m_columns.size()));
    }
    const auto& reg = registry();
    for (const auto& sel : m_selected) {
        reg[sel.measure].compute(q, sel.params, out.data() + sel.first_column);
    }
}

std::vector<double> MeasureSet::summarize(const std::vector<std::vector<double>>& rows,
                                          std::size_t num_queries) const {
    const auto& reg = registry();
    std::vector<double> out(m_columns.size(), 0.0);
    for (const auto& sel : m_selected) {
        const MeasureDef& def = reg[sel.measure];
        const std::size_t ncols = def.params == ParamKind::None ? 1 : sel.params.size();
        for (std::size_t c = sel.first_column; c < sel.first_column + ncols; ++c) {
            double sum = 0.0;
            switch (def.aggregate) {
                case Aggregate::Count:
                    out[c] = static_cast<double>(num_queries);
                    break;
                case Aggregate::Sum:
                    for (const auto& r : rows) sum += r[c];
                    out[c] = sum;
                    break;
                case Aggregate::Mean:
                    for (const auto& r : rows) sum += r[c];
                    out[c] = num_queries ? sum / static_cast<double>(num_queries) : sum;
                    break;
                case Aggregate::GeoMean:
                    // m_gm_map.c + meas_avg.c: mean of log(max(AP, 1e-5)), exponentiated.
                    for (const auto& r : rows) sum += std::log(std::max(r[c], 0.00001));
                    out[c] = num_queries ? std::exp(sum / static_cast<double>(num_queries)) : sum;
                    break;
                case Aggregate::None:
                    break;
            }
        }
    }
    return out;
}

}  // namespace plumb::eval
