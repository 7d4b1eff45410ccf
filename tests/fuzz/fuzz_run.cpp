// TREC runs (`qid Q0 docid rank score tag`, MS MARCO 3 columns): eval::read_run and the
// streaming eval::RunReader.
#include "eval/run.hpp"
#include "tests/fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace plumb;
    const auto path = fuzz::write_input(fuzz::as_text(data, size), "run.txt");
    fuzz::expect_clean([&] {
        auto run = eval::read_run(path);
        for (const auto& q : run.queries) {
            for (const auto& d : q.docs) (void)q.docid(d);
        }
    });
    fuzz::expect_clean([&] {
        eval::RunReader reader(path);
        eval::RunQuery q;
        while (reader.next(q)) {
            for (const auto& d : q.docs) (void)q.docid(d);
        }
        (void)reader.run_id();
    });
    return 0;
}
