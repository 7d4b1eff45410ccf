#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "debias/gender_scores.hpp"
#include "debias_test_util.hpp"
#include "eval/bias_metrics.hpp"
#include "eval/gender.hpp"
#include "index/index_builder.hpp"
#include "plugin/error.hpp"
#include "plugin/text_io.hpp"

namespace db = plumb::debias;
namespace ev = plumb::eval;
using namespace debias_test;

TEST(GenderScores, CorpusMagnitudesMatchTheDefinitions) {
    auto dir = temp_dir();
    db::GenderScoreOptions o;
    o.wordlist = write(dir / "words.txt", "she,f\nher,f\nhe,m\nhim,m\n");
    o.corpus =
        write(dir / "c.tsv", "d1\tShe said he and she left\nd2\tHim him HE\nd3\tnothing here\n");
    o.output_prefix = dir / "bias";
    auto s = db::score_gender(o);
    EXPECT_EQ(s.passages, 3u);
    EXPECT_EQ(s.with_female, 1u);
    EXPECT_EQ(s.with_male, 2u);
    EXPECT_EQ(s.ibbr_male, 1u);
    EXPECT_EQ(s.ibbr_female, 1u);
    EXPECT_EQ(s.ibbr_neutral, 1u);

    // d1: c_f = 2 (she x2), c_m = 1 (he). d2: c_m = 3. d3: nothing.
    auto tc = ev::read_bias_file(dir / "bias.tc.tsv", ev::BiasVariant::Tc);
    EXPECT_DOUBLE_EQ(tc["d1"].bias, 1.0);
    EXPECT_DOUBLE_EQ(tc["d1"].female, 2.0);
    EXPECT_DOUBLE_EQ(tc["d1"].male, 1.0);
    EXPECT_DOUBLE_EQ(tc["d2"].bias, -3.0);
    auto tf = ev::read_bias_file(dir / "bias.tf.tsv", ev::BiasVariant::Tf);
    EXPECT_DOUBLE_EQ(tf["d1"].bias, std::log(3.0) - std::log(2.0));
    EXPECT_DOUBLE_EQ(tf["d2"].male, std::log(4.0));
    auto bl = ev::read_bias_file(dir / "bias.bool.tsv", ev::BiasVariant::Bool);
    EXPECT_DOUBLE_EQ(bl["d1"].bias, 0.0);
    EXPECT_DOUBLE_EQ(bl["d2"].bias, -1.0);
    EXPECT_DOUBLE_EQ(bl["d3"].female, 0.0);
    // IBBR: d1 = ln(1+1) [he] - ln(1+2) [she] < 0; d2 = ln(1+2) [him] + ln(1+1) [he] > 0.
    auto labels = ev::read_bias_labels(dir / "bias.ibbr.tsv");
    EXPECT_EQ(labels["d1"], -1);
    EXPECT_EQ(labels["d2"], 1);
    EXPECT_EQ(labels["d3"], 0);
    auto mags = lines(dir / "bias.ibbr_magnitude.tsv");
    ASSERT_EQ(mags.size(), 4u);  // comment + 3
    EXPECT_NEAR(std::stod(mags[1].substr(3)), std::log(2.0) - std::log(3.0), 1e-15);
    EXPECT_NEAR(std::stod(mags[2].substr(3)), std::log(3.0) + std::log(2.0), 1e-15);
}

TEST(GenderScores, BadInputsFailCleanly) {
    auto dir = temp_dir();
    db::GenderScoreOptions o;
    o.wordlist = write(dir / "words.txt", "she,f\nhe,x\n");
    o.corpus = write(dir / "c.tsv", "d1\tshe\n");
    o.output_prefix = dir / "bias";
    EXPECT_EQ(parse_error_line([&] { db::score_gender(o); }), 2u);
    EXPECT_FALSE(std::filesystem::exists(dir / "bias.tc.tsv"));
    o.wordlist = write(dir / "w2.txt", "she,f\n");
    o.index_dir = dir;  // both corpus and index
    EXPECT_THROW(db::score_gender(o), plumb::InvalidArgument);
    o.index_dir.clear();
    o.corpus = write(dir / "bad.tsv", "d1\tshe\nnotab\n");
    EXPECT_THROW(db::score_gender(o), plumb::ParseError);
    EXPECT_TRUE(no_temp_files(dir));
}

TEST(GenderScores, QueryLabels) {
    auto dir = temp_dir();
    auto words = write(dir / "words.txt", "she,f\nher,f\nhe,m\nhim,m\n");
    auto topics = write(dir / "topics.tsv",
                        "q1\tshe is here\nq2\twhat did he say\nq3\tshe and he\nq4\tnone\n"
                        "q5\tshe her he\n");
    auto s = db::label_query_gender(words, topics, dir / "labels.tsv");
    EXPECT_EQ(lines(dir / "labels.tsv"),
              (std::vector<std::string>{"q1\tf", "q2\tm", "q3\tn", "q4\tn", "q5\tn"}));
    EXPECT_EQ(s.both, 2u);
    EXPECT_EQ(s.neutral, 3u);
    db::label_query_gender(words, topics, dir / "maj.tsv", /*majority=*/true);
    auto maj = lines(dir / "maj.tsv");
    EXPECT_EQ(maj[2], "q3\tn");  // tie stays neutral
    EXPECT_EQ(maj[4], "q5\tf");  // 2 female vs 1 male
}

TEST(GenderScores, IndexGivesTheSameFilesAsTheCorpus) {
    auto dir = temp_dir();
    auto words = write(dir / "words.txt", "she,f\nher,f\nhe,m\nhim,m\n");
    auto corpus =
        write(dir / "c.tsv", "d1\tShe said he and she left\nd2\tHim him HE\nd3\tnothing here\n");
    plumb::index::build_index(corpus, dir / "idx");
    db::GenderScoreOptions o;
    o.wordlist = words;
    o.corpus = corpus;
    o.output_prefix = dir / "from_corpus";
    db::score_gender(o);
    o.corpus.clear();
    o.index_dir = dir / "idx";
    o.output_prefix = dir / "from_index";
    auto s = db::score_gender(o);
    EXPECT_EQ(s.passages, 3u);
    for (const char* v : {"tc", "tf", "bool", "ibbr", "ibbr_magnitude"}) {
        auto from_corpus = lines(db::gender_output_path(dir / "from_corpus", v));
        auto from_index = lines(db::gender_output_path(dir / "from_index", v));
        std::sort(from_corpus.begin(), from_corpus.end());
        std::sort(from_index.begin(), from_index.end());
        EXPECT_EQ(from_corpus, from_index) << v;
    }
    o.index_dir = dir / "no-index-here";
    EXPECT_THROW(db::score_gender(o), plumb::Error);
}

TEST(GenderScores, CombinedFileAtTheOutputPathHoldsEveryVariant) {
    auto dir = temp_dir();
    db::GenderScoreOptions o;
    o.wordlist = write(dir / "words.txt", "she,f\nher,f\nhe,m\nhim,m\n");
    o.corpus = write(dir / "c.tsv", "d1\tshe said he and she left\nd2\thim him he\n");
    o.output_prefix = dir / "bias.tsv";  // a file name: the combined file lands exactly there
    db::score_gender(o);
    ASSERT_TRUE(ev::is_combined_bias_file(dir / "bias.tsv"));
    EXPECT_TRUE(std::filesystem::exists(dir / "bias.tc.tsv"));  // per-variant files beside it
    // d1: c_f = 2, c_m = 1. tc = (1, 2, 1); tf = (ln 3 - ln 2, ln 3, ln 2); bool = (0, 1, 1).
    // d2: c_m = 3 (him x2, he). tc = (-3, 0, 3); bool = (-1, 0, 1).
    auto tc = ev::read_bias_file(dir / "bias.tsv", ev::BiasVariant::Tc);
    EXPECT_DOUBLE_EQ(tc["d1"].bias, 1.0);
    EXPECT_DOUBLE_EQ(tc["d2"].male, 3.0);
    auto tf = ev::read_bias_file(dir / "bias.tsv", ev::BiasVariant::Tf);
    EXPECT_DOUBLE_EQ(tf["d1"].female, std::log(3.0));
    EXPECT_DOUBLE_EQ(tf["d1"].male, std::log(2.0));
    auto bo = ev::read_bias_file(dir / "bias.tsv", ev::BiasVariant::Bool);
    EXPECT_DOUBLE_EQ(bo["d1"].bias, 0.0);
    EXPECT_DOUBLE_EQ(bo["d2"].bias, -1.0);
    // Every variant must be named when reading a combined file.
    EXPECT_THROW(ev::read_bias_file(dir / "bias.tsv"), plumb::ParseError);
    // The IBBR columns (Eq. 1, per word type): d1 has he once and she twice:
    // mag = ln(1 + c(he)) - ln(1 + c(she)) = ln 2 - ln 3; label -1.
    std::string text = plumb::read_file(dir / "bias.tsv");
    auto line = text.substr(text.find("\nd1\t") + 1);
    line = line.substr(0, line.find('\n'));
    std::vector<std::string_view> f;
    plumb::split(line, '\t', f);
    ASSERT_EQ(f.size(), 12u);
    EXPECT_NEAR(std::stod(std::string(f[10])), std::log(2.0) - std::log(3.0), 1e-12);
    EXPECT_EQ(f[11], "-1");
}
