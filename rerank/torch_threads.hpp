#pragma once
/// \file torch_threads.hpp
/// Torch's intra-op thread count, set for a scope when a caller asked for a thread count (the
/// `threads` option of the BERT, TK and TorchScript stages and of training). Torch-free header.

namespace plumb::rerank {

/// Sets Torch's intra-op thread count for the lifetime of the scope and restores the previous
/// count afterwards; `threads` <= 0 leaves everything unchanged. Torch's setting is
/// process-wide (and OpenMP's per calling thread): use it only when the user asked for a thread
/// count, and not from several threads at once with different values.
class TorchThreadsScope {
public:
    explicit TorchThreadsScope(int threads);
    ~TorchThreadsScope();
    TorchThreadsScope(const TorchThreadsScope&) = delete;
    TorchThreadsScope& operator=(const TorchThreadsScope&) = delete;

private:
    int m_previous = 0;
};

/// Torch's current intra-op thread count.
int torch_threads();

}  // namespace plumb::rerank
