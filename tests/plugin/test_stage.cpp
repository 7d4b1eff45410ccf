#include <gtest/gtest.h>

#include "plugin/error.hpp"
#include "plugin/stage.hpp"

namespace {
plumb::RankedList make_list(std::initializer_list<std::pair<const char*, float>> items) {
    plumb::RankedList l{"q1", {}};
    for (auto& [id, s] : items) l.candidates.push_back({id, s, "", {}});
    return l;
}

/// A stage that scores a candidate by the length of its docid, for testing the default rerank().
class LengthStage : public plumb::RerankStage {
public:
    std::string name() const override { return "len"; }
    std::size_t depth() const override { return 3; }
    std::vector<float> score(const plumb::Query&,
                             std::span<const plumb::Candidate> c) const override {
        std::vector<float> out;
        for (auto& x : c) out.push_back(static_cast<float>(x.docid.size()));
        return out;
    }
};
}  // namespace

TEST(ApplyRerankScores, HeadSortedTailBelowInOrder) {
    auto l = make_list({{"a", 10}, {"b", 9}, {"c", 8}, {"d", 7}, {"e", 6}});
    std::vector<float> s = {0.5f, 2.0f, 1.0f};
    plumb::apply_rerank_scores(l, s, "x");
    // Head re-sorted by new score: b(2.0) c(1.0) a(0.5); tail d, e keeps order with scores
    // head_min - 1 - i: 0.5 - 1 = -0.5, 0.5 - 2 = -1.5.
    ASSERT_EQ(l.candidates.size(), 5u);
    EXPECT_EQ(l.candidates[0].docid, "b");
    EXPECT_EQ(l.candidates[1].docid, "c");
    EXPECT_EQ(l.candidates[2].docid, "a");
    EXPECT_EQ(l.candidates[3].docid, "d");
    EXPECT_EQ(l.candidates[4].docid, "e");
    EXPECT_FLOAT_EQ(l.candidates[3].score, -0.5f);
    EXPECT_FLOAT_EQ(l.candidates[4].score, -1.5f);
    ASSERT_EQ(l.candidates[0].trace.size(), 1u);
    EXPECT_EQ(l.candidates[0].trace[0].stage, "x");
    EXPECT_TRUE(l.candidates[3].trace.empty());
}

TEST(ApplyRerankScores, TiesKeepPreviousOrder) {
    auto l = make_list({{"a", 3}, {"b", 2}, {"c", 1}});
    std::vector<float> s = {1.0f, 1.0f, 1.0f};
    plumb::apply_rerank_scores(l, s, "x");
    EXPECT_EQ(l.candidates[0].docid, "a");
    EXPECT_EQ(l.candidates[2].docid, "c");
}

TEST(ApplyRerankScores, TooManyScoresThrows) {
    auto l = make_list({{"a", 1}});
    std::vector<float> s = {1.0f, 2.0f};
    EXPECT_THROW(plumb::apply_rerank_scores(l, s, "x"), plumb::InvalidArgument);
}

TEST(RerankStage, DefaultRerankUsesDepth) {
    LengthStage st;
    std::vector<plumb::Query> qs = {{"q1", "text"}};
    std::vector<plumb::RankedList> ls = {make_list({{"a", 9}, {"bbb", 8}, {"cc", 7}, {"dddd", 6}})};
    st.rerank(qs, ls);
    // depth 3: a=1, bbb=3, cc=2 -> bbb, cc, a; dddd stays last despite its longer id.
    EXPECT_EQ(ls[0].candidates[0].docid, "bbb");
    EXPECT_EQ(ls[0].candidates[1].docid, "cc");
    EXPECT_EQ(ls[0].candidates[2].docid, "a");
    EXPECT_EQ(ls[0].candidates[3].docid, "dddd");
    std::vector<plumb::RankedList> two(2);
    EXPECT_THROW(st.rerank(qs, two), plumb::InvalidArgument);
}
