// Measures checked against values computed by hand from trec_eval's definitions (the
// arithmetic is in the comments; log2(3) = 1.5849625, log2(5) = 2.3219281).
#include <gtest/gtest.h>

#include <cmath>
#include <memory>

#include "eval/evaluator.hpp"
#include "eval/format.hpp"
#include "eval/measures.hpp"
#include "plugin/error.hpp"

using namespace plumb;
using namespace plumb::eval;

namespace {

// q1: binary grades. Relevant d1 d3 d4 (R = 3), judged non-relevant d2 d9 (N = 2).
// q2: graded with a negative grade: e=3 a=2 b=1 c=0 d=-1.
// q3: judged, nothing relevant.  q4: judged, absent from every run below.
const char* kQrels =
    "q1 0 d1 1\n"
    "q1 0 d2 0\n"
    "q1 0 d3 1\n"
    "q1 0 d4 1\n"
    "q1 0 d9 0\n"
    "q2 0 a 2\n"
    "q2 0 b 1\n"
    "q2 0 c 0\n"
    "q2 0 d -1\n"
    "q2 0 e 3\n"
    "q3 0 z 0\n"
    "q4 0 w 1\n";

RankedList list(const std::string& qid, std::vector<std::pair<std::string, float>> docs) {
    RankedList l;
    l.qid = qid;
    for (auto& [id, s] : docs) {
        Candidate c;
        c.docid = id;
        c.score = s;
        l.candidates.push_back(c);
    }
    return l;
}

// q1 ranking: scores d1 5, d2 4, d5 3, d3 3, d6 1. d5 and d3 tie; trec_eval breaks ties by docid
// descending, so d5 comes first: d1(R) d2(N) d5(unjudged) d3(R) d6(unjudged).
// The candidates are given in a scrambled order: the evaluator must rank them itself.
RankedList q1() {
    return list("q1", {{"d3", 3.0f}, {"d6", 1.0f}, {"d1", 5.0f}, {"d5", 3.0f}, {"d2", 4.0f}});
}
// q2 ranking: d(-1 grade) a(2) x(unjudged) b(1) c(0).
RankedList q2() {
    return list("q2", {{"d", 0.9f}, {"a", 0.8f}, {"x", 0.7f}, {"b", 0.6f}, {"c", 0.5f}});
}
RankedList q3() { return list("q3", {{"z", 1.0f}, {"y", 0.5f}}); }
// Not in the qrels: ignored.
RankedList q9() { return list("q9", {{"d1", 1.0f}}); }

std::shared_ptr<const Qrels> qrels() {
    return std::make_shared<const Qrels>(Qrels::parse(kQrels, "test.qrels"));
}

double value(const Evaluator& ev, const RankedList& l, const std::string& name) {
    auto v = ev.evaluate_query(l);
    EXPECT_TRUE(v.has_value());
    long c = ev.measures().column_index(name);
    EXPECT_GE(c, 0) << name;
    return (*v)[static_cast<std::size_t>(c)];
}

const std::vector<std::string> kAll = {
    "num_ret",      "num_rel",         "num_rel_ret",    "map",         "Rprec", "bpref",
    "recip_rank",   "iprec_at_recall", "P.2,5,10",       "recall.5,10", "ndcg",  "ndcg_cut.3,10",
    "map_cut.2,10", "success.1,5",     "mrr_cut.1,2,10", "judged.5,10"};

}  // namespace

TEST(Measures, BinaryQueryWithTiesAndUnjudged) {
    Evaluator ev(qrels(), MeasureSet::parse(kAll));
    auto r = q1();
    EXPECT_EQ(value(ev, r, "num_ret"), 5);
    EXPECT_EQ(value(ev, r, "num_rel"), 3);
    EXPECT_EQ(value(ev, r, "num_rel_ret"), 2);
    // AP: relevant at ranks 1 and 4: (1/1 + 2/4) / 3 = 0.5
    EXPECT_DOUBLE_EQ(value(ev, r, "map"), 0.5);
    // R = 3: top 3 = d1(R) d2 d5 -> 1/3
    EXPECT_DOUBLE_EQ(value(ev, r, "Rprec"), 1.0 / 3);
    // bpref: d1 rel before any non-relevant: +1; d2 non-rel (n=1); d5 skipped;
    // d3 rel: 1 - min(1,3)/min(N=2,R=3) = 0.5. (1 + 0.5) / 3 = 0.5
    EXPECT_DOUBLE_EQ(value(ev, r, "bpref"), 0.5);
    EXPECT_DOUBLE_EQ(value(ev, r, "recip_rank"), 1.0);
    EXPECT_DOUBLE_EQ(value(ev, r, "P_2"), 0.5);   // 1 of 2
    EXPECT_DOUBLE_EQ(value(ev, r, "P_5"), 0.4);   // 2 of 5
    EXPECT_DOUBLE_EQ(value(ev, r, "P_10"), 0.2);  // beyond the list: 2 / 10
    EXPECT_DOUBLE_EQ(value(ev, r, "recall_5"), 2.0 / 3);
    EXPECT_DOUBLE_EQ(value(ev, r, "recall_10"), 2.0 / 3);
    // DCG = 1/log2(2) + 1/log2(5) = 1.4306766; IDCG = 1 + 1/log2(3) + 1/log2(4) = 2.1309298
    EXPECT_NEAR(value(ev, r, "ndcg"), 0.6713860725, 1e-9);
    // @3: DCG = 1; IDCG@3 = 2.1309298
    EXPECT_NEAR(value(ev, r, "ndcg_cut_3"), 0.4692787260, 1e-9);
    // @10 is beyond the list and beyond R: same as ndcg
    EXPECT_NEAR(value(ev, r, "ndcg_cut_10"), 0.6713860725, 1e-9);
    EXPECT_DOUBLE_EQ(value(ev, r, "map_cut_2"), 1.0 / 3);  // (1/1) / 3
    EXPECT_DOUBLE_EQ(value(ev, r, "map_cut_10"), 0.5);
    EXPECT_EQ(value(ev, r, "success_1"), 1.0);
    EXPECT_EQ(value(ev, r, "mrr_cut_1"), 1.0);
    // judged: d1 d2 d3 of the 5 are in the qrels: 3/5, and 3/10 at 10
    EXPECT_DOUBLE_EQ(value(ev, r, "judged_5"), 0.6);
    EXPECT_DOUBLE_EQ(value(ev, r, "judged_10"), 0.3);
}

TEST(Measures, InterpolatedPrecisionAtRecall) {
    Evaluator ev(qrels(), MeasureSet::parse({"iprec_at_recall"}));
    auto v = *ev.evaluate_query(q1());
    // R = 3, recall level x needs lround(3x) relevant: 0,0,1,1,1,2,2,2,2,3,3 (0.5*3=1.5 -> 2).
    // Precision after the 1st relevant (rank 1) = 1, after the 2nd (rank 4) = 0.5; the
    // maximum precision at or after each point: levels needing <= 1 rel -> 1.0, needing 2 ->
    // max(2/4, 2/5) = 0.5, needing 3 (never reached) -> 0.
    const double expect[] = {1, 1, 1, 1, 1, 0.5, 0.5, 0.5, 0.5, 0, 0};
    ASSERT_EQ(v.size(), 11u);
    for (int i = 0; i < 11; ++i) EXPECT_DOUBLE_EQ(v[i], expect[i]) << i;
    EXPECT_EQ(ev.measures().columns()[0].name, "iprec_at_recall_0.00");
    EXPECT_EQ(ev.measures().columns()[10].name, "iprec_at_recall_1.00");
}

TEST(Measures, InterpolatedPrecisionAtRecallTrecEval9) {
    EvalOptions opt;
    opt.trec_eval_9_iprec = true;
    Evaluator ev(qrels(), MeasureSet::parse({"iprec_at_recall"}), opt);
    auto v = *ev.evaluate_query(q1());
    // trec_eval 9: level x needs (long)(3x + 0.9) relevant: 0,1,1,1,2,2,2,2,3,3,3 (0.4 -> 2.1
    // -> 2 where lround gives 1; 0.7 * 3 + 0.9 is 2.9999999999999996 in doubles -> 2).
    const double expect[] = {1, 1, 1, 1, 0.5, 0.5, 0.5, 0.5, 0, 0, 0};
    ASSERT_EQ(v.size(), 11u);
    for (int i = 0; i < 11; ++i) EXPECT_DOUBLE_EQ(v[i], expect[i]) << i;
}

TEST(Measures, GradedWithNegativeGrade) {
    Evaluator ev(qrels(), MeasureSet::parse(kAll));
    auto r = q2();
    // rels by rank: d=-1 (negative: never relevant, skipped by bpref), a=2, x unjudged, b=1, c=0
    EXPECT_EQ(value(ev, r, "num_rel"), 3);  // a b e
    // AP: relevant at ranks 2 and 4: (1/2 + 2/4) / 3 = 1/3
    EXPECT_DOUBLE_EQ(value(ev, r, "map"), 1.0 / 3);
    // bpref: N = 1 (c), R = 3: a +1, b +1 (no judged non-relevant above) -> 2/3
    EXPECT_DOUBLE_EQ(value(ev, r, "bpref"), 2.0 / 3);
    EXPECT_DOUBLE_EQ(value(ev, r, "recip_rank"), 0.5);
    EXPECT_EQ(value(ev, r, "mrr_cut_1"), 0.0);
    EXPECT_DOUBLE_EQ(value(ev, r, "mrr_cut_2"), 0.5);
    // gain = grade: DCG = 2/log2(3) + 1/log2(5) = 1.6925361
    // ideal 3,2,1: 3/1 + 2/log2(3) + 1/log2(4) = 4.7618595 -> 0.3554359516
    EXPECT_NEAR(value(ev, r, "ndcg"), 0.3554359516, 1e-9);
    // judged: d, a, b, c are in the qrels (d with a negative grade): 4/5
    EXPECT_DOUBLE_EQ(value(ev, r, "judged_5"), 0.8);
}

TEST(Measures, RelevanceLevel) {
    EvalOptions opt;
    opt.relevance_level = 2;
    Evaluator ev(qrels(), MeasureSet::parse(kAll), opt);
    auto r = q2();
    EXPECT_EQ(value(ev, r, "num_rel"), 2);  // a(2) e(3)
    EXPECT_EQ(value(ev, r, "num_rel_ret"), 1);
    // AP: a at rank 2: (1/2) / 2 = 0.25
    EXPECT_DOUBLE_EQ(value(ev, r, "map"), 0.25);
    // bpref: N = grades 0..1 = 2 (b, c), R = 2: a +1; b, c non-relevant after -> 1/2
    EXPECT_DOUBLE_EQ(value(ev, r, "bpref"), 0.5);
    EXPECT_DOUBLE_EQ(value(ev, r, "P_5"), 0.2);
    // nDCG ignores the relevance level (trec_eval): unchanged
    EXPECT_NEAR(value(ev, r, "ndcg"), 0.3554359516, 1e-9);
}

TEST(Measures, QueryWithoutRelevantDocuments) {
    Evaluator ev(qrels(), MeasureSet::parse(kAll));
    auto v = *ev.evaluate_query(q3());
    const auto& cols = ev.measures().columns();
    for (std::size_t i = 0; i < cols.size(); ++i) {
        if (cols[i].name == "num_ret") {
            EXPECT_EQ(v[i], 2);
        } else if (cols[i].name.rfind("judged", 0) == 0) {
            continue;  // z is judged
        } else {
            EXPECT_EQ(v[i], 0.0) << cols[i].name;  // no NaN from 0/0
        }
    }
}

TEST(Measures, EmptyRankedList) {
    Evaluator ev(qrels(), MeasureSet::parse(kAll));
    auto v = *ev.evaluate_query(list("q1", {}));
    const auto& cols = ev.measures().columns();
    for (std::size_t i = 0; i < cols.size(); ++i) {
        if (cols[i].name == "num_rel") {
            EXPECT_EQ(v[i], 3);
        } else {
            EXPECT_EQ(v[i], 0.0) << cols[i].name;
        }
    }
}

TEST(Measures, MaxDocsPerQuery) {
    EvalOptions opt;
    opt.max_docs_per_query = 2;  // -M 2: only d1(R) d2(N) remain
    Evaluator ev(qrels(), MeasureSet::parse(kAll), opt);
    auto r = q1();
    EXPECT_EQ(value(ev, r, "num_ret"), 2);
    EXPECT_DOUBLE_EQ(value(ev, r, "map"), 1.0 / 3);  // (1/1) / 3
    EXPECT_DOUBLE_EQ(value(ev, r, "P_5"), 0.2);      // 1 / 5
}

TEST(Measures, JudgedDocsOnly) {
    EvalOptions opt;
    opt.judged_docs_only = true;  // -J: d1(R) d2(N) d3(R)
    Evaluator ev(qrels(), MeasureSet::parse(kAll), opt);
    auto r = q1();
    EXPECT_EQ(value(ev, r, "num_ret"), 3);
    EXPECT_DOUBLE_EQ(value(ev, r, "map"), (1.0 + 2.0 / 3) / 3);  // ranks 1 and 3
}

TEST(Evaluator, SummaryOverQueriesInBoth) {
    Evaluator ev(qrels(), MeasureSet::parse({"official", "ndcg"}));
    auto res = ev.evaluate({q2(), q9(), q1(), q3()});
    // q9 is not in the qrels, q4 not in the run: q1 q2 q3 evaluated, in qid order
    ASSERT_EQ(res.queries.size(), 3u);
    EXPECT_EQ(res.queries[0].qid, "q1");
    EXPECT_EQ(res.queries[2].qid, "q3");
    EXPECT_EQ(res.summary_value("num_q"), 3);
    EXPECT_EQ(res.summary_value("num_ret"), 12);     // 5 + 5 + 2
    EXPECT_EQ(res.summary_value("num_rel"), 6);      // 3 + 3 + 0
    EXPECT_EQ(res.summary_value("num_rel_ret"), 4);  // 2 + 2 + 0
    // map: (0.5 + 1/3 + 0) / 3
    EXPECT_NEAR(res.summary_value("map"), 0.2777777778, 1e-9);
    // gm_map: exp((ln 0.5 + ln(1/3) + ln(1e-5)) / 3)
    EXPECT_NEAR(res.summary_value("gm_map"), 0.0118563110, 1e-9);
    // ndcg: (0.6713860725 + 0.3554359516 + 0) / 3
    EXPECT_NEAR(res.summary_value("ndcg"), 0.3422740080, 1e-9);
    auto maps = res.column_values("map");
    ASSERT_EQ(maps.size(), 3u);
    EXPECT_DOUBLE_EQ(maps[0], 0.5);
    EXPECT_THROW(res.column_values("ndcg_cut_10"), InvalidArgument);
}

TEST(Evaluator, CompleteAveragesOverAllQrelsQueries) {
    EvalOptions opt;
    opt.complete = true;  // -c
    Evaluator ev(qrels(), MeasureSet::parse({"num_q", "num_ret", "num_rel", "map", "P.5"}), opt);
    auto res = ev.evaluate({q1(), q2(), q3()});
    ASSERT_EQ(res.queries.size(), 4u);
    const QueryValues* q4 = res.query("q4");
    ASSERT_NE(q4, nullptr);
    EXPECT_TRUE(q4->missing);
    EXPECT_EQ(res.summary_value("num_q"), 4);
    EXPECT_EQ(res.summary_value("num_ret"), 12);  // the missing query retrieved nothing
    EXPECT_EQ(res.summary_value("num_rel"), 7);   // but its relevant document counts
    // map: (0.5 + 1/3 + 0 + 0) / 4
    EXPECT_NEAR(res.summary_value("map"), 0.2083333333, 1e-9);
    // P_5: (0.4 + 0.4 + 0 + 0) / 4 (q2: a and b in the top 5)
    EXPECT_NEAR(res.summary_value("P_5"), 0.2, 1e-12);
}

TEST(Evaluator, ListOrderOption) {
    // q1 in list order d3(R) d6 d1(R) d5 d2: AP = (1/1 + 2/3) / 3 = 0.5556, not 0.5
    EvalOptions opt;
    opt.use_list_order = true;
    Evaluator ev(qrels(), MeasureSet::parse({"map", "recip_rank"}), opt);
    auto v = *ev.evaluate_query(q1());
    EXPECT_DOUBLE_EQ(v[0], (1.0 + 2.0 / 3) / 3);
    EXPECT_DOUBLE_EQ(v[1], 1.0);
}

TEST(Evaluator, DuplicateDocidInListIsAnError) {
    Evaluator ev(qrels(), MeasureSet::parse({"map"}));
    EXPECT_THROW(ev.evaluate_query(list("q1", {{"d1", 1.0f}, {"d1", 0.5f}})), InvalidArgument);
    EXPECT_THROW(ev.evaluate({q1(), q1()}), InvalidArgument);
}

TEST(MeasureSet, ParsesTrecEvalSpecs) {
    auto m = MeasureSet::parse({"P.10,5", "map", "num_q"});
    // registry order, not command-line order; cutoffs sorted
    ASSERT_EQ(m.columns().size(), 4u);
    EXPECT_EQ(m.columns()[0].name, "num_q");
    EXPECT_EQ(m.columns()[1].name, "map");
    EXPECT_EQ(m.columns()[2].name, "P_5");
    EXPECT_EQ(m.columns()[3].name, "P_10");
    // default cutoffs
    auto d = MeasureSet::parse({"P", "success"});
    EXPECT_EQ(d.columns().size(), 9u + 3u);
    EXPECT_EQ(d.columns()[8].name, "P_1000");
    EXPECT_EQ(d.columns()[9].name, "success_1");
    // first parameter list wins
    auto f = MeasureSet::parse({"P.5", "P.10"});
    ASSERT_EQ(f.columns().size(), 1u);
    EXPECT_EQ(f.columns()[0].name, "P_5");
    // official
    auto o = MeasureSet::official();
    EXPECT_TRUE(o.has_runid());
    EXPECT_EQ(o.columns().front().name, "num_q");
    EXPECT_EQ(o.columns().back().name, "P_1000");

    EXPECT_THROW(MeasureSet::parse({"nosuch"}), ConfigError);
    EXPECT_THROW(MeasureSet::parse({"P."}), ConfigError);
    EXPECT_THROW(MeasureSet::parse({"P.0"}), ConfigError);
    EXPECT_THROW(MeasureSet::parse({"P.5,5"}), ConfigError);
    EXPECT_THROW(MeasureSet::parse({"P.x"}), ConfigError);
    // gains as level=gain pairs, printed with the pairs as given (trec_eval's append_string)
    auto g = MeasureSet::parse({"ndcg.1=3,2=9"});
    ASSERT_EQ(g.columns().size(), 1u);
    EXPECT_EQ(g.columns()[0].name, "ndcg_1=3,2=9");
    EXPECT_THROW(MeasureSet::parse({"ndcg.1"}), ConfigError);        // not a pair
    EXPECT_THROW(MeasureSet::parse({"ndcg.1=x"}), ConfigError);      // not a number
    EXPECT_THROW(MeasureSet::parse({"rbp.p=0.8,=1"}), ConfigError);  // empty name
    // rank cutoffs are read with atol, as trec_eval does: 23.4 -> 23
    EXPECT_EQ(MeasureSet::parse({"ndcg_cut.23.4"}).columns()[0].name, "ndcg_cut_23");
}

TEST(MeasureSet, IrMeasuresNames) {
    // ir_measures names map onto trec_eval's measures and print under the name given, after
    // trec_eval's own columns, in command-line order.
    auto m = MeasureSet::parse({"nDCG@10", "map", "RR@10", "R@1000", "AP", "P@5", "Judged@10",
                                "AP@100", "RR", "nDCG", "RBP(p=0.8)", "NumRet"});
    std::vector<std::string> names, trec;
    for (const auto& c : m.columns()) {
        names.push_back(c.name);
        trec.push_back(c.trec_name);
    }
    EXPECT_EQ(names, (std::vector<std::string>{"map", "nDCG@10", "RR@10", "R@1000", "AP", "P@5",
                                               "Judged@10", "AP@100", "RR", "nDCG", "RBP(p=0.8)",
                                               "NumRet"}));
    EXPECT_EQ(trec, (std::vector<std::string>{"map", "ndcg_cut_10", "mrr_cut_10", "recall_1000",
                                              "map", "P_5", "judged_10", "map_cut_100",
                                              "recip_rank", "ndcg", "rbp_p=0.8", "num_ret"}));
    // ir_measures' RBP persists with p = 0.8 by default, trec_eval's rbp with 0.9
    EXPECT_EQ(MeasureSet::parse({"RBP"}).columns()[0].trec_name, "rbp_p=0.8");
    // trec_eval's own names keep their meaning (P = all default cutoffs)
    EXPECT_EQ(MeasureSet::parse({"P"}).columns().size(), 9u);
    EXPECT_THROW(MeasureSet::parse({"P@x"}), ConfigError);
    EXPECT_THROW(MeasureSet::parse({"Judged"}), ConfigError);      // needs @k
    EXPECT_THROW(MeasureSet::parse({"Bpref@10"}), ConfigError);    // takes no @k
    EXPECT_THROW(MeasureSet::parse({"ERR@10"}), ConfigError);      // not computed
    EXPECT_THROW(MeasureSet::parse({"P(rel=2)@5"}), ConfigError);  // per-measure rel level
    EXPECT_THROW(MeasureSet::parse({"nDCG(dcg=exp-log2)@10"}), ConfigError);

    // Values: the alias computes exactly its trec_eval measure.
    auto q = std::make_shared<const Qrels>(Qrels::parse("t 0 a 2\nt 0 b 0\nt 0 c 1\n"));
    Evaluator ev(q, MeasureSet::parse({"ndcg_cut.10", "nDCG@10", "recip_rank", "RR", "P@5"}));
    auto res = ev.evaluate({list("t", {{"b", 3}, {"c", 2}, {"a", 1}})});
    const auto& v = res.queries.at(0).values;
    // DCG = 1/log2(3) + 2/log2(4) = 1.6309; ideal = 2 + 1/log2(3) = 2.6309
    // columns: recip_rank, ndcg_cut_10 (registry order), then nDCG@10, RR, P@5
    EXPECT_EQ(v[0], 0.5);  // first relevant at rank 2
    EXPECT_NEAR(v[1], (1 / std::log2(3.0) + 1.0) / (2 + 1 / std::log2(3.0)), 1e-12);
    EXPECT_EQ(v[1], v[2]);
    EXPECT_EQ(v[3], 0.5);
    EXPECT_NEAR(v[4], 2.0 / 5, 1e-12);
}

TEST(Format, TrecEvalText) {
    Evaluator ev(qrels(), MeasureSet::parse({"runid", "num_q", "num_ret", "map", "P.5"}));
    auto res = ev.evaluate({q1()});
    res.run_id = "myrun";
    FormatOptions o;
    o.per_query = true;
    // "%-22s\t%s\t%6.4f" / "%ld"; per-query lines skip runid and num_q.
    const std::string expected =
        "num_ret               \tq1\t5\n"
        "map                   \tq1\t0.5000\n"
        "P_5                   \tq1\t0.4000\n"
        "runid                 \tall\tmyrun\n"
        "num_q                 \tall\t1\n"
        "num_ret               \tall\t5\n"
        "map                   \tall\t0.5000\n"
        "P_5                   \tall\t0.4000\n";
    EXPECT_EQ(format_result(res, OutputFormat::Text, o), expected);
    o.summary = false;
    EXPECT_EQ(format_result(res, OutputFormat::Text, o),
              "num_ret               \tq1\t5\n"
              "map                   \tq1\t0.5000\n"
              "P_5                   \tq1\t0.4000\n");
    o.per_query = false;
    o.summary = true;
    EXPECT_EQ(format_result(res, OutputFormat::Csv, o),
              "measure,qid,value\nrunid,all,myrun\nnum_q,all,1\nnum_ret,all,5\n"
              "map,all,0.5\nP_5,all,0.4\n");
    auto json = format_result(res, OutputFormat::Json, o);
    EXPECT_NE(json.find("\"map\": 0.5"), std::string::npos) << json;
    EXPECT_THROW(parse_output_format("xml"), ConfigError);
}

// ---------------------------------------------------------------------------------------------
// The evaluator against a naive reference written from the textbook definitions, on random
// queries with ties, unjudged documents, graded and negative judgements, empty lists.
// ---------------------------------------------------------------------------------------------

#include <algorithm>
#include <map>
#include <random>

namespace {

struct NaiveQuery {
    std::map<std::string, long> qrels;
    std::vector<std::pair<std::string, float>> run;
};

/// Ranked docids: sort ascending by (score, docid), then reverse = score desc, docid desc.
std::vector<std::string> naive_rank(const NaiveQuery& q) {
    auto v = q.run;
    std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) {
        return a.second != b.second ? a.second < b.second : a.first < b.first;
    });
    std::reverse(v.begin(), v.end());
    std::vector<std::string> out;
    for (auto& p : v) out.push_back(p.first);
    return out;
}

std::map<std::string, double> naive_measures(const NaiveQuery& q) {
    auto ranked = naive_rank(q);
    auto grade = [&](const std::string& d) -> long {
        auto it = q.qrels.find(d);
        return it == q.qrels.end() ? -100 : it->second;
    };
    auto rel = [&](const std::string& d) { return grade(d) >= 1; };
    long R = 0, N = 0;
    std::vector<double> gains;
    for (auto& [d, g] : q.qrels) {
        if (g >= 1) ++R;
        if (g == 0) ++N;
        if (g > 0) gains.push_back(static_cast<double>(g));
    }
    std::sort(gains.rbegin(), gains.rend());
    auto rel_in_top = [&](std::size_t k) {
        long c = 0;
        for (std::size_t i = 0; i < std::min(k, ranked.size()); ++i) c += rel(ranked[i]);
        return c;
    };
    auto dcg_at = [&](std::size_t k) {
        double s = 0;
        for (std::size_t i = 0; i < std::min(k, ranked.size()); ++i) {
            long g = grade(ranked[i]);
            if (g > 0) s += g / std::log2(static_cast<double>(i) + 2);
        }
        return s;
    };
    auto idcg_at = [&](std::size_t k) {
        double s = 0;
        for (std::size_t i = 0; i < std::min(k, gains.size()); ++i) {
            s += gains[i] / std::log2(static_cast<double>(i) + 2);
        }
        return s;
    };
    std::map<std::string, double> m;
    double ap = 0, bpref = 0;
    long nonrel_above = 0;
    double rr = 0;
    for (std::size_t i = 0; i < ranked.size(); ++i) {
        if (rel(ranked[i])) {
            ap += static_cast<double>(rel_in_top(i + 1)) / static_cast<double>(i + 1);
            if (rr == 0) rr = 1.0 / static_cast<double>(i + 1);
            bpref += nonrel_above == 0 ? 1.0
                                       : 1.0 - static_cast<double>(std::min(nonrel_above, R)) /
                                                   static_cast<double>(std::min(N, R));
        } else if (grade(ranked[i]) == 0) {
            ++nonrel_above;
        }
    }
    m["map"] = R ? ap / static_cast<double>(R) : 0;
    m["bpref"] = R ? bpref / static_cast<double>(R) : 0;
    m["recip_rank"] = rr;
    m["Rprec"] = R ? static_cast<double>(rel_in_top(static_cast<std::size_t>(R))) / R : 0;
    for (std::size_t k : {1, 3, 10, 100}) {
        const std::string ks = std::to_string(k);
        m["P_" + ks] = static_cast<double>(rel_in_top(k)) / static_cast<double>(k);
        m["recall_" + ks] = R ? static_cast<double>(rel_in_top(k)) / R : 0;
        m["success_" + ks] = rel_in_top(k) > 0 ? 1 : 0;
        m["ndcg_cut_" + ks] = idcg_at(k) > 0 ? dcg_at(k) / idcg_at(k) : 0;
        m["mrr_cut_" + ks] = (rr > 0 && 1.0 / rr <= static_cast<double>(k)) ? rr : 0;
    }
    m["ndcg"] = idcg_at(gains.size()) > 0 ? dcg_at(ranked.size()) / idcg_at(gains.size()) : 0;
    m["num_ret"] = static_cast<double>(ranked.size());
    m["num_rel"] = static_cast<double>(R);
    m["num_rel_ret"] = static_cast<double>(rel_in_top(ranked.size()));
    return m;
}

}  // namespace

TEST(Measures, AgreeWithNaiveReferenceOnRandomQueries) {
    std::mt19937 rng(7);
    const float score_levels[] = {0.5f, 1.0f, 1.5f, 2.0f, 2.5f};
    Qrels qrels;
    std::vector<NaiveQuery> naive;
    std::vector<RankedList> lists;
    for (int qi = 0; qi < 200; ++qi) {
        NaiveQuery nq;
        const std::string qid = "q" + std::to_string(qi);
        int nj = static_cast<int>(rng() % 30);
        for (int j = 0; j < nj; ++j) {
            std::string d = "d" + std::to_string(rng() % 60);
            long g = static_cast<long>(rng() % 5) - 1;  // -1..3
            if (nq.qrels.emplace(d, g).second) qrels.add(qid, d, g);
        }
        if (nq.qrels.empty()) {
            nq.qrels.emplace("d0", 0);
            qrels.add(qid, "d0", 0);
        }
        std::map<std::string, float> run;
        int nr = static_cast<int>(rng() % 50);
        for (int j = 0; j < nr; ++j) {
            run.emplace("d" + std::to_string(rng() % 60), score_levels[rng() % 5]);
        }
        RankedList l;
        l.qid = qid;
        for (auto& [d, s] : run) {
            nq.run.emplace_back(d, s);
            l.candidates.push_back(Candidate{d, s, {}, {}});
        }
        std::shuffle(l.candidates.begin(), l.candidates.end(), rng);
        naive.push_back(nq);
        lists.push_back(l);
    }
    Evaluator ev(
        std::make_shared<const Qrels>(std::move(qrels)),
        MeasureSet::parse({"num_ret", "num_rel", "num_rel_ret", "map", "bpref", "recip_rank",
                           "Rprec", "P.1,3,10,100", "recall.1,3,10,100", "success.1,3,10,100",
                           "ndcg", "ndcg_cut.1,3,10,100", "mrr_cut.1,3,10,100"}));
    const auto& cols = ev.measures().columns();
    for (std::size_t i = 0; i < lists.size(); ++i) {
        auto got = *ev.evaluate_query(lists[i]);
        auto want = naive_measures(naive[i]);
        for (std::size_t c = 0; c < cols.size(); ++c) {
            ASSERT_TRUE(want.count(cols[c].name)) << cols[c].name;
            EXPECT_NEAR(got[c], want[cols[c].name], 1e-12) << lists[i].qid << " " << cols[c].name;
        }
    }
}

// The rest of trec_eval's all_trec set on one small query: relevant d1 d3 (R = 2), judged
// non-relevant d2 (N = 1), ranking d1(R) d2(N) d3(R) x(not in the qrels).
TEST(Measures, AllTrecExtras) {
    auto q =
        std::make_shared<const Qrels>(Qrels::parse("t 0 d1 1\nt 0 d2 0\nt 0 d3 1\nt 0 d9 -1\n"));
    EvalOptions opt;
    opt.num_docs_in_coll = 100;
    Evaluator ev(
        q,
        MeasureSet::parse({"all_trec", "dcg", "ideal_dcg", "utility.1,-1,-0.5,0.01", "set_F.0.5"}),
        opt);
    auto res = ev.evaluate({list("t", {{"d1", 4}, {"d2", 3}, {"d3", 2}, {"x", 1}})});
    ASSERT_EQ(res.queries.size(), 1u);
    const auto& row = res.queries[0];
    auto v = [&](const std::string& name) {
        long c = res.column_index(name);
        EXPECT_GE(c, 0) << name;
        return c < 0 ? -1.0 : row.values[static_cast<std::size_t>(c)];
    };
    EXPECT_EQ(row.relstring, "101-");
    // infAP: rank 1 rel: +1; rank 3 rel (j = 2, one rel and one non-rel above):
    // 1/3 + (2/3) * ((1 + 1 + 0) / 2) * ((1 + e) / (1 + 1 + 2e)) = 1/3 + 1/3; (1 + 2/3) / 2
    EXPECT_NEAR(v("infAP"), 5.0 / 6, 1e-5);
    // Rprec_mult: x*R + 0.9 truncated = 1,1,2,2,2,3,3,4,4,4 for x = 0.2..2.0; P@1 = 1,
    // P@2 = 1/2, P@3 = 2/3, P@4 = 2/4
    const double rm[] = {1, 1, 0.5, 0.5, 0.5, 2.0 / 3, 2.0 / 3, 0.5, 0.5, 0.5};
    const char* rm_names[] = {"Rprec_mult_0.20", "Rprec_mult_0.40", "Rprec_mult_0.60",
                              "Rprec_mult_0.80", "Rprec_mult_1.00", "Rprec_mult_1.20",
                              "Rprec_mult_1.40", "Rprec_mult_1.60", "Rprec_mult_1.80",
                              "Rprec_mult_2.00"};
    for (int i = 0; i < 10; ++i) EXPECT_NEAR(v(rm_names[i]), rm[i], 1e-12) << rm_names[i];
    // utility with a=2 rel ret, b=2 non-rel ret, c=0 rel not ret, d=100+2-4-2=96:
    // 1*2 - 1*2 - 0.5*0 + 0.01*96 = 0.96
    EXPECT_NEAR(v("utility_1,-1,-0.5,0.01"), 0.96, 1e-12);
    // 11pt_avg: interpolated precision 1 for recall levels needing 1 rel (0 .. 0.7 with lround
    // of 2x: 0,0,0,1,1,1,1,1,2,2,2 -> 8 levels), 2/3 for the 3 levels needing 2: (8 + 2) / 11
    EXPECT_NEAR(v("11pt_avg"), 10.0 / 11, 1e-12);
    // binG: 1/log2(3+0-1) + 1/log2(3+2-2) = 1 + 0.6309298, / R
    EXPECT_NEAR(v("binG"), (1 + 1 / std::log2(3.0)) / 2, 1e-12);
    // G: gains 1,0,1; ideal 1,1; cost 1,2,3 -> 1/log2(2+1-1) + 1/log2(2+3-2), / ideal sum 2
    EXPECT_NEAR(v("G"), (1 + 1 / std::log2(3.0)) / 2, 1e-12);
    EXPECT_NEAR(v("dcg"), 1.5, 1e-12);                           // 1 + 1/log2(4)
    EXPECT_NEAR(v("ideal_dcg"), 1 + 1 / std::log2(3.0), 1e-12);  // 1.6309298
    // ndcg_rel: ndcg at each relevant doc: 1/1 at rank 1, 1.5/1.6309298 at rank 3; / 2
    EXPECT_NEAR(v("ndcg_rel"), (1 + 1.5 / (1 + 1 / std::log2(3.0))) / 2, 1e-12);
    // Rndcg: the ideal gain changes once (after 2 docs): ndcg there = 1 / 1.6309298; the run
    // continues past that point, so ndcg at the end (1.5 / 1.6309298) is averaged in too.
    EXPECT_NEAR(v("Rndcg"), (1 / (1 + 1 / std::log2(3.0)) + 1.5 / (1 + 1 / std::log2(3.0))) / 2,
                1e-12);
    EXPECT_NEAR(v("relative_P_5"), 1.0, 1e-12);  // 2 / min(5, 2)
    EXPECT_NEAR(v("set_P"), 0.5, 1e-12);         // 2 / 4
    EXPECT_NEAR(v("set_recall"), 1.0, 1e-12);
    EXPECT_NEAR(v("set_relative_P"), 1.0, 1e-12);  // 2 / min(4, 2)
    EXPECT_NEAR(v("set_map"), 0.5, 1e-12);         // 2*2 / (4*2)
    // set_F.0.5 (P = 0.5, R = 1): 1.5 * 0.5 * 1 / (0.5 * 0.5 + 1) = 0.6; its name carries the
    // parameter, and as in trec_eval a measure is computed once, with the parameters given.
    EXPECT_NEAR(v("set_F_0.5"), 0.6, 1e-12);
    EXPECT_LT(res.column_index("set_F"), 0);
    EXPECT_EQ(v("num_nonrel_judged_ret"), 1);
    // gm_bpref: bpref = (1 + (1 - 1/1)) / 2 = 0.5, geometric mean of one query
    EXPECT_NEAR(res.summary_value("gm_bpref"), 0.5, 1e-12);

    FormatOptions fo;
    fo.per_query = true;
    fo.summary = false;
    auto text = format_result(res, OutputFormat::Text, fo);
    EXPECT_NE(text.find("relstring             \tt\t'101-'\n"), std::string::npos) << text;
    EXPECT_EQ(text.find("gm_bpref"), std::string::npos);  // summary only
}
