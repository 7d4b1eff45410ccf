// BM25 math against hand-computed values, tie-breaking, odd queries, DocumentSource.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include "bm25_test_util.hpp"
#include "index/bm25_retriever.hpp"
#include "index/bm25_searcher.hpp"
#include "index/detail/bm25_topk.hpp"
#include "index/detail/index_data.hpp"
#include "index/index_builder.hpp"
#include "plugin/error.hpp"

namespace pi = plumb::index;
using plumb_test::TempDir;
using plumb_test::write_file;

namespace {

// N = 5, lengths 3, 2, 4, 0, 1: avgdl = 2. No stemming/stop words so terms are the words.
const char* kCorpus =
    "d1\tapple banana apple\n"
    "d2\tbanana cherry\n"
    "d3\tcherry cherry cherry cherry\n"
    "d4\t\n"
    "d5\tdate\n";

class Bm25Math : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        dir = new TempDir("math");
        write_file(*dir / "c.tsv", kCorpus);
        pi::IndexBuildOptions o;
        o.analysis.stem = false;
        o.analysis.stop = false;
        pi::build_index(*dir / "c.tsv", *dir / "idx", o);
        searcher = pi::Bm25Searcher::open(*dir / "idx");
    }
    static void TearDownTestSuite() {
        searcher.reset();
        delete dir;
    }
    static std::vector<std::pair<std::string, float>> run(const std::string& q,
                                                          pi::SearchOptions o = {},
                                                          std::size_t k = 10) {
        std::vector<std::pair<std::string, float>> out;
        for (const auto& h : searcher->search(q, k, o)) {
            out.emplace_back(std::string(searcher->index().docid(h.doc)), h.score);
        }
        return out;
    }
    static TempDir* dir;
    static std::shared_ptr<const pi::Bm25Searcher> searcher;
};
TempDir* Bm25Math::dir = nullptr;
std::shared_ptr<const pi::Bm25Searcher> Bm25Math::searcher;

}  // namespace

TEST_F(Bm25Math, IndexStatistics) {
    const auto& info = searcher->index().info();
    EXPECT_EQ(info.documents, 5u);
    EXPECT_EQ(info.total_length, 10u);
    EXPECT_DOUBLE_EQ(info.avgdl, 2.0);
    EXPECT_EQ(searcher->index().doc_length(*searcher->index().find("d3")), 4u);
    EXPECT_EQ(searcher->index().doc_length(*searcher->index().find("d4")), 0u);
    EXPECT_EQ(searcher->index().doc_freq("cherry"), 2u);
    EXPECT_EQ(searcher->index().doc_freq("missing"), 0u);
}

TEST_F(Bm25Math, SingleTermScoreByHand) {
    // idf(apple) = ln(1 + (5 - 1 + 0.5) / (1 + 0.5)) = ln 4 = 1.3862944
    // d1: tf = 2, dl = 3: 2 * 1.9 / (2 + 0.9 * (0.6 + 0.4 * 3 / 2)) = 3.8 / 3.08 = 1.2337662
    // score = 1.7103633
    auto r = run("apple");
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].first, "d1");
    EXPECT_NEAR(r[0].second, 1.710363, 1e-5);
}

TEST_F(Bm25Math, MultiTermScoresByHand) {
    // idf(banana) = idf(cherry) = ln(1 + 3.5 / 2.5) = ln 2.4 = 0.8754687
    // d2 (dl 2): banana 1.9 / (1 + 0.9) = 1 -> 0.875469; cherry the same -> 1.750937
    // d3 (dl 4): cherry tf 4: 7.6 / (4 + 0.9 * 1.4) = 1.444867 -> 1.264936
    // d1 (dl 3): banana tf 1: 1.9 / (1 + 1.08) = 0.913462 -> 0.799707
    auto r = run("banana cherry");
    ASSERT_EQ(r.size(), 3u);
    EXPECT_EQ(r[0].first, "d2");
    EXPECT_NEAR(r[0].second, 1.750937, 1e-5);
    EXPECT_EQ(r[1].first, "d3");
    EXPECT_NEAR(r[1].second, 1.264936, 1e-5);
    EXPECT_EQ(r[2].first, "d1");
    EXPECT_NEAR(r[2].second, 0.799707, 1e-5);
}

TEST_F(Bm25Math, RepeatedQueryTermCountsTwice) {
    auto r = run("cherry cherry");
    ASSERT_EQ(r.size(), 2u);
    EXPECT_EQ(r[0].first, "d3");
    EXPECT_NEAR(r[0].second, 2 * 1.264936, 2e-5);
    EXPECT_EQ(r[1].first, "d2");
    EXPECT_NEAR(r[1].second, 1.750937 / 2 * 2, 2e-5);
}

TEST_F(Bm25Math, OtherParameters) {
    // k1 = 1.2, b = 0.75. d3: cherry tf 4, dl 4: 4 * 2.2 / (4 + 1.2 * (0.25 + 0.75 * 2))
    //   = 8.8 / 6.1 = 1.442623 -> * 0.875469 = 1.262971
    // d1: banana tf 1, dl 3: 2.2 / (1 + 1.2 * 1.375) = 0.830189 -> 0.726804
    pi::SearchOptions o;
    o.bm25.k1 = 1.2f;
    o.bm25.b = 0.75f;
    auto r = run("banana cherry", o);
    ASSERT_EQ(r.size(), 3u);
    EXPECT_NEAR(r[1].second, 1.262971, 1e-5);
    EXPECT_NEAR(r[2].second, 0.726804, 1e-5);
    o.bm25.b = 1.5f;
    EXPECT_THROW(run("banana", o), plumb::InvalidArgument);
}

TEST_F(Bm25Math, OddQueriesNeverThrow) {
    for (const char* q : {"", "   ", "c++?", "AND", "\"", ":", "apple:", "\"apple",
                          "apple AND NOT (banana", "*", "~1", "\xFF\xFE"}) {
        EXPECT_NO_THROW(run(q)) << q;
    }
    EXPECT_TRUE(run("").empty());
    EXPECT_TRUE(run("nothing matches").empty());
    auto r = run("apple:");
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].first, "d1");
    EXPECT_TRUE(run("apple", {}, 0).empty());
}

TEST_F(Bm25Math, TopKCutsAndLargeK) {
    EXPECT_EQ(run("banana cherry", {}, 1).size(), 1u);
    EXPECT_EQ(run("banana cherry", {}, 1)[0].first, "d2");
    EXPECT_EQ(run("banana cherry", {}, 1000000).size(), 3u);
}

TEST_F(Bm25Math, DocumentSourceServesStoredText) {
    const plumb::DocumentSource& src = searcher->index();
    EXPECT_EQ(src.size(), 5u);
    EXPECT_EQ(src.text("d2").value(), "banana cherry");
    EXPECT_EQ(src.text("d4").value(), "");
    EXPECT_FALSE(src.text("d9").has_value());
    EXPECT_FALSE(src.text("").has_value());
}

TEST_F(Bm25Math, RetrieverStage) {
    pi::Bm25Retriever r(searcher);
    EXPECT_EQ(r.name(), "bm25");
    std::vector<plumb::Query> qs{{"q1", "banana cherry"}, {"q2", ""}};
    auto lists = r.retrieve(qs, 2);
    ASSERT_EQ(lists.size(), 2u);
    EXPECT_EQ(lists[0].qid, "q1");
    ASSERT_EQ(lists[0].candidates.size(), 2u);
    EXPECT_EQ(lists[0].candidates[0].docid, "d2");
    ASSERT_EQ(lists[0].candidates[0].trace.size(), 1u);
    EXPECT_EQ(lists[0].candidates[0].trace[0].stage, "bm25");
    EXPECT_TRUE(lists[1].candidates.empty());
    EXPECT_THROW(pi::Bm25Retriever(std::shared_ptr<const pi::Bm25Searcher>()),
                 plumb::InvalidArgument);
    EXPECT_THROW(pi::Bm25Retriever(std::shared_ptr<const pi::ShardedSearcher>()),
                 plumb::InvalidArgument);
}

TEST(Bm25Ties, BrokenByExternalIdAscending) {
    TempDir dir("ties");
    // Identical passages: equal scores, so the order is by id (byte-wise): "10" < "9" < "a".
    write_file(dir / "c.tsv", "a\tsame words\n9\tsame words\n10\tsame words\nx\tother\n");
    pi::build_index(dir / "c.tsv", dir / "idx");
    auto s = pi::Bm25Searcher::open(dir / "idx");
    for (auto alg : {pi::SearchAlgorithm::Exhaustive, pi::SearchAlgorithm::MaxScore}) {
        pi::SearchOptions o;
        o.algorithm = alg;
        auto hits = s->search("same", 10, o);
        ASSERT_EQ(hits.size(), 3u);
        EXPECT_EQ(s->index().docid(hits[0].doc), "10");
        EXPECT_EQ(s->index().docid(hits[1].doc), "9");
        EXPECT_EQ(s->index().docid(hits[2].doc), "a");
        auto top2 = s->search("same", 2, o);
        ASSERT_EQ(top2.size(), 2u);
        EXPECT_EQ(s->index().docid(top2[1].doc), "9");
    }
}

TEST(Bm25Jsonl, TitleAndTextAreIndexedTogether) {
    TempDir dir("jsonl");
    write_file(dir / "c.jsonl",
               "{\"_id\": \"p1\", \"title\": \"Zebra\", \"text\": \"stripes here\"}\n"
               "{\"_id\": \"p2\", \"title\": \"\", \"text\": \"zebras elsewhere\"}\n");
    pi::IndexBuildOptions o;
    o.format = pi::CorpusFormat::Jsonl;
    pi::build_index(dir / "c.jsonl", dir / "idx", o);
    auto s = pi::Bm25Searcher::open(dir / "idx");
    EXPECT_EQ(s->index().text("p1").value(), "Zebra stripes here");
    EXPECT_EQ(s->index().text("p2").value(), "zebras elsewhere");
    // Porter: zebras -> zebra, so both match; p1 is shorter-normalised equal tf.
    auto hits = s->search("zebra", 10);
    EXPECT_EQ(hits.size(), 2u);

    o.title = false;  // text only
    pi::build_index(dir / "c.jsonl", dir / "idx", o);
    auto t = pi::Bm25Searcher::open(dir / "idx");
    EXPECT_EQ(t->index().text("p1").value(), "stripes here");
    EXPECT_EQ(t->search("zebra", 10).size(), 1u);
}

TEST(Bm25LuceneNorms, LengthsAsLuceneNineKeepsThem) {
    // SmallFloat.intToByte4 / byte4ToInt by hand: below 24 exact; v = dl - 24 keeps its 4 most
    // significant bits: 30 (v = 6, 3 bits) -> 30; 40 (v = 16 = 10000b) -> 40; 41 (10001b) -> 40;
    // 100 (v = 76 = 1001100b -> 1001000b = 72) -> 96; 1000 (v = 976 = 1111010000b ->
    // 1111000000b = 960) -> 984.
    using plumb::index::detail::lucene_norm_length;
    EXPECT_EQ(lucene_norm_length(0), 0u);
    EXPECT_EQ(lucene_norm_length(23), 23u);
    EXPECT_EQ(lucene_norm_length(24), 24u);
    EXPECT_EQ(lucene_norm_length(30), 30u);
    EXPECT_EQ(lucene_norm_length(31), 31u);
    EXPECT_EQ(lucene_norm_length(40), 40u);
    EXPECT_EQ(lucene_norm_length(41), 40u);
    EXPECT_EQ(lucene_norm_length(100), 96u);
    EXPECT_EQ(lucene_norm_length(1000), 984u);

    // Two passages holding the query word once, of 40 and 41 tokens: with exact lengths the
    // shorter one scores higher; with Lucene's lengths both are 40 long and tie (id order).
    TempDir dir("lucene_norms");
    std::string a = "b\tneedle", b = "a\tneedle";
    for (int i = 0; i < 39; ++i) a += " w" + std::to_string(i);
    for (int i = 0; i < 40; ++i) b += " w" + std::to_string(i);
    write_file(dir / "c.tsv", a + "\n" + b + "\n");
    pi::IndexBuildOptions o;
    o.analysis.stem = false;
    o.analysis.stop = false;
    pi::build_index(dir / "c.tsv", dir / "idx", o);
    auto s = pi::Bm25Searcher::open(dir / "idx");
    auto exact = s->search("needle", 2);
    ASSERT_EQ(exact.size(), 2u);
    EXPECT_EQ(s->index().docid(exact[0].doc), "b");  // 40 tokens
    EXPECT_GT(exact[0].score, exact[1].score);
    pi::SearchOptions lucene;
    lucene.bm25.lucene_norms = true;
    auto q = s->search("needle", 2, lucene);
    ASSERT_EQ(q.size(), 2u);
    EXPECT_EQ(q[0].score, q[1].score);
    EXPECT_EQ(s->index().docid(q[0].doc), "a");  // tie: ids ascending
}

// The query algorithms' top-k queues (index/detail/bm25_topk.hpp) against a full sort: same
// documents in the same order, with many score ties broken by id rank, whatever k.
TEST(Bm25TopK, HeapAndBufferEqualFullSort) {
    std::mt19937 rng(7);
    const std::uint32_t n = 5000;
    std::vector<std::uint32_t> rank(n);
    std::iota(rank.begin(), rank.end(), 0u);
    std::shuffle(rank.begin(), rank.end(), rng);
    std::vector<float> score(n);
    std::uniform_int_distribution<int> level(1, 40);  // few distinct scores: many ties
    for (auto& v : score) v = static_cast<float>(level(rng)) * 0.25f;
    std::vector<std::uint32_t> order(n);
    std::iota(order.begin(), order.end(), 0u);
    std::sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
        return score[a] > score[b] || (score[a] == score[b] && rank[a] < rank[b]);
    });
    for (std::size_t k : {1u, 7u, 64u, 100u, 1000u, 4999u, 5000u, 20000u}) {
        pi::detail::TopKHeap heap(k);
        pi::detail::TopKBuffer buffer(k, rank.data());
        for (std::uint32_t d = 0; d < n; ++d) {
            heap.push({score[d], rank[d], d});
            if (score[d] >= buffer.threshold()) buffer.push({score[d], 0, d});
        }
        const auto from_heap = heap.finish();
        const auto from_buffer = buffer.finish();
        const std::size_t want = std::min<std::size_t>(k, n);
        ASSERT_EQ(from_heap.size(), want) << k;
        ASSERT_EQ(from_buffer.size(), want) << k;
        for (std::size_t i = 0; i < want; ++i) {
            EXPECT_EQ(from_heap[i].doc, order[i]) << k << " " << i;
            EXPECT_EQ(from_buffer[i].doc, order[i]) << k << " " << i;
            EXPECT_EQ(from_buffer[i].score, score[order[i]]);
        }
    }
}
