// Block-max metadata (postings.bin version 2) and block-max MaxScore: pruned vs exhaustive top k
// (documents, bit-identical scores, order) on a corpus with many score ties and short and long
// documents; version 1 indexes still searchable; corrupted block tables are IndexErrors;
// intra-query parallelism (split queries, chunks scanned by any thread) gives the same top k.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "bm25_test_util.hpp"
#include "index/bm25_searcher.hpp"
#include "index/detail/bm25_block_cursor.hpp"
#include "index/detail/bm25_block_max_maxscore.hpp"  // kScoreWindow, scan
#include "index/detail/bm25_exhaustive.hpp"          // scan_range
#include "index/detail/bm25_intra_query.hpp"
#include "index/detail/bm25_query.hpp"               // kBoundSlack
#include "index/detail/index_data.hpp"
#include "index/index_builder.hpp"
#include "plugin/error.hpp"

namespace pi = plumb::index;
namespace pd = plumb::index::detail;
namespace fs = std::filesystem;
using plumb_test::TempDir;
using plumb_test::write_file;

namespace {

constexpr int kDocs = 6000;
constexpr int kVocab = 40;

/// Word w of the small vocabulary (letters only, no stop words, unchanged by Porter).
std::string word(int w) {
    return "w" + std::string(1, static_cast<char>('a' + w % 26)) +
           std::string(1, static_cast<char>('a' + w / 26)) + "x";
}

/// Many exact ties: a quarter of the documents repeat one of a few templates (same words, same
/// length, so the same score for every query), lengths are bimodal (1-4 or 150-400 words), and
/// words are drawn from a skewed 40-word vocabulary (some in nearly every document, many tf > 1).
std::string tie_corpus() {
    std::mt19937_64 rng(11);
    auto uniform = [&](int lo, int hi) {
        return lo + static_cast<int>(rng() % static_cast<std::uint64_t>(hi - lo + 1));
    };
    std::vector<std::string> templates;
    for (int t = 0; t < 6; ++t) {
        std::string s;
        for (int i = 0, n = uniform(1, 6); i < n; ++i) s += (i ? " " : "") + word(uniform(0, 9));
        templates.push_back(s);
    }
    std::string out;
    for (int d = 0; d < kDocs; ++d) {
        std::string text;
        if (rng() % 4 == 0) {
            text = templates[rng() % templates.size()];
        } else {
            const int n = rng() % 2 ? uniform(1, 4) : uniform(150, 400);
            for (int i = 0; i < n; ++i) {
                // Skewed: min of two uniforms favours small word numbers.
                int w = std::min(uniform(0, kVocab - 1), uniform(0, kVocab - 1));
                text += (i ? " " : "") + word(w);
            }
        }
        out += "d" + std::to_string(d) + "\t" + text + "\n";
    }
    return out;
}

std::vector<std::string> random_queries(int n) {
    std::mt19937_64 rng(5);
    std::vector<std::string> qs;
    for (int i = 0; i < n; ++i) {
        std::string q;
        const int len = 1 + static_cast<int>(rng() % 6);
        for (int j = 0; j < len; ++j) q += (j ? " " : "") + word(static_cast<int>(rng() % kVocab));
        qs.push_back(q);
    }
    return qs;
}

void expect_same(const std::vector<pi::Hit>& a, const std::vector<pi::Hit>& b,
                 const std::string& what) {
    ASSERT_EQ(a.size(), b.size()) << what;
    for (std::size_t i = 0; i < a.size(); ++i) {
        ASSERT_EQ(a[i].doc, b[i].doc) << what << " rank " << i;
        ASSERT_EQ(a[i].score, b[i].score) << what << " rank " << i;  // bit-identical
    }
}

/// Rewrites the version 2 postings.bin of the index in `dir` as version 1 (same postings, no
/// block table) and records version 1 in its metadata: an index as builds before block-max
/// metadata wrote it.
void downgrade_to_v1(const fs::path& dir) {
    std::string v2 = plumb_test::slurp(dir / "postings.bin");
    std::uint64_t count = 0, table = 0;
    std::memcpy(&count, v2.data() + 8, 8);
    std::memcpy(&table, v2.data() + 16, 8);
    const std::uint64_t shift = pd::kPostingsHeader - pd::kPostingsHeaderV1;
    std::string v1(pd::kPostingsMagicV1, 8);
    auto put = [&](std::uint64_t v) { v1.append(reinterpret_cast<const char*>(&v), 8); };
    put(count);
    put(table - shift);
    v1.append(v2, pd::kPostingsHeader, table - pd::kPostingsHeader);
    for (std::uint64_t i = 0; i <= count; ++i) {
        std::uint64_t off = 0;
        std::memcpy(&off, v2.data() + table + 8 * i, 8);
        put(off - shift);
    }
    v1.append(pd::kPostingsPadding, '\0');
    write_file(dir / "postings.bin", v1);
    auto meta = nlohmann::json::parse(plumb_test::slurp(dir / "plumb-index.json"));
    meta["postings"]["version"] = 1;
    write_file(dir / "plumb-index.json", meta.dump(2));
}

/// True when two rankings hold the same documents with bit-identical scores in the same order.
bool same_hits(const std::vector<pi::Hit>& got, const std::vector<pi::Hit>& want) {
    if (got.size() != want.size()) return false;
    for (std::size_t r = 0; r < got.size(); ++r)
        if (got[r].doc != want[r].doc || got[r].score != want[r].score) return false;
    return true;
}

/// Three threads run four rounds over `n` queries at once, thread t starting at query 50 t;
/// `same(qi, i, round)` searches query qi and says whether it got the one-pass top k. Returns
/// the number of searches that did not.
template <class Same>
int concurrent_mismatches(std::size_t n, Same same) {
    std::atomic<int> mismatches{0};
    std::vector<std::thread> pool;
    for (int t = 0; t < 3; ++t) {
        pool.emplace_back([&, t] {
            for (int round = 0; round < 4; ++round) {
                for (std::size_t i = 0; i < n; ++i) {
                    if (!same((i + static_cast<std::size_t>(t) * 50) % n, i, round)) ++mismatches;
                }
            }
        });
    }
    for (auto& th : pool) th.join();
    return mismatches.load();
}

class TieCorpus : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        dir = new TempDir("blockmax");
        write_file(dir->path / "c.tsv", tie_corpus());
        pi::IndexBuildOptions o;
        o.analysis.stem = false;
        pi::build_index(dir->path / "c.tsv", dir->path / "idx", o);
        searcher = pi::Bm25Searcher::open(dir->path / "idx");
    }
    static void TearDownTestSuite() {
        searcher.reset();
        delete dir;
    }
    static TempDir* dir;
    static std::shared_ptr<const pi::Bm25Searcher> searcher;
};
TempDir* TieCorpus::dir = nullptr;
std::shared_ptr<const pi::Bm25Searcher> TieCorpus::searcher;

}  // namespace

TEST_F(TieCorpus, IndexHasBlockMaxMetadata) {
    const auto& d = searcher->index().data();
    ASSERT_TRUE(d.postings.loaded());
    EXPECT_EQ(d.postings.version(), 2);
    EXPECT_TRUE(d.postings.has_blocks());
    auto meta = nlohmann::json::parse(plumb_test::slurp(dir->path / "idx" / "plumb-index.json"));
    EXPECT_EQ(meta.at("postings").at("version").get<int>(), 2);
    // Some lists span many blocks.
    std::size_t max_blocks = 0;
    for (std::size_t t = 0; t < d.terms.size(); ++t) {
        max_blocks = std::max(max_blocks, d.postings.blocks(t).size());
    }
    EXPECT_GT(max_blocks, 20u);
}

TEST_F(TieCorpus, BlockCursorReadsEveryPostingAndBoundsEveryFactor) {
    // Every term's postings through the block cursor equal the sequential reader's, and each
    // block's stored bound is >= the exact float factor of each of its postings (default k1/b,
    // the query-time norms), also for other parameters through max_tf/min_dl.
    const auto& d = searcher->index().data();
    const pi::Bm25Params def;
    std::vector<float> norm(d.doclen.size()), norm2(d.doclen.size());
    for (std::size_t i = 0; i < norm.size(); ++i) {
        norm[i] = pd::bm25_norm(def.k1, def.b, d.doclen[i], d.info.avgdl);
        norm2[i] = pd::bm25_norm(1.2f, 0.75f, d.doclen[i], d.info.avgdl);
    }
    pd::BlockBoundParams stored;
    pd::BlockBoundParams other{false, 1.2f, 0.75f, 1.2f + 1.0f, false, d.info.avgdl};
    pd::BlockCursor c;
    std::vector<std::int32_t> docs(300), freqs(300);
    for (std::size_t t = 0; t < d.terms.size(); ++t) {
        const auto& e = d.terms[t];
        std::vector<std::pair<std::uint32_t, std::uint32_t>> seq, blk;
        auto r = d.postings.reader(t, e.df);
        while (auto n = r.read(docs.data(), freqs.data(), 300)) {
            for (int j = 0; j < n; ++j) {
                seq.emplace_back(static_cast<std::uint32_t>(docs[j]),
                                 static_cast<std::uint32_t>(freqs[j]));
            }
        }
        c.open(d.postings, t, static_cast<std::uint32_t>(e.df), stored);
        for (; c.doc != pd::kEndDoc; c.next()) blk.emplace_back(c.doc, c.tf);
        ASSERT_EQ(seq, blk) << t;
        const auto blocks = d.postings.blocks(t);
        ASSERT_EQ(blocks.size(), (seq.size() + 127) / 128);
        for (std::size_t i = 0; i < seq.size(); ++i) {
            const auto& b = blocks[i / 128];
            const auto [doc, tf] = seq[i];
            const float f = pd::bm25_frac(static_cast<float>(tf), def.k1 + 1.0f, norm[doc]);
            ASSERT_GE(stored.frac(b), f) << t << " posting " << i;
            const float f2 = pd::bm25_frac(static_cast<float>(tf), 1.2f + 1.0f, norm2[doc]);
            ASSERT_GE(static_cast<double>(other.frac(b)) * (1.0 + pd::kBoundSlack), f2);
        }
        // Skipping: next_geq to every 37th posting lands on it.
        c.open(d.postings, t, static_cast<std::uint32_t>(e.df), stored);
        for (std::size_t i = 0; i < seq.size(); i += 37) {
            c.next_geq(seq[i].first);
            ASSERT_EQ(c.doc, seq[i].first);
            ASSERT_EQ(c.tf, seq[i].second);
        }
        c.next_geq(static_cast<std::uint32_t>(d.doclen.size()));
        EXPECT_EQ(c.doc, pd::kEndDoc);
    }
}

TEST_F(TieCorpus, BlockCursorOpensAtAnyDocumentAndFindsFarBlocks) {
    // open(..., from) lands on the first posting >= from and then reads the rest of the list;
    // block_ub(target) moves the block pointer to the first block whose last document is >=
    // target, whether the target is in the next few blocks (a short walk) or far ahead
    // (galloping and a binary search): checked against the postings and the block table read
    // directly, for targets 1 to 2,000 documents apart.
    const auto& d = searcher->index().data();
    pd::BlockBoundParams stored;
    pd::BlockCursor c;
    std::vector<std::int32_t> docs(300), freqs(300);
    const auto n_docs = static_cast<std::uint32_t>(d.doclen.size());
    std::size_t far_jumps = 0;
    for (std::size_t t = 0; t < d.terms.size(); ++t) {
        const auto& e = d.terms[t];
        std::vector<std::pair<std::uint32_t, std::uint32_t>> seq;
        auto r = d.postings.reader(t, e.df);
        while (auto n = r.read(docs.data(), freqs.data(), 300)) {
            for (int j = 0; j < n; ++j) {
                seq.emplace_back(static_cast<std::uint32_t>(docs[j]),
                                 static_cast<std::uint32_t>(freqs[j]));
            }
        }
        const auto blocks = d.postings.blocks(t);
        for (std::uint32_t from : {0u, 1u, 127u, 128u, 1000u, 2999u, 4096u, 5999u, n_docs}) {
            c.open(d.postings, t, static_cast<std::uint32_t>(e.df), stored, nullptr, 1.0f, from);
            auto it = std::lower_bound(seq.begin(), seq.end(), std::make_pair(from, 0u));
            for (; it != seq.end(); ++it, c.next()) {
                ASSERT_EQ(c.doc, it->first) << t << " from " << from;
                ASSERT_EQ(c.tf, it->second) << t << " from " << from;
            }
            ASSERT_EQ(c.doc, pd::kEndDoc) << t << " from " << from;
        }
        for (std::uint32_t step : {1u, 7u, 150u, 700u, 2000u}) {
            c.open(d.postings, t, static_cast<std::uint32_t>(e.df), stored, nullptr, 2.0f);
            std::size_t want = 0;  // the linear walk's block
            for (std::uint32_t target = 1; target < n_docs + step; target += step) {
                const std::size_t before = want;
                while (want < blocks.size() && blocks[want].last_doc < target) ++want;
                far_jumps += want - before > 4;
                const double ub = c.block_ub(target);
                if (want == blocks.size()) {
                    ASSERT_EQ(ub, 0.0) << t << " target " << target;
                } else {
                    ASSERT_EQ(ub, 2.0 * stored.frac(blocks[want])) << t << " target " << target;
                    ASSERT_EQ(c.block_last(), blocks[want].last_doc) << t << " target " << target;
                }
            }
        }
    }
    EXPECT_GT(far_jumps, 100u);  // the galloping path ran
}

TEST_F(TieCorpus, BlockMaxMaxScoreEqualsExhaustive) {
    pi::SearchOptions ex, bm, au;
    ex.algorithm = pi::SearchAlgorithm::Exhaustive;
    bm.algorithm = pi::SearchAlgorithm::BlockMaxMaxScore;
    std::size_t ties = 0;
    for (const auto& q : random_queries(300)) {
        for (std::size_t k : {1, 10, 100}) {
            auto a = searcher->search(q, k, ex);
            expect_same(a, searcher->search(q, k, bm), q + " k=" + std::to_string(k));
            expect_same(a, searcher->search(q, k, au), q + " auto k=" + std::to_string(k));
            for (std::size_t i = 1; i < a.size(); ++i) ties += a[i].score == a[i - 1].score;
        }
    }
    EXPECT_GT(ties, 300u);  // the fixture does exercise tie order
}

TEST_F(TieCorpus, BlockMaxMaxScoreEqualsExhaustiveWithOtherParamsAndWeights) {
    for (int variant = 0; variant < 2; ++variant) {
        pi::SearchOptions ex, bm;
        ex.algorithm = pi::SearchAlgorithm::Exhaustive;
        bm.algorithm = pi::SearchAlgorithm::BlockMaxMaxScore;
        if (variant == 0) {
            ex.bm25 = bm.bm25 = pi::Bm25Params{1.2f, 0.75f};
        } else {
            ex.bm25.lucene_norms = bm.bm25.lucene_norms = true;
        }
        for (const auto& q : random_queries(150)) {
            auto terms = searcher->query_terms(q);
            if (!terms.empty()) terms[0].weight = 2.5f;
            for (std::size_t k : {1, 10, 100}) {
                expect_same(searcher->search_terms(terms, k, ex),
                            searcher->search_terms(terms, k, bm),
                            q + " variant " + std::to_string(variant));
            }
        }
    }
}

TEST_F(TieCorpus, VersionOneIndexIsStillSearchable) {
    fs::copy(dir->path / "idx", dir->path / "v1", fs::copy_options::recursive);
    downgrade_to_v1(dir->path / "v1");
    auto old = pi::Bm25Searcher::open(dir->path / "v1");
    const auto& d = old->index().data();
    ASSERT_TRUE(d.postings.loaded());
    EXPECT_EQ(d.postings.version(), 1);
    EXPECT_FALSE(d.postings.has_blocks());
    pi::SearchOptions ex;
    ex.algorithm = pi::SearchAlgorithm::Exhaustive;
    for (const auto& q : random_queries(60)) {
        for (std::size_t k : {1, 10, 100, 1000}) {
            auto a = searcher->search(q, k, ex);
            for (auto alg : {pi::SearchAlgorithm::Auto, pi::SearchAlgorithm::Exhaustive,
                             pi::SearchAlgorithm::TaatMaxScore, pi::SearchAlgorithm::MaxScore}) {
                pi::SearchOptions o;
                o.algorithm = alg;
                expect_same(a, old->search(q, k, o), q + " v1");
            }
            // Exhaustive intra-query splits need the block table: never on version 1.
            pi::SearchOptions split;
            split.intra_query.parts = 4;
            split.intra_query.exhaustive_min_postings = 1;
            expect_same(a, old->search(q, k, split), q + " v1 split");
        }
    }
    EXPECT_EQ(old->intra_query_counts().splits, 0u);
    // Forcing the block-max algorithm on it is a clear error.
    pi::SearchOptions bm;
    bm.algorithm = pi::SearchAlgorithm::BlockMaxMaxScore;
    EXPECT_THROW(old->search(word(0), 10, bm), plumb::InvalidArgument);
}

TEST(BlockMaxWindows, ManyFullWindowsEqualExhaustive) {
    // Block-max MaxScore scores the essential lists in windows of up to kScoreWindow
    // documents (the first ones narrower): 60,000 short documents span many full windows and
    // gaps between them; words in nearly every document, in a few hundred, and in a handful
    // make lists that leave and stay in the essential set at different points, and a word
    // repeated in a query or weighted makes bounds tie or cross.
    TempDir dir("blockmax_windows");
    constexpr int kMany = 60000;
    std::mt19937_64 rng(23);
    std::string corpus;
    for (int d = 0; d < kMany; ++d) {
        std::string text;
        const int n = 1 + static_cast<int>(rng() % 5);
        for (int i = 0; i < n; ++i) {
            // Word 0 in ~1/2 of the positions, 1-3 in ~1/8 each, the rest rare.
            const std::uint64_t r = rng() % 64;
            const int w = r < 32   ? 0
                          : r < 56 ? 1 + static_cast<int>(r % 3)
                                   : 4 + static_cast<int>(rng() % 30);
            text += (i ? " " : "") + word(w);
        }
        corpus += "d" + std::to_string(d) + "\t" + text + "\n";
    }
    write_file(dir.path / "c.tsv", corpus);
    pi::IndexBuildOptions o;
    o.analysis.stem = false;
    pi::build_index(dir.path / "c.tsv", dir.path / "idx", o);
    auto s = pi::Bm25Searcher::open(dir.path / "idx");
    ASSERT_TRUE(s->index().data().postings.has_blocks());
    EXPECT_GT(s->index().info().documents, 10 * pd::kScoreWindow);
    pi::SearchOptions ex, bm;
    ex.algorithm = pi::SearchAlgorithm::Exhaustive;
    bm.algorithm = pi::SearchAlgorithm::BlockMaxMaxScore;
    std::mt19937_64 qrng(29);
    for (int qi = 0; qi < 120; ++qi) {
        std::vector<pi::WeightedTerm> terms;
        const int len = 1 + static_cast<int>(qrng() % 5);
        for (int j = 0; j < len; ++j) {
            const int w = static_cast<int>(qrng() % 12);  // common words and some rare ones
            terms.push_back({word(w), qi % 3 == 0 ? 0.5f + static_cast<float>(qrng() % 4) : 1.0f});
        }
        for (std::size_t k : {1, 10, 100, 1000}) {
            expect_same(s->search_terms(terms, k, ex), s->search_terms(terms, k, bm),
                        "query " + std::to_string(qi) + " k=" + std::to_string(k));
        }
    }
}

TEST(BlockMaxFile, CorruptBlockTablesAndUnknownVersionsAreIndexErrors) {
    TempDir dir("blockmax_corrupt");
    std::string corpus;
    for (int i = 0; i < 600; ++i) {
        corpus += "d" + std::to_string(i) + "\talpha" + (i % 3 ? " beta beta" : "") + "\n";
    }
    pi::build_index(write_file(dir / "c.tsv", corpus), dir / "idx");
    pi::SearchOptions bm;
    bm.algorithm = pi::SearchAlgorithm::BlockMaxMaxScore;
    ASSERT_EQ(pi::Bm25Searcher::open(dir / "idx")->search("alpha beta", 10, bm).size(), 10u);
    const std::string good = plumb_test::slurp(dir / "idx" / "postings.bin");
    std::uint64_t blocks = 0;
    std::memcpy(&blocks, good.data() + 24, 8);
    const std::size_t n_blocks = (good.size() - pd::kPostingsPadding - blocks) / 24;
    ASSERT_GE(n_blocks, 6u);  // alpha: 600 postings (5 blocks), beta: 400 (4 blocks)
    // Rewrites one field of block `b` in a copy and returns the copy's directory.
    int copies = 0;
    auto corrupt = [&](std::size_t b, std::size_t field, std::uint32_t value) {
        const fs::path out = dir / ("bad" + std::to_string(copies++));
        fs::copy(dir / "idx", out, fs::copy_options::recursive);
        std::string bytes = good;
        std::memcpy(bytes.data() + blocks + 24 * b + field, &value, 4);
        write_file(out / "postings.bin", bytes);
        return out;
    };
    constexpr std::size_t kOffset = 0, kLastDoc = 8, kMaxTf = 12, kMaxFrac = 20;
    // Caught at open: offsets or last documents out of order or range, bad bounds.
    for (auto [b, field, value] : std::vector<std::tuple<std::size_t, std::size_t, std::uint32_t>>{
             {1, kOffset, 0},                 // before the term's start
             {2, kLastDoc, 0},                // not increasing
             {n_blocks - 1, kLastDoc, 5000},  // past the documents
             {0, kMaxTf, 0},                  // no posting has tf 0
             {1, kMaxFrac, 0x7fc00000u},      // NaN bound
             {1, kMaxFrac, 0xbf800000u}}) {   // negative bound
        EXPECT_THROW(pi::PassageIndex::open(corrupt(b, field, value)), plumb::IndexError)
            << b << " " << field;
    }
    // Caught while decoding: a block's last document or offset disagreeing with its postings,
    // a tf above the block's maximum.
    std::uint32_t last1 = 0;
    std::memcpy(&last1, good.data() + blocks + 24 + kLastDoc, 4);
    for (auto [b, field, value] : std::vector<std::tuple<std::size_t, std::size_t, std::uint32_t>>{
             {1, kLastDoc, last1 - 1}, {n_blocks - 1, kMaxTf, 1}}) {
        auto s = pi::Bm25Searcher::open(corrupt(b, field, value));
        EXPECT_THROW(
            {
                s->search("alpha", 1000, bm);
                s->search("beta", 1000, bm);
                s->search("alpha beta", 1000, bm);
            },
            plumb::IndexError)
            << b << " " << field;
    }
    // Truncated block table.
    fs::copy(dir / "idx", dir / "trunc", fs::copy_options::recursive);
    fs::resize_file(dir / "trunc" / "postings.bin", good.size() - pd::kPostingsPadding - 8);
    EXPECT_THROW(pi::PassageIndex::open(dir / "trunc"), plumb::IndexError);
    // A version the metadata does not match, and an unknown version, rejected by name.
    fs::copy(dir / "idx", dir / "mismatch", fs::copy_options::recursive);
    auto meta = nlohmann::json::parse(plumb_test::slurp(dir / "idx" / "plumb-index.json"));
    meta["postings"]["version"] = 1;
    write_file(dir / "mismatch" / "plumb-index.json", meta.dump(2));
    EXPECT_THROW(pi::PassageIndex::open(dir / "mismatch"), plumb::IndexError);
    fs::copy(dir / "idx", dir / "future", fs::copy_options::recursive);
    meta["postings"]["version"] = 3;
    write_file(dir / "future" / "plumb-index.json", meta.dump(2));
    try {
        pi::PassageIndex::open(dir / "future");
        FAIL() << "version 3 accepted";
    } catch (const plumb::IndexError& e) {
        EXPECT_NE(std::string(e.what()).find("postings.bin' version 3"), std::string::npos)
            << e.what();
    }
}

TEST(BlockMaxNames, AlgorithmNamesRoundTrip) {
    const auto names = pi::search_algorithm_names();
    for (std::size_t i = 0; i < names.size(); ++i) {
        EXPECT_EQ(static_cast<std::size_t>(pi::search_algorithm_from_name(names[i])), i);
    }
    EXPECT_EQ(pi::search_algorithm_from_name("block-max-maxscore"),
              pi::SearchAlgorithm::BlockMaxMaxScore);
    EXPECT_THROW(pi::search_algorithm_from_name("wand"), plumb::InvalidArgument);
}

// A postings list whose last varint runs past the term's end (a truncated or corrupt
// postings.bin) is an IndexError, never a read past the buffer. Each buffer is exactly its
// bytes long, so ASan flags any read beyond it.
TEST(PostingsReader, VarintsRunningPastTheTermAreCorrupt) {
    const std::vector<std::vector<std::uint8_t>> cases = {
        {0x81},              // doc delta with its continuation bit set, then the end
        {0x04},              // delta 2 with tf != 1, but no tf byte
        {0x04, 0x83},        // tf varint cut after its first byte
        {0x81, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01},  // a doc varint longer than 35 bits
    };
    for (const auto& bytes : cases) {
        const auto buf = std::make_unique<std::uint8_t[]>(bytes.size());
        std::memcpy(buf.get(), bytes.data(), bytes.size());
        pd::PostingsReader r(buf.get(), buf.get() + bytes.size(), 1, 1000, nullptr);
        std::int32_t doc = 0, tf = 0;
        EXPECT_THROW(r.read(&doc, &tf, 1), plumb::IndexError) << bytes.size();
    }
    // The well-formed neighbours decode: delta 2 with tf 3, and delta 1 with tf 1.
    const std::uint8_t ok[] = {0x04, 0x03, 0x03};
    pd::PostingsReader r(ok, ok + 3, 2, 1000, nullptr);
    std::int32_t docs[2] = {}, tfs[2] = {};
    ASSERT_EQ(r.read(docs, tfs, 2), 2);
    EXPECT_EQ(docs[0], 2);
    EXPECT_EQ(tfs[0], 3);
    EXPECT_EQ(docs[1], 3);
    EXPECT_EQ(tfs[1], 1);
}

// ---------------------------------------------------------------------------------------------
// Intra-query parallelism (SearchOptions::intra_query, detail/bm25_intra_query.hpp): a split
// query's chunks, scanned by whichever threads, merge to exactly the one-pass top k.
// ---------------------------------------------------------------------------------------------

namespace {

/// The query the searcher builds for `terms` with default parameters (bm25_searcher.cpp):
/// qtf * idf weights, bounds w * max_frac_default, canonical order (bound descending, ties by
/// first occurrence). `norm` receives the length norms.
pd::Bm25Query build_query(const pd::IndexData& d, const std::vector<pi::WeightedTerm>& terms,
                          std::vector<float>& norm) {
    const pi::Bm25Params p;
    norm.resize(d.doclen.size());
    for (std::size_t i = 0; i < norm.size(); ++i)
        norm[i] = pd::bm25_norm(p.k1, p.b, d.doclen[i], d.info.avgdl);
    pd::Bm25Query q;
    q.norm = norm.data();
    q.k1p1 = p.k1 + 1.0f;
    q.block_bound.stored = true;
    const double n = static_cast<double>(d.info.documents);
    for (const auto& t : terms) {
        const pd::TermEntry* e = d.find_term(t.term);
        if (!e || e->df <= 0) continue;
        const double df = static_cast<double>(e->df);
        const auto idf = static_cast<float>(std::log(1.0 + (n - df + 0.5) / (df + 0.5)));
        const float w = t.weight * idf;
        q.terms.push_back({e, w, static_cast<double>(w) * static_cast<double>(e->max_frac_default)});
    }
    std::stable_sort(q.terms.begin(), q.terms.end(),
                     [](const pd::Bm25Term& a, const pd::Bm25Term& b) { return a.ub > b.ub; });
    return q;
}

/// Scans every chunk of a `parts`-way split of [lo, N) as a separate helper with its own heap
/// (in `order`: the shared threshold then comes from chunks before or after), merges the heaps
/// as the owner does, and returns the hits.
std::vector<pi::Hit> scan_chunks(const pd::IndexData& d, const pd::Bm25Query& q, std::size_t k,
                                 std::uint32_t lo, unsigned parts,
                                 const std::vector<unsigned>& order) {
    std::mutex mu;
    pd::IntraQueryScheduler scheduler;
    pd::SplitTask task;
    task.query = &q;
    task.k = k;
    task.lo = lo;
    task.n_docs = static_cast<std::uint32_t>(d.doclen.size());
    task.parts = parts;
    task.next = parts;  // every chunk handed out here: a helper scans just its own
    pd::TopKHeap merged(k);
    for (unsigned c : order) {
        pd::Bm25Workspace ws(d, mu);
        pd::TopKHeap top(k);
        pd::IntraQueryRun run;
        run.scheduler = &scheduler;
        run.task = &task;
        run.helper = true;
        run.chunk = c;
        pd::Bm25BlockMaxMaxScore{}.scan(q, ws, top, &run);
        for (const auto& e : top.entries()) {
            EXPECT_GE(e.doc, task.chunk_lo(c));
            EXPECT_LT(e.doc, task.chunk_hi(c));
            if (merged.accepts(e)) merged.push(e);
        }
    }
    // Documents below lo: one more range scanned as one chunk.
    if (lo > 0) {
        pd::SplitTask head;
        head.query = &q;
        head.k = k;
        head.lo = 0;
        head.n_docs = lo;
        head.parts = 1;
        pd::Bm25Workspace ws(d, mu);
        pd::TopKHeap top(k);
        pd::IntraQueryRun run;
        run.scheduler = &scheduler;
        run.task = &head;
        run.helper = true;
        pd::Bm25BlockMaxMaxScore{}.scan(q, ws, top, &run);
        for (const auto& e : top.entries())
            if (merged.accepts(e)) merged.push(e);
    }
    return merged.finish();
}

/// The exhaustive path's split: every chunk of a `parts`-way split of [0, N) scored alone with
/// scan_range (in `order`), by two participants taking turns (each with its own accumulator
/// and top-k buffer, so one participant scores several chunks), their best entries merged as
/// the owner does. Checks that every accumulator is all zero again.
std::vector<pi::Hit> scan_exhaustive_chunks(const pd::IndexData& d, const pd::Bm25Query& q,
                                            std::size_t k, unsigned parts,
                                            const std::vector<unsigned>& order) {
    std::mutex mu;
    pd::SplitTask task;
    task.exhaustive = true;
    task.lo = 0;
    task.n_docs = static_cast<std::uint32_t>(d.doclen.size());
    task.parts = parts;
    pd::Bm25Workspace ws0(d, mu), ws1(d, mu);
    pd::TopKBuffer top0(k, d.idrank.data()), top1(k, d.idrank.data());
    for (std::size_t i = 0; i < order.size(); ++i) {
        const unsigned c = order[i];
        pd::Bm25Exhaustive::scan_range(q, i % 2 ? ws1 : ws0, i % 2 ? top1 : top0, task.chunk_lo(c),
                                       task.chunk_hi(c));
    }
    pd::TopKBuffer merged(k, d.idrank.data());
    for (auto* top : {&top0, &top1}) {
        for (const auto& e : top->best())
            if (e.score >= merged.threshold()) merged.push(e);
    }
    for (auto* ws : {&ws0, &ws1}) {
        EXPECT_TRUE(std::all_of(ws->acc.begin(), ws->acc.end(), [](float v) { return v == 0; }));
    }
    return merged.finish();
}

}  // namespace

TEST_F(TieCorpus, ExhaustiveSplitChunksMergeToTheOnePassTopK) {
    // The exhaustive path's document ranges (entered through the block table, each list cut
    // inside a block at both ends), scored alone and by two participants, forwards and
    // backwards, up to k = N: the merged top k is the one-pass top k, bit-identical scores,
    // ties (a quarter of the documents share a template) ordered by id across chunks.
    const auto& d = searcher->index().data();
    pi::SearchOptions ex;
    ex.algorithm = pi::SearchAlgorithm::Exhaustive;
    std::vector<float> norm;
    std::size_t compared = 0;
    for (const auto& text : random_queries(60)) {
        const auto terms = searcher->query_terms(text);
        const auto q = build_query(d, terms, norm);
        if (q.terms.empty()) continue;
        for (std::size_t k : {1, 10, 100, 1000, 6000}) {
            const auto want = searcher->search_terms(terms, k, ex);
            for (unsigned parts : {2u, 3u, 7u, 64u}) {
                std::vector<unsigned> order(parts);
                for (unsigned c = 0; c < parts; ++c) order[c] = c;
                expect_same(want, scan_exhaustive_chunks(d, q, k, parts, order),
                            text + " k=" + std::to_string(k) + " parts=" + std::to_string(parts));
                std::reverse(order.begin(), order.end());
                expect_same(want, scan_exhaustive_chunks(d, q, k, parts, order),
                            text + " reversed k=" + std::to_string(k));
                ++compared;
            }
        }
    }
    EXPECT_GT(compared, 1000u);
}

TEST_F(TieCorpus, SplitChunksMergeToTheOnePassTopK) {
    // Each chunk scanned alone (as a helper does), in document order and in reverse (a later
    // chunk's threshold prunes an earlier one), chunk boundaries inside runs of tied
    // documents: the merged heaps give the exhaustive top k.
    const auto& d = searcher->index().data();
    pi::SearchOptions ex;
    ex.algorithm = pi::SearchAlgorithm::Exhaustive;
    std::vector<float> norm;
    std::size_t compared = 0;
    for (const auto& text : random_queries(120)) {
        const auto terms = searcher->query_terms(text);
        const auto q = build_query(d, terms, norm);
        if (q.terms.empty()) continue;
        for (std::size_t k : {1, 10, 100}) {
            const auto want = searcher->search_terms(terms, k, ex);
            for (unsigned parts : {2u, 3u, 7u}) {
                for (std::uint32_t lo : {0u, 1000u}) {
                    std::vector<unsigned> order(parts);
                    for (unsigned c = 0; c < parts; ++c) order[c] = c;
                    expect_same(want, scan_chunks(d, q, k, lo, parts, order),
                                text + " k=" + std::to_string(k));
                    std::reverse(order.begin(), order.end());
                    expect_same(want, scan_chunks(d, q, k, lo, parts, order),
                                text + " reversed k=" + std::to_string(k));
                    ++compared;
                }
            }
        }
    }
    EXPECT_GT(compared, 1000u);
}

TEST_F(TieCorpus, IntraQueryParallelismEqualsOnePass) {
    // One thread: a query split at its first check (after_ms 0) scans every chunk itself; one
    // that never splits (after_ms 1e6) is the plain scan.
    pi::SearchOptions ex, split;
    ex.algorithm = pi::SearchAlgorithm::Exhaustive;
    for (unsigned parts : {2u, 3u, 8u}) for (double after : {0.0, 1e6}) {
        split.intra_query.parts = parts;
        split.intra_query.after_ms = after;
        const auto before = searcher->intra_query_counts().splits;
        for (const auto& q : random_queries(200)) {
            // (k = 1000: the exhaustive path, which ignores the option.)
            for (std::size_t k : {1, 10, 100, 1000}) {
                expect_same(searcher->search(q, k, ex), searcher->search(q, k, split),
                            q + " parts=" + std::to_string(parts));
            }
        }
        // The split path really ran (after 0), and never with a budget no query reaches.
        const auto splits = searcher->intra_query_counts().splits - before;
        if (after == 0.0) {
            EXPECT_GT(splits, 0u) << "parts=" << parts;
        } else {
            EXPECT_EQ(splits, 0u) << "parts=" << parts;
        }
    }
    // The exhaustive path (k = 1000, or the algorithm named): every query split at its start
    // (exhaustive_min_postings 1), one thread scanning all its chunks; or none (0).
    for (unsigned parts : {2u, 3u, 8u})
        for (std::uint64_t min_postings : {1u, 0u}) {
            pi::SearchOptions xs;
            xs.intra_query.parts = parts;
            xs.intra_query.exhaustive_min_postings = min_postings;
            const auto before = searcher->intra_query_counts().splits;
            std::size_t searches = 0;
            for (const auto& q : random_queries(100)) {
                for (std::size_t k : {1, 10, 1000}) {
                    xs.algorithm =
                        k == 1000 ? pi::SearchAlgorithm::Auto : pi::SearchAlgorithm::Exhaustive;
                    const auto want = searcher->search(q, k, ex);
                    expect_same(want, searcher->search(q, k, xs),
                                q + " exhaustive parts=" + std::to_string(parts));
                    searches += !want.empty();
                }
            }
            const auto splits = searcher->intra_query_counts().splits - before;
            EXPECT_EQ(splits, min_postings ? searches : 0u) << "parts=" << parts;
        }
    // Other algorithms ignore the option.
    split.algorithm = pi::SearchAlgorithm::TaatMaxScore;
    expect_same(searcher->search(word(1) + " " + word(3), 10, ex),
                searcher->search(word(1) + " " + word(3), 10, split), "taat");
    split.algorithm = pi::SearchAlgorithm::BlockMaxMaxScore;
    split.intra_query.after_ms = -1;
    EXPECT_THROW(searcher->search(word(1), 10, split), plumb::InvalidArgument);
    split.intra_query.after_ms = 0;
    split.intra_query.lend_ms = std::nan("");
    EXPECT_THROW(searcher->search(word(1), 10, split), plumb::InvalidArgument);
    split.intra_query.lend_ms = 0.25;
    split.intra_query.parts = pi::kMaxIntraQueryParts + 1;  // would overflow nothing, but only
    EXPECT_THROW(searcher->search(word(1), 10, split), plumb::InvalidArgument);  // empty claims
    split.intra_query.parts = pi::kMaxIntraQueryParts;
    expect_same(searcher->search(word(1), 10, ex), searcher->search(word(1), 10, split), "max");
}

TEST_F(TieCorpus, IntraQueryParallelismConcurrentSearchesEqualOnePass) {
    // Three threads search the same queries at once, every query splitting at once: the
    // threads take each other's chunks; every result is still the one-pass top k.
    pi::SearchOptions ex, split;
    ex.algorithm = pi::SearchAlgorithm::Exhaustive;
    split.intra_query.parts = 4;
    split.intra_query.after_ms = 0;
    split.intra_query.lend_ms = 1e6;  // any time
    const auto queries = random_queries(150);
    std::vector<std::vector<pi::Hit>> want;
    for (const auto& q : queries) want.push_back(searcher->search(q, 10, ex));
    const auto before = searcher->intra_query_counts();
    EXPECT_EQ(concurrent_mismatches(queries.size(),
                                    [&](std::size_t qi, std::size_t, int) {
                                        return same_hits(searcher->search(queries[qi], 10, split),
                                                         want[qi]);
                                    }),
              0);
    // Queries split and other threads scanned their chunks (1,800 splitting searches on 3
    // threads that may help at any time).
    const auto after = searcher->intra_query_counts();
    EXPECT_GT(after.splits, before.splits);
    EXPECT_GT(after.helper_joins, before.helper_joins);
}

TEST_F(TieCorpus, ExhaustiveSplitConcurrentSearchesEqualOnePass) {
    // Three threads search the same queries at once on the exhaustive path (k = 10 and 1000),
    // queries with at least the median postings splitting at their start, the lighter ones
    // lending to them before their own query: every result is still
    // the one-pass top k, and helpers did join.
    pi::SearchOptions ex, split;
    ex.algorithm = pi::SearchAlgorithm::Exhaustive;
    split.algorithm = pi::SearchAlgorithm::Exhaustive;
    split.intra_query.parts = 8;
    const auto queries = random_queries(150);
    std::vector<std::uint64_t> postings;
    for (const auto& q : queries) {
        std::uint64_t p = 0;
        for (const auto& t : searcher->query_terms(q)) p += searcher->index().doc_freq(t.term);
        postings.push_back(p);
    }
    auto sorted = postings;
    std::sort(sorted.begin(), sorted.end());
    split.intra_query.exhaustive_min_postings = sorted[sorted.size() / 2];
    ASSERT_GT(split.intra_query.exhaustive_min_postings, 0u);
    ASSERT_GT(split.intra_query.exhaustive_min_postings, sorted.front());
    std::vector<std::vector<pi::Hit>> want10, want1000;
    for (const auto& q : queries) {
        want10.push_back(searcher->search(q, 10, ex));
        want1000.push_back(searcher->search(q, 1000, ex));
    }
    const auto before = searcher->intra_query_counts();
    EXPECT_EQ(concurrent_mismatches(queries.size(),
                                    [&](std::size_t qi, std::size_t i, int round) {
                                        const std::size_t k = (i + round) % 2 ? 10 : 1000;
                                        return same_hits(searcher->search(queries[qi], k, split),
                                                         k == 10 ? want10[qi] : want1000[qi]);
                                    }),
              0);
    const auto after = searcher->intra_query_counts();
    EXPECT_GT(after.splits, before.splits);
    EXPECT_GT(after.helper_joins, before.helper_joins);
}

TEST_F(TieCorpus, BlockMaxAndExhaustiveSplitsOnOneSearcherEqualOnePass) {
    // Both split paths at once on one searcher (the default algorithm: block-max at k = 10,
    // exhaustive at k = 1000): block-max queries help at window boundaries (block-max chunks
    // only), every thread lends to exhaustive splits before its own query; every result is the
    // one-pass top k.
    pi::SearchOptions ex, split;
    ex.algorithm = pi::SearchAlgorithm::Exhaustive;
    split.intra_query.parts = 8;
    split.intra_query.after_ms = 0;
    split.intra_query.lend_ms = 1e6;  // any time
    const auto queries = random_queries(150);
    std::vector<std::uint64_t> postings;
    for (const auto& q : queries) {
        std::uint64_t p = 0;
        for (const auto& t : searcher->query_terms(q)) p += searcher->index().doc_freq(t.term);
        postings.push_back(p);
    }
    std::sort(postings.begin(), postings.end());
    split.intra_query.exhaustive_min_postings = postings[postings.size() / 2];
    ASSERT_GT(split.intra_query.exhaustive_min_postings, 0u);
    std::vector<std::vector<pi::Hit>> want10, want1000;
    for (const auto& q : queries) {
        want10.push_back(searcher->search(q, 10, ex));
        want1000.push_back(searcher->search(q, 1000, ex));
    }
    const auto before = searcher->intra_query_counts();
    EXPECT_EQ(concurrent_mismatches(queries.size(),
                                    [&](std::size_t qi, std::size_t i, int round) {
                                        const std::size_t k = (i + round) % 2 ? 10 : 1000;
                                        return same_hits(searcher->search(queries[qi], k, split),
                                                         k == 10 ? want10[qi] : want1000[qi]);
                                    }),
              0);
    EXPECT_GT(searcher->intra_query_counts().splits, before.splits);
}

TEST(IntraQueryTies, TiedDocumentsAcrossChunkBoundaries) {
    // 20,000 documents of the same text (one score) among others, external ids a permutation
    // of the document numbers (i * 7919 mod N): the top k are the tied documents with the
    // smallest ids, scattered over every chunk; every chunk boundary falls inside the tie, and
    // once a heap is full, documents scoring exactly the threshold still enter by id.
    TempDir dir("intra_query_ties");
    constexpr int kN = 24000;
    std::mt19937_64 rng(31);
    std::string corpus;
    for (int i = 0; i < kN; ++i) {
        char id[16];
        std::snprintf(id, sizeof id, "d%06d", static_cast<int>((std::int64_t{i} * 7919) % kN));
        const std::string text = i % 6 != 5 ? word(0) + " " + word(1)
                                            : word(static_cast<int>(rng() % 5)) + " " + word(7);
        corpus += std::string(id) + "\t" + text + "\n";
    }
    write_file(dir.path / "c.tsv", corpus);
    pi::IndexBuildOptions o;
    o.analysis.stem = false;
    pi::build_index(dir.path / "c.tsv", dir.path / "idx", o);
    auto s = pi::Bm25Searcher::open(dir.path / "idx");
    pi::SearchOptions ex, split;
    ex.algorithm = pi::SearchAlgorithm::Exhaustive;
    split.algorithm = pi::SearchAlgorithm::BlockMaxMaxScore;
    split.intra_query.after_ms = 0;
    const std::string q = word(0) + " " + word(1);
    for (unsigned parts : {2u, 3u, 5u, 16u}) {
        split.intra_query.parts = parts;
        for (std::size_t k : {1, 7, 10, 100}) {
            auto want = s->search(q, k, ex);
            ASSERT_EQ(want.size(), k);
            // All tied, the smallest ids first: d000000 is document 0, a tied one.
            EXPECT_EQ(want.front().score, want.back().score);
            EXPECT_EQ(s->index().docid(want.front().doc), std::string_view("d000000"));
            if (k == 100) {  // from all over the collection
                std::uint32_t lo = kN, hi = 0;
                for (const auto& h : want) lo = std::min(lo, h.doc), hi = std::max(hi, h.doc);
                EXPECT_LT(lo, kN / 10u);
                EXPECT_GT(hi, kN - kN / 10u);
            }
            expect_same(want, s->search(q, k, split), "parts=" + std::to_string(parts));
        }
        // The exhaustive path split at its start, k up to every tied document.
        pi::SearchOptions xs;
        xs.algorithm = pi::SearchAlgorithm::Exhaustive;
        xs.intra_query.parts = parts;
        xs.intra_query.exhaustive_min_postings = 1;
        for (std::size_t k : {1, 7, 100, 1000, 20000}) {
            expect_same(s->search(q, k, ex), s->search(q, k, xs),
                        "exhaustive parts=" + std::to_string(parts));
        }
    }
    // The detail-level split too, every chunk alone.
    const auto& d = s->index().data();
    std::vector<float> norm;
    const auto bq = build_query(d, s->query_terms(q), norm);
    for (unsigned parts : {2u, 9u}) {
        std::vector<unsigned> order(parts);
        for (unsigned c = 0; c < parts; ++c) order[c] = parts - 1 - c;
        expect_same(s->search(q, 10, ex), scan_chunks(d, bq, 10, 0, parts, order), "chunks");
        for (std::size_t k : {10, 1000})
            expect_same(s->search(q, k, ex), scan_exhaustive_chunks(d, bq, k, parts, order),
                        "exhaustive chunks");
    }
}

TEST(IntraQuerySpinMutex, ExcludesAndCountsContention) {
    // Two threads increment a plain counter under the mutex 200,000 times each: every
    // increment survives (mutual exclusion), and the contention counters never exceed the
    // locks taken (blocked <= contended <= 400,000).
    pd::SpinMutex mu;
    long counter = 0;
    auto work = [&] {
        for (int i = 0; i < 200000; ++i) {
            std::lock_guard lock(mu);
            ++counter;
        }
    };
    std::thread a(work), b(work);
    a.join();
    b.join();
    EXPECT_EQ(counter, 400000);
    EXPECT_LE(mu.blocked(), mu.contended());
    EXPECT_LE(mu.contended(), 400000u);
    EXPECT_TRUE(mu.try_lock());
    mu.unlock();
}

TEST(IntraQuerySplitTest, NearlyDoneQueriesDoNotSplit) {
    // Bm25BlockMaxMaxScore::worth_splitting: not before `after`; after it, only when the rest
    // projected at the speed so far (elapsed x documents left / documents done) is at least a
    // quarter of `after`.
    using namespace std::chrono;
    pd::IntraQueryRun run;
    run.n_docs = 100000;
    run.after = duration_cast<steady_clock::duration>(milliseconds(1));
    run.start = steady_clock::now() - milliseconds(2);  // 2 ms (or more, if preempted) ago
    // Half done: the rest projects to >= 2 ms.
    EXPECT_TRUE(pd::Bm25BlockMaxMaxScore::worth_splitting(run, 50000));
    // 99.99 % done: the rest projects to 0.1 us per ms elapsed (a split would need 2.5 s).
    EXPECT_FALSE(pd::Bm25BlockMaxMaxScore::worth_splitting(run, 99990));
    // Not yet `after` (1 hour).
    run.after = duration_cast<steady_clock::duration>(hours(1));
    EXPECT_FALSE(pd::Bm25BlockMaxMaxScore::worth_splitting(run, 50000));
    // after = 0 (as the tests that force splits use): any position splits.
    run.after = steady_clock::duration::zero();
    EXPECT_TRUE(pd::Bm25BlockMaxMaxScore::worth_splitting(run, 99990));
}
