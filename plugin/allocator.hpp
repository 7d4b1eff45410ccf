#pragma once
/// \file allocator.hpp
/// An explicit, opt-in allocator setting for processes that run neural inference (the `plumb`
/// CLI and the benchmarks call it; a host decides for itself: it changes the whole process).
///
/// glibc serves every allocation above its mmap threshold (dynamic, at most 32 MiB) with a fresh
/// mmap and returns it with munmap on free. A cross-encoder's per-layer temporaries are larger
/// than that (32 pairs x 191 tokens x 1,536 floats = 37.5 MB for MiniLM's feed-forward), so
/// each forward pass maps, page-faults and unmaps them anew: a quarter of an int8 pass's CPU time
/// here. Raising the mmap threshold (and the trim threshold, so freed memory stays for the next
/// batch) serves them from the heap instead. The cost: up to `trim_threshold` bytes of freed
/// memory stay with the process. Same effect as
/// GLIBC_TUNABLES=glibc.malloc.mmap_threshold=268435456:glibc.malloc.trim_threshold=1073741824.

#include <cstddef>
#include <string>

namespace plumb {

struct AllocatorTuning {
    std::size_t mmap_threshold = std::size_t{256} << 20;  ///< bytes; glibc's is dynamic, <= 32 MiB
    std::size_t trim_threshold = std::size_t{1} << 30;    ///< bytes kept before returning to the OS
};

/// Applies `tuning` with mallopt and returns what it set (e.g. "glibc malloc: mmap threshold 256
/// MiB, trim threshold 1024 MiB"); returns "" and changes nothing when the C library is not glibc,
/// or when GLIBC_TUNABLES sets a malloc tunable or MALLOC_MMAP_THRESHOLD_ / MALLOC_TRIM_THRESHOLD_
/// is set (the user's choice wins). Throws nothing.
std::string tune_allocator_for_inference(const AllocatorTuning& tuning = {}) noexcept;

}  // namespace plumb
