// LIWC dictionaries (.dic): debias::LiwcDictionary::load, then lookups and φ of a passage.
#include "debias/liwc.hpp"
#include "tests/fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace plumb;
    auto rest = fuzz::as_text(data, size);
    const auto sel = fuzz::take_selector(rest);
    const auto path = fuzz::write_input(rest, "dict.dic");
    fuzz::expect_clean([&] {
        auto dic = debias::LiwcDictionary::load(path, sel & 1);
        for (const auto& c : dic.categories()) (void)dic.find_category(c.name);
        (void)dic.lookup("abandoned");
        (void)dic.lookup("");
        const auto cats = debias::resolve_categories(dic, {});
        (void)debias::liwc_phi("He said: kind of happy, abandoned and sad... I'm ok!", dic, cats);
    });
    return 0;
}
