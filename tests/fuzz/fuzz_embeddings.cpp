// Word embeddings as text: GloVe, word2vec text and binary, fastText .vec
// (rerank::load_text_embeddings); the selector picks the format and the options.
#include "rerank/embeddings_text.hpp"
#include "tests/fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace plumb;
    auto rest = fuzz::as_text(data, size);
    const auto sel = fuzz::take_selector(rest);
    const auto path = fuzz::write_input(rest, "vectors.txt");
    fuzz::expect_clean([&] {
        rerank::EmbeddingsTextOptions o;
        o.format = static_cast<rerank::EmbeddingsFormat>(sel % 5);
        o.lowercase = sel & 8;
        o.oov_init = (sel & 16) ? rerank::OovInit::Mean : rerank::OovInit::Zeros;
        o.max_words = (sel & 32) ? 2 : 0;
        auto e = rerank::load_text_embeddings(path, o);
        if (e.matrix.size() != e.rows() * e.dim) std::abort();
        (void)e.index("the");
    });
    return 0;
}
