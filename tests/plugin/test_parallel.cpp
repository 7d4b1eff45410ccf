// plumb::parallel_for and plumb::ThreadGroup (plugin/parallel.hpp). Tests that start threads are
// named Concurrent* (the ThreadSanitizer tree's selection, scripts/test).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "plugin/error.hpp"
#include "plugin/parallel.hpp"
#include "plugin/progress.hpp"

using plumb::CancelToken;
using plumb::parallel_for;
using plumb::ThreadGroup;

TEST(Parallel, ResolveThreads) {
    EXPECT_EQ(plumb::resolve_threads(3), 3u);
    EXPECT_EQ(plumb::resolve_threads(1), 1u);
    EXPECT_GE(plumb::resolve_threads(0), 1u);
}

TEST(Parallel, NoItemsNoCalls) {
    for (unsigned threads : {0u, 1u, 4u}) {
        int calls = 0;
        parallel_for(0, threads, [&](std::size_t, unsigned) { ++calls; });
        EXPECT_EQ(calls, 0);
    }
}

TEST(Parallel, OneThreadRunsInlineInOrder) {
    const auto caller = std::this_thread::get_id();
    std::vector<std::size_t> order;
    parallel_for(50, 1, [&](std::size_t i, unsigned worker) {
        EXPECT_EQ(std::this_thread::get_id(), caller);
        EXPECT_EQ(worker, 0u);
        order.push_back(i);
    });
    ASSERT_EQ(order.size(), 50u);
    for (std::size_t i = 0; i < order.size(); ++i) EXPECT_EQ(order[i], i);
}

TEST(Parallel, OneItemRunsInlineWhateverTheThreads) {
    const auto caller = std::this_thread::get_id();
    for (unsigned threads : {0u, 2u, 8u}) {
        int calls = 0;
        parallel_for(1, threads, [&](std::size_t i, unsigned worker) {
            EXPECT_EQ(std::this_thread::get_id(), caller);
            EXPECT_EQ(i, 0u);
            EXPECT_EQ(worker, 0u);
            ++calls;
        });
        EXPECT_EQ(calls, 1);
    }
}

TEST(Parallel, InlineExceptionStopsAtItsItem) {
    std::vector<std::size_t> seen;
    try {
        parallel_for(10, 1, [&](std::size_t i, unsigned) {
            seen.push_back(i);
            if (i == 3) throw plumb::InvalidArgument("item 3");
            if (i == 5) throw std::runtime_error("item 5");
        });
        FAIL() << "no exception";
    } catch (const plumb::InvalidArgument& e) {
        EXPECT_STREQ(e.what(), "item 3");
    }
    EXPECT_EQ(seen, (std::vector<std::size_t>{0, 1, 2, 3}));
}

TEST(Parallel, InlineCancellation) {
    CancelToken cancel;
    std::vector<std::size_t> seen;
    parallel_for(
        10, 1,
        [&](std::size_t i, unsigned) {
            seen.push_back(i);
            if (i == 4) cancel.request();
        },
        &cancel);
    EXPECT_EQ(seen, (std::vector<std::size_t>{0, 1, 2, 3, 4}));
    seen.clear();
    parallel_for(
        10, 4, [&](std::size_t i, unsigned) { seen.push_back(i); }, &cancel);
    EXPECT_TRUE(seen.empty());  // requested before: nothing starts
}

TEST(Parallel, ConcurrentVisitsEveryIndexOnce) {
    for (unsigned threads : {0u, 2u, 3u, 8u}) {
        const std::size_t n = 1000;
        std::vector<std::atomic<int>> visits(n);
        std::mutex mu;
        std::set<std::thread::id> ids;
        std::set<unsigned> workers;
        parallel_for(n, threads, [&](std::size_t i, unsigned worker) {
            visits[i].fetch_add(1);
            std::lock_guard lock(mu);
            ids.insert(std::this_thread::get_id());
            workers.insert(worker);
        });
        for (std::size_t i = 0; i < n; ++i) EXPECT_EQ(visits[i].load(), 1) << i;
        const unsigned used = plumb::resolve_threads(threads);
        EXPECT_LE(workers.size(), used);
        for (unsigned w : workers) EXPECT_LT(w, used);
        EXPECT_EQ(ids.count(std::this_thread::get_id()), used == 1 ? 1u : 0u);
    }
}

TEST(Parallel, ConcurrentNeverMoreThreadsThanItems) {
    std::atomic<unsigned> max_worker{0};
    parallel_for(3, 16, [&](std::size_t, unsigned worker) {
        unsigned m = max_worker.load();
        while (worker > m && !max_worker.compare_exchange_weak(m, worker)) {
        }
    });
    EXPECT_LT(max_worker.load(), 3u);
}

TEST(Parallel, ConcurrentPerWorkerState) {
    // One accumulator per worker, no locking: the worker index is exclusive to its thread.
    const unsigned threads = 4;
    std::vector<std::size_t> sums(threads, 0);
    parallel_for(10000, threads, [&](std::size_t i, unsigned worker) { sums[worker] += i; });
    std::size_t total = 0;
    for (auto s : sums) total += s;
    EXPECT_EQ(total, 10000u * 9999u / 2);
}

TEST(Parallel, ConcurrentExceptionIsRethrownAfterJoin) {
    const std::size_t n = 2000;
    std::atomic<int> running{0};
    std::atomic<std::size_t> calls{0};
    std::atomic<bool> thrown{false};
    try {
        parallel_for(n, 4, [&](std::size_t i, unsigned) {
            running.fetch_add(1);
            calls.fetch_add(1);
            if (i == 7) {
                running.fetch_sub(1);
                thrown = true;
                throw plumb::InvalidArgument("bad item 7");
            }
            if (i > 7) {  // later items end only after the failure (and take their time)
                while (!thrown) std::this_thread::yield();
                std::this_thread::sleep_for(std::chrono::milliseconds(1));
            }
            running.fetch_sub(1);
        });
        FAIL() << "no exception";
    } catch (const plumb::InvalidArgument& e) {  // the type survives the thread hop
        EXPECT_STREQ(e.what(), "bad item 7");
    }
    EXPECT_EQ(running.load(), 0);  // every thread had finished its item before the rethrow
    EXPECT_LT(calls.load(), n);    // no further items were handed out
}

TEST(Parallel, ConcurrentOneOfSeveralExceptions) {
    // Every item throws: exactly one exception reaches the caller, the others are dropped.
    try {
        parallel_for(100, 4, [&](std::size_t i, unsigned) {
            throw std::runtime_error("item " + std::to_string(i));
        });
        FAIL() << "no exception";
    } catch (const std::runtime_error& e) {
        EXPECT_EQ(std::string(e.what()).rfind("item ", 0), 0u);
    }
}

TEST(Parallel, ConcurrentCancellationStopsHandingOut) {
    const std::size_t n = 100000;
    const unsigned threads = 4;
    CancelToken cancel;
    std::atomic<std::size_t> calls{0};
    parallel_for(
        n, threads,
        [&](std::size_t i, unsigned) {
            calls.fetch_add(1);
            if (i == 10) cancel.request();
            while (i > 10 && !cancel.requested()) std::this_thread::yield();
        },
        &cancel);
    // Items 0..10 ran; every other thread holds at most one later item until the request, and
    // sees it before taking another.
    EXPECT_LE(calls.load(), 11u + threads);
}

TEST(ThreadGroup, ConcurrentRunsEveryWorkerAndJoins) {
    std::vector<int> ran(5, 0);
    ThreadGroup group;
    group.start(5, [&](unsigned w) { ran[w] = 1; });
    group.join();
    EXPECT_FALSE(group.failed());
    EXPECT_EQ(ran, std::vector<int>(5, 1));
    EXPECT_EQ(group.wait(), nullptr);  // idempotent
    EXPECT_THROW(group.start(1, [](unsigned) {}), plumb::InvalidArgument);
}

TEST(ThreadGroup, ConcurrentFirstErrorWakesTheOthers) {
    // Worker 0 waits on a condition only a failure ends; worker 1 fails: on_error wakes it.
    std::mutex mu;
    std::condition_variable cv;
    bool stop = false;
    std::atomic<int> on_error_calls{0};
    ThreadGroup group;
    group.start(
        3,
        [&](unsigned w) {
            if (w == 0) {
                std::unique_lock lock(mu);
                cv.wait(lock, [&] { return stop; });
                return;
            }
            throw plumb::IoError("worker " + std::to_string(w));
        },
        [&] {
            on_error_calls.fetch_add(1);
            std::lock_guard lock(mu);
            stop = true;
            cv.notify_all();
        });
    try {
        group.join();
        FAIL() << "no exception";
    } catch (const plumb::IoError& e) {
        const std::string what = e.what();
        EXPECT_TRUE(what == "worker 1" || what == "worker 2") << what;
    }
    EXPECT_TRUE(group.failed());
    EXPECT_EQ(on_error_calls.load(), 1);  // once, for the first failure only
    EXPECT_NE(group.wait(), nullptr);     // still reported, not rethrown by wait()
}

TEST(ThreadGroup, ConcurrentDestructorJoins) {
    std::atomic<int> done{0};
    {
        ThreadGroup group;
        group.start(3, [&](unsigned) {
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
            done.fetch_add(1);
        });
    }
    EXPECT_EQ(done.load(), 3);
}
