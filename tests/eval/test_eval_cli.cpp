// `plumb eval` smoke tests: trec_eval's command line and output format, JSON/CSV, errors.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/support/cli.hpp"
#include "tests/support/temp_dir.hpp"

using plumb::test::TempDir;

namespace {

/// Runs `plumb eval <args>`; stdout (and stderr when `merge_stderr`) captured.
plumb::test::CliResult plumb_eval(const std::string& args, bool merge_stderr = false) {
    return plumb::test::run_plumb("eval " + args, merge_stderr);
}

// q1: relevant d1 d3 (R = 2); run ranks d1(R) d2 d3(R) -> AP = (1 + 2/3) / 2 = 0.8333,
// P_5 = 2/5, P_10 = 2/10. q2: relevant x with grade 2; run ranks y x -> AP = 1/2, P_5 = 0.2.
const char* kQrels = "q1 0 d1 1\nq1 0 d2 0\nq1 0 d3 1\nq2 0 x 2\nq3 0 w 1\n";
const char* kRun =
    "q1 Q0 d1 1 3.0 runA\n"
    "q1 Q0 d2 2 2.0 runA\n"
    "q1 Q0 d3 3 1.0 runA\n"
    "q2 Q0 y 1 2.0 runA\n"
    "q2 Q0 x 2 1.0 runA\n";

}  // namespace

TEST(EvalCli, TrecEvalCommandLineAndFormat) {
    const TempDir dir;
    auto q = dir.write("a.qrels", kQrels);
    auto r = dir.write("a.run", kRun);
    auto res = plumb_eval("-q -m map -m P.5,10 " + q.string() + " " + r.string());
    ASSERT_EQ(res.status, 0);
    EXPECT_EQ(res.out,
              "map                   \tq1\t0.8333\n"
              "P_5                   \tq1\t0.4000\n"
              "P_10                  \tq1\t0.2000\n"
              "map                   \tq2\t0.5000\n"
              "P_5                   \tq2\t0.2000\n"
              "P_10                  \tq2\t0.1000\n"
              "map                   \tall\t0.6667\n"  // (0.8333 + 0.5) / 2
              "P_5                   \tall\t0.3000\n"
              "P_10                  \tall\t0.1500\n");
    // attached values, bundled flags, options after the files, -c, -l
    auto res2 = plumb_eval(q.string() + " " + r.string() + " -mmap -mnum_q -cq -l2");
    ASSERT_EQ(res2.status, 0);
    // -l 2: q1 has no relevant document (AP 0), q2: x grade 2 at rank 2 -> 0.5; -c adds q3 (0);
    // mean over the 3 qrels queries = 0.1667
    EXPECT_EQ(res2.out,
              "map                   \tq1\t0.0000\n"
              "map                   \tq2\t0.5000\n"
              "map                   \tq3\t0.0000\n"
              "num_q                 \tall\t3\n"
              "map                   \tall\t0.1667\n");
}

TEST(EvalCli, DefaultMeasuresAreTrecEvalOfficial) {
    const TempDir dir;
    auto q = dir.write("b.qrels", kQrels);
    auto r = dir.write("b.run", kRun);
    auto res = plumb_eval(q.string() + " " + r.string());
    ASSERT_EQ(res.status, 0);
    EXPECT_EQ(res.out.rfind("runid                 \tall\trunA\n", 0), 0u) << res.out;
    EXPECT_NE(res.out.find("num_q                 \tall\t2\n"), std::string::npos);
    EXPECT_NE(res.out.find("num_rel_ret           \tall\t3\n"), std::string::npos);
    EXPECT_NE(res.out.find("iprec_at_recall_0.50  \tall\t"), std::string::npos);
    EXPECT_NE(res.out.find("P_1000                \tall\t0.0015\n"), std::string::npos);
}

TEST(EvalCli, JsonOutputFileNoSummaryAndMaxDocs) {
    const TempDir dir;
    auto q = dir.write("c.qrels", kQrels);
    auto r = dir.write("c.run", kRun);
    auto out = dir / "res.json";
    // -M 1: q1 keeps d1 -> AP (1/1)/2 = 0.5; q2 keeps y -> 0. -n: no "all".
    auto res = plumb_eval("--format json --output " + out.string() + " -qn -M1 -m map " +
                          q.string() + " " + r.string());
    ASSERT_EQ(res.status, 0);
    EXPECT_EQ(res.out, "");  // written to the file
    std::ifstream in(out);
    auto j = nlohmann::json::parse(in);
    EXPECT_NEAR(j["queries"]["q1"]["map"].get<double>(), 0.5, 1e-12);
    EXPECT_NEAR(j["queries"]["q2"]["map"].get<double>(), 0.0, 1e-12);
    EXPECT_FALSE(j.contains("all"));
    EXPECT_EQ(j["run_id"], "runA");
}

TEST(EvalCli, ErrorsNameFileAndLine) {
    const TempDir dir;
    auto q = dir.write("d.qrels", kQrels);
    auto bad = dir.write("bad.run", "q1 Q0 d1 1 3.0 runA\nq1 Q0 d2 2 abc runA\n");
    auto res = plumb_eval("-m map " + q.string() + " " + bad.string(), true);
    EXPECT_EQ(res.status, 1);
    EXPECT_NE(res.out.find("bad.run:2"), std::string::npos) << res.out;
    auto other = dir.write("other.run", "zz Q0 d1 1 3.0 runA\n");
    auto res3 = plumb_eval(q.string() + " " + other.string(), true);
    EXPECT_EQ(res3.status, 1);
    EXPECT_NE(res3.out.find("no queries with both"), std::string::npos) << res3.out;
    // Usage errors (trec_eval's option syntax) exit 2.
    auto unknown = plumb_eval("--no-such-option " + q.string() + " " + other.string(), true);
    EXPECT_EQ(unknown.status, 2);
    EXPECT_EQ(unknown.out.rfind("plumb: error: unknown option --no-such-option", 0), 0u)
        << unknown.out;
    auto one_file = plumb_eval(q.string(), true);
    EXPECT_EQ(one_file.status, 2);
    auto bad_level = plumb_eval("-l x " + q.string() + " " + other.string(), true);
    EXPECT_EQ(bad_level.status, 2);
}

TEST(EvalCli, GenderBiasMeasuresBesideTrecEvalOnes) {
    // Passage bias file (tc): bias = female - male; ranking-level bias is male - female:
    // d1 -> -2, d2 -> +1, d3 -> 0, d4 (no entry) -> 0.
    const TempDir dir;
    auto bias = dir.write("bias.tc.tsv",
                          "# plumb-gender-bias v1 variant=tc\n"
                          "d1\t2\t2\t0\nd2\t-1\t0\t1\nd3\t0\t1\t1\n");
    auto qrels = dir.write("bias.qrels", "q1 0 d1 1\nq2 0 d2 1\n");
    auto run = dir.write("bias.run",
                         "q1 Q0 d1 1 4 r\nq1 Q0 d2 2 3 r\nq1 Q0 d3 3 2 r\nq1 Q0 d4 4 1 r\n"
                         "q2 Q0 d2 1 1 r\n");
    auto r = plumb_eval(
        "-q -m rab_tc_cut.2,10 -m arab_tc_cut.2,10 -m abs_rab_tc_cut.2 "
        "--bias-file '" +
        bias.string() + "' '" + qrels.string() + "' '" + run.string() + "'");
    ASSERT_EQ(r.status, 0) << r.out;
    // q1: RaB@2 = (-2 + 1) / 2 = -0.5; RaB@10 over the 4 ranked = -1/4;
    //     ARaB@2 = (RaB@1 + RaB@2) / 2 = (-2 - 0.5) / 2 = -1.25;
    //     ARaB@10 = (-2 - 0.5 - 1/3 - 0.25) / 4 = -0.7708; |RaB@2| = 0.5.
    // q2: one passage, +1 at every cutoff. Means: RaB@2 0.25, RaB@10 0.375, ARaB@2 -0.125,
    //     ARaB@10 0.1146, |RaB@2| 0.75.
    const std::string expected =
        "rab_tc_cut_2          \tq1\t-0.5000\n"
        "rab_tc_cut_10         \tq1\t-0.2500\n"
        "arab_tc_cut_2         \tq1\t-1.2500\n"
        "arab_tc_cut_10        \tq1\t-0.7708\n"
        "abs_rab_tc_cut_2      \tq1\t0.5000\n"
        "rab_tc_cut_2          \tq2\t1.0000\n"
        "rab_tc_cut_10         \tq2\t1.0000\n"
        "arab_tc_cut_2         \tq2\t1.0000\n"
        "arab_tc_cut_10        \tq2\t1.0000\n"
        "abs_rab_tc_cut_2      \tq2\t1.0000\n"
        "rab_tc_cut_2          \tall\t0.2500\n"
        "rab_tc_cut_10         \tall\t0.3750\n"
        "arab_tc_cut_2         \tall\t-0.1250\n"
        "arab_tc_cut_10        \tall\t0.1146\n"
        "abs_rab_tc_cut_2      \tall\t0.7500\n";
    EXPECT_EQ(r.out, expected);

    // Without a bias file, or with a file of another variant: clear errors.
    auto no_file =
        plumb_eval("-m rab_tc_cut.10 '" + qrels.string() + "' '" + run.string() + "'", true);
    EXPECT_EQ(no_file.status, 1);
    EXPECT_NE(no_file.out.find("--bias-file"), std::string::npos) << no_file.out;
    auto wrong = plumb_eval("-m rab_tf_cut.10 --bias-file '" + bias.string() + "' '" +
                                qrels.string() + "' '" + run.string() + "'",
                            true);
    EXPECT_EQ(wrong.status, 1);
    EXPECT_NE(wrong.out.find("variant"), std::string::npos) << wrong.out;
}
