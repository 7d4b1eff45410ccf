// Corpus JSONL (BEIR `_id`/`title`/`text`, Pyserini `id`/`contents`) through index::CorpusReader.
#include "tests/fuzz/fuzz_corpus.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    auto rest = plumb::fuzz::as_text(data, size);
    const auto sel = plumb::fuzz::take_selector(rest);
    plumb::fuzz::read_corpus(rest, sel, plumb::index::CorpusFormat::Jsonl, "corpus.jsonl");
    return 0;
}
