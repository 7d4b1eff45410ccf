#pragma once
/// \file detail/bm25_taat_maxscore.hpp
/// INTERNAL: SearchAlgorithm::TaatMaxScore, the default for k <= SearchOptions::pruning_max_k
/// on indexes without block-max metadata (the algorithms' contract: detail/bm25_query.hpp).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "index/detail/bm25_query.hpp"  // the contract, the queues, the workspace

namespace plumb::index::detail {

/// Term-at-a-time with MaxScore-style pruning of the low-bound tail ("continue" strategy).
/// Terms are processed fully in order (highest bound first) until the k-th largest partial score
/// theta (a lower bound of the final k-th score: scores only grow) exceeds the summed bounds of
/// the remaining terms. Then only documents that can still reach theta (partial + remaining
/// bounds >= theta) are completed, by skipping through the remaining posting lists. Every
/// completed score is the same float sum, in the same term order, as the exhaustive path.
struct Bm25TaatMaxScore {
    void operator()(const Bm25Query& query, Bm25Workspace& ws, TopKBuffer& top) const {
        const auto& q = query.terms;
        const float k1p1 = query.k1p1;
        const std::size_t k = top.k();
        const IndexData& d = ws.index();
        const std::size_t m = q.size();
        std::vector<double> suffix(m + 1, 0.0);  // suffix[i] = bound of terms i..m-1
        for (std::size_t i = m; i-- > 0;) suffix[i] = suffix[i + 1] + q[i].ub;
        float* acc = ws.accumulator().data();
        const float* nm = query.norm;
        auto& touched = ws.touched;  // every touched document (sparse tracking throughout)
        touched.clear();
        PostingCursor& bulk = ws.cursor(0);
        int32_t* docs = &*ws.docs.begin();
        int32_t* freqs = &*ws.freqs.begin();
        std::vector<float> sample;
        std::size_t i = 0;
        float theta = 0.0f;
        bool pruned = false;
        for (; i < m; ++i) {
            // Worth checking only when the remaining terms weigh little next to the processed ones.
            if (i > 0 && touched.size() >= k && suffix[i] * 4 < suffix[0] - suffix[i]) {
                sample.resize(touched.size());
                for (std::size_t j = 0; j < touched.size(); ++j) sample[j] = acc[touched[j]];
                std::nth_element(sample.begin(),
                                 sample.begin() + static_cast<std::ptrdiff_t>(k - 1), sample.end(),
                                 std::greater<float>());
                theta = sample[k - 1];
                if (suffix[i] * (1.0 + kBoundSlack) < theta) {
                    pruned = true;
                    break;
                }
            }
            const float w = q[i].w;
            ws.for_blocks(bulk, *q[i].entry, [&](int32_t n) {
                for (int32_t j = 0; j < n; ++j) {
                    auto doc = static_cast<std::uint32_t>(docs[j]);
                    float contribution = w * bm25_frac(static_cast<float>(freqs[j]), k1p1, nm[doc]);
                    float& a = acc[doc];
                    if (a == 0.0f) touched.push_back(doc);
                    a += contribution;
                }
            });
        }
        std::vector<std::uint32_t> cand;
        if (pruned) {
            // Candidates: partial + remaining bounds can reach theta. Others: final < theta.
            for (std::uint32_t doc : touched) {
                if ((static_cast<double>(acc[doc]) + suffix[i]) * (1.0 + kBoundSlack) >= theta) {
                    cand.push_back(doc);
                }
            }
            std::sort(cand.begin(), cand.end());
            PostingCursor& c = ws.cursor(1);
            for (std::size_t t = i; t < m; ++t) {
                const float w = q[t].w;
                if (cand.size() * 8 < static_cast<std::size_t>(q[t].entry->df)) {
                    // Few candidates: skip through the list to each of them.
                    c.open(*q[t].entry, d.body_term);
                    for (std::uint32_t doc : cand) {
                        c.next_geq(doc);
                        if (c.doc == kEndDoc) break;
                        if (c.doc == doc) {
                            acc[doc] += w * bm25_frac(static_cast<float>(c.tf), k1p1, nm[doc]);
                        }
                    }
                } else {
                    // Many candidates: read the list in bulk and update touched documents only
                    // (untouched ones cannot reach theta; non-candidates updated here are never
                    // offered, and could not enter the top-k anyway).
                    ws.for_blocks(bulk, *q[t].entry, [&](int32_t n) {
                        for (int32_t j = 0; j < n; ++j) {
                            auto doc = static_cast<std::uint32_t>(docs[j]);
                            float& a = acc[doc];
                            if (a != 0.0f) {
                                a += w * bm25_frac(static_cast<float>(freqs[j]), k1p1, nm[doc]);
                            }
                        }
                    });
                }
            }
        }
        float thr = top.threshold();
        auto offer = [&](std::uint32_t doc) {
            float s = acc[doc];
            if (s >= thr) {
                top.push(TopKEntry{s, 0, doc});
                thr = top.threshold();
            }
        };
        if (pruned) {
            for (std::uint32_t doc : cand) offer(doc);
        } else {
            for (std::uint32_t doc : touched) offer(doc);
        }
        for (std::uint32_t doc : touched) acc[doc] = 0.0f;
    }
};

}  // namespace plumb::index::detail
