#pragma once
// Shared body of the corpus-format targets: reads every document of the input with
// index::CorpusReader in `format`; the selector byte picks skip_bad, tabs_in_text and the
// bad-share limit.
#include "index/corpus.hpp"
#include "tests/fuzz/fuzz_support.hpp"

namespace plumb::fuzz {

inline void read_corpus(std::string_view rest, std::uint8_t sel, index::CorpusFormat format,
                        const std::string& file_name) {
    const auto path = write_input(rest, file_name);
    expect_clean([&] {
        index::CorpusReaderOptions o;
        o.format = format;
        o.skip_bad = sel & 1;
        o.tabs_in_text = sel & 2;
        o.max_bad_share = (sel & 4) ? 1.0 : 0.1;
        index::CorpusReader reader(path, o);
        index::Document doc;
        while (reader.next(doc)) {
            if (doc.id.empty()) std::abort();
            (void)reader.line_number();
        }
        (void)reader.skipped();
    });
    // Format detection reads the first line.
    (void)index::detect_corpus_format(path);
}

}  // namespace plumb::fuzz
