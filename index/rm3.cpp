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

Rm3FeedbackDoc rm3_feedback_doc(const PassageIndex& index, std::uint32_t doc, float score) {
    std::map<std::string, std::uint32_t> counts;
    for (auto& t : index.analyzer().analyze(index.text_at(doc))) ++counts[t];
    Rm3FeedbackDoc out;
    out.score = score;
    out.counts.reserve(counts.size());
    for (auto& [t, c] : counts) out.counts.push_back({t, c});
    return out;
}

std::vector<std::string> rm3_df_terms(std::span<const Rm3FeedbackDoc> feedback) {
    std::vector<std::string> out;
    for (const auto& fb : feedback) {
        for (const auto& tc : fb.counts) {
            if (feedback_term_ok(tc.term)) out.push_back(tc.term);
        }
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
}

std::vector<WeightedTerm> rm3_expand(const PassageIndex& index,
                                     std::span<const WeightedTerm> query_terms,
                                     std::span<const Hit> feedback, const Rm3Params& params) {
    std::size_t nfb = std::min(params.fb_docs, feedback.size());
    std::vector<Rm3FeedbackDoc> docs;
    docs.reserve(nfb);
    for (std::size_t i = 0; i < nfb; ++i) {
        docs.push_back(rm3_feedback_doc(index, feedback[i].doc, feedback[i].score));
    }
    return rm3_expand(
        query_terms, docs, [&](std::string_view t) { return index.doc_freq(t); }, index.size(),
        params);
}

std::vector<WeightedTerm> rm3_expand(std::span<const WeightedTerm> query_terms,
                                     std::span<const Rm3FeedbackDoc> feedback,
                                     const std::function<std::uint64_t(std::string_view)>& doc_freq,
                                     std::uint64_t documents, const Rm3Params& params) {
    const auto n_docs = static_cast<float>(documents);

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
    for (std::size_t i = 0; i < nfb; ++i) {
        Vec kept;
        for (const auto& [t, c] : feedback[i].counts) {
            if (!feedback_term_ok(t)) continue;
            // Anserini drops terms occurring in more than 10% of the documents.
            float ratio = n_docs > 0 ? static_cast<float>(doc_freq(t)) / n_docs : 0.0f;
            if (ratio > 0.1f) continue;
            kept.emplace(t, static_cast<float>(c));
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
