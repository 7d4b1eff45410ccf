#pragma once
/// \file post_filter.hpp
/// Common parts of the bias-aware post-filters (issue 7): the per-passage bias source, the
/// before/after report, and the base class of the filters (debias/fair_topk.hpp,
/// debias/bias_balance.hpp, debias/near_duplicates.hpp; factory in debias/post_filters.hpp).
///
/// Definitions used by every filter (documented choices):
/// - Passage bias: the (bias, female, male) triple of eval/gender.hpp (one variant: tc, tf or
///   bool). It is looked up by docid in a bias table (a bias file loaded once, shared read-only);
///   when the docid is absent and a word list is configured, it is computed from the candidate's
///   `text` (or from a DocumentSource when `text` is empty); otherwise it is (0, 0, 0) and the
///   candidate counts as `missing_bias` in the report.
/// - Passage label d(p) ∈ {-1, 0, +1} (+1 = male-leaning): computed from text it is the IBBR label
///   eval::ibbr_label (FORMULAS.md, paper 004 Eq. 1); from a table it is sgn(male - female) of the
///   table's triple (identical for tc and tf; for bool a passage with both genders is 0).
/// - "Bias" of a ranking at cutoff k = RaB@k's bias component (FORMULAS.md): the mean over the top
///   min(k, n) passages of (male - female); positive = leans male. The report also gives the
///   female and male means.
/// - "Utility" at cutoff k = the sum of the input (stage) relevance scores of the top-k, and their
///   DCG = Σ_{i=1..k} s_i / log2(i + 1). Scores are each candidate's score as it entered the
///   filter, so the loss = before - after is measured in the stage's score units.
/// - After a re-ordering the candidates' scores are rewritten so that score order equals the new
///   rank order (needed by trec_eval): the trace is left as it is (a filter computes no score;
///   the input score is the trace entry of the stage that computed it), and the new score is min(input score, previous new score), lowered to the next
///   smaller float when needed to be strictly below the previous one. An unchanged list is not
///   touched at all (no trace entry).
///
/// All filters are const after construction and safe to call concurrently.

#include <algorithm>
#include <array>
#include <cstddef>
#include <memory>
#include <filesystem>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "eval/gender.hpp"
#include "plugin/document_source.hpp"
#include "plugin/registry.hpp"
#include "plugin/stage.hpp"
#include "plugin/types.hpp"

namespace plumb::debias {

/// Where per-passage bias triples come from (shared, read-only; cheap to copy).
struct PassageBias {
    std::shared_ptr<const eval::BiasTable> table;       ///< docid -> triple (optional)
    std::shared_ptr<const eval::GenderWordList> words;  ///< for on-the-fly magnitudes (optional)
    std::shared_ptr<const DocumentSource> documents;    ///< text when a candidate has none
    eval::BiasVariant variant = eval::BiasVariant::Tc;  ///< variant computed from text

    /// A candidate's bias triple and label (see the file comment). `found` is false when neither
    /// the table nor the word list could give a value (then triple = (0,0,0), label 0).
    struct Value {
        eval::BiasTriple triple;
        int label = 0;
        bool found = false;
    };
    Value value(const Candidate& candidate) const;

    /// True when at least one source is configured.
    bool configured() const noexcept { return table || words; }
};

/// Bias and utility of a ranking at a cutoff.
struct RankingSummary {
    std::size_t size = 0;  ///< candidates in the list
    double bias = 0.0;     ///< RaB@k bias = mean (male - female) over the top min(k, size)
    double female = 0.0;   ///< mean female component over the top-k
    double male = 0.0;     ///< mean male component over the top-k
    double utility = 0.0;  ///< sum of input scores over the top-k
    double dcg = 0.0;      ///< Σ s_i / log2(i + 1) over the top-k
    std::size_t protected_count = 0;  ///< FA*IR: protected candidates in the top-k (else 0)
};

/// What one application of a filter did.
struct PostFilterReport {
    std::string filter;  ///< the filter's name()
    std::size_t k = 0;   ///< cutoff of the measures
    RankingSummary before;
    RankingSummary after;
    bool changed = false;          ///< the list was re-ordered or shortened
    bool feasible = true;          ///< FA*IR: every prefix constraint could be met
    std::size_t removed = 0;       ///< near-duplicates: candidates removed (or demoted)
    double score_loss = 0.0;       ///< bias balance: budget spent (Σ of charged score drops)
    std::size_t missing_bias = 0;  ///< top-k candidates (before) without a bias value

    double utility_loss() const noexcept { return before.utility - after.utility; }
    double dcg_loss() const noexcept { return before.dcg - after.dcg; }
    double abs_bias_change() const noexcept;  ///< |bias after| - |bias before|
};

/// Base of the bias-aware post-filters: apply() = apply_with_report() without the report.
/// A filter reports itself: apply_measured() returns its PostFilterReport as the stage's
/// measures (measures_of()), which a Pipeline keeps in SearchResult::reports.
class BiasPostFilter : public PostFilter {
public:
    void apply(const Query& query, RankedList& list) const final;
    StageMeasures apply_measured(const Query& query, RankedList& list) const final;
    /// Filters `list` in place and reports bias and utility before and after.
    virtual PostFilterReport apply_with_report(const Query& query, RankedList& list) const = 0;
};

/// A report as named stage measures: k, bias_before, bias_after, utility_before,
/// utility_after, dcg_before, dcg_after, protected_before, protected_after, changed, feasible,
/// removed, score_loss, missing_bias (counts and flags as numbers).
StageMeasures measures_of(const PostFilterReport& report);

// ---- configuration (one factory per filter: each filter's from_config) ---------------------

/// Keys every bias-aware filter accepts besides its own: "k" (cutoff, default 10), "bias_file"
/// (docid<TAB>bias<TAB>female<TAB>male), "words" (gender word list `word,f|m`, for magnitudes
/// computed from passage text), "variant" ("tc" default, "tf", "bool"), "name" and
/// "description" (accepted, ignored).
inline constexpr std::array<std::string_view, 6> kCommonFilterKeys = {
    "k", "bias_file", "words", "variant", "name", "description"};

/// The common keys of a filter's configuration: the cutoff and the passage-bias source (files
/// resolved against ctx.base_dir(), passage text from ctx.documents()). ConfigError on a wrong
/// type or variant; IoError / ParseError from the files.
struct CommonFilterConfig {
    std::size_t k = 10;
    PassageBias bias;
};
CommonFilterConfig common_filter_config(const nlohmann::json& config, StageContext& ctx,
                                        const std::string& where);

/// The bias table of the file `path` (already resolved) for the `expected` variant, read once
/// per StageContext (a shared resource keyed by the absolute path and the variant), so that
/// several filters of one context, and a host measuring their output, share one copy.
/// IoError / ParseError from eval::read_bias_file.
std::shared_ptr<const eval::BiasTable> shared_bias_table(
    StageContext& ctx, const std::filesystem::path& path,
    std::optional<eval::BiasVariant> expected);

/// RaB@k bias and utility of `list` (scores = candidate scores; `bias` for the triples).
/// `missing` (if given) is incremented for each top-k candidate without a bias value.
RankingSummary summarize_ranking(const std::vector<Candidate>& list, std::size_t k,
                                 const PassageBias& bias, std::size_t* missing = nullptr);

/// How every filter's apply_with_report() begins: the report of the filter named `filter` at
/// cutoff `k`, with the summary of `list` before filtering (missing_bias counted).
PostFilterReport start_report(std::string filter, std::size_t k, const std::vector<Candidate>& list,
                              const PassageBias& bias);

/// Candidates a filter examines of a list of `n`: the first `depth`, all of them when `depth` is
/// 0 (or larger than `n`).
inline std::size_t examined_candidates(std::size_t depth, std::size_t n) noexcept {
    return depth == 0 ? n : std::min(depth, n);
}

/// Rewrites scores after a re-ordering (see the file comment): on entry each candidate's score is
/// its input score and `list` is in the new order. The trace is left as it is: the input score
/// is the entry of the stage that computed it (see Candidate::trace).
void rewrite_scores(std::vector<Candidate>& list);

}  // namespace plumb::debias
