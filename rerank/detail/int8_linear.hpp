#pragma once
/// \file detail/int8_linear.hpp
/// Dynamically quantised linear layer (internal: includes Torch, not installed).
///
/// y = dequant(quant_u8(x) * quant_s8(W)^T) + b, computed by LibTorch's quantized engine
/// (`quantized::linear_prepack` / LinearPackedParamsBase::apply_dynamic):
///  - weights: int8, per output channel (row), symmetric: scale_r = max_j |W_rj| / 127,
///    zero point 0, quantised once when the layer is built;
///  - activations: uint8, per tensor, asymmetric, min/max taken from each call's input (the
///    whole batch), so no calibration data is needed;
///  - int32 accumulation, fp32 bias and output.
/// Engine: oneDNN ("onednn") when LibTorch has it, else QNNPACK (correct but, on x86, slower
/// than fp32). The 7-bit activation range ("reduce_range") is used on CPUs without VNNI int8
/// dot products, whose 16-bit intermediate sums could otherwise saturate.
/// Safe to call concurrently once built.

#include <torch/torch.h>

#include <memory>
#include <string>

namespace plumb::rerank::detail {

class Int8Linear {
public:
    Int8Linear() = default;
    /// weight: float32 [out, in]; bias: float32 [out] or undefined. Throws InvalidArgument when
    /// LibTorch offers no usable quantized engine.
    Int8Linear(const torch::Tensor& weight, const torch::Tensor& bias);
    /// x: float32 [..., in] -> [..., out].
    torch::Tensor operator()(const torch::Tensor& x) const;
    explicit operator bool() const noexcept { return static_cast<bool>(m_impl); }

private:
    struct Impl;
    std::shared_ptr<const Impl> m_impl;
};

/// The quantized engine Int8Linear uses ("onednn", "qnnpack"), or "" when there is none.
std::string int8_engine_name();

}  // namespace plumb::rerank::detail
