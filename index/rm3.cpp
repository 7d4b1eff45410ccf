#include "index/rm3.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>

namespace plumb::index {
namespace {

using Vec = std::map<std::string, float>;

/// Keeps the `n` largest weights (ties: term ascending).
Vec prune(const Vec& v, std::size_t n) {
    std::vector<std::pair<std::string, float>> items(v.begin(), v.end());
    std::stable_sort(items.begin(), items.end(),
                     [](const auto& a, const auto& b) { return a.second > b.second; });
    if (items.size() > n) items.resize(n);
    return Vec(items.begin(), items.end());
}

float l1(const Vec& v) {
    float s = 0;
    for (const auto& [t, w] : v) s += std::abs(w);
    return s;
}

bool feedback_term_ok(const std::string& t) {
    if (t.size() < 2 || t.size() > 20) return false;
    return std::all_of(t.begin(), t.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    });
}

}  // namespace

std::vector<WeightedTerm> rm3_expand(const PassageIndex& index,
                                     std::span<const WeightedTerm> query_terms,
                                     std::span<const Hit> feedback, const Rm3Params& params) {
    const auto& analyzer = index.analyzer();
    const auto n_docs = static_cast<float>(index.size());

    // Original query: bag of words, L1-normalised.
    Vec q;
    for (const auto& t : query_terms) q[t.term] += t.weight;
    if (float s = l1(q); s > 0) {
        for (auto& [t, w] : q) w /= s;
    }

    // Relevance model over the top fb_docs documents.
    std::size_t nfb = std::min(params.fb_docs, feedback.size());
    std::vector<Vec> doc_vectors(nfb);
    std::vector<float> norms(nfb);
    std::map<std::string, float> vocab_df;
    for (std::size_t i = 0; i < nfb; ++i) {
        Vec counts;
        for (auto& t : analyzer.analyze(index.text_at(feedback[i].doc))) counts[t] += 1.0f;
        Vec kept;
        for (auto& [t, c] : counts) {
            if (!feedback_term_ok(t)) continue;
            // Anserini drops terms occurring in more than 10% of the documents.
            float ratio = n_docs > 0 ? static_cast<float>(index.doc_freq(t)) / n_docs : 0.0f;
            if (ratio > 0.1f) continue;
            kept.emplace(t, c);
        }
        doc_vectors[i] = prune(kept, params.fb_terms);
        norms[i] = l1(doc_vectors[i]);
    }
    Vec rm;
    for (std::size_t i = 0; i < nfb; ++i) {
        if (norms[i] <= 0.001f) continue;
        for (const auto& [t, c] : doc_vectors[i]) rm[t] += c / norms[i] * feedback[i].score;
    }
    rm = prune(rm, params.fb_terms);
    if (float s = l1(rm); s > 0) {
        for (auto& [t, w] : rm) w /= s;
    }

    // Interpolation.
    const float a = params.original_query_weight;
    Vec mixed;
    for (const auto& [t, w] : q) mixed[t] += a * w;
    for (const auto& [t, w] : rm) mixed[t] += (1.0f - a) * w;
    std::vector<WeightedTerm> out;
    for (auto& [t, w] : mixed) {
        if (w > 0) out.push_back({t, w});
    }
    std::stable_sort(out.begin(), out.end(),
                     [](const auto& x, const auto& y) { return x.weight > y.weight; });
    return out;
}

}  // namespace plumb::index
