#include "debias/fair_topk.hpp"

#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

#include "plugin/error.hpp"

namespace plumb::debias {

ProtectedGroup parse_protected_group(const std::string& name) {
    if (name == "female") return ProtectedGroup::Female;
    if (name == "male") return ProtectedGroup::Male;
    if (name == "neutral") return ProtectedGroup::Neutral;
    throw InvalidArgument("fair_topk: protected group must be female, male or neutral, not '" +
                          name + "'");
}

namespace {

void check_params(std::size_t k, double p, double alpha) {
    if (k == 0) throw InvalidArgument("fair_topk: k must be >= 1");
    if (!(p > 0.0 && p < 1.0)) throw InvalidArgument("fair_topk: p must be in (0, 1)");
    if (!(alpha > 0.0 && alpha < 1.0)) throw InvalidArgument("fair_topk: alpha must be in (0, 1)");
}

}  // namespace

std::vector<std::size_t> fair_mtable(std::size_t k, double p, double alpha) {
    check_params(k, p, alpha);
    std::vector<std::size_t> m(k, 0);
    std::vector<double> pmf{1.0};  // Bin(0, p)
    for (std::size_t i = 1; i <= k; ++i) {
        std::vector<double> next(i + 1, 0.0);
        for (std::size_t j = 0; j < pmf.size(); ++j) {
            next[j] += pmf[j] * (1.0 - p);
            next[j + 1] += pmf[j] * p;
        }
        pmf.swap(next);
        double cdf = 0.0;
        std::size_t mi = i;  // F(i; i, p) = 1 > alpha always
        for (std::size_t j = 0; j <= i; ++j) {
            cdf += pmf[j];
            if (cdf > alpha) {
                mi = j;
                break;
            }
        }
        m[i - 1] = mi;
    }
    return m;
}

double fair_fail_probability(const std::vector<std::size_t>& mtable, double p) {
    // q[j]: probability of j protected in the prefix and no failure so far.
    std::vector<double> q{1.0};
    double fail = 0.0;
    for (std::size_t i = 1; i <= mtable.size(); ++i) {
        std::vector<double> next(i + 1, 0.0);
        for (std::size_t j = 0; j < q.size(); ++j) {
            next[j] += q[j] * (1.0 - p);
            next[j + 1] += q[j] * p;
        }
        const std::size_t need = std::min(mtable[i - 1], i + 1);
        for (std::size_t j = 0; j < need; ++j) {
            fail += next[j];
            next[j] = 0.0;
        }
        q.swap(next);
    }
    return fail;
}

double fair_adjusted_alpha(std::size_t k, double p, double alpha) {
    check_params(k, p, alpha);
    if (fair_fail_probability(fair_mtable(k, p, alpha), p) <= alpha) return alpha;
    double lo = 0.0, hi = alpha;  // fail(lo) <= alpha (m = 0 everywhere as alpha_c -> 0)
    for (int it = 0; it < 60; ++it) {
        const double mid = 0.5 * (lo + hi);
        if (mid <= 0.0) break;
        if (fair_fail_probability(fair_mtable(k, p, mid), p) <= alpha) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    return lo;
}

FairTopK::FairTopK(FairTopKOptions options, PassageBias bias)
    : m_options(std::move(options)), m_bias(std::move(bias)) {
    check_params(m_options.k, m_options.p, m_options.alpha);
    if (m_options.group == ProtectedGroup::Custom && !m_options.is_protected) {
        throw InvalidArgument("fair_topk: custom protected group without a predicate");
    }
    if (m_options.group != ProtectedGroup::Custom && !m_bias.configured()) {
        throw InvalidArgument("fair_topk: needs a bias file or a gender word list");
    }
    m_alpha_c = m_options.adjust_alpha
                    ? fair_adjusted_alpha(m_options.k, m_options.p, m_options.alpha)
                    : m_options.alpha;
    if (m_alpha_c > 0.0) {
        m_mtable = fair_mtable(m_options.k, m_options.p, m_alpha_c);
    } else {
        m_mtable.assign(m_options.k, 0);
    }
}

bool FairTopK::protected_value(const Candidate& c, const PassageBias::Value& v) const {
    switch (m_options.group) {
        case ProtectedGroup::Female:
            return v.label == -1;
        case ProtectedGroup::Male:
            return v.label == 1;
        case ProtectedGroup::Neutral:
            return v.label == 0;
        case ProtectedGroup::Custom:
            return m_options.is_protected(c, v);
    }
    return false;
}

bool FairTopK::is_protected(const Candidate& candidate) const {
    return protected_value(candidate, m_bias.value(candidate));
}

PostFilterReport FairTopK::apply_with_report(const Query&, RankedList& list) const {
    auto& cands = list.candidates;
    PostFilterReport r = start_report(name(), m_options.k, cands, m_bias);
    const std::size_t n = cands.size();
    std::vector<char> prot(n, 0);
    for (std::size_t i = 0; i < n; ++i) prot[i] = is_protected(cands[i]) ? 1 : 0;
    auto count_protected = [&](const std::vector<std::size_t>& order) {
        std::size_t c = 0;
        for (std::size_t i = 0; i < std::min(r.k, order.size()); ++i) c += prot[order[i]];
        return c;
    };
    std::vector<std::size_t> identity(n);
    for (std::size_t i = 0; i < n; ++i) identity[i] = i;
    r.before.protected_count = count_protected(identity);

    std::vector<std::size_t> pq, nq;  // queues in input order
    for (std::size_t i = 0; i < n; ++i) (prot[i] ? pq : nq).push_back(i);
    std::size_t pi = 0, ni = 0, taken_protected = 0;
    std::vector<std::size_t> order;
    order.reserve(n);
    std::vector<char> used(n, 0);
    const std::size_t top = std::min(r.k, n);
    for (std::size_t pos = 0; pos < top; ++pos) {
        const bool need = taken_protected < m_mtable[pos];
        const bool has_p = pi < pq.size(), has_n = ni < nq.size();
        bool take_p;
        if (need) {
            take_p = has_p;
            if (!has_p) r.feasible = false;
        } else if (has_p && has_n) {
            const auto& a = cands[pq[pi]];
            const auto& b = cands[nq[ni]];
            take_p = a.score > b.score || (a.score == b.score && pq[pi] < nq[ni]);
        } else {
            take_p = has_p;
        }
        const std::size_t idx = take_p ? pq[pi++] : nq[ni++];
        taken_protected += prot[idx];
        used[idx] = 1;
        order.push_back(idx);
    }
    // A list shorter than k is checked on the prefixes it has (1..n).
    for (std::size_t i = 0; i < n; ++i) {
        if (!used[i]) order.push_back(i);
    }
    r.changed = order != identity;
    if (r.changed) {
        std::vector<Candidate> out;
        out.reserve(n);
        for (auto i : order) out.push_back(std::move(cands[i]));
        cands = std::move(out);
    }
    r.after = summarize_ranking(cands, r.k, m_bias);
    std::vector<char> prot_after(n);
    for (std::size_t i = 0; i < n; ++i) prot_after[i] = prot[order[i]];
    prot = std::move(prot_after);
    r.after.protected_count = count_protected(identity);
    if (r.changed) rewrite_scores(cands);
    return r;
}

std::shared_ptr<const PostFilter> FairTopK::from_config(const nlohmann::json& c,
                                                      StageContext& ctx) {
    const std::string where = "post-filter \"fair_topk\"";
    check_keys(c, kCommonFilterKeys, {"p", "alpha", "adjust_alpha", "protected"}, where);
    auto common = common_filter_config(c, ctx, where);
    FairTopKOptions o;
    o.k = common.k;
    o.p = config_double(c, "p", o.p, where);
    o.alpha = config_double(c, "alpha", o.alpha, where);
    o.adjust_alpha = config_bool(c, "adjust_alpha", o.adjust_alpha, where);
    try {
        o.group = parse_protected_group(config_string(c, "protected", "female", where));
    } catch (const InvalidArgument& e) {
        throw ConfigError(where + ": " + e.what());
    }
    return std::make_shared<const FairTopK>(std::move(o), std::move(common.bias));
}

}  // namespace plumb::debias
