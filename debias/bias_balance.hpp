#pragma once
/// \file bias_balance.hpp
/// Bias-balancing re-ordering: drives |RaB@k| toward 0 while bounding the loss in the stage's
/// relevance score by a budget B (score units).
///
/// Swap-based greedy (documented choice). Per-passage bias b(c) = male - female of its triple, so
/// RaB@k's bias is S / k' with S = Σ b over the top k' = min(k, n) candidates: it depends only on
/// WHICH candidates are in the top-k. Pool = the first `depth` candidates (0 = all). Starting from
/// the input top-k, repeatedly apply the best swap of a top-k member x with a pool candidate y
/// below the top-k: the swap changes S to S - b(x) + b(y) and costs s(x) - s(y) (the drop of the
/// top-k sum of scores). Among swaps with spent + cost <= B that strictly lower |S|, take the
/// one with the smallest |S'|, then the smallest cost, then the lowest-ranked x, then the
/// highest-ranked y. Stop when no swap qualifies. No swap is made when B = 0. The new top-k keeps
/// the input order of its members (score order for a best-first input); the candidates left out
/// follow in input order.
///
/// Guarantees: B = 0 gives the identical ranking; the loss in the top-k sum of scores equals the
/// budget spent (Σ of swap costs) and is <= B; |RaB@k| after < before whenever the list changes
/// (never worse); B = ∞ gives the greedy minimum of |RaB@k| over the pool. DCG is reported but
/// not bounded by B.

#include <cstddef>
#include <memory>
#include <limits>
#include <string>

#include "debias/post_filter.hpp"

namespace plumb::debias {

struct BiasBalanceOptions {
    std::size_t k = 10;     ///< cutoff whose RaB is balanced (>= 1)
    double budget = 0.0;    ///< >= 0; may be infinity
    std::size_t depth = 0;  ///< candidates that may move into the top-k (0 = all)
};

class BiasBalance : public BiasPostFilter {
public:
    /// Throws InvalidArgument for k == 0, a negative or NaN budget, or no bias source.
    BiasBalance(BiasBalanceOptions options, PassageBias bias);

    std::string name() const override { return "bias_balance"; }

    /// The filter described by a pipeline configuration (the keys of kCommonFilterKeys plus
    /// its own, see the file comment); registered as a post-filter type by
    /// debias::register_post_filters(). ConfigError / InvalidArgument on bad values.
    static std::shared_ptr<const PostFilter> from_config(const nlohmann::json& config,
                                                         StageContext& ctx);
    PostFilterReport apply_with_report(const Query& query, RankedList& list) const override;

private:
    BiasBalanceOptions m_options;
    PassageBias m_bias;
};

}  // namespace plumb::debias
