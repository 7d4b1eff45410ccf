// Qrels files (TREC `qid iter docid rel`, BEIR TSV): eval::Qrels::load (through LineReader,
// gzip included) and Qrels::parse on the same bytes.
#include "eval/qrels.hpp"
#include "tests/fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace plumb;
    const auto text = fuzz::as_text(data, size);
    const auto path = fuzz::write_input(text, "qrels.txt");
    fuzz::expect_clean([&] {
        auto q = eval::Qrels::load(path);
        for (const auto& qid : q.qids()) {
            const auto* jq = q.find(qid);
            if (!jq) std::abort();
            for (const auto& [docid, grade] : jq->judgements()) {
                const long* g = jq->find(docid);
                if (!g || *g != grade) std::abort();
            }
            (void)jq->num_rel(1);
        }
    });
    fuzz::expect_clean([&] { (void)eval::Qrels::parse(text, "qrels"); });
    return 0;
}
