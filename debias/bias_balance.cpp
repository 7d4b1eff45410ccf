#include "debias/bias_balance.hpp"

#include <algorithm>
#include <cmath>

#include "plugin/error.hpp"

namespace plumb::debias {

BiasBalance::BiasBalance(BiasBalanceOptions options, PassageBias bias)
    : m_options(options), m_bias(std::move(bias)) {
    if (m_options.k == 0) throw InvalidArgument("bias_balance: k must be >= 1");
    if (!(m_options.budget >= 0.0)) {
        throw InvalidArgument("bias_balance: budget must be >= 0");
    }
    if (!m_bias.configured()) {
        throw InvalidArgument("bias_balance: needs a bias file or a gender word list");
    }
}

PostFilterReport BiasBalance::apply_with_report(const Query&, RankedList& list) const {
    auto& cands = list.candidates;
    PostFilterReport r;
    r.filter = name();
    r.k = m_options.k;
    r.before = summarize_ranking(cands, r.k, m_bias, &r.missing_bias);
    const std::size_t n = cands.size();
    const std::size_t pool = m_options.depth == 0 ? n : std::min(m_options.depth, n);
    const std::size_t top = std::min(r.k, pool);
    std::vector<double> b(pool);
    for (std::size_t i = 0; i < pool; ++i) {
        const auto v = m_bias.value(cands[i]);
        b[i] = v.triple.male - v.triple.female;
    }
    std::vector<char> used(n, 0);
    std::vector<std::size_t> order;
    order.reserve(n);
    double remaining = m_options.budget, spent = 0.0, sum = 0.0;
    std::size_t first = 0;  // first unused index of the pool
    for (std::size_t pos = 0; pos < top; ++pos) {
        while (used[first]) ++first;
        std::size_t best = first;
        if (remaining > 0.0) {
            const double sf = cands[first].score;
            double best_abs = std::abs(sum + b[first]);
            for (std::size_t c = first + 1; c < pool; ++c) {
                if (used[c]) continue;
                const double charge = std::max(0.0, sf - static_cast<double>(cands[c].score));
                if (charge > remaining) continue;
                const double a = std::abs(sum + b[c]);
                if (a < best_abs) {
                    best_abs = a;
                    best = c;
                }
            }
            const double charge = std::max(0.0, sf - static_cast<double>(cands[best].score));
            remaining -= charge;
            spent += charge;
        }
        used[best] = 1;
        sum += b[best];
        order.push_back(best);
    }
    for (std::size_t i = 0; i < n; ++i) {
        if (!used[i]) order.push_back(i);
    }
    bool changed = false;
    for (std::size_t i = 0; i < n; ++i) changed = changed || order[i] != i;
    if (changed) {
        std::vector<Candidate> out;
        out.reserve(n);
        for (auto i : order) out.push_back(cands[i]);
        auto after = summarize_ranking(out, r.k, m_bias);
        if (std::abs(after.bias) > std::abs(r.before.bias)) {
            changed = false;  // greedy made it worse: keep the input order
        } else {
            cands = std::move(out);
            r.after = after;
            r.score_loss = spent;
            rewrite_scores(cands, name());
        }
    }
    r.changed = changed;
    if (!changed) r.after = r.before;
    return r;
}

}  // namespace plumb::debias
