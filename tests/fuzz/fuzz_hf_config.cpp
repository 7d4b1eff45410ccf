// Hugging Face config.json (rerank::parse_hf_config + validate) and tokenizer_config.json
// (rerank::load_hf_tokenizer_settings) from the same bytes.
#include "rerank/hf_config.hpp"
#include "tests/fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace plumb;
    const auto text = fuzz::as_text(data, size);
    fuzz::expect_clean([&] {
        auto c = rerank::parse_hf_config(std::string(text));
        c.validate();
        (void)rerank::hf_config_to_json(c);
    });
    fuzz::write_input(text, "tokenizer_config.json");
    fuzz::expect_clean([&] { (void)rerank::load_hf_tokenizer_settings(fuzz::scratch_dir()); });
    return 0;
}
