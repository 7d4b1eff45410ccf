#pragma once
/// \file detail/bm25_block_cursor.hpp
/// INTERNAL: the block-max postings cursor over postings.bin version 2 (detail/postings.hpp),
/// used by the block-max query algorithms (detail/bm25_block_max_maxscore.hpp).

#include <algorithm>
#include <cstdint>
#include <span>

#include "index/detail/bm25_cursor.hpp"  // kEndDoc
#include "index/detail/index_data.hpp"
#include "plugin/error.hpp"

namespace plumb::index::detail {

/// What a block's BM25 tf-factor bound is for the query's parameters: the stored max_frac for
/// the parameters the index's bounds were computed with (exact default k1/b), else
/// bm25_frac(max_tf, k1 + 1, norm(min_dl)) (the factor grows with tf and falls with the length;
/// float rounding of this recomputation is covered by kBoundSlack like the term bounds).
struct BlockBoundParams {
    bool stored = true;  ///< use PostingsBlock::max_frac
    float k1 = 0, b = 0, k1p1 = 0;
    bool lucene_norms = false;
    double avgdl = 0;

    float frac(const PostingsBlock& blk) const {
        if (stored) return blk.max_frac;
        const std::uint32_t dl = lucene_norms ? lucene_norm_length(blk.min_dl) : blk.min_dl;
        return bm25_frac(static_cast<float>(blk.max_tf), k1p1, bm25_norm(k1, b, dl, avgdl));
    }
};

/// Postings cursor with block skipping and block upper bounds. `doc`/`tf` are the current
/// posting (doc = kEndDoc past the end). The block pointer can move ahead of the decoded
/// postings (shallow_geq): blocks are decoded only when a posting in them is needed.
struct BlockCursor {
    static constexpr std::uint32_t kNone = 0xFFFFFFFFu;

    std::uint32_t doc = kEndDoc;
    std::uint32_t tf = 0;

    /// Positions the cursor on the first posting of term `ordinal` (df postings) whose
    /// document is >= `from` (kEndDoc when there is none): a chunk of a split query
    /// (detail/bm25_intra_query.hpp) is entered without decoding the blocks before it.
    /// `prefetch` (optional): a per-document array (the length norms) next() prefetches a few
    /// postings ahead: the essential lists score every posting they visit. `weight`: the
    /// term's query weight, which multiplies the block bounds of block_ub().
    void open(const PostingsFile& f, std::uint64_t ordinal, std::uint32_t df,
              const BlockBoundParams& bound, const float* prefetch = nullptr, float weight = 1.0f,
              std::uint32_t from = 0) {
        m_file = &f;
        m_prefetch = prefetch;
        m_blocks = f.blocks(ordinal);
        m_term_end = f.term_end(ordinal);
        m_df = df;
        m_bound = &bound;
        m_weight = weight;
        m_decoded = kNone;
        if (m_blocks.empty() || df == 0) {
            doc = kEndDoc;
            set_block(static_cast<std::uint32_t>(m_blocks.size()));
            return;
        }
        if (from == 0) {
            decode(0);
            return;
        }
        set_block(0);
        if (!shallow_geq(from)) {  // (as next_geq past the last posting)
            decode(static_cast<std::uint32_t>(m_blocks.size()) - 1);
            m_pos = m_len;
            doc = kEndDoc;
            return;
        }
        decode(m_cur);
        next_geq(from);
    }

    /// Moves to the next posting.
    void next() {
        if (++m_pos < m_len) {
            doc = m_docs[m_pos];
            tf = m_tfs[m_pos];
            if (m_prefetch && m_pos + kPrefetchAhead < m_len) {
                __builtin_prefetch(m_prefetch + m_docs[m_pos + kPrefetchAhead]);
            }
        } else if (m_decoded + 1 < m_blocks.size()) {
            decode(m_decoded + 1);
        } else {
            doc = kEndDoc;
        }
    }

    /// Moves to the first posting with doc >= target.
    void next_geq(std::uint32_t target) {
        if (doc >= target) return;  // includes kEndDoc
        if (m_blocks[m_decoded].last_doc < target) {
            if (!shallow_geq(target)) {
                doc = kEndDoc;
                return;
            }
            decode(m_cur);
        }
        // First posting >= target (the block's last doc is >= target, and the postings
        // before m_pos are below it): branch-free binary search over the block (Khuong and
        // Morin's lower_bound; mask arithmetic, not a conditional, so no branch). The distance
        // varies from one lookup to the next, so a linear scan mispredicts its exit; a full
        // block takes exactly 7 steps.
        const std::uint32_t* first = m_docs;
        if (m_len == kPostingsBlock) {
            for (std::uint32_t half = kPostingsBlock / 2; half > 0; half /= 2) {
                first += half & (0u - static_cast<std::uint32_t>(first[half - 1] < target));
            }
        } else {
            std::uint32_t len = m_len;
            while (len > 1) {
                const std::uint32_t half = len / 2;
                first += half & (0u - static_cast<std::uint32_t>(first[half - 1] < target));
                len -= half;
            }
        }
        const std::uint32_t p = static_cast<std::uint32_t>(first - m_docs);
        m_pos = p;
        doc = m_docs[p];
        tf = m_tfs[p];
    }

    /// Calls f(doc, tf) for the postings from the current one on whose document is below
    /// `end`, in order, and leaves the cursor on the first posting >= end (kEndDoc when none is
    /// left): next() in a loop, without its per-posting checks.
    template <class F>
    void for_each_below(std::uint32_t end, F&& f) {
        while (doc < end) {
            std::uint32_t pos = m_pos;
            const std::uint32_t len = m_len;
            if (m_blocks[m_decoded].last_doc >= end) {  // stops inside this block
                for (; m_docs[pos] < end; ++pos) {
                    if (m_prefetch && pos + kPrefetchAhead < len) {
                        __builtin_prefetch(m_prefetch + m_docs[pos + kPrefetchAhead]);
                    }
                    f(m_docs[pos], m_tfs[pos]);
                }
                m_pos = pos;
                doc = m_docs[pos];
                tf = m_tfs[pos];
                return;
            }
            for (; pos < len; ++pos) {
                if (m_prefetch && pos + kPrefetchAhead < len) {
                    __builtin_prefetch(m_prefetch + m_docs[pos + kPrefetchAhead]);
                }
                f(m_docs[pos], m_tfs[pos]);
            }
            if (m_decoded + 1 < m_blocks.size()) {
                decode(m_decoded + 1);
            } else {
                m_pos = len;
                doc = kEndDoc;
            }
        }
    }

    /// Moves the block pointer (not the postings) to the block that would hold `target`: the
    /// first block whose last document is >= target. False when there is none (past the
    /// term's last posting). Targets must not decrease.
    bool shallow_geq(std::uint32_t target) {
        if (target > m_block_last) advance_block(target);
        return m_cur < m_blocks.size();
    }
    /// Bound of the tf factor in the block at the block pointer (call after shallow_geq
    /// returned true).
    float block_frac() const { return m_bound->frac(m_blocks[m_cur]); }
    /// Last document of the block at the block pointer.
    std::uint32_t block_last() const { return m_blocks[m_cur].last_doc; }

    /// shallow_geq(target), then the weighted bound weight * block_frac() of the block at the
    /// block pointer, 0 past the term's last posting (cached per block: a comparison when the
    /// block pointer does not move).
    double block_ub(std::uint32_t target) {
        if (target > m_block_last) advance_block(target);
        return m_block_ub;
    }

private:
    /// Decodes block j into the buffer and positions the cursor on its first posting; checks it
    /// against its block entry.
    void decode(std::uint32_t j) {
        const PostingsBlock& blk = m_blocks[j];
        const std::uint8_t* p = m_file->base() + blk.offset;
        const std::uint64_t end_off = j + 1 < m_blocks.size() ? m_blocks[j + 1].offset : m_term_end;
        const std::uint8_t* end = m_file->base() + end_off;
        // The next block is the one an essential list needs next: start loading it.
        __builtin_prefetch(end);
        __builtin_prefetch(end + 64);
        const std::uint32_t first = j * kPostingsBlock;
        const std::uint32_t n = m_df - first < kPostingsBlock ? m_df - first : kPostingsBlock;
        std::uint64_t d = j == 0 ? 0 : m_blocks[j - 1].last_doc;
        for (std::uint32_t i = 0; i < n; ++i) {
            if (p >= end) corrupt();
            std::uint64_t v = *p++;
            if ((v & 0x80) && !varint_tail(v, p, end)) corrupt();
            std::uint32_t t = 1;
            if (!(v & 1)) {
                if (p >= end) corrupt();
                std::uint64_t x = *p++;
                if ((x & 0x80) && !varint_tail(x, p, end)) corrupt();
                if (x == 0 || x > blk.max_tf) corrupt();
                t = static_cast<std::uint32_t>(x);
            }
            d += v >> 1;
            m_docs[i] = static_cast<std::uint32_t>(d);
            m_tfs[i] = t;
        }
        if (p != end || d != blk.last_doc) corrupt();
        m_decoded = j;
        set_block(j);
        m_len = n;
        m_pos = 0;
        doc = m_docs[0];
        tf = m_tfs[0];
        if (m_prefetch) {
            for (std::uint32_t i = 1; i <= kPrefetchAhead && i < n; ++i) {
                __builtin_prefetch(m_prefetch + m_docs[i]);
            }
        }
    }
    /// Moves the block pointer to block c (m_blocks.size(): past the end) and caches its last
    /// document and weighted bound.
    void set_block(std::uint32_t c) {
        m_cur = c;
        if (c < m_blocks.size()) {
            m_block_last = m_blocks[c].last_doc;
            m_block_ub = static_cast<double>(m_weight) * m_bound->frac(m_blocks[c]);
        } else {
            m_block_last = kEndDoc;  // (no target exceeds it: no further move)
            m_block_ub = 0;
        }
    }
    /// The first block from the block pointer on whose last document is >= target: a few
    /// steps (the common case: the next block or one after it), else galloping and a binary
    /// search (far targets: a chunk of a split query entered after others' chunks, where a
    /// walk would read every block entry in between).
    void advance_block(std::uint32_t target) {
        const std::size_t n = m_blocks.size();
        std::size_t c = m_cur;
        for (int i = 0; i < 4; ++i, ++c) {
            if (c >= n || m_blocks[c].last_doc >= target) {
                set_block(static_cast<std::uint32_t>(c));
                return;
            }
        }
        // Blocks before lo end below target; the answer is in [lo, hi).
        std::size_t lo = c, hi = n;
        for (std::size_t step = 8; lo + step < n; step *= 2) {
            if (m_blocks[lo + step].last_doc >= target) {
                hi = lo + step + 1;
                break;
            }
            lo += step + 1;
        }
        const auto* b = m_blocks.data();
        c = static_cast<std::size_t>(
            std::partition_point(b + lo, b + hi,
                                 [target](const PostingsBlock& x) { return x.last_doc < target; }) -
            b);
        set_block(static_cast<std::uint32_t>(c));
    }
    [[noreturn]] void corrupt() const {
        throw IndexError("corrupt postings block in " + m_file->path().string());
    }

    static constexpr std::uint32_t kPrefetchAhead = 8;

    const PostingsFile* m_file = nullptr;
    const float* m_prefetch = nullptr;
    std::span<const PostingsBlock> m_blocks;
    std::uint64_t m_term_end = 0;
    std::uint32_t m_df = 0;
    const BlockBoundParams* m_bound = nullptr;
    float m_weight = 1.0f;
    std::uint32_t m_cur = 0;               ///< block pointer
    std::uint32_t m_block_last = kEndDoc;  ///< last document of block m_cur (kEndDoc past the end)
    double m_block_ub = 0;                 ///< m_weight * bound of block m_cur (0 past the end)
    std::uint32_t m_decoded = kNone;       ///< block in the buffer
    std::uint32_t m_pos = 0, m_len = 0;    ///< position in the buffer
    std::uint32_t m_docs[kPostingsBlock];
    std::uint32_t m_tfs[kPostingsBlock];
};

}  // namespace plumb::index::detail
