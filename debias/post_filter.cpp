#include "debias/post_filter.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace plumb::debias {

PassageBias::Value PassageBias::value(const Candidate& candidate) const {
    Value v;
    if (table) {
        auto it = table->find(candidate.docid);
        if (it != table->end()) {
            v.triple = it->second;
            const double d = it->second.male - it->second.female;
            v.label = (d > 0) - (d < 0);
            v.found = true;
            return v;
        }
    }
    if (words) {
        const std::string* text = &candidate.text;
        std::optional<std::string> fetched;
        if (text->empty() && documents) {
            fetched = documents->text(candidate.docid);
            if (fetched) text = &*fetched;
        }
        if (!text->empty() || (documents && fetched)) {
            const auto counts = eval::count_gender_words(*text, *words);
            v.triple = eval::passage_magnitude(counts, variant);
            v.label = eval::ibbr_label(counts);
            v.found = true;
        }
    }
    return v;
}

double PostFilterReport::abs_bias_change() const noexcept {
    return std::abs(after.bias) - std::abs(before.bias);
}

void BiasPostFilter::apply(const Query& query, RankedList& list) const {
    (void)apply_with_report(query, list);
}

RankingSummary summarize_ranking(const std::vector<Candidate>& list, std::size_t k,
                                 const PassageBias& bias, std::size_t* missing) {
    RankingSummary s;
    s.size = list.size();
    const std::size_t n = std::min(k, list.size());
    if (n == 0) return s;
    for (std::size_t i = 0; i < n; ++i) {
        const auto v = bias.value(list[i]);
        if (!v.found && missing && bias.configured()) ++*missing;
        s.female += v.triple.female;
        s.male += v.triple.male;
        s.utility += list[i].score;
        s.dcg += list[i].score / std::log2(static_cast<double>(i) + 2.0);
    }
    s.female /= static_cast<double>(n);
    s.male /= static_cast<double>(n);
    s.bias = s.male - s.female;
    return s;
}

void rewrite_scores(std::vector<Candidate>& list, const std::string& filter) {
    float prev = std::numeric_limits<float>::infinity();
    for (auto& c : list) {
        c.trace.push_back({filter, c.score});
        float s = std::min(c.score, prev);
        if (!(s < prev)) s = std::nextafter(prev, -std::numeric_limits<float>::infinity());
        c.score = s;
        prev = s;
    }
}

}  // namespace plumb::debias
