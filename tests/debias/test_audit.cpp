// `plumb audit`'s library (debias/audit.hpp) on a hand-built collection: six queries, three
// passages each, gender words in the passages, query labels, complexity buckets and shown
// rankings. Every number below is derived by hand in the comments (t = 10 > list length 3, so
// every @10 measure covers the three ranked passages).
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "debias/audit.hpp"
#include "debias_test_util.hpp"
#include "plugin/error.hpp"
#include "tests/support/map_source.hpp"

namespace db = plumb::debias;
using namespace debias_test;

namespace {

// Run A: per query, the three passages with scores 3, 2, 1.
const char* kRunA =
    "q1 Q0 p1 1 3 A\nq1 Q0 p2 2 2 A\nq1 Q0 p3 3 1 A\n"
    "q2 Q0 p4 1 3 A\nq2 Q0 p5 2 2 A\nq2 Q0 p6 3 1 A\n"
    "q3 Q0 p7 1 3 A\nq3 Q0 p8 2 2 A\nq3 Q0 p9 3 1 A\n"
    "q4 Q0 p10 1 3 A\nq4 Q0 p11 2 2 A\nq4 Q0 p12 3 1 A\n"
    "q5 Q0 p13 1 3 A\nq5 Q0 p14 2 2 A\nq5 Q0 p15 3 1 A\n"
    "q6 Q0 p16 1 3 A\nq6 Q0 p17 2 2 A\nq6 Q0 p18 3 1 A\n";
// Run B: the same passages in reverse order.
const char* kRunB =
    "q1 Q0 p3 1 3 B\nq1 Q0 p2 2 2 B\nq1 Q0 p1 3 1 B\n"
    "q2 Q0 p6 1 3 B\nq2 Q0 p5 2 2 B\nq2 Q0 p4 3 1 B\n"
    "q3 Q0 p9 1 3 B\nq3 Q0 p8 2 2 B\nq3 Q0 p7 3 1 B\n"
    "q4 Q0 p12 1 3 B\nq4 Q0 p11 2 2 B\nq4 Q0 p10 3 1 B\n"
    "q5 Q0 p15 1 3 B\nq5 Q0 p14 2 2 B\nq5 Q0 p13 3 1 B\n"
    "q6 Q0 p18 1 3 B\nq6 Q0 p17 2 2 B\nq6 Q0 p16 3 1 B\n";
// A on the rotated test set: only q1 changes (p2 first).
const char* kRotatedA =
    "q1 Q0 p2 1 3 A\nq1 Q0 p1 2 2 A\nq1 Q0 p3 3 1 A\n"
    "q2 Q0 p4 1 3 A\nq2 Q0 p5 2 2 A\nq2 Q0 p6 3 1 A\n"
    "q3 Q0 p7 1 3 A\nq3 Q0 p8 2 2 A\nq3 Q0 p9 3 1 A\n"
    "q4 Q0 p10 1 3 A\nq4 Q0 p11 2 2 A\nq4 Q0 p12 3 1 A\n"
    "q5 Q0 p13 1 3 A\nq5 Q0 p14 2 2 A\nq5 Q0 p15 3 1 A\n"
    "q6 Q0 p16 1 3 A\nq6 Q0 p17 2 2 A\nq6 Q0 p18 3 1 A\n";
// Relevant: q1 p2, q2 p4, q3 p9, q4 p11 and p12, q5 p13, q6 p99 (not retrieved).
const char* kQrels =
    "q1 0 p2 1\nq2 0 p4 1\nq3 0 p9 1\nq4 0 p11 1\nq4 0 p12 1\nq5 0 p13 1\nq6 0 p99 1\n";
const char* kWords = "she,f\nher,f\nhe,m\nhim,m\n";
// Gender words: p1 he; p2 she her; p4 he; p6 her; p8 she; p9 him him; p11 he; p13 she; p15 he.
std::unordered_map<std::string, std::string> passages() {
    return {{"p1", "he said"}, {"p2", "she and her"}, {"p3", "nothing"}, {"p4", "he"},
            {"p5", "x"},       {"p6", "her"},         {"p7", "x"},       {"p8", "she"},
            {"p9", "him him"}, {"p10", "y"},          {"p11", "he"},     {"p12", "z"},
            {"p13", "she"},    {"p14", "w"},          {"p15", "he"},     {"p16", "v"},
            {"p17", "u"},      {"p18", "t"}};
}
const char* kQueryLabels = "q1\tn\nq2\tn\nq3\tf\nq4\tn\nq5\tm\nq6\tn\n";
const char* kComplexity =
    "qid\tTTR\tscore\tbucket\tparsed\nq1\t1\t0.1\teasy\t1\nq2\t1\t0.2\teasy\t1\n"
    "q3\t1\t0.5\tmedium\t1\nq4\t1\t0.6\tmedium\t1\nq5\t1\t0.8\thard\t1\nq6\t1\t0.9\thard\t1\n";
// First selected rank: q1 2, q2 1, q3 3, q4 2; q5 and q7 unanswered (q7 neither in the run
// nor judged).
const char* kShown =
    "q1\t1\tp1\t0\nq1\t2\tp2\t1\nq2\t1\tp4\t1\nq3\t1\tp7\t0\nq3\t2\tp8\t0\nq3\t3\tp9\t1\n"
    "q4\t1\tp10\t0\nq4\t2\tp11\t1\nq5\t1\tp13\t0\nq7\t1\tpx\t0\n";

const double kL3 = 1.0 / std::log2(3.0);  // discount of rank 2

struct Collection {
    fs::path dir;
    db::AuditInputs in;
};

Collection full() {
    Collection c{temp_dir(), {}};
    const auto& d = c.dir;
    c.in.runs = {{"A", write(d / "a.run", kRunA), write(d / "a.rot.run", kRotatedA),
                  write(d / "a.mats.json", "{\"mats\": 0.25, \"ats\": []}"), {}},
                 {"B", write(d / "b.run", kRunB), {}, {}, {}}};
    c.in.qrels = write(d / "qrels", kQrels);
    c.in.words = write(d / "words.txt", kWords);
    c.in.documents = std::make_shared<const plumb::test::MapSource>(passages());
    c.in.query_labels = write(d / "qlabels.tsv", kQueryLabels);
    c.in.complexity = write(d / "complexity.tsv", kComplexity);
    c.in.shown_ranks = write(d / "shown.tsv", kShown);
    c.in.query_types = write(d / "types.tsv",
                             "q1\tkeyword\nq2\tkeyword\nq3\thow\nq4\thow\n"
                             "q5\twhat\nq7\twhat\n");
    return c;
}

double mean(std::initializer_list<double> v) {
    double s = 0;
    for (double x : v) s += x;
    return s / static_cast<double>(v.size());
}

double population_sd(std::initializer_list<double> v) {
    const double m = mean(v);
    double s = 0;
    for (double x : v) s += (x - m) * (x - m);
    return std::sqrt(s / static_cast<double>(v.size()));
}

}  // namespace

TEST(Audit, EveryAxisByHand) {
    auto c = full();
    const auto r = db::run_audit(c.in);
    for (const char* axis : {"position", "gender", "complexity", "survivorship"})
        EXPECT_TRUE(r.axis(axis).computed) << axis;

    // Per-query nDCG@10 of A: q1 rel at 2 -> 1/log2(3); q2 at 1 -> 1; q3 at 3 -> 1/2; q4 at 2
    // and 3 -> (1/log2(3) + 1/2) / (1 + 1/log2(3)); q5 1; q6 0 (its relevant not retrieved).
    const double q4 = (kL3 + 0.5) / (1 + kL3);
    const std::initializer_list<double> ndcg_a = {kL3, 1, 0.5, q4, 1, 0};

    // Position: MATS 0.25 (A only). Rotated: q1's relevant p2 moves to rank 1 (nDCG 1, RR 1).
    ASSERT_EQ(r.position.size(), 2u);
    EXPECT_DOUBLE_EQ(*r.position[0].mats, 0.25);
    ASSERT_TRUE(r.position[0].has_delta);
    EXPECT_EQ(r.position[0].paired_queries, 6u);
    const double orig = mean(ndcg_a), deb = mean({1, 1, 0.5, q4, 1, 0});
    EXPECT_NEAR(r.position[0].cells[0].original, orig, 1e-12);
    EXPECT_NEAR(r.position[0].cells[0].debiased, deb, 1e-12);
    EXPECT_NEAR(*r.position[0].cells[0].delta, (deb - orig) / deb, 1e-12);
    // MRR@10: Orig (1/2 + 1 + 1/3 + 1/2 + 1 + 0)/6 = (20/6)/6, Deb (1 + 1 + 1/3 + 1/2 + 1 +
    // 0)/6 = (23/6)/6, so Δ = (23/6 - 20/6) / (23/6) = 3/23.
    EXPECT_NEAR(*r.position[0].cells[1].delta, 3.0 / 23.0, 1e-12);
    EXPECT_FALSE(r.position[1].mats);
    EXPECT_FALSE(r.position[1].has_delta);
    // B's missing position inputs are named, the axis is still computed (for A).
    const auto& pm = r.axis("position").missing;
    EXPECT_EQ(pm.size(), 2u);
    EXPECT_NE(pm[0].find("MATS report of run B"), std::string::npos);
    EXPECT_NE(pm[1].find("rotated test set"), std::string::npos);

    // Gender over the neutral queries q1, q2, q4, q6 (tc, male - female, mean over 3 passages):
    // q1 (1 - 2)/3, q2 (1 - 1)/3, q4 (1 - 0)/3, q6 0 -> RaB 0, |RaB| (1/3 + 1/3)/4 = 1/6.
    // ARaB: q1 (RaB@1 1, @2 (1-2)/2, @3 -1/3) -> 1/18; q2 (1, 1/2, 0) -> 1/2; q4 (0, 1/2, 1/3)
    // -> 5/18; q6 0 -> mean 5/24.
    ASSERT_EQ(r.gender.size(), 2u);
    EXPECT_EQ(r.gender_neutral_queries, 4u);
    EXPECT_EQ(r.gender[0].queries, 4u);
    EXPECT_NEAR(r.gender[0].rab.bias, 0.0, 1e-12);
    EXPECT_NEAR(r.gender[0].rab.female, mean({2.0 / 3, 1.0 / 3, 0, 0}), 1e-12);
    EXPECT_NEAR(r.gender[0].abs_rab, 1.0 / 6, 1e-12);
    EXPECT_NEAR(r.gender[0].arab.bias, 5.0 / 24, 1e-12);
    // B ranks the same three passages: RaB@10 (all three) is the same, ARaB differs:
    // q1 (p3 p2 p1: 0, -1, -1/3) -> -4/9; q2 (p6 p5 p4: -1, -1/2, 0) -> -1/2;
    // q4 (p12 p11 p10: 0, 1/2, 1/3) -> 5/18; q6 0 -> mean (-8/18 - 9/18 + 5/18)/4 = -1/6.
    EXPECT_NEAR(r.gender[1].abs_rab, 1.0 / 6, 1e-12);
    EXPECT_NEAR(r.gender[1].arab.bias, -1.0 / 6, 1e-12);
    // |ΔA-PRF| of A over all judged queries, IBBR labels from the word counts:
    // PRF_f q1 (p2 at score 2 vs non-relevant p1 3, p3 1) 1/2, q5 (p13 3 vs 2, 1) 1;
    // PRF_m q2 (p4 3 vs 2, 1) 1, q3 (p9 1 vs 3, 2) 0, q4 (p11 2 vs p10 3) 0 -> |1/3 - 3/4|.
    ASSERT_TRUE(r.gender[0].delta_prf);
    EXPECT_NEAR(*r.gender[0].delta_prf, 5.0 / 12, 1e-12);
    EXPECT_TRUE(r.axis("gender").missing.empty());

    // Complexity (buckets from the TSV): easy {q1, q2}, medium {q3, q4}, hard {q5, q6}.
    ASSERT_EQ(r.complexity.size(), 2u);
    const auto& ca = r.complexity[0];
    ASSERT_EQ(ca.size(), 4u);
    EXPECT_EQ(ca[0].bucket, "all");
    EXPECT_EQ(ca[0].n, 6u);
    EXPECT_NEAR(ca[0].mean, mean(ndcg_a), 1e-12);
    EXPECT_NEAR(ca[0].sd, population_sd(ndcg_a), 1e-12);
    EXPECT_NEAR(*ca[0].cv, population_sd(ndcg_a) / mean(ndcg_a), 1e-12);
    EXPECT_EQ(ca[1].bucket, "easy");
    EXPECT_NEAR(ca[1].mean, (kL3 + 1) / 2, 1e-12);
    EXPECT_NEAR(ca[1].sd, (1 - kL3) / 2, 1e-12);
    EXPECT_EQ(ca[2].bucket, "medium");
    EXPECT_NEAR(ca[2].mean, (0.5 + q4) / 2, 1e-12);
    EXPECT_EQ(ca[3].bucket, "hard");
    EXPECT_NEAR(ca[3].mean, 0.5, 1e-12);
    EXPECT_NEAR(ca[3].sd, 0.5, 1e-12);
    EXPECT_NEAR(*ca[3].cv, 1.0, 1e-12);
    // B: q1 1/log2(3), q2 1/2, q3 1, q4 1 (relevant at 1 and 2), q5 1/2, q6 0.
    EXPECT_NEAR(r.complexity[1][0].mean, mean({kL3, 0.5, 1, 1, 0.5, 0}), 1e-12);

    // Survivorship (MRR@10 of A: q1 1/2, q2 1, q3 1/3, q4 1/2, q5 1): All = the five judged
    // queries of the shown file (q7 has no judgement); S_3 = {q1..q4}; S_2 = {q1, q2, q4};
    // S_1 = {q2}.
    ASSERT_EQ(r.survivorship.size(), 4u);
    EXPECT_EQ(r.survivorship[0].k, 0u);
    EXPECT_EQ(r.survivorship[0].num_queries, 5u);
    EXPECT_NEAR(r.survivorship[0].means[0], (0.5 + 1 + 1.0 / 3 + 0.5 + 1) / 5, 1e-12);
    EXPECT_EQ(r.survivorship[1].k, 3u);
    EXPECT_NEAR(r.survivorship[1].means[0], (0.5 + 1 + 1.0 / 3 + 0.5) / 4, 1e-12);
    EXPECT_NEAR(r.survivorship[2].means[0], 2.0 / 3, 1e-12);
    EXPECT_NEAR(r.survivorship[3].means[0], 1.0, 1e-12);
    // B on S_1 = {q2}: relevant p4 at rank 3.
    EXPECT_NEAR(r.survivorship[3].means[1], 1.0 / 3, 1e-12);
    // Unanswered judged queries by type: q5 (what) only; q7 is not judged.
    ASSERT_EQ(r.unanswered.size(), 4u);
    EXPECT_EQ(r.unanswered[0].type, "all");
    EXPECT_EQ(r.unanswered[0].total, 5u);
    EXPECT_EQ(r.unanswered[0].unanswered, 1u);
    EXPECT_DOUBLE_EQ(r.unanswered[0].share, 0.2);
    EXPECT_EQ(r.unanswered[1].type, "how");
    EXPECT_EQ(r.unanswered[1].unanswered, 0u);
    EXPECT_EQ(r.unanswered[3].type, "what");
    EXPECT_EQ(r.unanswered[3].total, 1u);
    EXPECT_DOUBLE_EQ(r.unanswered[3].share, 1.0);

    // The Markdown lists every axis and the numbers above (4 decimals).
    const auto md = db::audit_markdown(r);
    EXPECT_NE(md.find("| A | 0.2500 |"), std::string::npos) << md;
    EXPECT_NE(md.find("| A | hard | 2 | 0.5000 | 0.5000 | 1.0000 |"), std::string::npos) << md;
    EXPECT_NE(md.find("| S_1 | 1 | 1.0000 | 0.3333 |"), std::string::npos) << md;

    // The folder: report files and one plot per computed axis.
    db::write_audit(r, c.dir / "out");
    for (const char* f : {"audit.md", "audit.json", "position.svg", "gender.svg", "complexity.svg",
                          "survivorship.svg"})
        EXPECT_TRUE(fs::exists(c.dir / "out" / f)) << f;
    for (const char* f : {"position.png", "gender.png", "complexity.png", "survivorship.png"})
        EXPECT_TRUE(is_png(c.dir / "out" / f)) << f;
    const auto j = nlohmann::json::parse(slurp(c.dir / "out" / "audit.json"));
    EXPECT_NEAR(j["gender"]["rows"][0]["delta_prf"].get<double>(), 5.0 / 12, 1e-12);
    EXPECT_TRUE(j["position"][1]["mats"].is_null());
    EXPECT_TRUE(no_temp_files(c.dir));
}

TEST(Audit, BiasFileAndLabelsFileGiveTheSameGenderAxis) {
    auto c = full();
    // The tc triples and IBBR labels of the passages above, written by hand.
    c.in.bias_file = write(c.dir / "bias.tsv",
                           "p1\t-1\t0\t1\np2\t2\t2\t0\np4\t-1\t0\t1\np6\t1\t1\t0\np8\t1\t1\t0\n"
                           "p9\t-2\t0\t2\np11\t-1\t0\t1\np13\t1\t1\t0\np15\t-1\t0\t1\n");
    c.in.passage_labels = write(c.dir / "labels.tsv",
                                "p1\t1\np2\t-1\np4\t1\np6\t-1\np8\t-1\np9\t1\np11\t1\n"
                                "p13\t-1\np15\t1\n");
    c.in.words.clear();
    c.in.documents.reset();
    const auto r = db::run_audit(c.in);
    EXPECT_NEAR(r.gender[0].abs_rab, 1.0 / 6, 1e-12);
    EXPECT_NEAR(r.gender[0].arab.bias, 5.0 / 24, 1e-12);
    EXPECT_NEAR(*r.gender[0].delta_prf, 5.0 / 12, 1e-12);
}

TEST(Audit, MissingInputsSkipExactlyTheirAxes) {
    auto c = full();
    // Only runs and qrels: position, gender and complexity lack their inputs; survivorship
    // lacks the shown rankings.
    db::AuditInputs bare;
    bare.runs = {{"A", c.in.runs[0].run, {}, {}, {}}};
    bare.qrels = c.in.qrels;
    auto r = db::run_audit(bare);
    for (const char* axis : {"position", "gender", "complexity", "survivorship"})
        EXPECT_FALSE(r.axis(axis).computed) << axis;
    EXPECT_NE(r.axis("gender").missing[0].find("--bias-file"), std::string::npos);
    EXPECT_NE(r.axis("complexity").missing[0].find("--topics"), std::string::npos);
    EXPECT_NE(r.axis("survivorship").missing[0].find("shown rankings"), std::string::npos);

    // Shown rankings without qrels: survivorship is skipped naming the qrels; the gender axis
    // is computed (bias from words) but |ΔA-PRF| is not (no qrels).
    auto only = c.in;
    only.qrels.clear();
    only.runs[0].rotated_run.clear();
    r = db::run_audit(only);
    EXPECT_FALSE(r.axis("survivorship").computed);
    EXPECT_EQ(r.axis("survivorship").missing, std::vector<std::string>{"qrels (--qrels)"});
    EXPECT_FALSE(r.axis("complexity").computed);
    EXPECT_TRUE(r.axis("gender").computed);
    EXPECT_FALSE(r.gender[0].delta_prf);
    EXPECT_NEAR(r.gender[0].abs_rab, 1.0 / 6, 1e-12);
    EXPECT_TRUE(r.axis("position").computed);  // A's MATS
    EXPECT_FALSE(r.position[0].has_delta);

    // Query labels without a neutral query: RaB is undefined ("-"), |ΔA-PRF| is still given.
    auto no_neutral = c.in;
    no_neutral.query_labels = write(c.dir / "qf.tsv", "q1\tf\nq2\tm\n");
    r = db::run_audit(no_neutral);
    EXPECT_TRUE(r.gender_query_labels);
    EXPECT_EQ(r.gender[0].queries, 0u);
    EXPECT_NE(db::audit_markdown(r).find("| A (a) | 0 | - | - | - | 0.4167 |"), std::string::npos)
        << db::audit_markdown(r);
    EXPECT_TRUE(db::audit_json(r)["gender"]["rows"][0]["rab"].is_null());

    // Words without passage text: the gender axis is skipped naming the passages.
    auto no_text = c.in;
    no_text.documents.reset();
    r = db::run_audit(no_text);
    EXPECT_FALSE(r.axis("gender").computed);
    EXPECT_NE(r.axis("gender").missing[0].find("passage text"), std::string::npos);
    EXPECT_TRUE(r.axis("survivorship").computed);
    EXPECT_TRUE(r.axis("complexity").computed);

    // A skipped axis has no section numbers and no plot.
    const auto md = db::audit_markdown(r);
    EXPECT_NE(md.find("| gender | skipped (missing: passage text"), std::string::npos) << md;
    db::write_audit(r, c.dir / "out");
    EXPECT_FALSE(fs::exists(c.dir / "out" / "gender.png"));
    EXPECT_TRUE(fs::exists(c.dir / "out" / "survivorship.png"));
}

TEST(Audit, MalformedInputsNameFileAndLine) {
    auto c = full();
    auto bad = c.in;
    bad.shown_ranks = write(c.dir / "bad_shown.tsv", "q1\t1\tp1\t0\nq1\tx\tp2\t1\n");
    EXPECT_EQ(parse_error_line([&] { db::run_audit(bad); }), 2u);
    bad = c.in;
    bad.complexity = write(c.dir / "bad_c.tsv", "qid\tbucket\nq1\teasy\nq2\n");
    EXPECT_EQ(parse_error_line([&] { db::run_audit(bad); }), 3u);
    bad.complexity = write(c.dir / "bad_h.tsv", "query\tlevel\nq1\teasy\n");
    EXPECT_EQ(parse_error_line([&] { db::run_audit(bad); }), 1u);
    bad = c.in;
    bad.runs[1].run = write(c.dir / "bad.run", "q1 Q0 p1 1 3 B\nq1 Q0 p2 2 notanumber B\n");
    EXPECT_EQ(parse_error_line([&] { db::run_audit(bad); }), 2u);
    bad = c.in;
    bad.query_labels.clear();
    bad.runs.push_back(bad.runs[0]);  // a repeated name
    EXPECT_THROW(db::run_audit(bad), plumb::InvalidArgument);
}

TEST(Audit, ComplexityFromTopics) {
    auto c = full();
    c.in.complexity.clear();
    c.in.topics = write(c.dir / "topics.tsv",
                        "q1\tcat\nq2\tdog food\nq3\twhat is the capital of france\n"
                        "q4\twhy do people who live in cold countries drink more coffee\n"
                        "q5\tsun\nq6\thow does the heart pump blood through the body\n");
    const auto r = db::run_audit(c.in);
    ASSERT_TRUE(r.axis("complexity").computed);
    // Terciles of six queries: two per bucket; the bucket means average A's per-query values.
    const auto& ca = r.complexity[0];
    ASSERT_EQ(ca.size(), 4u);
    std::size_t n = 0;
    double weighted = 0;
    for (std::size_t b = 1; b < 4; ++b) {
        EXPECT_EQ(ca[b].n, 2u) << ca[b].bucket;
        n += ca[b].n;
        weighted += ca[b].mean * static_cast<double>(ca[b].n);
    }
    EXPECT_EQ(n, 6u);
    EXPECT_NEAR(weighted / 6, ca[0].mean, 1e-12);
}
