// safetensors files (8-byte header length, JSON header, data): rerank::SafetensorsFile, every
// tensor converted to float32 (bounded), and load_weights_file's format sniffing.
#include "rerank/checkpoint_format.hpp"
#include "rerank/safetensors.hpp"
#include "tests/fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace plumb;
    const auto path = fuzz::write_input(fuzz::as_text(data, size), "model.safetensors");
    fuzz::expect_clean([&] {
        rerank::SafetensorsFile f(path);
        for (const auto& t : f.tensors()) {
            if (t.numel() <= (1 << 16)) (void)rerank::to_float32(t);
        }
        (void)f.metadata();
    });
    fuzz::expect_clean([&] { (void)rerank::load_weights_file(path); });
    return 0;
}
