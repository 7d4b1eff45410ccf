// Compiled with -fopenmp (see rerank/CMakeLists.txt): at::parallel_for's OpenMP region is
// expanded in this translation unit, and oneDNN's sgemm runs single-threaded inside it.
#include "rerank/detail/bert_attention.hpp"

#include <ATen/Parallel.h>
#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace plumb::rerank::detail {

namespace {

// dnnl_sgemm from oneDNN's stable C API (dnnl.h): row-major C = alpha op(A) op(B) + beta C.
// LibTorch links oneDNN (libdnnl.so.2); the headers are not installed, so it is looked up in
// the loaded process. Inside an OpenMP parallel region it runs on the calling thread only.
using DnnlSgemm = int (*)(char transa, char transb, std::int64_t m, std::int64_t n,
                          std::int64_t k, float alpha, const float* a, std::int64_t lda,
                          const float* b, std::int64_t ldb, float beta, float* c,
                          std::int64_t ldc);

DnnlSgemm find_dnnl_sgemm() {
    if (auto* f = dlsym(RTLD_DEFAULT, "dnnl_sgemm")) return reinterpret_cast<DnnlSgemm>(f);
    if (void* lib = dlopen("libdnnl.so.2", RTLD_NOW | RTLD_NOLOAD)) {
        if (auto* f = dlsym(lib, "dnnl_sgemm")) return reinterpret_cast<DnnlSgemm>(f);
    }
    return nullptr;
}

DnnlSgemm dnnl_sgemm() {
    static const DnnlSgemm f = find_dnnl_sgemm();
    return f;
}

torch::Tensor view_of(const float* p, std::int64_t rows, std::int64_t cols, std::int64_t ld) {
    return torch::from_blob(const_cast<float*>(p), {rows, cols}, {ld, 1}, torch::kFloat32);
}

/// Row-major C[m, n] = alpha * A[m, k] op(B) with op(B) = B^T ([n, k]) or B ([k, n]).
void gemm(bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
          const float* a, std::int64_t lda, const float* b, std::int64_t ldb, float* c,
          std::int64_t ldc) {
    if (auto f = dnnl_sgemm()) {
        f('N', trans_b ? 'T' : 'N', m, n, k, alpha, a, lda, b, ldb, 0.0f, c, ldc);
        return;
    }
    auto bt = trans_b ? view_of(b, n, k, ldb).t() : view_of(b, k, n, ldb);
    auto r = torch::mm(view_of(a, m, k, lda), bt);
    if (alpha != 1.0f) r.mul_(alpha);
    view_of(c, m, n, ldc).copy_(r);
}

}  // namespace

torch::Tensor dense_linear(const torch::Tensor& x, const torch::Tensor& weight,
                           const torch::Tensor& bias) {
    const auto f = dnnl_sgemm();
    if (!f || x.scalar_type() != torch::kFloat32 || weight.scalar_type() != torch::kFloat32 ||
        weight.dim() != 2 || x.size(-1) != weight.size(1)) {
        return torch::linear(x, weight, bias);
    }
    const auto xc = x.contiguous();
    const auto wc = weight.contiguous();
    const auto n = wc.size(0), k = wc.size(1);
    const auto m = k > 0 ? xc.numel() / k : 0;
    auto sizes = xc.sizes().vec();
    sizes.back() = n;
    auto y = torch::empty(sizes, torch::kFloat32);
    if (m == 0 || n == 0) return y.zero_();
    float beta = 0.0f;
    if (bias.defined()) {  // C = bias, then C = A W^T + C
        y.view({m, n}).copy_(bias.to(torch::kFloat32).view({1, n}).expand({m, n}));
        beta = 1.0f;
    }
    f('N', 'T', m, n, k, 1.0f, xc.data_ptr<float>(), k, wc.data_ptr<float>(), k, beta,
      y.data_ptr<float>(), n);
    return y;
}

torch::Tensor fused_self_attention(const torch::Tensor& qkv_in, const torch::Tensor& mask_add,
                                   std::int64_t heads, std::int64_t head_dim) {
    TORCH_CHECK(qkv_in.dim() == 3 && qkv_in.scalar_type() == torch::kFloat32,
                "fused_self_attention: qkv must be float32 [B, L, 3H]");
    const auto b = qkv_in.size(0), l = qkv_in.size(1), h = heads * head_dim;
    TORCH_CHECK(qkv_in.size(2) == 3 * h, "fused_self_attention: qkv width is not 3 * H");
    const auto qkv = qkv_in.contiguous();
    const auto mask = mask_add.to(torch::kFloat32).expand({b, 1, 1, l}).reshape({b, l}).contiguous();
    auto context = torch::empty({b, l, h}, torch::kFloat32);

    // Per sequence: keys [0, n) are attended; later keys are masked out (if any are not, n = l).
    const float* pm = mask.data_ptr<float>();
    const float masked = std::numeric_limits<float>::lowest() / 2;
    std::vector<std::int64_t> keys(static_cast<std::size_t>(b));
    std::vector<char> add_mask(static_cast<std::size_t>(b));
    for (std::int64_t s = 0; s < b; ++s) {
        const float* row = pm + s * l;
        std::int64_t n = l;
        while (n > 0 && row[n - 1] < masked) --n;
        if (n == 0) n = l;  // everything masked: keep the unfused behaviour (uniform weights)
        keys[static_cast<std::size_t>(s)] = n;
        add_mask[static_cast<std::size_t>(s)] =
            std::any_of(row, row + n, [](float v) { return v != 0.0f; }) ? 1 : 0;
    }

    const float* pq = qkv.data_ptr<float>();
    float* pc = context.data_ptr<float>();
    const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(head_dim)));
    at::parallel_for(0, b * heads, 1, [&](std::int64_t begin, std::int64_t end) {
        auto scores = torch::empty({l * l}, torch::kFloat32);
        auto probs = torch::empty({l * l}, torch::kFloat32);
        for (std::int64_t i = begin; i < end; ++i) {
            const auto s = i / heads, head = i % heads;
            const auto n = keys[static_cast<std::size_t>(s)];
            const float* q = pq + s * l * 3 * h + head * head_dim;
            const float* k = q + h;
            const float* v = q + 2 * h;
            auto sv = scores.narrow(0, 0, l * n).view({l, n});
            auto pv = probs.narrow(0, 0, l * n).view({l, n});
            gemm(true, l, n, head_dim, scale, q, 3 * h, k, 3 * h, sv.data_ptr<float>(), n);
            if (add_mask[static_cast<std::size_t>(s)]) {
                sv.add_(view_of(pm + s * l, 1, n, n));
            }
            at::_softmax_out(pv, sv, 1, false);
            gemm(false, l, head_dim, n, 1.0f, pv.data_ptr<float>(), n, v, 3 * h,
                 pc + s * l * h + head * head_dim, h);
        }
    });
    return context;
}

}  // namespace plumb::rerank::detail
