#pragma once
/// \file parallel.hpp
/// plumb's one way of running work on threads (batch search, the pipeline's batches, the index
/// builder's analysis workers). There is no global pool: every call starts its threads and joins
/// them before it returns, so the thread count is always the caller's configuration and
/// multiplies with the host's own threads (and with Torch's or OpenMP's, see rerank/).
///
/// Errors follow FAISS's rule: an exception thrown on a worker thread is caught there, the
/// other workers are told to stop, and once every thread has been joined the first exception is
/// rethrown on the calling thread (later ones are dropped). No exception ever escapes a thread.

#include <atomic>
#include <cstddef>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "plugin/progress.hpp"

namespace plumb {

/// A thread count as configured: `requested`, or std::thread::hardware_concurrency() (at least
/// 1) when `requested` is 0.
unsigned resolve_threads(unsigned requested) noexcept;

/// A group of threads started together and joined together, keeping the first exception any of
/// them threw. For work that is not a plain loop over items (the index builder's analysis
/// workers and writer around a queue); parallel_for() is built on it. Not thread-safe itself:
/// one owner starts and joins it; failed() may be called from the workers.
class ThreadGroup {
public:
    /// fn(worker), worker in [0, n).
    using WorkerFn = std::function<void(unsigned worker)>;

    ThreadGroup() = default;
    /// Waits for the threads (an exception they threw is dropped): join() or wait() first.
    ~ThreadGroup();
    ThreadGroup(const ThreadGroup&) = delete;
    ThreadGroup& operator=(const ThreadGroup&) = delete;

    /// Starts `n` threads running fn(worker), worker = 0 .. n-1. The first exception a worker
    /// throws is kept for join(); `on_error` (optional) is then called once, on that worker's
    /// thread, so that the owner can wake the others (set its stop flag, notify its condition
    /// variables); it must not throw. A thread that cannot be started counts as a failed worker
    /// (its std::system_error is kept and on_error is called on the calling thread; no further
    /// thread is started); start() itself does not throw then. InvalidArgument when called twice.
    void start(unsigned n, WorkerFn fn, std::function<void()> on_error = {});

    /// True once a worker has failed (workers may poll it to stop early).
    bool failed() const noexcept { return m_failed.load(std::memory_order_relaxed); }

    /// Waits for every thread; returns the first exception a worker threw (null if none).
    /// Idempotent.
    std::exception_ptr wait() noexcept;
    /// wait(), then rethrows the first exception a worker threw.
    void join();

private:
    void fail(std::exception_ptr e) noexcept;

    WorkerFn m_fn;
    std::function<void()> m_on_error;
    std::vector<std::thread> m_threads;
    std::mutex m_mutex;  ///< guards m_error
    std::exception_ptr m_error;
    std::atomic<bool> m_failed{false};
    bool m_started = false;
};

/// fn(index, worker): `worker` identifies the calling thread (0 .. threads used - 1), for
/// per-thread state.
using ParallelForFn = std::function<void(std::size_t index, unsigned worker)>;

/// Calls fn(index, worker) once for every index in [0, n) on `threads` threads (0 = hardware
/// concurrency; never more threads than indexes). Indexes are handed out one at a time in
/// increasing order through an atomic counter (a slow item does not hold up the others); they
/// may finish in any order, so fn writes its result to its own slot.
///
/// With one thread (threads == 1, or n <= 1) everything runs inline on the calling thread, in
/// index order, and an exception propagates directly. Otherwise the first exception fn throws
/// stops the handing out of indexes, the items already running finish, every thread is joined
/// and the exception is rethrown here.
///
/// `cancel` (optional) is checked before each index is handed out: once it is requested no
/// further index starts and parallel_for returns normally; the caller decides what a
/// cancellation means (check cancel->requested() afterwards).
void parallel_for(std::size_t n, unsigned threads, const ParallelForFn& fn,
                  const CancelToken* cancel = nullptr);

}  // namespace plumb
