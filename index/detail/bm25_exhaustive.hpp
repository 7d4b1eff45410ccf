#pragma once
/// \file detail/bm25_exhaustive.hpp
/// INTERNAL: SearchAlgorithm::Exhaustive, the reference the other algorithms are tested
/// against (their contract: detail/bm25_query.hpp).

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "index/detail/bm25_query.hpp"  // the contract, the queues, the workspace

namespace plumb::index::detail {

/// Offers every document with a positive accumulator to `top`, in document order. Blocks of 16
/// are first tested branch-free against the threshold (most fail once it has risen).
[[gnu::noinline]] inline void scan_dense(const float* acc, std::size_t n, TopKBuffer& top) {
    float thr = top.threshold();
    std::size_t doc = 0;
    auto offer = [&](std::size_t i) {
        float s = acc[i];
        if (s >= thr) {
            auto d32 = static_cast<std::uint32_t>(i);
            top.push(TopKEntry{s, 0, d32});
            thr = top.threshold();
        }
    };
    constexpr std::size_t kScan = 16;
    for (; doc + kScan <= n; doc += kScan) {
        bool any = false;
        for (std::size_t j = 0; j < kScan; ++j) any |= acc[doc + j] >= thr;
        if (!any) continue;
        for (std::size_t j = 0; j < kScan; ++j) offer(doc + j);
    }
    for (; doc < n; ++doc) offer(doc);
}

/// Every posting of every query term, accumulated term by term in the query's term order (whole
/// lists read in bulk), then every touched document offered to `top`. The default for deep k
/// (> SearchOptions::pruning_max_k), where decoding the postings dominates and pruning measured
/// no gain.
struct Bm25Exhaustive {
    void operator()(const Bm25Query& query, Bm25Workspace& ws, TopKBuffer& top) const {
        const auto& q = query.terms;
        const float k1p1 = query.k1p1;
        float* acc = ws.accumulator().data();
        const float* nm = query.norm;
        const std::size_t n_docs = ws.acc.size();
        // Dense mode (no touched list; one scan of the accumulator at the end) when the postings
        // cover a good part of the collection; sparse mode (touched-document list) otherwise.
        std::uint64_t postings = 0;
        for (const auto& t : q) postings += static_cast<std::uint64_t>(t.entry->df);
        const bool dense = postings * 8 >= n_docs;
        auto& touched = ws.touched;
        touched.clear();
        PostingCursor& c = ws.cursor(0);
        int32_t* docs = &*ws.docs.begin();
        int32_t* freqs = &*ws.freqs.begin();
        for (std::size_t i = 0; i < q.size(); ++i) {
            const float w = q[i].w;
            ws.for_blocks(c, *q[i].entry, [&](int32_t n) {
                if (dense) {
                    for (int32_t j = 0; j < n; ++j) {
                        auto doc = static_cast<std::uint32_t>(docs[j]);
                        acc[doc] += w * bm25_frac(static_cast<float>(freqs[j]), k1p1, nm[doc]);
                    }
                } else {
                    for (int32_t j = 0; j < n; ++j) {
                        auto doc = static_cast<std::uint32_t>(docs[j]);
                        float contribution =
                            w * bm25_frac(static_cast<float>(freqs[j]), k1p1, nm[doc]);
                        float& a = acc[doc];
                        if (a == 0.0f) touched.push_back(doc);
                        a += contribution;
                    }
                }
            });
        }
        // Candidates must score >= thr: > 0 (touched) at first, then >= the selection's threshold
        // (equal scores may still enter through a smaller id).
        float thr = top.threshold();
        if (dense) {
            scan_dense(acc, n_docs, top);
            std::fill(ws.acc.begin(), ws.acc.end(), 0.0f);
        } else {
            for (std::uint32_t doc : touched) {
                float s = acc[doc];
                acc[doc] = 0.0f;
                if (s >= thr) {
                    top.push(TopKEntry{s, 0, doc});
                    thr = top.threshold();
                }
            }
        }
    }
};

}  // namespace plumb::index::detail
