#pragma once
/// \file detail/bm25_intra_query.hpp
/// INTERNAL: intra-query parallelism of block-max MaxScore (SearchOptions::intra_query): a query
/// still running after a time budget splits the rest of its document-number range into chunks
/// that other threads searching the same Bm25Searcher take over (incremental parallelism of
/// long requests: Haque et al., "Few-to-Many: Incremental Parallelism for Reducing Tail Latency
/// in Interactive Services", ASPLOS 2015; parallelising only the long queries: Jeon et al.,
/// "Predictive Parallelization: Taming Tail Latencies in Web Search", SIGIR 2014).
///
/// Protocol. The owner of a query publishes a SplitTask and keeps scanning chunk 0. Every
/// participant (the owner, and helpers: other threads of the same searcher that poll
/// IntraQueryScheduler::pending() at their window boundaries) takes chunks in increasing order
/// from the task's counter, scans each with its own cursors into its own top-k heap, and shares
/// its k-th best score through SplitTask::theta (a lower bound of the whole query's k-th best
/// score: the chunks are disjoint). A helper hands its heap back when no chunk is left. The
/// owner, when no chunk is left, closes the task (no new helpers), waits for the helpers still
/// scanning, and merges their heaps into its own. Nobody waits for a chunk nobody started: the
/// owner scans every chunk nobody else took, so the result never depends on helpers showing
/// up, only the time does.
///
/// The exhaustive path (Bm25Exhaustive::scan_range) uses the same tasks, published at the
/// query's start when its postings (the sum of its terms' document frequencies, which predicts
/// its time: correlation 0.93 on the benchmark collection) reach
/// IntraQueryOptions::exhaustive_min_postings. Each participant scores its chunks term at a time
/// into its own dense accumulator and top-k buffer, sharing the k-th best score through theta
/// as above; helpers take chunks within a LendBudget of predicted postings instead of a time.
///
/// Exactness: a document is pruned only when its score bound is strictly below theta (as on
/// the one-thread path), and a document of the top k scores at least the whole query's k-th
/// best score >= theta; each chunk's heap keeps, in the same total order (score, then id rank),
/// every top-k document of its chunk, so the merged heap is the one-pass top k with the same
/// bit-identical scores (a document's score is summed in canonical term order whatever chunk
/// scans it).

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <span>
#include <utility>
#include <vector>

#include "index/detail/bm25_topk.hpp"

namespace plumb::index::detail {

struct Bm25Query;

/// A mutex for the short critical sections that the threads searching one Bm25Searcher share
/// (the workspace pool, the open split queries): it spins briefly before blocking. std::mutex
/// blocks at once; the waiter sleeps, and on an idle (virtual) machine its core halts, so its
/// wake-up takes far longer than the section it waited for. Counts its contended locks.
class SpinMutex {
public:
    void lock() {
        if (m_mu.try_lock()) return;
        m_contended.fetch_add(1, std::memory_order_relaxed);
        for (int i = 0; i < 100; ++i) {
#if defined(__x86_64__) || defined(__i386__)
            __builtin_ia32_pause();
#endif
            if (m_mu.try_lock()) return;
        }
        m_blocked.fetch_add(1, std::memory_order_relaxed);
        m_mu.lock();
    }
    bool try_lock() { return m_mu.try_lock(); }
    void unlock() { m_mu.unlock(); }
    /// Locks that found the mutex taken, and those of them that then blocked.
    std::uint64_t contended() const { return m_contended.load(std::memory_order_relaxed); }
    std::uint64_t blocked() const { return m_blocked.load(std::memory_order_relaxed); }

private:
    std::mutex m_mu;
    std::atomic<std::uint64_t> m_contended{0}, m_blocked{0};
};

/// One split query: its document range [lo, n_docs) in `parts` chunks of decreasing width (as
/// OpenMP's guided schedule: chunk c spans the fractions 1 - ((parts - c) / parts)^2 to
/// 1 - ((parts - c - 1) / parts)^2 of the range, widths 2 (parts - c) - 1 in parts^2): whoever
/// is first done waits for the others' last chunk, the narrowest.
struct SplitTask {
    const Bm25Query* query = nullptr;
    std::size_t k = 0;
    std::uint32_t lo = 0, n_docs = 0;
    unsigned parts = 0;
    /// The largest k-th best score any participant's full heap has reached (-1: none yet).
    std::atomic<double> theta{-1.0};

    std::uint32_t chunk_lo(unsigned c) const {
        if (c >= parts) return n_docs;
        // (Monotone in c, lo at 0, n_docs at parts: all a split needs.)
        const double f = static_cast<double>(parts - c) / static_cast<double>(parts);
        const double rest = static_cast<double>(n_docs - lo) * f * f;
        return n_docs - static_cast<std::uint32_t>(rest);
    }
    std::uint32_t chunk_hi(unsigned c) const { return chunk_lo(c + 1); }

    /// An exhaustive query's split (Bm25Exhaustive::scan_range), published at its start; else
    /// block-max MaxScore's, published once the query has run a while.
    bool exhaustive = false;
    /// Exhaustive: the query terms' postings (what scoring decodes); a chunk's predicted cost
    /// is its share of them (the documents are spread evenly over the numbers).
    std::uint64_t postings = 0;
    /// Exhaustive: predicted postings of the chunks helpers took (guarded by the mutex).
    std::uint64_t helped = 0;
    std::uint64_t chunk_postings(unsigned c) const {
        const double f = static_cast<double>(chunk_hi(c) - chunk_lo(c)) /
                         static_cast<double>(n_docs - lo ? n_docs - lo : 1);
        return static_cast<std::uint64_t>(f * static_cast<double>(postings));
    }
    /// Raises theta to at least `t`.
    void offer_theta(double t) {
        double cur = theta.load(std::memory_order_relaxed);
        while (t > cur && !theta.compare_exchange_weak(cur, t, std::memory_order_relaxed)) {
        }
    }

    // Guarded by the scheduler's mutex:
    unsigned next = 1;  ///< next chunk to hand out (the owner starts with chunk 0)
    bool closed = false;
    std::vector<TopKEntry> results;  ///< the helpers' heaps
    std::exception_ptr error;        ///< a helper's failure (the owner rethrows it)
    /// Helpers scanning (changed under the mutex; the owner reads it without).
    std::atomic<unsigned> active{0};
};

/// What a thread may lend to exhaustive splits (predicted postings): its own query's postings
/// plus those of the chunks it has taken (`spent`) may grow up to `floor`, and beyond it only
/// while they stay at most the owner's remaining share (the task's postings less those of the
/// chunks helpers took): helping shares a long query's work without making the helper's query
/// cost more than what is left to the owner.
struct LendBudget {
    std::uint64_t spent = 0;
    std::uint64_t floor = 0;
};

/// The open split queries of one searcher.
class IntraQueryScheduler {
public:
    /// True when some query has chunks left (a relaxed load: polled once per window).
    bool pending() const noexcept { return m_open.load(std::memory_order_relaxed) != 0; }

    void publish(SplitTask& t) {
        std::lock_guard lock(m_mu);
        ++m_splits;
        m_tasks.push_back(&t);
        m_open.store(static_cast<unsigned>(m_tasks.size()), std::memory_order_relaxed);
    }

    /// A helper joins some open task with a chunk left: its first chunk in `chunk`. Block-max
    /// tasks only when `block_max` (the helper's lending time has not run out); exhaustive ones
    /// only when `exhaustive` (the helper is between queries) and the chunk's predicted postings
    /// fit in `budget` (then added to it).
    SplitTask* join(unsigned& chunk, bool block_max, bool exhaustive, LendBudget& budget) {
        std::lock_guard lock(m_mu);
        for (SplitTask* t : m_tasks) {
            if (t->closed || t->next >= t->parts) continue;
            if (t->exhaustive ? !exhaustive || !take(*t, budget) : !block_max) continue;
            chunk = t->next++;
            ++m_joins;
            t->active.fetch_add(1, std::memory_order_relaxed);
            return t;
        }
        return nullptr;
    }

    /// The next chunk of `t` for a participant, false when none is left (or, with `budget`, a
    /// helper's, for an exhaustive task: when the chunk's predicted postings do not fit in it;
    /// else added to it).
    bool claim(SplitTask& t, unsigned& chunk, LendBudget* budget = nullptr) {
        std::lock_guard lock(m_mu);
        if (t.closed || t.next >= t.parts) return false;
        if (budget && t.exhaustive && !take(t, *budget)) return false;
        chunk = t.next++;
        return true;
    }

    /// A helper is done with `t`: its heap's entries join the results (or its failure is
    /// recorded: the owner rethrows it rather than return a result missing a chunk).
    void leave(SplitTask& t, std::span<const TopKEntry> entries, std::exception_ptr error = {}) {
        {
            std::lock_guard lock(m_mu);
            try {
                t.results.insert(t.results.end(), entries.begin(), entries.end());
            } catch (...) {  // (bad_alloc) the owner must not wait forever nor miss the chunk
                if (!error) error = std::current_exception();
            }
            if (error && !t.error) t.error = error;
            t.active.fetch_sub(1, std::memory_order_release);
        }
        // (The scheduler's condition variable, not the task's: the owner may return and
        // destroy the task as soon as `active` is 0.)
        m_done.notify_all();
    }

    /// The owner: no new participant for `t`; waits until its helpers have left. The results
    /// (or a helper's error) are then complete. Once per published task, also when the owner
    /// fails (helpers must not see a task that is gone).
    void close(SplitTask& t) {
        {
            std::lock_guard lock(m_mu);
            t.closed = true;
            m_tasks.erase(std::find(m_tasks.begin(), m_tasks.end(), &t));
            m_open.store(static_cast<unsigned>(m_tasks.size()), std::memory_order_relaxed);
        }
        if (t.active.load(std::memory_order_acquire) == 0) return;
        const auto w0 = std::chrono::steady_clock::now();
        bool slept = false;
        // A helper has at most one chunk left: spin briefly, then sleep.
        for (int i = 0; i < 2000; ++i) {
            if (t.active.load(std::memory_order_acquire) == 0) break;
#if defined(__x86_64__) || defined(__i386__)
            __builtin_ia32_pause();
#endif
        }
        std::unique_lock<SpinMutex> lock(m_mu);
        if (t.active.load(std::memory_order_acquire) != 0) {
            slept = true;
            m_done.wait(lock, [&] { return t.active.load(std::memory_order_acquire) == 0; });
        }
        ++m_waits;
        m_sleeps += slept;
        m_wait_ns += static_cast<std::uint64_t>(
            std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - w0)
                .count());
    }
    /// Queries split, helper joins, closes that waited for a helper (of them: that slept),
    /// the time they waited, and the scheduler mutex's contended and blocked locks so far.
    struct Stats {
        std::uint64_t splits, joins, waits, sleeps, wait_ns, contended, blocked;
    };
    Stats stats() const {
        std::lock_guard lock(m_mu);
        return {m_splits, m_joins, m_waits, m_sleeps, m_wait_ns, m_mu.contended(), m_mu.blocked()};
    }


private:
    /// Adds the predicted postings of t's next chunk to `budget` if they fit (LendBudget).
    static bool take(SplitTask& t, LendBudget& budget) {
        const std::uint64_t cost = t.chunk_postings(t.next);
        const std::uint64_t taken = t.helped + cost;
        const std::uint64_t owner_share = t.postings > taken ? t.postings - taken : 0;
        if (budget.spent + cost > std::max(budget.floor, owner_share)) return false;
        budget.spent += cost;
        t.helped = taken;
        return true;
    }

    mutable SpinMutex m_mu;
    std::uint64_t m_splits = 0, m_joins = 0, m_waits = 0, m_sleeps = 0, m_wait_ns = 0;
    std::condition_variable_any m_done;
    std::vector<SplitTask*> m_tasks;
    std::atomic<unsigned> m_open{0};
};

/// One participant's view while it scans a query (Bm25BlockMaxMaxScore::scan).
struct IntraQueryRun {
    IntraQueryScheduler* scheduler = nullptr;
    /// The task this scan takes part in: a helper's from the start, the owner's once split.
    SplitTask* task = nullptr;
    bool helper = false;
    unsigned chunk = 0;  ///< a helper's first chunk
    // Owner only:
    unsigned parts = 0;   ///< chunks of a split (>= 2)
    std::chrono::steady_clock::time_point start;
    std::chrono::steady_clock::duration after{};  ///< split when still running after this
    /// The owner: help other queries (at window boundaries) only before this time. A helper:
    /// take no further chunk at or after it.
    std::chrono::steady_clock::time_point help_until = std::chrono::steady_clock::time_point::max();
    std::size_t k = 0;
    std::uint32_t n_docs = 0;
    /// Minimum documents left for a split to be worth it.
    std::uint32_t min_docs = 0;
    SplitTask* own = nullptr;  ///< storage for the owner's task
    /// Runs other queries' chunks (the owner polls before it has split).
    std::function<void()> help;
};

}  // namespace plumb::index::detail
