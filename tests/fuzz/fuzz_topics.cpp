// Topics: TSV `qid<TAB>query`, BEIR queries.jsonl and TREC `<top>` topics through
// index::read_topics; the selector picks the file extension (.tsv / .jsonl / none: TREC or TSV
// by content), skip_bad and the TREC fields.
#include "index/corpus.hpp"
#include "tests/fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace plumb;
    auto rest = fuzz::as_text(data, size);
    const auto sel = fuzz::take_selector(rest);
    static const char* const names[] = {"topics.tsv", "queries.jsonl", "topics", "topics.txt"};
    const auto path = fuzz::write_input(rest, names[sel & 3]);
    fuzz::expect_clean([&] {
        index::TopicReadOptions o;
        o.skip_bad = sel & 4;
        o.fields = 1u + ((sel >> 3) % 7u);
        std::uint64_t skipped = 0;
        for (const auto& q : index::read_topics(path, o, &skipped)) {
            if (q.id.empty()) std::abort();
        }
    });
    return 0;
}
