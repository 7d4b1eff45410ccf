// Pipeline configurations in YAML: plumb::load_pipeline of a .yaml file (yaml-cpp, converted to
// JSON) with stand-in stages.
#include "tests/fuzz/fuzz_pipeline_config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const auto path = plumb::fuzz::write_input(plumb::fuzz::as_text(data, size), "p.yaml");
    plumb::fuzz::build_pipeline([&](plumb::Registry& r, plumb::StageContext& ctx) {
        return plumb::load_pipeline(path, r, &ctx);
    });
    return 0;
}
