#include "debias/bias_balance.hpp"

#include <algorithm>
#include <cmath>

#include <limits>
#include <nlohmann/json.hpp>

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
    PostFilterReport r = start_report(name(), m_options.k, cands, m_bias);
    const std::size_t n = cands.size();
    const std::size_t pool = examined_candidates(m_options.depth, n);
    const std::size_t top = std::min(r.k, n);
    std::vector<double> b(n, 0.0);
    for (std::size_t i = 0; i < std::max(pool, top); ++i) {
        const auto v = m_bias.value(cands[i]);
        b[i] = v.triple.male - v.triple.female;
    }
    // in_top[i]: candidate i (input position) is in the top-k.
    std::vector<char> in_top(n, 0);
    double sum = 0.0;
    for (std::size_t i = 0; i < top; ++i) {
        in_top[i] = 1;
        sum += b[i];
    }
    double spent = 0.0;
    bool changed = false;
    if (m_options.budget > 0.0 && top < pool) {
        while (true) {
            bool found = false;
            std::size_t bx = 0, by = 0;
            double best_abs = std::abs(sum), best_cost = 0.0;
            std::vector<std::size_t> xs, ys;
            for (std::size_t i = 0; i < pool; ++i) (in_top[i] ? xs : ys).push_back(i);
            for (const std::size_t x : xs) {
                for (const std::size_t y : ys) {
                    const double cost =
                        static_cast<double>(cands[x].score) - static_cast<double>(cands[y].score);
                    if (spent + cost > m_options.budget) continue;
                    const double a = std::abs(sum - b[x] + b[y]);
                    const bool better =
                        !found ? a < best_abs
                               : (a < best_abs ||
                                  (a == best_abs &&
                                   (cost < best_cost ||
                                    (cost == best_cost && (x > bx || (x == bx && y < by))))));
                    if (better) {
                        found = true;
                        best_abs = a;
                        best_cost = cost;
                        bx = x;
                        by = y;
                    }
                }
            }
            if (!found) break;
            in_top[bx] = 0;
            in_top[by] = 1;
            sum = sum - b[bx] + b[by];
            spent += best_cost;
            changed = true;
        }
    }
    if (changed) {
        std::vector<Candidate> out;
        out.reserve(n);
        for (std::size_t i = 0; i < n; ++i) {
            if (in_top[i]) out.push_back(std::move(cands[i]));
        }
        for (std::size_t i = 0; i < n; ++i) {
            if (!in_top[i]) out.push_back(std::move(cands[i]));
        }
        cands = std::move(out);
        r.after = summarize_ranking(cands, r.k, m_bias);
        r.score_loss = spent;
        rewrite_scores(cands);
    } else {
        r.after = r.before;
    }
    r.changed = changed;
    return r;
}

std::shared_ptr<const PostFilter> BiasBalance::from_config(const nlohmann::json& c,
                                                         StageContext& ctx) {
    const std::string where = "post-filter \"bias_balance\"";
    check_keys(c, kCommonFilterKeys, {"budget", "depth"}, where);
    auto common = common_filter_config(c, ctx, where);
    BiasBalanceOptions o;
    o.k = common.k;
    if (auto b = c.find("budget"); b != c.end() && b->is_string()) {
        const auto s = b->get<std::string>();
        if (s != "inf" && s != "infinity") {
            throw ConfigError(where + ": \"budget\" must be a number or \"inf\"");
        }
        o.budget = std::numeric_limits<double>::infinity();
    } else {
        o.budget = config_double(c, "budget", 0.0, where);
    }
    o.depth = config_size(c, "depth", 0, where);
    return std::make_shared<const BiasBalance>(o, std::move(common.bias));
}

}  // namespace plumb::debias
