#include "plugin/allocator.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace plumb {

std::string tune_allocator_for_inference(const AllocatorTuning& tuning) noexcept {
#if defined(__GLIBC__)
    try {
        if (const char* t = std::getenv("GLIBC_TUNABLES"); t && std::strstr(t, "glibc.malloc.")) {
            return "";
        }
        // glibc's older environment variables for the same settings
        for (const char* v : {"MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_"}) {
            if (std::getenv(v)) return "";
        }
        const auto as_int = [](std::size_t v) {
            return static_cast<int>(std::min<std::size_t>(v, std::size_t{1} << 30));
        };
        if (mallopt(M_MMAP_THRESHOLD, as_int(tuning.mmap_threshold)) != 1) return "";
        if (mallopt(M_TRIM_THRESHOLD, as_int(tuning.trim_threshold)) != 1) return "";
        return "glibc malloc: mmap threshold " + std::to_string(tuning.mmap_threshold >> 20) +
               " MiB, trim threshold " + std::to_string(tuning.trim_threshold >> 20) + " MiB";
    } catch (...) {
        return "";
    }
#else
    (void)tuning;
    return "";
#endif
}

}  // namespace plumb
