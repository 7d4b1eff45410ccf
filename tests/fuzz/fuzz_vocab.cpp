// WordPiece vocab.txt (rerank::Vocab::load), a tokenizer over it on fixed text, and TK's word
// lists (rerank::load_word_list).
#include "rerank/embeddings_text.hpp"
#include "rerank/wordpiece.hpp"
#include "tests/fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace plumb;
    const auto path = fuzz::write_input(fuzz::as_text(data, size), "vocab.txt");
    fuzz::expect_clean([&] {
        auto vocab = std::make_shared<const rerank::Vocab>(rerank::Vocab::load(path));
        for (std::size_t i = 0; i < vocab->size() && i < 64; ++i) {
            if (vocab->id(vocab->token(static_cast<std::int64_t>(i))) < 0) std::abort();
        }
        rerank::WordPieceTokenizer tok(vocab);
        (void)tok.encode_pair("Héllo, wörld! unaffable 東京", "running ##s [SEP] x", 32);
    });
    fuzz::expect_clean([&] { (void)rerank::load_word_list(path); });
    return 0;
}
