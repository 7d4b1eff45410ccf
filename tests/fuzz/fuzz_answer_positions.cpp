// Answer positions from SQuAD-style JSON (`data[].paragraphs[].{context, qas[]}`):
// debias::audit_answer_positions; the selector sets the bin count and a rotation seed.
#include "debias/answer_positions.hpp"
#include "tests/fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace plumb;
    auto rest = fuzz::as_text(data, size);
    const auto sel = fuzz::take_selector(rest);
    const auto path = fuzz::write_input(rest, "squad.json");
    fuzz::expect_clean([&] {
        debias::AnswerPositionOptions o;
        o.answers = path;
        o.bins = 1 + sel % 16;
        if (sel & 16) o.rotation_seed = sel;
        auto report = debias::audit_answer_positions(o);
        (void)report.before.proportions();
    });
    return 0;
}
