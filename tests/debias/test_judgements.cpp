// debias::read_qrels reads TREC and BEIR qrels with eval::Qrels::load.
#include <gtest/gtest.h>

#include <fstream>

#include "debias/judgements.hpp"
#include "plugin/error.hpp"
#include "tests/support/errors.hpp"
#include "tests/test_tmp.hpp"

namespace fs = std::filesystem;

TEST(DebiasReadQrels, TrecAndBeir) {
    fs::path dir = plumb::test::process_dir("plumb_test_judgements_");
    fs::create_directories(dir);
    std::ofstream(dir / "q.txt") << "# comment\n1 0 a 2\n1 0 b 0\n";
    std::ofstream(dir / "test.tsv") << "query-id\tcorpus-id\tscore\n1\ta\t2\n2\tc\t1\n";
    std::ofstream(dir / "bad.tsv") << "1\ta\t2\n2 0 c 1\n";
    auto t = plumb::debias::read_qrels(dir / "q.txt");
    ASSERT_EQ(t.size(), 2u);
    EXPECT_EQ(t[0].docid, "a");
    EXPECT_EQ(t[0].relevance, 2);
    auto b = plumb::debias::read_qrels(dir / "test.tsv");
    ASSERT_EQ(b.size(), 2u);
    EXPECT_EQ(b[1].qid, "2");
    EXPECT_EQ(b[1].docid, "c");
    EXPECT_EQ(b[1].relevance, 1);
    EXPECT_EQ(plumb::test::parse_error_line([&] { plumb::debias::read_qrels(dir / "bad.tsv"); }),
              2u);
    // eval::Qrels' rule: a (qid, docid) judged twice is an error at the second line.
    std::ofstream(dir / "dup.txt") << "1 0 a 1\n2 0 a 1\n1 0 a 2\n";
    EXPECT_EQ(plumb::test::parse_error_line([&] { plumb::debias::read_qrels(dir / "dup.txt"); }),
              3u);
}
