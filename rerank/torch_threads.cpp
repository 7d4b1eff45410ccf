#include "rerank/torch_threads.hpp"

#include <ATen/Parallel.h>
#include <dlfcn.h>

#include <vector>

namespace plumb::rerank {

namespace {
/// OpenBLAS's thread-count functions when the process's BLAS is OpenBLAS (Debian's libblas.so
/// alternative), looked up at run time so that another BLAS works too (then: null).
struct OpenBlasThreads {
    void (*set)(int) = nullptr;
    int (*get)() = nullptr;
};
const OpenBlasThreads& openblas_threads() {
    static const OpenBlasThreads fns = [] {
        OpenBlasThreads f;
        f.set = reinterpret_cast<void (*)(int)>(::dlsym(RTLD_DEFAULT, "openblas_set_num_threads"));
        f.get = reinterpret_cast<int (*)()>(::dlsym(RTLD_DEFAULT, "openblas_get_num_threads"));
        if (!f.set || !f.get) f = {};
        return f;
    }();
    return fns;
}
/// OpenBLAS counts to restore, one per live scope of this thread that asked for threads
/// (scopes nest per thread: RAII). Kept here so that the header's layout stays as it is.
thread_local std::vector<int> t_blas_previous;
}  // namespace

TorchThreadsScope::TorchThreadsScope(int threads) {
    if (threads <= 0) return;
    m_previous = at::get_num_threads();
    if (m_previous != threads) {
        at::set_num_threads(threads);
    } else {
        m_previous = -1;  // asked for threads, Torch's count unchanged (nothing to restore)
    }
    // ATen's GEMMs run on OpenBLAS's own pthreads, which at::set_num_threads does not limit:
    // without this, a 1-thread scope (the TK stage's query side) still split its small GEMMs
    // over OpenBLAS's threads, whose spin-and-yield hand-offs made the TK pipeline's tail
    // (bench/README.md, "Pipeline latency through Pipeline::search").
    const auto& blas = openblas_threads();
    int blas_previous = 0;
    if (blas.set) {
        blas_previous = blas.get();
        if (blas_previous != threads) {
            blas.set(threads);
        } else {
            blas_previous = 0;
        }
    }
    t_blas_previous.push_back(blas_previous);
}

TorchThreadsScope::~TorchThreadsScope() {
    if (m_previous == 0) return;  // threads <= 0: nothing was changed
    if (m_previous > 0) at::set_num_threads(m_previous);
    if (!t_blas_previous.empty()) {
        const int blas_previous = t_blas_previous.back();
        t_blas_previous.pop_back();
        if (blas_previous > 0) openblas_threads().set(blas_previous);
    }
}

int torch_threads() { return at::get_num_threads(); }

}  // namespace plumb::rerank
