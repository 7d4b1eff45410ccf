#include "debias/post_filter.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <utility>

#include "plugin/error.hpp"

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

StageMeasures BiasPostFilter::apply_measured(const Query& query, RankedList& list) const {
    return measures_of(apply_with_report(query, list));
}

StageMeasures measures_of(const PostFilterReport& r) {
    auto d = [](auto v) { return static_cast<double>(v); };
    return {{"k", d(r.k)},
            {"bias_before", r.before.bias},
            {"bias_after", r.after.bias},
            {"utility_before", r.before.utility},
            {"utility_after", r.after.utility},
            {"dcg_before", r.before.dcg},
            {"dcg_after", r.after.dcg},
            {"protected_before", d(r.before.protected_count)},
            {"protected_after", d(r.after.protected_count)},
            {"changed", r.changed ? 1.0 : 0.0},
            {"feasible", r.feasible ? 1.0 : 0.0},
            {"removed", d(r.removed)},
            {"score_loss", r.score_loss},
            {"missing_bias", d(r.missing_bias)}};
}

std::shared_ptr<const eval::BiasTable> shared_bias_table(
    StageContext& ctx, const std::filesystem::path& path,
    std::optional<eval::BiasVariant> expected) {
    const std::string key = "bias_file:" + std::filesystem::absolute(path).lexically_normal().string() +
                            ":" + (expected ? eval::bias_variant_name(*expected) : "any");
    return ctx.shared<const eval::BiasTable>(key, [&] {
        return std::make_shared<const eval::BiasTable>(eval::read_bias_file(path, expected));
    });
}

CommonFilterConfig common_filter_config(const nlohmann::json& c, StageContext& ctx,
                                        const std::string& where) {
    CommonFilterConfig out;
    out.k = config_size(c, "k", out.k, where);
    config_string(c, "name", "", where);
    config_string(c, "description", "", where);
    out.bias.documents = ctx.documents();
    const std::string variant = config_string(c, "variant", "", where);
    std::optional<eval::BiasVariant> expected;
    if (!variant.empty()) {
        try {
            out.bias.variant = eval::parse_bias_variant(variant);
        } catch (const InvalidArgument& e) {
            throw ConfigError(where + ": " + e.what());
        }
        expected = out.bias.variant;
    }
    if (auto f = config_string(c, "bias_file", "", where); !f.empty()) {
        out.bias.table = shared_bias_table(ctx, ctx.resolve(f), expected);
    }
    if (auto f = config_string(c, "words", "", where); !f.empty()) {
        out.bias.words = std::make_shared<const eval::GenderWordList>(
            eval::GenderWordList::load(ctx.resolve(f)));
    }
    return out;
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

PostFilterReport start_report(std::string filter, std::size_t k, const std::vector<Candidate>& list,
                              const PassageBias& bias) {
    PostFilterReport r;
    r.filter = std::move(filter);
    r.k = k;
    r.before = summarize_ranking(list, k, bias, &r.missing_bias);
    return r;
}

void rewrite_scores(std::vector<Candidate>& list) {
    float prev = std::numeric_limits<float>::infinity();
    for (auto& c : list) {
        float s = std::min(c.score, prev);
        if (!(s < prev)) s = std::nextafter(prev, -std::numeric_limits<float>::infinity());
        c.score = s;
        prev = s;
    }
}

}  // namespace plumb::debias
