// Gender word lists, per-passage magnitudes (FORMULAS.md) and the bias file format.

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "eval/gender.hpp"
#include "plugin/error.hpp"
#include "tests/support/map_source.hpp"
#include "tests/support/temp_dir.hpp"

namespace fs = std::filesystem;
using plumb::test::MapSource;
using plumb::test::TempDir;
using namespace plumb::eval;

namespace {
GenderWordList small_list() {
    GenderWordList w;
    w.add("she", Gender::Female);
    w.add("her", Gender::Female);
    w.add("woman", Gender::Female);
    w.add("he", Gender::Male);
    w.add("his", Gender::Male);
    return w;
}
}  // namespace

TEST(GenderWordList, LoadsAndRejectsBadLines) {
    const TempDir dir;
    auto p = dir.write("words.txt", "# comment\nShe,f\n\nhe , M\nher,f\nshe,f\n");
    auto w = GenderWordList::load(p);
    EXPECT_EQ(w.size(), 3u);  // "she" repeated with the same label is accepted once
    EXPECT_EQ(w.female_count(), 2u);
    EXPECT_EQ(w.male_count(), 1u);
    EXPECT_EQ(w.lookup("she"), Gender::Female);
    EXPECT_EQ(w.lookup("he"), Gender::Male);
    EXPECT_FALSE(w.lookup("She").has_value());  // lookup expects lower-cased tokens

    auto expect_parse_error = [&](const std::string& name, const std::string& content,
                                  std::uint64_t line) {
        auto path = dir.write(name, content);
        try {
            GenderWordList::load(path);
            FAIL() << "expected ParseError for " << name;
        } catch (const plumb::ParseError& e) {
            EXPECT_EQ(e.line(), line) << e.what();
            EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
        }
    };
    expect_parse_error("nocomma.txt", "she,f\nhe m\n", 2);
    expect_parse_error("badlabel.txt", "she,f\nhe,x\n", 2);
    expect_parse_error("twocommas.txt", "she,f,x\n", 1);
    expect_parse_error("emptyword.txt", "she,f\n,m\n", 2);
    expect_parse_error("both.txt", "she,f\nhe,m\nShe,m\n", 3);
    expect_parse_error("space.txt", "she,f\nthe man,m\n", 2);
    EXPECT_THROW(GenderWordList::load("/nonexistent/words.txt"), plumb::IoError);
    GenderWordList w2;
    w2.add("he", Gender::Male);
    EXPECT_THROW(w2.add("HE", Gender::Female), plumb::InvalidArgument);
    EXPECT_THROW(w2.add("", Gender::Female), plumb::InvalidArgument);
}

TEST(GenderCounts, WhitespaceTokensLowerCasedPunctuationBlocksMatch) {
    auto w = small_list();
    // Tokens: "she" "said" "he" "and" "she," "met" "her" "she" -> female: she, her, she (3;
    // "she," does not match); male: he (1).
    auto c = count_gender_words("She said HE and she, met\ther  she", w);
    EXPECT_EQ(c.female, 3u);
    EXPECT_EQ(c.male, 1u);
    // IBBR: male Σ ln(1+c(w)) = ln 2 (he×1); female = ln(1+2) (she×2) + ln(1+1) (her×1).
    EXPECT_NEAR(c.ibbr_magnitude, std::log(2.0) - (std::log(3.0) + std::log(2.0)), 1e-12);
    EXPECT_EQ(ibbr_label(c), -1);
    EXPECT_EQ(gender_tokens("  A\tb  C\n"), (std::vector<std::string>{"a", "b", "c"}));
    auto none = count_gender_words("", w);
    EXPECT_EQ(none.female + none.male, 0u);
    EXPECT_EQ(ibbr_label(none), 0);
    // Equal male/female word occurrences: magnitude ln2 - ln2 = 0 -> label 0.
    EXPECT_EQ(ibbr_label(count_gender_words("he she", w)), 0);
    EXPECT_EQ(ibbr_label(count_gender_words("his he she", w)), 1);
}

TEST(GenderCounts, MagnitudeVariantsByHand) {
    GenderCounts c;
    c.female = 3;
    c.male = 1;
    auto tc = passage_magnitude(c, BiasVariant::Tc);  // (3-1, 3, 1)
    EXPECT_DOUBLE_EQ(tc.bias, 2.0);
    EXPECT_DOUBLE_EQ(tc.female, 3.0);
    EXPECT_DOUBLE_EQ(tc.male, 1.0);
    auto tf = passage_magnitude(c, BiasVariant::Tf);  // (ln4 - ln2, ln4, ln2) = (ln2, ln4, ln2)
    EXPECT_NEAR(tf.bias, std::log(2.0), 1e-15);
    EXPECT_NEAR(tf.female, std::log(4.0), 1e-15);
    EXPECT_NEAR(tf.male, std::log(2.0), 1e-15);
    auto bl = passage_magnitude(c, BiasVariant::Bool);  // (1-1, 1, 1)
    EXPECT_DOUBLE_EQ(bl.bias, 0.0);
    EXPECT_DOUBLE_EQ(bl.female, 1.0);
    EXPECT_DOUBLE_EQ(bl.male, 1.0);
    GenderCounts m;
    m.male = 2;
    auto blm = passage_magnitude(m, BiasVariant::Bool);  // (0-1, 0, 1)
    EXPECT_DOUBLE_EQ(blm.bias, -1.0);
    EXPECT_EQ(parse_bias_variant("tf"), BiasVariant::Tf);
    EXPECT_STREQ(bias_variant_name(BiasVariant::Bool), "bool");
    EXPECT_THROW(parse_bias_variant("TC"), plumb::InvalidArgument);
}

TEST(GenderCounts, QueryLabels) {
    auto w = small_list();
    EXPECT_EQ(query_gender_label(count_gender_words("what did she say", w)), 'f');
    EXPECT_EQ(query_gender_label(count_gender_words("his car", w)), 'm');
    EXPECT_EQ(query_gender_label(count_gender_words("weather today", w)), 'n');
    auto both = count_gender_words("she and her told him he", w);  // f 2, m 1 ("him" unlisted)
    EXPECT_EQ(query_gender_label(both), 'n');
    EXPECT_EQ(query_gender_label(both, BothPolicy::Majority), 'f');
    EXPECT_EQ(query_gender_label(count_gender_words("she he", w), BothPolicy::Majority), 'n');
}

TEST(BiasFile, RoundTripAndBadInput) {
    const TempDir dir;
    auto p = dir / "bias.tf.tsv";
    std::vector<std::pair<std::string, BiasTriple>> rows{
        {"d1", {std::log(2.0), std::log(4.0), std::log(2.0)}}, {"d2", {0.0, 0.0, 0.0}}};
    write_bias_file(p, BiasVariant::Tf, rows);
    auto t = read_bias_file(p, BiasVariant::Tf);
    ASSERT_EQ(t.size(), 2u);
    EXPECT_EQ(t.at("d1").female, std::log(4.0));  // %.17g round-trips exactly
    EXPECT_EQ(t.at("d1").bias, std::log(2.0));
    EXPECT_THROW(read_bias_file(p, BiasVariant::Tc), plumb::ParseError);  // variant mismatch
    EXPECT_EQ(read_bias_file(p).size(), 2u);

    auto expect_line = [&](const std::string& name, const std::string& content,
                           std::uint64_t line) {
        try {
            read_bias_file(dir.write(name, content));
            FAIL() << name;
        } catch (const plumb::ParseError& e) {
            EXPECT_EQ(e.line(), line) << e.what();
        }
    };
    expect_line("fields.tsv", "d1\t1\t1\t0\nd2\t1\t1\n", 2);
    expect_line("nan.tsv", "d1\tnan\t1\t0\n", 1);
    expect_line("text.tsv", "d1\t1\tx\t0\n", 1);
    expect_line("dup.tsv", "d1\t1\t1\t0\n\nd1\t0\t0\t0\n", 3);
    EXPECT_THROW(write_bias_file(dir / "bad.tsv", BiasVariant::Tc, {{"a b", {}}}),
                 plumb::InvalidArgument);
    EXPECT_FALSE(fs::exists(dir / "bad.tsv"));  // atomic: nothing left behind
}

TEST(BiasFile, ComputeFromDocumentSource) {
    auto w = small_list();
    MapSource src({{"d1", "She and her mother"}, {"d2", "he said"}, {"d3", "nothing"}});
    auto t = compute_bias_table({"d1", "d2", "d3", "d1"}, src, w, BiasVariant::Tc);
    ASSERT_EQ(t.size(), 3u);
    EXPECT_DOUBLE_EQ(t.at("d1").bias, 2.0);  // c_f = 2, c_m = 0
    EXPECT_DOUBLE_EQ(t.at("d2").male, 1.0);
    EXPECT_DOUBLE_EQ(t.at("d3").female, 0.0);
    EXPECT_THROW(compute_bias_table({"zz"}, src, w, BiasVariant::Tc), plumb::InvalidArgument);
    plumb::CancelToken cancel;
    cancel.request();
    EXPECT_TRUE(compute_bias_table({"d1"}, src, w, BiasVariant::Tc, {}, &cancel).empty());
}
