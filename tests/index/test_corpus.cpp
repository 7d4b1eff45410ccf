// Corpus and topics readers: good input, oddities that are valid, and bad input (errors naming
// file and line, or skipped and counted).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "index/corpus.hpp"
#include "index/document_sources.hpp"
#include "plugin/error.hpp"
#include "plugin/text_io.hpp"
#include "tests/support/corpus_files.hpp"
#include "tests/support/scratch_dir.hpp"

namespace fs = std::filesystem;
using plumb::index::CorpusFormat;
using plumb::index::CorpusReader;
using plumb::index::CorpusReaderOptions;
using plumb::index::Document;
using plumb::test::read_all;

namespace {

const plumb::test::ScratchDir kScratch("plumb_test_corpus_");

fs::path temp_file(const std::string& name, const std::string& content) {
    return kScratch.file(name, content);
}

CorpusReaderOptions tsv(bool skip_bad = false) {
    return plumb::test::corpus_options(CorpusFormat::Tsv, skip_bad);
}
CorpusReaderOptions jsonl(bool skip_bad = false) {
    return plumb::test::corpus_options(CorpusFormat::Jsonl, skip_bad);
}

/// Expects a ParseError whose message is exactly "<file>:<line>: <message>".
template <class F>
void expect_parse_error(F&& f, const fs::path& p, std::uint64_t line, const std::string& message) {
    try {
        f();
        FAIL() << "expected ParseError at line " << line;
    } catch (const plumb::ParseError& e) {
        EXPECT_EQ(e.line(), line);
        EXPECT_EQ(e.file(), p.string());
        EXPECT_EQ(std::string(e.what()), p.string() + ":" + std::to_string(line) + ": " + message);
    }
}

}  // namespace

TEST(CorpusFormat, ParseAndDetect) {
    EXPECT_EQ(plumb::index::parse_corpus_format("tsv"), CorpusFormat::Tsv);
    EXPECT_EQ(plumb::index::parse_corpus_format("JSONL"), CorpusFormat::Jsonl);
    EXPECT_THROW(plumb::index::parse_corpus_format("xml"), plumb::InvalidArgument);
    EXPECT_EQ(plumb::index::detect_corpus_format("a/corpus.jsonl"), CorpusFormat::Jsonl);
    EXPECT_EQ(plumb::index::detect_corpus_format("a/corpus.JSON"), CorpusFormat::Jsonl);
    EXPECT_EQ(plumb::index::detect_corpus_format("corpus.jsonl.gz"), CorpusFormat::Jsonl);
    EXPECT_EQ(plumb::index::detect_corpus_format("collection.tsv"), CorpusFormat::Tsv);
    EXPECT_EQ(plumb::index::detect_corpus_format("collection"), CorpusFormat::Tsv);
    EXPECT_STREQ(plumb::index::corpus_format_name(CorpusFormat::Jsonl), "jsonl");
    for (const char* name : {"tsv", "jsonl", "trec", "html"}) {
        EXPECT_STREQ(plumb::index::corpus_format_name(plumb::index::parse_corpus_format(name)),
                     name);
    }
    EXPECT_EQ(plumb::index::parse_corpus_format("json"), CorpusFormat::Jsonl);
    // An empty name: detected from the path; a name wins over the path.
    EXPECT_EQ(plumb::index::resolve_corpus_format("", "a/corpus.jsonl"), CorpusFormat::Jsonl);
    EXPECT_EQ(plumb::index::resolve_corpus_format("tsv", "a/corpus.jsonl"), CorpusFormat::Tsv);
    EXPECT_THROW(plumb::index::resolve_corpus_format("xml", "c.tsv"), plumb::InvalidArgument);
}

TEST(Document, IndexedTextJoinsTitleAndText) {
    Document titled{"1", "A title", "the text"};
    EXPECT_EQ(plumb::index::indexed_text(titled), "A title the text");
    Document plain{"2", "", "only text"};
    EXPECT_EQ(plumb::index::indexed_text(plain), "only text");
    EXPECT_EQ(plumb::index::indexed_text(std::move(plain)), "only text");
}

TEST(TsvReader, ReadsValidOddities) {
    // BOM, CRLF, blank and whitespace-only lines (skipped), an empty passage, runs of spaces in
    // text, non-numeric ids, an id with surrounding spaces, UTF-8 text, no final newline.
    auto p = temp_file("good.tsv",
                       "\xEF\xBB\xBF"
                       "0\tThe first  passage.\r\n"
                       "\n"
                       "   \r\n"
                       "doc-B\t\n"
                       " 42 \tcaf\xC3\xA9  \xE4\xB8\xAD\xE6\x96\x87\n"
                       "D4\ttrailing spaces   ");
    CorpusReader r(p, tsv());
    Document d;
    ASSERT_TRUE(r.next(d));
    EXPECT_EQ(d.id, "0");
    EXPECT_EQ(d.text, "The first  passage.");
    EXPECT_EQ(d.title, "");
    EXPECT_EQ(r.line_number(), 1u);
    ASSERT_TRUE(r.next(d));
    EXPECT_EQ(d.id, "doc-B");
    EXPECT_EQ(d.text, "");
    EXPECT_EQ(r.line_number(), 4u);
    ASSERT_TRUE(r.next(d));
    EXPECT_EQ(d.id, "42");
    EXPECT_EQ(d.text, "caf\xC3\xA9  \xE4\xB8\xAD\xE6\x96\x87");
    ASSERT_TRUE(r.next(d));
    EXPECT_EQ(d.id, "D4");
    EXPECT_EQ(d.text, "trailing spaces   ");
    EXPECT_EQ(r.line_number(), 6u);
    EXPECT_FALSE(r.next(d));
    EXPECT_EQ(r.skipped(), 0u);
    EXPECT_EQ(r.size_bytes(), fs::file_size(p));
    EXPECT_EQ(r.bytes_read(), fs::file_size(p));
    EXPECT_EQ(r.name(), p.string());
}

TEST(TsvReader, EmptyFileHasNoDocuments) {
    auto p = temp_file("empty.tsv", "");
    EXPECT_TRUE(read_all(p, tsv()).empty());
}

TEST(TsvReader, BadLinesNameFileAndLine) {
    auto no_tab = temp_file("notab.tsv", "1\tok\n2 no tab here\n");
    expect_parse_error([&] { read_all(no_tab, tsv()); }, no_tab, 2,
                       "expected id<TAB>text, found no TAB");
    auto missing_id = temp_file("noid.tsv", "1\tok\n2\tok\n  \ttext without id\n");
    expect_parse_error([&] { read_all(missing_id, tsv()); }, missing_id, 3, "missing document id");
    auto space_id = temp_file("spaceid.tsv", "a b\ttext\n");
    expect_parse_error([&] { read_all(space_id, tsv()); }, space_id, 1,
                       "document id 'a b' contains whitespace");
    // The bad byte 0xFF is byte 5 (1-based) of the line "1\tab\xFFcd".
    auto bad_utf8 = temp_file("utf8.tsv",
                              "0\tfine\n1\tab\xFF"
                              "cd\n");
    expect_parse_error([&] { read_all(bad_utf8, tsv()); }, bad_utf8, 2, "invalid UTF-8 at byte 5");
}

TEST(TsvReader, ExtraTabsAreAnErrorUnlessAllowed) {
    auto p = temp_file("tabs.tsv", "1\ttitle\tbody text\n2\tplain\n");
    try {
        read_all(p, tsv());
        FAIL();
    } catch (const plumb::ParseError& e) {
        EXPECT_EQ(e.line(), 1u);
        EXPECT_NE(e.message().find("expected 2 TAB-separated fields, found 3"), std::string::npos);
    }
    auto opt = tsv();
    opt.tabs_in_text = true;
    auto docs = read_all(p, opt);
    ASSERT_EQ(docs.size(), 2u);
    EXPECT_EQ(docs[0].id, "1");
    EXPECT_EQ(docs[0].text, "title\tbody text");  // verbatim after the first TAB
    EXPECT_EQ(docs[1].text, "plain");
}

TEST(TsvReader, SkipBadCountsAndContinues) {
    auto p = temp_file("mixed.tsv",
                       "1\tgood one\n"
                       "no tab\n"
                       "\tno id\n"
                       "2\tbad \xC3\n"
                       "\n"
                       "3\tx\ty\n"
                       "4\tgood two\n");
    std::uint64_t skipped = 0;
    auto opt = tsv(true);
    opt.max_bad_share = 1.0;  // 4 of 6 lines are bad: only the share rule would object
    auto docs = read_all(p, opt, &skipped);
    ASSERT_EQ(docs.size(), 2u);
    EXPECT_EQ(docs[0].id, "1");
    EXPECT_EQ(docs[1].id, "4");
    EXPECT_EQ(skipped, 4u);  // the blank line is not counted
}

TEST(TsvReader, MissingFileIsIoError) {
    EXPECT_THROW(CorpusReader("/nonexistent/plumb/corpus.tsv", tsv()), plumb::IoError);
}

TEST(TsvReader, GzipInputIsDecompressed) {
    // Written with zlib here; the reader recognises gzip by its magic bytes, not the name.
    std::string content = "1\tfirst\r\n\n2\tsecond \xC3\xA9\n";
    auto p = temp_file("c.tsv", "");
    ASSERT_NO_FATAL_FAILURE(plumb::test::write_gz(p, content));
    CorpusReader r(p, tsv());
    Document d;
    ASSERT_TRUE(r.next(d));
    EXPECT_EQ(d.id, "1");
    EXPECT_EQ(d.text, "first");
    ASSERT_TRUE(r.next(d));
    EXPECT_EQ(d.id, "2");
    EXPECT_EQ(d.text, "second \xC3\xA9");
    EXPECT_EQ(r.line_number(), 3u);
    EXPECT_FALSE(r.next(d));
    EXPECT_EQ(r.bytes_read(), fs::file_size(p));

    // Errors in compressed files name the line too.
    auto bad = temp_file("bad.jsonl.gz", "");
    std::string lines = "{\"_id\": \"a\", \"text\": \"x\"}\n{\"text\": \"no id\"}\n";
    ASSERT_NO_FATAL_FAILURE(plumb::test::write_gz(bad, lines));
    expect_parse_error([&] { read_all(bad, jsonl()); }, bad, 2, "missing document id (\"_id\")");

    // Truncated compressed data is an IoError naming the file.
    std::string bytes = plumb::read_file(p);
    auto truncated = temp_file("trunc.tsv.gz", bytes.substr(0, bytes.size() - 12));
    try {
        read_all(truncated, tsv());
        FAIL() << "expected IoError";
    } catch (const plumb::IoError& e) {
        EXPECT_NE(std::string(e.what()).find(truncated.string()), std::string::npos);
        EXPECT_NE(std::string(e.what()).find("gzip"), std::string::npos);
    }
}

TEST(JsonlReader, ReadsBeirAndPyseriniStyleLines) {
    auto p = temp_file(
        "corpus.jsonl",
        "\xEF\xBB\xBF{\"_id\": \"d1\", \"title\": \"T one\", \"text\": \"Body\\tone\"}\r\n"
        "\n"
        "{\"_id\": 17, \"text\": \"numeric id\", \"metadata\": {\"url\": \"x\"}}\n"
        "{\"_id\": \"d3\", \"title\": null, \"text\": \"\"}\n"
        "{\"id\": \"p4\", \"contents\": \"pyserini style\"}\n"
        "{\"_id\": \"d5\", \"text\": \"caf\\u00e9 \xE4\xB8\xAD\"}\n");
    auto docs = read_all(p, jsonl());
    ASSERT_EQ(docs.size(), 5u);
    EXPECT_EQ(docs[0].id, "d1");
    EXPECT_EQ(docs[0].title, "T one");
    EXPECT_EQ(docs[0].text, "Body\tone");
    EXPECT_EQ(docs[1].id, "17");
    EXPECT_EQ(docs[1].title, "");
    EXPECT_EQ(docs[1].text, "numeric id");
    EXPECT_EQ(docs[2].id, "d3");
    EXPECT_EQ(docs[2].text, "");
    EXPECT_EQ(docs[3].id, "p4");
    EXPECT_EQ(docs[3].text, "pyserini style");
    EXPECT_EQ(docs[4].text, "caf\xC3\xA9 \xE4\xB8\xAD");
}

TEST(JsonlReader, BadLinesNameFileAndLine) {
    auto no_id = temp_file("noid.jsonl", "{\"_id\": \"a\", \"text\": \"x\"}\n{\"text\": \"x\"}\n");
    expect_parse_error([&] { read_all(no_id, jsonl()); }, no_id, 2,
                       "missing document id (\"_id\")");
    auto empty_id = temp_file("emptyid.jsonl", "{\"_id\": \"\", \"text\": \"x\"}\n");
    expect_parse_error([&] { read_all(empty_id, jsonl()); }, empty_id, 1, "missing document id");
    auto float_id = temp_file("floatid.jsonl", "{\"_id\": 1.5, \"text\": \"x\"}\n");
    expect_parse_error([&] { read_all(float_id, jsonl()); }, float_id, 1,
                       "document id must be a string or an integer, found number");
    auto no_text = temp_file("notext.jsonl", "{\"_id\": \"a\", \"title\": \"t\"}\n");
    expect_parse_error([&] { read_all(no_text, jsonl()); }, no_text, 1, "missing \"text\"");
    auto num_text = temp_file("numtext.jsonl", "{\"_id\": \"a\", \"text\": 5}\n");
    expect_parse_error([&] { read_all(num_text, jsonl()); }, num_text, 1,
                       "\"text\" must be a string, found number");
    auto array = temp_file("array.jsonl", "[1, 2]\n");
    expect_parse_error([&] { read_all(array, jsonl()); }, array, 1,
                       "expected a JSON object, found array");
    auto bad_utf8 = temp_file("utf8.jsonl", "{\"_id\": \"a\", \"text\": \"\xE4\xB8\"}\n");
    expect_parse_error([&] { read_all(bad_utf8, jsonl()); }, bad_utf8, 1,
                       "invalid UTF-8 at byte 23");
    auto truncated =
        temp_file("trunc.jsonl", "{\"_id\": \"a\", \"text\": \"x\"}\n{\"_id\": \"b\", \"te\n");
    try {
        read_all(truncated, jsonl());
        FAIL();
    } catch (const plumb::ParseError& e) {
        EXPECT_EQ(e.line(), 2u);
        EXPECT_EQ(e.message().rfind("invalid JSON: ", 0), 0u) << e.message();
    }
}

TEST(JsonlReader, SkipBadCountsAndContinues) {
    auto p = temp_file("mixed.jsonl",
                       "{\"_id\": \"a\", \"text\": \"one\"}\n"
                       "not json\n"
                       "{\"text\": \"no id\"}\n"
                       "{\"_id\": \"b\", \"text\": \"two\"}\n");
    std::uint64_t skipped = 0;
    auto opt = jsonl(true);
    opt.max_bad_share = 1.0;  // 2 of 4 lines are bad: only the share rule would object
    auto docs = read_all(p, opt, &skipped);
    ASSERT_EQ(docs.size(), 2u);
    EXPECT_EQ(docs[1].id, "b");
    EXPECT_EQ(skipped, 2u);
}

TEST(TopicsReader, TsvAndJsonl) {
    auto t = temp_file("topics.tsv",
                       "\xEF\xBB\xBF"
                       "101\twhat is c++?\r\n\n102\t\nq3\t  \"quoted\" AND x:y\n");
    auto topics = plumb::index::read_topics(t);
    ASSERT_EQ(topics.size(), 3u);
    EXPECT_EQ(topics[0].id, "101");
    EXPECT_EQ(topics[0].text, "what is c++?");
    EXPECT_EQ(topics[1].id, "102");
    EXPECT_EQ(topics[1].text, "");  // empty query text is valid
    EXPECT_EQ(topics[2].id, "q3");
    EXPECT_EQ(topics[2].text, "  \"quoted\" AND x:y");

    auto j = temp_file("queries.jsonl",
                       "{\"_id\": \"1\", \"text\": \"first\", \"metadata\": {}}\n"
                       "{\"_id\": 2, \"text\": \"second\"}\n");
    auto jt = plumb::index::read_topics(j);
    ASSERT_EQ(jt.size(), 2u);
    EXPECT_EQ(jt[0].id, "1");
    EXPECT_EQ(jt[0].text, "first");
    EXPECT_EQ(jt[1].id, "2");
    EXPECT_EQ(jt[1].text, "second");
}

TEST(TopicsReader, DuplicateQidIsAnErrorNamingBothLines) {
    auto t = temp_file("dup.tsv", "1\ta\n2\tb\n\n1\tc\n");
    expect_parse_error([&] { plumb::index::read_topics(t); }, t, 4,
                       "duplicate query id '1' (first on line 1)");
    std::uint64_t skipped = 0;
    auto topics = plumb::index::read_topics(t, true, &skipped);
    ASSERT_EQ(topics.size(), 2u);
    EXPECT_EQ(topics[0].text, "a");  // the first occurrence is kept
    EXPECT_EQ(skipped, 1u);
}

TEST(TopicsReader, BadLines) {
    auto t = temp_file("bad_topics.tsv", "1\tok\n2\tx\ty\n");
    expect_parse_error([&] { plumb::index::read_topics(t); }, t, 2,
                       "expected 2 TAB-separated fields, found 3");
    auto n = temp_file("notab_topics.tsv", "just a query\n");
    expect_parse_error([&] { plumb::index::read_topics(n); }, n, 1,
                       "expected qid<TAB>query, found no TAB");
    auto j = temp_file("bad_queries.jsonl", "{\"text\": \"x\"}\n");
    expect_parse_error([&] { plumb::index::read_topics(j); }, j, 1, "missing query id (\"_id\")");
    EXPECT_THROW(plumb::index::read_topics("/nonexistent/plumb/topics.tsv"), plumb::IoError);
}

TEST(DocumentSources, CorpusHeldInMemory) {
    auto p = temp_file("sources.jsonl",
                       "{\"_id\": \"a\", \"title\": \"T\", \"text\": \"x y\"}\n"
                       "{\"_id\": \"b\", \"text\": \"z\"}\n");
    auto all = plumb::index::open_document_source("", p.string());
    EXPECT_EQ(all->size(), 2u);
    EXPECT_EQ(all->text("a"), "T x y");  // as the index stores it
    EXPECT_EQ(all->text("b"), "z");
    EXPECT_EQ(all->text("c"), std::nullopt);
    const std::unordered_set<std::string> wanted = {"b"};
    auto some = plumb::index::open_document_source("", p.string(), &wanted, "jsonl");
    EXPECT_EQ(some->size(), 1u);
    EXPECT_EQ(some->text("a"), std::nullopt);
    auto dup = temp_file("sources_dup.tsv", "a\tx\nb\ty\na\tz\n");
    expect_parse_error([&] { plumb::index::open_document_source("", dup.string()); }, dup, 3,
                       "duplicate document id 'a'");
    EXPECT_THROW(plumb::index::open_document_source("", ""), plumb::ConfigError);
}
