#pragma once
/// \file detail/bm25_topk.hpp
/// INTERNAL (not installed): the top-k queues the BM25 query algorithms (detail/bm25_*.hpp)
/// fill. Both keep the k best documents in one total order, score descending then id rank
/// ascending, so whichever an algorithm fills, the same documents come out in the same order.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "index/bm25_searcher.hpp"

namespace plumb::index::detail {

/// A scored document. `rank`: its id rank (TopKHeap orders by it; TopKBuffer leaves it 0 and
/// looks the rank up on score ties).
struct TopKEntry {
    float score;
    std::uint32_t rank;
    std::uint32_t doc;
};
/// Result ordering: score descending, then id rank ascending.
struct TopKBetter {
    bool operator()(const TopKEntry& a, const TopKEntry& b) const noexcept {
        return a.score > b.score || (a.score == b.score && a.rank < b.rank);
    }
};
inline constexpr TopKBetter kTopKBetter{};

/// Bounded top-k heap, for the document-at-a-time algorithms; worst() is the worst kept entry.
class TopKHeap {
public:
    explicit TopKHeap(std::size_t k) : m_k(k) { m_heap.reserve(std::min<std::size_t>(k, 1 << 16)); }
    std::size_t k() const noexcept { return m_k; }
    bool full() const { return m_heap.size() >= m_k; }
    const TopKEntry& worst() const { return m_heap.front(); }
    /// True when `e` would enter the heap.
    bool accepts(const TopKEntry& e) const { return !full() || kTopKBetter(e, m_heap.front()); }
    void push(const TopKEntry& e) {
        if (!full()) {
            m_heap.push_back(e);
            std::push_heap(m_heap.begin(), m_heap.end(), kTopKBetter);
        } else if (kTopKBetter(e, m_heap.front())) {
            std::pop_heap(m_heap.begin(), m_heap.end(), kTopKBetter);
            m_heap.back() = e;
            std::push_heap(m_heap.begin(), m_heap.end(), kTopKBetter);
        }
    }
    /// The kept entries, in heap order.
    const std::vector<TopKEntry>& entries() const noexcept { return m_heap; }
    std::vector<Hit> finish() {
        std::sort_heap(m_heap.begin(), m_heap.end(), kTopKBetter);
        std::vector<Hit> hits;
        hits.reserve(m_heap.size());
        for (const auto& e : m_heap) hits.push_back({e.doc, e.score});
        return hits;
    }

private:
    std::size_t m_k;
    std::vector<TopKEntry> m_heap;
};

/// Top-k selection for the term-at-a-time paths, which offer many candidates in document order:
/// entries are appended to a buffer of 2k; when it is full, nth_element keeps the k best and
/// the k-th best score becomes the admission threshold (amortised O(1) per offer instead of a
/// heap update). The order (score desc, id rank asc) is total, so the selected top-k and its
/// order are exactly those of TopKHeap.
class TopKBuffer {
public:
    /// `rank`: id rank of every document, read only to break score ties.
    TopKBuffer(std::size_t k, const std::uint32_t* rank)
        : m_rank(rank),
          m_k(k),
          m_cap(k > (std::numeric_limits<std::size_t>::max() >> 2)
                    ? std::numeric_limits<std::size_t>::max()
                    : std::max<std::size_t>(2 * k, 64)) {
        m_buf.reserve(std::min<std::size_t>(m_cap, 1 << 17));
    }
    std::size_t k() const noexcept { return m_k; }
    /// Entries scoring below this can never enter (ties may, through a smaller id rank).
    float threshold() const noexcept { return m_thr; }
    /// Raises the threshold to `t` when below: a lower bound of the k-th best score known from
    /// elsewhere (another part of the same query's documents; intra-query parallelism).
    /// Entries below it are then not kept (the caller offers only entries >= threshold()).
    void raise_threshold(float t) noexcept { m_thr = std::max(m_thr, t); }
    void push(const TopKEntry& e) {
        m_buf.push_back(e);
        if (m_buf.size() >= m_cap) {
            keep_best();
            m_thr = std::max(m_thr, m_buf.back().score);
        }
    }
    /// The k best entries offered so far (fewer when fewer were offered), in no order; their
    /// `rank` is 0 (push them into another TopKBuffer, which looks ranks up on ties).
    const std::vector<TopKEntry>& best() {
        if (m_buf.size() > m_k) keep_best();
        return m_buf;
    }
    std::vector<Hit> finish() {
        if (m_buf.size() > m_k) keep_best();
        std::sort(m_buf.begin(), m_buf.end(), cmp());
        std::vector<Hit> hits;
        hits.reserve(m_buf.size());
        for (const auto& e : m_buf) hits.push_back({e.doc, e.score});
        return hits;
    }

private:
    /// Keeps the k best entries; the worst of them ends up last.
    void keep_best() {
        auto kth = m_buf.begin() + static_cast<std::ptrdiff_t>(m_k - 1);
        std::nth_element(m_buf.begin(), kth, m_buf.end(), cmp());
        m_buf.resize(m_k);
    }
    /// TopKBetter, with the id rank looked up only on score ties (entries carry no rank: loading
    /// it for every offered document would cost a cache miss each).
    struct Cmp {
        const std::uint32_t* rank;
        bool operator()(const TopKEntry& a, const TopKEntry& b) const noexcept {
            return a.score > b.score || (a.score == b.score && rank[a.doc] < rank[b.doc]);
        }
    };
    Cmp cmp() const noexcept { return Cmp{m_rank}; }

    const std::uint32_t* m_rank;
    std::size_t m_k, m_cap;
    std::vector<TopKEntry> m_buf;
    /// Until the first compaction: > 0, i.e. any touched document.
    float m_thr = std::numeric_limits<float>::denorm_min();
};

}  // namespace plumb::index::detail
