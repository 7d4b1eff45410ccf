#pragma once
/// \file progress.hpp
/// Progress reporting for long work (indexing, encoding, training, batch search). Library code
/// reports through this callback and never prints; the CLI draws a progress bar from it.

#include <atomic>
#include <cstdint>
#include <functional>
#include <string_view>

namespace plumb {

/// Called with (done, total) units; total is 0 when unknown. May be called from worker threads,
/// but never concurrently with itself (callers serialise). Must be cheap.
using ProgressCallback = std::function<void(std::uint64_t done, std::uint64_t total)>;

/// Cooperative cancellation: long operations check it between units of work and stop cleanly,
/// leaving what they already committed intact. Set from a signal handler or another thread.
struct CancelToken {
    std::atomic<bool> cancelled{false};
    bool requested() const noexcept { return cancelled.load(std::memory_order_relaxed); }
    void request() noexcept { cancelled.store(true, std::memory_order_relaxed); }
};

}  // namespace plumb
