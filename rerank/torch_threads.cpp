#include "rerank/torch_threads.hpp"

#include <ATen/Parallel.h>

namespace plumb::rerank {

TorchThreadsScope::TorchThreadsScope(int threads) {
    if (threads <= 0) return;
    m_previous = at::get_num_threads();
    if (m_previous != threads) {
        at::set_num_threads(threads);
    } else {
        m_previous = 0;
    }
}

TorchThreadsScope::~TorchThreadsScope() {
    if (m_previous > 0) at::set_num_threads(m_previous);
}

int torch_threads() { return at::get_num_threads(); }

}  // namespace plumb::rerank
