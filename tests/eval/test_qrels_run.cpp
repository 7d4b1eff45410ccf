// Qrels and run readers: formats, streaming by query, unsorted runs, and bad input naming
// file and line.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <thread>

#include "eval/evaluator.hpp"
#include "eval/qrels.hpp"
#include "eval/run.hpp"
#include "plugin/error.hpp"
#include "tests/support/parse_error.hpp"
#include "tests/support/temp_dir.hpp"

namespace fs = std::filesystem;
using namespace plumb;
using namespace plumb::eval;
using plumb::test::expect_parse_error;
using plumb::test::TempDir;

TEST(Qrels, LoadsGradesCommentsAndCrlf) {
    const TempDir dir;
    auto p = dir.write("a.qrels",
                       "# comment\n"
                       "q1 0 d1 2\r\n"
                       "\n"
                       "q1\t0\td2\t0\n"
                       "q1 Q0 d3 -1\n"
                       "10 0 x +1\n"
                       "2 0 y 1\n");
    Qrels q = Qrels::load(p);
    EXPECT_EQ(q.num_queries(), 3u);
    EXPECT_EQ(q.num_judgements(), 5u);
    const QueryQrels* q1 = q.find("q1");
    ASSERT_NE(q1, nullptr);
    EXPECT_EQ(*q1->find("d1"), 2);
    EXPECT_EQ(*q1->find("d2"), 0);
    EXPECT_EQ(*q1->find("d3"), -1);
    EXPECT_EQ(q1->find("d4"), nullptr);
    // levels 0..2: one at 0, none at 1, one at 2; the negative grade is not a level
    EXPECT_EQ(q1->level_counts(), (std::vector<plumb::eval::GradeCount>{{0, 1}, {2, 1}}));
    EXPECT_EQ(q1->num_rel(1), 1);
    EXPECT_EQ(q1->num_rel(0), 2);
    EXPECT_EQ(*q.find("10")->find("x"), 1);
    // trec_eval's order is strcmp order: "10" < "2" < "q1"
    EXPECT_EQ(q.qids(), (std::vector<std::string>{"10", "2", "q1"}));
    EXPECT_EQ(q.find("nope"), nullptr);
}

TEST(Qrels, ManyJudgementsLookup) {
    Qrels q;
    for (int i = 0; i < 5000; ++i) q.add("q", "doc" + std::to_string(i), i % 3);
    const QueryQrels* qq = q.find("q");
    for (int i = 0; i < 5000; ++i) {
        const long* g = qq->find("doc" + std::to_string(i));
        ASSERT_NE(g, nullptr);
        EXPECT_EQ(*g, i % 3);
    }
    EXPECT_EQ(qq->find("doc5000"), nullptr);
    EXPECT_EQ(qq->judgements().size(), 5000u);
    EXPECT_EQ(qq->judgements()[1234].first, "doc1234");
}

TEST(Qrels, BadInputNamesFileAndLine) {
    const TempDir dir;
    auto e1 =
        expect_parse_error([&] { Qrels::load(dir.write("b1.qrels", "q1 0 d1 1\nq1 0 d2\n")); });
    EXPECT_EQ(e1.line(), 2u);
    EXPECT_NE(std::string(e1.what()).find("b1.qrels:2"), std::string::npos) << e1.what();

    auto e2 = expect_parse_error([&] { Qrels::load(dir.write("b2.qrels", "q1 0 d1 1.5\n")); });
    EXPECT_EQ(e2.line(), 1u);
    EXPECT_NE(e2.message().find("not an integer"), std::string::npos);

    auto e3 = expect_parse_error(
        [&] { Qrels::load(dir.write("b3.qrels", "q1 0 d1 1\nq2 0 d1 1\nq1 0 d1 0\n")); });
    EXPECT_EQ(e3.line(), 3u);
    EXPECT_NE(e3.message().find("duplicate"), std::string::npos);

    auto e4 = expect_parse_error([&] { Qrels::load(dir.write("b4.qrels", "q1 0 d1 1 extra\n")); });
    EXPECT_EQ(e4.line(), 1u);

    EXPECT_THROW(Qrels::load("/nonexistent/x.qrels"), IoError);
}

TEST(RunReader, StreamsBlocksByQuery) {
    const TempDir dir;
    auto p = dir.write("a.run",
                       "# header\n"
                       "q1 Q0 d1 1 2.5 tagA\n"
                       "q1 Q0 d2 2 1e-3 tagA extra fields ignored\n"
                       "\n"
                       "q2\tQ0\td9\t1\t-4\ttagB\r\n"
                       "q3 Q0 d1 1 +7 tagC\n");
    RunReader r(p);
    RunQuery q;
    ASSERT_TRUE(r.next(q));
    EXPECT_EQ(q.qid, "q1");
    ASSERT_EQ(q.docs.size(), 2u);
    EXPECT_EQ(q.docid(q.docs[0]), "d1");
    EXPECT_EQ(q.docs[0].score, 2.5);
    EXPECT_EQ(q.docs[0].line, 2u);
    EXPECT_EQ(q.docid(q.docs[1]), "d2");
    EXPECT_EQ(q.docs[1].score, 1e-3);
    ASSERT_TRUE(r.next(q));
    EXPECT_EQ(q.qid, "q2");
    EXPECT_EQ(q.docs[0].score, -4.0);
    EXPECT_EQ(q.docs[0].line, 5u);
    ASSERT_TRUE(r.next(q));
    EXPECT_EQ(q.qid, "q3");
    EXPECT_EQ(q.docs[0].score, 7.0);
    EXPECT_FALSE(r.next(q));
    EXPECT_EQ(r.run_id(), "tagC");  // trec_eval keeps the last line's tag
}

TEST(RunReader, BadInputNamesFileAndLine) {
    const TempDir dir;
    auto e1 = expect_parse_error([&] {
        RunReader r(dir.write("b1.run", "q1 Q0 d1 1 2.0 t\nq1 Q0 d2 2 1.0\n"));
        RunQuery q;
        while (r.next(q)) {
        }
    });
    EXPECT_EQ(e1.line(), 2u);
    EXPECT_NE(std::string(e1.what()).find("b1.run:2"), std::string::npos) << e1.what();

    auto e2 = expect_parse_error([&] {
        RunReader r(dir.write("b2.run", "q1 Q0 d1 1 2.0 t\nq1 Q0 d2 2 high t\n"));
        RunQuery q;
        while (r.next(q)) {
        }
    });
    EXPECT_EQ(e2.line(), 2u);
    EXPECT_NE(e2.message().find("not a number"), std::string::npos);

    auto e3 = expect_parse_error([&] {
        RunReader r(dir.write("b3.run", "q1 Q0 d1 1 nan t\n"));
        RunQuery q;
        r.next(q);
    });
    EXPECT_EQ(e3.line(), 1u);
}

TEST(Evaluator, DuplicateRunLineIsAParseError) {
    const TempDir dir;
    auto qrels = std::make_shared<const Qrels>(Qrels::parse("q1 0 d1 1\n"));
    Evaluator ev(qrels, MeasureSet::parse({"map"}));
    auto run = dir.write("dup.run",
                         "q1 Q0 d1 1 3 t\n"
                         "q1 Q0 d2 2 2 t\n"
                         "q1 Q0 d1 3 1 t\n");
    auto e = expect_parse_error([&] { ev.evaluate_run(run); });
    EXPECT_EQ(e.line(), 3u);
    EXPECT_NE(e.message().find("duplicate document 'd1'"), std::string::npos) << e.what();
    EXPECT_NE(e.message().find("line 1"), std::string::npos) << e.what();
    // also when the duplicate is split across blocks of an unsorted run
    auto run2 = dir.write("dup2.run",
                          "q1 Q0 d1 1 3 t\n"
                          "q2 Q0 d2 1 2 t\n"
                          "q1 Q0 d1 2 1 t\n");
    auto e2 = expect_parse_error([&] { ev.evaluate_run(run2); });
    EXPECT_EQ(e2.line(), 3u);
    // As in trec_eval (form_res_rels.c), only the documents a query keeps are checked: a
    // duplicate below the -M cut, or in a query the qrels do not have, is no error.
    EvalOptions top1;
    top1.max_docs_per_query = 1;
    Evaluator ev1(qrels, MeasureSet::parse({"map"}), top1);
    auto r =
        ev1.evaluate_run(dir.write("dup3.run", "q1 Q0 d1 1 3 t\nq1 Q0 d2 2 2 t\nq1 Q0 d2 3 1 t\n"));
    EXPECT_EQ(r.summary_value("map"), 1.0);
    auto r2 =
        ev.evaluate_run(dir.write("dup4.run", "q1 Q0 d1 1 3 t\nzz Q0 x 1 2 t\nzz Q0 x 2 1 t\n"));
    EXPECT_EQ(r2.summary_value("map"), 1.0);
}

TEST(Evaluator, UnsortedRunGivesTheSameValues) {
    const TempDir dir;
    auto qrels = std::make_shared<const Qrels>(
        Qrels::parse("q1 0 a 1\nq1 0 b 0\nq1 0 c 2\nq2 0 x 1\nq2 0 y 1\n"));
    Evaluator ev(qrels, MeasureSet::parse({"num_ret", "map", "ndcg_cut.3", "P.2"}));
    auto sorted = dir.write("sorted.run",
                            "q1 Q0 a 1 3 t\nq1 Q0 b 2 2 t\nq1 Q0 c 3 1 t\n"
                            "q2 Q0 z 1 9 t\nq2 Q0 y 2 8 t\n");
    auto unsorted = dir.write("unsorted.run",
                              "q2 Q0 y 2 8 t\nq1 Q0 c 3 1 t\nq1 Q0 a 1 3 t\n"
                              "q2 Q0 z 1 9 t\nq1 Q0 b 2 2 t\n");
    auto a = ev.evaluate_run(sorted);
    auto b = ev.evaluate_run(unsorted);
    ASSERT_EQ(a.queries.size(), 2u);
    ASSERT_EQ(b.queries.size(), 2u);
    for (std::size_t i = 0; i < 2; ++i) {
        EXPECT_EQ(a.queries[i].qid, b.queries[i].qid);
        EXPECT_EQ(a.queries[i].values, b.queries[i].values);
    }
    // q1: a(1) b(0) c(2): AP = (1/1 + 2/3) / 2 = 0.8333; q2: z y(1): AP = (1/2) / 2 = 0.25
    EXPECT_NEAR(a.summary_value("map"), (5.0 / 6 + 0.25) / 2, 1e-12);
    EXPECT_EQ(a.summary_value("num_ret"), 5);
    // the same lists evaluated in memory give the same values
    auto whole = read_run(unsorted);
    EXPECT_EQ(whole.queries.size(), 2u);
    EXPECT_EQ(whole.queries[0].qid, "q2");
    EXPECT_EQ(whole.queries[0].docs.size(), 2u);
    auto c = ev.evaluate_run(whole);
    EXPECT_EQ(c.queries[0].values, a.queries[0].values);
}

TEST(Evaluator, InterleavedRunSpilledToDiskEqualsGroupedRun) {
    // 40 queries x 30 documents; lines written grouped, then fully interleaved (each query
    // comes back 30 times). With a 1 KB memory budget the interleaved run goes through
    // partitions spilled to temporary files; with -c every qrels query counts once.
    const TempDir dir;
    std::string qrels_text, grouped, interleaved;
    for (int q = 0; q < 40; ++q) {
        for (int d = 0; d < 30; d += 3) {
            qrels_text += std::to_string(q) + " 0 d" + std::to_string(d) + " " +
                          std::to_string((q + d) % 3) + "\n";
        }
    }
    qrels_text += "only_in_qrels 0 d1 1\n";
    for (int q = 0; q < 40; ++q) {
        for (int d = 0; d < 30; ++d) {
            grouped += std::to_string(q) + " Q0 d" + std::to_string(d) + " 0 " +
                       std::to_string((d * 7 + q) % 11) + " t\n";
        }
    }
    for (int d = 0; d < 30; ++d) {
        for (int q = 39; q >= 0; --q) {
            interleaved += std::to_string(q) + " Q0 d" + std::to_string(d) + " 0 " +
                           std::to_string((d * 7 + q) % 11) + " t\n";
        }
    }
    auto qrels = std::make_shared<const Qrels>(Qrels::parse(qrels_text));
    EvalOptions opt;
    opt.complete = true;
    opt.spill_budget_bytes = 1024;
    Evaluator ev(qrels, MeasureSet::parse({"all_trec"}), opt);
    auto a = ev.evaluate_run(dir.write("grouped.run", grouped));
    auto b = ev.evaluate_run(dir.write("interleaved.run", interleaved));
    ASSERT_EQ(a.queries.size(), 41u);
    ASSERT_EQ(b.queries.size(), 41u);
    EXPECT_EQ(a.summary_value("num_q"), 41);
    EXPECT_EQ(b.summary_value("num_q"), 41);
    EXPECT_EQ(b.summary_value("num_ret"), 40 * 30);
    for (std::size_t i = 0; i < a.queries.size(); ++i) {
        EXPECT_EQ(a.queries[i].qid, b.queries[i].qid);
        EXPECT_EQ(a.queries[i].values, b.queries[i].values) << a.queries[i].qid;
    }
    EXPECT_EQ(a.summary, b.summary);
    // No partition file is left behind.
    for (const auto& e : fs::directory_iterator(fs::temp_directory_path())) {
        EXPECT_NE(
            e.path().filename().string().rfind("plumb-eval-" + std::to_string(::getpid()) + "-", 0),
            0u)
            << e.path();
    }
    // Without -c the qrels-only query is skipped (trec_eval 9.0.x) and reported.
    EvalOptions plain;
    Evaluator ev2(qrels, MeasureSet::parse({"map"}), plain);
    auto c = ev2.evaluate_run(dir.write("interleaved2.run", interleaved));
    EXPECT_EQ(c.queries.size(), 40u);
    EXPECT_EQ(c.qrels_queries_without_results, std::vector<std::string>{"only_in_qrels"});
}

TEST(Evaluator, MsMarcoThreeColumnRun) {
    const TempDir dir;
    auto qrels = std::make_shared<const Qrels>(Qrels::parse("1 0 p7 1\n1 0 p3 0\n2 0 p9 2\n"));
    Evaluator ev(qrels, MeasureSet::parse({"recip_rank", "num_ret"}));
    // rank order, not file order: p7 is at rank 2 for query 1; p9 at rank 1 for query 2
    auto r = ev.evaluate_run(dir.write("ms.tsv", "1\tp7\t2\n1\tp3\t1\n2\tp9\t1\r\n"));
    ASSERT_EQ(r.queries.size(), 2u);
    // columns in trec_eval's order: num_ret, recip_rank
    EXPECT_EQ(r.queries[0].values, (std::vector<double>{2, 0.5}));
    EXPECT_EQ(r.queries[1].values, (std::vector<double>{1, 1.0}));
    EXPECT_EQ(r.run_id, "");
    auto e = expect_parse_error(
        [&] { read_run(dir.write("mixed.tsv", "1\tp7\t1\n1 Q0 p3 2 0.5 tag\n")); });
    EXPECT_EQ(e.line(), 2u);
    EXPECT_NE(std::string(e.what()).find("MS MARCO"), std::string::npos) << e.what();
    auto e2 = expect_parse_error([&] { read_run(dir.write("rank0.tsv", "1\tp7\t0\n")); });
    EXPECT_NE(std::string(e2.what()).find("positive integer"), std::string::npos) << e2.what();
}

TEST(Evaluator, RankColumnIgnoredScoresDecide) {
    const TempDir dir;
    auto qrels = std::make_shared<const Qrels>(Qrels::parse("q1 0 r 1\n"));
    Evaluator ev(qrels, MeasureSet::parse({"recip_rank"}));
    // rank column says r is first, but its score is the lowest; ties at 5 are broken by docid
    // descending (n2 before n1), so r is third.
    auto run = dir.write("rank.run", "q1 Q0 r 1 1 t\nq1 Q0 n1 2 5 t\nq1 Q0 n2 3 5 t\n");
    EXPECT_NEAR(ev.evaluate_run(run).summary_value("recip_rank"), 1.0 / 3, 1e-12);
}

TEST(Evaluator, TiesBreakByDocidDescendingBytewise) {
    // Equal scores: "b" > "a" > "B" byte-wise, so the order is b, a, B.
    const TempDir dir;
    auto qrels = std::make_shared<const Qrels>(Qrels::parse("q 0 a 1\n"));
    Evaluator ev(qrels, MeasureSet::parse({"recip_rank"}));
    auto run = dir.write("ties.run", "q Q0 a 1 1 t\nq Q0 B 2 1 t\nq Q0 b 3 1 t\n");
    EXPECT_DOUBLE_EQ(ev.evaluate_run(run).summary_value("recip_rank"), 0.5);
}

TEST(Evaluator, ConcurrentUseGivesIdenticalResults) {
    const TempDir dir;
    Qrels q;
    std::string run;
    for (int i = 0; i < 200; ++i) {
        const std::string qid = "q" + std::to_string(i);
        for (int d = 0; d < 30; d += 3) q.add(qid, "d" + std::to_string(d), d % 4);
        for (int d = 0; d < 40; ++d) {
            run += qid + " Q0 d" + std::to_string(d) + " 1 " + std::to_string((d * 7 + i) % 11) +
                   " t\n";
        }
    }
    auto path = dir.write("conc.run", run);
    Evaluator ev(std::make_shared<const Qrels>(std::move(q)),
                 MeasureSet::parse({"map", "ndcg_cut.10", "P.5", "bpref"}));
    EvalResult a, b;
    std::thread t1([&] { a = ev.evaluate_run(path); });
    std::thread t2([&] { b = ev.evaluate_run(path); });
    t1.join();
    t2.join();
    ASSERT_EQ(a.queries.size(), 200u);
    EXPECT_EQ(a.summary, b.summary);
    for (std::size_t i = 0; i < a.queries.size(); ++i) {
        EXPECT_EQ(a.queries[i].values, b.queries[i].values);
    }
}

TEST(Evaluator, CancelAndProgress) {
    const TempDir dir;
    std::string run;
    for (int i = 0; i < 300; ++i) run += "q" + std::to_string(i) + " Q0 d 1 1 t\n";
    auto path = dir.write("cancel.run", run);
    auto q = std::make_shared<const Qrels>(Qrels::parse("q1 0 d 1\n"));
    Evaluator ev(q, MeasureSet::parse({"map"}));
    std::uint64_t last_done = 0, last_total = 0;
    auto res = ev.evaluate_run(path, [&](std::uint64_t done, std::uint64_t total) {
        last_done = done;
        last_total = total;
    });
    EXPECT_EQ(res.queries.size(), 1u);
    EXPECT_EQ(last_total, run.size());
    EXPECT_EQ(last_done, run.size());
    CancelToken cancel;
    cancel.request();
    EXPECT_THROW(ev.evaluate_run(path, {}, &cancel), Error);
    EXPECT_THROW(ev.evaluate_run(dir.write("none", "") / "missing.run"), IoError);
}
