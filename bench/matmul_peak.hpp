// The float32 matmul peak the model benchmarks (bench_rerank, bench_train) state their GFLOP/s
// against: best of `reps` torch::mm of two n x n matrices after one warm-up, in the calling
// process with its current Torch thread count.
#pragma once

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdint>

namespace plumb::bench {

inline double measure_peak_gflops(std::int64_t n, int reps) {
    c10::InferenceMode guard;
    auto a = torch::randn({n, n}), b = torch::randn({n, n});
    auto c = torch::mm(a, b);  // warm-up
    double best = 0;
    for (int r = 0; r < reps; ++r) {
        const auto t = std::chrono::steady_clock::now();
        c = torch::mm(a, b);
        const double s =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
        best = std::max(best, 2.0 * double(n) * double(n) * double(n) / s / 1e9);
    }
    return best;
}

}  // namespace plumb::bench
