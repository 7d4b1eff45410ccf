// Pipeline configurations in JSON: plumb::pipeline_from_json with stand-in stages.
#include "tests/fuzz/fuzz_pipeline_config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const auto text = plumb::fuzz::as_text(data, size);
    plumb::fuzz::build_pipeline([&](plumb::Registry& r, plumb::StageContext& ctx) {
        return plumb::pipeline_from_json(text, r, ctx, "p.json");
    });
    return 0;
}
