#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "debias/survivorship.hpp"
#include "debias_test_util.hpp"
#include "eval/subsets.hpp"
#include "plugin/error.hpp"

namespace db = plumb::debias;
using namespace debias_test;

namespace {
// q1 first relevant at rank 2, q2 unanswered, q3 at rank 1, q4 at rank 3.
const char* kJsonl =
    R"({"query_id": 1, "query_type": "NUMERIC", "passages": [{"is_selected": 0, "passage_text": "a"}, {"is_selected": 1, "passage_text": "b"}, {"is_selected": 0, "passage_text": "c"}]})"
    "\n"
    R"({"query_id": 2, "query_type": "DESCRIPTION", "passages": [{"is_selected": 0, "passage_text": "d"}, {"is_selected": 0, "passage_text": "e"}, {"is_selected": 0, "passage_text": "f"}]})"
    "\n"
    R"({"query_id": 3, "query_type": "NUMERIC", "passages": [{"is_selected": 1, "passage_text": "g"}, {"is_selected": true, "passage_text": "h"}, {"is_selected": 0, "passage_text": "i"}]})"
    "\n"
    R"({"query_id": "4", "query_type": "DESCRIPTION", "passages": [{"is_selected": 0, "passage_text": "j"}, {"is_selected": 0, "passage_text": "k"}, {"is_selected": 1, "passage_text": "l"}]})"
    "\n";

// The same data in MS MARCO QnA v2.1's column layout (rows keyed "0".."3").
const char* kColumns = R"({
  "answers": {"0": ["x"], "1": ["No Answer Present."], "2": ["y"], "3": ["z"]},
  "passages": {
    "0": [{"is_selected": 0, "passage_text": "a", "url": "u"}, {"is_selected": 1, "passage_text": "b", "url": "u"}, {"is_selected": 0, "passage_text": "c", "url": "u"}],
    "1": [{"is_selected": 0, "passage_text": "d", "url": "u"}, {"is_selected": 0, "passage_text": "e", "url": "u"}, {"is_selected": 0, "passage_text": "f", "url": "u"}],
    "2": [{"is_selected": 1, "passage_text": "g", "url": "u"}, {"is_selected": 1, "passage_text": "h", "url": "u"}, {"is_selected": 0, "passage_text": "i", "url": "u"}],
    "3": [{"is_selected": 0, "passage_text": "j", "url": "u"}, {"is_selected": 0, "passage_text": "k", "url": "u"}, {"is_selected": 1, "passage_text": "l", "url": "u"}]},
  "query": {"0": "q one", "1": "q two", "2": "q three", "3": "q four"},
  "query_id": {"0": 1, "1": 2, "2": 3, "3": 4},
  "query_type": {"0": "NUMERIC", "1": "DESCRIPTION", "2": "NUMERIC", "3": "DESCRIPTION"}
})";

void check_report(const db::SurvivorshipReport& rep, const std::filesystem::path& out) {
    EXPECT_EQ(rep.queries, 4u);
    EXPECT_EQ(rep.unanswered, 1u);
    ASSERT_EQ(rep.by_type.size(), 3u);
    EXPECT_EQ(rep.by_type[0].type, "all");
    EXPECT_DOUBLE_EQ(rep.by_type[0].share, 0.25);
    EXPECT_EQ(rep.by_type[1].type, "DESCRIPTION");
    EXPECT_DOUBLE_EQ(rep.by_type[1].share, 0.5);
    EXPECT_EQ(rep.by_type[2].type, "NUMERIC");
    EXPECT_DOUBLE_EQ(rep.by_type[2].share, 0.0);
    EXPECT_EQ(rep.first_rank, (std::map<unsigned, std::size_t>{{1, 1}, {2, 1}, {3, 1}}));
    EXPECT_EQ(rep.subset_sizes, (std::vector<std::size_t>{1, 2, 3}));
    EXPECT_EQ(lines(out / "S_1.qids"), (std::vector<std::string>{"3"}));
    EXPECT_EQ(lines(out / "S_2.qids"), (std::vector<std::string>{"1", "3"}));
    EXPECT_EQ(plumb::eval::read_qid_list(out / "S_3.qids"),
              (std::vector<std::string>{"1", "3", "4"}));
    EXPECT_EQ(lines(out / "all.qids").size(), 4u);
    auto j = nlohmann::json::parse(slurp(out / "report.json"));
    EXPECT_DOUBLE_EQ(j["unanswered_share"].get<double>(), 0.25);
    EXPECT_EQ(j["subset_sizes"]["2"], 2);
    EXPECT_TRUE(is_png(out / "first_rank.png"));
    EXPECT_TRUE(is_svg(out / "first_rank.svg"));
}
}  // namespace

TEST(Survivorship, JsonlSharesFirstRanksAndSubsets) {
    auto dir = temp_dir();
    db::SurvivorshipOptions o;
    o.input = write(dir / "qna.jsonl", kJsonl);
    o.output_dir = dir / "out";
    auto rep = db::run_survivorship(o);
    check_report(rep, o.output_dir);
    // The shown-ranks file is eval's format, with synthetic ids <qid>_<rank>.
    auto shown = plumb::eval::read_shown_ranks(o.output_dir / "shown_ranks.tsv");
    ASSERT_EQ(shown.queries.size(), 4u);
    EXPECT_EQ(shown.queries[0].passages[1].docid, "1_2");
    EXPECT_TRUE(shown.queries[0].passages[1].selected);
    EXPECT_EQ(rep.passages_synthetic, 12u);
    EXPECT_EQ(lines(o.output_dir / "query_types.tsv")[1], "2\tDESCRIPTION");
}

TEST(Survivorship, ColumnJsonIsStreamedAndMapsTextsToCorpusIds) {
    auto dir = temp_dir();
    db::SurvivorshipOptions o;
    o.input = write(dir / "dev.json", kColumns);
    o.corpus = write(dir / "c.tsv", "P7\tb\nP8\tz-not-shown\n");
    o.output_dir = dir / "out";
    auto rep = db::run_survivorship(o);
    check_report(rep, o.output_dir);
    EXPECT_EQ(rep.passages_mapped, 1u);
    EXPECT_EQ(rep.passages_synthetic, 11u);
    auto shown = plumb::eval::read_shown_ranks(o.output_dir / "shown_ranks.tsv");
    EXPECT_EQ(shown.queries[0].passages[1].docid, "P7");
}

TEST(Survivorship, ShownRanksTsvWithTypesAndMaxK) {
    auto dir = temp_dir();
    db::SurvivorshipOptions o;
    o.input = write(dir / "shown.tsv",
                    "a\t1\td1\t0\na\t2\td2\t1\nb\t1\td3\t0\nb\t2\td4\t0\nc\t1\td5\t1\n");
    o.types = write(dir / "types.tsv", "a\tX\nb\tX\n");
    o.max_k = 1;
    o.output_dir = dir / "out";
    auto rep = db::run_survivorship(o);
    EXPECT_EQ(rep.unanswered, 1u);
    EXPECT_EQ(rep.subset_sizes, (std::vector<std::size_t>{1}));
    EXPECT_FALSE(std::filesystem::exists(o.output_dir / "S_2.qids"));
    ASSERT_EQ(rep.by_type.size(), 3u);  // all, (none) for c, X
    EXPECT_EQ(rep.by_type[1].type, "(none)");
    EXPECT_EQ(rep.by_type[2].type, "X");
    EXPECT_DOUBLE_EQ(rep.by_type[2].share, 0.5);
}

TEST(Survivorship, BadInputsFailCleanly) {
    auto dir = temp_dir();
    db::SurvivorshipOptions o;
    o.output_dir = dir / "out";
    o.input = write(dir / "bad.jsonl", std::string(kJsonl) + "{\"query_type\": \"X\"}\n");
    EXPECT_EQ(parse_error_line([&] { db::run_survivorship(o); }), 5u);
    o.input = write(dir / "broken.json", "{\"query_id\": {\"0\": 1");
    EXPECT_THROW(db::run_survivorship(o), plumb::ParseError);
    o.input = write(dir / "rows.json", R"({"query_id": {"zero": 1}})");
    EXPECT_THROW(db::run_survivorship(o), plumb::ParseError);
    o.input = write(dir / "arrays.json", R"({"query_id": [1, 2]})");
    EXPECT_THROW(db::run_survivorship(o), plumb::ParseError);  // no queries found
    o.input = write(dir / "bad.tsv", "a\t1\td1\t2\n");
    EXPECT_THROW(db::run_survivorship(o), plumb::ParseError);
    o.input = dir / "missing.jsonl";
    EXPECT_THROW(db::run_survivorship(o), plumb::IoError);
}
