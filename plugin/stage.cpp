#include "plugin/stage.hpp"

#include <algorithm>
#include <numeric>

#include "plugin/error.hpp"

namespace plumb {

StageMeasures PostFilter::apply_measured(const Query& query, RankedList& list) const {
    apply(query, list);
    return {};
}

void RerankStage::rerank(std::span<const Query> queries, std::span<RankedList> lists) const {
    if (queries.size() != lists.size()) {
        throw InvalidArgument(name() + ": " + std::to_string(queries.size()) + " queries but " +
                              std::to_string(lists.size()) + " lists");
    }
    for (std::size_t i = 0; i < lists.size(); ++i) {
        auto& cands = lists[i].candidates;
        std::size_t n = std::min(depth(), cands.size());
        auto scores = score(queries[i], std::span<const Candidate>(cands.data(), n));
        apply_rerank_scores(lists[i], scores, name());
    }
}

void apply_rerank_scores(RankedList& list, std::span<const float> scores,
                         const std::string& stage) {
    auto& c = list.candidates;
    if (scores.size() > c.size()) {
        throw InvalidArgument("apply_rerank_scores: more scores than candidates");
    }
    const std::size_t n = scores.size();
    for (std::size_t i = 0; i < n; ++i) {
        c[i].trace.push_back({stage, scores[i]});
        c[i].score = scores[i];
    }
    std::stable_sort(c.begin(), c.begin() + static_cast<std::ptrdiff_t>(n),
                     [](const Candidate& a, const Candidate& b) { return a.score > b.score; });
    if (n == 0 || n == c.size()) return;
    float head_min = c[n - 1].score;
    for (std::size_t i = n; i < c.size(); ++i) {
        c[i].score = head_min - 1.0f - static_cast<float>(i - n);
    }
}

}  // namespace plumb
