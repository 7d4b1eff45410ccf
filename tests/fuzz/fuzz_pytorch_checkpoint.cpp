// PyTorch zip checkpoints (pytorch_model.bin): rerank::read_pytorch_state_dict (LibTorch's zip
// reader, plumb's restricted unpickler).
#include "rerank/pytorch_checkpoint.hpp"
#include "tests/fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace plumb;
    const auto path = fuzz::write_input(fuzz::as_text(data, size), "pytorch_model.bin");
    fuzz::expect_clean([&] {
        for (const auto& [name, t] : rerank::read_pytorch_state_dict(path)) {
            const auto v = t.view(name);
            if (v.numel() <= (1 << 16)) (void)rerank::to_float32(v);
        }
    });
    return 0;
}
