#pragma once
/// \file detail/tk_cache_kernels.hpp
/// INTERNAL (Torch-free header): the numeric kernels of TK's passage cache (rerank/tk_cache.hpp)
/// — IEEE half-precision conversion and TK's match + kernel pooling over cached, normalised
/// passage-term vectors. Implemented in tk_cache_kernels.cpp with AVX2/FMA/F16C code paths
/// chosen at run time (glibc's libmvec for the vector exp) and a portable scalar fallback.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "rerank/tk_model.hpp"

namespace plumb::rerank::detail {

/// float -> IEEE binary16 (round to nearest even; overflow to ±inf, NaN kept NaN).
void fp32_to_fp16(const float* in, std::uint16_t* out, std::size_t n);
/// IEEE binary16 -> float (exact).
void fp16_to_fp32(const std::uint16_t* in, float* out, std::size_t n);


/// TK's scoring layer (tk_model.hpp / FORMULAS.md) after the contextualisation:
///   s = Σ_k W_k Σ_i log(max(Σ_j K^k_ij, 1e-10)), K^k_ij = exp(-(M_ij - μ_k)² / (2σ_k²)),
/// or with mean_kernel TK_v1's two branches combined by comb[0], comb[1] with `scaler`.
struct TkPooling {
    std::vector<float> mu, sigma, weights;  ///< K each
    bool mean_kernel = false;
    std::vector<float> mean_weights;  ///< K (mean_kernel)
    float comb[2] = {0.0f, 0.0f};     ///< (mean_kernel)
    float scaler = 0.0f;              ///< (mean_kernel)
};

/// Scores of the normalised query rows `query` (lq × dim floats, q̂_i / (‖q̂_i‖ + 1e-13), only
/// real query terms) against each cached passage; out[p] for passages[p]. Splits the passages
/// over `threads` std::threads (0 = Torch's intra-op thread count; at most one per 32 passages).
void tk_score_cached(std::span<const float> query, std::size_t lq, std::size_t dim,
                     std::span<const TkCachedPassage> passages, const TkPooling& pooling,
                     float* out, int threads = 0);

/// True when the AVX2/FMA/F16C path is used (the CPU has it and it is not switched off).
bool tk_cache_kernels_vectorised() noexcept;
/// Tests: false forces the scalar path, true restores the CPU's best. Not thread-safe with
/// concurrent scoring.
void tk_cache_kernels_set_vectorised(bool on) noexcept;

}  // namespace plumb::rerank::detail
