#pragma once
/// \file detail/bm25_exhaustive.hpp
/// INTERNAL: SearchAlgorithm::Exhaustive, the reference the other algorithms are tested
/// against (their contract: detail/bm25_query.hpp).

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "index/detail/bm25_intra_query.hpp"
#include "index/detail/bm25_query.hpp"  // the contract, the queues, the workspace

namespace plumb::index::detail {

/// Offers every document of [lo, n) with a positive accumulator to `top`, in document order.
/// Blocks of 16 are first tested branch-free against the threshold (most fail once it has
/// risen).
[[gnu::noinline]] inline void scan_dense(const float* acc, std::size_t n, TopKBuffer& top,
                                         std::size_t lo = 0) {
    float thr = top.threshold();
    std::size_t doc = lo;
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
///
/// Intra-query parallelism (SearchOptions::intra_query, detail/bm25_intra_query.hpp): a query
/// predicted long (its postings) is split at its start into document ranges, each scored with
/// scan_range.
struct Bm25Exhaustive {
    /// Scores the documents [lo, hi) exactly (every posting of every query term in that range,
    /// term by term in the query's term order, so each document's score is the same float sum
    /// as in one pass) into the dense accumulator, offers them to `top` and clears the range.
    /// Needs the block table (postings.bin version 2): each list is entered at the block
    /// holding lo and read up to the block holding hi - 1. With `task` (the split the range
    /// belongs to), the threshold is shared: `top` starts from the best k-th score any
    /// participant has reached (a lower bound of the whole query's k-th best score: the ranges
    /// are disjoint, so a document of the top k scores at least that and is still offered)
    /// and offers its own back.
    static void scan_range(const Bm25Query& query, Bm25Workspace& ws, TopKBuffer& top,
                           std::uint32_t lo, std::uint32_t hi, SplitTask* task = nullptr) {
        if (lo >= hi) return;
        if (task)
            top.raise_threshold(static_cast<float>(task->theta.load(std::memory_order_relaxed)));
        const IndexData& d = ws.index();
        const float k1p1 = query.k1p1;
        float* acc = ws.accumulator().data();
        const float* nm = query.norm;
        int32_t* docs = &*ws.docs.begin();
        int32_t* freqs = &*ws.freqs.begin();
        const auto lo32 = static_cast<int32_t>(lo), hi32 = static_cast<int32_t>(hi);
        for (const Bm25Term& t : query.terms) {
            const auto ordinal = static_cast<std::uint64_t>(t.entry - d.terms.data());
            const auto blocks = d.postings.blocks(ordinal);
            auto below = [](std::uint32_t x) {
                return [x](const PostingsBlock& b) { return b.last_doc < x; };
            };
            const auto first = static_cast<std::size_t>(
                std::partition_point(blocks.begin(), blocks.end(), below(lo)) - blocks.begin());
            if (first == blocks.size()) continue;
            // (Blocks after the first one whose last document is >= hi - 1 start at or past hi.)
            const auto last = std::min<std::size_t>(
                static_cast<std::size_t>(
                    std::partition_point(blocks.begin() + static_cast<std::ptrdiff_t>(first),
                                         blocks.end(), below(hi - 1)) -
                    blocks.begin()),
                blocks.size() - 1);
            auto r = d.postings.block_reader(ordinal, static_cast<std::uint32_t>(t.entry->df),
                                             first, last);
            const float w = t.w;
            while (true) {
                const int32_t n = r.read(docs, freqs, kBulkBlock);
                if (n <= 0) break;
                // The range's part of the batch (documents ascending).
                const int32_t a =
                    docs[0] >= lo32
                        ? 0
                        : static_cast<int32_t>(std::lower_bound(docs, docs + n, lo32) - docs);
                const int32_t b =
                    docs[n - 1] < hi32
                        ? n
                        : static_cast<int32_t>(std::lower_bound(docs + a, docs + n, hi32) - docs);
                for (int32_t j = a; j < b; ++j) {
                    auto doc = static_cast<std::uint32_t>(docs[j]);
                    acc[doc] += w * bm25_frac(static_cast<float>(freqs[j]), k1p1, nm[doc]);
                }
            }
        }
        scan_dense(acc, hi, top, lo);
        std::fill(acc + lo, acc + hi, 0.0f);
        // (Before a first compaction the threshold is the smallest positive float, which only
        // says "> 0": harmless to share.)
        if (task) task->offer_theta(top.threshold());
    }

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
