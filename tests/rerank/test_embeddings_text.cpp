#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "plugin/error.hpp"
#include "rerank/embeddings_text.hpp"
#include "tests/test_tmp.hpp"

namespace fs = std::filesystem;
using namespace plumb::rerank;
using Row = std::vector<float>;

namespace {

fs::path write(const std::string& name, const std::string& text) {
    auto dir = plumb::test::process_dir("plumb_test_emb_");
    fs::create_directories(dir);
    auto p = dir / name;
    std::ofstream(p, std::ios::binary) << text;
    return p;
}

Row row(const WordEmbeddings& e, std::int64_t i) {
    auto r = e.row(i);
    return Row(r.begin(), r.end());
}

plumb::ParseError parse_error(const fs::path& p, const EmbeddingsTextOptions& o = {}) {
    try {
        load_text_embeddings(p, o);
    } catch (const plumb::ParseError& e) {
        return e;
    }
    return plumb::ParseError("<none>", 0, "no error");
}

}  // namespace

TEST(TextEmbeddings, GloveWithReservedRows) {
    auto p = write("glove.txt", "the 0.5 -1 2\ncat 1e-1 0 +3\r\nthe 9 9 9\nDog 1 2 3\n");
    auto e = load_text_embeddings(p);
    EXPECT_EQ(e.dim, 3u);
    EXPECT_EQ(e.rows(), 5u);  // <pad>, <oov>, the, cat, Dog
    EXPECT_EQ(e.words, (std::vector<std::string>{"<pad>", "<oov>", "the", "cat", "Dog"}));
    EXPECT_EQ(e.duplicates, 1u);
    EXPECT_EQ(row(e, WordEmbeddings::kPaddingIndex), (Row{0, 0, 0}));
    EXPECT_EQ(row(e, WordEmbeddings::kOovIndex), (Row{0, 0, 0}));
    EXPECT_EQ(row(e, 2), (Row{0.5f, -1.0f, 2.0f}));  // first "the" wins
    EXPECT_EQ(row(e, 3), (Row{0.1f, 0.0f, 3.0f}));
    EXPECT_EQ(e.index("the"), 2);
    EXPECT_EQ(e.index("cat"), 3);
    EXPECT_EQ(e.index("dog"), WordEmbeddings::kOovIndex);  // exact match by default
    EXPECT_EQ(e.index("<pad>"), WordEmbeddings::kOovIndex);  // reserved rows are never matched
    std::vector<std::string> q = {"cat", "zebra", "the"};
    EXPECT_EQ(e.indices(q), (std::vector<std::int64_t>{3, 1, 2}));
    EXPECT_EQ(e.matrix.size(), 5u * 3u);
}

TEST(TextEmbeddings, Word2VecHeaderMeanOovAndLowercase) {
    auto p = write("w2v.txt", "3 2\nApple 1 2\nbanana 3 4\napple 5 6\n");
    EmbeddingsTextOptions o;
    o.lowercase = true;
    o.oov_init = OovInit::Mean;
    auto e = load_text_embeddings(p, o);
    EXPECT_EQ(e.dim, 2u);
    EXPECT_EQ(e.words, (std::vector<std::string>{"<pad>", "<oov>", "apple", "banana"}));
    EXPECT_EQ(e.duplicates, 1u);
    EXPECT_EQ(row(e, 1), (Row{2.0f, 3.0f}));  // mean of (1,2) and (3,4)
    EXPECT_EQ(e.index("APPLE"), 2);
    // word2vec header forced, and a word count that does not match
    auto bad = write("w2v_bad.txt", "5 2\na 1 2\nb 3 4\n");
    auto err = parse_error(bad);
    EXPECT_EQ(err.line(), 1u);
    EXPECT_NE(std::string(err.what()).find("announces 5"), std::string::npos);
    // max_words keeps the first N and ignores the header count
    o = {};
    o.max_words = 1;
    auto one = load_text_embeddings(bad, o);
    EXPECT_EQ(one.words, (std::vector<std::string>{"<pad>", "<oov>", "a"}));
}

TEST(TextEmbeddings, BadLinesNameFileAndLine) {
    auto dim = write("dim.txt", "a 1 2 3\nb 1 2\n");
    auto err = parse_error(dim);
    EXPECT_EQ(err.line(), 2u);
    EXPECT_NE(std::string(err.what()).find("dim.txt:2"), std::string::npos);
    EXPECT_NE(std::string(err.what()).find("2 values, expected 3"), std::string::npos);

    auto w2v_dim = write("w2vdim.txt", "1 3\na 1 2\n");
    EXPECT_EQ(parse_error(w2v_dim).line(), 2u);

    auto num = write("num.txt", "a 1 2\nb 1 x\n");
    err = parse_error(num);
    EXPECT_EQ(err.line(), 2u);
    EXPECT_NE(std::string(err.what()).find("'x'"), std::string::npos);
    EXPECT_EQ(parse_error(write("nan.txt", "a 1 nan\n")).line(), 1u);
    EXPECT_EQ(parse_error(write("utf8.txt", "a 1 2\nb\xFF 1 2\n")).line(), 2u);
    EXPECT_EQ(parse_error(write("word_only.txt", "a 1 2\nlonely\n")).line(), 2u);
    EmbeddingsTextOptions w2v;
    w2v.format = EmbeddingsFormat::Word2VecText;
    EXPECT_EQ(parse_error(write("hdr.txt", "a 1 2\n"), w2v).line(), 1u);
    EXPECT_THROW(load_text_embeddings(write("empty.txt", "")), plumb::ParseError);
    EXPECT_THROW(load_text_embeddings("/nonexistent/plumb/glove.txt"), plumb::IoError);
}

TEST(TextEmbeddings, WordListRoundTrip) {
    auto e = load_text_embeddings(write("g2.txt", "x 1\ny 2\n"));
    auto p = write("words.txt", "");
    save_word_list(p, e.words);
    WordEmbeddings f;
    f.words = load_word_list(p);
    f.dim = 1;
    f.matrix = e.matrix;
    f.rebuild_index();
    EXPECT_EQ(f.words, e.words);
    EXPECT_EQ(f.index("y"), 3);
    EXPECT_EQ(f.index("<oov>"), WordEmbeddings::kOovIndex);
    std::vector<std::string> bad = {"a\nb"};
    EXPECT_THROW(save_word_list(p, bad), plumb::InvalidArgument);
}
