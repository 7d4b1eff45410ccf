#pragma once
/// \file bias_balance.hpp
/// Bias-balancing re-ordering: drives |RaB@k| toward 0 while bounding the loss in the stage's
/// relevance score by a budget B (score units).
///
/// Greedy algorithm (documented choice). Per-passage bias b(c) = male - female of its triple
/// (so RaB@k's bias is the mean of b over the top-k). Pool R = the first `depth` candidates
/// (0 = all); positions i = 1..min(k, |R|) are filled in order; S = Σ b over the chosen prefix;
/// B_rem = remaining budget (starts at B). At position i let f = the first remaining candidate of
/// R in input order (the one the unfiltered ranking would put next) and charge(c) =
/// max(0, s(f) - s(c)). If B_rem > 0, the eligible candidates are those of R with
/// charge(c) <= B_rem; otherwise only f. The chosen candidate minimises |S + b(c)| (= |running
/// mean| · i) among the eligible; ties go to the candidate earliest in input order (so f is kept
/// unless another strictly improves the balance). B_rem -= charge(chosen). Candidates not chosen
/// keep their input order after position k.
///
/// Guarantees: B = 0 gives the identical ranking; for a best-first input the loss in the sum of
/// the top-k scores is <= the budget spent (Σ charges) <= B, because at step i the first remaining
/// candidate scores at least the i-th best score. B = ∞ gives the greedy minimum of |RaB@k|.
/// Finally, when the greedy result has a larger |RaB@k| than the input (possible for a greedy), the
/// input order is kept (so |RaB@k| after <= before always).

#include <cstddef>
#include <limits>
#include <string>

#include "debias/post_filter.hpp"

namespace plumb::debias {

struct BiasBalanceOptions {
    std::size_t k = 10;  ///< cutoff whose RaB is balanced (>= 1)
    double budget = 0.0;  ///< >= 0; may be infinity
    std::size_t depth = 0;  ///< candidates that may move into the top-k (0 = all)
};

class BiasBalance : public BiasPostFilter {
public:
    /// Throws InvalidArgument for k == 0, a negative or NaN budget, or no bias source.
    BiasBalance(BiasBalanceOptions options, PassageBias bias);

    std::string name() const override { return "bias_balance"; }
    PostFilterReport apply_with_report(const Query& query, RankedList& list) const override;

private:
    BiasBalanceOptions m_options;
    PassageBias m_bias;
};

}  // namespace plumb::debias
