// Sharded indexes (index/shard_*.hpp, sharded_searcher.hpp): the combine / merge API on
// hand-made statistics, and runs over 2 and 3 shards byte-identical to one index's (BM25 and
// BM25 + RM3, k = 10 and 1000, terms absent from some shards, score ties across shards).
#include <gtest/gtest.h>

#include <cstring>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "bm25_test_util.hpp"
#include "index/bm25_retriever.hpp"
#include "index/bm25_searcher.hpp"
#include "index/index_builder.hpp"
#include "index/shard_builder.hpp"
#include "index/shard_manifest.hpp"
#include "index/shard_merge.hpp"
#include "index/shard_stats.hpp"
#include "index/sharded_searcher.hpp"
#include "plugin/error.hpp"
#include "plugin/trec_run.hpp"

namespace pi = plumb::index;
using plumb_test::slurp;
using plumb_test::TempDir;
using plumb_test::write_file;
using plumb_test::fs::path;

namespace {

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// --- combine and merge on hand-made statistics -------------------------------------------------

TEST(ShardStats, CombineCollectionStats) {
    std::vector<pi::CollectionStats> c{{10, 100}, {0, 0}, {5, 20}};
    auto g = pi::combine(std::span<const pi::CollectionStats>(c));
    EXPECT_EQ(g.documents, 15u);
    EXPECT_EQ(g.total_length, 120u);
    EXPECT_EQ(g.avgdl(), 120.0 / 15.0);
    EXPECT_EQ(pi::CollectionStats{}.avgdl(), 0.0);
}

TEST(ShardStats, CombineTermStatsSumMaxMin) {
    pi::ShardStats a, b, c;
    a.collection = {10, 100};
    b.collection = {20, 300};
    c.collection = {1, 2};
    a.terms["x"] = {3, 4, 7, 1.5f};
    b.terms["x"] = {5, 2, 3, 1.75f};
    a.terms["y"] = {1, 1, 9, 0.5f};
    b.terms["y"] = {};               // asked, absent in b
    c.terms["z"] = {2, 9, 1, 1.0f};  // c was asked for z only: x, y count as absent there
    std::vector<pi::ShardStats> all{a, b, c};
    auto g = pi::combine(std::span<const pi::ShardStats>(all));
    EXPECT_EQ(g.collection.documents, 31u);
    EXPECT_EQ(g.collection.total_length, 402u);
    ASSERT_NE(g.find("x"), nullptr);
    EXPECT_EQ(g.find("x")->df, 8u);
    EXPECT_EQ(g.find("x")->max_tf, 4u);
    EXPECT_EQ(g.find("x")->min_dl, 3u);
    EXPECT_EQ(g.find("x")->max_frac_default, 1.75f);
    EXPECT_EQ(g.find("y")->df, 1u);
    EXPECT_EQ(g.find("y")->min_dl, 9u);
    EXPECT_EQ(g.find("z")->df, 2u);
    EXPECT_EQ(g.find("w"), nullptr);
    // Order-independent.
    std::vector<pi::ShardStats> rev{c, b, a};
    auto g2 = pi::combine(std::span<const pi::ShardStats>(rev));
    for (const auto& [t, s] : g.terms) {
        const auto* s2 = g2.find(t);
        ASSERT_NE(s2, nullptr);
        EXPECT_EQ(s.df, s2->df);
        EXPECT_EQ(s.max_tf, s2->max_tf);
        EXPECT_EQ(s.min_dl, s2->min_dl);
        EXPECT_EQ(s.max_frac_default, s2->max_frac_default);
    }
}

TEST(ShardMerge, ExactTopKWithTiesByIdBytes) {
    // Ties by id ascending byte-wise (unsigned: "\xc3\xa9" sorts after "z").
    std::vector<std::vector<pi::ShardHit>> per{
        {{"b", 3.0f, 0, 1}, {"\xc3\xa9", 2.0f, 0, 0}, {"a", 1.0f, 0, 2}},
        {{"z", 2.0f, 1, 5}, {"c", 3.0f, 1, 4}},
        {},
        {{"d", 2.5f, 3, 0}}};
    auto all = pi::merge_topk(per, 100);
    std::vector<std::string> ids;
    for (const auto& h : all) ids.push_back(h.docid);
    EXPECT_EQ(ids, (std::vector<std::string>{"b", "c", "d", "z", "\xc3\xa9", "a"}));
    EXPECT_EQ(all[1].shard, 1u);
    EXPECT_EQ(all[1].doc, 4u);
    auto top3 = pi::merge_topk(per, 3);
    ASSERT_EQ(top3.size(), 3u);
    EXPECT_EQ(top3[2].docid, "d");
    EXPECT_TRUE(pi::merge_topk(per, 0).empty());
    EXPECT_TRUE(pi::merge_topk(std::span<const std::vector<pi::ShardHit>>(), 5).empty());
}

TEST(ShardMerge, DuplicateIdAcrossShardsIsAnError) {
    std::vector<std::vector<pi::ShardHit>> per{
        {{"a", 3.0f, 0, 1}}, {{"x", 2.0f, 1, 0}}, {{"a", 1.0f, 2, 0}}};
    EXPECT_THROW(pi::merge_topk(per, 10), plumb::InvalidArgument);
}

TEST(ShardMerge, SortedListsMergeByHand) {
    // The lists of ExactTopKWithTiesByIdBytes, each in ranking order: the same order by hand.
    std::vector<std::vector<pi::ShardHit>> per{
        {{"b", 3.0f, 0, 1}, {"\xc3\xa9", 2.0f, 0, 0}, {"a", 1.0f, 0, 2}},
        {{"c", 3.0f, 1, 4}, {"z", 2.0f, 1, 5}},
        {},
        {{"d", 2.5f, 3, 0}}};
    auto copy = per;
    auto top = pi::merge_sorted_topk(copy, 4);
    std::vector<std::string> ids;
    for (const auto& h : top) ids.push_back(h.docid);
    EXPECT_EQ(ids, (std::vector<std::string>{"b", "c", "d", "z"}));
    EXPECT_EQ(top[1].shard, 1u);
    EXPECT_EQ(top[1].doc, 4u);
    copy = per;
    EXPECT_EQ(pi::merge_sorted_topk(copy, 100).size(), 6u);
    copy = per;
    EXPECT_TRUE(pi::merge_sorted_topk(copy, 0).empty());
    EXPECT_TRUE(pi::merge_sorted_topk(std::span<std::vector<pi::ShardHit>>(), 5).empty());
}

TEST(ShardMerge, SortedListsMergeEqualsTheSortingMerge) {
    // Random lists with many score ties (scores from 8 values), ids unique over all lists; each
    // list sorted by the naive reference (merge_topk of the list alone), then the k-way merge
    // compared with merge_topk over all lists, for 1..7 lists and k from 0 to past the total.
    std::mt19937 rng(7);
    for (int round = 0; round < 200; ++round) {
        const std::size_t lists = 1 + rng() % 7;
        std::vector<std::vector<pi::ShardHit>> per(lists);
        std::uint32_t next_id = 0;
        for (std::size_t l = 0; l < lists; ++l) {
            const std::size_t n = rng() % 30;
            for (std::size_t i = 0; i < n; ++i) {
                // ids of random length so that byte order differs from number order
                std::string id = std::to_string(next_id++ * 7919 % 1000);
                id += std::string(rng() % 3, static_cast<char>('a' + rng() % 3));
                id += "#" + std::to_string(next_id);
                per[l].push_back({id, static_cast<float>(rng() % 8) * 0.5f,
                                  static_cast<std::uint32_t>(l), static_cast<std::uint32_t>(i)});
            }
            std::vector<std::vector<pi::ShardHit>> one{per[l]};
            per[l] = pi::merge_topk(one, per[l].size());
        }
        std::size_t total = 0;
        for (const auto& l : per) total += l.size();
        for (std::size_t k :
             {std::size_t{0}, std::size_t{1}, std::size_t{5}, total / 2, total, total + 3}) {
            auto copy = per;
            const auto got = pi::merge_sorted_topk(copy, k);
            const auto want = pi::merge_topk(per, k);
            ASSERT_EQ(got.size(), want.size()) << "round " << round << " k " << k;
            for (std::size_t i = 0; i < got.size(); ++i) {
                EXPECT_EQ(got[i].docid, want[i].docid) << "round " << round << " k " << k;
                EXPECT_TRUE(same_bits(got[i].score, want[i].score));
                EXPECT_EQ(got[i].shard, want[i].shard);
                EXPECT_EQ(got[i].doc, want[i].doc);
            }
        }
    }
}

TEST(ShardMerge, SortedListsOutOfOrderOrDuplicateAreErrors) {
    // A list not in ranking order: a lower score first, or a tie with ids descending.
    std::vector<std::vector<pi::ShardHit>> bad{{{"a", 1.0f, 0, 0}, {"b", 2.0f, 0, 1}}};
    EXPECT_THROW(pi::merge_sorted_topk(bad, 10), plumb::InvalidArgument);
    std::vector<std::vector<pi::ShardHit>> tie{{{"b", 1.0f, 0, 0}, {"a", 1.0f, 0, 1}}};
    EXPECT_THROW(pi::merge_sorted_topk(tie, 10), plumb::InvalidArgument);
    // One id in two lists among the merged hits.
    std::vector<std::vector<pi::ShardHit>> dup{{{"a", 3.0f, 0, 1}}, {{"a", 2.0f, 1, 0}}};
    EXPECT_THROW(pi::merge_sorted_topk(dup, 10), plumb::InvalidArgument);
}

// --- runs over shards == the run over one index ------------------------------------------------

/// A corpus of 600 passages over a 300-word vocabulary (skewed), ids not in corpus order, plus:
/// a word only in the first passages ("onlyfirst": shard 0 of 2 or 3), one only in the last
/// ("onlylast"), identical passages in the first and last shard (score ties broken by id across
/// shards, including a non-ASCII id).
std::string make_corpus() {
    std::mt19937_64 rng(7);
    std::ostringstream out;
    auto word = [&] {
        auto a = rng() % 300, b = rng() % 300;
        return "w" + std::to_string(std::min(a, b));
    };
    out << "\xc3\xa9-tie\tpiano violin harp w3\n";
    out << "m-tie\tpiano violin harp w3\n";
    for (int i = 0; i < 600; ++i) {
        out << "d" << (i * 7919) % 600 << '\t';
        std::size_t n = 5 + rng() % 40;
        for (std::size_t j = 0; j < n; ++j) out << word() << ' ';
        if (i < 20 && i % 3 == 0) out << "onlyfirst ";
        if (i >= 580 && i % 4 == 0) out << "onlylast onlylast ";
        out << '\n';
    }
    out << "b-tie\tpiano violin harp w3\n";
    out << "z-tie\tpiano violin harp w3\n";
    return out.str();
}

std::vector<plumb::Query> make_topics() {
    std::vector<plumb::Query> q{
        {"1", "onlyfirst w3"},      {"2", "onlylast"}, {"3", "onlyfirst onlylast w10 w200"},
        {"4", "nosuchword w5"},     {"5", "w1 w1 w2"}, {"6", "piano harp"},
        {"7", "piano w3 w4 w5 w6"}, {"8", ""},         {"9", "the of and"}};
    std::mt19937_64 rng(11);
    for (int i = 10; i < 30; ++i) {
        std::string text;
        std::size_t n = 1 + rng() % 4;
        for (std::size_t j = 0; j < n; ++j) text += "w" + std::to_string(rng() % 120) + " ";
        q.push_back({std::to_string(i), text});
    }
    return q;
}

std::string run_text(const std::vector<plumb::RankedList>& lists) {
    std::string out;
    for (const auto& l : lists) {
        for (std::size_t r = 0; r < l.candidates.size(); ++r) {
            char score[64];
            std::snprintf(score, sizeof score, "%.9g", l.candidates[r].score);
            out += l.qid + " " + l.candidates[r].docid + " " + std::to_string(r + 1) + " " + score +
                   "\n";
        }
    }
    return out;
}

class ShardedRuns : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        dir = new TempDir("sharded");
        write_file(*dir / "corpus.tsv", make_corpus());
        pi::build_index(*dir / "corpus.tsv", *dir / "whole");
        pi::build_shards(*dir / "corpus.tsv", *dir / "two", 2);
        pi::build_shards(*dir / "corpus.tsv", *dir / "three", 3);
    }
    static void TearDownTestSuite() {
        delete dir;
        dir = nullptr;
    }
    static TempDir* dir;
};
TempDir* ShardedRuns::dir = nullptr;

TEST_F(ShardedRuns, ManifestNamesContiguousShards) {
    auto m = pi::ShardManifest::read(*dir / "three");
    ASSERT_EQ(m.shards.size(), 3u);
    EXPECT_EQ(m.shards[0].path, "shard-000");
    EXPECT_EQ(m.shards[2].path, "shard-002");
    EXPECT_EQ(m.documents(), 604u);
    // Split by bytes (a TSV file): shard i holds the lines that start in [size * i / 3,
    // size * (i + 1) / 3).
    const auto text = make_corpus();
    for (std::size_t i = 0; i < 3; ++i) {
        const std::uint64_t a = text.size() * i / 3, b = text.size() * (i + 1) / 3;
        std::uint64_t want = 0;
        for (std::size_t p = 0; p < text.size(); p = text.find('\n', p) + 1) {
            if (p >= a && p < b) ++want;
        }
        EXPECT_EQ(m.shards[i].documents, want) << "shard " << i;
        EXPECT_GT(want, 150u);
    }
    auto whole = pi::PassageIndex::open(*dir / "whole");
    EXPECT_EQ(m.total_length(), whole->info().total_length);
    auto first = pi::PassageIndex::open(*dir / "three" / "shard-000");
    EXPECT_EQ(first->docid(0), "\xc3\xa9-tie");
    EXPECT_GT(first->doc_freq("onlyfirst"), 0u);
    EXPECT_EQ(first->doc_freq("onlylast"), 0u);
}

TEST_F(ShardedRuns, ByteIdenticalToOneIndex) {
    auto whole = pi::Bm25Searcher::open(*dir / "whole");
    auto topics = make_topics();
    for (const char* sharded_dir : {"two", "three"}) {
        auto sharded = pi::ShardedSearcher::open(*dir / sharded_dir);
        EXPECT_EQ(sharded->collection().documents, 604u);
        for (bool rm3 : {false, true}) {
            for (std::size_t k : {10u, 1000u}) {
                pi::SearchOptions o;
                o.rm3 = rm3;
                auto a = whole->search_batch(topics, k, o);
                auto b = sharded->search_batch(topics, k, o, 2);
                SCOPED_TRACE(std::string(sharded_dir) + (rm3 ? " rm3" : " bm25") +
                             " k=" + std::to_string(k));
                ASSERT_EQ(a.size(), b.size());
                std::size_t results = 0;
                for (std::size_t q = 0; q < a.size(); ++q) {
                    ASSERT_EQ(a[q].candidates.size(), b[q].candidates.size()) << a[q].qid;
                    for (std::size_t r = 0; r < a[q].candidates.size(); ++r) {
                        EXPECT_EQ(a[q].candidates[r].docid, b[q].candidates[r].docid);
                        EXPECT_TRUE(same_bits(a[q].candidates[r].score, b[q].candidates[r].score));
                    }
                    results += a[q].candidates.size();
                }
                EXPECT_GT(results, 100u);
                EXPECT_EQ(run_text(a), run_text(b));
            }
        }
    }
}

// The pipeline's BM25 first stage ("bm25" factory) opens a sharded index directory: its
// retrieve() equals the one over the whole index, and its document source has every shard's
// texts.
TEST_F(ShardedRuns, Bm25RetrieverOpensShardedDirectories) {
    auto topics = make_topics();
    for (bool rm3 : {false, true}) {
        plumb::StageContext whole_ctx, sharded_ctx;
        const nlohmann::json whole_cfg = {{"index", (*dir / "whole").string()}, {"rm3", rm3}};
        const nlohmann::json sharded_cfg = {{"index", (*dir / "three").string()}, {"rm3", rm3}};
        auto whole = pi::Bm25Retriever::from_config(whole_cfg, whole_ctx);
        auto sharded = pi::Bm25Retriever::from_config(sharded_cfg, sharded_ctx);
        const auto* r = dynamic_cast<const pi::Bm25Retriever*>(sharded.get());
        ASSERT_NE(r, nullptr);
        EXPECT_NE(r->sharded(), nullptr);
        EXPECT_EQ(r->searcher(), nullptr);
        const auto a = whole->retrieve(topics, 50);
        const auto b = sharded->retrieve(topics, 50);
        EXPECT_EQ(run_text(a), run_text(b)) << (rm3 ? "rm3" : "bm25");
        ASSERT_EQ(a.size(), b.size());
        for (std::size_t q = 0; q < a.size(); ++q) {
            ASSERT_EQ(a[q].candidates.size(), b[q].candidates.size());
            for (std::size_t i = 0; i < a[q].candidates.size(); ++i) {
                EXPECT_EQ(b[q].candidates[i].trace.size(), 1u);
                EXPECT_EQ(b[q].candidates[i].trace[0].stage, rm3 ? "bm25+rm3" : "bm25");
            }
        }
        // Texts of documents in the first and the last shard, and a missing id.
        const auto docs = sharded_ctx.documents();
        ASSERT_NE(docs, nullptr);
        EXPECT_EQ(docs->size(), 604u);
        auto whole_index = pi::PassageIndex::open(*dir / "whole");
        for (std::uint32_t d : {0u, 603u}) {
            const auto id = std::string(whole_index->docid(d));
            EXPECT_EQ(docs->text(id), whole_index->text(id)) << id;
            EXPECT_TRUE(docs->text(id).has_value());
        }
        EXPECT_FALSE(docs->text("no-such-id").has_value());
    }
}

// Block-max bounds stored in a shard hold at that shard's own average length only. Shard 0 holds
// short passages and shard 1 long ones, so the collection's average length is far from either
// shard's and every term has several 128-posting blocks per shard: a shard searched with the
// collection's statistics must bound its blocks at the collection's average length, or block-max
// MaxScore prunes passages that belong in the top k.
TEST(ShardedBlockMax, BoundsFollowTheCollectionsAverageLength) {
    TempDir dir("sharded_blockmax");
    std::mt19937_64 rng(5);
    std::ostringstream corpus;
    // Shard 0: 1,000 passages of 1-8 words, "common" up to 3 times in most of them; shard 1:
    // 1,000 passages of 150-250 words.
    for (int i = 0; i < 2000; ++i) {
        corpus << "p" << i << '\t';
        if (i < 1000) {
            for (std::size_t t = rng() % 4; t > 0; --t) corpus << "common ";
            for (std::size_t j = rng() % 5; j > 0; --j) corpus << "r" << rng() % 40 << ' ';
        } else {
            for (std::size_t j = 150 + rng() % 100; j > 0; --j)
                corpus << (rng() % 4 == 0 ? "common" : "filler") << ' ';
        }
        corpus << '\n';
    }
    write_file(dir / "corpus.tsv", corpus.str());
    pi::build_index(dir / "corpus.tsv", dir / "whole");
    pi::build_shards(dir / "corpus.tsv", dir / "two", 2);
    auto whole = pi::Bm25Searcher::open(dir / "whole");
    auto sharded = pi::ShardedSearcher::open(dir / "two");
    std::vector<plumb::Query> topics;
    for (int r = 0; r < 40; ++r)
        topics.push_back({std::to_string(r), "r" + std::to_string(r) + " common"});
    for (std::size_t k : {1u, 3u, 10u, 100u}) {
        pi::SearchOptions exhaustive, blockmax;
        exhaustive.algorithm = pi::SearchAlgorithm::Exhaustive;
        blockmax.algorithm = pi::SearchAlgorithm::BlockMaxMaxScore;
        SCOPED_TRACE("k=" + std::to_string(k));
        EXPECT_EQ(run_text(whole->search_batch(topics, k, exhaustive)),
                  run_text(sharded->search_batch(topics, k, blockmax, 2)));
    }
}

TEST_F(ShardedRuns, TiesAcrossShardsFollowIds) {
    auto sharded = pi::ShardedSearcher::open(*dir / "three");
    auto hits = sharded->search("piano violin harp", 4);
    ASSERT_EQ(hits.size(), 4u);
    EXPECT_EQ(hits[0].docid, "b-tie");
    EXPECT_EQ(hits[1].docid, "m-tie");
    EXPECT_EQ(hits[2].docid, "z-tie");
    EXPECT_EQ(hits[3].docid, "\xc3\xa9-tie");
    EXPECT_EQ(hits[0].shard, 2u);
    EXPECT_EQ(hits[3].shard, 0u);
    EXPECT_EQ(hits[0].score, hits[3].score);
}

TEST_F(ShardedRuns, NonDefaultParametersAndAlgorithms) {
    auto whole = pi::Bm25Searcher::open(*dir / "whole");
    auto sharded = pi::ShardedSearcher::open(*dir / "two");
    auto topics = make_topics();
    for (auto alg : {pi::SearchAlgorithm::Exhaustive, pi::SearchAlgorithm::MaxScore,
                     pi::SearchAlgorithm::TaatMaxScore}) {
        for (bool lucene : {false, true}) {
            pi::SearchOptions o;
            o.algorithm = alg;
            o.bm25.k1 = 1.2f;
            o.bm25.b = 0.75f;
            o.bm25.lucene_norms = lucene;
            o.rm3 = true;
            EXPECT_EQ(run_text(whole->search_batch(topics, 20, o)),
                      run_text(sharded->search_batch(topics, 20, o)));
            o.bm25 = {};
            o.rm3 = false;
            EXPECT_EQ(run_text(whole->search_batch(topics, 20, o)),
                      run_text(sharded->search_batch(topics, 20, o)));
        }
    }
}

TEST_F(ShardedRuns, ShardLocalStatisticsCombineToTheWholeIndex) {
    auto whole = pi::Bm25Searcher::open(*dir / "whole");
    auto sharded = pi::ShardedSearcher::open(*dir / "three");
    std::vector<std::string> terms{"onlyfirst", "onlylast", "w3", "w150", "nosuchword"};
    auto g = sharded->global_stats(terms, {});
    auto w = whole->term_stats(terms, pi::collection_stats(whole->index()));
    EXPECT_EQ(g.collection.documents, w.collection.documents);
    EXPECT_EQ(g.collection.total_length, w.collection.total_length);
    for (const auto& t : terms) {
        SCOPED_TRACE(t);
        EXPECT_EQ(g.find(t)->df, w.find(t)->df);
        EXPECT_EQ(g.find(t)->max_tf, w.find(t)->max_tf);
        EXPECT_EQ(g.find(t)->min_dl, w.find(t)->min_dl);
        EXPECT_TRUE(same_bits(g.find(t)->max_frac_default, w.find(t)->max_frac_default));
    }
    // A global statistics object lacking a query term present in the shard is refused.
    pi::ShardStats partial;
    partial.collection = sharded->collection();
    std::vector<pi::WeightedTerm> q{{"w3", 1.0f}};
    EXPECT_THROW(sharded->shard(0).search_terms(q, 10, {}, partial), plumb::InvalidArgument);
}

// --- manifest errors ---------------------------------------------------------------------------

TEST(ShardManifest, MissingShardAndWrongCountsAreClearErrors) {
    TempDir dir("manifest");
    write_file(dir / "c.tsv", make_corpus());
    pi::build_shards(dir / "c.tsv", dir / "s", 2);
    ASSERT_NO_THROW(pi::ShardedSearcher::open(dir / "s"));
    auto good = slurp(dir / "s" / "plumb-shards.json");

    // Wrong counts for one shard (totals adjusted so the manifest itself is consistent).
    auto m = pi::ShardManifest::read(dir / "s");
    const auto real = m.shards[1].documents;
    m.shards[1].documents += 1;
    m.write(dir / "s");
    try {
        pi::ShardedSearcher::open(dir / "s");
        FAIL() << "expected IndexError";
    } catch (const plumb::IndexError& e) {
        EXPECT_NE(std::string(e.what()).find("shard 1 ('shard-001') holds " +
                                             std::to_string(real) + " documents"),
                  std::string::npos)
            << e.what();
        EXPECT_NE(std::string(e.what()).find("the manifest says " + std::to_string(real + 1)),
                  std::string::npos)
            << e.what();
    }
    // Totals that are not the shards' sums.
    write_file(dir / "s" / "plumb-shards.json", good);
    auto text = good;
    auto pos = text.find("\"documents\": 604");
    ASSERT_NE(pos, std::string::npos) << text;
    text.replace(pos, 16, "\"documents\": 605");
    write_file(dir / "s" / "plumb-shards.json", text);
    EXPECT_THROW(pi::ShardManifest::read(dir / "s"), plumb::IndexError);
    // A missing shard.
    write_file(dir / "s" / "plumb-shards.json", good);
    plumb_test::fs::rename(dir / "s" / "shard-001", dir / "moved");
    try {
        pi::ShardedSearcher::open(dir / "s");
        FAIL() << "expected IndexError";
    } catch (const plumb::IndexError& e) {
        EXPECT_NE(std::string(e.what()).find("shard 1 ('shard-001') is missing"), std::string::npos)
            << e.what();
    }
    // A shard directory that is not a committed index.
    plumb_test::fs::create_directories(dir / "s" / "shard-001");
    try {
        pi::ShardedSearcher::open(dir / "s");
        FAIL() << "expected IndexError";
    } catch (const plumb::IndexError& e) {
        EXPECT_NE(std::string(e.what()).find("does not open"), std::string::npos) << e.what();
    }
    // Not a manifest / unknown version.
    write_file(dir / "s" / "plumb-shards.json", "{\"format\": \"x\"}");
    EXPECT_THROW(pi::ShardManifest::read(dir / "s"), plumb::IndexError);
    write_file(dir / "s" / "plumb-shards.json", "{\"format\": \"plumb-shards\", \"version\": 9}");
    EXPECT_THROW(pi::ShardManifest::read(dir / "s"), plumb::IndexError);
}

TEST(ShardBuilder, RejectsBadRequests) {
    TempDir dir("builder");
    write_file(dir / "c.tsv", "a\tone two\nb\tthree\n");
    EXPECT_THROW(pi::build_shards(dir / "c.tsv", dir / "s", 0), plumb::InvalidArgument);
    EXPECT_THROW(pi::build_shards(dir / "c.tsv", dir / "s", 3), plumb::InvalidArgument);
    EXPECT_THROW(pi::build_shards("-", dir / "s", 2), plumb::InvalidArgument);
    // Duplicate ids in different shards are found (each shard alone is fine).
    write_file(dir / "d.tsv", "a\tone two\nb\tthree\na\tfour\n");
    try {
        pi::build_shards(dir / "d.tsv", dir / "d", 3);
        FAIL() << "expected IndexError";
    } catch (const plumb::IndexError& e) {
        EXPECT_NE(std::string(e.what()).find("duplicate document id 'a'"), std::string::npos)
            << e.what();
    }
    EXPECT_FALSE(pi::ShardManifest::present(dir / "d"));
}

}  // namespace
