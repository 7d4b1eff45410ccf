#include "plugin/parallel.hpp"

#include <algorithm>
#include <utility>

#include "plugin/error.hpp"

namespace plumb {

unsigned resolve_threads(unsigned requested) noexcept {
    return requested ? requested : std::max(1u, std::thread::hardware_concurrency());
}

ThreadGroup::~ThreadGroup() { (void)wait(); }

void ThreadGroup::fail(std::exception_ptr e) noexcept {
    {
        std::lock_guard lock(m_mutex);
        if (m_error) return;
        m_error = std::move(e);
        m_failed.store(true, std::memory_order_relaxed);
    }
    if (m_on_error) m_on_error();
}

void ThreadGroup::start(unsigned n, WorkerFn fn, std::function<void()> on_error) {
    if (m_started) throw InvalidArgument("ThreadGroup::start called twice");
    m_started = true;
    m_fn = std::move(fn);
    m_on_error = std::move(on_error);
    m_threads.reserve(n);
    for (unsigned worker = 0; worker < n; ++worker) {
        try {
            m_threads.emplace_back([this, worker] {
                try {
                    m_fn(worker);
                } catch (...) {
                    fail(std::current_exception());
                }
            });
        } catch (...) {
            // The workers already running learn of it through on_error / failed().
            fail(std::current_exception());
            return;
        }
    }
}

std::exception_ptr ThreadGroup::wait() noexcept {
    for (auto& t : m_threads) {
        if (t.joinable()) t.join();
    }
    m_threads.clear();
    std::lock_guard lock(m_mutex);
    return m_error;
}

void ThreadGroup::join() {
    if (auto e = wait()) std::rethrow_exception(e);
}

void parallel_for(std::size_t n, unsigned threads, const ParallelForFn& fn,
                  const CancelToken* cancel) {
    auto cancelled = [cancel] { return cancel && cancel->requested(); };
    const auto used = static_cast<unsigned>(
        std::min<std::size_t>(resolve_threads(threads), std::max<std::size_t>(1, n)));
    if (used == 1) {
        for (std::size_t i = 0; i < n && !cancelled(); ++i) fn(i, 0);
        return;
    }
    std::atomic<std::size_t> next{0};
    ThreadGroup group;
    group.start(used, [&](unsigned worker) {
        while (!group.failed() && !cancelled()) {
            const std::size_t i = next.fetch_add(1, std::memory_order_relaxed);
            if (i >= n) return;
            fn(i, worker);
        }
    });
    group.join();
}

}  // namespace plumb
