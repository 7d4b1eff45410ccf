// compare_runs (marks, corrections) on hand-built per-query values, and CLI smoke tests of
// `plumb compare`, `plumb eval-groups` and `plumb eval-subsets` on tiny files.

#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "eval/compare.hpp"
#include "plugin/error.hpp"
#include "tests/support/cli.hpp"
#include "tests/support/temp_dir.hpp"

namespace fs = std::filesystem;
using namespace plumb::eval;
using plumb::test::run_plumb;
using plumb::test::TempDir;

namespace {

EvalResult result_of(const std::vector<double>& values) {
    EvalResult r;
    Column c;
    c.name = "map";
    c.kind = ValueKind::Float;
    c.per_query = true;
    r.columns.push_back(c);
    for (std::size_t i = 0; i < values.size(); ++i) {
        QueryValues q;  // member-wise: robust to fields added to QueryValues
        q.qid = "q" + std::to_string(i + 1);
        q.values = {values[i]};
        r.queries.push_back(q);
    }
    double sum = 0;
    for (double v : values) sum += v;
    r.summary.push_back(sum / static_cast<double>(values.size()));
    return r;
}

// Six queries q1..q6 with one relevant document "r" each. Run A ranks r first (RR 1), run B
// ranks it at i + 1 for q_i (RR 1/2 .. 1/7: distinct differences to A), run D: q1,q2 first (1),
// q3,q4 second (0.5), q5,q6 third (1/3).
struct Fixture {
    TempDir dir;
    fs::path qrels, a, b, d;
    Fixture() {
        std::string q, ra, rb, rd;
        for (int i = 1; i <= 6; ++i) {
            const std::string id = "q" + std::to_string(i);
            q += id + " 0 r 1\n" + id + " 0 n1 0\n";
            ra += id + " Q0 r 1 3 A\n" + id + " Q0 n1 2 2 A\n" + id + " Q0 n2 3 1 A\n";
            for (int k = 1; k <= i + 1; ++k) {  // B: r at rank i + 1
                const std::string doc = k == i + 1 ? "r" : "y" + std::to_string(k);
                rb += id + " Q0 " + doc + " " + std::to_string(k) + " " + std::to_string(10 - k) +
                      " B\n";
            }
            const int rank = (i + 1) / 2;  // 1,1,2,2,3,3
            for (int k = 1; k <= 3; ++k) {
                const std::string doc = k == rank ? "r" : "x" + std::to_string(k);
                rd += id + " Q0 " + doc + " " + std::to_string(k) + " " + std::to_string(4 - k) +
                      " D\n";
            }
        }
        qrels = dir.write("qrels.txt", q);
        a = dir.write("runA.txt", ra);
        b = dir.write("runB.txt", rb);
        d = dir.write("runD.txt", rd);
    }
};

}  // namespace

TEST(CompareRuns, MarksAndCorrections) {
    // A = 1, .9, .8, .7, .6, .55; B = C = 0.5 everywhere (6 queries). A vs B: differences .5,
    // .4, .3, .2, .1, .05 (distinct, all positive) -> Wilcoxon exact p = 2/2^6 = 0.03125;
    // t = 3.628275563080048, p = 0.015087837876732929 (scipy ttest_rel). B vs C: all
    // differences 0 -> p = 1. Mean A = 4.55/6 = 0.758333.
    std::vector<EvalResult> rs{result_of({1, .9, .8, .7, .6, .55}),
                               result_of({.5, .5, .5, .5, .5, .5}),
                               result_of({.5, .5, .5, .5, .5, .5})};
    std::vector<std::string> names{"A", "B", "C"};
    CompareOptions o;
    auto t = compare_runs(names, rs, o);  // both tests, no correction, all pairs
    EXPECT_EQ(t.num_queries, 6u);
    ASSERT_EQ(t.pairs.size(), 3u);
    EXPECT_NEAR(t.means[0][0], 4.55 / 6.0, 1e-15);
    EXPECT_TRUE(t.pairs[0].wilcoxon->exact);
    EXPECT_DOUBLE_EQ(t.pairs[0].wilcoxon->p_value, 0.03125);
    EXPECT_NEAR(t.pairs[0].t->p_value, 0.015087837876732929, 1e-12);
    EXPECT_EQ(t.marks(0, 0), "bc");
    EXPECT_EQ(t.marks(1, 0), "");
    EXPECT_EQ(t.marks(2, 0), "");

    // Bonferroni, m = 3: Wilcoxon 3·0.03125 = 0.09375 >= 0.05 -> no mark with both tests...
    o.correction = Correction::Bonferroni;
    auto bon = compare_runs(names, rs, o);
    EXPECT_DOUBLE_EQ(bon.pairs[0].p_wilcoxon_adjusted, 0.09375);
    EXPECT_EQ(bon.marks(0, 0), "");
    // ... but the t-test alone still marks (3 · 0.0150878 = 0.0452635 < 0.05).
    o.test = TestKind::T;
    EXPECT_EQ(compare_runs(names, rs, o).marks(0, 0), "bc");
    // Holm: sorted 0.03125, 0.03125, 1 -> 3·0.03125 = 0.09375, max(0.09375, 2·0.03125) =
    // 0.09375, 1: no Wilcoxon mark.
    o.test = TestKind::Wilcoxon;
    o.correction = Correction::Holm;
    auto holm = compare_runs(names, rs, o);
    EXPECT_DOUBLE_EQ(holm.pairs[1].p_wilcoxon_adjusted, 0.09375);
    EXPECT_EQ(holm.marks(0, 0), "");
    // Baseline B: pairs (A,B) and (C,B); no correction -> A marked "b".
    o.correction = Correction::None;
    o.baseline = 1;
    auto base = compare_runs(names, rs, o);
    ASSERT_EQ(base.pairs.size(), 2u);
    EXPECT_EQ(base.marks(0, 0), "b");
    EXPECT_FALSE(base.pairs[0].t.has_value());  // Wilcoxon only

    auto latex = format_comparison(base, CompareFormat::Latex);
    EXPECT_NE(latex.find("0.7583$^{b}$"), std::string::npos) << latex;
    auto json = nlohmann::json::parse(format_comparison(t, CompareFormat::Json));
    EXPECT_EQ(json["table"][0]["marks"]["map"], "bc");

    EXPECT_THROW(compare_runs({"A"}, {rs[0]}, {}), plumb::InvalidArgument);
    CompareOptions bad;
    bad.columns = {"ndcg"};
    EXPECT_THROW(compare_runs(names, rs, bad), plumb::InvalidArgument);
    bad = {};
    bad.alpha = 1.5;
    EXPECT_THROW(compare_runs(names, rs, bad), plumb::InvalidArgument);
    EXPECT_THROW(parse_test_kind("z"), plumb::InvalidArgument);
    EXPECT_THROW(parse_compare_format("html"), plumb::InvalidArgument);
    EXPECT_EQ(run_letter(0), "a");
    EXPECT_EQ(run_letter(27), "b1");
}

// CLI tests start `plumb` (about 1-2 s each, mostly shared-library loading): few calls per test.

TEST(CompareCli, PaperStyleTableAndCsv) {
    Fixture f;
    auto r = run_plumb("compare --qrels " + f.qrels.string() + " --run " + f.a.string() +
                       " --run " + f.b.string() + " --name A --name B -m recip_rank");
    ASSERT_EQ(r.status, 0) << r.out;
    // A: mean RR 1, significantly better than B (mean (1/2 + ... + 1/7)/6 = 0.2655; scipy:
    // t p = 4.0075e-05, Wilcoxon exact p = 0.03125).
    EXPECT_NE(r.out.find("1.0000^b"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("0.2655"), std::string::npos) << r.out;
    // CSV, Wilcoxon only, B as baseline (by file name): the pair (A, B): W+ = 21, W- = 0.
    auto csv = run_plumb("compare --qrels " + f.qrels.string() + " --run " + f.a.string() +
                         " --run " + f.b.string() +
                         " -m recip_rank --format csv --test wilcoxon --baseline " + "runB.txt");
    ASSERT_EQ(csv.status, 0) << csv.out;
    EXPECT_NE(csv.out.find("recip_rank,runA.txt,runB.txt,1,"), std::string::npos) << csv.out;
    EXPECT_NE(csv.out.find(",,,,21,0,0.03125,0.03125,1\n"), std::string::npos) << csv.out;
    auto missing = run_plumb("compare --qrels " + f.qrels.string() + " --run " + f.a.string() +
                             " --run /nonexistent/run.txt");
    EXPECT_EQ(missing.status, 1);
    EXPECT_NE(missing.out.find("plumb: error:"), std::string::npos) << missing.out;
}

TEST(CompareCli, Groups) {
    Fixture f;
    // Attribute 1..6 for q1..q6: tercile edges 2.667 and 4.333 -> easy {q1,q2} (RR 1, 1),
    // medium {q3,q4} (0.5, 0.5), hard {q5,q6} (1/3, 1/3).
    auto groups = f.dir.write("complexity.tsv", "q1\t1\nq2\t2\nq3\t3\nq4\t4\nq5\t5\nq6\t6\n");
    auto g = run_plumb("eval-groups --qrels " + f.qrels.string() + " --run " + f.d.string() +
                       " --name D -m recip_rank --groups " + groups.string() + " --format csv");
    ASSERT_EQ(g.status, 0) << g.out;
    EXPECT_NE(g.out.find("D,recip_rank,easy,2,1.0000000000,0.0000000000,0.0000000000"),
              std::string::npos)
        << g.out;
    EXPECT_NE(g.out.find("D,recip_rank,medium,2,0.5000000000,0.0000000000,0.0000000000"),
              std::string::npos)
        << g.out;
    EXPECT_NE(g.out.find("D,recip_rank,hard,2,0.3333333333"), std::string::npos) << g.out;
    // Overall: mean (2 + 1 + 2/3)/6 = 0.6111111111.
    EXPECT_NE(g.out.find("D,recip_rank,all,6,0.6111111111"), std::string::npos) << g.out;
}

TEST(CompareCli, Subsets) {
    Fixture f;
    // Shown ranks: q1-q3 selected at rank 1, q4-q6 at rank 2, q7 unanswered (no qrels).
    std::string shown;
    for (int i = 1; i <= 7; ++i) {
        const std::string id = "q" + std::to_string(i);
        shown += id + "\t1\tp" + id + "a\t" + (i <= 3 ? "1" : "0") + "\n";
        shown += id + "\t2\tp" + id + "b\t" + (i >= 4 && i <= 6 ? "1" : "0") + "\n";
    }
    auto shown_file = f.dir.write("shown.tsv", shown);
    auto types = f.dir.write("types.tsv", "q1\tNUMERIC\nq7\tNUMERIC\nq2\tPERSON\n");
    auto s = run_plumb("eval-subsets --qrels " + f.qrels.string() + " --run " + f.d.string() +
                       " --name D --shown " + shown_file.string() + " --types " + types.string() +
                       " --format csv");
    ASSERT_EQ(s.status, 0) << s.out;
    // All = 7 queries: (1+1+0.5+0.5+1/3+1/3+0)/7 = (11/3)/7 = 0.5238095238.
    // S_2 = q1..q6: (11/3)/6 = 0.6111111111. S_1 = q1..q3: (1+1+0.5)/3 = 0.8333333333.
    EXPECT_NE(s.out.find("mrr_cut_10,All,7,D,0.5238095238"), std::string::npos) << s.out;
    EXPECT_NE(s.out.find("mrr_cut_10,2,6,D,0.6111111111"), std::string::npos) << s.out;
    EXPECT_NE(s.out.find("mrr_cut_10,1,3,D,0.8333333333"), std::string::npos) << s.out;
    // Unanswered: all 1/7; NUMERIC q1 (answered), q7 (unanswered) -> 1/2.
    EXPECT_NE(s.out.find("all,7,1,0.1428571429"), std::string::npos) << s.out;
    EXPECT_NE(s.out.find("NUMERIC,2,1,0.5000000000"), std::string::npos) << s.out;

    // qid list: q1, q5 and q9 (no judgements): mean over q1, q5 = (1 + 1/3)/2 = 0.6666666667.
    auto ids = f.dir.write("ids.txt", "q1\nq5\nq9\n");
    auto l = run_plumb("eval-subsets --qrels " + f.qrels.string() + " --run " + f.d.string() +
                       " --name D --qids " + ids.string() + " --format csv");
    ASSERT_EQ(l.status, 0) << l.out;
    EXPECT_NE(l.out.find("D,mrr_cut_10,2,0.6666666667"), std::string::npos) << l.out;

    auto bad = f.dir.write("badshown.tsv", "q1\t1\tp\t0\nq1\tx\tp2\t1\n");
    auto e = run_plumb("eval-subsets --qrels " + f.qrels.string() + " --run " + f.d.string() +
                       " --shown " + bad.string());
    EXPECT_EQ(e.status, 1);
    EXPECT_NE(e.out.find("badshown.tsv:2:"), std::string::npos) << e.out;
}

namespace {
// d1: she, her (c_f 2); d2: he (c_m 1); d3: his + she (1, 1); d4: none. Queries q1, q2 are
// neutral (n), q3 female.
struct BiasFixture {
    TempDir dir;
    fs::path words = dir.write("words.csv", "she,f\nher,f\nhe,m\nhis,m\n");
    fs::path corpus = dir.write("corpus.tsv",
                                "d1\tShe and her\nd2\the said\nd3\this friend and she\n"
                                "d4\tnothing here\n");
    fs::path run_file = dir.write("biasrun.txt",
                                  "q1 Q0 d1 1 3 R\nq1 Q0 d2 2 2 R\nq1 Q0 d3 3 1 R\n"
                                  "q2 Q0 d4 1 2 R\nq2 Q0 d2 2 1 R\nq3 Q0 d3 1 1 R\n");
    fs::path queries = dir.write("qlabels.tsv", "q1\tn\nq2\tn\nq3\tf\n");
};

// Neutral queries q1, q2; tc at t = 2: q1 RaB (f 1, m 0.5), q2 [d4, d2] (f 0, m 0.5):
// means f 0.5, m 0.5, bias 0. ARaB: q1 (f (2+1)/2 = 1.5, m (0+0.5)/2 = 0.25), q2 (0, 0.25):
// means f 0.75, m 0.25, bias m - f = -0.5.
const std::string kExpectedTc =
    "R,tc,2,2,0,0,0,0.0000000000,0.5000000000,0.5000000000,-0.5000000000,0.7500000000,"
    "0.2500000000";
}  // namespace

TEST(BiasCli, RabFromCorpusAndBiasFile) {
    BiasFixture b;
    auto r = run_plumb("eval-bias --run " + b.run_file.string() + " --name R --queries " +
                       b.queries.string() + " --label n --wordlist " + b.words.string() +
                       " --corpus " + b.corpus.string() + " --cutoffs 2 --format csv");
    ASSERT_EQ(r.status, 0) << r.out;
    EXPECT_NE(r.out.find(kExpectedTc), std::string::npos) << r.out;
    // bool at t = 2, q1: d1 (1, 0), d2 (0, 1) -> f 0.5, m 0.5; q2: d4 (0,0), d2 (0,1) -> f 0,
    // m 0.5. Means f 0.25, m 0.5, bias 0.25.
    EXPECT_NE(r.out.find("R,bool,2,2,0,0,0,0.2500000000,0.2500000000,0.5000000000"),
              std::string::npos)
        << r.out;

    // The same from a tc bias file.
    auto bias = b.dir.write("bias.tc.tsv",
                            "# plumb-gender-bias v1 variant=tc\nd1\t2\t2\t0\n"
                            "d2\t-1\t0\t1\nd3\t0\t1\t1\nd4\t0\t0\t0\n");
    auto f = run_plumb("eval-bias --run " + b.run_file.string() + " --name R --queries " +
                       b.queries.string() + " --label n --bias-file " + bias.string() +
                       " --variant tc --cutoffs 2 --format csv");
    ASSERT_EQ(f.status, 0) << f.out;
    EXPECT_NE(f.out.find(kExpectedTc), std::string::npos) << f.out;
    // --variant all (the default) needs tf and bool files too.
    auto all =
        run_plumb("eval-bias --run " + b.run_file.string() + " --bias-file " + bias.string());
    EXPECT_EQ(all.status, 1) << all.out;
    EXPECT_NE(all.out.find("no bias file for variant tf"), std::string::npos) << all.out;
}

TEST(BiasCli, RabFromIndexAndMissingPassage) {
    BiasFixture b;
    // From a plumb index of the corpus (stored passage text): same values as from the corpus.
    const auto idx = b.dir / "bias_index";
    auto built = run_plumb("index --quiet -c " + b.corpus.string() + " -i " + idx.string());
    ASSERT_EQ(built.status, 0) << built.out;
    auto fromidx = run_plumb("eval-bias --run " + b.run_file.string() + " --name R --queries " +
                             b.queries.string() + " --label n --wordlist " + b.words.string() +
                             " --index " + idx.string() + " --cutoffs 2 --format csv");
    ASSERT_EQ(fromidx.status, 0) << fromidx.out;
    EXPECT_NE(fromidx.out.find(kExpectedTc), std::string::npos) << fromidx.out;
    // A ranked passage missing from the corpus is an error naming it.
    auto small = b.dir.write("small.tsv", "d1\tshe\n");
    auto miss = run_plumb("eval-bias --run " + b.run_file.string() + " --wordlist " +
                          b.words.string() + " --corpus " + small.string());
    EXPECT_EQ(miss.status, 1) << miss.out;
    EXPECT_NE(miss.out.find("not in the corpus"), std::string::npos) << miss.out;
}

TEST(BiasCli, PrfAndLiwc) {
    BiasFixture b;
    // PRF with IBBR labels from the word list: d1 -1 (female), d2 +1, d3 ln2 - ln2 = 0, d4 0.
    // q1: relevant d1 (f, R 3), d2 (m, R 2); g0 = {d3 (R 1)}: PRF_m = PRF_f = 1.
    // q2: relevant d2 (m, R 1) vs d4 (R 2): PRF_m = 0. Means: PRF_m 0.5 (2 queries), PRF_f 1
    // (1 query), |dA-PRF| = 0.5.
    auto qrels = b.dir.write("biasqrels.txt", "q1 0 d1 1\nq1 0 d2 1\nq2 0 d2 1\n");
    auto p = run_plumb("eval-prf --run " + b.run_file.string() + " --name R --qrels " +
                       qrels.string() + " --wordlist " + b.words.string() + " --corpus " +
                       b.corpus.string() + " --format csv");
    ASSERT_EQ(p.status, 0) << p.out;
    EXPECT_NE(p.out.find("R,0.5000000000,2,1.0000000000,1,0.5000000000,0"), std::string::npos)
        << p.out;
    auto labels = b.dir.write("ibbr.tsv", "d1\t-1\nd2\t1\nd3\t0\nd4\t0\n");
    auto pl =
        run_plumb("eval-prf --run " + b.run_file.string() + " --name R --qrels " + qrels.string() +
                  " --labels " + labels.string() + " --format csv --per-query");
    ASSERT_EQ(pl.status, 0) << pl.out;
    // q1 nPRF_m = ½·2²·1 / (1·1) = 2; nPRF_f = ½·3²·1 = 4.5.
    EXPECT_NE(pl.out.find("R,q1,1,1,1,1.0000000000,1.0000000000,2.0000000000,4.5000000000"),
              std::string::npos)
        << pl.out;

    // LIWC difference, k = 2: f queries q1 [d1, d2] -> (0.5, 0.5), q3 [d3] -> (0.5, 0.5);
    // m query q2 [d4, d2] -> (0, 0.5). Difference f - m (0.5, 0), absolute (0.5, 0).
    auto cats = b.dir.write("cats.tsv",
                            "docid\tsocial\taffect\nd1\t1\t0\nd2\t0\t1\n"
                            "d3\t0.5\t0.5\nd4\t0\t0\n");
    auto glabels = b.dir.write("glabels.tsv", "q1\tf\nq2\tm\nq3\tf\n");
    const std::string liwc = "eval-liwc --run " + b.run_file.string() + " --categories " +
                             cats.string() + " --queries " + glabels.string() + " --k 2";
    auto l = run_plumb(liwc + " --format csv");
    ASSERT_EQ(l.status, 0) << l.out;
    EXPECT_NE(l.out.find("category,mean_f,mean_m,abs_difference,difference"), std::string::npos)
        << l.out;
    EXPECT_NE(l.out.find("social,0.5000000000,0.0000000000,0.5000000000,0.5000000000"),
              std::string::npos)
        << l.out;
    EXPECT_NE(l.out.find("affect,0.5000000000,0.5000000000,0.0000000000,0.0000000000"),
              std::string::npos)
        << l.out;
    // Groups swapped (m - f): social signed -0.5, absolute 0.5.
    auto s = run_plumb(liwc + " --group-a m --group-b f --format json");
    ASSERT_EQ(s.status, 0) << s.out;
    const auto j = nlohmann::json::parse(s.out);
    EXPECT_DOUBLE_EQ(j["categories"]["social"]["difference"].get<double>(), -0.5) << s.out;
    EXPECT_DOUBLE_EQ(j["categories"]["social"]["abs_difference"].get<double>(), 0.5) << s.out;
    EXPECT_DOUBLE_EQ(j["categories"]["affect"]["abs_difference"].get<double>(), 0.0) << s.out;
    // The text table shows both columns.
    auto t = run_plumb(liwc + " --group-a m --group-b f");
    ASSERT_EQ(t.status, 0) << t.out;
    EXPECT_NE(t.out.find("|m-f|"), std::string::npos) << t.out;
    EXPECT_NE(t.out.find("0.500000    -0.500000"), std::string::npos) << t.out;
}

TEST(CompareCli, GenderBiasMeasuresCompareLikeAnyOther) {
    // Passage m is male-leaning (ranking bias +1), n neutral (0). Run A puts m first for all six
    // queries: RaB@1 = +1 each, mean 1, |RaB@1| mean 1. Run B puts n first for q1..q5 and m
    // first for q6: RaB@1 mean 1/6 = 0.1667, |RaB@1| mean 0.1667.
    const TempDir dir;
    std::string qrels, a, b;
    for (int q = 1; q <= 6; ++q) {
        const std::string id = "q" + std::to_string(q);
        qrels += id + " 0 m 1\n" + id + " 0 n 1\n";
        a += id + " Q0 m 1 2 A\n" + id + " Q0 n 2 1 A\n";
        b += id + (q < 6 ? " Q0 n 1 2 B\n" : " Q0 m 1 2 B\n") + id +
             (q < 6 ? " Q0 m 2 1 B\n" : " Q0 n 2 1 B\n");
    }
    auto bias =
        dir.write("bias.tsv", "# plumb-gender-bias v1 variant=bool\nm\t-1\t0\t1\nn\t0\t0\t0\n");
    const std::string files = " --qrels " + dir.write("bias.qrels", qrels).string() + " --run " +
                              dir.write("A.run", a).string() + " --run " +
                              dir.write("B.run", b).string() + " --name A --name B --bias-file " +
                              bias.string();
    auto r = run_plumb("compare" + files + " -m rab_bool_cut.1 -m abs_rab_bool_cut.1 --format csv");
    ASSERT_EQ(r.status, 0) << r.out;
    EXPECT_NE(r.out.find("rab_bool_cut_1,A,B,1,0.1666666667,"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("abs_rab_bool_cut_1,A,B,1,0.1666666667,"), std::string::npos) << r.out;
    // Marks: lower |RaB| is better, so B beats A (differences 1,1,1,1,1,0: t p = 0.0041,
    // Wilcoxon normal approximation p = 0.037, both < 0.05); signed RaB is never marked.
    auto text = run_plumb("compare" + files + " -m rab_bool_cut.1 -m abs_rab_bool_cut.1");
    ASSERT_EQ(text.status, 0) << text.out;
    EXPECT_NE(text.out.find("0.1667^a"), std::string::npos) << text.out;
    EXPECT_EQ(text.out.find("^b"), std::string::npos) << text.out;
    EXPECT_EQ(text.out.find("0.1667^a", text.out.find("0.1667^a") + 1), std::string::npos)
        << text.out;  // only the |RaB| column is marked
}
