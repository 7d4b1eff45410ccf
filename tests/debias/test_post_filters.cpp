// Tests of the bias-aware post-filters (issue 7). Expected values are derived by hand in the
// comments (binomial CDFs, re-rankings, Jaccard of shingle sets).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "debias/bias_balance.hpp"
#include "debias/fair_topk.hpp"
#include "debias/near_duplicates.hpp"
#include "debias/post_filters.hpp"
#include "debias_test_util.hpp"
#include "plugin/error.hpp"
#include "plugin/json.hpp"
#include "tests/support/map_source.hpp"

using namespace plumb;
using namespace plumb::debias;

namespace {

// Bias triples (tc): female passage (1, 1, 0) -> label -1; male (-1, 0, 1) -> +1; neutral 0.
const eval::BiasTriple kFemale{1.0, 1.0, 0.0};
const eval::BiasTriple kMale{-1.0, 0.0, 1.0};
const eval::BiasTriple kNeutral{0.0, 0.0, 0.0};

struct Item {
    std::string docid;
    float score;
    eval::BiasTriple triple;
};

RankedList make_list(const std::vector<Item>& items, eval::BiasTable* table) {
    RankedList l;
    l.qid = "q1";
    for (const auto& it : items) {
        Candidate c;
        c.docid = it.docid;
        c.score = it.score;
        l.candidates.push_back(c);
        if (table) (*table)[it.docid] = it.triple;
    }
    return l;
}

std::vector<std::string> ids(const RankedList& l) {
    std::vector<std::string> out;
    for (const auto& c : l.candidates) out.push_back(c.docid);
    return out;
}

PassageBias table_bias(const eval::BiasTable& t) {
    PassageBias b;
    b.table = std::make_shared<const eval::BiasTable>(t);
    return b;
}

/// Bias computed from passage text with the word list {she: female, he: male}.
PassageBias she_he_bias() {
    auto words = std::make_shared<eval::GenderWordList>();
    words->add("she", eval::Gender::Female);
    words->add("he", eval::Gender::Male);
    PassageBias b;
    b.words = words;
    return b;
}

const Query kQuery{"q1", "who"};

}  // namespace

// ---------------------------------------------------------------- FA*IR m-table

TEST(FairMTable, BinomialInverseCdfByHand) {
    // p = 0.5, alpha = 0.1; F(m; i, 0.5) = Σ_{j<=m} C(i,j) / 2^i, m(i) = min m with F > 0.1:
    // i=1..3: F(0) = .5, .25, .125 > .1 -> 0;  i=4: F(0) = .0625, F(1) = .3125 -> 1;
    // i=5: F(0) = .03125, F(1) = .1875 -> 1;  i=6: F(0) = .015625, F(1) = 7/64 = .109 -> 1;
    // i=7: F(1) = 8/128 = .0625, F(2) = 29/128 -> 2;  i=8: F(1) = 9/256, F(2) = 37/256 = .145 -> 2;
    // i=9: F(2) = 46/512 = .0898, F(3) = 130/512 -> 3;  i=10: F(2) = 56/1024, F(3) = 176/1024 -> 3.
    const std::vector<std::size_t> expected{0, 0, 0, 1, 1, 1, 2, 2, 3, 3};
    EXPECT_EQ(fair_mtable(10, 0.5, 0.1), expected);
    // The unadjusted table of the fairsearch library's README (k=20, p=0.25, alpha=0.1).
    const std::vector<std::size_t> fs{0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 3};
    EXPECT_EQ(fair_mtable(20, 0.25, 0.1), fs);
}

TEST(FairMTable, FailureProbabilityByHand) {
    // m = 0,0,0,1,1,1,2 (k=7): fail iff no protected in the first 4 (1/16), or exactly one in
    // the first 4 and none in 5..7 ((4/16)(1/8)): 1/16 + 1/32 = 0.09375.
    const auto m7 = fair_mtable(7, 0.5, 0.1);
    EXPECT_DOUBLE_EQ(fair_fail_probability(m7, 0.5), 0.09375);
    // k=9 adds the failure at prefix 9 (m=3): count(7)=2 with >=1 in the first 4 (21-3 = 18 of
    // 128 patterns), then two non-protected: 18/512. Total 48/512 + 18/512 = 66/512.
    const auto m9 = fair_mtable(9, 0.5, 0.1);
    EXPECT_DOUBLE_EQ(fair_fail_probability(m9, 0.5), 66.0 / 512.0);
    // An all-zero table never fails; m(1) = 1 fails with probability 1 - p.
    EXPECT_DOUBLE_EQ(fair_fail_probability({0, 0, 0}, 0.3), 0.0);
    EXPECT_DOUBLE_EQ(fair_fail_probability({1}, 0.3), 0.7);
}

TEST(FairMTable, AdjustedAlphaByHand) {
    // k=7: the unadjusted table fails with 0.09375 <= 0.1: no adjustment.
    EXPECT_DOUBLE_EQ(fair_adjusted_alpha(7, 0.5, 0.1), 0.1);
    // k=9: 66/512 > 0.1. Lowering alpha_c below F(2; 9, .5) = 46/512 turns m(9) into 2 (table
    // 0,0,0,1,1,1,2,2,2, failing with 48/512 <= 0.1); m(4), m(7) stay while alpha_c >= 0.0625.
    const double ac = fair_adjusted_alpha(9, 0.5, 0.1);
    EXPECT_LT(ac, 46.0 / 512.0);
    EXPECT_GE(ac, 46.0 / 512.0 - 1e-9);
    FairTopKOptions o;
    o.k = 9;
    o.group = ProtectedGroup::Custom;
    o.is_protected = [](const Candidate&, const PassageBias::Value&) { return false; };
    FairTopK f(o, {});
    const std::vector<std::size_t> expected{0, 0, 0, 1, 1, 1, 2, 2, 2};
    EXPECT_EQ(f.mtable(), expected);
    EXPECT_LE(fair_fail_probability(f.mtable(), 0.5), 0.1);
}

TEST(FairMTable, BadParameters) {
    EXPECT_THROW(fair_mtable(0, 0.5, 0.1), InvalidArgument);
    EXPECT_THROW(fair_mtable(5, 0.0, 0.1), InvalidArgument);
    EXPECT_THROW(fair_mtable(5, 0.5, 1.0), InvalidArgument);
    FairTopKOptions o;
    EXPECT_THROW(FairTopK(o, {}), InvalidArgument);  // no bias source
    o.group = ProtectedGroup::Custom;
    EXPECT_THROW(FairTopK(o, {}), InvalidArgument);  // no predicate
}

// ---------------------------------------------------------------- FA*IR re-ranking

TEST(FairTopK, ReordersByHandAndEveryPrefixHolds) {
    // Scores 12..1; female (protected) at input positions 9, 11, 12; k=10, no adjustment:
    // m = 0,0,0,1,1,1,2,2,3,3. Positions 1-3: n1 n2 n3; 4: need 1 -> f9; 5, 6: n4 n5;
    // 7: need 2 -> f11; 8: n6; 9: need 3 -> f12; 10: n7; tail n8 n10.
    eval::BiasTable t;
    std::vector<Item> items;
    for (int i = 1; i <= 12; ++i) {
        const bool f = i == 9 || i == 11 || i == 12;
        items.push_back({(f ? "f" : "n") + std::to_string(i), static_cast<float>(13 - i),
                         f ? kFemale : (i % 2 ? kMale : kNeutral)});
    }
    auto list = make_list(items, &t);
    FairTopKOptions o;
    o.k = 10;
    o.adjust_alpha = false;
    FairTopK f(o, table_bias(t));
    auto r = f.apply_with_report(kQuery, list);
    const std::vector<std::string> expected{"n1",  "n2", "n3",  "f9", "n4", "n5",
                                            "f11", "n6", "f12", "n7", "n8", "n10"};
    EXPECT_EQ(ids(list), expected);
    EXPECT_TRUE(r.feasible);
    EXPECT_TRUE(r.changed);
    EXPECT_EQ(r.before.protected_count, 1u);
    EXPECT_EQ(r.after.protected_count, 3u);
    // Utility: before 12+..+3 = 75; after 12+11+10+4+9+8+2+7+1+6 = 70.
    EXPECT_DOUBLE_EQ(r.before.utility, 75.0);
    EXPECT_DOUBLE_EQ(r.after.utility, 70.0);
    EXPECT_DOUBLE_EQ(r.utility_loss(), 5.0);
    // Every prefix holds at least m(i) protected.
    const auto& m = f.mtable();
    std::size_t count = 0;
    for (std::size_t i = 0; i < 10; ++i) {
        count += list.candidates[i].docid[0] == 'f';
        EXPECT_GE(count, m[i]) << "prefix " << i + 1;
    }
    // Scores follow the new order strictly; a post-filter computes no score, so it adds no trace
    // entry (the input score stays the entry of the stage that computed it).
    for (std::size_t i = 1; i < list.candidates.size(); ++i) {
        EXPECT_LT(list.candidates[i].score, list.candidates[i - 1].score);
    }
    EXPECT_TRUE(list.candidates[3].trace.empty());
}

TEST(FairTopK, InfeasibleTakesWhatExists) {
    // One female at position 5 of 10; m(4) = 1 -> f5 moves to 4; m(7) = 2 cannot be met.
    eval::BiasTable t;
    std::vector<Item> items;
    for (int i = 1; i <= 10; ++i) {
        items.push_back({(i == 5 ? "f" : "n") + std::to_string(i), static_cast<float>(11 - i),
                         i == 5 ? kFemale : kNeutral});
    }
    auto list = make_list(items, &t);
    FairTopKOptions o;
    o.adjust_alpha = false;
    FairTopK f(o, table_bias(t));
    auto r = f.apply_with_report(kQuery, list);
    const std::vector<std::string> expected{"n1", "n2", "n3", "f5", "n4",
                                            "n6", "n7", "n8", "n9", "n10"};
    EXPECT_EQ(ids(list), expected);
    EXPECT_FALSE(r.feasible);
    EXPECT_EQ(r.after.protected_count, 1u);
}

TEST(FairTopK, AlreadyFairIsUntouchedAndMaleGroup) {
    // Male protected; males at 1 and 4 of 5 (k=5, m = 0,0,0,1,1): already fair.
    eval::BiasTable t;
    auto list = make_list({{"a", 5, kMale},
                           {"b", 4, kFemale},
                           {"c", 3, kNeutral},
                           {"d", 2, kMale},
                           {"e", 1, kFemale}},
                          &t);
    FairTopKOptions o;
    o.k = 5;
    o.group = ProtectedGroup::Male;
    o.adjust_alpha = false;
    FairTopK f(o, table_bias(t));
    auto r = f.apply_with_report(kQuery, list);
    EXPECT_FALSE(r.changed);
    EXPECT_EQ(r.after.protected_count, 2u);
    EXPECT_TRUE(list.candidates[0].trace.empty());
    EXPECT_FLOAT_EQ(list.candidates[0].score, 5.0f);
}

TEST(FairTopK, LabelsFromTextWithWordList) {
    // No table: labels from the candidate text. "she" -> female (-1).
    PassageBias b = she_he_bias();
    RankedList l;
    l.qid = "q";
    const char* texts[] = {"he ran", "he sat", "it is", "he he", "she ran"};
    for (int i = 0; i < 5; ++i) {
        Candidate c;
        c.docid = "d" + std::to_string(i + 1);
        c.score = static_cast<float>(5 - i);
        c.text = texts[i];
        l.candidates.push_back(c);
    }
    FairTopKOptions o;
    o.k = 4;
    o.adjust_alpha = false;  // m = 0,0,0,1 -> d5 moves to position 4
    FairTopK f(o, b);
    auto r = f.apply_with_report(kQuery, l);
    const std::vector<std::string> expected{"d1", "d2", "d3", "d5", "d4"};
    EXPECT_EQ(ids(l), expected);
    // RaB@4 bias (tc, male - female): before (1+1+0+2)/4 = 1; after (1+1+0-1)/4 = 0.25.
    EXPECT_DOUBLE_EQ(r.before.bias, 1.0);
    EXPECT_DOUBLE_EQ(r.after.bias, 0.25);
}

// ---------------------------------------------------------------- bias balance

namespace {
// A 10 (male), B 9 (male), C 8.5 (female), D 7 (female); k = 2: RaB@2 before = +1.
RankedList balance_list(eval::BiasTable& t) {
    return make_list({{"A", 10, kMale}, {"B", 9, kMale}, {"C", 8.5f, kFemale}, {"D", 7, kFemale}},
                     &t);
}
}  // namespace

TEST(BiasBalance, BudgetZeroIsIdentity) {
    eval::BiasTable t;
    auto list = balance_list(t);
    BiasBalance f({2, 0.0, 0}, table_bias(t));
    auto r = f.apply_with_report(kQuery, list);
    EXPECT_FALSE(r.changed);
    EXPECT_EQ(ids(list), (std::vector<std::string>{"A", "B", "C", "D"}));
    EXPECT_DOUBLE_EQ(r.after.bias, 1.0);
    EXPECT_DOUBLE_EQ(r.score_loss, 0.0);
}

TEST(BiasBalance, HandExampleWithinBudget) {
    // Budget 1: position 1 keeps A (every candidate gives |b| = 1); position 2: first = B (9),
    // C costs 0.5 <= 1 and gives |1 - 1| = 0 < 2 -> C. Order A C B D; RaB@2 = 0; loss 0.5.
    eval::BiasTable t;
    auto list = balance_list(t);
    BiasBalance f({2, 1.0, 0}, table_bias(t));
    auto r = f.apply_with_report(kQuery, list);
    EXPECT_EQ(ids(list), (std::vector<std::string>{"A", "C", "B", "D"}));
    EXPECT_DOUBLE_EQ(r.before.bias, 1.0);
    EXPECT_DOUBLE_EQ(r.after.bias, 0.0);
    EXPECT_DOUBLE_EQ(r.score_loss, 0.5);
    EXPECT_DOUBLE_EQ(r.before.utility, 19.0);
    EXPECT_DOUBLE_EQ(r.after.utility, 18.5);
    // Budget 0.4 < 0.5: C is not affordable, D neither (2.0): unchanged.
    auto list2 = balance_list(t);
    BiasBalance g({2, 0.4, 0}, table_bias(t));
    EXPECT_FALSE(g.apply_with_report(kQuery, list2).changed);
    // Infinite budget: same as budget 1 here (C precedes D at equal balance).
    auto list3 = balance_list(t);
    BiasBalance h({2, std::numeric_limits<double>::infinity(), 0}, table_bias(t));
    h.apply(kQuery, list3);
    EXPECT_EQ(ids(list3), (std::vector<std::string>{"A", "C", "B", "D"}));
    // depth = 2: only A and B may enter the top-2: unchanged.
    auto list4 = balance_list(t);
    BiasBalance d({2, 100.0, 2}, table_bias(t));
    EXPECT_FALSE(d.apply_with_report(kQuery, list4).changed);
}

TEST(BiasBalance, BudgetBoundAndBiasNeverWorseOnManyLists) {
    // Deterministic pseudo-random lists: the top-k score loss never exceeds the budget and
    // |RaB@k| never grows.
    std::uint64_t state = 12345;
    auto next = [&] {
        state = state * 6364136223846793005ULL + 1442695040888963407ULL;
        return static_cast<double>(state >> 33) / static_cast<double>(1ULL << 31);
    };
    int changed = 0;
    for (int trial = 0; trial < 200; ++trial) {
        eval::BiasTable t;
        std::vector<Item> items;
        float s = 20.0f;
        for (int i = 0; i < 15; ++i) {
            s -= static_cast<float>(next());
            const double u = next();
            items.push_back(
                {"d" + std::to_string(i), s, u < 0.4 ? kMale : (u < 0.6 ? kFemale : kNeutral)});
        }
        const double budget = next() * 3.0;
        auto list = make_list(items, &t);
        BiasBalance f({5, budget, 0}, table_bias(t));
        auto r = f.apply_with_report(kQuery, list);
        EXPECT_LE(r.utility_loss(), budget + 1e-6) << "trial " << trial;
        EXPECT_LE(r.score_loss, budget + 1e-9);
        EXPECT_LE(std::abs(r.after.bias), std::abs(r.before.bias) + 1e-12);
        EXPECT_EQ(list.candidates.size(), 15u);
        if (r.changed) {
            ++changed;
            EXPECT_LT(std::abs(r.after.bias), std::abs(r.before.bias));
        }
    }
    EXPECT_GT(changed, 20);  // the property is exercised on re-ordered lists
}

TEST(BiasBalance, SwapPicksCheapestBalancingSwap) {
    // A 10 (+1), N 9.8 (0), B 9 (-1); k = 2, S = 1 + 0 = 1, RaB@2 = 0.5. Swaps: A<->B gives
    // S = -1 (|1|, no gain); N<->B gives S = 0 at cost 0.8. Budget 0.5: nothing affordable.
    // Infinite budget: N<->B -> top-2 {A, B} in input order, then N; RaB@2 = 0, loss 0.8.
    eval::BiasTable t;
    auto list = make_list({{"A", 10, kMale}, {"N", 9.8f, kNeutral}, {"B", 9, kFemale}}, &t);
    BiasBalance half({2, 0.5, 0}, table_bias(t));
    EXPECT_FALSE(half.apply_with_report(kQuery, list).changed);
    BiasBalance f({2, std::numeric_limits<double>::infinity(), 0}, table_bias(t));
    auto r = f.apply_with_report(kQuery, list);
    EXPECT_TRUE(r.changed);
    EXPECT_EQ(ids(list), (std::vector<std::string>{"A", "B", "N"}));
    EXPECT_DOUBLE_EQ(r.before.bias, 0.5);
    EXPECT_DOUBLE_EQ(r.after.bias, 0.0);
    EXPECT_NEAR(r.score_loss, 0.8, 1e-6);
    EXPECT_NEAR(r.utility_loss(), 0.8, 1e-6);
}

TEST(BiasBalance, TwoSwapsByHand) {
    // k = 3, all male on top: M1 10, M2 9, M3 8 (S = 3); below F4 7.5, F5 7, N6 6.9.
    // Budget 2.5. First swap: the smallest |S'| is 1 (a male out, a female in); cheapest is
    // M3<->F4 (0.5). Then S = 1: only male<->N6 reaches S' = 0; the cheaper, M2<->N6, costs
    // 9 - 6.9 = 2.1 > 2.0 left: not affordable. Every other swap gives |S'| >= 1 (no strict
    // gain). Stop. Result top-3 {M1, M2, F4}: RaB@3 = 1/3, loss 0.5.
    eval::BiasTable t;
    const auto males_on_top = [&t] {
        return make_list({{"M1", 10, kMale},
                          {"M2", 9, kMale},
                          {"M3", 8, kMale},
                          {"F4", 7.5f, kFemale},
                          {"F5", 7, kFemale},
                          {"N6", 6.9f, kNeutral}},
                         &t);
    };
    auto list = males_on_top();
    BiasBalance f({3, 2.5, 0}, table_bias(t));
    auto r = f.apply_with_report(kQuery, list);
    EXPECT_EQ(ids(list), (std::vector<std::string>{"M1", "M2", "F4", "M3", "F5", "N6"}));
    EXPECT_DOUBLE_EQ(r.before.bias, 1.0);
    EXPECT_DOUBLE_EQ(r.after.bias, 1.0 / 3.0);
    EXPECT_DOUBLE_EQ(r.score_loss, 0.5);
    // Budget 3.5: after M3<->F4 (0.5), M2<->N6 (2.1 <= 3.0 left) reaches S = 0: top-3
    // {M1, F4, N6}, RaB@3 = 0, loss 2.6.
    auto list2 = males_on_top();
    BiasBalance g({3, 3.5, 0}, table_bias(t));
    auto r2 = g.apply_with_report(kQuery, list2);
    EXPECT_EQ(ids(list2), (std::vector<std::string>{"M1", "F4", "N6", "M2", "M3", "F5"}));
    EXPECT_DOUBLE_EQ(r2.after.bias, 0.0);
    EXPECT_NEAR(r2.score_loss, 2.6, 1e-5);
}

TEST(BiasBalance, BadOptions) {
    eval::BiasTable t;
    EXPECT_THROW(BiasBalance({0, 1.0, 0}, table_bias(t)), InvalidArgument);
    EXPECT_THROW(BiasBalance({2, -1.0, 0}, table_bias(t)), InvalidArgument);
    EXPECT_THROW(BiasBalance({2, 1.0, 0}, PassageBias{}), InvalidArgument);
}

// ---------------------------------------------------------------- near duplicates

TEST(NearDuplicates, ShingleJaccardByHand) {
    // "the cat sat on the mat": 3-shingles {the cat sat, cat sat on, sat on the, on the mat} = 4.
    const auto a = shingle_set("the cat sat on the mat", 3);
    const auto b = shingle_set("The cat sat on the MAT today", 3);  // 4 + {the mat today} = 5
    EXPECT_EQ(a.size(), 4u);
    EXPECT_EQ(b.size(), 5u);
    EXPECT_DOUBLE_EQ(jaccard(a, b), 4.0 / 5.0);
    EXPECT_DOUBLE_EQ(jaccard(a, shingle_set("a dog ran in the park", 3)), 0.0);
    // Fewer tokens than the shingle size: one shingle of all tokens.
    EXPECT_EQ(shingle_set("hello world", 3).size(), 1u);
    EXPECT_DOUBLE_EQ(jaccard(shingle_set("hello world", 3), shingle_set("HELLO \t world", 3)), 1.0);
    // Two empty texts are never duplicates.
    EXPECT_DOUBLE_EQ(jaccard(shingle_set("", 3), shingle_set("  ", 3)), 0.0);
    // 1-shingles: {a, b, c} vs {b, c, d}: 2 / 4.
    EXPECT_DOUBLE_EQ(jaccard(shingle_set("a b c", 1), shingle_set("c b d", 1)), 0.5);
}

namespace {
RankedList text_list(const std::vector<std::pair<std::string, std::string>>& docs) {
    RankedList l;
    l.qid = "q1";
    float s = 10.0f;
    for (const auto& [id, text] : docs) {
        Candidate c;
        c.docid = id;
        c.text = text;
        c.score = s;
        s -= 1.0f;
        l.candidates.push_back(c);
    }
    return l;
}
}  // namespace

TEST(NearDuplicates, RemovesAgainstKeptOnly) {
    const std::vector<std::pair<std::string, std::string>> docs{
        {"p1", "the cat sat on the mat"},
        {"p2", "The cat sat on the mat today"},        // J(p1) = 4/5
        {"p3", "the cat sat on the mat today again"},  // J(p1) = 4/6, J(p2) = 5/6
        {"p4", "THE CAT sat on the mat"},              // J(p1) = 1
        {"p5", "a dog ran in the park"}};
    {
        // Default threshold 0.9: only p4.
        auto l = text_list(docs);
        NearDuplicates f({});
        auto r = f.apply_with_report(kQuery, l);
        EXPECT_EQ(ids(l), (std::vector<std::string>{"p1", "p2", "p3", "p5"}));
        EXPECT_EQ(r.removed, 1u);
        // Utility@10 before 10+9+8+7+6 = 40, after 10+9+8+6 = 33.
        EXPECT_DOUBLE_EQ(r.before.utility, 40.0);
        EXPECT_DOUBLE_EQ(r.after.utility, 33.0);
        EXPECT_FLOAT_EQ(l.candidates[3].score, 6.0f);  // removal keeps the scores
    }
    {
        // Threshold 0.75: p2 removed (0.8); p3 compared with kept p1 only (0.667) -> kept,
        // although J(p3, p2) = 0.833; p4 removed.
        auto l = text_list(docs);
        NearDuplicateOptions o;
        o.threshold = 0.75;
        NearDuplicates f(o);
        auto r = f.apply_with_report(kQuery, l);
        EXPECT_EQ(ids(l), (std::vector<std::string>{"p1", "p3", "p5"}));
        EXPECT_EQ(r.removed, 2u);
    }
    {
        // Threshold exactly 0.8 (at or above): p2 removed; demoted to the end in order.
        auto l = text_list(docs);
        NearDuplicateOptions o;
        o.threshold = 0.8;
        o.demote = true;
        NearDuplicates f(o);
        f.apply(kQuery, l);
        EXPECT_EQ(ids(l), (std::vector<std::string>{"p1", "p3", "p5", "p2", "p4"}));
        for (std::size_t i = 1; i < l.candidates.size(); ++i) {
            EXPECT_LT(l.candidates[i].score, l.candidates[i - 1].score);
        }
    }
    {
        // depth 3: p4 (position 4) is not examined.
        auto l = text_list(docs);
        NearDuplicateOptions o;
        o.depth = 3;
        NearDuplicates f(o);
        EXPECT_FALSE(f.apply_with_report(kQuery, l).changed);
    }
}

TEST(NearDuplicates, MissingTextAndBadOptions) {
    auto l = text_list({{"p1", "a b c"}, {"p2", ""}});
    NearDuplicates f({});
    const auto e = debias_test::thrown<InvalidArgument>([&] { f.apply(kQuery, l); });
    ASSERT_TRUE(e);
    EXPECT_NE(std::string(e->what()).find("p2"), std::string::npos);
    NearDuplicateOptions o;
    o.threshold = 0.0;
    EXPECT_THROW(NearDuplicates{o}, InvalidArgument);
    o.threshold = 0.9;
    o.shingle = 0;
    EXPECT_THROW(NearDuplicates{o}, InvalidArgument);
}

// ---------------------------------------------------------------- factory

/// A filter from JSON text through the registered factories (relative paths against `dir`).
std::shared_ptr<const PostFilter> make(std::string_view json_text,
                                       const debias_test::fs::path& dir = {}) {
    StageContext ctx(dir);
    return make_post_filter(plumb::parse_json(json_text, "config"), ctx);
}

TEST(PostFilterFactory, BuildsFromJson) {
    auto dir = debias_test::temp_dir();
    debias_test::write(dir / "bias.tsv",
                       "# plumb-gender-bias v1 variant=tc\nn1\t0\t0\t0\nf2\t1\t1\t0\nn3\t0\t0\t0\n"
                       "n4\t0\t0\t0\nf5\t2\t2\t0\n");
    auto f = make(R"({"type": "fair_topk", "p": 0.5, "alpha": 0.1, "k": 4, "protected": "female",
                      "adjust_alpha": false, "bias_file": "bias.tsv", "variant": "tc"})",
                  dir);
    EXPECT_EQ(f->name(), "fair_topk");
    const auto* fair = dynamic_cast<const FairTopK*>(f.get());
    ASSERT_NE(fair, nullptr);
    EXPECT_EQ(fair->mtable(), (std::vector<std::size_t>{0, 0, 0, 1}));
    RankedList l;
    l.qid = "q";
    for (const char* id : {"n1", "n3", "n4", "x9", "f2"})
        l.candidates.push_back({id, 1.0f, "", {}});
    auto as_stage =
        make(R"({"type": "fair_topk", "k": 4, "adjust_alpha": false, "bias_file": "bias.tsv"})",
             dir);
    // The filter reports itself: its measures are the report (k, bias before/after, ...).
    const StageMeasures m = as_stage->apply_measured(kQuery, l);
    EXPECT_EQ(ids(l), (std::vector<std::string>{"n1", "n3", "n4", "f2", "x9"}));
    ASSERT_FALSE(m.empty());
    EXPECT_EQ(m.front(), (std::pair<std::string, double>{"k", 4.0}));

    EXPECT_EQ(make(R"({"type": "balance", "budget": "inf", "bias_file": "bias.tsv"})", dir)->name(),
              "bias_balance");
    EXPECT_EQ(make(R"({"type": "dedup", "threshold": 0.8, "shingle": 2})")->name(),
              "near_duplicates");
    debias_test::fs::remove_all(dir);
}

TEST(PostFilterFactory, BadConfigurations) {
    EXPECT_THROW(make("{not json"), ParseError);
    EXPECT_THROW(make("[1]"), ConfigError);
    EXPECT_THROW(make(R"({"k": 3})"), ConfigError);
    EXPECT_THROW(make(R"({"type": "magic"})"), ConfigError);
    EXPECT_THROW(make(R"({"type": "dedup", "treshold": 0.5})"), ConfigError);
    EXPECT_THROW(make(R"({"type": "dedup", "threshold": "high"})"), ConfigError);
    EXPECT_THROW(make(R"({"type": "dedup", "threshold": 1.5})"), InvalidArgument);
    EXPECT_THROW(make(R"({"type": "balance", "budget": 1})"), InvalidArgument);
    EXPECT_THROW(make(R"({"type": "balance", "budget": "lots"})"), ConfigError);
    EXPECT_THROW(make(R"({"type": "fair_topk", "protected": "x", "words": "w"})"),
                 std::exception);
    auto dir = debias_test::temp_dir();
    debias_test::write(dir / "bad.tsv", "d1\t0\t0\t0\nd2\t1\tx\t0\n");
    const auto e = debias_test::thrown<ParseError>(
        [&] { make(R"({"type": "fair_topk", "bias_file": "bad.tsv"})", dir); });
    ASSERT_TRUE(e);
    EXPECT_NE(std::string(e->what()).find("bad.tsv:2"), std::string::npos) << e->what();
    EXPECT_THROW(make(R"({"type": "fair_topk", "bias_file": "missing.tsv"})", dir), IoError);
    debias_test::fs::remove_all(dir);
}

// ---------------------------------------------------------------- thread safety

TEST(PostFilters, ConcurrentApplyGivesIdenticalResults) {
    eval::BiasTable t;
    std::vector<Item> items;
    for (int i = 0; i < 300; ++i) {
        const int g = (i * 7) % 5;
        items.push_back({"d" + std::to_string(i), 300.0f - static_cast<float>(i) * 0.37f,
                         g == 0 ? kFemale : (g < 3 ? kMale : kNeutral)});
    }
    auto base = make_list(items, &t);
    for (std::size_t i = 0; i < base.candidates.size(); ++i) {
        base.candidates[i].text = "w" + std::to_string(i % 40) + " common words here";
    }
    FairTopKOptions fo;
    fo.k = 100;
    fo.p = 0.3;
    std::vector<std::unique_ptr<BiasPostFilter>> filters;
    filters.push_back(std::make_unique<FairTopK>(fo, table_bias(t)));
    filters.push_back(std::make_unique<BiasBalance>(BiasBalanceOptions{50, 5.0, 0}, table_bias(t)));
    NearDuplicateOptions no;
    no.threshold = 0.5;
    filters.push_back(std::make_unique<NearDuplicates>(no, table_bias(t)));
    for (const auto& f : filters) {
        auto ref = base;
        f->apply(kQuery, ref);
        std::vector<RankedList> out(4, base);
        std::vector<std::thread> threads;
        for (int k = 0; k < 4; ++k) {
            threads.emplace_back([&, k] {
                for (int rep = 0; rep < 5; ++rep) {
                    auto l = base;
                    f->apply(kQuery, l);
                    if (rep == 4) out[k] = std::move(l);
                }
            });
        }
        for (auto& th : threads) th.join();
        for (const auto& l : out) {
            EXPECT_EQ(ids(l), ids(ref)) << f->name();
            ASSERT_EQ(l.candidates.size(), ref.candidates.size());
            for (std::size_t i = 0; i < l.candidates.size(); ++i) {
                EXPECT_EQ(l.candidates[i].score, ref.candidates[i].score);
            }
        }
        EXPECT_TRUE(ids(ref) != ids(base)) << f->name() << " should change this list";
    }
}

// ---------------------------------------------------------------- larger k, document source

TEST(FairTopK, AdjustedTableOnLargerKHoldsEveryPrefix) {
    // k = 200, p = 0.3: the adjusted table fails with probability <= alpha and is never above
    // the unadjusted one; with protected candidates only at the bottom of a 400-long list,
    // every prefix still meets m(i).
    const double ac = fair_adjusted_alpha(200, 0.3, 0.1);
    EXPECT_GT(ac, 0.0);
    EXPECT_LT(ac, 0.1);
    const auto adjusted = fair_mtable(200, 0.3, ac);
    const auto plain = fair_mtable(200, 0.3, 0.1);
    EXPECT_LE(fair_fail_probability(adjusted, 0.3), 0.1);
    EXPECT_GT(fair_fail_probability(plain, 0.3), 0.1);
    for (std::size_t i = 0; i < 200; ++i) EXPECT_LE(adjusted[i], plain[i]);

    eval::BiasTable t;
    std::vector<Item> items;
    for (int i = 0; i < 400; ++i) {
        items.push_back(
            {"d" + std::to_string(i), 400.0f - static_cast<float>(i), i >= 250 ? kFemale : kMale});
    }
    auto list = make_list(items, &t);
    FairTopKOptions o;
    o.k = 200;
    o.p = 0.3;
    FairTopK f(o, table_bias(t));
    EXPECT_EQ(f.mtable(), adjusted);
    auto r = f.apply_with_report(kQuery, list);
    EXPECT_TRUE(r.feasible);
    std::size_t count = 0;
    for (std::size_t i = 0; i < 200; ++i) {
        count += f.is_protected(list.candidates[i]);
        ASSERT_GE(count, f.mtable()[i]) << "prefix " << i + 1;
    }
    EXPECT_EQ(r.after.protected_count, count);
    EXPECT_EQ(list.candidates.size(), 400u);
}

TEST(NearDuplicates, TextFromDocumentSource) {
    PassageBias b = she_he_bias();
    b.documents = std::make_shared<plumb::test::MapSource>(
        std::unordered_map<std::string, std::string>{{"x1", "she saw the same old thing"},
                                                     {"x2", "she saw the same old thing"},
                                                     {"x3", "he saw another thing"}});
    RankedList l;
    l.qid = "q";
    for (const char* id : {"x1", "x2", "x3"}) l.candidates.push_back({id, 1.0f, "", {}});
    NearDuplicateOptions o;
    o.k = 3;
    NearDuplicates f(o, b);
    auto r = f.apply_with_report(kQuery, l);
    EXPECT_EQ(ids(l), (std::vector<std::string>{"x1", "x3"}));
    // RaB@3 before: (-1 - 1 + 1)/3; after RaB over 2: (-1 + 1)/2 = 0.
    EXPECT_DOUBLE_EQ(r.before.bias, -1.0 / 3.0);
    EXPECT_DOUBLE_EQ(r.after.bias, 0.0);
    EXPECT_EQ(r.missing_bias, 0u);
    l.candidates.push_back({"unknown", 0.5f, "", {}});
    EXPECT_THROW(f.apply(kQuery, l), InvalidArgument);
}
