// The main job end to end at the tiny size: `scripts/run --tiny` with the built CLI, then the
// direction of each reproduced effect with tolerances. Paper 000 (Table 3): TK trained on the
// original triples loses on the rotated test set, TK trained on rotated triples does not (or far
// less); BM25 (bag of words) is unchanged by rotation; the BERT-CAT and BERT-DOT rows exist (their
// direction is printed by the script's checks but not asserted: at the tiny size the from-scratch
// BERTs do not learn a stable ranking). Table 4's analogue (uniform answer positions): TK trained
// on the original triples loses less on rotation than on early-answer data. Paper 002 (Appendix
// A): S_1 ⊆ ... ⊆ S_k ⊆ All. Paper 003 (its own, larger tiny collection): the baseline's
// deficit on the hardest complexity tercile, the cue-free TK's lower c_v and EqualizeIR's
// (noun-phrases weak learner) narrower hard-tercile gap and lower c_v (the other three weak
// learners' are printed, not robust at this size). Paper 004 (its own, larger tiny collection):
// IBBR lowers |dA-PRF|. Paper 001 (at the default size's settings): TK-Original prefers male
// words on dev, balanced augmentation at the dev-chosen ratio lowers the dev probe gap and
// |ARaB@10| (TF and Boolean) on the neutral test queries and keeps MRR@10; one-to-one matching
// adds equal female / male counts.
// Post-filter sweep and plumb audit: their outputs' shape. Deterministic: fixed seeds, one Torch
// thread per process.

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include "tests/test_tmp.hpp"

namespace fs = std::filesystem;

namespace {

nlohmann::json read_json(const fs::path& p) {
    std::ifstream in(p);
    std::stringstream ss;
    ss << in.rdbuf();
    return nlohmann::json::parse(ss.str());
}

const nlohmann::json* find_row(const nlohmann::json& table, const std::string& model,
                               const std::string& training) {
    for (const auto& r : table["rows"])
        if (r["model"] == model && r["training"] == training) return &r;
    return nullptr;
}

std::string read_file(const fs::path& p) {
    std::ifstream in(p);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

double ndcg_delta(const nlohmann::json& row) {
    return row["cells"]["ndcg_cut_10"]["delta"].get<double>();
}

}  // namespace

TEST(MainJob, TinyRunHasTheExpectedShape) {
    const fs::path out =
        plumb::test::process_dir("plumb_test_main_job_");
    fs::remove_all(out);
    fs::create_directories(out);
    const fs::path log = out / "run.log";
    const std::string cmd = "PLUMB_CLI='" + std::string(PLUMB_CLI_PATH) + "' PLUMB_OUT='" +
                            out.string() + "' PLUMB_SEED=42 PLUMB_THREADS=1 bash '" +
                            std::string(PLUMB_SOURCE_DIR) + "/scripts/run' --tiny > '" +
                            log.string() + "' 2>&1";
    const int st = std::system(cmd.c_str());
    ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << read_file(log);

    // ---- Table 3 (paper 000)
    const auto table = read_json(out / "table3.json");
    const auto* bm25 = find_row(table, "BM25", "-");
    const auto* orig = find_row(table, "TK", "Original");
    const auto* deb = find_row(table, "TK", "Debiased");
    ASSERT_TRUE(bm25 && orig && deb) << table.dump(2);
    for (const char* model : {"BERT-CAT", "BERT-DOT"}) {
        EXPECT_TRUE(find_row(table, model, "Original")) << model;
        EXPECT_TRUE(find_row(table, model, "Debiased")) << model;
    }

    // BM25 ranks bags of words: rotation changes nothing.
    for (const char* m : {"ndcg_cut_10", "mrr_cut_10", "recall_10"})
        EXPECT_NEAR((*bm25)["cells"][m]["delta"].get<double>(), 0.0, 1e-12) << m;

    // The shape of Table 3 on nDCG@10: original training loses clearly more on the rotated test
    // than rotated training does.
    const double d_orig = ndcg_delta(*orig);
    const double d_deb = ndcg_delta(*deb);
    EXPECT_LT(d_orig, -0.05) << "original training should lose on the rotated test\n"
                             << read_file(out / "table3.txt");
    EXPECT_LT(d_orig, d_deb - 0.05) << read_file(out / "table3.txt");
    EXPECT_GT(d_deb, -0.08) << read_file(out / "table3.txt");
    // Both models must have learned something beyond chance on the original test.
    EXPECT_GT((*orig)["cells"]["ndcg_cut_10"]["original"].get<double>(), 0.2);

    // ---- Table 4's analogue: with uniform answer positions there is no early-position shortcut
    // to learn, so original training loses clearly less on rotation than on early answers.
    const auto table4 = read_json(out / "table4.json");
    const auto* orig_u = find_row(table4, "TK", "Original");
    ASSERT_TRUE(orig_u) << table4.dump(2);
    EXPECT_GT(ndcg_delta(*orig_u), d_orig + 0.05)
        << read_file(out / "table4.txt") << read_file(out / "table3.txt");

    // ---- The bias table: six rows, RaB/ARaB present, MATS for the TK rows only.
    const auto bias = read_json(out / "bias-table.json");
    ASSERT_EQ(bias["rows"].size(), 6u) << bias.dump(2);
    EXPECT_TRUE(bias["rows"][0]["mats"].is_null());
    EXPECT_TRUE(bias["rows"][2]["mats"].is_number());
    EXPECT_TRUE(bias["rows"][4]["mats"].is_number());
    EXPECT_EQ(bias["rows"][2]["queries"].get<int>(), bias["rows"][0]["queries"].get<int>());

    // ---- Appendix A (paper 002): nested subsets, every run evaluated, unanswered per type.
    const auto app = read_json(out / "appendix-a.json");
    const auto& subsets = app["subsets"]["mrr_cut_10"];
    ASSERT_GE(subsets.size(), 3u) << app.dump(2);
    EXPECT_EQ(subsets[0]["subset"], "All");
    for (std::size_t i = 1; i < subsets.size(); ++i) {
        EXPECT_LE(subsets[i]["num_queries"].get<int>(), subsets[i - 1]["num_queries"].get<int>());
        EXPECT_TRUE(subsets[i]["means"].contains("TK-Original")) << subsets[i].dump();
        EXPECT_TRUE(subsets[i]["means"].contains("BERT-DOT-Debiased")) << subsets[i].dump();
    }
    EXPECT_EQ(app["unanswered"][0]["type"], "all");

    // ---- Paper 001 on its own collection (gendered queries, train judgements leaning male,
    // near-duplicate train negatives with mirrored gender; TK's gender words share a gender
    // axis; dev / test planted passages exactly gender-balanced), 003 and 004 on their own (003:
    // complexity cue position, unseen clause words, full-coverage hard negatives; 004: gendered
    // candidates with a planted training preference). Each is asserted below on its section's
    // own collection: 001 runs at the default size's settings at --tiny (scripts/run), 003 and
    // 004 on larger tiny collections (PLUMB_003_TINY; section 004's --tiny sizes).
    const auto balance = read_json(out / "causes" / "balance" / "report.json");
    ASSERT_TRUE(balance["one_to_one"].get<bool>());
    EXPECT_EQ(balance["negatives"], "generated_negatives.tsv");
    for (const auto& r : balance["outputs"]) {
        EXPECT_EQ(r["added_female"].get<int>(), r["added_male"].get<int>()) << r.dump();
        EXPECT_GT(r["added"].get<int>(), 0) << r.dump();
    }
    const auto t001 = read_json(out / "table-001.json");
    ASSERT_EQ(t001["rows"].size(), 4u) << t001.dump(2);  // original, r = 0.25, 0.5, 1
    EXPECT_GT(t001["neutral_queries"].get<int>(), 500);
    for (const auto& r : t001["rows"]) {  // the paper's measures in every row, two seeds each
        EXPECT_TRUE(r.contains("arab_tf") && r.contains("arab_bool")) << r.dump();
        ASSERT_EQ(r["seeds"].size(), 2u) << r.dump();
        const double mean =
            (r["seeds"][0]["mrr10"].get<double>() + r["seeds"][1]["mrr10"].get<double>()) / 2;
        EXPECT_NEAR(r["mrr10"].get<double>(), mean, 1e-12) << r.dump();
    }
    const auto dev001 = read_json(out / "table-001-dev.json");
    ASSERT_EQ(dev001["rows"].size(), 4u) << dev001.dump(2);
    for (const auto& r : dev001["rows"]) {
        ASSERT_EQ(r["seeds"].size(), 2u) << r.dump();
        for (const auto& m : r["seeds"]) {
            EXPECT_GT(m["passages"].get<int>(), 0) << m.dump();  // gendered passages probed
            EXPECT_GE(m["sd"].get<double>(), 0.0) << m.dump();
        }
    }
    // The ratio chosen on dev is one of the balanced training sets, and the test table marks it.
    const std::string chosen = dev001["chosen"].get<std::string>();
    EXPECT_EQ(chosen.rfind("tk-balanced-r", 0), 0u) << chosen;
    EXPECT_EQ(t001["chosen"], chosen);
    // 001's direction. Observed at the default size's settings (= this section at --tiny) at
    // collection seeds 42 / 43 / 44 / 45 / 46 (PLUMB_SEED; training seeds s, s+1; 1,000 test
    // queries, 579-622 of them neutral; r = 1 chosen on dev at every seed; scripts/run
    // --sections 001, 2026-11-26 21:04-21:19 UTC; the test runs 42):
    //   premise, smallest (probe gap - 2 SE) of the two training seeds: 0.273 / 0.099 / 0.029 /
    //   0.068 / 0.346; dev probe gap TK-Original -> chosen: 0.312 -> 0.183 / 0.163 -> -0.020 /
    //   0.048 -> -0.011 / 0.086 -> 0.004 / 0.495 -> 0.091;
    //   test ARaB@10 tf +0.157 -> +0.072 / +0.115 -> -0.002 / +0.027 -> -0.012 / +0.041 ->
    //   -0.018 / +0.243 -> +0.030, Boolean +0.134 -> +0.059 / +0.101 -> +0.001 / +0.024 ->
    //   -0.008 / +0.030 -> -0.020 / +0.210 -> +0.024; MRR@10 chosen / original 1.17 / 1.18 /
    //   1.11 / 1.16 / 1.25.
    // Seeds 44 and 45 failed before three changes: dev / test gender exactly balanced
    // (--balanced-eval-gender), 1,000 test queries instead of 200, and r = 0.5 and 1 among the
    // candidates (README, 001).
    // Tolerances: about half the smallest margin over the five seeds.
    const nlohmann::json& o001 = dev001["rows"][0];
    EXPECT_EQ(o001["set"], "tk-original");
    for (const auto& m : o001["seeds"])  // the premise: the original model prefers male words
        EXPECT_GT(m["gap"].get<double>() - 2 * m["se"].get<double>(), 0.014) << m.dump();
    const nlohmann::json* c001 = nullptr;
    for (const auto& r : dev001["rows"])
        if (r["set"] == chosen) c001 = &r;
    ASSERT_NE(c001, nullptr);
    EXPECT_LT((*c001)["gap"].get<double>(), o001["gap"].get<double>() - 0.03) << c001->dump();
    const nlohmann::json* t_orig = &t001["rows"][0];
    const nlohmann::json* t_chosen = nullptr;
    for (const auto& r : t001["rows"])
        if (r["name"] == chosen) t_chosen = &r;
    ASSERT_NE(t_chosen, nullptr);
    EXPECT_EQ((*t_orig)["name"], "tk-original");
    EXPECT_LT(std::abs((*t_chosen)["arab_tf"].get<double>()),
              std::abs((*t_orig)["arab_tf"].get<double>()) - 0.007)
        << t001.dump(2);
    EXPECT_LT(std::abs((*t_chosen)["arab_bool"].get<double>()),
              std::abs((*t_orig)["arab_bool"].get<double>()) - 0.005)
        << t001.dump(2);
    EXPECT_GE((*t_chosen)["mrr10"].get<double>(), 0.95 * (*t_orig)["mrr10"].get<double>());
    // ---- Paper 003 on its own tiny collection (scripts/run: 6,000 passages, 400 train queries
    // = 4,000 triples, 60 dev and 150 test queries, 200 steps of the 32-d TK; the preset's 10 dev /
    // 20 test queries and 150 steps on 600 triples left even the baseline's deficit within
    // noise). Checked at collection seeds 42, 43, 44 (PLUMB_SEED; the test runs 42); test
    // nDCG@10 per complexity tercile (plumb debias complexity) easy / medium / hard and c_v:
    //   TK baseline  42: 0.772 / 0.688 / 0.299, 0.352   43: 0.698 / 0.827 / 0.384, 0.292
    //                44: 0.806 / 0.721 / 0.402, 0.270
    //   c_v minus the baseline's at 42 / 43 / 44: cue-free TK (rotated triples) -0.230 / -0.091 /
    //   -0.125; EqualizeIR noun-phrases (alpha 0.5) -0.086 / -0.051 / -0.002, less-data (0.3)
    //   -0.012 / -0.001 / -0.001, fewer-steps -0.001 / +0.016 / +0.014, smaller-model +0.006 /
    //   +0.001 / +0.011.
    // Asserted, with about half the smallest observed margin: the baseline's hard tercile below
    // its easy and medium ones (smallest gap 0.314) by 0.15, the cue-free TK's c_v below the
    // baseline's (smallest gap 0.091) by 0.04. Those were the old alphas (README: the default
    // size's dev choices); at --tiny noun-phrases has its own dev choice, alpha 0.7, and
    // less-data 0.1 (scripts/run: the default size's rule over 0.1 / 0.3 / 0.5 / 0.7 / 1 on the
    // dev queries of seeds 42 / 43 / 44; 0.7 added to the grid after alpha 1 had been seen).
    // The table now also gives the hard-tercile gap, hard - (easy + medium) / 2, and its change
    // against the baseline over the same test queries with a paired standard error (per-query
    // differences per tercile): the c_v figures above were not noise of the measurement - the
    // paired SE of noun-phrases' old change was 0.019-0.026, its change +0.098 / +0.091 / +0.009
    // - but the old alpha did not move the model at seed 44. With alpha 0.7, noun-phrases'
    // gap change (SE) and c_v minus the baseline's: seed 42 +0.135 (0.036), -0.102; 43 +0.129
    // (0.044), -0.084; 44 +0.072 (0.037), -0.041; and at seeds not used for the choice 45
    // +0.030 (0.033), -0.015 (46: README); with 300 test queries (PLUMB_003_TINY=6000,400,60,300,
    // 200) at 42 / 43 / 44 +0.245 (0.027) / +0.088 (0.030) / +0.088 (0.027), c_v -0.155 /
    // -0.061 / -0.054. Asserted, about half the smallest (seed 45's): noun-phrases narrows the
    // gap by more than 0.015 and lowers c_v by more than 0.007. less-data at alpha 0.1 is within
    // noise (gap change -0.002 / +0.015 / -0.016 / +0.019 at 42 / 43 / 44 / 45, SE ~0.012), as
    // are fewer-steps and smaller-model (|change| <= 0.023 at 42-45): not asserted. The paired
    // change equals the difference of the two rows' gaps from plumb debias complexity's tercile
    // means up to the 4 decimals of trec_eval's per-query output (asserted, 1e-3).
    const auto t003 = read_json(out / "table-003.json");
    {
        std::map<std::string, const nlohmann::json*> row;
        for (const auto& r : t003["rows"]) row[r["name"].get<std::string>()] = &r;
        ASSERT_TRUE(row.count("tk-base") && row.count("tk-cuefree")) << t003.dump(2);
        const auto& base = *row["tk-base"];
        const double hard = base["hard"].get<double>();
        const double gap =
            std::min(base["easy"].get<double>(), base["medium"].get<double>()) - hard;
        const std::string table = read_file(out / "table-003.txt");
        EXPECT_GT(gap, 0.15) << "the baseline should lose on the hardest tercile\n" << table;
        const double cv = base["cv"].get<double>();
        EXPECT_LT((*row["tk-cuefree"])["cv"].get<double>(), cv - 0.04) << table;
        ASSERT_TRUE(row.count("tk-poe-noun-phrases")) << table;
        const auto& np = *row["tk-poe-noun-phrases"];
        EXPECT_DOUBLE_EQ(t003["alpha"]["tk-poe-noun-phrases"].get<double>(), 0.7);
        EXPECT_GT(np["gap_change"].get<double>(), 0.015)
            << "EqualizeIR (noun-phrases) should narrow the hard-tercile gap\n" << table;
        EXPECT_LT(np["cv"].get<double>(), cv - 0.007) << table;
        // The gap of every row from its tercile means; the paired change from per-query values.
        EXPECT_TRUE(base["gap_change"].is_null() && base["gap_change_se"].is_null());
        for (const auto& r : t003["rows"]) {
            const double row_gap = r["hard"].get<double>() -
                                   (r["easy"].get<double>() + r["medium"].get<double>()) / 2;
            EXPECT_NEAR(r["gap"].get<double>(), row_gap, 1e-12) << r.dump();
            if (&r == &base) continue;
            EXPECT_NEAR(r["gap_change"].get<double>(), row_gap - base["gap"].get<double>(), 1e-3)
                << r.dump();
            EXPECT_GT(r["gap_change_se"].get<double>(), 0.0) << r.dump();
        }
    }
    // Baseline, cue-free TK, EqualizeIR with four weak learners.
    ASSERT_EQ(t003["rows"].size(), 6u) << t003.dump(2);
    for (const auto& r : t003["rows"]) {
        const double mu = r["mu"].get<double>(), sd = r["sigma"].get<double>();
        EXPECT_NEAR(r["cv"].get<double>(), sd / mu, 1e-12);
        EXPECT_GT(mu, 0.2) << r.dump();  // every model ranks better than chance
    }
    // EqualizeIR's alpha per weak learner (the dev choices, README) is recorded with the rows.
    for (const char* w : {"fewer-steps", "less-data", "smaller-model", "noun-phrases"}) {
        const auto& a = t003["alpha"][std::string("tk-poe-") + w];
        EXPECT_TRUE(a.is_number() && a.get<double>() > 0 && a.get<double>() <= 1) << w;
    }
    // The PoE diagnosis on training pairs: the baseline and the four weak learners, every pair
    // of the first 3,000 of the section's 4,000 triples counted once per model, p_B a
    // probability.
    const auto margins = read_json(out / "table-003-margins.json");
    EXPECT_EQ(margins["triples"].get<int>(), 3000);
    std::map<std::string, int> pairs;
    for (const auto& r : margins["rows"]) {
        pairs[r["model"].get<std::string>()] += r["pairs"].get<int>();
        EXPECT_GT(r["p_pos"].get<double>(), 0.0) << r.dump();
        EXPECT_LT(r["p_pos"].get<double>(), 1.0) << r.dump();
    }
    EXPECT_EQ(pairs.size(), 5u);
    for (const auto& [model, n] : pairs) EXPECT_EQ(n, 3000) << model;
    // The dev diagnosis per planted level: BM25, the six models and the four weak learners.
    ASSERT_EQ(t003["dev"].size(), 11u) << t003["dev"].dump(2);
    for (const auto& r : t003["dev"]) {
        if (r["mu"].is_null()) continue;  // a level without dev queries (not at seed 42)
        const double sum =
            r["simple"].get<double>() + r["medium"].get<double>() + r["complex"].get<double>();
        const double mu = sum / 3;
        EXPECT_NEAR(r["mu"].get<double>(), mu, 1e-12) << r.dump();
        EXPECT_EQ(r["n"][0].get<int>() + r["n"][1].get<int>() + r["n"][2].get<int>(), 60)
            << r.dump();  // the section's 60 dev queries
    }
    // 004 (own collection: gendered candidates, a gender preference planted in the training
    // triples): the test table (DOT, IBBR-PD, IBBR-TS) with PRF and nPRF over each model's
    // re-ranked candidates (its dev-tuned depth, 20 at this size), the standard error of
    // PRF_m - PRF_f, the paired change of PRF_m - PRF_f against the baseline, the trainer's nPRF
    // non-relevant set (the query's own negatives) and R (softmax), and the dev table lambda was
    // chosen on (one candidate per term by default).
    const auto t004 = read_json(out / "table-004.json");
    ASSERT_EQ(t004["rows"].size(), 3u) << t004.dump(2);  // DOT, IBBR-PD, IBBR-TS
    EXPECT_EQ(t004["split"], "test");
    for (const auto& r : t004["rows"]) {
        EXPECT_TRUE(r["delta_prf"].is_number()) << r.dump();
        EXPECT_NEAR(r["delta_prf"].get<double>(),
                    std::fabs(r["prf_male"].get<double>() - r["prf_female"].get<double>()), 1e-12);
        EXPECT_TRUE(r["nprf_male"].is_number() && r["nprf_female"].is_number()) << r.dump();
        EXPECT_EQ(r["depth"].get<int>(), 20) << r.dump();
        EXPECT_GT(r["queries_male"].get<int>(), 0) << r.dump();
        EXPECT_GT(r["queries_female"].get<int>(), 0) << r.dump();
        EXPECT_GT(r["se_delta_prf"].get<double>(), 0.0) << r.dump();
    }
    EXPECT_TRUE(t004["rows"][0]["fairness"].is_null());  // the contrastive baseline
    for (int i : {1, 2}) EXPECT_EQ(t004["rows"][i]["fairness_negatives"], "own");
    for (int i : {1, 2}) EXPECT_EQ(t004["rows"][i]["fairness_scores"], "softmax");
    EXPECT_EQ(t004["rows"][1]["fairness"], "pd");
    EXPECT_EQ(t004["rows"][2]["fairness"], "ts");
    const auto t004dev = read_json(out / "table-004-dev.json");
    EXPECT_EQ(t004dev["split"], "dev");
    EXPECT_EQ(t004dev["rows"].size(), 3u) << t004dev.dump(2);
    // 004's direction. At --tiny the section's collection is larger than the preset (5,000
    // passages, 300 train queries: 3,000 triples; 80 dev and 100 test queries) and its 1 x 64
    // BERT-DOTs train 100 steps: on the preset's 60 train queries (600 triples, 60 steps) the
    // baseline did not learn the planted preference (dev |dA-PRF| 0.074 / 0.013 / 0.132 at
    // collection seeds 42 / 43 / 44, SE ~0.09). Observed with this setting at collection seeds
    // 42 / 43 / 44 / 45 / 46: the baseline's PRF_m - PRF_f (the planted male preference) dev
    // +0.090 / +0.147 / +0.099 / +0.119 / +0.143, test +0.119 / +0.157 / +0.223 / +0.126 /
    // +0.141 (SE 0.05-0.06); IBBR-PD's |dA-PRF| lower than the baseline's on dev by 0.027 /
    // 0.110 / 0.089 / 0.117 / 0.122 and on test by 0.094 / 0.061 / 0.052 / 0.117 / 0.012;
    // IBBR-TS's lower on test by 0.032 / 0.133 / 0.094 / 0.021 / 0.006 (on dev not at 44 and 45);
    // test nDCG@10 of either IBBR model >= 0.875 x the baseline's. The paired change of PRF_m -
    // PRF_f is beyond one paired SE for PD at 42 / 43 / 44 / 45 only, so not asserted. Asserted,
    // with tolerances inside those spreads: the preference learned (gap > 0.05 on dev and test),
    // PD lower on dev by > 0.01 and lower on test, TS lower on test (its smallest margin, 0.006 at
    // seed 46, is why nothing stronger is asserted for TS), nDCG@10 >= 0.8 x the baseline's.
    {
        const auto& base = t004["rows"][0];
        const auto& dbase = t004dev["rows"][0];
        const std::string tables = read_file(out / "table-004-dev.txt") +
                                   read_file(out / "table-004.txt");
        for (const auto* b : {&base, &dbase})
            EXPECT_GT((*b)["prf_male"].get<double>() - (*b)["prf_female"].get<double>(), 0.05)
                << tables;
        const auto& pd = t004["rows"][1];
        const auto& ts = t004["rows"][2];
        const auto& dpd = t004dev["rows"][1];  // the one PD candidate (lambda 10)
        EXPECT_EQ(dpd["fairness"], "pd");
        EXPECT_LT(dpd["delta_prf"].get<double>(), dbase["delta_prf"].get<double>() - 0.01)
            << tables;
        EXPECT_LT(pd["delta_prf"].get<double>(), base["delta_prf"].get<double>()) << tables;
        EXPECT_LT(ts["delta_prf"].get<double>(), base["delta_prf"].get<double>()) << tables;
        for (const auto* r : {&pd, &ts})
            EXPECT_GE((*r)["ndcg10"].get<double>(), 0.8 * base["ndcg10"].get<double>())
                << tables;
        EXPECT_TRUE(base["gap_change"].is_null());  // the baseline against itself: none
        EXPECT_TRUE(pd["gap_change"].is_number() && pd["gap_change_se"].get<double>() > 0);
    }

    // ---- Post-filter sweep on TK-Original: the unfiltered row, FA*IR at 3 proportions, bias
    // balance at 4 budgets, and the plot.
    const auto sweep = read_json(out / "sweep" / "sweep.json");
    ASSERT_EQ(sweep["rows"].size(), 8u) << sweep.dump(2);
    EXPECT_EQ(sweep["rows"][0]["filter"], "none");
    EXPECT_TRUE(fs::exists(out / "sweep" / "sweep.png"));
    // ---- plumb audit: all four axes computed from the 000 runs.
    const auto audit = read_json(out / "audit" / "audit.json");
    ASSERT_EQ(audit["axes"].size(), 4u) << audit["axes"].dump(2);
    for (const auto& a : audit["axes"]) EXPECT_TRUE(a["computed"].get<bool>()) << a.dump();
    // Position: no input missing (MATS of TK and BERT-DOT from plumb debias mats, "n/a" for BM25
    // and BERT-CAT, a rotated run for every run); MATS of the TK and BERT-DOT runs only.
    EXPECT_TRUE(audit["axes"][0]["missing"].empty()) << audit["axes"][0].dump();
    for (const auto& r : audit["position"]) {
        const std::string name = r["run"].get<std::string>();
        const bool has = name.rfind("TK-", 0) == 0 || name.rfind("BERT-DOT-", 0) == 0;
        EXPECT_EQ(r["mats"].is_number(), has) << r.dump();
    }

    // The report states every direction check.
    const auto checks = read_file(out / "checks.txt");
    for (const char* c : {"000 TK", "000u TK", "001 TK", "003 TK", "004 BERT-DOT"})
        EXPECT_NE(checks.find(c), std::string::npos) << c << "\n" << checks;
    fs::remove_all(out);
}
