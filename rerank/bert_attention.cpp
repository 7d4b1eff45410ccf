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
    sgemm(false, trans_b, m, n, k, alpha, a, lda, b, ldb, 0.0f, c, ldc);
}

/// Per sequence, the number n of attended keys (later keys are padding, skipped) and whether
/// the kept keys carry a non-zero additive mask. mask: float [B, L] contiguous.
void attended_keys(const float* pm, std::int64_t b, std::int64_t l,
                   std::vector<std::int64_t>& keys, std::vector<char>& add_mask) {
    const float masked = std::numeric_limits<float>::lowest() / 2;
    keys.assign(static_cast<std::size_t>(b), 0);
    add_mask.assign(static_cast<std::size_t>(b), 0);
    for (std::int64_t s = 0; s < b; ++s) {
        const float* row = pm + s * l;
        std::int64_t n = l;
        while (n > 0 && row[n - 1] < masked) --n;
        if (n == 0) n = l;  // everything masked: keep the unfused behaviour (uniform weights)
        keys[static_cast<std::size_t>(s)] = n;
        add_mask[static_cast<std::size_t>(s)] =
            std::any_of(row, row + n, [](float v) { return v != 0.0f; }) ? 1 : 0;
    }
}

torch::Tensor flat_mask(const torch::Tensor& mask_add, std::int64_t b, std::int64_t l) {
    return mask_add.to(torch::kFloat32).expand({b, 1, 1, l}).reshape({b, l}).contiguous();
}

}  // namespace

void sgemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k,
           float alpha, const float* a, std::int64_t lda, const float* b, std::int64_t ldb,
           float beta, float* c, std::int64_t ldc) {
    if (m == 0 || n == 0) return;
    if (auto f = dnnl_sgemm()) {
        f(trans_a ? 'T' : 'N', trans_b ? 'T' : 'N', m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
        return;
    }
    auto at = trans_a ? view_of(a, k, m, lda).t() : view_of(a, m, k, lda);
    auto bt = trans_b ? view_of(b, n, k, ldb).t() : view_of(b, k, n, ldb);
    auto cv = view_of(c, m, n, ldc);
    if (beta == 0.0f) {
        cv.copy_(torch::mm(at, bt).mul_(alpha));
    } else {
        cv.mul_(beta).add_(torch::mm(at, bt), alpha);
    }
}

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
                                   std::int64_t heads, std::int64_t head_dim,
                                   torch::Tensor* probs_out, const torch::Tensor& dropout_in) {
    TORCH_CHECK(qkv_in.dim() == 3 && qkv_in.scalar_type() == torch::kFloat32,
                "fused_self_attention: qkv must be float32 [B, L, 3H]");
    const auto b = qkv_in.size(0), l = qkv_in.size(1), h = heads * head_dim;
    TORCH_CHECK(qkv_in.size(2) == 3 * h, "fused_self_attention: qkv width is not 3 * H");
    const auto qkv = qkv_in.contiguous();
    const auto mask = flat_mask(mask_add, b, l);
    auto context = torch::empty({b, l, h}, torch::kFloat32);
    torch::Tensor dropout;
    const float* pdrop = nullptr;
    if (dropout_in.defined() && dropout_in.numel() > 0) {
        TORCH_CHECK(dropout_in.numel() == b * heads * l * l,
                    "fused_self_attention: dropout must be [B * heads, L, L]");
        dropout = dropout_in.to(torch::kFloat32).contiguous();
        pdrop = dropout.data_ptr<float>();
    }

    // Per sequence: keys [0, n) are attended; later keys are masked out (if any are not, n = l).
    const float* pm = mask.data_ptr<float>();
    std::vector<std::int64_t> keys;
    std::vector<char> add_mask;
    attended_keys(pm, b, l, keys, add_mask);
    float* pp = nullptr;
    if (probs_out) {
        *probs_out = torch::zeros({b * heads, l, l}, torch::kFloat32);
        pp = probs_out->data_ptr<float>();
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
            if (pp) {  // [l, n] -> rows of the saved [l, l] block (columns >= n stay 0)
                const float* src = pv.data_ptr<float>();
                float* dst = pp + i * l * l;
                for (std::int64_t r = 0; r < l; ++r) std::copy_n(src + r * n, n, dst + r * l);
            }
            if (pdrop) {  // attention dropout: P ⊙ D, in place (P itself is saved above)
                float* w = pv.data_ptr<float>();
                const float* d = pdrop + i * l * l;
                for (std::int64_t r = 0; r < l; ++r) {
                    for (std::int64_t j = 0; j < n; ++j) w[r * n + j] *= d[r * l + j];
                }
            }
            gemm(false, l, head_dim, n, 1.0f, pv.data_ptr<float>(), n, v, 3 * h,
                 pc + s * l * h + head * head_dim, h);
        }
    });
    return context;
}

torch::Tensor fused_self_attention_backward(const torch::Tensor& grad_context,
                                            const torch::Tensor& qkv_in,
                                            const torch::Tensor& mask_add,
                                            const torch::Tensor& probs_in, std::int64_t heads,
                                            std::int64_t head_dim,
                                            const torch::Tensor& dropout_in) {
    const auto b = qkv_in.size(0), l = qkv_in.size(1), h = heads * head_dim;
    TORCH_CHECK(grad_context.sizes() == torch::IntArrayRef({b, l, h}) &&
                    probs_in.sizes() == torch::IntArrayRef({b * heads, l, l}),
                "fused_self_attention_backward: shapes do not match the forward call");
    const auto qkv = qkv_in.contiguous();
    const auto dc = grad_context.to(torch::kFloat32).contiguous();
    const auto probs = probs_in.contiguous();
    torch::Tensor dropout;
    const float* pdrop = nullptr;
    if (dropout_in.defined() && dropout_in.numel() > 0) {
        TORCH_CHECK(dropout_in.numel() == b * heads * l * l,
                    "fused_self_attention_backward: dropout must be [B * heads, L, L]");
        dropout = dropout_in.to(torch::kFloat32).contiguous();
        pdrop = dropout.data_ptr<float>();
    }
    const auto mask = flat_mask(mask_add, b, l);
    std::vector<std::int64_t> keys;
    std::vector<char> add_mask;
    attended_keys(mask.data_ptr<float>(), b, l, keys, add_mask);
    auto dqkv = torch::zeros({b, l, 3 * h}, torch::kFloat32);

    const float* pq = qkv.data_ptr<float>();
    const float* pdc = dc.data_ptr<float>();
    const float* pp = probs.data_ptr<float>();
    float* pd = dqkv.data_ptr<float>();
    const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(head_dim)));
    at::parallel_for(0, b * heads, 1, [&](std::int64_t begin, std::int64_t end) {
        std::vector<float> dp(static_cast<std::size_t>(l * l));
        std::vector<float> pdm(pdrop ? static_cast<std::size_t>(l * l) : 0);  // P ⊙ D [l, n]
        for (std::int64_t i = begin; i < end; ++i) {
            const auto s = i / heads, head = i % heads;
            const auto n = keys[static_cast<std::size_t>(s)];
            const std::int64_t off = s * l * 3 * h + head * head_dim;
            const float* q = pq + off;
            const float* k = q + h;
            const float* v = q + 2 * h;
            float* dq = pd + off;
            float* dk = dq + h;
            float* dv = dq + 2 * h;
            const float* g = pdc + s * l * h + head * head_dim;  // dC [l, hd], ld h
            const float* p = pp + i * l * l;                       // P [l, n], ld l
            if (pdrop) {
                // Dropout D: context = (P ⊙ D) V, so dV = (P ⊙ D)^T dC; dP = (dC V^T) ⊙ D.
                const float* d = pdrop + i * l * l;
                for (std::int64_t r = 0; r < l; ++r) {
                    for (std::int64_t j = 0; j < n; ++j) pdm[r * n + j] = p[r * l + j] * d[r * l + j];
                }
                sgemm(true, false, n, head_dim, l, 1.0f, pdm.data(), n, g, h, 0.0f, dv, 3 * h);
                sgemm(false, true, l, n, head_dim, 1.0f, g, h, v, 3 * h, 0.0f, dp.data(), n);
                for (std::int64_t r = 0; r < l; ++r) {
                    for (std::int64_t j = 0; j < n; ++j) dp[r * n + j] *= d[r * l + j];
                }
            } else {
                // dV = P^T dC; dP = dC V^T.
                sgemm(true, false, n, head_dim, l, 1.0f, p, l, g, h, 0.0f, dv, 3 * h);
                sgemm(false, true, l, n, head_dim, 1.0f, g, h, v, 3 * h, 0.0f, dp.data(), n);
            }
            // Softmax: dS = P ⊙ (dP - Σ_j dP ⊙ P), in place in dp.
            for (std::int64_t r = 0; r < l; ++r) {
                const float* pr = p + r * l;
                float* dr = dp.data() + r * n;
                float dot = 0.0f;
                for (std::int64_t j = 0; j < n; ++j) dot += dr[j] * pr[j];
                for (std::int64_t j = 0; j < n; ++j) dr[j] = pr[j] * (dr[j] - dot);
            }
            // Scores = scale Q K^T + mask: dQ = scale dS K, dK = scale dS^T Q.
            sgemm(false, false, l, head_dim, n, scale, dp.data(), n, k, 3 * h, 0.0f, dq, 3 * h);
            sgemm(true, false, n, head_dim, l, scale, dp.data(), n, q, 3 * h, 0.0f, dk, 3 * h);
        }
    });
    return dqkv;
}

namespace {

class FusedAttentionFunction : public torch::autograd::Function<FusedAttentionFunction> {
public:
    static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& qkv,
                                 const torch::Tensor& mask_add, std::int64_t heads,
                                 std::int64_t head_dim, const torch::Tensor& dropout) {
        torch::Tensor probs;
        auto qc = qkv.contiguous();
        auto context = fused_self_attention(qc, mask_add, heads, head_dim, &probs, dropout);
        ctx->save_for_backward({qc, mask_add, probs, dropout});
        ctx->saved_data["heads"] = heads;
        ctx->saved_data["head_dim"] = head_dim;
        return context;
    }
    static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::tensor_list grads) {
        const auto saved = ctx->get_saved_variables();
        auto dqkv = fused_self_attention_backward(grads[0], saved[0], saved[1], saved[2],
                                                  ctx->saved_data["heads"].toInt(),
                                                  ctx->saved_data["head_dim"].toInt(), saved[3]);
        return {dqkv, torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor()};
    }
};

class DenseLinearFunction : public torch::autograd::Function<DenseLinearFunction> {
public:
    static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x,
                                 const torch::Tensor& weight, const torch::Tensor& bias) {
        auto xc = x.contiguous();
        auto wc = weight.contiguous();
        ctx->save_for_backward({xc, wc});
        ctx->saved_data["bias"] = bias.defined();
        return dense_linear(xc, wc, bias);
    }
    static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::tensor_list grads) {
        const auto saved = ctx->get_saved_variables();
        const auto& x = saved[0];
        const auto& w = saved[1];
        const auto n = w.size(0), k = w.size(1);
        const auto m = k > 0 ? x.numel() / k : 0;
        auto g = grads[0].to(torch::kFloat32).contiguous();
        const float* pg = g.data_ptr<float>();
        // dX[m, k] = G[m, n] W[n, k]; dW[n, k] = G^T X; each only when needed (a frozen
        // input or weight gets none).
        torch::Tensor dx, dw, db;
        if (ctx->needs_input_grad(0)) {
            dx = torch::zeros_like(x);
            sgemm(false, false, m, k, n, 1.0f, pg, n, w.data_ptr<float>(), k, 0.0f,
                  dx.data_ptr<float>(), k);
        }
        if (ctx->needs_input_grad(1)) {
            dw = torch::zeros_like(w);
            sgemm(true, false, n, k, m, 1.0f, pg, n, x.data_ptr<float>(), k, 0.0f,
                  dw.data_ptr<float>(), k);
        }
        if (ctx->saved_data["bias"].toBool() && ctx->needs_input_grad(2)) {
            db = g.view({m, n}).sum(0);
        }
        return {dx, dw, db};
    }
};

}  // namespace

torch::Tensor fused_self_attention_autograd(const torch::Tensor& qkv,
                                            const torch::Tensor& mask_add, std::int64_t heads,
                                            std::int64_t head_dim, const torch::Tensor& dropout) {
    if (!torch::GradMode::is_enabled() || !qkv.requires_grad()) {
        return fused_self_attention(qkv, mask_add, heads, head_dim, nullptr, dropout);
    }
    // autograd::Function::apply does not take undefined tensors: no dropout = an empty one.
    return FusedAttentionFunction::apply(qkv, mask_add, heads, head_dim,
                                         dropout.defined() ? dropout : torch::empty({0}));
}

torch::Tensor dense_linear_autograd(const torch::Tensor& x, const torch::Tensor& weight,
                                    const torch::Tensor& bias) {
    const bool grad = torch::GradMode::is_enabled() &&
                      (x.requires_grad() || weight.requires_grad() ||
                       (bias.defined() && bias.requires_grad()));
    if (!grad) return dense_linear(x, weight, bias);
    if (x.scalar_type() != torch::kFloat32 || weight.scalar_type() != torch::kFloat32 ||
        weight.dim() != 2 || x.size(-1) != weight.size(1) || !dnnl_sgemm()) {
        return torch::linear(x, weight, bias);
    }
    return DenseLinearFunction::apply(x, weight, bias);
}

}  // namespace plumb::rerank::detail
