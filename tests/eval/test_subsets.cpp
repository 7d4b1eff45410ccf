// Survivorship subsets (paper 002, Appendix A) and qid lists, hand-computed.

#include <gtest/gtest.h>

#include "eval/subsets.hpp"
#include "plugin/error.hpp"
#include "tests/support/parse_error.hpp"
#include "tests/support/temp_dir.hpp"

using plumb::test::expect_parse_error;
using plumb::test::TempDir;
using namespace plumb::eval;

namespace {
// q1 selected at rank 2; q2 at ranks 1 and 3; q3 unanswered; q4 at rank 3 (lines unordered).
const char* kShown =
    "# qid rank docid is_selected\n"
    "q1\t1\tp11\t0\nq1\t2\tp12\t1\nq1\t3\tp13\t0\n"
    "q2\t3\tp23\t1\nq2\t1\tp21\t1\nq2\t2\tp22\t0\n"
    "q3\t1\tp31\t0\nq3\t2\tp32\t0\n"
    "\n"
    "q4\t1\tp41\t0\nq4\t3\tp43\t1\nq4\t2\tp42\t0\n";
}  // namespace

TEST(Subsets, ReadShownRanksAndSubsets) {
    const TempDir dir;
    auto s = read_shown_ranks(dir.write("shown.tsv", kShown));
    ASSERT_EQ(s.queries.size(), 4u);
    EXPECT_EQ(s.max_rank, 3u);
    EXPECT_EQ(s.queries[1].qid, "q2");
    EXPECT_EQ(s.queries[1].passages[0].docid, "p21");  // sorted by rank
    EXPECT_EQ(*s.queries[1].first_selected, 1u);
    EXPECT_FALSE(s.queries[2].first_selected.has_value());
    EXPECT_EQ(subset_qids(s, 3), (std::vector<std::string>{"q1", "q2", "q4"}));
    EXPECT_EQ(subset_qids(s, 2), (std::vector<std::string>{"q1", "q2"}));
    EXPECT_EQ(subset_qids(s, 1), (std::vector<std::string>{"q2"}));
    EXPECT_THROW(subset_qids(s, 0), plumb::InvalidArgument);
}

TEST(Subsets, SurvivorshipTableByHand) {
    const TempDir dir;
    auto s = read_shown_ranks(dir.write("shown2.tsv", kShown));
    // RR@10 per query. Run A: q1 0.5, q2 1, q3 absent (0), q4 0.25.
    // Run B: q1 1, q2 0.5, q3 0.2, q4 absent (0).
    std::vector<std::unordered_map<std::string, double>> runs{
        {{"q1", 0.5}, {"q2", 1.0}, {"q4", 0.25}}, {{"q1", 1.0}, {"q2", 0.5}, {"q3", 0.2}}};
    auto t = survivorship_table(s, runs);
    ASSERT_EQ(t.size(), 4u);  // All, 3, 2, 1
    // All (4 queries): A (0.5+1+0+0.25)/4 = 0.4375; B (1+0.5+0.2+0)/4 = 0.425.
    EXPECT_EQ(t[0].label, "All");
    EXPECT_EQ(t[0].num_queries, 4u);
    EXPECT_DOUBLE_EQ(t[0].means[0], 0.4375);
    EXPECT_DOUBLE_EQ(t[0].means[1], 0.425);
    // S_3 = {q1,q2,q4}: A 1.75/3, B 1.5/3.
    EXPECT_EQ(t[1].label, "3");
    EXPECT_EQ(t[1].num_queries, 3u);
    EXPECT_NEAR(t[1].means[0], 1.75 / 3.0, 1e-15);
    EXPECT_NEAR(t[1].means[1], 0.5, 1e-15);
    // S_2 = {q1,q2}: A 0.75, B 0.75. S_1 = {q2}: A 1, B 0.5.
    EXPECT_DOUBLE_EQ(t[2].means[0], 0.75);
    EXPECT_DOUBLE_EQ(t[2].means[1], 0.75);
    EXPECT_EQ(t[3].k, 1u);
    EXPECT_DOUBLE_EQ(t[3].means[0], 1.0);
    EXPECT_DOUBLE_EQ(t[3].means[1], 0.5);
    // max_k = 1: All and S_1 only.
    EXPECT_EQ(survivorship_table(s, runs, 1).size(), 2u);
}

TEST(Subsets, UnansweredByType) {
    const TempDir dir;
    auto s = read_shown_ranks(dir.write("shown3.tsv", kShown));
    std::unordered_map<std::string, std::string> types{
        {"q1", "NUMERIC"}, {"q2", "DESCRIPTION"}, {"q3", "NUMERIC"}};
    auto rows = unanswered_by_type(s, types);
    // all: 4 queries, 1 unanswered (q3). "(none)": q4 (answered); DESCRIPTION: q2 (answered);
    // NUMERIC: q1 answered, q3 unanswered -> 1/2.
    ASSERT_EQ(rows.size(), 4u);
    EXPECT_EQ(rows[0].type, "all");
    EXPECT_EQ(rows[0].total, 4u);
    EXPECT_EQ(rows[0].unanswered, 1u);
    EXPECT_DOUBLE_EQ(rows[0].share, 0.25);
    EXPECT_EQ(rows[1].type, "(none)");
    EXPECT_EQ(rows[2].type, "DESCRIPTION");
    EXPECT_EQ(rows[2].unanswered, 0u);
    EXPECT_EQ(rows[3].type, "NUMERIC");
    EXPECT_EQ(rows[3].total, 2u);
    EXPECT_DOUBLE_EQ(rows[3].share, 0.5);
    EXPECT_EQ(unanswered_by_type(s, {}).size(), 1u);
}

TEST(Subsets, BadInputNamesLine) {
    const TempDir dir;
    auto line_of = [&](const std::string& name, const std::string& content) {
        const auto e = expect_parse_error([&] { read_shown_ranks(dir.write(name, content)); });
        EXPECT_NE(std::string(e.what()).find(name), std::string::npos);
        return e.line();
    };
    EXPECT_EQ(line_of("fields.tsv", "q1\t1\tp\t0\nq1\t2\tp2\n"), 2u);
    EXPECT_EQ(line_of("rank0.tsv", "q1\t0\tp\t0\n"), 1u);
    EXPECT_EQ(line_of("rankx.tsv", "q1\t1x\tp\t0\n"), 1u);
    EXPECT_EQ(line_of("sel.tsv", "q1\t1\tp\tyes\n"), 1u);
    EXPECT_EQ(line_of("duprank.tsv", "q1\t1\tp\t0\nq2\t1\tp\t0\nq1\t1\tpp\t1\n"), 3u);
    EXPECT_EQ(line_of("dupdoc.tsv", "q1\t1\tp\t0\nq1\t2\tp\t1\n"), 2u);
    EXPECT_THROW(read_shown_ranks("/nonexistent/shown.tsv"), plumb::IoError);

    auto ids = read_qid_list(dir.write("qids.txt", "q2\n# c\n\nq1 extra\nq2\n"));
    EXPECT_EQ(ids, (std::vector<std::string>{"q2", "q1"}));
}

TEST(Subsets, QuerySubsetFilesWithAndWithoutLabels) {
    const TempDir dir;
    using V = std::vector<std::string>;
    // Bare qids (a header and a comment skipped, a repeat kept once, CRLF line ends).
    EXPECT_EQ(read_query_subset(dir.write("bare.txt", "qid\r\nq3\r\n# note\r\nq1\r\nq3\r\n")),
              (V{"q3", "q1"}));
    // TAB form: the label is the last field; without a label every qid is kept.
    const auto tsv = dir.write("labels.tsv",
                               "query_id\ttext\tlabel\nq1\tshe runs\tf\n"
                               "q2\the runs\tm\nq3\tit runs\tn\nq4\ther dog\tf\n");
    EXPECT_EQ(read_query_subset(tsv, "f"), (V{"q1", "q4"}));
    EXPECT_EQ(read_query_subset(tsv, "m"), (V{"q2"}));
    EXPECT_EQ(read_query_subset(tsv), (V{"q1", "q2", "q3", "q4"}));
    // Comma form (qid,text,...,label), fields trimmed.
    EXPECT_EQ(read_query_subset(dir.write("labels.csv", "q7, a, b , m\nq8,c,f\n"), "m"), (V{"q7"}));
    // With a label, a line without a label field is an error naming the file and line.
    try {
        read_query_subset(dir.write("nolabel.tsv", "q1\tx\tf\nq2\n"), "f");
        ADD_FAILURE() << "no error";
    } catch (const plumb::ParseError& e) {
        EXPECT_EQ(e.line(), 2u);
        EXPECT_NE(std::string(e.what()).find("nolabel.tsv"), std::string::npos) << e.what();
    }
    EXPECT_THROW(read_query_subset(dir.write("empty_qid.csv", ",x,f\n"), "f"), plumb::ParseError);
}
