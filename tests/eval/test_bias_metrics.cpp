// RaB/ARaB, PRF/nPRF/|ΔA-PRF| and the LIWC-style category difference on hand-computed cases
// (definitions: FORMULAS.md).

#include <gtest/gtest.h>

#include "eval/bias_metrics.hpp"
#include "plugin/error.hpp"
#include "tests/support/parse_error.hpp"
#include "tests/support/temp_dir.hpp"

using namespace plumb::eval;
using plumb::test::expect_parse_error;
using plumb::test::TempDir;

namespace {
// tc triples (bias = f - m, f, m): d1 = 2 female words, d2 = 1 male word, d3 = one of each.
BiasTable table() { return {{"d1", {2, 2, 0}}, {"d2", {-1, 0, 1}}, {"d3", {0, 1, 1}}}; }
}  // namespace

TEST(RankBias, OneQueryByHand) {
    std::vector<std::string> r{"d1", "d2", "d3"};
    auto t = table();
    // t = 2: RaB f = (2+0)/2 = 1, m = (0+1)/2 = 0.5, bias = m - f = -0.5.
    // ARaB_2 = mean(RaB_1, RaB_2): f = (2 + 1)/2 = 1.5, m = (0 + 0.5)/2 = 0.25, bias = -1.25.
    auto q2 = query_rank_bias(r, t, 2);
    EXPECT_DOUBLE_EQ(q2.rab.female, 1.0);
    EXPECT_DOUBLE_EQ(q2.rab.male, 0.5);
    EXPECT_DOUBLE_EQ(q2.rab.bias, -0.5);
    EXPECT_DOUBLE_EQ(q2.arab.female, 1.5);
    EXPECT_DOUBLE_EQ(q2.arab.male, 0.25);
    EXPECT_DOUBLE_EQ(q2.arab.bias, -1.25);
    // t = 3: RaB f = 3/3 = 1, m = 2/3. ARaB f = (2 + 1 + 1)/3 = 4/3, m = (0 + 1/2 + 2/3)/3 = 7/18.
    auto q3 = query_rank_bias(r, t, 3);
    EXPECT_DOUBLE_EQ(q3.rab.female, 1.0);
    EXPECT_NEAR(q3.rab.male, 2.0 / 3.0, 1e-15);
    EXPECT_NEAR(q3.arab.female, 4.0 / 3.0, 1e-15);
    EXPECT_NEAR(q3.arab.male, 7.0 / 18.0, 1e-15);
    // A cutoff beyond the list uses the whole list (t' <= list length only).
    auto q10 = query_rank_bias(r, t, 10);
    EXPECT_DOUBLE_EQ(q10.arab.female, q3.arab.female);
    EXPECT_DOUBLE_EQ(q10.rab.male, q3.rab.male);
    EXPECT_THROW(query_rank_bias(r, t, 0), plumb::InvalidArgument);
}

TEST(RankBias, QuerySetMeansEmptyAndMissing) {
    auto t = table();
    std::vector<QueryRanking> qs{{"q1", {"d1", "d2", "d3"}}, {"q2", {"d2"}}, {"q3", {}}};
    std::vector<std::size_t> cut{2};
    auto s = rank_bias(qs, t, cut);
    ASSERT_EQ(s.size(), 1u);
    // q1 RaB_2 (f 1, m 0.5); q2 RaB_2 over its 1 passage (f 0, m 1): means f 0.5, m 0.75,
    // bias = 0.75 - 0.5 = 0.25. ARaB: q1 (1.5, 0.25), q2 (0, 1): f 0.75, m 0.625, bias -0.125.
    EXPECT_EQ(s[0].queries, 2u);
    EXPECT_EQ(s[0].empty, 1u);
    EXPECT_DOUBLE_EQ(s[0].rab.female, 0.5);
    EXPECT_DOUBLE_EQ(s[0].rab.male, 0.75);
    EXPECT_DOUBLE_EQ(s[0].rab.bias, 0.25);
    EXPECT_DOUBLE_EQ(s[0].arab.female, 0.75);
    EXPECT_DOUBLE_EQ(s[0].arab.male, 0.625);
    EXPECT_DOUBLE_EQ(s[0].arab.bias, -0.125);

    // Missing passage dX counts as (0,0,0): [dX, d1] at t = 2: RaB f = 1, m = 0;
    // ARaB f = (0 + 1)/2 = 0.5.
    std::vector<QueryRanking> miss{{"q4", {"dX", "d1"}}};
    auto m = rank_bias(miss, t, cut);
    EXPECT_EQ(m[0].missing, 1u);
    EXPECT_DOUBLE_EQ(m[0].rab.female, 1.0);
    EXPECT_DOUBLE_EQ(m[0].arab.female, 0.5);
    EXPECT_THROW(rank_bias(miss, t, cut, {true}), plumb::InvalidArgument);
}

TEST(Prf, OneQueryByHand) {
    // Candidates: 0 (R 3, relevant, male), 1 (R 2, non-rel), 2 (R 1, relevant, female),
    // 3 (R 0.5, non-rel, label +1 but non-relevant -> g0). n0 = 2.
    // PRF_m = (1[3>=2] + 1[3>=0.5]) / (1·2) = 1; PRF_f = (1[1>=2] + 1[1>=0.5]) / 2 = 0.5.
    // nPRF_m = ½·9·2 / 2 = 4.5; nPRF_f = ½·1·1 / 2 = 0.25.
    std::vector<double> s{3, 2, 1, 0.5};
    bool rel[] = {true, false, true, false};
    std::vector<int> l{1, 0, -1, 1};
    auto q = query_prf(s, rel, l);
    EXPECT_EQ(q.n0, 2u);
    EXPECT_EQ(q.n1_male, 1u);
    EXPECT_EQ(q.n1_female, 1u);
    EXPECT_DOUBLE_EQ(*q.prf_male, 1.0);
    EXPECT_DOUBLE_EQ(*q.prf_female, 0.5);
    EXPECT_DOUBLE_EQ(*q.nprf_male, 4.5);
    EXPECT_DOUBLE_EQ(*q.nprf_female, 0.25);
    // Ties count (R_j >= R_k): relevant male at 2 vs non-relevant at 2 -> PRF_m = 1.
    std::vector<double> tie{2, 2};
    bool rel2[] = {true, false};
    std::vector<int> l2{1, 0};
    EXPECT_DOUBLE_EQ(*query_prf(tie, rel2, l2).prf_male, 1.0);
    EXPECT_FALSE(query_prf(tie, rel2, l2).prf_female.has_value());
    // No non-relevant candidate: undefined.
    bool all_rel[] = {true, true};
    EXPECT_FALSE(query_prf(tie, all_rel, l2).prf_male.has_value());
    std::vector<int> bad{2, 0};
    EXPECT_THROW(query_prf(tie, rel2, bad), plumb::InvalidArgument);
    std::vector<int> short_labels{1};
    EXPECT_THROW(query_prf(tie, rel2, short_labels), plumb::InvalidArgument);
}

TEST(Prf, QuerySetDelta) {
    std::vector<ScoredRanking> runs{
        {"q1", {{"a", 3}, {"b", 2}, {"c", 1}, {"d", 0.5}}},
        {"q2", {{"e", 1}, {"f", 5}, {"g", 0}}},
        {"q3", {{"h", 1}}},
    };
    const auto qrels = Qrels::parse("q1 0 a 1\nq1 0 c 2\nq1 0 b 0\nq2 0 e 1\nq3 0 h 1\n");
    std::unordered_map<std::string, int> labels{{"a", 1},  {"c", -1}, {"d", 1}, {"e", 1},
                                                {"h", -1}, {"b", 0},  {"f", 0}};
    // q1: PRF_m 1, PRF_f 0.5 (as above). q2: e (R 1, male) vs f (5), g (0): PRF_m = 1/2.
    // q3: no non-relevant -> undefined. Means: PRF_m = (1 + 0.5)/2 = 0.75, PRF_f = 0.5,
    // |ΔA-PRF| = 0.25. Unlabelled: g only.
    auto s = prf(runs, qrels, labels);
    EXPECT_EQ(s.queries_male, 2u);
    EXPECT_EQ(s.queries_female, 1u);
    EXPECT_DOUBLE_EQ(s.mean_prf_male, 0.75);
    EXPECT_DOUBLE_EQ(s.mean_prf_female, 0.5);
    ASSERT_TRUE(s.delta.has_value());
    EXPECT_DOUBLE_EQ(*s.delta, 0.25);
    EXPECT_EQ(s.unlabelled, 1u);
    ASSERT_EQ(s.per_query.size(), 3u);
    // With relevance threshold 2 only c (grade 2, female, R 1) is relevant in q1, g0 = {a, b, d}:
    // PRF_f = (1[1>=3] + 1[1>=2] + 1[1>=0.5]) / 3 = 1/3. q2 and q3 have no relevant passage.
    auto s2 = prf(runs, qrels, labels, 2);
    EXPECT_EQ(s2.queries_male, 0u);
    EXPECT_EQ(s2.queries_female, 1u);
    EXPECT_NEAR(s2.mean_prf_female, 1.0 / 3.0, 1e-15);
    EXPECT_FALSE(s2.delta.has_value());
}

TEST(Prf, LabelFile) {
    const TempDir dir;
    auto l = read_bias_labels(dir.write("labels.tsv", "# d\nd1\t1\nd2\t-1\n\nd3\t0\n"));
    EXPECT_EQ(l.at("d1"), 1);
    EXPECT_EQ(l.at("d2"), -1);
    EXPECT_EQ(l.at("d3"), 0);
    try {
        read_bias_labels(dir.write("badlabels.tsv", "d1\t1\nd2\tmale\n"));
        FAIL();
    } catch (const plumb::ParseError& e) {
        EXPECT_EQ(e.line(), 2u);
    }
    EXPECT_THROW(read_bias_labels(dir.write("duplabels.tsv", "d1\t1\nd1\t1\n")), plumb::ParseError);
}

TEST(CategoryDifference, ByHand) {
    const TempDir dir;
    auto cv = read_category_vectors(
        dir.write("cats.tsv", "docid\tsocial\taffect\np1\t1\t0\np2\t0\t1\np3\t0.5\t0.5\n"));
    ASSERT_EQ(cv.categories, (std::vector<std::string>{"social", "affect"}));
    std::vector<QueryRanking> a{{"q1", {"p1", "p2"}}, {"q2", {"p1"}}};
    std::vector<QueryRanking> b{{"q3", {"p3", "px"}}};
    // A: q1 -> (0.5, 0.5), q2 -> (1, 0): mean (0.75, 0.25). B: q3 -> p3 only (px missing):
    // (0.5, 0.5). Difference (0.25, -0.25).
    auto d = category_difference(a, b, cv, 10);
    EXPECT_EQ(d.queries_a, 2u);
    EXPECT_EQ(d.queries_b, 1u);
    EXPECT_EQ(d.missing, 1u);
    EXPECT_DOUBLE_EQ(d.mean_a[0], 0.75);
    EXPECT_DOUBLE_EQ(d.mean_a[1], 0.25);
    EXPECT_DOUBLE_EQ(d.difference[0], 0.25);
    EXPECT_DOUBLE_EQ(d.difference[1], -0.25);
    // Paper 001's Table 2 reports |A - B|: (0.25, 0.25).
    EXPECT_DOUBLE_EQ(d.abs_difference[0], 0.25);
    EXPECT_DOUBLE_EQ(d.abs_difference[1], 0.25);
    // k = 1: A -> q1 (1,0), q2 (1,0); difference (0.5, -0.5).
    auto d1 = category_difference(a, b, cv, 1);
    EXPECT_DOUBLE_EQ(d1.difference[0], 0.5);
    EXPECT_DOUBLE_EQ(d1.difference[1], -0.5);
    EXPECT_DOUBLE_EQ(d1.abs_difference[1], 0.5);
    // Groups swapped: B - A = (-0.25, 0.25), absolute (0.25, 0.25).
    auto ds = category_difference(b, a, cv, 10);
    EXPECT_DOUBLE_EQ(ds.difference[0], -0.25);
    EXPECT_DOUBLE_EQ(ds.difference[1], 0.25);
    EXPECT_DOUBLE_EQ(ds.abs_difference[0], 0.25);
    EXPECT_DOUBLE_EQ(ds.abs_difference[1], 0.25);

    auto line_of = [&](const std::string& name, const std::string& content) {
        return expect_parse_error([&] { read_category_vectors(dir.write(name, content)); }).line();
    };
    EXPECT_EQ(line_of("nohdr.tsv", "p1\t1\t0\n"), 1u);
    EXPECT_EQ(line_of("short.tsv", "docid\ta\tb\np1\t1\n"), 2u);
    EXPECT_EQ(line_of("num.tsv", "docid\ta\np1\tx\n"), 2u);
    EXPECT_EQ(line_of("dup.tsv", "docid\ta\np1\t1\np1\t2\n"), 3u);
    EXPECT_EQ(line_of("empty.tsv", ""), 0u);
}

TEST(RankBias, RankingsFromRunUseTrecEvalOrder) {
    // Score descending; equal scores by docid descending (byte-wise), as trec_eval sorts.
    plumb::eval::Run run;
    RunQuery q;
    q.qid = "q1";
    q.add("a", 1.0, 1);
    q.add("c", 2.0, 2);
    q.add("b", 1.0, 3);
    q.add("d", 0.5, 4);
    run.queries.push_back(q);
    auto r = rankings_from_run(run);
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].docids, (std::vector<std::string>{"c", "b", "a", "d"}));
    EXPECT_EQ(rankings_from_run(run, 2)[0].docids, (std::vector<std::string>{"c", "b"}));
    auto s = scored_rankings_from_run(run);
    ASSERT_EQ(s[0].docs.size(), 4u);
    EXPECT_EQ(s[0].docs[1].first, "c");
    EXPECT_EQ(s[0].docs[1].second, 2.0);
}

TEST(BiasFile, VariantComment) {
    const TempDir dir;
    EXPECT_EQ(
        bias_file_variant(dir.write("v.tsv", "# plumb-gender-bias v1 variant=bool\nd\t0\t0\t0\n")),
        BiasVariant::Bool);
    EXPECT_FALSE(bias_file_variant(dir.write("nov.tsv", "d\t0\t0\t0\n")).has_value());
    EXPECT_THROW(bias_file_variant(dir.write("badv.tsv", "# variant=xx\n")), plumb::ParseError);
}
