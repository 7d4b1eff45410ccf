#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <set>
#include <nlohmann/json.hpp>

#include "debias/balance.hpp"
#include "debias/judgements.hpp"
#include "debias/liwc.hpp"
#include "debias_test_util.hpp"
#include "eval/bias_metrics.hpp"
#include "index/index_builder.hpp"
#include "plugin/error.hpp"

namespace db = plumb::debias;
using namespace debias_test;

namespace {
const char* kDic =
    "%\n"            // 1
    "1\tposemo\n"    // 2
    "2\tnegemo\n"    // 3
    "3\tsocial\n"    // 4
    "%\n"            // 5
    "happy\t1\n"     // 6
    "happ*\t1\t3\n"  // 7
    "hate*\t2\n"     // 8
    "ha*\t3\n"       // 9
    "Friend*\t3\n"   // 10
    "good\t1\n";     // 11
}  // namespace

TEST(Liwc, ParsesCategoriesExactAndPrefixEntries) {
    auto dic = db::LiwcDictionary::parse(kDic, "t.dic");
    ASSERT_EQ(dic.categories().size(), 3u);
    EXPECT_EQ(dic.categories()[1].name, "negemo");
    EXPECT_EQ(dic.find_category("social"), 3);
    EXPECT_EQ(dic.find_category("2"), 2);
    EXPECT_FALSE(dic.find_category("nope"));
    EXPECT_EQ(dic.exact_entries(), 2u);
    EXPECT_EQ(dic.prefix_entries(), 4u);
    EXPECT_EQ(dic.lookup("happy"), (std::vector<int>{1}));         // exact beats happ*
    EXPECT_EQ(dic.lookup("happiness"), (std::vector<int>{1, 3}));  // happ* (longest prefix)
    EXPECT_EQ(dic.lookup("happ"), (std::vector<int>{1, 3}));       // prefix matches itself
    EXPECT_EQ(dic.lookup("hated"), (std::vector<int>{2}));         // hate* beats ha*
    EXPECT_EQ(dic.lookup("hat"), (std::vector<int>{3}));           // ha*
    EXPECT_EQ(dic.lookup("friends"), (std::vector<int>{3}));       // lower-cased entry
    EXPECT_TRUE(dic.lookup("sad").empty());
    EXPECT_TRUE(dic.lookup("h").empty());
}

TEST(Liwc, BadLinesAreParseErrorsOrSkippedAndCounted) {
    std::string text = std::string(kDic) + "bad line here\n" + "kind* of\t1\n" + "foo\t9\n" +
                       "like\t(02 134)125/464\n" + "fo*o\t1\n" + "lonely\n";
    const auto e = thrown<plumb::ParseError>([&] { db::LiwcDictionary::parse(text, "t.dic"); });
    ASSERT_TRUE(e);
    EXPECT_EQ(e->file(), "t.dic");
    EXPECT_EQ(e->line(), 12u);
    auto dic = db::LiwcDictionary::parse(text, "t.dic", /*skip_bad=*/true);
    EXPECT_EQ(dic.skipped_lines(), (std::vector<std::uint64_t>{12, 13, 14, 15, 16, 17}));
    EXPECT_EQ(dic.lookup("good"), (std::vector<int>{1}));
    // Structural errors are never skipped.
    EXPECT_THROW(db::LiwcDictionary::parse("happy\t1\n", "x", true), plumb::ParseError);
    EXPECT_THROW(db::LiwcDictionary::parse("%\n1\tposemo\n", "x", true), plumb::ParseError);
    EXPECT_THROW(db::LiwcDictionary::parse("", "x"), plumb::ParseError);
    EXPECT_EQ(parse_error_line([&] { db::LiwcDictionary::parse("%\n1\ta\n1\tb\n%\n", "dup.dic"); }),
              3u);
}

TEST(Liwc, CrOnlyLineEndsAndPhrases) {
    // A real public LIWC-format dictionary ends its lines with CR alone (classic Mac OS); mixed
    // with CRLF and LF here. Phrases: `kind of` (posemo), `kind of sad` (negemo), `of course`.
    const std::string text =
        "%\r1\tposemo\r2\tnegemo\r\n3\tsocial\n%\r"
        "happy\t1\rkind of\t1\rKind  Of Sad\t2 3\rof course\t3\rkind\t3\r";
    auto dic = db::LiwcDictionary::parse(text, "mac.dic");
    ASSERT_EQ(dic.categories().size(), 3u);
    EXPECT_EQ(dic.categories()[2].name, "social");
    EXPECT_EQ(dic.exact_entries(), 2u);  // happy, kind
    EXPECT_EQ(dic.phrase_entries(), 3u);
    EXPECT_EQ(dic.max_phrase_words(), 3u);
    ASSERT_NE(dic.lookup_phrase("kind of sad"), nullptr);
    EXPECT_EQ(*dic.lookup_phrase("kind of sad"), (std::vector<int>{2, 3}));
    EXPECT_EQ(dic.lookup_phrase("kind"), nullptr);
    auto cats = db::resolve_categories(dic, {"posemo", "negemo", "social"});
    // Tokens: i, am, kind, of, sad, and, kind, of, happy, of, course, kind (12).
    // "kind of sad" (longest phrase) -> negemo + social; "kind of" -> posemo; "happy" -> posemo;
    // "of course" -> social; the last "kind" alone -> social. posemo 2, negemo 1, social 3.
    auto phi = db::liwc_phi("I am kind of sad, and kind of happy. Of course, kind!", dic, cats);
    EXPECT_DOUBLE_EQ(phi[0], 2.0 / 12);
    EXPECT_DOUBLE_EQ(phi[1], 1.0 / 12);
    EXPECT_DOUBLE_EQ(phi[2], 3.0 / 12);
    // Line numbers count CR-only lines: the 8th line holds an undeclared id.
    EXPECT_EQ(parse_error_line([&] {
                  db::LiwcDictionary::parse("%\r1\ta\r%\rx\t1\ry\t1\rz\t1\rw\t1\rv\t7\r",
                                            "mac.dic");
              }),
              8u);
}

TEST(Liwc, PhiIsPerCategoryTokenProportion) {
    auto dic = db::LiwcDictionary::parse(kDic, "t.dic");
    auto cats = db::resolve_categories(dic, {"posemo", "negemo", "social"});
    // Tokens: happy, friends, hate, it (punctuation stripped) -> 4 counted tokens.
    auto phi = db::liwc_phi("Happy friends, hate it!", dic, cats);
    ASSERT_EQ(phi.size(), 3u);
    EXPECT_DOUBLE_EQ(phi[0], 0.25);
    EXPECT_DOUBLE_EQ(phi[1], 0.25);
    EXPECT_DOUBLE_EQ(phi[2], 0.25);
    // + happiness (posemo and social): 5 tokens.
    phi = db::liwc_phi("Happy friends, hate it! happiness", dic, cats);
    EXPECT_DOUBLE_EQ(phi[0], 0.4);
    EXPECT_DOUBLE_EQ(phi[1], 0.2);
    EXPECT_DOUBLE_EQ(phi[2], 0.4);
    EXPECT_EQ(db::liwc_phi(" ... ", dic, cats), (std::vector<double>{0, 0, 0}));
    EXPECT_EQ(db::resolve_categories(dic, {}).size(), 3u);
    const auto e = thrown<plumb::InvalidArgument>([&] { db::resolve_categories(dic, {"anger"}); });
    ASSERT_TRUE(e);
    EXPECT_NE(std::string(e->what()).find("posemo"), std::string::npos);
}

TEST(Liwc, CosineSimilarity) {
    EXPECT_DOUBLE_EQ(db::cosine_similarity({1, 0}, {0, 1}), 0.0);
    EXPECT_NEAR(db::cosine_similarity({1, 1}, {1, 0}), 1 / std::sqrt(2.0), 1e-12);
    EXPECT_DOUBLE_EQ(db::cosine_similarity({0, 0}, {1, 0}), 0.0);
    EXPECT_THROW(db::cosine_similarity({1}, {1, 2}), plumb::InvalidArgument);
}

namespace {
std::vector<db::GeneratedPair> five_pairs() {
    return {{"f1", "q", "f1", "p"},
            {"f2", "q", "f2", "p"},
            {"m1", "q", "m1", "p"},
            {"m2", "q", "m2", "p"},
            {"n1", "q", "n1", "p"}};
}
}  // namespace

TEST(Balance, MatchesEachQueryToTheMostSimilarOtherGender) {
    auto pairs = five_pairs();
    std::vector<char> g = {'f', 'f', 'm', 'm', 'n'};
    std::vector<std::vector<double>> phi = {{1, 0}, {1, 1}, {1, 0.1}, {0, 1}, {1, 0}};
    auto res = db::match_cross_gender(pairs, g, phi);
    EXPECT_EQ(res.female_queries, 2u);
    EXPECT_EQ(res.male_queries, 2u);
    EXPECT_EQ(res.neutral_or_unlabelled, 1u);
    // f1->m1 (0.995), f2->m1 (1.1/(sqrt2*sqrt1.01) = 0.774), m1->f1, m2->f2 (0.707).
    ASSERT_EQ(res.matches.size(), 3u);
    EXPECT_EQ(res.matches[0].female, 0u);
    EXPECT_EQ(res.matches[0].male, 2u);
    EXPECT_NEAR(res.matches[0].cosine, 1 / std::sqrt(1.01), 1e-12);
    EXPECT_TRUE(res.matches[0].female_to_male && res.matches[0].male_to_female);
    EXPECT_EQ(res.matches[1].female, 1u);
    EXPECT_EQ(res.matches[1].male, 2u);
    EXPECT_NEAR(res.matches[1].cosine, 1.1 / (std::sqrt(2.0) * std::sqrt(1.01)), 1e-12);
    EXPECT_TRUE(res.matches[1].female_to_male && !res.matches[1].male_to_female);
    EXPECT_EQ(res.matches[2].female, 1u);
    EXPECT_EQ(res.matches[2].male, 3u);
    EXPECT_NEAR(res.matches[2].cosine, 1 / std::sqrt(2.0), 1e-12);

    EXPECT_EQ(db::select_augmentation(res, 4), (std::vector<std::size_t>{0, 2, 1, 3}));
    EXPECT_EQ(db::select_augmentation(res, 3), (std::vector<std::size_t>{0, 2, 1}));
    EXPECT_TRUE(db::select_augmentation(res, 1).empty());     // a pair would exceed the target
    EXPECT_EQ(db::select_augmentation(res, 100).size(), 4u);  // pairs exhausted

    phi[1] = {0, 0};  // f2 has no dictionary word: cannot be matched
    auto res2 = db::match_cross_gender(pairs, g, phi);
    EXPECT_EQ(res2.unmatchable, 1u);
    // f1 <-> m1, and m2's only candidate is f1 (cosine 0).
    ASSERT_EQ(res2.matches.size(), 2u);
    EXPECT_DOUBLE_EQ(res2.matches[1].cosine, 0.0);
}

TEST(Balance, OneToOneMatchingAddsEqualFemaleAndMaleCounts) {
    // f1 (1,0) is the best female of both m1 (1,0.1) and m2 (1,0.2); f2 (0,1) is nobody's best.
    // Cosines: f1-m1 1/sqrt(1.01) = 0.9950, f1-m2 1/sqrt(1.04) = 0.9806,
    //          f2-m1 0.1/sqrt(1.01) = 0.0995, f2-m2 0.2/sqrt(1.04) = 0.1961.
    auto pairs = five_pairs();
    std::vector<char> g = {'f', 'f', 'm', 'm', 'n'};
    std::vector<std::vector<double>> phi = {{1, 0}, {0, 1}, {1, 0.1}, {1, 0.2}, {1, 0}};
    // Best match in both directions: (f1,m1), (f1,m2) [m2's best], (f2,m2) [f2's best]; the
    // three queries of the first two pairs are 1 female and 2 males.
    auto both = db::match_cross_gender(pairs, g, phi);
    ASSERT_EQ(both.matches.size(), 3u);
    auto added = db::select_augmentation(both, 3);
    EXPECT_EQ(added, (std::vector<std::size_t>{0, 2, 3}));
    // One-to-one greedy: (f1,m1) first (the best edge), then f2 and m2 are what remains.
    auto one = db::match_one_to_one(pairs, g, phi);
    EXPECT_EQ(one.female_queries, 2u);
    EXPECT_EQ(one.male_queries, 2u);
    EXPECT_EQ(one.neutral_or_unlabelled, 1u);
    ASSERT_EQ(one.matches.size(), 2u);
    EXPECT_EQ(one.matches[0].female, 0u);
    EXPECT_EQ(one.matches[0].male, 2u);
    EXPECT_NEAR(one.matches[0].cosine, 1 / std::sqrt(1.01), 1e-12);
    EXPECT_EQ(one.matches[1].female, 1u);
    EXPECT_EQ(one.matches[1].male, 3u);
    EXPECT_NEAR(one.matches[1].cosine, 0.2 / std::sqrt(1.04), 1e-12);
    EXPECT_EQ(db::select_augmentation(one, 3), (std::vector<std::size_t>{0, 2}));
    EXPECT_EQ(db::select_augmentation(one, 4), (std::vector<std::size_t>{0, 2, 1, 3}));
    // Equal cosines go to the smaller female qid: f1 and f2 identical, one male.
    std::vector<std::vector<double>> tie = {{1, 0}, {1, 0}, {1, 0}, {0, 0}, {1, 0}};
    auto t = db::match_one_to_one(pairs, g, tie);
    EXPECT_EQ(t.unmatchable, 1u);
    ASSERT_EQ(t.matches.size(), 1u);
    EXPECT_EQ(t.matches[0].female, 0u);
    EXPECT_EQ(t.matches[0].male, 2u);
    // No male at all: nothing matched, no endless loop.
    std::vector<char> only_f = {'f', 'f', 'n', 'n', 'n'};
    EXPECT_TRUE(db::match_one_to_one(pairs, only_f, phi).matches.empty());
    EXPECT_THROW(db::match_one_to_one(pairs, {'f'}, phi), plumb::InvalidArgument);
}

TEST(Balance, OneToOneMatchingEqualsTheGreedyOverAllEdges) {
    // Reference: every female-male edge with cosine computed here, sorted by (cosine desc,
    // female qid, male qid), taken when both queries are free. Many ties (0/1 vectors: equal
    // cosines below 1 are equal to the last bit in the matcher too, and cosine 1 joins only
    // identical vectors, so its rounding cannot reorder edges that share a query; cosine 0
    // between disjoint ones), more females than the matcher's candidate list (64) so
    // that candidate lists run out, zero vectors (unmatchable) and qids whose order differs
    // from the input order.
    std::mt19937 gen(7);
    for (int round = 0; round < 6; ++round) {
        const std::size_t nf = 40 + 60 * static_cast<std::size_t>(round);
        const std::size_t nm = round % 2 ? nf / 2 : nf + 30;
        std::vector<db::GeneratedPair> pairs;
        std::vector<char> g;
        std::vector<std::vector<double>> phi;
        std::uniform_int_distribution<int> v(0, 1), pick(0, 9);
        for (std::size_t i = 0; i < nf + nm; ++i) {
            std::string qid = "q" + std::to_string((i * 7919) % 100003);
            pairs.push_back({qid, "q", qid, "p"});
            g.push_back(i < nf ? 'f' : 'm');
            std::vector<double> x = {double(v(gen)), double(v(gen)), double(v(gen))};
            if (pick(gen) == 0) x = {0, 0, 0};
            phi.push_back(x);
        }
        auto cosine = [&](std::size_t a, std::size_t b) {
            double na = 0, nb = 0, d = 0;
            for (int k = 0; k < 3; ++k) {
                na += phi[a][k] * phi[a][k];
                nb += phi[b][k] * phi[b][k];
                d += phi[a][k] * phi[b][k];
            }
            return d / std::sqrt(na * nb);
        };
        struct E {
            double c;
            std::size_t f, m;
        };
        std::vector<E> edges;
        for (std::size_t f = 0; f < nf; ++f)
            for (std::size_t m = nf; m < nf + nm; ++m)
                if (phi[f] != std::vector<double>{0, 0, 0} && phi[m] != std::vector<double>{0, 0, 0})
                    edges.push_back({cosine(f, m), f, m});
        std::sort(edges.begin(), edges.end(), [&](const E& a, const E& b) {
            if (std::abs(a.c - b.c) > 1e-12) return a.c > b.c;
            if (pairs[a.f].qid != pairs[b.f].qid) return pairs[a.f].qid < pairs[b.f].qid;
            return pairs[a.m].qid < pairs[b.m].qid;
        });
        std::vector<char> used(nf + nm, 0);
        std::set<std::pair<std::size_t, std::size_t>> expected;
        for (const auto& e : edges) {
            if (used[e.f] || used[e.m]) continue;
            used[e.f] = used[e.m] = 1;
            expected.insert({e.f, e.m});
        }
        std::uint64_t last_done = 0, last_total = 0;
        auto res = db::match_one_to_one(pairs, g, phi, [&](std::uint64_t d, std::uint64_t t) {
            last_done = d;
            last_total = t;
        });
        std::set<std::pair<std::size_t, std::size_t>> got;
        for (const auto& m : res.matches) {
            got.insert({m.female, m.male});
            EXPECT_NEAR(m.cosine, cosine(m.female, m.male), 1e-12);
            EXPECT_TRUE(m.female_to_male && m.male_to_female);
        }
        EXPECT_EQ(got.size(), res.matches.size()) << "round " << round;
        EXPECT_EQ(got, expected) << "round " << round;
        EXPECT_EQ(last_done, last_total);
    }
}

TEST(Balance, EndToEndWritesOneTrainingFilePerRatio) {
    auto dir = temp_dir();
    write(dir / "t.dic", kDic);
    write(dir / "pairs.tsv",
          "f1\tq f1\thappy happy friends\n"
          "f2\tq f2\thate hate hate\n"
          "m1\tq m1\thappy friends friends\n"
          "m2\tq m2\thated it\n"
          "n1\tq n1\tneutral text\n");
    write(dir / "gender.tsv", "f1\tf\nf2\tf\nm1\tm\nm2\tm\nn1\tn\n");
    std::string train;
    for (int i = 0; i < 8; ++i) train += "query " + std::to_string(i) + "\tpassage\n";
    write(dir / "train.tsv", train);
    db::BalanceOptions o;
    o.pairs = dir / "pairs.tsv";
    o.query_gender = dir / "gender.tsv";
    o.dictionary = dir / "t.dic";
    o.categories = {"posemo", "negemo", "social"};
    o.train = dir / "train.tsv";
    o.ratios = {0.25, 0.5};
    o.output_dir = dir / "out";
    auto rep = db::run_balance(o);
    // phi: f1 (2/3,0,1/3), f2 (0,1,0), m1 (1/3,0,2/3), m2 (0,1/2,0).
    // f1 <-> m1 (cosine (4/9)/(5/9) = 0.8) and f2 <-> m2 (cosine 1) match each other.
    ASSERT_EQ(rep.match.matches.size(), 2u);
    EXPECT_EQ(rep.pairs, 5u);
    EXPECT_EQ(rep.match.neutral_or_unlabelled, 1u);
    ASSERT_EQ(rep.outputs.size(), 2u);
    EXPECT_EQ(rep.outputs[0].target, 2u);  // round(0.25 * 8)
    EXPECT_EQ(rep.outputs[0].added, 2u);
    EXPECT_EQ(rep.outputs[1].target, 4u);
    EXPECT_EQ(rep.outputs[1].added, 4u);
    EXPECT_EQ(rep.outputs[1].added_female, 2u);
    auto l25 = lines(dir / "out" / "train_r0.25.tsv");
    ASSERT_EQ(l25.size(), 10u);
    // Highest cosine first: f2 <-> m2.
    EXPECT_EQ(l25[8], "q f2\thate hate hate");
    EXPECT_EQ(l25[9], "q m2\thated it");
    EXPECT_EQ(lines(dir / "out" / "train_r0.5.tsv").size(), 12u);
    auto cv = plumb::eval::read_category_vectors(dir / "out" / "phi.tsv");
    EXPECT_EQ(cv.categories, (std::vector<std::string>{"posemo", "negemo", "social"}));
    ASSERT_EQ(cv.vectors.count("m2"), 1u);
    EXPECT_DOUBLE_EQ(cv.vectors["m2"][1], 0.5);
    auto j = nlohmann::json::parse(slurp(dir / "out" / "report.json"));
    EXPECT_EQ(j["matched_pairs"], 2);
    EXPECT_FALSE(j["one_to_one"].get<bool>());
    EXPECT_TRUE(is_png(dir / "out" / "cosine.png"));
    EXPECT_TRUE(is_svg(dir / "out" / "cosine.svg"));
    EXPECT_EQ(lines(dir / "out" / "matches.tsv").size(), 3u);
    // One-to-one through the whole procedure: here the same two pairs, reported as such.
    o.one_to_one = true;
    o.output_dir = dir / "out1";
    auto rep1 = db::run_balance(o);
    ASSERT_EQ(rep1.match.matches.size(), 2u);
    EXPECT_EQ(rep1.outputs[1].added_female, 2u);
    EXPECT_EQ(rep1.outputs[1].added_male, 2u);
    EXPECT_TRUE(nlohmann::json::parse(slurp(dir / "out1" / "report.json"))["one_to_one"].get<bool>());
    EXPECT_EQ(lines(dir / "out1" / "matches.tsv")[1], "f2\tm2\t1.000000\tone-to-one");
    o.one_to_one = false;

    // Triples get a negative drawn from another pair.
    std::string triples;
    for (int i = 0; i < 4; ++i) triples += "query\tpos\tneg\n";
    write(dir / "triples.tsv", triples);
    o.train = dir / "triples.tsv";
    o.ratios = {1.0};
    o.output_dir = dir / "out3";
    db::run_balance(o);
    auto lt = lines(dir / "out3" / "train_r1.tsv");
    ASSERT_EQ(lt.size(), 8u);
    for (std::size_t i = 4; i < 8; ++i) {
        auto first = lt[i].find('\t'), second = lt[i].find('\t', first + 1);
        ASSERT_NE(second, std::string::npos);
        EXPECT_NE(lt[i].substr(first + 1, second - first - 1), lt[i].substr(second + 1));
    }
}

// With a negatives file, each added triple's negative is one of its own query's negatives (the
// way the original triples' negatives were made), not another pair's passage.
TEST(Balance, NegativesFileGivesEachAddedTripleItsOwnQuerysNegative) {
    auto dir = temp_dir();
    write(dir / "t.dic", kDic);
    write(dir / "pairs.tsv",
          "f1\tq f1\tf1doc\thappy happy friends\n"
          "f2\tq f2\tf2doc\thate hate hate\n"
          "m1\tq m1\tm1doc\thappy friends friends\n"
          "m2\tq m2\tm2doc\thated it\n");
    write(dir / "gender.tsv", "f1\tf\nf2\tf\nm1\tm\nm2\tm\n");
    write(dir / "triples.tsv", "a\tb\tc\nd\te\tf\nx\ty\tz\nu\tv\tw\n");
    // One negative each; m2 has two (either may be drawn); a neutral qid is ignored.
    write(dir / "neg.tsv",
          "f1\tf1n\tneg of f1\nf2\tf2n\tneg of f2\nm1\t17\tneg of m1\n"
          "m2\tm2n\tneg of m2 a\nm2\tm2n2\tneg of m2 b\nn9\tn9n\tneutral neg\n");
    db::BalanceOptions o;
    o.pairs = dir / "pairs.tsv";
    o.query_gender = dir / "gender.tsv";
    o.dictionary = dir / "t.dic";
    o.train = dir / "triples.tsv";
    o.ratios = {1.0};
    o.one_to_one = true;
    o.negatives = dir / "neg.tsv";
    o.output_dir = dir / "out";
    auto rep = db::run_balance(o);
    ASSERT_EQ(rep.outputs[0].added, 4u);
    auto lt = lines(dir / "out" / "train_r1.tsv");
    ASSERT_EQ(lt.size(), 8u);
    EXPECT_EQ(lt[0], "a\tb\tc");
    // f2 <-> m2 (cosine 1) first, then f1 <-> m1; each with its own query's negative.
    EXPECT_EQ(lt[4], "q f2\thate hate hate\tneg of f2");
    EXPECT_TRUE(lt[5] == "q m2\thated it\tneg of m2 a" || lt[5] == "q m2\thated it\tneg of m2 b")
        << lt[5];
    EXPECT_EQ(lt[6], "q f1\thappy happy friends\tneg of f1");
    EXPECT_EQ(lt[7], "q m1\thappy friends friends\tneg of m1");
    EXPECT_EQ(nlohmann::json::parse(slurp(dir / "out" / "report.json"))["negatives"], "neg.tsv");

    // A selected pair without a negative: an error naming the file and the qid; nothing written.
    write(dir / "neg2.tsv", "f1\tf1n\tneg of f1\nf2\tf2n\tneg of f2\nm1\t17\tneg of m1\n");
    o.negatives = dir / "neg2.tsv";
    o.output_dir = dir / "out2";
    try {
        db::run_balance(o);
        ADD_FAILURE() << "no error for a pair without a negative";
    } catch (const plumb::InvalidArgument& e) {
        EXPECT_NE(std::string(e.what()).find("neg2.tsv"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("'m2'"), std::string::npos) << e.what();
    }
    EXPECT_FALSE(std::filesystem::exists(dir / "out2" / "train_r1.tsv"));
    // Two ratios where only the larger selects a pair without a negative (m1, in the second
    // match f1 <-> m1): neither ratio's file is written (no set of outputs without the rest).
    write(dir / "neg5.tsv", "f1\tf1n\tneg of f1\nf2\tf2n\tneg of f2\nm2\tm2n\tneg of m2\n");
    o.negatives = dir / "neg5.tsv";
    o.ratios = {0.5, 1.0};
    o.output_dir = dir / "out5";
    EXPECT_THROW(db::run_balance(o), plumb::InvalidArgument);
    EXPECT_FALSE(std::filesystem::exists(dir / "out5" / "train_r0.5.tsv"));
    EXPECT_FALSE(std::filesystem::exists(dir / "out5" / "train_r1.tsv"));
    o.ratios = {1.0};
    // Malformed negatives name their line; pairs (2 fields) cannot take negatives.
    write(dir / "neg3.tsv", "f1\tf1n\tok\nf2\n");
    EXPECT_EQ(parse_error_line([&] { db::read_negatives(dir / "neg3.tsv"); }), 2u);
    write(dir / "neg4.tsv", "f1\tf1n\t \n");
    EXPECT_EQ(parse_error_line([&] { db::read_negatives(dir / "neg4.tsv"); }), 1u);
    write(dir / "pairs2.tsv", "query\tpassage\n");
    o.negatives = dir / "neg.tsv";
    o.train = dir / "pairs2.tsv";
    EXPECT_THROW(db::run_balance(o), plumb::InvalidArgument);
}

TEST(Balance, BadInputsFailCleanly) {
    auto dir = temp_dir();
    auto p = write(dir / "pairs.tsv", "f1\tq\tp\nf1\tq\tp\n");
    EXPECT_EQ(parse_error_line([&] { db::read_generated_pairs(p); }), 2u);
    write(dir / "g.tsv", "a\tf\nb\tx\n");
    EXPECT_EQ(parse_error_line([&] { db::read_gendered_queries(dir / "g.tsv"); }), 2u);
    write(dir / "g2.tsv", "a\tf\nb\tn\nb\tn\na\tm\n");  // neutral repeats are not kept
    EXPECT_EQ(parse_error_line([&] { db::read_gendered_queries(dir / "g2.tsv"); }), 4u);
    write(dir / "p2.tsv", "only\ttwo\n");
    EXPECT_THROW(db::read_generated_pairs(dir / "p2.tsv"), plumb::ParseError);
    db::BalanceOptions o;
    o.output_dir = dir / "o";
    o.train = dir / "p2.tsv";
    EXPECT_THROW(db::run_balance(o), plumb::InvalidArgument);  // no ratios
    o.ratios = {-1};
    EXPECT_THROW(db::run_balance(o), plumb::InvalidArgument);
}

TEST(Liwc, PhiFileFromCorpusIndexAndRunTopK) {
    auto dir = temp_dir();
    auto dic = db::LiwcDictionary::parse(kDic, "t.dic");
    auto cats = db::resolve_categories(dic, {"posemo", "social"});
    auto corpus = write(dir / "c.tsv", "a\tHappy friends, hate it!\nb\tnothing\nc\tgood good\n");
    db::PhiFileOptions o;
    o.corpus = corpus;
    auto s = db::write_phi_file(o, dic, cats, dir / "phi.tsv");
    EXPECT_EQ(s.written, 3u);
    auto cv = plumb::eval::read_category_vectors(dir / "phi.tsv");
    EXPECT_EQ(cv.categories, (std::vector<std::string>{"posemo", "social"}));
    EXPECT_EQ(cv.vectors["a"], (std::vector<double>{0.25, 0.25}));
    EXPECT_EQ(cv.vectors["b"], (std::vector<double>{0.0, 0.0}));
    EXPECT_EQ(cv.vectors["c"], (std::vector<double>{1.0, 0.0}));

    // Top-1 of each query of a run (score descending): q1 -> c, q2 -> a; "zz" is unknown.
    auto run =
        write(dir / "run.txt", "q1 Q0 a 1 1.5 r\nq1 Q0 c 2 2.5 r\nq2 Q0 a 1 9 r\nq3 Q0 zz 1 1 r\n");
    auto ids = db::run_top_docids(run, 1);
    EXPECT_EQ(ids, (std::unordered_set<std::string>{"a", "c", "zz"}));
    o.only_ids = ids;
    s = db::write_phi_file(o, dic, cats, dir / "phi_top.tsv");
    EXPECT_EQ(s.written, 2u);
    EXPECT_EQ(s.missing, 1u);

    plumb::index::build_index(corpus, dir / "idx");
    o.corpus.clear();
    o.index_dir = dir / "idx";
    s = db::write_phi_file(o, dic, cats, dir / "phi_idx.tsv");
    EXPECT_EQ(s.written, 2u);
    EXPECT_EQ(s.missing, 1u);
    EXPECT_EQ(lines(dir / "phi_idx.tsv"), lines(dir / "phi_top.tsv"));  // sorted ids a, c
    o.index_dir.clear();
    EXPECT_THROW(db::write_phi_file(o, dic, cats, dir / "x.tsv"), plumb::InvalidArgument);
}
