#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

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

namespace {

// word2vec's binary format written byte by byte as the C tool does: "count dim\n", then per
// word "word " + dim little-endian float32 + "\n" (the newline is optional: gensim-style files
// without it must load too).
std::string w2v_binary(const std::string& header,
                       const std::vector<std::pair<std::string, Row>>& rows, bool newline = true) {
    std::string out = header + "\n";
    for (const auto& [word, values] : rows) {
        out += word + " ";
        for (float v : values) {
            std::uint32_t bits;
            std::memcpy(&bits, &v, 4);
            for (int b = 0; b < 4; ++b) out.push_back(static_cast<char>((bits >> (8 * b)) & 0xFF));
        }
        if (newline) out += "\n";
    }
    return out;
}

const std::vector<std::pair<std::string, Row>> kBinRows = {{"the", {0.5f, -1.0f}},
                                                           {"\xC3\x9C"
                                                            "ber",
                                                            {1e-3f, 10.0f}},
                                                           {"dog", {-2.5f, 0.0f}}};

std::string error_text(const fs::path& p, const EmbeddingsTextOptions& o = {}) {
    try {
        load_text_embeddings(p, o);
    } catch (const plumb::ParseError& e) {
        return e.what();
    }
    return "<no ParseError>";
}

}  // namespace

TEST(TextEmbeddings, Word2VecBinaryWithAndWithoutNewlines) {
    for (bool newline : {true, false}) {
        auto p = write("w2v.bin", w2v_binary("3 2", kBinRows, newline));
        for (auto format : {EmbeddingsFormat::Auto, EmbeddingsFormat::Word2Vec,
                            EmbeddingsFormat::Word2VecBinary}) {
            EmbeddingsTextOptions o;
            o.format = format;
            auto e = load_text_embeddings(p, o);
            EXPECT_EQ(e.dim, 2u);
            EXPECT_EQ(e.words, (std::vector<std::string>{"<pad>", "<oov>", "the",
                                                         "\xC3\x9C"
                                                         "ber",
                                                         "dog"}));
            for (std::size_t i = 0; i < kBinRows.size(); ++i) {
                EXPECT_EQ(row(e, static_cast<std::int64_t>(i) + 2), kBinRows[i].second);
            }
            EXPECT_EQ(e.index("dog"), 4);
        }
    }
    // OOV mean and max_words over the binary path
    EmbeddingsTextOptions o;
    o.oov_init = OovInit::Mean;
    o.max_words = 2;
    auto e = load_text_embeddings(write("w2v2.bin", w2v_binary("3 2", kBinRows)), o);
    EXPECT_EQ(e.rows(), 4u);
    EXPECT_EQ(row(e, 1), (Row{(0.5f + 1e-3f) / 2, (-1.0f + 10.0f) / 2}));
}

TEST(TextEmbeddings, Word2VecBinaryBadInputNamesFileAndEntry) {
    const std::string good = w2v_binary("3 2", kBinRows);
    // truncated inside the last vector
    auto p = write("trunc.bin", good.substr(0, good.size() - 3));
    std::string msg = error_text(p);
    EXPECT_NE(msg.find(p.string() + ": entry 3 of 3 ('dog'): truncated"), std::string::npos) << msg;
    // fewer entries than the header announces
    p = write("count.bin", w2v_binary("4 2", kBinRows));
    msg = error_text(p);
    EXPECT_NE(msg.find("entry 4 of 4: truncated"), std::string::npos) << msg;
    // wrong dimension in the header misaligns the entries
    p = write("dim.bin", w2v_binary("3 3", kBinRows));
    msg = error_text(p);
    EXPECT_NE(msg.find(p.string() + ": entry 3 of 3: empty word (wrong dimension"),
              std::string::npos)
        << msg;
    p = write("dim1.bin", w2v_binary("2 1", kBinRows));
    msg = error_text(p);  // entry 2 starts inside the float bytes of "the"
    EXPECT_NE(msg.find(p.string() + ": entry 2 of 2: the word is not valid UTF-8"),
              std::string::npos)
        << msg;
    // broken UTF-8 in a word
    p = write("utf8.bin", w2v_binary("3 2", {kBinRows[0], {"b\xFF", {1, 2}}, kBinRows[2]}));
    msg = error_text(p);
    EXPECT_NE(msg.find(p.string() + ": entry 2 of 3: the word is not valid UTF-8 at byte 2"),
              std::string::npos)
        << msg;
    // a non-finite value
    p = write("inf.bin",
              w2v_binary("1 2", {{"x", {1.0f, std::numeric_limits<float>::infinity()}}}));
    msg = error_text(p);
    EXPECT_NE(msg.find("entry 1 of 1 ('x'): value 2 is not a finite number"), std::string::npos)
        << msg;
    // forced binary on a text file: the header is fine, the records are not binary
    EmbeddingsTextOptions bin;
    bin.format = EmbeddingsFormat::Word2VecBinary;
    EXPECT_THROW(load_text_embeddings(write("text.txt", "2 2\na 1 2\nb 3 4\n"), bin),
                 plumb::ParseError);
    // forced word2vec on a GloVe file: the header is missing
    EmbeddingsTextOptions w2v;
    w2v.format = EmbeddingsFormat::Word2Vec;
    EXPECT_EQ(parse_error(write("glove2.txt", "a 1 2\n"), w2v).line(), 1u);
}

TEST(TextEmbeddings, FastTextVec) {
    // fastText's .vec: a "count dim" header, rows ending with a space.
    auto p = write("wiki.vec", "2 3\nthe 0.1 -0.2 0.3 \n\xC3\xA9t\xC3\xA9 1 2 3e-2 \n");
    auto e = load_text_embeddings(p);
    EXPECT_EQ(e.dim, 3u);
    EXPECT_EQ(e.words, (std::vector<std::string>{"<pad>", "<oov>", "the", "\xC3\xA9t\xC3\xA9"}));
    EXPECT_EQ(row(e, 2), (Row{0.1f, -0.2f, 0.3f}));
    EXPECT_EQ(row(e, 3), (Row{1.0f, 2.0f, 0.03f}));
    EmbeddingsTextOptions o;
    o.format = EmbeddingsFormat::Word2VecText;
    EXPECT_EQ(load_text_embeddings(p, o).words, e.words);
}

TEST(TextEmbeddings, OtherFormatsAreNamed) {
    auto p = write("vectors.bin", std::string("PK\x03\x04\x14\0\0\0", 8));
    auto err = parse_error(p);
    EXPECT_EQ(std::string(err.what()),
              p.string() + ": this is a zip archive, not word vectors (GloVe, word2vec, fastText)");
    p = write("vectors.npy", std::string("\x93NUMPY\x01\0v\0{'descr': '<f4'}", 22));
    EXPECT_NE(std::string(parse_error(p).what()).find("this is a NumPy .npy array"),
              std::string::npos);
    // A GloVe file whose first word merely starts with "GGUF" is still GloVe.
    EXPECT_EQ(load_text_embeddings(write("gguf_word.txt", "GGUFish 1 2\n")).words.size(), 3u);
}
