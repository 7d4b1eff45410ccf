// Readers of the formats real collections come in: TREC SGML documents, TREC topics, HTML files
// (folders, tarballs), BEIR folders, and the --skip-bad rule that a file of the wrong format is
// an error. Expected values are derived by hand from the documented behaviour of Anserini's
// TrecCollection / HtmlCollection / TrecTopicReader (Jsoup's text(): markup removed, entities
// decoded, whitespace collapsed).
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "index/corpus.hpp"
#include "index/html_text.hpp"
#include "plugin/error.hpp"
#include "tests/support/corpus_files.hpp"
#include "tests/support/tar_files.hpp"
#include "tests/test_tmp.hpp"

namespace fs = std::filesystem;
using plumb::index::CorpusFormat;
using plumb::index::CorpusReader;
using plumb::index::CorpusReaderOptions;
using plumb::index::Document;
using plumb::index::html_to_text;
using plumb::test::read_all;

namespace {

fs::path root() { return plumb::test::process_dir("plumb_test_collections_"); }

fs::path write(const fs::path& rel, const std::string& content) {
    fs::path p = root() / rel;
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << content;
    return p;
}

fs::path write_gz(const fs::path& rel, const std::string& content) {
    fs::path p = root() / rel;
    fs::create_directories(p.parent_path());
    plumb::test::write_gz(p, content);
    return p;
}

/// A tar archive (gzip-compressed when `gzip`) written in process with libarchive.
fs::path write_tar(const fs::path& rel,
                   const std::vector<std::pair<std::string, std::string>>& files, bool gzip) {
    fs::path p = root() / rel;
    fs::create_directories(p.parent_path());
    plumb::test::write_tar(p, files, gzip);
    return p;
}

CorpusReaderOptions opts(CorpusFormat f, bool skip_bad = false) {
    return plumb::test::corpus_options(f, skip_bad);
}

/// Expects a ParseError "<file>:<line>: <message...>" whose message starts with `prefix`.
template <class F>
void expect_error(F&& f, const std::string& file, std::uint64_t line, const std::string& prefix) {
    try {
        f();
        ADD_FAILURE() << "expected ParseError " << file << ":" << line << ": " << prefix;
    } catch (const plumb::ParseError& e) {
        EXPECT_EQ(e.file(), file) << e.what();
        EXPECT_EQ(e.line(), line) << e.what();
        EXPECT_EQ(e.message().substr(0, prefix.size()), prefix) << e.what();
    }
}

// Anserini's own TrecCollection sample (src/test/resources/sample_docs/trec/collection2/trec1):
// only HEAD and TEXT of the kept elements occur; FILEID, FIRST, SECOND, DATELINE are dropped.
const std::string kTrecSample =
    "<DOC>\n"
    "<DOCNO> TREC_DOC_1 </DOCNO>\n"
    "<FILEID>FILEID1</FILEID>\n"
    "<FIRST> not sure what is this </FIRST>\n"
    "<SECOND> not sure </SECOND>\n"
    "<HEAD>This is head</HEAD>\n"
    "<DATELINE>TOKYO (AP) </DATELINE>\n"
    "<TEXT>\n"
    "   very simple\n"
    "   text\n"
    "</TEXT>\n"
    "</DOC>\n"
    "<DOC>\n"
    "<DOCNO> DOC222 </DOCNO>\n"
    "<FILEID>FILEID2</FILEID>\n"
    "<FIRST> again, not sure</FIRST>\n"
    "<SECOND> umh?</SECOND>\n"
    "<HEAD>HEAD</HEAD>\n"
    "<DATELINE>MEXICO CITY (AP) </DATELINE>\n"
    "<TEXT>\n"
    "   simple\n"
    "   enough\n"
    "   text\n"
    "   text\n"
    "   text\n"
    "</TEXT>\n"
    "</DOC>\n";

}  // namespace

// ---------------------------------------------------------------------------------------------
// html_to_text
// ---------------------------------------------------------------------------------------------

TEST(HtmlText, TagsEntitiesWhitespace) {
    EXPECT_EQ(html_to_text("<p>Hello&nbsp;<b>wor</b>ld &amp; caf&eacute; &#233;&#xE9;</p>"),
              "Hello world & café éé");
    EXPECT_EQ(html_to_text("  a\n\n\t b  "), "a b");
    EXPECT_EQ(html_to_text("one<br>two<p>three</p>four"), "one two three four");
    EXPECT_EQ(html_to_text("<HEADLINE>x</HEADLINE><TEXT>y</TEXT>"), "x y");  // unknown: space
    // "<" before a space is text; "<d" opens a tag, and one cut off by the end of the input
    // is dropped (HTML5 tokenizer, "eof-in-tag", as in Jsoup).
    EXPECT_EQ(html_to_text("a < b and c<d"), "a < b and c");
    EXPECT_EQ(html_to_text("x &unknown; &amp y &#;"), "x &unknown; &amp y &#;");
    EXPECT_EQ(html_to_text("<!DOCTYPE html><!-- c -->t<script>var a = '<p>';</script>"
                           "<style>p {}</style>u<?xml x?>"),
              "t u");
    EXPECT_EQ(html_to_text("<a href=\"x>y\" title='>'>link</a>"), "link");
    EXPECT_EQ(html_to_text("<title>T</title><pre>  p  re\n</pre>"), "T p re");
    EXPECT_EQ(html_to_text("&lt;tag&gt; &quot;q&quot; &#1114112; &#0;"),
              "<tag> \"q\" \xEF\xBF\xBD \xEF\xBF\xBD");
    EXPECT_EQ(html_to_text(""), "");
}

// ---------------------------------------------------------------------------------------------
// TREC SGML documents
// ---------------------------------------------------------------------------------------------

TEST(TrecReader, AnseriniSampleKeepsTheTaggedElements) {
    auto p = write("trec/sample.txt", kTrecSample);
    auto docs = read_all(p, opts(CorpusFormat::Trec));
    ASSERT_EQ(docs.size(), 2u);
    EXPECT_EQ(docs[0].id, "TREC_DOC_1");  // DOCNO trimmed
    EXPECT_EQ(docs[0].text, "This is head very simple text");
    EXPECT_EQ(docs[0].title, "");
    EXPECT_EQ(docs[1].id, "DOC222");
    EXPECT_EQ(docs[1].text, "HEAD simple enough text text text");
}

TEST(TrecReader, AllKeptTagsVariantsAndEmptyDocuments) {
    auto p = write("trec/variants.sgml",
                   "\xEF\xBB\xBF<DOC>\r\n<DOCNO>FT911-1</DOCNO>\r\n<PROFILE>drop</PROFILE>\r\n"
                   "<DATE>911231</DATE>\r\n<HEADLINE>\r\nFT 31 DEC 91 / Head &amp; line\r\n"
                   "</HEADLINE>\r\n<BYLINE>drop me</BYLINE>\r\n<TEXT>\r\nBody <P>one</P>\r\n"
                   "<TITLE>nested title</TITLE> rest\r\n</TEXT>\r\n<PUB>drop</PUB>\r\n</DOC>\r\n"
                   "<DOC><DOCNO>one-line</DOCNO><HL>h</HL><TTL>t</TTL><DD>d</DD><LP>l</LP>"
                   "<LEADPARA>p</LEADPARA><TEXT>x</TEXT></DOC>\n"
                   "<doc>\n<docno>lower</docno>\n<text>lower case tags</text>\n</doc>\n"
                   "<DOC>\n<DOCNO>empty</DOCNO>\n<DOCID>only an id</DOCID>\n</DOC>\n"
                   "<DOC id=\"attr-id\">\n<TEXT>by attribute</TEXT>\n</DOC>\n"
                   "<!-- a comment between documents -->\n\n");
    auto docs = read_all(p, opts(CorpusFormat::Trec));
    ASSERT_EQ(docs.size(), 5u);
    EXPECT_EQ(docs[0].id, "FT911-1");
    EXPECT_EQ(docs[0].text, "911231 FT 31 DEC 91 / Head & line Body one nested title rest");
    EXPECT_EQ(docs[1].id, "one-line");
    EXPECT_EQ(docs[1].text, "h t d l p x");
    EXPECT_EQ(docs[2].id, "lower");
    EXPECT_EQ(docs[2].text, "lower case tags");
    EXPECT_EQ(docs[3].id, "empty");
    EXPECT_EQ(docs[3].text, "");
    EXPECT_EQ(docs[4].id, "attr-id");
    EXPECT_EQ(docs[4].text, "by attribute");
}

TEST(TrecReader, CrOnlyLineEndsGzipAndLineNumbers) {
    std::string cr = kTrecSample;
    for (auto& c : cr) {
        if (c == '\n') c = '\r';
    }
    auto p = write("trec/cr.txt", cr);
    auto docs = read_all(p, opts(CorpusFormat::Trec));
    ASSERT_EQ(docs.size(), 2u);
    EXPECT_EQ(docs[1].text, "HEAD simple enough text text text");
    // Errors count CR-only lines: the bad byte is on line 14 of the second document's DOCNO.
    std::string bad = cr;
    bad.replace(bad.find("DOC222"), 6, "DOC\xFF\x32\x32");
    auto b = write("trec/cr_bad.txt", bad);
    expect_error([&] { read_all(b, opts(CorpusFormat::Trec)); }, b.string(), 14,
                 "invalid UTF-8 at byte 12");

    auto g = write_gz("trec/sample.gz", kTrecSample);
    CorpusReader r(g, opts(CorpusFormat::Trec));
    Document d;
    ASSERT_TRUE(r.next(d));
    EXPECT_EQ(r.line_number(), 1u);
    ASSERT_TRUE(r.next(d));
    EXPECT_EQ(d.id, "DOC222");
    EXPECT_EQ(r.line_number(), 13u);  // the line of its <DOC>
    EXPECT_FALSE(r.next(d));
}

TEST(TrecReader, MalformedDocumentsNameFileAndLine) {
    const auto trec = opts(CorpusFormat::Trec);
    auto eof = write("trec/bad/eof.txt", "<DOC>\n<DOCNO>a</DOCNO>\n<TEXT>x</TEXT>\n\n");
    expect_error([&] { read_all(eof, trec); }, eof.string(), 1,
                 "unterminated <DOC> (end of file before </DOC>)");
    auto next = write("trec/bad/next.txt",
                      "<DOC>\n<DOCNO>a</DOCNO>\n<TEXT>x</TEXT>\n<DOC>\n<DOCNO>b</DOCNO>\n</DOC>\n");
    expect_error([&] { read_all(next, trec); }, next.string(), 1,
                 "unterminated <DOC>: a new <DOC> begins on line 4 before </DOC>");
    auto nodocno = write("trec/bad/nodocno.txt", "\n<DOC>\n<TEXT>x</TEXT>\n</DOC>\n");
    expect_error([&] { read_all(nodocno, trec); }, nodocno.string(), 2, "<DOC> without <DOCNO>");
    auto twice = write("trec/bad/twice.txt",
                       "<DOC>\n<DOCNO>a</DOCNO>\n<TEXT>x</TEXT>\n<DOCNO>b</DOCNO>\n</DOC>\n");
    expect_error([&] { read_all(twice, trec); }, twice.string(), 4,
                 "second <DOCNO> in one <DOC> (first on line 2)");
    auto unclosed_docno = write("trec/bad/docno.txt", "<DOC>\n<DOCNO>a\n<TEXT>x</TEXT>\n</DOC>\n");
    expect_error([&] { read_all(unclosed_docno, trec); }, unclosed_docno.string(), 2,
                 "<DOCNO> without </DOCNO>");
    auto empty_id = write("trec/bad/empty_id.txt", "<DOC><DOCNO>  </DOCNO></DOC>\n");
    expect_error([&] { read_all(empty_id, trec); }, empty_id.string(), 1, "empty <DOCNO>");
    auto ws_id = write("trec/bad/ws_id.txt", "<DOC><DOCNO>a b</DOCNO></DOC>\n");
    expect_error([&] { read_all(ws_id, trec); }, ws_id.string(), 1,
                 "document id 'a b' contains whitespace");
    auto text =
        write("trec/bad/text.txt", "<DOC>\n<DOCNO>a</DOCNO>\n<TEXT>\nnever closed\n</DOC>\n");
    expect_error([&] { read_all(text, trec); }, text.string(), 3,
                 "<TEXT> without </TEXT> before </DOC>");
    auto outside = write("trec/bad/outside.txt", "<DOC><DOCNO>a</DOCNO></DOC>\nstray words\n");
    expect_error([&] { read_all(outside, trec); }, outside.string(), 2,
                 "expected <DOC>, found 'stray words' (text outside <DOC>...</DOC>)");
    auto utf8 =
        write("trec/bad/utf8.txt", "<DOC>\n<DOCNO>a</DOCNO>\n<TEXT>caf\xC3</TEXT>\n</DOC>\n");
    expect_error([&] { read_all(utf8, trec); }, utf8.string(), 3, "invalid UTF-8 at byte 10");
}

TEST(TrecReader, SkipBadResynchronisesAtTheNextDocument) {
    std::string good;
    for (int i = 0; i < 20; ++i) {
        good += "<DOC>\n<DOCNO>d" + std::to_string(i) + "</DOCNO>\n<TEXT>t" + std::to_string(i) +
                "</TEXT>\n</DOC>\n";
    }
    // One bad document of 21 (< 10 %): a broken byte inside it, then an unterminated one.
    auto p =
        write("trec/skip.txt", "<DOC>\n<DOCNO>bad</DOCNO>\n<TEXT>\xFF</TEXT>\n</DOC>\n" + good);
    std::uint64_t skipped = 0;
    auto docs = read_all(p, opts(CorpusFormat::Trec, true), &skipped);
    ASSERT_EQ(docs.size(), 20u);
    EXPECT_EQ(docs[0].id, "d0");
    EXPECT_EQ(docs[19].text, "t19");
    EXPECT_EQ(skipped, 1u);
    auto q = write("trec/skip2.txt", "<DOC>\n<DOCNO>open</DOCNO>\n" + good);
    docs = read_all(q, opts(CorpusFormat::Trec, true), &skipped);
    ASSERT_EQ(docs.size(), 20u);
    EXPECT_EQ(docs[0].id, "d0");
    EXPECT_EQ(skipped, 1u);
}

TEST(TrecReader, FolderInPathOrderSkippingReadmeAndDtd) {
    write("trecdir/b/fr2.gz", "");  // replaced below by gzip data
    write_gz("trecdir/b/fr2.gz", "<DOC><DOCNO>FR2</DOCNO><TEXT>second</TEXT></DOC>\n");
    write("trecdir/a1", "<DOC><DOCNO>A1</DOCNO><TEXT>first</TEXT></DOC>\n");
    write("trecdir/README.txt", "not a document file\n");
    write("trecdir/dtds/fr.dtd", "<!ELEMENT DOC>\nnonsense\n");
    write("trecdir/.hidden", "junk\n");
    write("trecdir/c", "<DOC><DOCNO>C</DOCNO><TEXT>third</TEXT></DOC>\n");
    EXPECT_EQ(plumb::index::detect_corpus_format(root() / "trecdir"), CorpusFormat::Trec);
    CorpusReader r(root() / "trecdir", opts(CorpusFormat::Trec));
    Document d;
    std::vector<std::string> ids, names;
    while (r.next(d)) {
        ids.push_back(d.id);
        names.push_back(fs::path(r.name()).filename().string());
    }
    EXPECT_EQ(ids, (std::vector<std::string>{"A1", "FR2", "C"}));  // a1 < b/fr2.gz < c
    EXPECT_EQ(names, (std::vector<std::string>{"a1", "fr2.gz", "c"}));
    EXPECT_EQ(r.bytes_read(), r.size_bytes());
    // An empty folder is an error, not an empty corpus.
    fs::create_directories(root() / "emptydir");
    EXPECT_THROW(CorpusReader(root() / "emptydir", opts(CorpusFormat::Trec)), plumb::IoError);
}

// ---------------------------------------------------------------------------------------------
// HTML documents
// ---------------------------------------------------------------------------------------------

namespace {
const std::string kCacm1 =
    "<html>\n<pre>\n\n\nCA581203 JB March 22, 1978  8:28 PM\n\nPreliminary Report-International "
    "Algebraic Language\n\nCACM December, 1958\n\nPerlis, A. J.\nSamelson,K.\n\n</pre>\n"
    "</html>\n";
}  // namespace

TEST(HtmlReader, TarballLikeCacm) {
    auto p = write_tar("html/cacm.tar.gz",
                       {{"cacm/", ""},
                        {"cacm/CACM-0001.html", kCacm1},
                        {"cacm/CACM-0002.html", "<pre>Extraction of Roots &amp; Powers</pre>"},
                        {"cacm/._CACM-0001.html", "\x00\x05\x16\x07 mac resource fork"},
                        {"cacm/notes.htm", "<p>kept &lt;as is&gt;</p>"}},
                       true);
    EXPECT_EQ(plumb::index::detect_corpus_format(p), CorpusFormat::Html);
    CorpusReader r(p, opts(CorpusFormat::Html));
    Document d;
    ASSERT_TRUE(r.next(d));
    EXPECT_EQ(d.id, "CACM-0001");
    EXPECT_EQ(d.text,
              "CA581203 JB March 22, 1978 8:28 PM Preliminary Report-International Algebraic "
              "Language CACM December, 1958 Perlis, A. J. Samelson,K.");
    EXPECT_EQ(r.name(), p.string() + "/cacm/CACM-0001.html");
    EXPECT_EQ(r.line_number(), 0u);
    ASSERT_TRUE(r.next(d));
    EXPECT_EQ(d.id, "CACM-0002");
    EXPECT_EQ(d.text, "Extraction of Roots & Powers");
    ASSERT_TRUE(r.next(d));
    EXPECT_EQ(d.id, "notes.htm");  // Anserini strips ".html" only
    EXPECT_EQ(d.text, "kept <as is>");
    EXPECT_FALSE(r.next(d));
    EXPECT_GT(r.bytes_read(), 0u);

    auto plain = write_tar("html/plain.tar", {{"x.html", "<b>x</b>"}}, false);
    auto docs = read_all(plain, opts(CorpusFormat::Html));
    ASSERT_EQ(docs.size(), 1u);
    EXPECT_EQ(docs[0].id, "x");
}

TEST(HtmlReader, FolderBomCrlfEmptyAndErrors) {
    write("htmldir/b.html", "\xEF\xBB\xBF<html><body>b&nbsp;text</body></html>\r\n");
    write("htmldir/a.html", "");
    write("htmldir/sub/c.html", "<p>c\r\nline</p>");
    write("htmldir/.DS_Store", "junk");
    write_tar("htmldir/more.tgz", {{"d.html", "d"}}, true);
    EXPECT_EQ(plumb::index::detect_corpus_format(root() / "htmldir"), CorpusFormat::Html);
    auto docs = read_all(root() / "htmldir", opts(CorpusFormat::Html));
    ASSERT_EQ(docs.size(), 4u);
    EXPECT_EQ(docs[0].id, "a");
    EXPECT_EQ(docs[0].text, "");  // an empty document is valid
    EXPECT_EQ(docs[1].id, "b");
    EXPECT_EQ(docs[1].text, "b text");
    EXPECT_EQ(docs[2].id, "d");  // more.tgz sorts before sub/
    EXPECT_EQ(docs[3].id, "c");
    EXPECT_EQ(docs[3].text, "c line");

    auto bad =
        write_tar("html/bad.tgz", {{"ok.html", "fine"}, {"bad.html", "line one\nx\xC3(\n"}}, true);
    expect_error([&] { read_all(bad, opts(CorpusFormat::Html)); }, bad.string() + "/bad.html", 2,
                 "invalid UTF-8 at byte 2");
    auto corrupt = write("html/corrupt.tgz", "\x1f\x8b\x08\x00garbage");
    EXPECT_THROW(read_all(corrupt, opts(CorpusFormat::Html)), plumb::IoError);
}

// ---------------------------------------------------------------------------------------------
// TREC topics
// ---------------------------------------------------------------------------------------------

namespace {
// Robust04-style topics (the layout of topics.301-450.txt), plus a TREC 2018 Core-style one
// with closing tags and a title on the line after <title>.
const std::string kTopics =
    "<top>\n\n<num> Number: 301 \n<title> International Organized Crime \n\n<desc> "
    "Description: \nIdentify organizations that participate in international criminal\n"
    "activity.\n\n<narr> Narrative: \nA relevant document must as a minimum identify.\n\n"
    "</top>\n\n\n<top>\n<num> Number: 302\n<title> Poliomyelitis and Post-Polio\n\n<desc> "
    "Description:\nIs the disease of Poliomyelitis (polio) under control?\n\n<narr> Narrative:\n"
    "Relevant documents should contain data.\n</top>\n"
    "<top>\n<num>321</num>\n<title>\nwomen in parliaments\n</title>\n<desc>\nPertinent "
    "documents.\n</desc>\n<narr>\nnone\n</narr>\n</top>\n";
}  // namespace

TEST(TrecTopics, FieldsLikeAnserini) {
    auto p = write("topics/robust.txt", kTopics);
    auto t = plumb::index::read_topics(p);  // default: title
    ASSERT_EQ(t.size(), 3u);
    EXPECT_EQ(t[0].id, "301");
    EXPECT_EQ(t[0].text, "International Organized Crime");
    EXPECT_EQ(t[1].id, "302");
    EXPECT_EQ(t[1].text, "Poliomyelitis and Post-Polio");
    EXPECT_EQ(t[2].id, "321");
    EXPECT_EQ(t[2].text, "women in parliaments");

    plumb::index::TopicReadOptions o;
    o.fields = plumb::index::parse_topic_fields("description");
    t = plumb::index::read_topics(p, o);
    EXPECT_EQ(t[0].text,
              "Identify organizations that participate in international criminal activity.");
    EXPECT_EQ(t[2].text, "Pertinent documents.");
    o.fields = plumb::index::parse_topic_fields("title+description");
    t = plumb::index::read_topics(p, o);
    EXPECT_EQ(
        t[1].text,
        "Poliomyelitis and Post-Polio Is the disease of Poliomyelitis (polio) under control?");
    o.fields = plumb::index::parse_topic_fields("narr");
    t = plumb::index::read_topics(p, o);
    EXPECT_EQ(t[0].text, "A relevant document must as a minimum identify.");
    EXPECT_THROW(plumb::index::parse_topic_fields("title+summary"), plumb::InvalidArgument);

    // CRLF and CR-only line ends and a BOM give the same topics.
    std::string crlf = "\xEF\xBB\xBF", cr;
    for (char c : kTopics) {
        if (c == '\n') {
            crlf += "\r\n";
            cr += '\r';
        } else {
            crlf += c;
            cr += c;
        }
    }
    for (const auto& [name, text] :
         std::map<std::string, std::string>{{"crlf", crlf}, {"cr", cr}}) {
        auto q = write("topics/" + name + ".txt", text);
        auto u = plumb::index::read_topics(q);
        ASSERT_EQ(u.size(), 3u) << name;
        EXPECT_EQ(u[0].text, "International Organized Crime") << name;
        EXPECT_EQ(u[2].id, "321") << name;
    }
}

TEST(TrecTopics, MalformedTopicsNameFileAndLine) {
    auto nonum = write("topics/nonum.txt", "<top>\n<title> x\n</top>\n");
    expect_error([&] { plumb::index::read_topics(nonum); }, nonum.string(), 1,
                 "<top> without <num>");
    auto open = write("topics/open.txt",
                      "<top>\n<num> Number: 1\n<title> a\n\n<top>\n"
                      "<num> Number: 2\n<title> b\n</top>\n");
    expect_error([&] { plumb::index::read_topics(open); }, open.string(), 1,
                 "unterminated <top>: a new <top> begins on line 5 before </top>");
    auto eof = write("topics/eof.txt", "<top>\n<num> Number: 1\n<title> a\n");
    expect_error([&] { plumb::index::read_topics(eof); }, eof.string(), 1,
                 "unterminated <top> (end of file before </top>)");
    auto dup = write("topics/dup.txt",
                     "<top>\n<num> 7\n<title> a\n</top>\n<top>\n<num> 7\n"
                     "<title> b\n</top>\n");
    expect_error([&] { plumb::index::read_topics(dup); }, dup.string(), 5,
                 "duplicate query id '7' (first on line 1)");
    auto nodesc = write("topics/nodesc.txt", "<top>\n<num> 7\n<title> a\n</top>\n");
    plumb::index::TopicReadOptions o;
    o.fields = plumb::index::kTopicDescription;
    expect_error([&] { plumb::index::read_topics(nodesc, o); }, nodesc.string(), 1,
                 "topic '7' has no <desc>");
    auto utf8 = write("topics/utf8.txt", "<top>\n<num> 7\n<title> \xE2\x82 x\n</top>\n");
    expect_error([&] { plumb::index::read_topics(utf8); }, utf8.string(), 3,
                 "invalid UTF-8 at byte 9");
    auto two = write("topics/two.txt", "<top>\n<num> 7\n<title> a\n<title> b\n</top>\n");
    expect_error([&] { plumb::index::read_topics(two); }, two.string(), 4,
                 "second <title> in one topic (first on line 3)");
}

// ---------------------------------------------------------------------------------------------
// BEIR folders
// ---------------------------------------------------------------------------------------------

TEST(BeirFolder, CorpusAndQueries) {
    write("beir/scifact/corpus.jsonl",
          "{\"_id\": \"4983\", \"title\": \"Microstructural development\", \"text\": \"Alterations "
          "of the architecture\", \"metadata\": {}}\n{\"_id\": \"5836\", \"title\": \"\", "
          "\"text\": \"Induction\"}\n");
    write("beir/scifact/queries.jsonl",
          "{\"_id\": \"1\", \"text\": \"0-dimensional biomaterials\","
          " \"metadata\": {}}\n");
    write("beir/scifact/qrels/test.tsv", "query-id\tcorpus-id\tscore\n1\t4983\t1\n");
    const fs::path dir = root() / "beir/scifact";
    EXPECT_EQ(plumb::index::detect_corpus_format(dir), CorpusFormat::Jsonl);
    auto docs = read_all(dir, opts(CorpusFormat::Jsonl));
    ASSERT_EQ(docs.size(), 2u);
    EXPECT_EQ(docs[0].id, "4983");
    EXPECT_EQ(docs[0].title, "Microstructural development");
    EXPECT_EQ(docs[0].text, "Alterations of the architecture");
    auto q = plumb::index::read_topics(dir);
    ASSERT_EQ(q.size(), 1u);
    EXPECT_EQ(q[0].text, "0-dimensional biomaterials");
    auto q2 = plumb::index::read_topics(dir / "queries.jsonl");
    EXPECT_EQ(q2[0].id, "1");
    // A folder that is neither BEIR nor given a folder format is a clear error.
    fs::create_directories(root() / "beir/none");
    EXPECT_THROW(CorpusReader(root() / "beir/none", opts(CorpusFormat::Tsv)), plumb::IoError);
}

// ---------------------------------------------------------------------------------------------
// Detection and the --skip-bad rule
// ---------------------------------------------------------------------------------------------

TEST(CollectionFormat, DetectionByContent) {
    using plumb::index::detect_corpus_format;
    EXPECT_EQ(detect_corpus_format(write("detect/docs.txt", "\n  <DOC>\n<DOCNO>1</DOCNO>")),
              CorpusFormat::Trec);
    EXPECT_EQ(detect_corpus_format(write_gz("detect/docs.gz", "<DOC>\n")), CorpusFormat::Trec);
    EXPECT_EQ(detect_corpus_format(write("detect/c.tsv", "1\t<DOC> text\n")), CorpusFormat::Tsv);
    EXPECT_EQ(detect_corpus_format(write("detect/page.html", "x")), CorpusFormat::Html);
    EXPECT_EQ(detect_corpus_format("x/y.tgz"), CorpusFormat::Html);
    EXPECT_EQ(detect_corpus_format("x/y.TAR.GZ"), CorpusFormat::Html);
    EXPECT_EQ(detect_corpus_format("-"), CorpusFormat::Tsv);
    EXPECT_EQ(plumb::index::parse_corpus_format("trec"), CorpusFormat::Trec);
    EXPECT_EQ(plumb::index::parse_corpus_format("HTML"), CorpusFormat::Html);
    EXPECT_STREQ(plumb::index::corpus_format_name(CorpusFormat::Trec), "trec");
}

TEST(CollectionFormat, SkipBadNeverTurnsAWrongFormatIntoAnEmptyCorpus) {
    auto jsonl = write("wrong/corpus.tsv",
                       "{\"_id\": \"1\", \"text\": \"a\"}\n"
                       "{\"_id\": \"2\", \"text\": \"b\"}\n");
    expect_error([&] { read_all(jsonl, opts(CorpusFormat::Tsv, true)); }, jsonl.string(), 1,
                 "expected MS MARCO TSV (id<TAB>text) but the file looks like JSONL: no record "
                 "parsed (2 bad; first error: expected id<TAB>text, found no TAB)");
    auto trec = write("wrong/trec.jsonl", kTrecSample);
    expect_error([&] { read_all(trec, opts(CorpusFormat::Jsonl, true)); }, trec.string(), 1,
                 "expected BEIR JSONL ({\"_id\": ..., \"text\": ...}) but the file looks like "
                 "TREC SGML documents (<DOC>): no record parsed");
    auto tsv = write("wrong/c.trec", "1\tone\n2\ttwo\n");
    expect_error([&] { read_all(tsv, opts(CorpusFormat::Trec, true)); }, tsv.string(), 1,
                 "expected TREC SGML (<DOC><DOCNO>...</DOCNO>...</DOC>) but the file looks like "
                 "TSV with 2 TAB-separated fields: no record parsed");
    // 2 bad lines of 10 (20 %) exceed the default 10 %; allowed with a larger share.
    std::string mixed;
    for (int i = 0; i < 8; ++i) mixed += std::to_string(i) + "\ttext\n";
    mixed += "no tab\nnone either\n";
    auto m = write("wrong/mixed.tsv", mixed);
    expect_error([&] { read_all(m, opts(CorpusFormat::Tsv, true)); }, m.string(), 9,
                 "expected MS MARCO TSV (id<TAB>text): 2 of 10 records are bad, more than the 10 "
                 "% that --skip-bad tolerates (max_bad_share); first error: expected "
                 "id<TAB>text, found no TAB");
    auto o = opts(CorpusFormat::Tsv, true);
    o.max_bad_share = 0.2;
    std::uint64_t skipped = 0;
    EXPECT_EQ(read_all(m, o, &skipped).size(), 8u);
    EXPECT_EQ(skipped, 2u);
    // Topics: a TREC topics file read... is detected; a JSONL file named .tsv is not.
    auto qt = write("wrong/q.tsv", "{\"_id\": \"1\", \"text\": \"a\"}\n");
    expect_error([&] { plumb::index::read_topics(qt, true); }, qt.string(), 1,
                 "expected topics TSV (qid<TAB>query) but the file looks like JSONL: no record "
                 "parsed");
}
