#include "rerank/detail/int8_linear.hpp"

#include <ATen/native/quantized/PackedParams.h>
#include <ATen/core/dispatch/Dispatcher.h>

#include <mutex>

#include "plugin/error.hpp"

namespace plumb::rerank::detail {

namespace {

bool supports(at::QEngine engine) {
    const auto& engines = at::globalContext().supportedQEngines();
    return std::find(engines.begin(), engines.end(), engine) != engines.end();
}

/// The engine to prepack for; NoQEngine when there is none.
at::QEngine chosen_engine() {
    if (supports(at::QEngine::ONEDNN)) return at::QEngine::ONEDNN;
    if (supports(at::QEngine::QNNPACK)) return at::QEngine::QNNPACK;
    return at::QEngine::NoQEngine;
}

bool cpu_has_int8_dot() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512vnni") || __builtin_cpu_supports("avxvnni");
#else
    return true;  // other architectures: the engine widens before accumulating
#endif
}

}  // namespace

std::string int8_engine_name() {
    switch (chosen_engine()) {
        case at::QEngine::ONEDNN: return "onednn";
        case at::QEngine::QNNPACK: return "qnnpack";
        default: return "";
    }
}

struct Int8Linear::Impl {
    c10::intrusive_ptr<LinearPackedParamsBase> packed;
    bool reduce_range = false;
};

Int8Linear::Int8Linear(const torch::Tensor& weight, const torch::Tensor& bias) {
    const auto engine = chosen_engine();
    if (engine == at::QEngine::NoQEngine) {
        throw InvalidArgument("int8: this LibTorch build has no onednn or qnnpack quantized "
                              "engine");
    }
    torch::NoGradGuard no_grad;
    auto w = weight.detach().to(torch::kFloat32).contiguous();
    auto scales = (w.abs().amax({1}) / 127.0).clamp_min(1e-12).to(torch::kFloat64);
    auto zeros = torch::zeros({w.size(0)}, torch::kInt64);
    auto qw = torch::quantize_per_channel(w, scales, zeros, 0, torch::kQInt8);
    c10::optional<at::Tensor> b;
    if (bias.defined()) b = bias.detach().to(torch::kFloat32).contiguous();

    static const auto prepack =
        c10::Dispatcher::singleton()
            .findSchemaOrThrow("quantized::linear_prepack", "")
            .typed<c10::intrusive_ptr<LinearPackedParamsBase>(at::Tensor,
                                                             c10::optional<at::Tensor>)>();
    // linear_prepack packs for the process-wide engine: select ours for the call, restore.
    static std::mutex engine_mutex;
    auto impl = std::make_shared<Impl>();
    {
        std::lock_guard lock(engine_mutex);
        auto& ctx = at::globalContext();
        const auto before = ctx.qEngine();
        ctx.setQEngine(engine);
        try {
            impl->packed = prepack.call(qw, b);
        } catch (...) {
            ctx.setQEngine(before);
            throw;
        }
        ctx.setQEngine(before);
    }
    impl->reduce_range = engine == at::QEngine::ONEDNN && !cpu_has_int8_dot();
    if (engine == at::QEngine::ONEDNN) {
        // LibTorch 1.13's onednn apply_dynamic keeps one cached matmul per packed weight, built
        // at its first call for that call's row count with the row dimension a runtime value
        // (oneDNN then picks its generic "gemm:jit" kernel), and reuses it only for inputs of
        // exactly that shape; every other shape gets a matmul created for its concrete shape
        // ("brg:avx512_core_vnni" where the CPU has VNNI; creation ~0.1 ms, and oneDNN's own
        // primitive cache keeps it for the next call of that shape). The concrete one is
        // faster (bench/README.md, branch int8c), so the cache is spent here on a 1-row input,
        // a shape the cross-encoders never send (a sequence has >= 3 tokens): every real call
        // takes the concrete-shape path, whatever the first batch's length was.
        torch::NoGradGuard no_grad_prime;
        (void)impl->packed->apply_dynamic(torch::zeros({1, w.size(1)}), impl->reduce_range);
    }
    m_impl = std::move(impl);
}

torch::Tensor Int8Linear::operator()(const torch::Tensor& x) const {
    auto sizes = x.sizes().vec();
    auto x2 = x.reshape({-1, sizes.back()});
    if (!x2.is_contiguous()) x2 = x2.contiguous();
    auto y = m_impl->packed->apply_dynamic(x2, m_impl->reduce_range);
    sizes.back() = y.size(1);
    return y.view(sizes);
}

}  // namespace plumb::rerank::detail
