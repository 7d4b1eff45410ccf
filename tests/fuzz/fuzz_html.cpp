// HTML text extraction: index::html_to_text directly, and an HTML document file through
// index::CorpusReader.
#include "index/html_text.hpp"
#include "tests/fuzz/fuzz_corpus.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    auto rest = plumb::fuzz::as_text(data, size);
    const auto sel = plumb::fuzz::take_selector(rest);
    plumb::fuzz::expect_clean([&] { (void)plumb::index::html_to_text(rest); });
    if (sel & 8) plumb::fuzz::read_corpus(rest, sel, plumb::index::CorpusFormat::Html, "doc.html");
    return 0;
}
