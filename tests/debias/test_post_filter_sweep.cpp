// The post-filter sweep (debias/post_filter_sweep.hpp) on a three-query run whose every number
// is derived by hand below, and its plot (markers parsed back from the SVG).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
// g++ 12 at -O1 with -fsanitize=address,undefined (the sanitizer tree of scripts/test) reports
// std::regex's internal std::function as "maybe uninitialized" (a false positive in
// libstdc++'s <regex>, not in this file), which -Werror turns into a build failure.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <regex>

#include "debias/post_filter_sweep.hpp"
#include "debias_test_util.hpp"
#include "plugin/error.hpp"

namespace db = plumb::debias;
using namespace debias_test;

namespace {

plumb::RankedList list(const std::string& qid,
                       const std::vector<std::pair<std::string, float>>& docs) {
    plumb::RankedList l;
    l.qid = qid;
    for (const auto& [d, s] : docs) l.candidates.push_back({d, s, {}, {}});
    return l;
}

// q1: n1 (10), n2 (9), f3 (8), n4 (7); q2: a (5), b (4); q3: x (1), not judged.
// Bias (tc, male - female per passage): n1 +1, n2 +1, f3 -1 (female), n4 0, a +2, b -1, x +1.
// Qrels: q1 f3 grade 1 (n1 judged 0), q2 a grade 2.
std::vector<plumb::RankedList> run() {
    return {list("q1", {{"n1", 10}, {"n2", 9}, {"f3", 8}, {"n4", 7}}),
            list("q2", {{"a", 5}, {"b", 4}}), list("q3", {{"x", 1}})};
}

const char* kBias =
    "n1\t-1\t0\t1\nn2\t-1\t0\t1\nf3\t1\t1\t0\nn4\t0\t0\t0\na\t-2\t0\t2\nb\t1\t1\t0\n"
    "x\t-1\t0\t1\n";
const char* kQrels = "q1 0 f3 1\nq1 0 n1 0\nq2 0 a 2\n";

const db::SweepRow& row(const db::PostFilterSweep& s, const std::string& label) {
    for (const auto& r : s.rows)
        if (r.label() == label) return r;
    throw std::runtime_error("no row " + label);
}

std::vector<std::string> docids(const plumb::RankedList& l) {
    std::vector<std::string> out;
    for (const auto& c : l.candidates) out.push_back(c.docid);
    return out;
}

db::PostFilterSweep sweep(const fs::path& dir) {
    write(dir / "bias.tsv", kBias);
    db::PostFilterSweepOptions o;
    o.k = 2;
    o.budgets = {0.5, 1.0, std::numeric_limits<double>::infinity()};
    o.fair_p = {0.7, 0.95};
    o.adjust_alpha = false;
    o.bias_file = (dir / "bias.tsv").string();
    plumb::StageContext ctx;
    return db::sweep_post_filters(
        run(), std::make_shared<const plumb::eval::Qrels>(plumb::eval::Qrels::parse(kQrels)), o,
        ctx);
}

}  // namespace

TEST(PostFilterSweep, HandComputedTable) {
    auto dir = temp_dir();
    const auto s = sweep(dir);
    ASSERT_EQ(s.rows.size(), 6u);
    EXPECT_EQ(s.queries, 2u);                  // q3 has no judgements
    const double dcg2 = 1.0 / std::log2(3.0);  // a gain-1 document at rank 2

    // Unfiltered. q1 top-2 n1 n2: no relevant -> nDCG 0, RR 0; RaB@2 = (1 + 1)/2 = 1,
    // ARaB@2 = (RaB@1 + RaB@2)/2 = (1 + 1)/2 = 1. q2 top-2 a b: nDCG 2/2 = 1, RR 1;
    // RaB@2 = male 2/2 - female 1/2 = 0.5, ARaB@2 = (2 + 0.5)/2 = 1.25.
    const auto& none = row(s, "none");
    EXPECT_DOUBLE_EQ(none.ndcg, 0.5);
    EXPECT_DOUBLE_EQ(none.mrr, 0.5);
    EXPECT_DOUBLE_EQ(none.rab, 0.75);
    EXPECT_DOUBLE_EQ(none.abs_rab, 0.75);
    EXPECT_DOUBLE_EQ(none.arab, 1.125);

    // Bias balance, q1: S = 2; swaps n2<->f3 (S' 0, cost 9 - 8 = 1), n1<->f3 (S' 0, cost 2),
    // n2<->n4 (S' 1, cost 2), n1<->n4 (S' 1, cost 3). Budget 0.5 affords none: unchanged.
    const auto& b05 = row(s, "bias_balance budget=0.5");
    EXPECT_EQ(b05.changed, 0u);
    EXPECT_DOUBLE_EQ(b05.ndcg, 0.5);
    EXPECT_DOUBLE_EQ(b05.abs_rab, 0.75);
    EXPECT_DOUBLE_EQ(b05.score_loss, 0.0);
    EXPECT_EQ(docids(b05.lists[0]), (std::vector<std::string>{"n1", "n2", "f3", "n4"}));
    // Budget 1 (and inf): n2<->f3 -> n1 f3 n2 n4; q1 nDCG@2 = 1/log2(3), RR 1/2, RaB@2 0,
    // ARaB@2 = (1 + 0)/2. q2 has nothing below its top-2 (unchanged). Loss 1 over 3 queries.
    for (const char* label : {"bias_balance budget=1", "bias_balance budget=inf"}) {
        const auto& b = row(s, label);
        EXPECT_EQ(docids(b.lists[0]), (std::vector<std::string>{"n1", "f3", "n2", "n4"})) << label;
        EXPECT_EQ(b.changed, 1u) << label;
        EXPECT_DOUBLE_EQ(b.ndcg, (dcg2 + 1.0) / 2) << label;
        EXPECT_DOUBLE_EQ(b.mrr, (0.5 + 1.0) / 2) << label;
        EXPECT_DOUBLE_EQ(b.rab, (0.0 + 0.5) / 2) << label;
        EXPECT_DOUBLE_EQ(b.abs_rab, 0.25) << label;
        EXPECT_DOUBLE_EQ(b.arab, (0.5 + 1.25) / 2) << label;
        EXPECT_DOUBLE_EQ(b.score_loss, 1.0 / 3) << label;
    }

    // FA*IR, protected = female (f3, b), unadjusted alpha 0.1. p = 0.7: m(1) = 0
    // (P(X<=0) = 0.3 > 0.1), m(2) = 1 (P(X<=0) = 0.09, P(X<=1) = 0.51): q1 -> n1 f3 n2 n4
    // (as bias balance); q2 a b already meets m; q3 (one candidate) m(1) = 0.
    const auto& f07 = row(s, "fair_topk p=0.7");
    EXPECT_EQ(docids(f07.lists[0]), (std::vector<std::string>{"n1", "f3", "n2", "n4"}));
    EXPECT_EQ(f07.changed, 1u);
    EXPECT_EQ(f07.infeasible, 0u);
    EXPECT_DOUBLE_EQ(f07.ndcg, (dcg2 + 1.0) / 2);
    EXPECT_DOUBLE_EQ(f07.abs_rab, 0.25);
    // p = 0.95: m(1) = 1 (P(X<=0) = 0.05), m(2) = 2 (P(X<=1) = 0.0975): q1 -> f3 n1 n2 n4
    // (rank 2 needs a second protected: none, infeasible), q2 -> b a (infeasible), q3 x
    // (infeasible, unchanged). q1: nDCG 1, RR 1, RaB@2 0, ARaB@2 (-1 + 0)/2; q2: nDCG
    // (2/log2(3))/2, RR 1/2, RaB@2 0.5, ARaB@2 (-1 + 0.5)/2.
    const auto& f095 = row(s, "fair_topk p=0.95");
    EXPECT_EQ(docids(f095.lists[0]), (std::vector<std::string>{"f3", "n1", "n2", "n4"}));
    EXPECT_EQ(docids(f095.lists[1]), (std::vector<std::string>{"b", "a"}));
    EXPECT_EQ(f095.changed, 2u);
    EXPECT_EQ(f095.infeasible, 3u);
    EXPECT_DOUBLE_EQ(f095.ndcg, (1.0 + dcg2) / 2);
    EXPECT_DOUBLE_EQ(f095.mrr, 0.75);
    EXPECT_DOUBLE_EQ(f095.rab, 0.25);
    EXPECT_DOUBLE_EQ(f095.arab, (-0.5 - 0.25) / 2);

    // Renderings: the Markdown row and the JSON's unbounded budget.
    const auto md = db::sweep_markdown(s);
    EXPECT_NE(md.find("| bias_balance | budget=inf | 0.8155 | 0.7500 | 0.2500 | 0.2500 | 0.8750 "
                      "| 1 | - | 0.3333 |"),
              std::string::npos)
        << md;
    const auto j = db::sweep_json(s);
    EXPECT_EQ(j["rows"][5]["value"], "inf");
    EXPECT_EQ(j["rows"][5]["run"], "bias_balance_budgetinf.run");
    EXPECT_DOUBLE_EQ(j["rows"][2]["arab"].get<double>(), -0.375);
}

TEST(PostFilterSweep, WritesRunsTablesAndPlotAtomically) {
    auto dir = temp_dir();
    const auto s = sweep(dir);
    db::write_sweep(s, dir / "out", "t");
    for (const char* f :
         {"none.run", "fair_topk_p0.7.run", "fair_topk_p0.95.run", "bias_balance_budget0.5.run",
          "bias_balance_budget1.run", "bias_balance_budgetinf.run", "sweep.txt", "sweep.md",
          "sweep.json", "sweep.svg"})
        EXPECT_TRUE(fs::exists(dir / "out" / f)) << f;
    EXPECT_TRUE(is_png(dir / "out" / "sweep.png"));
    // The run of p = 0.95 in its new order, scores strictly decreasing.
    const auto l = lines(dir / "out" / "fair_topk_p0.95.run");
    ASSERT_EQ(l.size(), 7u);
    EXPECT_EQ(l[0].substr(0, 13), "q1 Q0 f3 1 8 ");
    EXPECT_EQ(l[4].substr(0, 12), "q2 Q0 b 1 4 ");
    EXPECT_TRUE(no_temp_files(dir));
}

TEST(PostFilterSweep, BadSettingsAndMissingBias) {
    auto dir = temp_dir();
    write(dir / "bias.tsv", kBias);
    auto qrels = std::make_shared<const plumb::eval::Qrels>(plumb::eval::Qrels::parse(kQrels));
    plumb::StageContext ctx;
    db::PostFilterSweepOptions o;
    EXPECT_THROW(db::sweep_post_filters(run(), qrels, o, ctx), plumb::InvalidArgument);  // no bias
    o.bias_file = (dir / "bias.tsv").string();
    o.budgets = {-1.0};
    EXPECT_THROW(db::sweep_post_filters(run(), qrels, o, ctx), plumb::InvalidArgument);
    o.budgets = {};
    o.fair_p = {1.5};
    EXPECT_THROW(db::sweep_post_filters(run(), qrels, o, ctx), plumb::InvalidArgument);
    o.fair_p = {};
    o.words = (dir / "words.txt").string();
    o.bias_file.clear();
    write(dir / "words.txt", "she,f\nhe,m\n");
    EXPECT_THROW(db::sweep_post_filters(run(), qrels, o, ctx), plumb::InvalidArgument);  // no text
    // A malformed bias file names its line.
    write(dir / "bad.tsv", "n1\t-1\t0\t1\nn2\tx\t0\t1\n");
    o.words.clear();
    o.bias_file = (dir / "bad.tsv").string();
    o.budgets = {1.0};
    EXPECT_EQ(parse_error_line([&] { db::sweep_post_filters(run(), qrels, o, ctx); }), 2u);
}

// The plot: one marker per row in its series' colour, at positions an affine map of
// (nDCG, |RaB|) (x grows with nDCG, y on screen shrinks as |RaB| grows).
TEST(PostFilterSweep, PlotMarkersFollowTheRows) {
    auto dir = temp_dir();
    db::PostFilterSweep s;
    s.k = 10;
    s.variant = "tc";
    auto add = [&](std::string filter, std::string parameter, double value, double ndcg,
                   double abs_rab) {
        db::SweepRow r;
        r.filter = std::move(filter);
        r.parameter = std::move(parameter);
        r.value = value;
        r.ndcg = ndcg;
        r.abs_rab = abs_rab;
        s.rows.push_back(std::move(r));
    };
    add("none", "", 0, 0.40, 0.30);
    add("fair_topk", "p", 0.3, 0.38, 0.20);
    add("fair_topk", "p", 0.5, 0.35, 0.10);
    add("bias_balance", "budget", 0.1, 0.39, 0.25);
    add("bias_balance", "budget", std::numeric_limits<double>::infinity(), 0.30, 0.02);
    db::write_sweep_plot(s, dir / "p");
    EXPECT_TRUE(is_png(dir / "p.png"));
    const std::string svg = slurp(dir / "p.svg");
    // Cairo writes a filled circle as a path starting at (cx + r, cy), r = 4.
    const std::regex marker(
        R"re(<path style="[^"]*fill:rgb\(([^)]*)\)[^"]*" d="M ([-0-9.]+) ([-0-9.]+) C [^"]*"/>)re");
    std::map<std::string, std::vector<std::pair<double, double>>> by_colour;
    std::vector<std::pair<double, double>> centres;
    for (auto it = std::sregex_iterator(svg.begin(), svg.end(), marker);
         it != std::sregex_iterator(); ++it) {
        const double cx = std::stod((*it)[2]) - 4, cy = std::stod((*it)[3]);
        by_colour[(*it)[1]].push_back({cx, cy});
        centres.push_back({cx, cy});
    }
    ASSERT_EQ(centres.size(), 5u) << svg.substr(0, 2000);
    // Okabe-Ito palette order: none, fair_topk, bias_balance.
    EXPECT_EQ(by_colour["0%,44.7%,69.8%"].size(), 1u);
    EXPECT_EQ(by_colour["90.2%,62.4%,0%"].size(), 2u);
    EXPECT_EQ(by_colour["0%,62%,45.1%"].size(), 2u);
    // Affine in both coordinates: slopes from row 0 agree for every other row.
    const double sx = (centres[1].first - centres[0].first) / (0.38 - 0.40);
    const double sy = (centres[1].second - centres[0].second) / (0.20 - 0.30);
    EXPECT_GT(sx, 0);
    EXPECT_LT(sy, 0);
    const std::vector<std::pair<double, double>> data = {
        {0.40, 0.30}, {0.38, 0.20}, {0.35, 0.10}, {0.39, 0.25}, {0.30, 0.02}};
    for (std::size_t i = 2; i < 5; ++i) {
        EXPECT_NEAR(centres[i].first - centres[0].first, sx * (data[i].first - 0.40), 0.01) << i;
        EXPECT_NEAR(centres[i].second - centres[0].second, sy * (data[i].second - 0.30), 0.01) << i;
    }
}
