// The Table-3 layout (position_table.hpp): Δ %, bold per block, significance marks between test
// sets and between training types, the bias table (RaB/ARaB marks, |ΔA-PRF|, MATS) on
// hand-built values, bad input, and CLI smoke tests of `plumb position-table` and
// `plumb bias-table` on tiny files written here. Expected values are computed by hand below.

#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "eval/position_table.hpp"
#include "plugin/error.hpp"
#include "tests/support/cli.hpp"
#include "tests/support/temp_dir.hpp"

using namespace plumb::eval;
using plumb::test::run_plumb;
using plumb::test::TempDir;

namespace {

/// A result with one per-query column "ndcg_cut_10", queries q0..q{n-1}.
EvalResult result_of(const std::vector<double>& values, const std::string& column = "ndcg_cut_10") {
    EvalResult r;
    Column c;
    c.name = column;
    c.kind = ValueKind::Float;
    c.per_query = true;
    r.columns.push_back(c);
    double sum = 0;
    for (std::size_t i = 0; i < values.size(); ++i) {
        QueryValues q;
        q.qid = "q" + std::to_string(i);
        q.values = {values[i]};
        r.queries.push_back(q);
        sum += values[i];
    }
    r.summary.push_back(sum / static_cast<double>(values.size()));
    return r;
}

PositionTableOptions one_column() {
    PositionTableOptions o;
    o.columns = {"ndcg_cut_10"};
    o.labels = {"nDCG@10"};
    return o;
}

/// TK/Original: orig 0.5 + 0.01 i, deb 0.3 + 0.005 i (i = 0..9): every query drops.
/// TK/Debiased: orig 0.5 + 0.01 i, deb = orig ± 0.001 i (- for even i, + for odd i).
std::vector<PositionRow> tk_rows() {
    std::vector<double> o1, d1, o2, d2;
    for (int i = 0; i < 10; ++i) {
        o1.push_back(0.5 + 0.01 * i);
        d1.push_back(0.3 + 0.005 * i);
        o2.push_back(0.5 + 0.01 * i);
        d2.push_back(0.5 + 0.01 * i + (i % 2 ? 0.001 * i : -0.001 * i));
    }
    return {{"TK", "Original", result_of(o1), result_of(d1)},
            {"TK", "Debiased", result_of(o2), result_of(d2)}};
}

}  // namespace

TEST(PositionTable, DeltaBoldAndMarks) {
    const auto t = build_position_table(tk_rows(), one_column());
    ASSERT_EQ(t.rows.size(), 2u);
    const auto& a = t.rows[0].cells[0];
    const auto& b = t.rows[1].cells[0];
    // Means: orig = 0.5 + 0.01·4.5 = 0.545; Original deb = 0.3 + 0.005·4.5 = 0.3225;
    // Debiased deb = 0.545 + (1 - 2 + 3 - 4 + 5 - 6 + 7 - 8 + 9)·0.001/10 = 0.5455.
    EXPECT_NEAR(a.original, 0.545, 1e-12);
    EXPECT_NEAR(a.debiased, 0.3225, 1e-12);
    EXPECT_NEAR(b.debiased, 0.5455, 1e-12);
    ASSERT_TRUE(a.delta && b.delta);
    // Paper 000's Δ: relative to the debiased test set.
    EXPECT_NEAR(*a.delta, (0.3225 - 0.545) / 0.3225, 1e-12);  // -68.99 %
    EXPECT_NEAR(*b.delta, 0.0005 / 0.5455, 1e-12);            // +0.09 %
    // Bold: the smaller |Δ| of the TK block.
    EXPECT_FALSE(a.bold);
    EXPECT_TRUE(b.bold);
    // Orig vs Deb: Original drops on all 10 queries with distinct differences: exact Wilcoxon
    // p = 2/2^10 = 0.00195, Holm over the 2 rows: 0.0039 < 0.05. Debiased: differences Orig - Deb
    // are +0.001 i for even i and -0.001 i for odd i: W+ = 2+4+6+8 = 20, W- = 1+3+5+7+9 = 25
    // (q0 is a zero difference): far from significant.
    EXPECT_TRUE(a.delta_significant);
    EXPECT_FALSE(b.delta_significant);
    ASSERT_TRUE(a.test.wilcoxon);
    EXPECT_NEAR(a.test.wilcoxon->p_value, 2.0 / 1024.0, 1e-12);
    EXPECT_NEAR(a.test.p_wilcoxon_adjusted, 4.0 / 1024.0, 1e-12);
    ASSERT_TRUE(b.test.wilcoxon);
    EXPECT_DOUBLE_EQ(b.test.wilcoxon->w_plus, 20.0);
    EXPECT_DOUBLE_EQ(b.test.wilcoxon->w_minus, 25.0);
    // Letters within the model; on the debiased test, Debiased (b) beats Original (a) on every
    // query (differences 0.2 + 0.005 i ± 0.001 i, all distinct and positive).
    EXPECT_EQ(t.rows[0].letter, "a");
    EXPECT_EQ(t.rows[1].letter, "b");
    EXPECT_EQ(b.marks_debiased, "a");
    EXPECT_EQ(a.marks_debiased, "");
    // On the original test both rows are identical: no marks.
    EXPECT_EQ(a.marks_original, "");
    EXPECT_EQ(b.marks_original, "");
    EXPECT_EQ(t.rows[0].num_queries, 10u);
}

TEST(PositionTable, TextMarkdownLatexJson) {
    auto rows = tk_rows();
    std::vector<double> same(10, 0.25);
    rows.insert(rows.begin(), PositionRow{"BM25", "-", result_of(same), result_of(same)});
    const auto t = build_position_table(rows, one_column());
    // A single-row block has no bold; Δ = 0.
    EXPECT_FALSE(t.rows[0].cells[0].bold);
    EXPECT_NEAR(*t.rows[0].cells[0].delta, 0.0, 1e-15);
    EXPECT_EQ(t.rows[0].letter, "a");
    EXPECT_EQ(t.rows[1].letter, "a");  // letters restart per model

    const auto text = format_position_table(t, TableFormat::Text);
    EXPECT_NE(text.find("nDCG@10"), std::string::npos) << text;
    EXPECT_NE(text.find("-69.0%†"), std::string::npos) << text;
    EXPECT_NE(text.find("**+0.1%**"), std::string::npos) << text;
    EXPECT_NE(text.find("0.545"), std::string::npos) << text;
    EXPECT_NE(text.find("0.546^a"), std::string::npos) << text;  // 0.5455 at 3 decimals
    EXPECT_NE(text.find("+0.0%"), std::string::npos) << text;    // BM25

    const auto md = format_position_table(t, TableFormat::Markdown);
    EXPECT_NE(md.find("| Model | Training | Sig | nDCG@10 Orig. | nDCG@10 Deb. | nDCG@10 Δ |"),
              std::string::npos)
        << md;
    EXPECT_NE(md.find("**+0.1%**"), std::string::npos);

    const auto tex = format_position_table(t, TableFormat::Latex);
    EXPECT_NE(tex.find("\\textbf{+0.1\\%}"), std::string::npos) << tex;
    EXPECT_NE(tex.find("-69.0\\%$^\\dagger$"), std::string::npos) << tex;
    EXPECT_NE(tex.find("0.546$^{a}$"), std::string::npos) << tex;

    const auto j = nlohmann::json::parse(format_position_table(t, TableFormat::Json));
    ASSERT_EQ(j["rows"].size(), 3u);
    EXPECT_EQ(j["rows"][2]["training"], "Debiased");
    EXPECT_TRUE(j["rows"][2]["cells"]["ndcg_cut_10"]["bold"].get<bool>());
    EXPECT_NEAR(j["rows"][1]["cells"]["ndcg_cut_10"]["delta"].get<double>(),
                (0.3225 - 0.545) / 0.3225, 1e-12);
}

TEST(PositionTable, PaperDeltaAndZeroDebiasedHasNoDelta) {
    // The paper's check (000, Table 3, TK): nDCG@10 0.371 -> 0.307 is a -20.8 % change.
    {
        std::vector<PositionRow> rows{{"TK", "Original", result_of({0.371}), result_of({0.307})}};
        const auto t = build_position_table(rows, one_column());
        ASSERT_TRUE(t.rows[0].cells[0].delta);
        EXPECT_NEAR(*t.rows[0].cells[0].delta * 100, -20.8469, 1e-3);
    }
    std::vector<double> zero(5, 0.0), some{0.1, 0.2, 0.0, 0.0, 0.0};
    std::vector<PositionRow> rows{{"M", "x", result_of(some), result_of(zero)},
                                  {"M", "y", result_of(some), result_of(some)}};
    const auto t = build_position_table(rows, one_column());
    EXPECT_FALSE(t.rows[0].cells[0].delta);
    EXPECT_FALSE(t.rows[0].cells[0].bold);
    // Only one defined Δ in the block: no bold.
    EXPECT_FALSE(t.rows[1].cells[0].bold);
    EXPECT_NE(format_position_table(t, TableFormat::Text).find(" -"), std::string::npos);
}

TEST(PositionTable, PaperCheckInEveryFormatAndBoldByTheDebiasedDivisor) {
    // The paper's TK figure in every output format: (0.307 - 0.371) / 0.307 = -20.85 %.
    {
        std::vector<PositionRow> rows{{"TK", "Original", result_of({0.371}), result_of({0.307})}};
        const auto t = build_position_table(rows, one_column());
        EXPECT_NE(format_position_table(t, TableFormat::Text).find("-20.8%"), std::string::npos);
        EXPECT_NE(format_position_table(t, TableFormat::Markdown).find("-20.8%"),
                  std::string::npos);
        EXPECT_NE(format_position_table(t, TableFormat::Latex).find("-20.8\\%"), std::string::npos);
        const auto j = nlohmann::json::parse(format_position_table(t, TableFormat::Json));
        EXPECT_NEAR(j["rows"][0]["cells"]["ndcg_cut_10"]["delta"].get<double>(),
                    (0.307 - 0.371) / 0.307, 1e-12);
    }
    // Where the two divisors disagree on the smallest |Δ|: row x 0.5 -> 0.4 (Δ by Deb. -25 %,
    // by Orig. -20 %), row y 0.2 -> 0.25 (Δ by Deb. +20 %, by Orig. +25 %). Paper 000's Δ
    // makes y bold; dividing by Orig. would make x bold.
    std::vector<PositionRow> rows{{"M", "x", result_of({0.5}), result_of({0.4})},
                                  {"M", "y", result_of({0.2}), result_of({0.25})}};
    const auto t = build_position_table(rows, one_column());
    EXPECT_NEAR(*t.rows[0].cells[0].delta, -0.25, 1e-12);
    EXPECT_NEAR(*t.rows[1].cells[0].delta, 0.20, 1e-12);
    EXPECT_FALSE(t.rows[0].cells[0].bold);
    EXPECT_TRUE(t.rows[1].cells[0].bold);
    EXPECT_NE(format_position_table(t, TableFormat::Markdown).find("**+20.0%**"),
              std::string::npos);
}

TEST(PositionTable, TiesAreAllBold) {
    std::vector<double> o{0.4, 0.5, 0.6}, d{0.2, 0.25, 0.3};  // Δ = -100 % for both rows
    std::vector<PositionRow> rows{{"M", "x", result_of(o), result_of(d)},
                                  {"M", "y", result_of(o), result_of(d)}};
    const auto t = build_position_table(rows, one_column());
    EXPECT_TRUE(t.rows[0].cells[0].bold);
    EXPECT_TRUE(t.rows[1].cells[0].bold);
}

TEST(PositionTable, BadInput) {
    EXPECT_THROW(build_position_table({}, one_column()), plumb::InvalidArgument);
    auto rows = tk_rows();
    auto o = one_column();
    o.columns = {"map"};
    EXPECT_THROW(build_position_table(rows, o), plumb::InvalidArgument);  // missing column
    o = one_column();
    o.labels = {"a", "b"};
    EXPECT_THROW(build_position_table(rows, o), plumb::InvalidArgument);
    o = one_column();
    o.alpha = 1.5;
    EXPECT_THROW(build_position_table(rows, o), plumb::InvalidArgument);
    rows.push_back(rows[0]);  // (TK, Original) twice
    EXPECT_THROW(build_position_table(rows, one_column()), plumb::InvalidArgument);
    EXPECT_THROW(parse_table_format("html"), plumb::InvalidArgument);
    EXPECT_EQ(parse_table_format("md"), TableFormat::Markdown);
}

TEST(BiasTable, RabArabMarksAndPrf) {
    // Passage magnitudes (tc: bias = female - male). m_i has i+1 male words; n, n2 none;
    // f has one female word.
    BiasTable bias;
    for (int i = 0; i < 10; ++i) bias["m" + std::to_string(i)] = {-(i + 1.0), 0.0, i + 1.0};
    bias["n"] = {0, 0, 0};
    bias["n2"] = {0, 0, 0};
    bias["f"] = {1, 1, 0};
    BiasRow a{"A", {}, {}, 0.25}, b{"B", {}, {}, std::nullopt};
    for (int i = 0; i < 10; ++i) {
        const std::string q = "q" + std::to_string(i);
        a.rankings.push_back({q, {"m" + std::to_string(i), "n"}});
        b.rankings.push_back({q, {"n", "n2"}});
    }
    BiasTableOptions o;
    o.cutoff = 2;
    const auto r = build_bias_table({a, b}, bias, {}, {}, o);
    ASSERT_EQ(r.rows.size(), 2u);
    // A, query i: RaB@2 = male mean - female mean = (i+1)/2; ARaB@2 = (RaB@1 + RaB@2)/2 =
    // ((i+1) + (i+1)/2)/2 = 0.75 (i+1). Means over i = 0..9 (mean of i+1 = 5.5): 2.75, 4.125.
    EXPECT_NEAR(r.rows[0].rab.bias, 2.75, 1e-12);
    EXPECT_NEAR(r.rows[0].rab.male, 2.75, 1e-12);
    EXPECT_NEAR(r.rows[0].arab.bias, 4.125, 1e-12);
    EXPECT_NEAR(r.rows[1].rab.bias, 0.0, 1e-12);
    // B is less biased on every query (distinct differences): exact Wilcoxon p = 2/1024.
    EXPECT_EQ(r.rows[1].marks_rab, "a");
    EXPECT_EQ(r.rows[1].marks_arab, "a");
    EXPECT_EQ(r.rows[0].marks_rab, "");
    // Mean |RaB@2(q)|: every query of A leans male, so it equals the signed mean.
    EXPECT_NEAR(r.rows[0].abs_rab, 2.75, 1e-12);
    EXPECT_NEAR(r.rows[1].abs_rab, 0.0, 1e-12);
    EXPECT_EQ(r.rows[1].marks_abs_rab, "a");
    EXPECT_EQ(r.paired_queries, 10u);
    EXPECT_FALSE(r.has_prf);
    EXPECT_FALSE(r.rows[0].delta_prf);
    ASSERT_TRUE(r.rows[0].mats);
    EXPECT_DOUBLE_EQ(*r.rows[0].mats, 0.25);

    // |ΔA-PRF|: q0 candidates r1 (relevant, male, score 3), r2 (relevant, female, score 1),
    // x (non-relevant, score 2). PRF_m = 1[3 >= 2] = 1, PRF_f = 1[1 >= 2] = 0: |Δ| = 1.
    BiasRow c{"C",
              {{"q0", {"r1", "x", "r2"}}},
              {{"q0", {{"r1", 3.0}, {"x", 2.0}, {"r2", 1.0}}}},
              std::nullopt};
    const auto rel = Qrels::parse("q0 0 r1 1\nq0 0 r2 2\n");
    std::unordered_map<std::string, int> labels{{"r1", 1}, {"r2", -1}, {"x", 0}};
    const auto rc = build_bias_table({c}, bias, labels, rel, o);
    EXPECT_TRUE(rc.has_prf);
    ASSERT_TRUE(rc.rows[0].delta_prf);
    EXPECT_NEAR(*rc.rows[0].delta_prf, 1.0, 1e-12);
    EXPECT_TRUE(rc.pairs.empty());  // one row: nothing to test

    const auto text = format_bias_table(r, TableFormat::Text);
    EXPECT_NE(text.find("RaB@2 (tc)"), std::string::npos) << text;
    EXPECT_NE(text.find("2.7500"), std::string::npos) << text;
    EXPECT_NE(text.find("0.0000^a"), std::string::npos) << text;
    EXPECT_NE(text.find("0.2500"), std::string::npos) << text;  // MATS
    const auto j = nlohmann::json::parse(format_bias_table(r, TableFormat::Json));
    EXPECT_EQ(j["rows"][1]["marks_rab"], "a");
    EXPECT_TRUE(j["rows"][1]["mats"].is_null());
    EXPECT_NE(format_bias_table(r, TableFormat::Latex).find("$^{a}$"), std::string::npos);

    // Against a baseline: the same pair.
    o.baseline = 0;
    EXPECT_EQ(build_bias_table({a, b}, bias, {}, {}, o).rows[1].marks_rab, "a");
    o.baseline = 5;
    EXPECT_THROW(build_bias_table({a, b}, bias, {}, {}, o), plumb::InvalidArgument);
    o.baseline.reset();
    o.cutoff = 0;
    EXPECT_THROW(build_bias_table({a, b}, bias, {}, {}, o), plumb::InvalidArgument);
}

TEST(BiasTable, AbsoluteRabSeesBalancedSigns) {
    // Query q0 leans male (+1), q1 female (-1): signed mean 0, mean |RaB@1| = 1.
    BiasTable bias{{"m", {-1, 0, 1}}, {"f", {1, 1, 0}}};
    BiasRow a{"A", {{"q0", {"m"}}, {"q1", {"f"}}}, {}, std::nullopt};
    BiasTableOptions o;
    o.cutoff = 1;
    const auto r = build_bias_table({a}, bias, {}, {}, o);
    EXPECT_NEAR(r.rows[0].rab.bias, 0.0, 1e-12);
    EXPECT_NEAR(r.rows[0].abs_rab, 1.0, 1e-12);
    EXPECT_NE(format_bias_table(r, TableFormat::Text).find("|RaB|@1"), std::string::npos);
    // Markdown escapes the pipes of |RaB| so the table keeps its columns.
    EXPECT_NE(format_bias_table(r, TableFormat::Markdown).find("| \\|RaB\\|@1 |"),
              std::string::npos)
        << format_bias_table(r, TableFormat::Markdown);
}

TEST(BiasTable, ReadMatsJson) {
    const TempDir dir;
    EXPECT_DOUBLE_EQ(*read_mats_json(dir.write("m.json", R"({"passages": 3, "mats": 0.125})")),
                     0.125);
    EXPECT_FALSE(read_mats_json(dir.write("n.json", R"({"mats": null})")));
    EXPECT_THROW(read_mats_json(dir.write("x.json", "not json")), plumb::ParseError);
    EXPECT_THROW(read_mats_json(dir.write("y.json", R"({"ats": 1})")), plumb::ParseError);
    EXPECT_THROW(read_mats_json(dir / "missing.json"), plumb::IoError);
}

TEST(PositionTableCli, TinyRunsAndQrels) {
    // 3 queries, one relevant passage each (d<q>). Original test: the relevant passage is at
    // rank 1 for the "orig-trained" model and at rank 1 on the debiased test too; the other
    // model drops it to rank 2 on the debiased test. nDCG@10 of rank 2 = 1/log2(3) = 0.6309.
    const TempDir dir;
    std::string qrels;
    for (int q = 1; q <= 3; ++q) qrels += std::to_string(q) + " 0 d" + std::to_string(q) + " 1\n";
    const auto qp = dir.write("qrels.txt", qrels);
    auto run_with = [&](const std::string& name, bool first) {
        std::string s;
        for (int q = 1; q <= 3; ++q) {
            const std::string rel = "d" + std::to_string(q), other = "x" + std::to_string(q);
            s += std::to_string(q) + " Q0 " + (first ? rel : other) + " 1 2.0 t\n";
            s += std::to_string(q) + " Q0 " + (first ? other : rel) + " 2 1.0 t\n";
        }
        return dir.write(name, s).string();
    };
    const auto top = run_with("top.run", true), second = run_with("second.run", false);
    const std::string args = "position-table --qrels " + qp.string() + " --run TK,Original,orig," +
                             top + " --run TK,Original,deb," + second + " --run TK,Debiased,orig," +
                             top + " --run TK,Debiased,deb," + top;
    auto r = run_plumb(args);
    ASSERT_EQ(r.status, 0) << r.out;
    // Original, Δ = (Deb - Orig) / Deb: nDCG (1/log2(3) - 1) / (1/log2(3)) = 1 - log2(3)
    // = -58.5 %; MRR (0.5 - 1) / 0.5 = -100.0 %; Recall@10: 0.0 %.
    EXPECT_NE(r.out.find("-58.5%"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("-100.0%"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("**+0.0%**"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("0.631"), std::string::npos) << r.out;
    r = run_plumb(args + " --format json");
    ASSERT_EQ(r.status, 0) << r.out;
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_NEAR(j["rows"][0]["cells"]["mrr_cut_10"]["delta"].get<double>(), -1.0, 1e-12);
    EXPECT_TRUE(j["rows"][1]["cells"]["ndcg_cut_10"]["bold"].get<bool>());
    // Bad input: a missing deb run, a bad test-set name, a malformed spec, a bad run file.
    r = run_plumb("position-table --qrels " + qp.string() + " --run TK,Original,orig," + top);
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.out.find("needs both"), std::string::npos) << r.out;
    r = run_plumb("position-table --qrels " + qp.string() + " --run TK,Original,test," + top);
    EXPECT_EQ(r.status, 1);
    r = run_plumb("position-table --qrels " + qp.string() + " --run TK," + top);
    EXPECT_EQ(r.status, 1);
    const auto bad = dir.write("bad.run", "1 Q0 d1 1 notanumber t\n");
    r = run_plumb("position-table --qrels " + qp.string() + " --run M,T,orig," + bad.string() +
                  " --run M,T,deb," + top);
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.out.find("bad.run:1"), std::string::npos) << r.out;
}

TEST(BiasTableCli, TinyRuns) {
    const TempDir dir;
    const auto bias =
        dir.write("bias.tsv", "# plumb-gender-bias v1 variant=tc\nd1\t-2\t0\t2\nd2\t1\t1\t0\n");
    const auto run = dir.write("b.run", "1 Q0 d1 1 2.0 t\n1 Q0 d2 2 1.0 t\n");
    const auto mats = dir.write("mats.json", R"({"mats": 0.5})");
    auto r = run_plumb("bias-table --bias-file " + bias.string() + " --run R," + run.string() +
                       " --cutoff 2 --mats R," + mats.string());
    ASSERT_EQ(r.status, 0) << r.out;
    // RaB@2 = male mean - female mean = 1 - 0.5 = 0.5; ARaB@2 = (2 + 0.5)/2 = 1.25.
    EXPECT_NE(r.out.find("0.5000"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("1.2500"), std::string::npos) << r.out;
    r = run_plumb("bias-table --bias-file " + bias.string() + " --run R," + run.string() +
                  " --mats S," + mats.string());
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.out.find("no --run named"), std::string::npos) << r.out;
    r = run_plumb("bias-table --bias-file " + bias.string() + " --run R," + run.string() +
                  " --labels " + bias.string());
    EXPECT_EQ(r.status, 1);  // --labels without --qrels
}
