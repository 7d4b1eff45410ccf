// Fusion (eval/fuse.hpp) on tiny runs whose fused scores are derived by hand from the methods'
// definitions (Cormack et al. 2009 for RRF; Fox & Shaw 1993 for CombSUM/MNZ/ANZ/MAX/MIN/MED;
// ranx's normalisations and weighted sums), and CLI tests of `plumb fuse`.
//
// The runs (written to files, read back with read_run, so each is ranked as trec_eval ranks it:
// score descending, ties by docid descending):
//   A  q1: d1 4, d2 2, d3 2, d4 0        ranks d1 1, d3 2, d2 3, d4 4 (d3 > d2 in the tie)
//   B  q1: d3 10, d5 6, d1 2             ranks d3 1, d5 2, d1 3
//      q2: x 1                           (a query only in B)
//   C  q1: d3 7, d2 5, d5 5
//   D  q1: d2 5, d5 5                    (constant scores)
// Normalised scores, q1 (min-max, z-score, max, sum):
//   A  min-max d1 1, d2 .5, d3 .5, d4 0; z (mean 2, sd √2) d1 √2, d2 0, d3 0, d4 −√2;
//      max d1 1, d2 .5, d3 .5, d4 0; sum (Σ(s−0) = 8) d1 .5, d2 .25, d3 .25, d4 0
//   B  min-max d3 1, d5 .5, d1 0; z (mean 6, sd √(32/3)) d3 √(3/2), d5 0, d1 −√(3/2);
//      max d3 1, d5 .6, d1 .2; sum (Σ(s−2) = 12) d3 2/3, d5 1/3, d1 0

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "eval/fuse.hpp"
#include "eval/run.hpp"
#include "plugin/error.hpp"
#include "tests/support/cli.hpp"
#include "tests/support/run_file.hpp"
#include "tests/support/temp_dir.hpp"

namespace fs = std::filesystem;
using namespace plumb::eval;
using plumb::Candidate;
using plumb::RankedList;
// `Run` alone names testing::Test::Run inside a TEST body.
using EvalRun = plumb::eval::Run;
using plumb::test::read_run_lines;
using plumb::test::read_text;
using plumb::test::TempDir;

namespace {

// The rank column is deliberately wrong and the lines unsorted: only scores rank.
const char* kRunA =
    "q1 Q0 d4 1 0 a\n"
    "q1 Q0 d2 1 2 a\n"
    "q1 Q0 d1 9 4 a\n"
    "q1 Q0 d3 1 2 a\n";
const char* kRunB =
    "q2 Q0 x 1 1 b\n"
    "q1 Q0 d1 1 2 b\n"
    "q1 Q0 d3 3 10 b\n"
    "q1 Q0 d5 2 6 b\n";
const char* kRunC =
    "q1 Q0 d3 1 7 c\n"
    "q1 Q0 d2 2 5 c\n"
    "q1 Q0 d5 3 5 c\n";
const char* kRunD =
    "q1 Q0 d2 1 5 d\n"
    "q1 Q0 d5 2 5 d\n";

/// Writes `text` to a scratch file `name` and reads it back (the run keeps the name for errors).
EvalRun run_of(const std::string& name, const char* text) {
    const TempDir dir;
    return read_run(dir.write(name, text));
}

std::vector<EvalRun> runs(std::initializer_list<std::pair<const char*, const char*>> specs) {
    std::vector<EvalRun> out;
    for (const auto& [name, text] : specs) out.push_back(run_of(name, text));
    return out;
}

std::vector<EvalRun> ab() { return runs({{"a.run", kRunA}, {"b.run", kRunB}}); }

FusionOptions options(FusionMethod m, ScoreNorm n = ScoreNorm::None,
                      std::vector<double> weights = {}) {
    FusionOptions o;
    o.method = m;
    o.norm = n;
    o.weights = std::move(weights);
    return o;
}

using Expected = std::vector<std::pair<std::string, double>>;

void expect_list(const RankedList& got, const std::string& qid, const Expected& want) {
    EXPECT_EQ(got.qid, qid);
    ASSERT_EQ(got.candidates.size(), want.size()) << "query " << qid;
    for (std::size_t i = 0; i < want.size(); ++i) {
        EXPECT_EQ(got.candidates[i].docid, want[i].first) << "query " << qid << " rank " << i + 1;
        EXPECT_NEAR(got.candidates[i].score, want[i].second, 1e-6)
            << "query " << qid << " rank " << i + 1;
    }
}

/// Fuses A and B and checks q1 against `want` (and returns the fused run).
std::vector<RankedList> fuse_ab(const FusionOptions& o, const Expected& want) {
    const auto r = ab();
    auto fused = fuse_runs(std::span<const EvalRun>(r), o);
    EXPECT_EQ(fused.size(), 2u);
    if (!fused.empty()) expect_list(fused[0], "q1", want);
    return fused;
}

}  // namespace

TEST(Fuse, ParseNames) {
    EXPECT_EQ(parse_fusion_method("rrf"), FusionMethod::Rrf);
    EXPECT_EQ(parse_fusion_method("combmnz"), FusionMethod::CombMnz);
    EXPECT_EQ(parse_fusion_method("mnz"), FusionMethod::CombMnz);  // ranx's name
    EXPECT_EQ(parse_fusion_method("wsum"), FusionMethod::WSum);
    EXPECT_THROW(parse_fusion_method("borda"), plumb::ConfigError);
    EXPECT_EQ(parse_score_norm("min-max"), ScoreNorm::MinMax);
    EXPECT_EQ(parse_score_norm("zmuv"), ScoreNorm::ZScore);
    EXPECT_THROW(parse_score_norm("rank"), plumb::ConfigError);
    EXPECT_EQ(fusion_method_name(FusionMethod::CombSum), "combsum");
    EXPECT_EQ(score_norm_name(ScoreNorm::ZScore), "z-score");
}

TEST(Fuse, RrfRanksAsTrecEvalAndUnionOfQueries) {
    // d1: 1/61 + 1/63, d3: 1/62 + 1/61 (d3 is rank 2 in A: it beats d2 in the tie at 2),
    // d5: 1/62, d2: 1/63, d4: 1/64.
    auto fused = fuse_ab(options(FusionMethod::Rrf), {{"d3", 1.0 / 62 + 1.0 / 61},
                                                      {"d1", 1.0 / 61 + 1.0 / 63},
                                                      {"d5", 1.0 / 62},
                                                      {"d2", 1.0 / 63},
                                                      {"d4", 1.0 / 64}});
    // q2 only in B: fused with nothing.
    expect_list(fused[1], "q2", {{"x", 1.0 / 61}});
    // k = 1: d3 1/3 + 1/2, d1 1/2 + 1/4, d5 1/3, d2 1/4, d4 1/5.
    auto o = options(FusionMethod::Rrf);
    o.rrf_k = 1;
    fuse_ab(o, {{"d3", 1.0 / 3 + 0.5}, {"d1", 0.75}, {"d5", 1.0 / 3}, {"d2", 0.25}, {"d4", 0.2}});
    // Weighted 3, 1 (k = 60): d1 3/61 + 1/63 overtakes d3 3/62 + 1/61.
    fuse_ab(options(FusionMethod::Rrf, ScoreNorm::None, {3, 1}), {{"d1", 3.0 / 61 + 1.0 / 63},
                                                                  {"d3", 3.0 / 62 + 1.0 / 61},
                                                                  {"d2", 3.0 / 63},
                                                                  {"d4", 3.0 / 64},
                                                                  {"d5", 1.0 / 62}});
    // Normalisation does not change ranks: ignored.
    fuse_ab(options(FusionMethod::Rrf, ScoreNorm::ZScore), {{"d3", 1.0 / 62 + 1.0 / 61},
                                                            {"d1", 1.0 / 61 + 1.0 / 63},
                                                            {"d5", 1.0 / 62},
                                                            {"d2", 1.0 / 63},
                                                            {"d4", 1.0 / 64}});
}

TEST(Fuse, QueryOrderIsFirstAppearance) {
    // B lists q2 first: with B first, q2 comes first; the union keeps A's q1 once.
    const auto r = runs({{"b.run", kRunB}, {"a.run", kRunA}});
    auto fused = fuse_runs(std::span<const EvalRun>(r), options(FusionMethod::Rrf));
    ASSERT_EQ(fused.size(), 2u);
    EXPECT_EQ(fused[0].qid, "q2");
    EXPECT_EQ(fused[1].qid, "q1");
}

TEST(Fuse, CombSumEveryNormalisation) {
    // none: d1 4+2, d3 2+10, d2 2, d4 0, d5 6; the tie d1 = d5 = 6 goes to docid ascending.
    fuse_ab(options(FusionMethod::CombSum),
            {{"d3", 12}, {"d1", 6}, {"d5", 6}, {"d2", 2}, {"d4", 0}});
    // min-max: d1 1+0, d3 .5+1, d2 .5, d5 .5, d4 0.
    auto fused = fuse_ab(options(FusionMethod::CombSum, ScoreNorm::MinMax),
                         {{"d3", 1.5}, {"d1", 1}, {"d2", 0.5}, {"d5", 0.5}, {"d4", 0}});
    // q2: a one-document list is constant: min-max gives 0 (ranx).
    expect_list(fused[1], "q2", {{"x", 0}});
    // z-score: d1 √2 − √1.5, d3 0 + √1.5, d2 0, d5 0, d4 −√2.
    const double r2 = std::sqrt(2.0), r15 = std::sqrt(1.5);
    fused = fuse_ab(options(FusionMethod::CombSum, ScoreNorm::ZScore),
                    {{"d3", r15}, {"d1", r2 - r15}, {"d2", 0}, {"d5", 0}, {"d4", -r2}});
    expect_list(fused[1], "q2", {{"x", 0}});
    // max: d1 1 + .2, d3 .5 + 1, d5 .6, d2 .5, d4 0.
    fused = fuse_ab(options(FusionMethod::CombSum, ScoreNorm::Max),
                    {{"d3", 1.5}, {"d1", 1.2}, {"d5", 0.6}, {"d2", 0.5}, {"d4", 0}});
    expect_list(fused[1], "q2", {{"x", 1}});
    // sum: d1 .5 + 0, d3 .25 + 2/3, d5 1/3, d2 .25, d4 0.
    fused =
        fuse_ab(options(FusionMethod::CombSum, ScoreNorm::Sum),
                {{"d3", 0.25 + 2.0 / 3}, {"d1", 0.5}, {"d5", 1.0 / 3}, {"d2", 0.25}, {"d4", 0}});
    expect_list(fused[1], "q2", {{"x", 0}});
}

TEST(Fuse, CombMnzCountsRunsRetrievingTheDocument) {
    // none: d1 6·2, d3 12·2, d5 6·1, d2 2·1, d4 0.
    fuse_ab(options(FusionMethod::CombMnz),
            {{"d3", 24}, {"d1", 12}, {"d5", 6}, {"d2", 2}, {"d4", 0}});
    // min-max: d1 1·2, d3 1.5·2, d2 .5, d5 .5, d4 0.
    fuse_ab(options(FusionMethod::CombMnz, ScoreNorm::MinMax),
            {{"d3", 3}, {"d1", 2}, {"d2", 0.5}, {"d5", 0.5}, {"d4", 0}});
    // With D (constant: min-max 0 for d2 and d5), d2 and d5 are retrieved twice: (.5 + 0)·2.
    const auto r = runs({{"a.run", kRunA}, {"b.run", kRunB}, {"d.run", kRunD}});
    auto fused =
        fuse_runs(std::span<const EvalRun>(r), options(FusionMethod::CombMnz, ScoreNorm::MinMax));
    ASSERT_EQ(fused.size(), 2u);
    expect_list(fused[0], "q1", {{"d3", 3}, {"d1", 2}, {"d2", 1}, {"d5", 1}, {"d4", 0}});
}

TEST(Fuse, CombAnzMaxMinMed) {
    // ANZ: d1 6/2, d3 12/2, d5 6, d2 2, d4 0 (tie d3 = d5 = 6: docid ascending).
    fuse_ab(options(FusionMethod::CombAnz),
            {{"d3", 6}, {"d5", 6}, {"d1", 3}, {"d2", 2}, {"d4", 0}});
    // MAX: d1 4, d3 10, d5 6, d2 2, d4 0.
    fuse_ab(options(FusionMethod::CombMax),
            {{"d3", 10}, {"d5", 6}, {"d1", 4}, {"d2", 2}, {"d4", 0}});
    // MIN: d1 2, d3 2, d2 2, d5 6, d4 0.
    fuse_ab(options(FusionMethod::CombMin),
            {{"d5", 6}, {"d1", 2}, {"d2", 2}, {"d3", 2}, {"d4", 0}});
    // MED over A, B, C: d1 {4,2} 3, d3 {2,10,7} 7, d2 {2,5} 3.5, d5 {6,5} 5.5, d4 {0} 0.
    const auto r = runs({{"a.run", kRunA}, {"b.run", kRunB}, {"c.run", kRunC}});
    auto fused = fuse_runs(std::span<const EvalRun>(r), options(FusionMethod::CombMed));
    ASSERT_EQ(fused.size(), 2u);
    expect_list(fused[0], "q1", {{"d3", 7}, {"d5", 5.5}, {"d2", 3.5}, {"d1", 3}, {"d4", 0}});
}

TEST(Fuse, WeightedSumAndWeightedMnz) {
    // wsum, min-max, 0.7 / 0.3: d1 .7, d3 .35 + .3, d2 .35, d5 .15, d4 0.
    auto fused = fuse_ab(options(FusionMethod::WSum, ScoreNorm::MinMax, {0.7, 0.3}),
                         {{"d1", 0.7}, {"d3", 0.65}, {"d2", 0.35}, {"d5", 0.15}, {"d4", 0}});
    // q2: B's weight times B's (constant: 0) score.
    expect_list(fused[1], "q2", {{"x", 0}});
    // wsum, none: d1 2.8 + .6, d3 1.4 + 3, d5 1.8, d2 1.4, d4 0.
    fuse_ab(options(FusionMethod::WSum, ScoreNorm::None, {0.7, 0.3}),
            {{"d3", 4.4}, {"d1", 3.4}, {"d5", 1.8}, {"d2", 1.4}, {"d4", 0}});
    // wmnz (ranx): Σ s · Σ w over the runs retrieving d: d1 1·1, d3 1.5·1, d2 .5·.7, d5 .5·.3.
    fuse_ab(options(FusionMethod::WMnz, ScoreNorm::MinMax, {0.7, 0.3}),
            {{"d3", 1.5}, {"d1", 1}, {"d2", 0.35}, {"d5", 0.15}, {"d4", 0}});
}

TEST(Fuse, DepthCutsEachQuery) {
    auto o = options(FusionMethod::CombSum);
    o.depth = 2;
    fuse_ab(o, {{"d3", 12}, {"d1", 6}});
}

TEST(Fuse, InMemoryListsRankInListOrderAndKeepTextAndTrace) {
    // RankedList input is ranked in its own order (y is rank 2 although its score is higher).
    RankedList a{"q", {{"x", 1, "text x", {{"bm25", 1}}}, {"y", 5, "text y", {}}}};
    RankedList b{"q", {{"y", 0.5f, "", {}}}};
    const RankedList lists[2] = {a, b};
    auto o = options(FusionMethod::Rrf);
    o.stage = "hybrid";
    auto r = fuse(lists, o);
    expect_list(r, "q", {{"y", 1.0 / 62 + 1.0 / 61}, {"x", 1.0 / 61}});
    EXPECT_EQ(r.candidates[1].text, "text x");
    ASSERT_EQ(r.candidates[1].trace.size(), 2u);
    EXPECT_EQ(r.candidates[1].trace[0].stage, "bm25");
    EXPECT_EQ(r.candidates[1].trace[1].stage, "hybrid");
    EXPECT_FLOAT_EQ(r.candidates[1].trace[1].score, r.candidates[1].score);
    EXPECT_EQ(r.candidates[0].text, "text y");  // from the first list holding it
    // In-memory runs matched by qid; a qid twice in one run is refused.
    const std::vector<RankedList> run1{a}, run2{b, RankedList{"q2", {{"z", 1, "", {}}}}};
    const std::vector<RankedList> pair[2] = {run1, run2};
    auto fused = fuse_runs(std::span<const std::vector<RankedList>>(pair), o);
    ASSERT_EQ(fused.size(), 2u);
    EXPECT_EQ(fused[1].qid, "q2");
    const std::vector<RankedList> twice[2] = {{a, a}, run2};
    EXPECT_THROW(fuse_runs(std::span<const std::vector<RankedList>>(twice), o),
                 plumb::InvalidArgument);
}

TEST(Fuse, InvalidOptions) {
    const auto r = ab();
    const std::span<const EvalRun> s(r);
    // Weight count must match the runs.
    EXPECT_THROW(fuse_runs(s, options(FusionMethod::WSum, ScoreNorm::None, {1, 2, 3})),
                 plumb::InvalidArgument);
    // Weighted methods need weights; unweighted ones refuse them.
    EXPECT_THROW(fuse_runs(s, options(FusionMethod::WSum)), plumb::InvalidArgument);
    EXPECT_THROW(fuse_runs(s, options(FusionMethod::CombSum, ScoreNorm::None, {1, 1})),
                 plumb::InvalidArgument);
    auto o = options(FusionMethod::Rrf);
    o.rrf_k = -1;
    EXPECT_THROW(fuse_runs(s, o), plumb::InvalidArgument);
    // An infinite score cannot be fused by score: ParseError naming the file and line; RRF
    // only needs its rank.
    const auto with_inf =
        runs({{"a.run", kRunA}, {"inf.run", "q1 Q0 d1 1 3 t\nq1 Q0 d9 2 inf t\n"}});
    try {
        fuse_runs(std::span<const EvalRun>(with_inf), options(FusionMethod::CombSum));
        FAIL() << "expected ParseError";
    } catch (const plumb::ParseError& e) {
        EXPECT_EQ(e.line(), 2u);
        EXPECT_NE(std::string(e.what()).find("inf.run:2:"), std::string::npos) << e.what();
    }
    auto rrf = fuse_runs(std::span<const EvalRun>(with_inf), options(FusionMethod::Rrf));
    // inf ranks d9 first in its run (d1 second): d1 1/61 + 1/62, d9 1/61, then A's d3, d2, d4.
    expect_list(rrf[0], "q1",
                {{"d1", 1.0 / 61 + 1.0 / 62},
                 {"d9", 1.0 / 61},
                 {"d3", 1.0 / 62},
                 {"d2", 1.0 / 63},
                 {"d4", 1.0 / 64}});
}

// ------------------------------------------------------------------------------------------
// plumb fuse
// ------------------------------------------------------------------------------------------

namespace {

/// `plumb fuse <args>`, standard error merged into the output.
plumb::test::CliResult cli(const std::string& args) {
    return plumb::test::run_plumb("fuse " + args);
}

std::string ab_args(const TempDir& dir) {
    return "--run " + dir.write("a.run", kRunA).string() + " --run " +
           dir.write("b.run", kRunB).string();
}

/// Temporaries (`*.tmp.*`) left in `dir`.
std::vector<fs::path> leftovers(const TempDir& dir) {
    std::vector<fs::path> out;
    for (const auto& e : fs::directory_iterator(dir.path)) {
        if (e.path().filename().string().find(".tmp.") != std::string::npos) out.push_back(e);
    }
    return out;
}

}  // namespace

TEST(FuseCli, RrfWritesARankedTaggedRun) {
    const TempDir dir;
    const auto out = dir / "rrf.run";
    auto r = cli(ab_args(dir) + " --output " + out.string() + " --tag fused");
    ASSERT_EQ(r.status, 0) << r.out;
    const auto lines = read_run_lines(out);
    const std::vector<std::pair<std::string, std::string>> want{
        {"q1", "d3"}, {"q1", "d1"}, {"q1", "d5"}, {"q1", "d2"}, {"q1", "d4"}, {"q2", "x"}};
    ASSERT_EQ(lines.size(), want.size()) << read_text(out);
    for (std::size_t i = 0; i < want.size(); ++i) {
        EXPECT_EQ(lines[i].qid, want[i].first);
        EXPECT_EQ(lines[i].q0, "Q0");
        EXPECT_EQ(lines[i].docid, want[i].second);
        EXPECT_EQ(lines[i].rank, i < 5 ? static_cast<int>(i) + 1 : 1);
        EXPECT_EQ(lines[i].tag, "fused");
    }
    EXPECT_NEAR(lines[0].score, 1.0 / 62 + 1.0 / 61, 1e-8);
    EXPECT_NEAR(lines[5].score, 1.0 / 61, 1e-8);
    EXPECT_TRUE(leftovers(dir).empty());
}

TEST(FuseCli, CombMnzDefaultsToMinMaxAndCutsToK) {
    const TempDir dir;
    const auto out = dir / "mnz.run";
    auto r = cli(ab_args(dir) + " --method combmnz --k 3 --output " + out.string());
    ASSERT_EQ(r.status, 0) << r.out;
    const auto lines = read_run_lines(out);
    ASSERT_EQ(lines.size(), 4u) << read_text(out);  // q1 cut to 3, q2's one document
    EXPECT_EQ(lines[0].docid, "d3");
    EXPECT_NEAR(lines[0].score, 3, 1e-6);
    EXPECT_EQ(lines[1].docid, "d1");
    EXPECT_NEAR(lines[1].score, 2, 1e-6);
    EXPECT_EQ(lines[2].docid, "d2");  // .5, tied with d5: docid ascending
    EXPECT_NEAR(lines[2].score, 0.5, 1e-6);
    EXPECT_EQ(lines[3].docid, "x");
    EXPECT_NEAR(lines[3].score, 0, 1e-9);
    EXPECT_EQ(lines[0].tag, "plumb-fuse-combmnz");
    // --norm none: d3 24, d1 12, d5 6.
    r = cli(ab_args(dir) + " --method combmnz --norm none --k 3 --output " + out.string());
    ASSERT_EQ(r.status, 0) << r.out;
    const auto raw = read_run_lines(out);
    ASSERT_GE(raw.size(), 3u);
    EXPECT_NEAR(raw[0].score, 24, 1e-6);
    EXPECT_EQ(raw[2].docid, "d5");
}

TEST(FuseCli, WeightedSum) {
    const TempDir dir;
    const auto out = dir / "wsum.run";
    auto r = cli(ab_args(dir) + " --method wsum --weights 0.7,0.3 --output " + out.string());
    ASSERT_EQ(r.status, 0) << r.out;
    const auto lines = read_run_lines(out);
    ASSERT_EQ(lines.size(), 6u);
    EXPECT_EQ(lines[0].docid, "d1");
    EXPECT_NEAR(lines[0].score, 0.7, 1e-6);
    EXPECT_EQ(lines[1].docid, "d3");
    EXPECT_NEAR(lines[1].score, 0.65, 1e-6);
}

TEST(FuseCli, ThreeRuns) {
    // CombSUM, none, over A, B, D: d1 4+2, d3 2+10, d2 2+5, d5 6+5, d4 0.
    const TempDir dir;
    const auto out = dir / "three.run";
    auto r = cli(ab_args(dir) + " --run " + dir.write("d.run", kRunD).string() +
                 " --method combsum --norm none --quiet --output " + out.string());
    ASSERT_EQ(r.status, 0) << r.out;
    EXPECT_EQ(r.out, "");  // --quiet
    const auto lines = read_run_lines(out);
    const std::vector<std::pair<std::string, double>> want{{"d3", 12}, {"d5", 11}, {"d2", 7},
                                                           {"d1", 6},  {"d4", 0},  {"x", 1}};
    ASSERT_EQ(lines.size(), want.size()) << read_text(out);
    for (std::size_t i = 0; i < want.size(); ++i) {
        EXPECT_EQ(lines[i].docid, want[i].first);
        EXPECT_NEAR(lines[i].score, want[i].second, 1e-6);
    }
}

TEST(FuseCli, UsageErrors) {
    const TempDir dir;
    const auto out = dir / "usage.run";
    auto r = cli(ab_args(dir) + " --method wsum --weights 0.5,0.3,0.2 --output " + out.string());
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.out.find("--weights has 3 values for 2 runs"), std::string::npos) << r.out;
    r = cli(ab_args(dir) + " --method wsum --output " + out.string());
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.out.find("needs --weights"), std::string::npos) << r.out;
    r = cli(ab_args(dir) + " --method combsum --weights 1,1 --output " + out.string());
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.out.find("--weights applies to"), std::string::npos) << r.out;
    r = cli(ab_args(dir) + " --weights 1,x --output " + out.string());
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.out.find("'x' is not a finite number"), std::string::npos) << r.out;
    r = cli(ab_args(dir) + " --method borda --output " + out.string());
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.out.find("unknown fusion method 'borda'"), std::string::npos) << r.out;
    r = cli(ab_args(dir) + " --norm z-score --output " + out.string());  // rrf fuses ranks
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.out.find("--norm does not apply"), std::string::npos) << r.out;
    r = cli(ab_args(dir) + " --method combsum --rrf-k 10 --output " + out.string());
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.out.find("--rrf-k applies"), std::string::npos) << r.out;
    r = cli("--run " + dir.write("a.run", kRunA).string() + " --output " + out.string());
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.out.find("at least two --run"), std::string::npos) << r.out;
    EXPECT_FALSE(fs::exists(out));
}

TEST(FuseCli, BadRunNamesFileAndLineAndLeavesOutputUntouched) {
    const TempDir dir;
    const auto out = dir.write("kept.run", "old content\n");
    const auto bad = dir.write("bad.run", "q1 Q0 d1 1 3 t\nq1 Q0 d2 2 high t\n");
    auto r = cli("--run " + dir.write("a.run", kRunA).string() + " --run " + bad.string() +
                 " --output " + out.string());
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.out.find(bad.string() + ":2:"), std::string::npos) << r.out;
    EXPECT_EQ(read_text(out), "old content\n");
    // A missing run file is an error naming it.
    r = cli("--run " + dir.write("a.run", kRunA).string() + " --run " +
            (dir / "missing.run").string() + " --output " + out.string());
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.out.find("missing.run"), std::string::npos) << r.out;
    EXPECT_EQ(read_text(out), "old content\n");
    EXPECT_TRUE(leftovers(dir).empty());
    // A successful run replaces the file whole.
    r = cli(ab_args(dir) + " --output " + out.string());
    ASSERT_EQ(r.status, 0) << r.out;
    EXPECT_EQ(read_run_lines(out).size(), 6u);
    EXPECT_EQ(read_text(out).find("old content"), std::string::npos);
    EXPECT_TRUE(leftovers(dir).empty());
}
