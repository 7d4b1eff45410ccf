#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "debias/answer_positions.hpp"
#include "debias/rotation.hpp"
#include "debias_test_util.hpp"
#include "plugin/error.hpp"

namespace db = plumb::debias;
using namespace debias_test;

TEST(AnswerPositions, FindTokenSpanIsCaseInsensitiveWholeTokens) {
    std::vector<std::string_view> p = {"The", "capital", "of", "France", "is", "Paris."};
    EXPECT_EQ(db::find_token_span(p, {"capital", "OF", "france"}), 1u);
    EXPECT_EQ(db::find_token_span(p, {"the"}), 0u);
    EXPECT_FALSE(db::find_token_span(p, {"paris"}));  // "Paris." is another token
    EXPECT_FALSE(db::find_token_span(p, {}));
    EXPECT_FALSE(db::find_token_span({"a"}, {"a", "b"}));
}

TEST(AnswerPositions, TokenIndexAtCharacterOffset) {
    //                         0123456789
    std::string_view text = "  a  bc d";
    EXPECT_EQ(db::token_index_at(text, 0), 0u);  // whitespace before "a"
    EXPECT_EQ(db::token_index_at(text, 2), 0u);
    EXPECT_EQ(db::token_index_at(text, 3), 1u);  // whitespace before "bc"
    EXPECT_EQ(db::token_index_at(text, 6), 1u);
    EXPECT_EQ(db::token_index_at(text, 8), 2u);
    EXPECT_FALSE(db::token_index_at(text, 9));
}

TEST(AnswerPositions, PositionBin) {
    EXPECT_EQ(db::position_bin(0.0, 10), 0u);
    EXPECT_EQ(db::position_bin(0.1, 10), 1u);
    EXPECT_EQ(db::position_bin(0.999, 10), 9u);
    EXPECT_EQ(db::position_bin(1.0, 10), 9u);
    EXPECT_EQ(db::position_bin(0.5, 20), 10u);
    EXPECT_THROW(db::position_bin(0.5, 0), plumb::InvalidArgument);
}

namespace {
struct Fixture {
    std::filesystem::path dir, corpus, qrels, answers;
};
Fixture make_fixture() {
    Fixture f;
    f.dir = temp_dir();
    f.corpus = write(f.dir / "c.tsv",
                     "p1\tParis is the capital of France\n"
                     "p2\tThe capital of France is Paris .\n"
                     "p3\tnothing here\n");
    f.qrels = write(f.dir / "qrels.txt", "q1 0 p1 1\nq1 0 p2 2\nq2 0 p3 1\nq3 0 p1 0\nq4 0 p9 1\n");
    f.answers = write(f.dir / "answers.tsv",
                      "q1\tparis\nq1\tcapital of france\nq2\tmissing\nq3\tparis\nq4\tx\n");
    return f;
}
}  // namespace

TEST(AnswerPositions, HistogramBeforeAndAfterWithOffsets) {
    auto f = make_fixture();
    // p1 rotated at r = 3: "the capital of France Paris is"; p2 unchanged.
    write(f.dir / "off.tsv", "p1\t3\t6\np2\t1\t7\n");
    db::AnswerPositionOptions o;
    o.answers = f.answers;
    o.qrels = f.qrels;
    o.corpus = f.corpus;
    o.offsets = f.dir / "off.tsv";
    auto rep = db::audit_answer_positions(o);
    EXPECT_EQ(rep.answers, 5u);
    // q1: 2 answers x 2 passages; q2: 1; q4: passage p9 missing; q3: no relevant passage.
    EXPECT_EQ(rep.triples, 5u);
    EXPECT_EQ(rep.queries_without_relevant, 1u);
    EXPECT_EQ(rep.missing_passages, 1u);
    // Before: paris@p1 0/6 -> bin 0; paris@p2 5/7 -> bin 7; capital@p1 3/6 -> bin 5;
    // capital@p2 1/7 -> bin 1; "missing" not found.
    std::vector<std::uint64_t> before = {1, 1, 0, 0, 0, 1, 0, 1, 0, 0};
    EXPECT_EQ(rep.before.counts, before);
    EXPECT_EQ(rep.before.found, 4u);
    EXPECT_EQ(rep.before.not_found, 1u);
    // After: paris@p1 (0-2) mod 6 = 4 -> 4/6 bin 6; capital@p1 1/6 -> bin 1; p2 unchanged.
    ASSERT_TRUE(rep.after);
    std::vector<std::uint64_t> after = {0, 2, 0, 0, 0, 0, 1, 1, 0, 0};
    EXPECT_EQ(rep.after->counts, after);
    EXPECT_EQ(rep.after->not_found, 1u);
    EXPECT_EQ(rep.after_method, "offsets");
    auto p = rep.before.proportions();
    EXPECT_DOUBLE_EQ(p[0], 0.25);

    db::write_answer_position_report(rep, f.dir / "report");
    auto j = nlohmann::json::parse(slurp(f.dir / "report.json"));
    EXPECT_EQ(j["before"]["found"], 4);
    EXPECT_EQ(j["after"]["counts"][1], 2);
    EXPECT_TRUE(is_png(f.dir / "report.png"));
    EXPECT_TRUE(is_svg(f.dir / "report.svg"));
    EXPECT_NE(slurp(f.dir / "report.txt").find("not found verbatim: 1"), std::string::npos);
}

TEST(AnswerPositions, StripPunctuationMatchesTokensWithoutPunctuation) {
    auto f = make_fixture();
    write(f.answers, "q1\tParis!\nq1\t\"capital\nq2\t.\n");
    db::AnswerPositionOptions o;
    o.answers = f.answers;
    o.qrels = f.qrels;
    o.corpus = f.corpus;
    auto exact = db::audit_answer_positions(o);
    EXPECT_EQ(exact.before.found, 0u);
    o.strip_punctuation = true;
    auto rep = db::audit_answer_positions(o);
    // Paris@p1 0/6 -> bin 0; Paris.@p2 5/7 -> bin 7; capital@p1 3/6 -> bin 5; @p2 1/7 -> bin 1.
    // "." has nothing left to find.
    std::vector<std::uint64_t> before = {1, 1, 0, 0, 0, 1, 0, 1, 0, 0};
    EXPECT_EQ(rep.before.counts, before);
    EXPECT_EQ(rep.before.not_found, 1u);
}

TEST(AnswerPositions, AfterFromARotatedCorpusSearchesAgain) {
    auto f = make_fixture();
    write(f.dir / "rot.tsv",
          "p1\tthe capital of France Paris is\np2\tThe capital of France is Paris .\n"
          "p3\there nothing\n");
    db::AnswerPositionOptions o;
    o.answers = f.answers;
    o.qrels = f.qrels;
    o.corpus = f.corpus;
    o.rotated_corpus = f.dir / "rot.tsv";
    o.bins = 20;
    auto rep = db::audit_answer_positions(o);
    ASSERT_TRUE(rep.after);
    EXPECT_EQ(rep.after_method, "rotated-corpus");
    // 20 bins: paris@p1 4/6 -> 13; capital@p1 1/6 -> 3; paris@p2 5/7 -> 14; capital@p2 1/7 -> 2.
    std::vector<std::uint64_t> after(20, 0);
    after[13] = after[3] = after[14] = after[2] = 1;
    EXPECT_EQ(rep.after->counts, after);
}

TEST(AnswerPositions, SquadJsonUsesCharacterOffsets) {
    auto dir = temp_dir();
    // "Alpha beta gamma delta": gamma starts at byte 11 (token 2 of 4).
    auto squad = write(dir / "squad.json", R"({"data":[{"title":"t","paragraphs":[
        {"context":"Alpha beta gamma delta","qas":[
          {"id":"a","question":"?","answers":[{"text":"gamma","answer_start":11}]},
          {"id":"b","question":"?","answers":[{"text":"beta","answer_start":5}]},
          {"id":"c","question":"?","answers":[{"text":"x","answer_start":100}]},
          {"id":"d","question":"?","answers":[],"is_impossible":true}]}]}]})");
    db::AnswerPositionOptions o;
    o.answers = squad;
    o.rotation_seed = 4;
    auto rep = db::audit_answer_positions(o);
    EXPECT_EQ(rep.answers, 3u);
    EXPECT_EQ(rep.before.found, 2u);
    EXPECT_EQ(rep.before.not_found, 1u);
    EXPECT_EQ(rep.before.counts[5], 1u);  // gamma: 2/4
    EXPECT_EQ(rep.before.counts[2], 1u);  // beta (offset on the space before it): 1/4
    ASSERT_TRUE(rep.after);
    std::size_t r = db::draw_rotation(4, "Alpha beta gamma delta", 4);
    std::vector<std::uint64_t> after(10, 0);
    after[((2 + 4 - (r - 1)) % 4) * 10 / 4]++;
    after[((1 + 4 - (r - 1)) % 4) * 10 / 4]++;
    EXPECT_EQ(rep.after->counts, after);
}

TEST(AnswerPositions, BadInputsFailCleanly) {
    auto f = make_fixture();
    auto bad = write(f.dir / "bad.tsv", "q1\tok\nno-tab-line\n");
    db::AnswerPositionOptions o;
    o.answers = bad;
    o.qrels = f.qrels;
    o.corpus = f.corpus;
    const auto e = thrown<plumb::ParseError>([&] { db::audit_answer_positions(o); });
    ASSERT_TRUE(e);
    EXPECT_NE(std::string(e->what()).find("bad.tsv:2"), std::string::npos);
    o.answers = f.answers;
    o.qrels.clear();
    EXPECT_THROW(db::audit_answer_positions(o), plumb::InvalidArgument);
    o.qrels = write(f.dir / "q.bad", "q1 0 p1\n");
    EXPECT_THROW(db::audit_answer_positions(o), plumb::ParseError);
    o.answers = write(f.dir / "broken.json", "{\"data\": [");
    EXPECT_THROW(db::audit_answer_positions(o), plumb::ParseError);
}
