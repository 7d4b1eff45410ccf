// μ, σ, c_v and query grouping (quantile buckets, fixed edges, categories), hand-computed.

#include <gtest/gtest.h>

#include <cmath>

#include "eval/distribution.hpp"
#include "plugin/error.hpp"
#include "tests/support/parse_error.hpp"
#include "tests/support/temp_dir.hpp"

using plumb::test::expect_parse_error;
using plumb::test::TempDir;
using namespace plumb::eval;

namespace {
QueryAttributes numbered(int n) {
    QueryAttributes a;
    for (int i = 1; i <= n; ++i) a.rows.emplace_back("q" + std::to_string(i), std::to_string(i));
    return a;
}
}  // namespace

TEST(Describe, PopulationAndSample) {
    // 0.2, 0.4, 0.6, 0.8: mean 0.5; squared deviations 0.09, 0.01, 0.01, 0.09 (sum 0.2).
    // Population sd = sqrt(0.2/4) = 0.2236068; sample sd = sqrt(0.2/3) = 0.2581989.
    // c_v (population) = 0.2236068 / 0.5 = 0.4472136.
    std::vector<double> v{0.2, 0.4, 0.6, 0.8};
    auto p = describe(v);
    EXPECT_EQ(p.n, 4u);
    EXPECT_NEAR(p.mean, 0.5, 1e-15);
    EXPECT_NEAR(p.sd, std::sqrt(0.05), 1e-15);
    ASSERT_TRUE(p.cv.has_value());
    EXPECT_NEAR(*p.cv, std::sqrt(0.05) / 0.5, 1e-14);
    auto s = describe(v, SdKind::Sample);
    EXPECT_NEAR(s.sd, std::sqrt(0.2 / 3.0), 1e-15);

    std::vector<double> zero{0.0, 0.0};
    EXPECT_FALSE(describe(zero).cv.has_value());  // μ = 0: c_v undefined
    EXPECT_EQ(describe(std::vector<double>{}).n, 0u);
    EXPECT_EQ(describe(std::vector<double>{0.7}, SdKind::Sample).sd, 0.0);
    std::vector<double> bad{0.1, INFINITY};
    EXPECT_THROW(describe(bad), plumb::InvalidArgument);
}

TEST(Grouping, TercilesLowIsEasy) {
    // Values 1..9: tercile edges by linear interpolation: 1/3 -> position 8/3 = 2.667 ->
    // 3 + 0.667·(4 - 3) = 3.667; 2/3 -> position 5.333 -> 6.333. Buckets (.., 3.667] = easy
    // {1,2,3}, (3.667, 6.333] = medium {4,5,6}, (6.333, ..] = hard {7,8,9}.
    auto g = group_queries(numbered(9), {});
    ASSERT_EQ(g.names, (std::vector<std::string>{"easy", "medium", "hard"}));
    ASSERT_EQ(g.edges.size(), 4u);
    EXPECT_NEAR(g.edges[1], 11.0 / 3.0, 1e-12);
    EXPECT_NEAR(g.edges[2], 19.0 / 3.0, 1e-12);
    EXPECT_EQ(g.group.at("q1"), 0u);
    EXPECT_EQ(g.group.at("q3"), 0u);
    EXPECT_EQ(g.group.at("q4"), 1u);
    EXPECT_EQ(g.group.at("q6"), 1u);
    EXPECT_EQ(g.group.at("q7"), 2u);
    EXPECT_EQ(g.group.at("q9"), 2u);
}

TEST(Grouping, TiesShareABucketAndEdgesAreRightClosed) {
    // 1,1,1,1,2,3: 1/3 quantile -> position 1.667 -> 1; 2/3 -> position 3.333 -> 1 + 0.333 =
    // 1.333. All four 1s are <= 1 -> easy; 2 and 3 > 1.333 -> hard; medium is empty.
    QueryAttributes a;
    const char* vals[] = {"1", "1", "1", "1", "2", "3"};
    for (int i = 0; i < 6; ++i) a.rows.emplace_back("q" + std::to_string(i), vals[i]);
    auto g = group_queries(a, {});
    EXPECT_EQ(g.group.at("q0"), 0u);
    EXPECT_EQ(g.group.at("q3"), 0u);
    EXPECT_EQ(g.group.at("q4"), 2u);
    EXPECT_EQ(g.group.at("q5"), 2u);

    // Fixed edges 3, 6: (-inf,3] (3,6] (6,inf); 3 -> first, 6 -> second, 7 -> third.
    GroupingSpec spec;
    spec.edges = {3, 6};
    auto f = group_queries(numbered(9), spec);
    EXPECT_EQ(f.names, (std::vector<std::string>{"<=3", "(3,6]", ">6"}));
    EXPECT_EQ(f.group.at("q3"), 0u);
    EXPECT_EQ(f.group.at("q4"), 1u);
    EXPECT_EQ(f.group.at("q6"), 1u);
    EXPECT_EQ(f.group.at("q7"), 2u);
    spec.labels = {"low", "mid", "high"};
    EXPECT_EQ(group_queries(numbered(9), spec).names[2], "high");
    spec.labels = {"only-one"};
    EXPECT_THROW(group_queries(numbered(9), spec), plumb::InvalidArgument);
    GroupingSpec bad_edges;
    bad_edges.edges = {5, 5};
    EXPECT_THROW(group_queries(numbered(9), bad_edges), plumb::InvalidArgument);
    GroupingSpec quarters;
    quarters.quantiles = 4;
    EXPECT_EQ(group_queries(numbered(8), quarters).names,
              (std::vector<std::string>{"Q1", "Q2", "Q3", "Q4"}));
}

TEST(Grouping, CategoricalAndStats) {
    const TempDir dir;
    auto attrs = read_query_attributes(dir.write(
        "types.tsv", "# types\nq1\tNUMERIC\nq2\tDESCRIPTION\n\nq3\tNUMERIC\nq4\tPERSON\n"));
    EXPECT_FALSE(attrs.numeric());
    auto g = group_queries(attrs, {});
    EXPECT_EQ(g.names, (std::vector<std::string>{"DESCRIPTION", "NUMERIC", "PERSON"}));
    // Per-group nDCG: NUMERIC q1 0.2, q3 0.6 -> mean 0.4, population sd 0.2, c_v 0.5;
    // DESCRIPTION q2 1.0 -> sd 0; PERSON (q4) not evaluated -> n 0; q5 has no type.
    std::vector<std::string> qids{"q1", "q2", "q3", "q5"};
    std::vector<double> vals{0.2, 1.0, 0.6, 0.9};
    std::size_t unassigned = 0;
    auto st = group_stats(qids, vals, g, SdKind::Population, &unassigned);
    ASSERT_EQ(st.size(), 3u);
    EXPECT_EQ(st[1].name, "NUMERIC");
    EXPECT_EQ(st[1].stats.n, 2u);
    EXPECT_NEAR(st[1].stats.mean, 0.4, 1e-15);
    EXPECT_NEAR(st[1].stats.sd, 0.2, 1e-15);
    EXPECT_NEAR(*st[1].stats.cv, 0.5, 1e-14);
    EXPECT_EQ(st[0].stats.n, 1u);
    EXPECT_EQ(st[2].stats.n, 0u);
    EXPECT_EQ(unassigned, 1u);

    // Categorical forced on numbers; Numeric forced on words fails.
    GroupingSpec cat;
    cat.kind = GroupingKind::Categorical;
    EXPECT_EQ(group_queries(numbered(3), cat).names.size(), 3u);
    GroupingSpec num;
    num.kind = GroupingKind::Numeric;
    EXPECT_THROW(group_queries(attrs, num), plumb::InvalidArgument);
}

TEST(Grouping, AttributeFileErrors) {
    const TempDir dir;
    auto line_of = [&](const std::string& name, const std::string& content) {
        return expect_parse_error([&] { read_query_attributes(dir.write(name, content)); }).line();
    };
    EXPECT_EQ(line_of("notab.tsv", "q1\t1\nq2 2\n"), 2u);
    EXPECT_EQ(line_of("dupq.tsv", "q1\t1\nq2\t2\nq1\t3\n"), 3u);
    EXPECT_EQ(line_of("novalue.tsv", "q1\t\n"), 1u);
    EXPECT_THROW(group_queries(QueryAttributes{}, {}), plumb::InvalidArgument);
    std::vector<double> s{1, 2, 3, 4};
    EXPECT_DOUBLE_EQ(quantile_sorted(s, 0.5), 2.5);  // position 1.5 -> 2 + 0.5
    EXPECT_THROW(quantile_sorted(s, 1.5), plumb::InvalidArgument);
}
