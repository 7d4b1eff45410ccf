// Qrels::load and Qrels::parse read BEIR's qrels TSV (`query-id corpus-id score`, header line
// optional) as well as TREC's four columns; the first judgement line fixes the layout.
#include <gtest/gtest.h>

#include "eval/qrels.hpp"
#include "plugin/error.hpp"
#include "tests/support/temp_dir.hpp"

using plumb::eval::Qrels;
using plumb::test::TempDir;

namespace {
long grade(const Qrels& q, const std::string& qid, const std::string& docid) {
    const auto* qq = q.find(qid);
    if (!qq) return -999;
    const long* g = qq->find(docid);
    return g ? *g : -999;
}
}  // namespace

TEST(QrelsBeir, HeaderAndThreeColumns) {
    // BEIR's qrels/test.tsv: TAB-separated with a header line.
    const TempDir dir;
    auto p = dir.write("test.tsv",
                       "query-id\tcorpus-id\tscore\n1\t31715818\t1\n3\t14717500\t1\n"
                       "3\t23389795\t2\n42\tdoc-x\t0\n");
    Qrels q = Qrels::load(p);
    EXPECT_EQ(q.num_queries(), 3u);
    EXPECT_EQ(q.num_judgements(), 4u);
    EXPECT_EQ(grade(q, "1", "31715818"), 1);
    EXPECT_EQ(grade(q, "3", "23389795"), 2);
    EXPECT_EQ(grade(q, "42", "doc-x"), 0);
    EXPECT_EQ(grade(q, "query-id", "corpus-id"), -999);  // the header is no judgement
    EXPECT_EQ(q.find("3")->num_rel(1), 2);

    // Without the header, with a BOM and CRLF line ends, space-separated: the same.
    auto r = dir.write("noheader.tsv",
                       "\xEF\xBB\xBF"
                       "1 31715818 1\r\n3\t14717500\t1\r\n");
    Qrels q2 = Qrels::load(r);
    EXPECT_EQ(q2.num_judgements(), 2u);
    EXPECT_EQ(grade(q2, "3", "14717500"), 1);

    Qrels q3 = Qrels::parse("query-id\tcorpus-id\tscore\nq\td\t3\n", "mem");
    EXPECT_EQ(grade(q3, "q", "d"), 3);
    // TREC files are unchanged.
    Qrels t = Qrels::parse("q 0 d 2\nq 0 e 0\n");
    EXPECT_EQ(grade(t, "q", "d"), 2);
    EXPECT_EQ(t.num_judgements(), 2u);
}

TEST(QrelsBeir, MixedLayoutsAreErrorsNamingTheLine) {
    const TempDir dir;
    auto p = dir.write("mixed.tsv", "query-id\tcorpus-id\tscore\n1\td1\t1\n1 0 d2 1\n");
    try {
        Qrels::load(p);
        FAIL() << "expected ParseError";
    } catch (const plumb::ParseError& e) {
        EXPECT_EQ(e.line(), 3u);
        EXPECT_EQ(e.message(),
                  "malformed qrels line: expected 3 fields 'query-id corpus-id score' (BEIR "
                  "qrels, as on the first line), got 4");
    }
    auto t = dir.write("trec.txt", "1 0 d1 1\n1 d2 1\n");
    try {
        Qrels::load(t);
        FAIL() << "expected ParseError";
    } catch (const plumb::ParseError& e) {
        EXPECT_EQ(e.line(), 2u);
        EXPECT_EQ(e.message(),
                  "malformed qrels line: expected 4 fields 'qid iter docid rel', got 3");
    }
    // A header line anywhere but first is a bad grade; a duplicate is an error.
    EXPECT_THROW(Qrels::parse("1\td1\t1\nquery-id\tcorpus-id\tscore\n"), plumb::ParseError);
    EXPECT_THROW(Qrels::parse("1\td1\t1\n1\td1\t0\n"), plumb::ParseError);
}
