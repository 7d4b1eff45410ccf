// Survivorship inputs: MS MARCO QnA rankings shown to annotators as JSONL (one object per
// query) or as the column-keyed .json (streaming SAX), converted with
// debias::convert_qna_to_shown_ranks; the selector picks the extension.
#include "debias/survivorship.hpp"
#include "tests/fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace plumb;
    auto rest = fuzz::as_text(data, size);
    const auto sel = fuzz::take_selector(rest);
    const auto path = fuzz::write_input(rest, (sel & 1) ? "qna.json" : "qna.jsonl");
    fuzz::expect_clean([&] {
        (void)debias::convert_qna_to_shown_ranks(path, fuzz::scratch_dir() / "shown.tsv",
                                                 fuzz::scratch_dir() / "types.tsv");
    });
    return 0;
}
