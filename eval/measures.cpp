#include "eval/measures.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>

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
    for (const auto& l : q.level_counts) {
        if (l.grade >= q.relevance_level) n += l.count;
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
    for (const auto& l : q.level_counts) {
        if (l.grade < q.relevance_level) num_nonrel += l.count;
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
    const long num_ret = num_ret_of(q);  // 0 (-J, -M0): 0/0 = NaN below, as in trec_eval
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

/// walk_cutoffs() counting the relevant retrieved documents: `at(cutoff_index, rel_so_far)`.
template <class AtCut>
void count_rel_at_cutoffs(const QueryJudgements& q, Params p, AtCut at) {
    long rel_so_far = 0;
    walk_cutoffs(
        q, p,
        [&](std::size_t i) {
            if (q.rels[i] >= q.relevance_level) ++rel_so_far;
        },
        [&](std::size_t c) { at(c, rel_so_far); });
}

/// The number of relevant documents of the query; when it is 0, every cutoff's value is set to
/// 0 (trec_eval's measures that divide by it).
long num_rel_or_zero(const QueryJudgements& q, Params p, double* out) {
    const long num_rel = num_rel_of(q);
    if (num_rel == 0) std::fill(out, out + p.size(), 0.0);
    return num_rel;
}

/// Precision at k (m_P.c).
void m_P(const QueryJudgements& q, Params p, double* out) {
    count_rel_at_cutoffs(
        q, p, [&](std::size_t c, long rel) { out[c] = static_cast<double>(rel) / p[c]; });
}

/// Recall at k (m_recall.c); 0 when the query has no relevant document.
void m_recall(const QueryJudgements& q, Params p, double* out) {
    const long num_rel = num_rel_or_zero(q, p, out);
    if (num_rel == 0) return;
    count_rel_at_cutoffs(q, p, [&](std::size_t c, long rel) {
        out[c] = static_cast<double>(rel) / static_cast<double>(num_rel);
    });
}

/// Precision at k relative to the best possible, rel / min(k, R) (m_rel_P.c).
void m_relative_P(const QueryJudgements& q, Params p, double* out) {
    const long num_rel = num_rel_or_zero(q, p, out);
    if (num_rel == 0) return;
    count_rel_at_cutoffs(q, p, [&](std::size_t c, long rel) {
        const long k = static_cast<long>(p[c]);
        out[c] = static_cast<double>(rel) / static_cast<double>(std::min(k, num_rel));
    });
}

/// Success at k (m_success.c).
void m_success(const QueryJudgements& q, Params p, double* out) {
    count_rel_at_cutoffs(q, p, [&](std::size_t c, long rel) { out[c] = rel ? 1.0 : 0.0; });
}

/// AP over the top k (m_map_cut.c).
void m_map_cut(const QueryJudgements& q, Params p, double* out) {
    const long num_rel = num_rel_or_zero(q, p, out);
    if (num_rel == 0) return;
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

/// Gain of each relevance level (gain_init.c setup_gains): the `level=gain` pairs given as
/// measure parameters (params after the first, as (level, gain) pairs), then every level
/// 0..max grade of the query not given, with gain = level; sorted by increasing gain with
/// trec_eval's comparator, which truncates the gain difference to an int (so 4 and 4.5 compare
/// equal), by glibc's merge sort (the qsort of the glibc trec_eval is built with), so that
/// equal-comparing levels keep the order trec_eval gives them.
struct Gains {
    struct Level {
        long rel_level;
        double gain;
        long num_at_level;
    };
    std::vector<Level> levels;

    Gains(const QueryJudgements& q, Params p) {
        for (std::size_t i = 1; i + 1 < p.size(); i += 2) {
            levels.push_back({static_cast<long>(p[i]), p[i + 1], 0});
        }
        const std::size_t given = levels.size();
        // trec_eval adds a level for every grade 0..max grade, most of them empty. Empty
        // levels are skipped by every walk over the levels; they can only change the order
        // the sort gives the others when a given gain is fractional (the truncating comparator
        // is then not transitive), so only then, and only for grades up to 2^16, are they
        // added (a grade of 2^31 - 1 must not cost 2^31 levels).
        bool fractional = false;
        for (std::size_t j = 0; j < given; ++j) {
            fractional = fractional || levels[j].gain != std::floor(levels[j].gain);
        }
        const long max_grade = q.level_counts.empty() ? -1 : q.level_counts.back().grade;
        const bool dense = fractional && max_grade <= 65536;
        auto add = [&](long level, long count) {
            std::size_t j = 0;
            while (j < given && levels[j].rel_level != level) ++j;
            if (j < given) {
                levels[j].num_at_level = count;
            } else {
                levels.push_back({level, static_cast<double>(level), count});
            }
        };
        std::size_t next = 0;
        if (dense) {
            for (long g = 0; g <= max_grade; ++g) {
                long count = 0;
                if (next < q.level_counts.size() && q.level_counts[next].grade == g) {
                    count = q.level_counts[next++].count;
                }
                add(g, count);
            }
        } else {
            for (const auto& l : q.level_counts) add(l.grade, l.count);
        }
        std::vector<Level> tmp(levels.size());
        merge_sort(levels.data(), levels.size(), tmp.data());
    }

    /// get_gain(): the gain of a level, 0 for a level without one.
    double of(long rel) const noexcept {
        for (const auto& l : levels) {
            if (l.rel_level == rel) return l.gain;
        }
        return 0.0;
    }

private:
    static int compare(const Level& a, const Level& b) noexcept {
        // comp_rel_gain's implicit conversion (clamped: beyond int's range it is undefined)
        return static_cast<int>(std::clamp(a.gain - b.gain, -2147483648.0, 2147483647.0));
    }
    /// glibc msort_with_tmp: top-down merge sort, left run first on ties.
    static void merge_sort(Level* b, std::size_t n, Level* t) {
        if (n <= 1) return;
        const std::size_t n1 = n / 2, n2 = n - n1;
        Level* b1 = b;
        Level* b2 = b + n1;
        merge_sort(b1, n1, t);
        merge_sort(b2, n2, t);
        std::size_t i = 0, j = 0, k = 0;
        while (i < n1 && j < n2) {
            if (compare(b1[i], b2[j]) <= 0) {
                t[k++] = b1[i++];
            } else {
                t[k++] = b2[j++];
            }
        }
        while (i < n1) t[k++] = b1[i++];
        // The rest of b2 is already in place.
        std::copy(t, t + k, b);
    }
};

/// trec_eval's ideal gain sequence: the gain of the next ideal document after each next()
/// (the level walk of m_ndcg.c over the sorted gains, highest first).
struct IdealGains {
    explicit IdealGains(const Gains& g)
        : levels(g.levels),
          cur(static_cast<long>(g.levels.size()) - 1),
          gain(cur >= 0 ? levels[static_cast<std::size_t>(cur)].gain : 0.0) {}
    void next() {
        ++num_at_level;
        while (cur >= 0 && num_at_level > levels[static_cast<std::size_t>(cur)].num_at_level) {
            num_at_level = 1;
            --cur;
            gain = cur >= 0 ? levels[static_cast<std::size_t>(cur)].gain : 0.0;
        }
    }
    const std::vector<Gains::Level>& levels;
    long cur;
    double gain;
    long num_at_level = 0;
};

double log2_rank(long i) { return std::log2(static_cast<double>(i + 2)); }  // doc i has rank i+1

/// DCG of the whole list and ideal DCG of all judged documents (m_ndcg.c; the relevance
/// level is not used).
void dcg_pair(const QueryJudgements& q, Params p, double& results_dcg, double& ideal_dcg) {
    results_dcg = 0.0;
    ideal_dcg = 0.0;
    const Gains gains(q, p);
    IdealGains ig(gains);
    const long num_ret = num_ret_of(q);
    long i = 0;
    for (; i < num_ret && ig.gain > 0.0; ++i) {
        double g = gains.of(q.rels[static_cast<std::size_t>(i)]);
        if (g != 0) results_dcg += g / log2_rank(i);
        ig.next();
        if (ig.gain > 0.0) ideal_dcg += ig.gain / log2_rank(i);
    }
    for (; i < num_ret; ++i) {
        double g = gains.of(q.rels[static_cast<std::size_t>(i)]);
        if (g != 0) results_dcg += g / log2_rank(i);
    }
    while (ig.gain > 0.0) {
        ig.next();
        if (ig.gain > 0.0) ideal_dcg += ig.gain / log2_rank(i);
        ++i;
    }
}

/// nDCG over the whole list (m_ndcg.c with default gains: gain = grade).
void m_ndcg(const QueryJudgements& q, Params p, double* out) {
    double results_dcg, ideal_dcg;
    dcg_pair(q, p, results_dcg, ideal_dcg);
    out[0] = ideal_dcg > 0.0 ? results_dcg / ideal_dcg : 0.0;
}

void m_dcg(const QueryJudgements& q, Params p, double* out) {
    double results_dcg, ideal_dcg;
    dcg_pair(q, p, results_dcg, ideal_dcg);
    out[0] = results_dcg;
}

void m_ideal_dcg(const QueryJudgements& q, Params p, double* out) {
    double results_dcg, ideal_dcg;
    dcg_pair(q, p, results_dcg, ideal_dcg);
    out[0] = ideal_dcg;
}

/// nDCG averaged over the relevant documents (m_ndcg_rel.c).
void m_ndcg_rel(const QueryJudgements& q, Params p, double* out) {
    double results_dcg = 0.0, ideal_dcg = 0.0, sum = 0.0;
    long num_rel_ret = 0, num_rel = 0;
    const Gains gains(q, p);
    IdealGains ig(gains);
    const long num_ret = num_ret_of(q);
    long i = 0;
    for (; i < num_ret && ig.gain > 0.0; ++i) {
        double g = gains.of(q.rels[static_cast<std::size_t>(i)]);
        if (g != 0) results_dcg += g / log2_rank(i);
        ig.next();
        if (ig.gain > 0.0) {
            ++num_rel;
            ideal_dcg += ig.gain / log2_rank(i);
        }
        if (g > 0) {
            sum += results_dcg / ideal_dcg;
            ++num_rel_ret;
        }
    }
    for (; i < num_ret; ++i) {
        double g = gains.of(q.rels[static_cast<std::size_t>(i)]);
        if (g != 0) results_dcg += g / log2_rank(i);
        if (g > 0) {
            sum += results_dcg / ideal_dcg;
            ++num_rel_ret;
        }
    }
    while (ig.gain > 0.0) {
        ig.next();
        if (ig.gain > 0.0) {
            ++num_rel;
            ideal_dcg += ig.gain / log2_rank(i);
        }
        ++i;
    }
    out[0] = 0.0;
    if (ideal_dcg <= 0.0) return;  // trec_eval: 0 * 0 / 0 = NaN, not > 0 -> 0
    sum += static_cast<double>(num_rel - num_rel_ret) * results_dcg / ideal_dcg;
    if (sum > 0.0) out[0] = sum / static_cast<double>(num_rel);
}

/// nDCG averaged at the ranks where the ideal gain changes (m_Rndcg.c).
void m_Rndcg(const QueryJudgements& q, Params p, double* out) {
    out[0] = 0.0;
    if (num_rel_of(q) == 0) return;
    double results_dcg = 0.0, ideal_dcg = 0.0, sum = 0.0;
    const Gains gains(q, p);
    IdealGains ig(gains);
    double old_gain = ig.gain;
    long changes = 0;
    const long num_ret = num_ret_of(q);
    long i = 0;
    auto boundary = [&]() {
        if (old_gain != ig.gain) {
            if (ideal_dcg > 0.0) {
                sum += results_dcg / ideal_dcg;
                ++changes;
            }
            old_gain = ig.gain;
        }
    };
    for (; i < num_ret && ig.gain > 0.0; ++i) {
        double g = gains.of(q.rels[static_cast<std::size_t>(i)]);
        ig.next();
        boundary();
        if (g != 0) results_dcg += g / log2_rank(i);
        if (ig.gain > 0.0) ideal_dcg += ig.gain / log2_rank(i);
    }
    if (i < num_ret) {
        for (; i < num_ret; ++i) {
            double g = gains.of(q.rels[static_cast<std::size_t>(i)]);
            if (g != 0) results_dcg += g / log2_rank(i);
        }
        if (ideal_dcg > 0.0) {
            sum += results_dcg / ideal_dcg;
            ++changes;
        }
    }
    while (ig.gain > 0.0) {
        ig.next();
        boundary();
        if (ig.gain > 0.0) ideal_dcg += ig.gain / log2_rank(i);
        ++i;
    }
    if (changes > 0) out[0] = sum / static_cast<double>(changes);
}

/// Normalized gain G (m_G.c).
void m_G(const QueryJudgements& q, Params p, double* out) {
    double results_g = 0.0, sum_results = 0.0, sum_ideal = 0.0, sum_cost = 0.0;
    const double min_cost = 1.0;
    const Gains gains(q, p);
    IdealGains ig(gains);
    const long num_ret = num_ret_of(q);
    long i = 0;
    for (; i < num_ret && ig.gain > 0.0; ++i) {
        double g = gains.of(q.rels[static_cast<std::size_t>(i)]);
        sum_results += g;
        ig.next();
        if (ig.gain > 0.0) sum_ideal += ig.gain;
        sum_cost += ig.gain >= min_cost ? ig.gain : min_cost;
        if (g != 0) results_g += g / std::log2(2 + sum_cost - sum_results);
    }
    for (; i < num_ret; ++i) {
        double g = gains.of(q.rels[static_cast<std::size_t>(i)]);
        sum_results += g;
        sum_cost += min_cost;
        if (g != 0) results_g += g / std::log2(2 + sum_cost - sum_results);
    }
    while (ig.gain > 0.0) {
        ig.next();
        if (ig.gain > 0.0) sum_ideal += ig.gain;
    }
    out[0] = sum_ideal > 0.0 ? results_g / sum_ideal : 0.0;
}

/// Binary G (m_binG.c).
void m_binG(const QueryJudgements& q, Params, double* out) {
    long rel_so_far = 0;
    double sum = 0.0;
    const long n = num_ret_of(q);
    for (long i = 0; i < n; ++i) {
        if (q.rels[static_cast<std::size_t>(i)] >= q.relevance_level) {
            ++rel_so_far;
            sum += 1.0 / std::log2(static_cast<double>(3 + i - rel_so_far));
        }
    }
    out[0] = rel_so_far ? sum / static_cast<double>(num_rel_of(q)) : 0.0;
}

/// Inferred AP (m_infap.c).
void m_infAP(const QueryJudgements& q, Params, double* out) {
    constexpr double kEps = 0.00001;  // INFAP_EPSILON
    long nonrel_so_far = 0, rel_so_far = 0, unjudged_so_far = 0;
    double inf_ap = 0.0;
    const long n = num_ret_of(q);
    for (long j = 0; j < n; ++j) {
        const long r = q.rels[static_cast<std::size_t>(j)];
        if (r == kNotInQrels) continue;
        if (r == kNegativeGrade) {
            ++unjudged_so_far;
            continue;
        }
        if (r >= 0 && r < q.relevance_level) {
            ++nonrel_so_far;
        } else {
            ++rel_so_far;
            if (j == 0) {
                inf_ap += 1.0;
            } else {
                const double fj = static_cast<double>(j);
                inf_ap +=
                    1.0 / (fj + 1.0) +
                    (fj / (fj + 1.0)) *
                        (static_cast<double>(rel_so_far - 1 + nonrel_so_far + unjudged_so_far) /
                         fj) *
                        ((static_cast<double>(rel_so_far - 1) + kEps) /
                         (static_cast<double>(rel_so_far - 1 + nonrel_so_far) + 2 * kEps));
            }
        }
    }
    const long num_rel = num_rel_of(q);
    if (num_rel) inf_ap /= static_cast<double>(num_rel);
    out[0] = inf_ap;
}

/// Precision at multiples of R (m_Rprec_mult.c; recall multiples rounded as (long)(x*R + 0.9)).
void m_Rprec_mult(const QueryJudgements& q, Params p, double* out) {
    const long np = static_cast<long>(p.size());
    for (long c = 0; c < np; ++c) out[c] = 0.0;
    const long num_ret = num_ret_of(q), num_rel = num_rel_of(q), num_rel_ret = num_rel_ret_of(q);
    std::vector<long> cut(p.size());
    for (long c = 0; c < np; ++c) {
        cut[static_cast<std::size_t>(c)] =
            static_cast<long>(p[static_cast<std::size_t>(c)] * static_cast<double>(num_rel) + 0.9);
    }
    long current = np - 1;
    while (current >= 0 && cut[static_cast<std::size_t>(current)] > num_ret) {
        out[current] = static_cast<double>(num_rel_ret) /
                       static_cast<double>(cut[static_cast<std::size_t>(current)]);
        --current;
    }
    long rel_so_far = num_rel_ret;
    for (long i = num_ret; i > 0 && rel_so_far > 0; --i) {
        const double precis = static_cast<double>(rel_so_far) / static_cast<double>(i);
        while (current >= 0 && i == cut[static_cast<std::size_t>(current)]) {
            out[current] = precis;
            --current;
        }
        if (q.rels[static_cast<std::size_t>(i - 1)] >= q.relevance_level) --rel_so_far;
    }
}

/// Set utility p1*a + p2*b + p3*c + p4*d (m_utility.c).
void m_utility(const QueryJudgements& q, Params p, double* out) {
    const double nrr = static_cast<double>(num_rel_ret_of(q));
    const double nret = static_cast<double>(num_ret_of(q));
    const double nrel = static_cast<double>(num_rel_of(q));
    out[0] = p[0] * nrr + p[1] * (nret - nrr) + p[2] * (nrel - nrr) +
             p[3] * (static_cast<double>(q.num_docs_in_coll) + nrr - nret - nrel);
}

/// Interpolated precision averaged over recall levels (m_11pt_avg.c).
void m_11pt_avg(const QueryJudgements& q, Params p, double* out) {
    out[0] = 0.0;
    const long np = static_cast<long>(p.size());
    const long num_ret = num_ret_of(q);  // 0 (-J, -M0): 0/0 = NaN below, as in trec_eval
    if (np == 0) return;
    const long num_rel = num_rel_of(q), num_rel_ret = num_rel_ret_of(q);
    std::vector<long> cut(p.size());
    for (long c = 0; c < np; ++c) {
        const double x = p[static_cast<std::size_t>(c)] * static_cast<double>(num_rel);
        cut[static_cast<std::size_t>(c)] =
            q.trec_eval_9_iprec ? static_cast<long>(x + 0.9) : std::lround(x);
    }
    long current = np - 1;
    while (current >= 0 && cut[static_cast<std::size_t>(current)] > num_rel_ret) --current;
    double precis = static_cast<double>(num_rel_ret) / static_cast<double>(num_ret);
    double int_precis = precis, sum = 0.0;
    long rel_so_far = num_rel_ret;
    for (long i = num_ret; i > 0 && rel_so_far > 0; --i) {
        precis = static_cast<double>(rel_so_far) / static_cast<double>(i);
        if (int_precis < precis) int_precis = precis;
        if (q.rels[static_cast<std::size_t>(i - 1)] >= q.relevance_level) {
            while (current >= 0 && rel_so_far == cut[static_cast<std::size_t>(current)]) {
                sum += int_precis;
                --current;
            }
            --rel_so_far;
        }
    }
    while (current >= 0) {
        sum += int_precis;
        --current;
    }
    out[0] = sum / static_cast<double>(np);
}

void m_set_P(const QueryJudgements& q, Params, double* out) {
    const long nret = num_ret_of(q);
    out[0] = nret ? static_cast<double>(num_rel_ret_of(q)) / static_cast<double>(nret) : 0.0;
}

void m_set_recall(const QueryJudgements& q, Params, double* out) {
    const long nrel = num_rel_of(q);
    out[0] = nrel ? static_cast<double>(num_rel_ret_of(q)) / static_cast<double>(nrel) : 0.0;
}

void m_set_relative_P(const QueryJudgements& q, Params, double* out) {
    const long nret = num_ret_of(q), nrel = num_rel_of(q);
    out[0] = (nret && nrel) ? static_cast<double>(num_rel_ret_of(q)) /
                                  static_cast<double>(std::min(nret, nrel))
                            : 0.0;
}

void m_set_map(const QueryJudgements& q, Params, double* out) {
    const long nret = num_ret_of(q), nrel = num_rel_of(q);
    const double nrr = static_cast<double>(num_rel_ret_of(q));
    out[0] =
        (nret && nrel) ? nrr * nrr / (static_cast<double>(nret) * static_cast<double>(nrel)) : 0.0;
}

/// F measure of the retrieved set, x = relative importance of recall (m_set_F.c).
void m_set_F(const QueryJudgements& q, Params p, double* out) {
    out[0] = 0.0;
    const long nrr = num_rel_ret_of(q);
    if (!nrr) return;
    const double P = static_cast<double>(nrr) / static_cast<double>(num_ret_of(q));
    const double R = static_cast<double>(nrr) / static_cast<double>(num_rel_of(q));
    const double x = p[0];
    out[0] = (x + 1.0) * P * R / (x * P + R);
}

/// Judged non-relevant documents retrieved (m_num_nonrel_judged_ret.c).
void m_num_nonrel_judged_ret(const QueryJudgements& q, Params, double* out) {
    long n = 0;
    for (long r : q.rels) {
        if (r >= 0 && r < q.relevance_level) ++n;
    }
    out[0] = static_cast<double>(n);
}

/// Rank-biased precision (m_rbp.c): (1 - p) * sum of gain(doc at rank i) * p^(i-1), gains as
/// for nDCG (level=gain parameters, p=persistence, default 0.9) rescaled to [0, 1] by
/// (g - min) / (max - min) when some gain lies outside [0, 1]. trec_eval 10.0 leaves min and
/// max uninitialised before that scan (undefined behaviour: the value then depends on what an
/// earlier measure left on the stack, e.g. `-m dcg -m rbp` differs from `-m rbp`); plumb starts
/// both at 0, which is what trec_eval computes on a clean stack (`-m rbp`, `-m all_trec`).
void m_rbp(const QueryJudgements& q, Params p, double* out) {
    const double persistence = p[0];
    Gains gains(q, p);
    {
        double lo = 0.0, hi = 0.0;
        for (const auto& l : gains.levels) {
            lo = std::min(lo, l.gain);
            hi = std::max(hi, l.gain);
        }
        if (lo < 0 || hi > 1) {
            for (auto& l : gains.levels) l.gain = (l.gain - lo) / (hi - lo);
        }
    }
    double sum = 0.0, cur_p = 1.0;
    for (long r : q.rels) {
        const double g = gains.of(r);
        if (g != 0) sum += g * cur_p;
        cur_p *= persistence;
    }
    out[0] = (1.0 - persistence) * sum;
}

/// RBP residual (m_rbp_resid.c): the most RBP could still rise if every unjudged retrieved
/// document had gain 1: p^num_ret + (1 - p) * sum of p^(i-1) over unjudged ranks i; 0 when
/// every retrieved document is judged.
void m_rbp_resid(const QueryJudgements& q, Params p, double* out) {
    const double persistence = p[0];
    long unjudged = 0;
    double sum = 0.0, cur_p = 1.0;
    for (long r : q.rels) {
        if (r < 0) {
            ++unjudged;
            sum += cur_p;
        }
        cur_p *= persistence;
    }
    out[0] = unjudged ? cur_p + (1.0 - persistence) * sum : 0.0;
}

/// Unjudged at k (m_unjudged.c): documents of the top k not in the qrels or with a negative
/// grade, over k (missing ranks count as judged).
void m_unj(const QueryJudgements& q, Params p, double* out) {
    long unj = 0;
    walk_cutoffs(
        q, p,
        [&](std::size_t i) {
            if (q.rels[i] == kNotInQrels || q.rels[i] == kNegativeGrade) ++unj;
        },
        [&](std::size_t c) { out[c] = static_cast<double>(unj) / p[c]; });
}

/// RaB@k / ARaB@k of the ranking (eval/bias_metrics.hpp query_rank_bias): passages beyond the
/// list do not count (the mean is over min(k, n)); an empty ranking scores 0.
template <int Variant, int Kind>  // Kind: 0 RaB, 1 ARaB, 2 |RaB|
void m_rank_bias(const QueryJudgements& q, Params p, double* out) {
    const auto& bias = q.passage_bias[Variant];
    for (std::size_t c = 0; c < p.size(); ++c) {
        const std::size_t depth = std::min(static_cast<std::size_t>(p[c]), bias.size());
        double sum = 0.0, arab = 0.0;
        for (std::size_t i = 0; i < depth; ++i) {
            sum += bias[i];
            arab += sum / static_cast<double>(i + 1);
        }
        const double d = static_cast<double>(depth);
        const double rab = depth ? sum / d : 0.0;
        out[c] = Kind == 0 ? rab : Kind == 1 ? (depth ? arab / d : 0.0) : std::fabs(rab);
    }
}

/// relstring is rendered by the evaluator (a string, not a number).
void m_none(const QueryJudgements&, Params, double* out) { out[0] = 0.0; }

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
    // Ideal ranking: grades from the highest down, each as often as it is judged; grade 0
    // and below end it.
    const auto& counts = q.level_counts;
    std::size_t ci = 0;
    long cur = static_cast<long>(counts.size()) - 1;  // index into counts
    long lvl_count = 0;
    double ideal_dcg = 0.0;
    for (std::size_t i = 0;; ++i) {
        ++lvl_count;
        while (cur >= 0 && lvl_count > counts[static_cast<std::size_t>(cur)].count) {
            --cur;
            lvl_count = 1;
        }
        if (cur < 0 || counts[static_cast<std::size_t>(cur)].grade <= 0) break;
        if (static_cast<double>(i) == p[ci]) {
            if (ideal_dcg > 0.0) out[ci] /= ideal_dcg;
            if (++ci == p.size()) break;
        }
        ideal_dcg += static_cast<double>(counts[static_cast<std::size_t>(cur)].grade) /
                     std::log2(static_cast<double>(i + 2));
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
        q, p,
        [&](std::size_t i) {
            if (q.rels[i] != kNotInQrels) ++judged;
        },
        [&](std::size_t c) { out[c] = static_cast<double>(judged) / p[c]; });
}

// ---------------------------------------------------------------------------------------------
// Registry, in trec_eval's measure order (measures.c) with plumb's extras last.
// ---------------------------------------------------------------------------------------------

/// How a measure takes parameters (trec_eval's init_meas kinds).
enum class ParamKind {
    None,           ///< none (parameters given anyway are ignored, as trec_eval does)
    LongCutoffs,    ///< sorted distinct positive ranks, one column each: name_k
    DoubleCutoffs,  ///< sorted distinct reals, one column each: name_%3.2f
    DoubleParams,   ///< reals in the given order, one column: name, or name_<params as given>
    GainPairs,      ///< name=value pairs: level=gain (integer names), p=persistence (rbp);
                    ///< stored as [p, level1, gain1, level2, gain2, ...]; one column named
                    ///< name, or name_<pairs as given>
};
enum class Aggregate { None, Mean, Sum, Count, GeoMean };

struct MeasureDef {
    const char* name;
    ParamKind params;
    std::vector<double> defaults;
    ValueKind kind;
    Aggregate aggregate;
    bool per_query;
    void (*compute)(const QueryJudgements&, Params, double*);
    int bias_variant = -1;  ///< gender-bias measures: the variant they read (0 tc, 1 tf, 2 bool)
};

const std::vector<double> kStdCutoffs = {5, 10, 15, 20, 30, 100, 200, 500, 1000};
const std::vector<double> kRecallLevels = {0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0};

const std::vector<MeasureDef>& registry() {
    using P = ParamKind;
    using V = ValueKind;
    using A = Aggregate;
    static const std::vector<MeasureDef> r = {
        {"runid", P::None, {}, V::Float, A::None, false, nullptr},
        {"num_q", P::None, {}, V::Long, A::Count, false, m_num_q},
        {"num_ret", P::None, {}, V::Long, A::Sum, true, m_num_ret},
        {"num_rel", P::None, {}, V::Long, A::Sum, true, m_num_rel},
        {"num_rel_ret", P::None, {}, V::Long, A::Sum, true, m_num_rel_ret},
        {"map", P::None, {}, V::Float, A::Mean, true, m_map},
        {"gm_map", P::None, {}, V::Float, A::GeoMean, false, m_map},
        {"Rprec", P::None, {}, V::Float, A::Mean, true, m_Rprec},
        {"bpref", P::None, {}, V::Float, A::Mean, true, m_bpref},
        {"recip_rank", P::None, {}, V::Float, A::Mean, true, m_recip_rank},
        {"iprec_at_recall", P::DoubleCutoffs, kRecallLevels, V::Float, A::Mean, true,
         m_iprec_at_recall},
        {"P", P::LongCutoffs, kStdCutoffs, V::Float, A::Mean, true, m_P},
        {"relstring", P::DoubleParams, {10}, V::Text, A::None, true, m_none},
        {"recall", P::LongCutoffs, kStdCutoffs, V::Float, A::Mean, true, m_recall},
        {"infAP", P::None, {}, V::Float, A::Mean, true, m_infAP},
        {"gm_bpref", P::None, {}, V::Float, A::GeoMean, false, m_bpref},
        {"Rprec_mult",
         P::DoubleCutoffs,
         {0.2, 0.4, 0.6, 0.8, 1.0, 1.2, 1.4, 1.6, 1.8, 2.0},
         V::Float,
         A::Mean,
         true,
         m_Rprec_mult},
        {"utility", P::DoubleParams, {1.0, -1.0, 0.0, 0.0}, V::Float, A::Mean, true, m_utility},
        {"11pt_avg", P::DoubleParams, kRecallLevels, V::Float, A::Mean, true, m_11pt_avg},
        {"binG", P::None, {}, V::Float, A::Mean, true, m_binG},
        {"G", P::GainPairs, {0.9}, V::Float, A::Mean, true, m_G},
        {"dcg", P::GainPairs, {0.9}, V::Float, A::Mean, true, m_dcg},
        {"ideal_dcg", P::GainPairs, {0.9}, V::Float, A::Mean, true, m_ideal_dcg},
        {"ndcg", P::GainPairs, {0.9}, V::Float, A::Mean, true, m_ndcg},
        {"ndcg_rel", P::GainPairs, {0.9}, V::Float, A::Mean, true, m_ndcg_rel},
        {"Rndcg", P::GainPairs, {0.9}, V::Float, A::Mean, true, m_Rndcg},
        {"ndcg_cut", P::LongCutoffs, kStdCutoffs, V::Float, A::Mean, true, m_ndcg_cut},
        {"map_cut", P::LongCutoffs, kStdCutoffs, V::Float, A::Mean, true, m_map_cut},
        {"relative_P", P::LongCutoffs, kStdCutoffs, V::Float, A::Mean, true, m_relative_P},
        {"success", P::LongCutoffs, {1, 5, 10}, V::Float, A::Mean, true, m_success},
        {"set_P", P::None, {}, V::Float, A::Mean, true, m_set_P},
        {"set_relative_P", P::None, {}, V::Float, A::Mean, true, m_set_relative_P},
        {"set_recall", P::None, {}, V::Float, A::Mean, true, m_set_recall},
        {"set_map", P::None, {}, V::Float, A::Mean, true, m_set_map},
        {"set_F", P::DoubleParams, {1.0}, V::Float, A::Mean, true, m_set_F},
        {"num_nonrel_judged_ret", P::None, {}, V::Long, A::Sum, true, m_num_nonrel_judged_ret},
        {"rbp", P::GainPairs, {0.9}, V::Float, A::Mean, true, m_rbp},
        {"rbp_resid", P::GainPairs, {0.9}, V::Float, A::Mean, true, m_rbp_resid},
        {"unj", P::LongCutoffs, {5, 10, 20}, V::Float, A::Mean, true, m_unj},
        // plumb's measures
        {"mrr_cut", P::LongCutoffs, {10}, V::Float, A::Mean, true, m_mrr_cut},
        {"judged", P::LongCutoffs, {10}, V::Float, A::Mean, true, m_judged},
        {"rab_tc_cut", P::LongCutoffs, {10}, V::Float, A::Mean, true, m_rank_bias<0, 0>, 0},
        {"rab_tf_cut", P::LongCutoffs, {10}, V::Float, A::Mean, true, m_rank_bias<1, 0>, 1},
        {"rab_bool_cut", P::LongCutoffs, {10}, V::Float, A::Mean, true, m_rank_bias<2, 0>, 2},
        {"arab_tc_cut", P::LongCutoffs, {10}, V::Float, A::Mean, true, m_rank_bias<0, 1>, 0},
        {"arab_tf_cut", P::LongCutoffs, {10}, V::Float, A::Mean, true, m_rank_bias<1, 1>, 1},
        {"arab_bool_cut", P::LongCutoffs, {10}, V::Float, A::Mean, true, m_rank_bias<2, 1>, 2},
        {"abs_rab_tc_cut", P::LongCutoffs, {10}, V::Float, A::Mean, true, m_rank_bias<0, 2>, 0},
        {"abs_rab_tf_cut", P::LongCutoffs, {10}, V::Float, A::Mean, true, m_rank_bias<1, 2>, 1},
        {"abs_rab_bool_cut", P::LongCutoffs, {10}, V::Float, A::Mean, true, m_rank_bias<2, 2>, 2},
    };
    return r;
}

// Nicknames (measures.c).
const std::vector<std::string> kOfficial = {
    "runid",  "num_q", "num_ret", "num_rel",    "num_rel_ret",     "map",
    "gm_map", "Rprec", "bpref",   "recip_rank", "iprec_at_recall", "P"};
const std::vector<std::string> kAllTrec = {"runid",
                                           "num_q",
                                           "num_ret",
                                           "num_rel",
                                           "num_rel_ret",
                                           "map",
                                           "gm_map",
                                           "Rprec",
                                           "bpref",
                                           "recip_rank",
                                           "iprec_at_recall",
                                           "P",
                                           "relstring",
                                           "recall",
                                           "unj",
                                           "rbp",
                                           "rbp_resid",
                                           "infAP",
                                           "gm_bpref",
                                           "utility",
                                           "11pt_avg",
                                           "ndcg",
                                           "relative_P",
                                           "Rprec_mult",
                                           "success",
                                           "map_cut",
                                           "ndcg_cut",
                                           "ndcg_rel",
                                           "Rndcg",
                                           "binG",
                                           "G",
                                           "set_P",
                                           "set_recall",
                                           "set_relative_P",
                                           "set_map",
                                           "set_F",
                                           "num_nonrel_judged_ret"};
const std::vector<std::string> kSet = {"runid",          "num_q",   "num_ret", "num_rel",
                                       "num_rel_ret",    "utility", "set_P",   "set_recall",
                                       "set_relative_P", "set_map", "set_F"};

const std::vector<std::string>* nickname(std::string_view name) {
    if (name == "official") return &kOfficial;
    if (name == "all_trec") return &kAllTrec;
    if (name == "set") return &kSet;
    return nullptr;
}

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
            // trec_eval reads rank cutoffs with atol: "23.4" is 23.
            if (auto dot = item.find('.');
                dot != std::string_view::npos && dot > 0 &&
                item.find_first_not_of("0123456789", dot + 1) == std::string_view::npos) {
                item = item.substr(0, dot);
            }
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

/// Comma-separated reals in the given order (trec_eval's get_double_params).
std::vector<double> parse_params(const std::string& measure, const std::string& text) {
    std::vector<double> out;
    std::size_t start = 0;
    for (;;) {
        std::size_t comma = text.find(',', start);
        std::string_view item(text.data() + start,
                              (comma == std::string::npos ? text.size() : comma) - start);
        double v = 0;
        if (!detail::parse_double(item, v)) {
            throw ConfigError("measure '" + measure + "': parameter '" + std::string(item) +
                              "' is not a number");
        }
        out.push_back(v);
        if (comma == std::string::npos) break;
        start = comma + 1;
    }
    return out;
}

/// Whole-string integer as trec_eval's valid_int (gain_init.c): optional sign, digits only.
bool valid_int(std::string_view s) {
    if (!s.empty() && (s.front() == '-' || s.front() == '+')) s.remove_prefix(1);
    if (s.empty()) return false;
    return std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

/// `name=value,...` pairs (meas_init.c get_param_pairs): integer names are relevance levels
/// with their gain, appended to `out` as (level, gain); `p` sets the persistence out[0] (the
/// last one wins); other names are ignored, as trec_eval ignores them.
void parse_pairs(const std::string& measure, const std::string& text, std::vector<double>& out) {
    std::size_t start = 0;
    for (;;) {
        std::size_t comma = text.find(',', start);
        std::string_view item(text.data() + start,
                              (comma == std::string::npos ? text.size() : comma) - start);
        const std::size_t eq = item.find('=');
        if (eq == std::string_view::npos || eq == 0 || item.find('=', eq + 1) != item.npos) {
            throw ConfigError("measure '" + measure + "': malformed pair parameters in '" + text +
                              "' (expected name=value,...)");
        }
        const std::string_view key = item.substr(0, eq);
        double v = 0;
        if (!detail::parse_double(item.substr(eq + 1), v)) {
            throw ConfigError("measure '" + measure + "': value '" +
                              std::string(item.substr(eq + 1)) + "' is not a number");
        }
        if (valid_int(key)) {
            long level = 0;
            if (!detail::parse_long(key, level)) {
                throw ConfigError("measure '" + measure + "': level '" + std::string(key) +
                                  "' is out of range");
            }
            out.push_back(static_cast<double>(level));
            out.push_back(v);
        } else if (key == "p") {
            out[0] = v;
        }
        if (comma == std::string::npos) break;
        start = comma + 1;
    }
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
    out.emplace_back("all_trec");
    out.emplace_back("set");
    return out;
}

MeasureSet MeasureSet::official() { return parse({"official"}); }

namespace {

/// An ir_measures name (`nDCG@10`, `RR@10`, `R@1000`, `AP`, `P@5`, `Judged@10`, `AP@100`,
/// `RBP(p=0.8)`, ...) as the trec_eval measure and parameter text that compute it, or nullopt
/// when `spec` is not in ir_measures' syntax. Throws ConfigError for an ir_measures measure or
/// parameter plumb does not compute.
std::optional<std::pair<std::string, std::string>> from_ir_measures(const std::string& spec) {
    // trec_eval's own names (P, Rprec, infAP, P.10) keep trec_eval's meaning.
    if (spec.find_first_of("@(") == std::string::npos &&
        (find_measure(spec.substr(0, spec.find('.'))) >= 0 ||
         nickname(spec.substr(0, spec.find('.'))))) {
        return std::nullopt;
    }
    std::string name = spec, args, cutoff;
    if (auto at = name.find('@'); at != std::string::npos) {
        cutoff = name.substr(at + 1);
        name = name.substr(0, at);
    }
    if (auto open = name.find('('); open != std::string::npos) {
        if (name.back() != ')') {
            throw ConfigError("measure '" + spec + "': unbalanced parentheses");
        }
        args = name.substr(open + 1, name.size() - open - 2);
        name = name.substr(0, open);
    }
    struct Alias {
        const char* ir;
        const char* trec;      // measure without a cutoff
        const char* trec_cut;  // measure with @k, nullptr = takes no cutoff
        bool cutoff_required;
    };
    static const Alias kAliases[] = {
        {"AP", "map", "map_cut", false},        {"P", nullptr, "P", true},
        {"R", nullptr, "recall", true},         {"RR", "recip_rank", "mrr_cut", false},
        {"nDCG", "ndcg", "ndcg_cut", false},    {"Judged", nullptr, "judged", true},
        {"Success", nullptr, "success", true},  {"IPrec", nullptr, "iprec_at_recall", true},
        {"Bpref", "bpref", nullptr, false},     {"infAP", "infAP", nullptr, false},
        {"Rprec", "Rprec", nullptr, false},     {"NumRet", "num_ret", nullptr, false},
        {"NumRel", "num_rel", nullptr, false},  {"NumRelRet", "num_rel_ret", nullptr, false},
        {"NumQ", "num_q", nullptr, false},      {"SetP", "set_P", nullptr, false},
        {"SetR", "set_recall", nullptr, false}, {"SetF", "set_F", nullptr, false},
        {"SetAP", "set_map", nullptr, false},   {"RBP", "rbp", nullptr, false},
    };
    const Alias* alias = nullptr;
    for (const auto& a : kAliases) {
        if (name == a.ir) alias = &a;
    }
    if (!alias) {
        static const char* kUnsupported[] = {
            "ERR",     "alpha_nDCG", "NERR8",     "NERR9",  "NERR10",
            "NERR11",  "STREC",      "INST",      "INSQ",   "SDCG",
            "Compat",  "BPM",        "accuracy",  "P_IA",   "AP_IA",
            "nDCG_IA", "ERR_IA",     "alpha_DCG", "SetRel", "NumNonRelJudgedRet"};
        for (const char* u : kUnsupported) {
            if (name == u) {
                throw ConfigError("measure '" + spec + "': the ir_measures measure '" + name +
                                  "' is not computed by plumb");
            }
        }
        return std::nullopt;
    }
    if (!cutoff.empty() && !alias->trec_cut) {
        throw ConfigError("measure '" + spec + "': " + name + " takes no @cutoff");
    }
    if (cutoff.empty() && !alias->trec) {
        throw ConfigError("measure '" + spec + "': " + name + " needs a cutoff, e.g. " + name +
                          "@10");
    }
    std::string params = cutoff;
    if (name == "RBP" && args.empty()) params = "p=0.8";  // ir_measures' default persistence
    if (!args.empty()) {
        // Only RBP's persistence maps onto a trec_eval parameter; rel=, judged_only= and gains
        // change the relevance rule per measure, which trec_eval sets for all (-l, -J).
        if (name == "RBP" && args.rfind("p=", 0) == 0 && args.find(',') == std::string::npos) {
            params = args;
        } else {
            throw ConfigError("measure '" + spec + "': parameters '(" + args +
                              ")' are not supported (use -l for the relevance level, -J for "
                              "judged documents only)");
        }
    }
    return std::make_pair(std::string(cutoff.empty() ? alias->trec : alias->trec_cut), params);
}

}  // namespace

void MeasureSet::add_column_set(std::size_t measure, bool given, const std::string& param_text,
                                const std::string* alias) {
    const auto& reg = registry();
    const MeasureDef& def = reg[measure];
    Selected sel;
    sel.measure = measure;
    sel.first_column = m_columns.size();
    auto push = [&](std::string column) {
        Column c{alias ? *alias : column, def.kind, def.per_query, {}};
        c.trec_name = std::move(column);
        m_columns.push_back(std::move(c));
    };
    switch (def.params) {
        case ParamKind::None:
            push(def.name);
            break;
        case ParamKind::GainPairs: {
            sel.params = def.defaults;  // [p]
            std::string name = def.name;
            if (given) {
                parse_pairs(def.name, param_text, sel.params);
                name += "_" + param_text;
            }
            push(name);
            break;
        }
        case ParamKind::DoubleParams: {
            sel.params = given ? parse_params(def.name, param_text) : def.defaults;
            if (std::string(def.name) == "utility" && sel.params.size() != 4) {
                throw ConfigError("measure 'utility' needs 4 coefficients");
            }
            if (std::string(def.name) == "relstring") {
                m_relstring = std::max(0L, static_cast<long>(sel.params[0]));
            }
            std::string name = def.name;
            if (given) name += "_" + param_text;
            push(name);
            break;
        }
        case ParamKind::LongCutoffs:
        case ParamKind::DoubleCutoffs:
            sel.params =
                given ? parse_cutoffs(def.name, param_text, def.params == ParamKind::LongCutoffs)
                      : def.defaults;
            if (alias && sel.params.size() != 1) {
                throw ConfigError("measure '" + *alias + "': one cutoff only");
            }
            for (double p : sel.params) push(column_name(def, p));
            break;
    }
    m_selected.push_back(std::move(sel));
}

MeasureSet MeasureSet::parse(const std::vector<std::string>& specs) {
    const auto& reg = registry();
    std::vector<bool> marked(reg.size(), false);
    std::map<std::string, std::string> params;  // first parameter list per measure name
    std::vector<std::pair<std::string, std::pair<std::string, std::string>>> aliases;
    for (const auto& spec : specs) {
        if (auto ir = from_ir_measures(spec)) {
            bool seen = false;
            for (const auto& a : aliases) seen = seen || a.first == spec;
            if (!seen) aliases.emplace_back(spec, std::move(*ir));
            continue;
        }
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
        if (const auto* nick = nickname(name)) {
            for (const auto& n : *nick) marked[static_cast<std::size_t>(find_measure(n))] = true;
            continue;
        }
        long idx = find_measure(name);
        if (idx < 0) {
            throw ConfigError("unknown measure '" + spec + "' (known: " + known_list() +
                              "; ir_measures names such as nDCG@10, RR@10, R@1000, AP, P@5, "
                              "Judged@10, AP@100)");
        }
        marked[static_cast<std::size_t>(idx)] = true;
    }
    MeasureSet set;
    for (std::size_t i = 0; i < reg.size(); ++i) {
        if (!marked[i]) continue;
        if (!reg[i].compute) {  // runid
            set.m_runid = true;
            continue;
        }
        auto it = params.find(reg[i].name);
        set.add_column_set(i, it != params.end(), it != params.end() ? it->second : "", nullptr);
    }
    // ir_measures names after trec_eval's, in command-line order, under the names given.
    for (const auto& [spec, trec] : aliases) {
        const long idx = find_measure(trec.first);
        set.add_column_set(static_cast<std::size_t>(idx), !trec.second.empty(), trec.second, &spec);
    }
    for (const auto& sel : set.m_selected) {
        const int v = reg[sel.measure].bias_variant;
        auto& vs = set.m_bias_variants;
        if (v >= 0 && std::find(vs.begin(), vs.end(), v) == vs.end()) vs.push_back(v);
    }
    std::sort(set.m_bias_variants.begin(), set.m_bias_variants.end());
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
        const bool multi =
            def.params == ParamKind::LongCutoffs || def.params == ParamKind::DoubleCutoffs;
        const std::size_t ncols = multi ? sel.params.size() : 1;
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
