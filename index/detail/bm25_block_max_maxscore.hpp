#pragma once
/// \file detail/bm25_block_max_maxscore.hpp
/// INTERNAL: SearchAlgorithm::BlockMaxMaxScore, the default for k <= SearchOptions::pruning_max_k
/// on indexes with block-max metadata (postings.bin version 2; the algorithms' contract:
/// detail/bm25_query.hpp).

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <vector>

#include "index/detail/bm25_block_cursor.hpp"
#include "index/detail/bm25_intra_query.hpp"
#include "index/detail/bm25_query.hpp"  // the contract, the queues, the workspace

namespace plumb::index::detail {

/// Documents per window of Bm25BlockMaxMaxScore (16 KB of partial scores: stays in L1).
inline constexpr std::uint32_t kScoreWindow = 4096;
/// The first window's width; each next one is twice as wide up to kScoreWindow, so the
/// essential set can shrink soon while the threshold settles.
inline constexpr std::uint32_t kFirstScoreWindow = 128;

/// Block-max MaxScore (Turtle and Flood, 1995; Chakrabarti et al., WSDM 2011; Dimopoulos et
/// al., WSDM 2013; PISA's block_max_maxscore_query), processed in windows of documents as
/// Lucene's MaxScoreBulkScorer does. Terms sorted by list upper bound ascending; the prefix
/// whose cumulated bounds cannot reach the heap's worst score theta is non-essential. For each
/// window of up to kScoreWindow document numbers (starting at the smallest document left in an
/// essential list), the essential lists are scored term at a time into a small accumulator:
/// tight loops over decoded blocks, no per-posting branching between lists. Then each document
/// of the window that an essential list matched, in document order, is completed as in
/// document-at-a-time block-max MaxScore: its partial score plus the block upper bounds of the
/// non-essential lists at that document (their block pointers move without decoding) must
/// reach theta, else no non-essential posting is decoded; otherwise the non-essential lists are
/// looked up from the highest bound down, stopping as soon as the score plus the remaining
/// block bounds falls short. The essential set only shrinks at window boundaries (lists made
/// non-essential during a window were already scored for all of it).
///
/// Exactness: the sorted order is the exact reverse of the canonical term order (bound
/// descending, ties by query position), so the essential lists are a prefix of the canonical
/// order and the non-essential ones its suffix: accumulating the essential lists in canonical
/// order and then adding the non-essential contributions from the highest bound down adds each
/// document's contributions in the canonical order, the same float sum as the exhaustive path.
///
/// (Skipping whole ranges of the essential lists when the sum of all lists' block bounds falls
/// short, as block-max WAND does, measured ~10 % slower in the document-at-a-time version on
/// the benchmark collection: its 128-posting blocks of the frequent words span few documents.)
struct Bm25BlockMaxMaxScore {
    /// The owner's split test at document `base` (the documents below it scanned): the query
    /// has scanned par.after, and the rest, projected at the speed so far (elapsed x documents
    /// left / documents done: an overestimate, as pruning speeds up once the threshold has
    /// risen), takes at least a quarter of that. A query nearly done when the time is up
    /// (about a third of those over 0.5 ms on the benchmark topics finish within 0.1 ms) is
    /// not worth the hand-off.
    static bool worth_splitting(const IntraQueryRun& par, std::uint32_t base) {
        const auto elapsed = std::chrono::steady_clock::now() - par.start;
        if (elapsed < par.after) return false;
        return static_cast<double>(elapsed.count()) * static_cast<double>(par.n_docs - base) >=
               0.25 * static_cast<double>(par.after.count()) * static_cast<double>(base);
    }

    void operator()(const Bm25Query& query, Bm25Workspace& ws, TopKHeap& top) const {
        scan(query, ws, top, nullptr);
    }

    /// The scan, optionally taking part in intra-query parallelism (detail/bm25_intra_query.hpp):
    /// `par` null: the whole query, alone. Otherwise as the owner (par->helper false: the whole
    /// query, split once it has run par->after, then chunks until none is left, then the
    /// helpers' heaps merged into `top`) or as a helper (chunks of par->task from par->chunk
    /// on, into `top`; the caller hands it back).
    void scan(const Bm25Query& query, Bm25Workspace& ws, TopKHeap& top, IntraQueryRun* par) const {
        const auto& q = query.terms;
        const float k1p1 = query.k1p1;
        const IndexData& d = ws.index();
        const std::size_t m = q.size();
        // Sorted position j holds query term m - 1 - j: bounds ascending (q is in canonical
        // order, bound descending, ties by query position).
        auto& cum = ws.cum;  // cum[j] = sum of list bounds of sorted terms 0..j
        cum.resize(m);
        double s = 0;
        for (std::size_t j = 0; j < m; ++j) cum[j] = (s += q[m - 1 - j].ub);
        auto& cur = ws.block_cursors;
        cur.resize(m);
        auto& w = ws.weight;  // by sorted position
        w.resize(m);
        // (A helper's cursors start at its first chunk.)
        const std::uint32_t from = par && par->task ? par->task->chunk_lo(par->chunk) : 0;
        for (std::size_t j = 0; j < m; ++j) {
            const Bm25Term& t = q[m - 1 - j];
            cur[j] = &ws.block_cursor(j);
            cur[j]->open(d.postings, static_cast<std::uint64_t>(t.entry - d.terms.data()),
                         static_cast<std::uint32_t>(t.entry->df), query.block_bound, query.norm,
                         t.w, from);
            w[j] = t.w;
        }
        auto& bcum = ws.block_cum;  // bcum[j] = block bounds of sorted terms 0..j at `doc`
        bcum.resize(m);
        auto& window = ws.window;  // all zero between searches
        if (window.size() != kScoreWindow) window.assign(kScoreWindow, 0.0f);
        ws.window_docs.resize(kScoreWindow + 64);
        float* acc = window.data();
        std::uint64_t bits[kScoreWindow / 64] = {};  // documents of the window matched
        const float* nm = query.norm;
        const std::uint32_t* rank = d.idrank.data();
        constexpr double kUp = 1.0 + kBoundSlack;
        double theta = -1.0;  // no threshold until the heap is full
        std::size_t p = 0;    // terms [0, p) are non-essential
        std::uint32_t width = kFirstScoreWindow;
        std::uint32_t hi = kEndDoc;  // end of the current range (chunk)
        SplitTask* task = par ? par->task : nullptr;
        // Moves the essential lists to the chunk starting at lo.
        auto enter = [&](std::uint32_t lo) {
            for (std::size_t j = p; j < m; ++j) cur[j]->next_geq(lo);
        };
        if (task) {  // a helper: its first chunk, with the threshold reached so far
            theta = task->theta.load(std::memory_order_relaxed);
            while (p < m && cum[p] * kUp < theta) ++p;
            enter(task->chunk_lo(par->chunk));
            hi = task->chunk_hi(par->chunk);
            width = kScoreWindow;
        }
        unsigned windows = 0;
        while (p < m) {
            if (task) {
                const double t = task->theta.load(std::memory_order_relaxed);
                if (t > theta) {
                    theta = t;
                    while (p < m && cum[p] * kUp < theta) ++p;
                    if (p >= m) break;
                }
            } else if (par && (++windows & 3) == 0 && par->scheduler->pending() &&
                       std::chrono::steady_clock::now() < par->help_until) {
                // Other queries' chunks, while this one is young (an old one is a long query
                // itself: helping would make it longer still).
                par->help();
            }
            std::uint32_t base = kEndDoc;
            for (std::size_t j = p; j < m; ++j) base = std::min(base, cur[j]->doc);
            if (!task && par && (windows & 3) == 0 && base < par->n_docs &&
                par->n_docs - base >= par->min_docs && worth_splitting(*par, base)) {
                // Still running: the rest of the range [base, n_docs) in chunks; this thread
                // goes on with chunk 0.
                task = par->task = par->own;
                task->query = &query;
                task->k = top.k();
                task->lo = base;
                task->n_docs = par->n_docs;
                task->parts = par->parts;
                task->theta.store(top.full() ? theta : -1.0, std::memory_order_relaxed);
                par->scheduler->publish(*task);
                hi = task->chunk_hi(0);
            }
            if (base >= hi) {  // (also kEndDoc: the lists are done)
                unsigned c = 0;
                if (!task || base == kEndDoc) break;
                // (A helper lends its thread for a bounded time: the owner takes what is left.)
                if (par->helper && std::chrono::steady_clock::now() >= par->help_until) break;
                if (!par->scheduler->claim(*task, c)) break;
                enter(task->chunk_lo(c));
                hi = task->chunk_hi(c);
                continue;
            }
            const std::uint32_t end =
                std::min(base >= kEndDoc - width ? kEndDoc : base + width, hi);
            const std::uint32_t words = (std::min(end - base, width) + 63) / 64;
            if (width < kScoreWindow) width *= 2;
            // Essential lists, in canonical order (highest bound first).
            for (std::size_t j = m; j-- > p;) {
                const float wj = w[j];
                cur[j]->for_each_below(end, [&](std::uint32_t doc, std::uint32_t tf) {
                    const std::uint32_t i = doc - base;
                    const float v = wj * bm25_frac(static_cast<float>(tf), k1p1, nm[doc]);
                    acc[i] += v;
                    bits[i >> 6] |= std::uint64_t{1} << (i & 63);
                });
            }
            const std::size_t pw = p;  // this window's non-essential lists
            // The matched documents in order, taken out of the bitmap four bits per word
            // without a data-dependent branch (a word holds one or two on average).
            std::uint32_t* matched = ws.window_docs.data();
            std::uint32_t nc = 0;
            for (std::uint32_t word = 0; word < words; ++word) {
                std::uint64_t b = bits[word];
                bits[word] = 0;
                const auto cnt = static_cast<std::uint32_t>(std::popcount(b));
                std::uint32_t* out = matched + nc;
                const std::uint32_t off = word * 64;
                for (int r = 0; r < 4; ++r) {
                    // (Bit 63 set: never 0 for the builtin, so no branch for 0 as
                    // std::countr_zero has; a position past the word's bits is not counted.)
                    out[r] = off + static_cast<std::uint32_t>(
                                       __builtin_ctzll(b | (std::uint64_t{1} << 63)));
                    b &= b - 1;
                }
                for (std::uint32_t r = 4; b; ++r) {
                    out[r] = off + static_cast<std::uint32_t>(__builtin_ctzll(b));
                    b &= b - 1;
                }
                nc += cnt;
            }
            for (std::uint32_t ci = 0; ci < nc; ++ci) {
                const std::uint32_t i = matched[ci];
                const std::uint32_t doc = base + i;
                float score = acc[i];
                acc[i] = 0.0f;
                if (pw > 0) {
                    // Block bounds of the non-essential lists at `doc` (0 past a list's end).
                    double est = score;
                    double bsum = 0;
                    for (std::size_t j = 0; j < pw; ++j) {
                        bcum[j] = (bsum += cur[j]->block_ub(doc));
                    }
                    if ((est + bsum) * kUp < theta) continue;
                    bool pruned = false;
                    const float nd = nm[doc];
                    for (std::size_t j = pw; j-- > 0;) {
                        if ((est + bcum[j]) * kUp < theta) {
                            pruned = true;
                            break;
                        }
                        BlockCursor& c = *cur[j];
                        c.next_geq(doc);
                        if (c.doc == doc) {
                            const float v = w[j] * bm25_frac(static_cast<float>(c.tf), k1p1, nd);
                            score += v;
                            est += v;
                        }
                    }
                    if (pruned) continue;
                }
                // Below the worst kept score: out, without loading the id rank (a cache
                // miss).
                if (static_cast<double>(score) < theta) continue;
                TopKEntry e{score, rank[doc], doc};
                if (top.accepts(e)) {
                    top.push(e);
                    if (top.full()) {
                        // (theta may already be higher: another participant's.)
                        theta = std::max(theta, static_cast<double>(top.worst().score));
                        if (task) task->offer_theta(top.worst().score);
                        while (p < m && cum[p] * kUp < theta) ++p;
                    }
                }
            }
        }
        if (task && !par->helper) {
            // The owner: every chunk is taken; the helpers' heaps join this one.
            par->scheduler->close(*task);
            if (task->error) std::rethrow_exception(task->error);
            for (const TopKEntry& e : task->results)
                if (top.accepts(e)) top.push(e);
        }
    }
};

}  // namespace plumb::index::detail
