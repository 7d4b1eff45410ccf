#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>

#include "debias/rotation.hpp"
#include "debias_test_util.hpp"
#include "plugin/error.hpp"
#include "plugin/text_io.hpp"

namespace db = plumb::debias;
using namespace debias_test;

namespace {
std::vector<std::string> tokens_of(const std::string& s) {
    std::vector<std::string> out;
    std::istringstream in(s);
    for (std::string t; in >> t;) out.push_back(t);
    return out;
}
// Eq. 7 written out independently: [p_r..p_n ; p_1..p_(r-1)].
std::string eq7(const std::vector<std::string>& p, std::size_t r) {
    std::string out;
    for (std::size_t k = r; k <= p.size(); ++k) out += (out.empty() ? "" : " ") + p[k - 1];
    for (std::size_t k = 1; k < r; ++k) out += (out.empty() ? "" : " ") + p[k - 1];
    return out;
}
}  // namespace

TEST(Rotation, RotateTokensHandCases) {
    std::vector<std::string_view> t = {"a", "b", "c", "d", "e"};
    EXPECT_EQ(db::rotate_tokens(t, 1), "a b c d e");
    EXPECT_EQ(db::rotate_tokens(t, 3), "c d e a b");
    EXPECT_EQ(db::rotate_tokens(t, 5), "e a b c d");
    EXPECT_THROW(db::rotate_tokens(t, 0), plumb::InvalidArgument);
    EXPECT_THROW(db::rotate_tokens(t, 6), plumb::InvalidArgument);
    EXPECT_EQ(db::rotate_tokens({}, 1), "");
    EXPECT_THROW(db::rotate_tokens({}, 2), plumb::InvalidArgument);
}

TEST(Rotation, MapRotatedIndexFollowsTheRotation) {
    // "a b c d e" rotated at r = 3 is "c d e a b".
    EXPECT_EQ(db::map_rotated_index(2, 3, 5), 0u);  // c
    EXPECT_EQ(db::map_rotated_index(0, 3, 5), 3u);  // a
    EXPECT_EQ(db::map_rotated_index(1, 3, 5), 4u);  // b
    EXPECT_EQ(db::map_rotated_index(4, 5, 5), 0u);  // e at r = 5
    EXPECT_EQ(db::map_rotated_index(4, 1, 5), 4u);  // r = 1: identity
    EXPECT_THROW(db::map_rotated_index(5, 1, 5), plumb::InvalidArgument);
}

TEST(Rotation, UniformBelowRangeAndBadN) {
    std::mt19937_64 gen(42);
    EXPECT_THROW(db::uniform_below(gen, 0), plumb::InvalidArgument);
    for (int i = 0; i < 100; ++i) EXPECT_EQ(db::uniform_below(gen, 1), 0u);
    for (int i = 0; i < 1000; ++i) EXPECT_LT(db::uniform_below(gen, 7), 7u);
}

TEST(Rotation, DrawIsDeterministicInRangeAndRoughlyUniform) {
    EXPECT_EQ(db::draw_rotation(1, "x", 0), 1u);
    EXPECT_EQ(db::draw_rotation(1, "x", 1), 1u);
    std::map<std::size_t, int> counts;
    for (int i = 0; i < 4000; ++i) {
        std::string text = "passage " + std::to_string(i);
        auto r = db::draw_rotation(7, text, 4);
        ASSERT_GE(r, 1u);
        ASSERT_LE(r, 4u);
        EXPECT_EQ(r, db::draw_rotation(7, text, 4));  // same seed and text: same r
        counts[r]++;
    }
    // Expected 1000 each, sd ~27: a generous +-200 band.
    for (std::size_t r = 1; r <= 4; ++r) {
        EXPECT_GT(counts[r], 800) << r;
        EXPECT_LT(counts[r], 1200) << r;
    }
    int differs = 0;
    for (int i = 0; i < 50; ++i) {
        std::string text = "passage " + std::to_string(i);
        differs += db::draw_rotation(7, text, 20) != db::draw_rotation(8, text, 20);
    }
    EXPECT_GT(differs, 30);  // another seed gives other offsets
}

TEST(Rotation, CorpusOutputIsEq7WithRecordedOffsets) {
    auto dir = temp_dir();
    std::string long_text;
    for (int i = 1; i <= 20; ++i) long_text += "w" + std::to_string(i) + " ";
    auto in = write(dir / "c.tsv",
                    "d1\tthe quick  brown fox jumps\nd2\t\nd3\tsingle\nd4\t" + long_text + "\n");
    db::RotateCorpusOptions o;
    o.seed = 11;
    o.offsets = dir / "off.tsv";
    auto stats = db::rotate_corpus(in, dir / "out.tsv", o);
    EXPECT_EQ(stats.passages, 4u);
    EXPECT_EQ(stats.rotated, 4u);
    auto out = lines(dir / "out.tsv");
    auto off = lines(dir / "off.tsv");
    ASSERT_EQ(out.size(), 4u);
    ASSERT_EQ(off.size(), 4u);
    std::vector<std::string> originals = {"the quick  brown fox jumps", "", "single", long_text};
    std::vector<std::string> ids = {"d1", "d2", "d3", "d4"};
    for (std::size_t i = 0; i < 4; ++i) {
        std::vector<std::string> f;
        std::istringstream ss(off[i]);
        for (std::string x; std::getline(ss, x, '\t');) f.push_back(x);
        ASSERT_EQ(f.size(), 3u);
        EXPECT_EQ(f[0], ids[i]);
        std::size_t r = std::stoul(f[1]), n = std::stoul(f[2]);
        auto toks = tokens_of(originals[i]);
        EXPECT_EQ(n, toks.size());
        EXPECT_GE(r, 1u);
        EXPECT_LE(r, std::max<std::size_t>(n, 1));
        EXPECT_EQ(out[i], ids[i] + "\t" + eq7(toks, r));
    }
    EXPECT_EQ(off[1], "d2\t1\t0");  // empty passage
    EXPECT_EQ(off[2], "d3\t1\t1");
    // Same seed: byte-identical; read back through the offsets reader.
    db::rotate_corpus(in, dir / "out2.tsv", o);
    EXPECT_EQ(slurp(dir / "out.tsv"), slurp(dir / "out2.tsv"));
    auto parsed = db::read_rotation_offsets(dir / "off.tsv");
    ASSERT_EQ(parsed.size(), 4u);
    EXPECT_EQ(parsed[3].second.n, 20u);
}

TEST(Rotation, QrelsRestrictTheRotatedPassages) {
    auto dir = temp_dir();
    auto in = write(dir / "c.tsv", "d1\ta b c d e f g h\nd2\tx  y z w v u t s\n");
    db::RotateCorpusOptions o;
    o.seed = 3;
    o.offsets = dir / "off.tsv";
    o.only_ids = std::unordered_set<std::string>{"d1"};
    auto stats = db::rotate_corpus(in, dir / "out.tsv", o);
    EXPECT_EQ(stats.rotated, 1u);
    EXPECT_EQ(stats.not_selected, 1u);
    auto out = lines(dir / "out.tsv");
    ASSERT_EQ(out.size(), 2u);
    EXPECT_EQ(out[1], "d2\tx  y z w v u t s");  // copied verbatim
    auto off = lines(dir / "off.tsv");
    ASSERT_EQ(off.size(), 1u);
    EXPECT_EQ(off[0].substr(0, 3), "d1\t");
    // The rotation of d1 does not depend on which other passages are rotated.
    auto r = db::draw_rotation(3, "a b c d e f g h", 8);
    EXPECT_EQ(out[0], "d1\t" + eq7(tokens_of("a b c d e f g h"), r));
}

TEST(Rotation, JsonlKeepsIdAndTitle) {
    auto dir = temp_dir();
    auto in = write(dir / "c.jsonl", R"({"_id":"a1","title":"T","text":"one two three four"})"
                                     "\n");
    db::RotateCorpusOptions o;
    o.seed = 5;
    db::rotate_corpus(in, dir / "out.jsonl", o);
    auto out = lines(dir / "out.jsonl");
    ASSERT_EQ(out.size(), 1u);
    auto j = nlohmann::json::parse(out[0]);
    EXPECT_EQ(j["_id"], "a1");
    EXPECT_EQ(j["title"], "T");
    auto r = db::draw_rotation(5, "one two three four", 4);
    EXPECT_EQ(j["text"], eq7({"one", "two", "three", "four"}, r));
}

TEST(Rotation, BadCorpusLineNamesFileAndLineAndWritesNothing) {
    auto dir = temp_dir();
    auto in = write(dir / "bad.tsv", "d1\tok text\nno tab here\n");
    db::RotateCorpusOptions o;
    const auto e = thrown<plumb::ParseError>([&] { db::rotate_corpus(in, dir / "out.tsv", o); });
    ASSERT_TRUE(e);
    EXPECT_NE(std::string(e->what()).find("bad.tsv:2"), std::string::npos) << e->what();
    EXPECT_FALSE(std::filesystem::exists(dir / "out.tsv"));
    EXPECT_TRUE(no_temp_files(dir));
}

TEST(Rotation, TriplesRotateBothPassagesAndKeepTheQuery) {
    auto dir = temp_dir();
    auto in = write(dir / "t.tsv", "what is x\tp1 p2 p3 p4 p5\tn1 n2 n3\n");
    auto stats = db::rotate_triples(in, dir / "out.tsv", 9, dir / "off.tsv");
    EXPECT_EQ(stats.passages, 2u);
    auto out = lines(dir / "out.tsv");
    ASSERT_EQ(out.size(), 1u);
    std::size_t rp = db::draw_rotation(9, "p1 p2 p3 p4 p5", 5);
    std::size_t rn = db::draw_rotation(9, "n1 n2 n3", 3);
    EXPECT_EQ(out[0], "what is x\t" + eq7(tokens_of("p1 p2 p3 p4 p5"), rp) + "\t" +
                          eq7(tokens_of("n1 n2 n3"), rn));
    auto off = lines(dir / "off.tsv");
    ASSERT_EQ(off.size(), 2u);
    EXPECT_EQ(off[0], "1\tpos\t" + std::to_string(rp) + "\t5");
    EXPECT_EQ(off[1], "1\tneg\t" + std::to_string(rn) + "\t3");
    auto bad = write(dir / "bad.tsv", "q\tp\tn\nq\tonly two\n");
    EXPECT_EQ(parse_error_line([&] { db::rotate_triples(bad, dir / "o2.tsv", 1); }), 2u);
    auto s = db::rotate_triples(bad, dir / "o3.tsv", 1, {}, /*skip_bad=*/true);
    EXPECT_EQ(s.skipped_bad, 1u);
}

TEST(Rotation, BadOffsetsFileIsParseError) {
    auto dir = temp_dir();
    auto p = write(dir / "off.tsv", "d1\t2\t5\nd2\t7\t5\n");
    EXPECT_EQ(parse_error_line([&] { db::read_rotation_offsets(p); }), 2u);
}
