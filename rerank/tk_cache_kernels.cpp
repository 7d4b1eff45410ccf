// Includes ATen/Parallel.h (the intra-op thread count) and c10's Half only (no Torch). The
// passages are split over plain std::threads rather than an OpenMP region: on a machine shared
// with other processes, OpenMP's spinning workers cost more than the ~10 ms of work here (a
// 100-candidate call measured 34 ms on 2 spinning threads, 5.5 ms with OMP_WAIT_POLICY=passive).
#include "rerank/detail/tk_cache_kernels.hpp"

#include <ATen/Parallel.h>
#include <c10/util/Half.h>
#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <thread>
#include <cmath>

// glibc's libmvec (libc6): expf on 8 floats, AVX2 variant (x86_64 vector function ABI).
extern "C" __m256 _ZGVdN8v_expf(__m256 x);

namespace plumb::rerank::detail {

namespace {

constexpr float kClamp = 1e-10f;
/// Padding of a cosine row to a multiple of 8: far from every μ, its kernel values are 0.
constexpr float kFarAway = 1e4f;

bool detect_vectorised() {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
           __builtin_cpu_supports("f16c");
}

const bool kCpuVectorised = detect_vectorised();
std::atomic<bool> g_vectorised{kCpuVectorised};

std::size_t round8(std::size_t n) { return (n + 7) / 8 * 8; }

// ---------------------------------------------------------------------------------------------
// Conversions

__attribute__((target("avx2,f16c"))) void to_fp16_f16c(const float* in, std::uint16_t* out,
                                                         std::size_t n) {
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT);
        _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), h);
    }
    for (; i < n; ++i) out[i] = c10::detail::fp16_ieee_from_fp32_value(in[i]);
}

__attribute__((target("avx2,f16c"))) void to_fp32_f16c(const std::uint16_t* in, float* out,
                                                         std::size_t n) {
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i));
        _mm256_storeu_ps(out + i, _mm256_cvtph_ps(h));
    }
    for (; i < n; ++i) out[i] = c10::detail::fp16_ieee_to_fp32_value(in[i]);
}

// ---------------------------------------------------------------------------------------------
// Final score from Σ_j K per (query term, kernel)

float pool(const float* pkq, std::size_t lq, std::size_t lp, const TkPooling& p) {
    const std::size_t nk = p.mu.size();
    if (!p.mean_kernel) {
        float s = 0.0f;
        for (std::size_t k = 0; k < nk; ++k) {
            float col = 0.0f;
            for (std::size_t i = 0; i < lq; ++i) col += std::log(std::max(pkq[i * nk + k], kClamp));
            s += p.weights[k] * col;
        }
        return s;
    }
    float a = 0.0f, m = 0.0f;
    const float len1 = static_cast<float>(lp) + 1.0f;
    for (std::size_t k = 0; k < nk; ++k) {
        float lcol = 0.0f, mcol = 0.0f;
        for (std::size_t i = 0; i < lq; ++i) {
            const float v = pkq[i * nk + k];
            lcol += std::log2(std::max(v, kClamp)) * p.scaler;
            mcol += v / len1 * p.scaler;
        }
        a += p.weights[k] * lcol;
        m += p.mean_weights[k] * mcol;
    }
    return p.comb[0] * a + p.comb[1] * m;
}

// ---------------------------------------------------------------------------------------------
// Scalar path

void score_scalar(const float* q, std::size_t lq, std::size_t dim,
                  std::span<const TkCachedPassage> passages, const TkPooling& p, float* out,
                  std::int64_t begin, std::int64_t end) {
    const std::size_t nk = p.mu.size();
    std::vector<float> coef(nk), row(dim), pkq(lq * nk);
    for (std::size_t k = 0; k < nk; ++k) coef[k] = -1.0f / (2.0f * p.sigma[k] * p.sigma[k]);
    for (auto b = begin; b < end; ++b) {
        const auto& ps = passages[static_cast<std::size_t>(b)];
        std::fill(pkq.begin(), pkq.end(), 0.0f);
        for (std::uint32_t j = 0; j < ps.length; ++j) {
            if (ps.rows_int8) {
                const std::int8_t* v = ps.rows_int8 + static_cast<std::size_t>(j) * dim;
                for (std::size_t d = 0; d < dim; ++d) {
                    row[d] = ps.scales[j] * static_cast<float>(v[d]);
                }
            } else {
                const std::uint16_t* h = ps.rows + static_cast<std::size_t>(j) * dim;
                for (std::size_t d = 0; d < dim; ++d) {
                    row[d] = c10::detail::fp16_ieee_to_fp32_value(h[d]);
                }
            }
            for (std::size_t i = 0; i < lq; ++i) {
                float c = 0.0f;
                for (std::size_t d = 0; d < dim; ++d) c += q[i * dim + d] * row[d];
                for (std::size_t k = 0; k < nk; ++k) {
                    const float x = c - p.mu[k];
                    pkq[i * nk + k] += std::exp(x * x * coef[k]);
                }
            }
        }
        out[b] = pool(pkq.data(), lq, ps.length, p);
    }
}

// ---------------------------------------------------------------------------------------------
// AVX2 / FMA / F16C path

__attribute__((target("avx2,fma,f16c"))) inline float hsum(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
    return _mm_cvtss_f32(s);
}

/// Sums of 8 accumulators: out[t] = Σ lanes of a[t].
__attribute__((target("avx2,fma,f16c"))) inline __m256 hsum8(const __m256* a) {
    const __m256 t0 = _mm256_hadd_ps(_mm256_hadd_ps(a[0], a[1]), _mm256_hadd_ps(a[2], a[3]));
    const __m256 t1 = _mm256_hadd_ps(_mm256_hadd_ps(a[4], a[5]), _mm256_hadd_ps(a[6], a[7]));
    return _mm256_add_ps(_mm256_permute2f128_ps(t0, t1, 0x20),
                         _mm256_permute2f128_ps(t0, t1, 0x31));
}

/// 8 fp16 values at h (all 8 readable) as floats.
__attribute__((target("avx2,fma,f16c"))) inline __m256 load_half8(const std::uint16_t* h) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h)));
}

/// 8 int8 values at v (all 8 readable) as floats.
__attribute__((target("avx2,fma,f16c"))) inline __m256 load_int8x8(const std::int8_t* v) {
    return _mm256_cvtepi32_ps(
        _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(v))));
}

__attribute__((target("avx2,fma,f16c"))) inline __m256 load8(const std::int8_t* v) {
    return load_int8x8(v);
}
__attribute__((target("avx2,fma,f16c"))) inline __m256 load8(const std::uint16_t* h) {
    return load_half8(h);
}

/// a[t] += q_t · r0, a[4 + t] += q_t · r1 for the 4 query rows q + t·stride (8 lanes).
__attribute__((target("avx2,fma,f16c"))) inline void step_4x2(const float* q, std::size_t stride,
                                                              __m256 r0, __m256 r1, __m256* a) {
    for (std::size_t t = 0; t < 4; ++t) {
        const __m256 qv = _mm256_loadu_ps(q + t * stride);
        a[t] = _mm256_fmadd_ps(qv, r0, a[t]);
        a[4 + t] = _mm256_fmadd_ps(qv, r1, a[4 + t]);
    }
}

/// cos[i][j] = q_i · row_j for the lq4 (padded) query rows and the lp passage rows, fp16 rows
/// (T = uint16_t) or int8 rows times their scale (T = int8_t): 2 passage rows x 4 query rows at
/// a time (8 independent accumulators; each row value is converted once and used by 4 queries).
template <class T>
__attribute__((target("avx2,fma,f16c"))) void cosines_avx2(const float* qp, std::size_t lq4,
                                                            std::size_t dim, const T* rows,
                                                            const float* scales, std::size_t lp,
                                                            std::size_t lpad, float* cos) {
    const std::size_t full = dim / 8 * 8;  // dims read straight from the rows
    const std::size_t dpad = round8(dim);
    alignas(32) T tail0[8], tail1[8];
    alignas(32) float sums[8];
    for (std::size_t j = 0; j < lp; j += 2) {
        const T* h0 = rows + j * dim;
        const std::size_t j1 = j + 1 < lp ? j + 1 : j;  // odd length: row j twice
        const T* h1 = rows + j1 * dim;
        std::fill_n(tail0, 8, T{0});
        std::fill_n(tail1, 8, T{0});
        std::copy(h0 + full, h0 + dim, tail0);
        std::copy(h1 + full, h1 + dim, tail1);
        const float s0 = scales ? scales[j] : 1.0f, s1 = scales ? scales[j1] : 1.0f;
        for (std::size_t i = 0; i < lq4; i += 4) {
            const float* q0 = qp + i * dpad;
            __m256 a[8];
            for (auto& x : a) x = _mm256_setzero_ps();
            for (std::size_t d = 0; d < full; d += 8) {
                step_4x2(q0 + d, dpad, load8(h0 + d), load8(h1 + d), a);
            }
            if (full < dim) step_4x2(q0 + full, dpad, load8(tail0), load8(tail1), a);
            _mm256_store_ps(sums, hsum8(a));
            for (std::size_t t = 0; t < 4; ++t) {
                cos[(i + t) * lpad + j] = sums[t] * s0;
                if (j + 1 < lp) cos[(i + t) * lpad + j + 1] = sums[4 + t] * s1;
            }
        }
    }
}

__attribute__((target("avx2,fma,f16c"))) void score_avx2(const float* q, std::size_t lq,
                                                          std::size_t dim,
                                                          std::span<const TkCachedPassage> passages,
                                                          const TkPooling& p, float* out,
                                                          std::int64_t begin, std::int64_t end) {
    const std::size_t nk = p.mu.size();
    const std::size_t dpad = round8(dim);
    const std::size_t lq4 = (lq + 3) / 4 * 4;  // query rows padded with zero rows
    std::vector<float> qp(lq4 * dpad, 0.0f), coef(nk), pkq(lq * nk);
    for (std::size_t i = 0; i < lq; ++i) std::copy_n(q + i * dim, dim, qp.data() + i * dpad);
    for (std::size_t k = 0; k < nk; ++k) coef[k] = -1.0f / (2.0f * p.sigma[k] * p.sigma[k]);
    std::vector<float> cos;
    for (auto b = begin; b < end; ++b) {
        const auto& ps = passages[static_cast<std::size_t>(b)];
        const std::size_t lp = ps.length, lpad = round8(lp + 1);
        cos.resize(lq4 * lpad);
        if (ps.rows_int8) {
            cosines_avx2<std::int8_t>(qp.data(), lq4, dim, ps.rows_int8, ps.scales, lp, lpad,
                                      cos.data());
        } else {
            cosines_avx2<std::uint16_t>(qp.data(), lq4, dim, ps.rows, nullptr, lp, lpad,
                                        cos.data());
        }
        for (std::size_t i = 0; i < lq; ++i) {
            std::fill(cos.begin() + static_cast<std::ptrdiff_t>(i * lpad + lp),
                      cos.begin() + static_cast<std::ptrdiff_t>((i + 1) * lpad), kFarAway);
        }
        for (std::size_t i = 0; i < lq; ++i) {
            const float* ci = cos.data() + i * lpad;
            for (std::size_t k = 0; k < nk; ++k) {
                const __m256 mu = _mm256_set1_ps(p.mu[k]), c = _mm256_set1_ps(coef[k]);
                __m256 acc = _mm256_setzero_ps();
                for (std::size_t j = 0; j < lpad; j += 8) {
                    __m256 x = _mm256_sub_ps(_mm256_loadu_ps(ci + j), mu);
                    acc = _mm256_add_ps(acc, _ZGVdN8v_expf(_mm256_mul_ps(_mm256_mul_ps(x, x), c)));
                }
                pkq[i * nk + k] = hsum(acc);
            }
        }
        out[b] = pool(pkq.data(), lq, lp, p);
    }
}

}  // namespace

bool tk_cache_kernels_vectorised() noexcept { return g_vectorised.load(); }

void tk_cache_kernels_set_vectorised(bool on) noexcept { g_vectorised.store(on && kCpuVectorised); }

void fp32_to_fp16(const float* in, std::uint16_t* out, std::size_t n) {
    if (kCpuVectorised) {
        to_fp16_f16c(in, out, n);
        return;
    }
    for (std::size_t i = 0; i < n; ++i) out[i] = c10::detail::fp16_ieee_from_fp32_value(in[i]);
}

void fp16_to_fp32(const std::uint16_t* in, float* out, std::size_t n) {
    if (kCpuVectorised) {
        to_fp32_f16c(in, out, n);
        return;
    }
    for (std::size_t i = 0; i < n; ++i) out[i] = c10::detail::fp16_ieee_to_fp32_value(in[i]);
}

void tk_score_cached(std::span<const float> query, std::size_t lq, std::size_t dim,
                     std::span<const TkCachedPassage> passages, const TkPooling& pooling,
                     float* out, int threads) {
    const auto n = static_cast<std::int64_t>(passages.size());
    if (n == 0) return;
    const float* q = query.data();
    const bool vectorised = g_vectorised.load();
    auto run = [&](std::int64_t begin, std::int64_t end) {
        if (vectorised) {
            score_avx2(q, lq, dim, passages, pooling, out, begin, end);
        } else {
            score_scalar(q, lq, dim, passages, pooling, out, begin, end);
        }
    };
    // `threads` (0 = Torch's intra-op count), at most one per 32 passages (a thread's start
    // costs about what 5 passages do); contiguous ranges of about equal rows.
    const int want = threads > 0 ? threads : at::get_num_threads();
    const std::int64_t used = std::min<std::int64_t>(std::max(1, want), (n + 31) / 32);
    if (used <= 1) {
        run(0, n);
        return;
    }
    std::uint64_t rows = 0;
    for (const auto& p : passages) rows += p.length + 1;
    std::vector<std::int64_t> cut{0};
    std::uint64_t acc = 0;
    for (std::int64_t i = 0; i < n && static_cast<std::int64_t>(cut.size()) < used; ++i) {
        acc += passages[static_cast<std::size_t>(i)].length + 1;
        if (acc * static_cast<std::uint64_t>(used) >= rows * cut.size()) cut.push_back(i + 1);
    }
    cut.push_back(n);
    std::vector<std::exception_ptr> errors(cut.size() - 1);
    std::vector<std::thread> workers;
    for (std::size_t w = 1; w + 1 < cut.size(); ++w) {
        workers.emplace_back([&, w] {
            try {
                run(cut[w], cut[w + 1]);
            } catch (...) {
                errors[w] = std::current_exception();
            }
        });
    }
    try {
        run(cut[0], cut[1]);
    } catch (...) {
        errors[0] = std::current_exception();
    }
    for (auto& t : workers) t.join();
    for (const auto& e : errors) {
        if (e) std::rethrow_exception(e);
    }
}

}  // namespace plumb::rerank::detail
