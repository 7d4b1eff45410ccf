#pragma once
/// \file fair_topk.hpp
/// FA*IR ranked group fairness (Zehlike et al. 2017, "FA*IR: A Fair Top-k Ranking Algorithm").
///
/// m(i) = F^{-1}(α_c; i, p): the smallest m with P(X ≤ m) > α_c, X ~ Bin(i, p); every prefix of
/// length i ≤ k of the re-ranked list must hold at least m(i) protected candidates.
///
/// Significance adjustment (paper Algorithm 2, implemented exactly; documented choice): the
/// failure probability of an m-table is the probability that a ranking whose positions are i.i.d.
/// Bernoulli(p) protected fails some prefix; it is computed exactly by dynamic programming over
/// prefixes (the distribution of the protected count among rankings that have not failed yet).
/// α_c is the largest value in (0, α] whose m-table has failure probability ≤ α, found by binary
/// search (60 halvings; the m-table is a step function of α_c, so the result is the m-table
/// of that step). When the unadjusted table already fails with probability ≤ α, α_c = α. (The
/// public fairsearch library's approximation may return a table with failure probability above α;
/// this one never does.)
///
/// Re-ranking (paper Algorithm 1): two queues (protected, non-protected) in input order (= score
/// order for a best-first list); at position i = 1..k, if the protected count so far is < m(i)
/// the best protected candidate is taken, else the best of the two heads (higher score; a tie
/// goes to the one earlier in the input). When no protected candidate is left the constraint is
/// infeasible: the best non-protected is taken and the report says feasible = false. Candidates
/// after position k keep their input order.
///
/// Utility loss is the report's before - after sum of scores (and DCG) over the top-k.

#include <cstddef>
#include <memory>
#include <functional>
#include <string>
#include <vector>

#include "debias/post_filter.hpp"

namespace plumb::debias {

/// Which candidates form the protected group.
enum class ProtectedGroup {
    Female,   ///< label d = -1 (female-leaning)
    Male,     ///< label d = +1
    Neutral,  ///< label d = 0
    Custom,   ///< FairTopKOptions::is_protected
};

/// "female", "male", "neutral" (throws InvalidArgument otherwise).
ProtectedGroup parse_protected_group(const std::string& name);

struct FairTopKOptions {
    std::size_t k = 10;        ///< length of the fair prefix (>= 1)
    double p = 0.5;            ///< minimum target proportion of protected candidates, in (0, 1)
    double alpha = 0.1;        ///< significance, in (0, 1)
    bool adjust_alpha = true;  ///< multiple-testing adjustment (Algorithm 2)
    ProtectedGroup group = ProtectedGroup::Female;
    /// For ProtectedGroup::Custom: decides from the candidate and its bias value.
    std::function<bool(const Candidate&, const PassageBias::Value&)> is_protected;
};

/// m(i) for i = 1..k (element i-1) without adjustment: F^{-1}(alpha; i, p).
std::vector<std::size_t> fair_mtable(std::size_t k, double p, double alpha);

/// Exact probability that a Bernoulli(p) ranking of length mtable.size() fails some prefix.
double fair_fail_probability(const std::vector<std::size_t>& mtable, double p);

/// The adjusted α_c (see the file comment).
double fair_adjusted_alpha(std::size_t k, double p, double alpha);

class FairTopK : public BiasPostFilter {
public:
    /// Throws InvalidArgument for k == 0, p or alpha outside (0, 1), Custom without a function,
    /// or a bias source that is not configured (unless Custom).
    FairTopK(FairTopKOptions options, PassageBias bias);

    std::string name() const override { return "fair_topk"; }

    /// The filter described by a pipeline configuration (the keys of kCommonFilterKeys plus
    /// its own, see the file comment); registered as a post-filter type by
    /// debias::register_post_filters(). ConfigError / InvalidArgument on bad values.
    static std::shared_ptr<const PostFilter> from_config(const nlohmann::json& config,
                                                         StageContext& ctx);
    PostFilterReport apply_with_report(const Query& query, RankedList& list) const override;

    /// m(1..k) in use (adjusted when adjust_alpha).
    const std::vector<std::size_t>& mtable() const noexcept { return m_mtable; }
    double adjusted_alpha() const noexcept { return m_alpha_c; }

    bool is_protected(const Candidate& candidate) const;

private:
    bool protected_value(const Candidate& c, const PassageBias::Value& v) const;
    FairTopKOptions m_options;
    PassageBias m_bias;
    double m_alpha_c = 0.0;
    std::vector<std::size_t> m_mtable;
};

}  // namespace plumb::debias
