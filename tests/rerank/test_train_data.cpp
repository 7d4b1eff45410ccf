// Training data: triples / id triples / qrels+run sources, the shuffling stream, transforms and
// validation sets. Expected values are worked out by hand from the inputs written here.
#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <unordered_map>

#include "debias/constituency.hpp"
#include "eval/qrels.hpp"
#include "index/index_builder.hpp"
#include "index/passage_index.hpp"
#include "plugin/error.hpp"
#include "rerank/train_data.hpp"
#include "tests/support/map_source.hpp"

namespace fs = std::filesystem;
namespace pr = plumb::rerank;
using plumb::ParseError;

namespace {

class TempDir {
public:
    explicit TempDir(const std::string& tag) {
        static std::atomic<int> counter{0};
        m_path = fs::temp_directory_path() /
                 ("plumb_train_data_" + tag + "_" + std::to_string(::getpid()) + "_" +
                  std::to_string(counter++));
        fs::remove_all(m_path);
        fs::create_directories(m_path);
    }
    ~TempDir() {
        std::error_code ec;
        fs::remove_all(m_path, ec);
    }
    fs::path operator/(const std::string& name) const { return m_path / name; }

private:
    fs::path m_path;
};

fs::path write(const fs::path& p, const std::string& content) {
    std::ofstream(p, std::ios::binary) << content;
    return p;
}

using MapDocs = plumb::test::MapSource;

std::vector<std::string> queries_of(pr::TrainingStream& s, std::size_t max = 100000) {
    std::vector<std::string> out;
    while (out.size() < max) {
        auto ex = s.next();
        if (!ex) break;
        out.push_back(ex->query);
    }
    return out;
}

/// `n` text triples "qI<TAB>pI<TAB>nI", I = 0..n-1.
fs::path numbered_triples(const TempDir& dir, int n, const std::string& name = "t.tsv") {
    std::string s;
    for (int i = 0; i < n; ++i) {
        auto k = std::to_string(i);
        s += "q" + k + "\tp" + k + "\tn" + k + "\n";
    }
    return write(dir / name, s);
}

std::vector<std::string> file_order(int n) {
    std::vector<std::string> out;
    for (int i = 0; i < n; ++i) out.push_back("q" + std::to_string(i));
    return out;
}

std::vector<std::string> tokens(const std::string& s) {
    std::vector<std::string> out;
    std::string cur;
    for (char c : s) {
        if (c == ' ') {
            if (!cur.empty()) out.push_back(cur);
            cur.clear();
        } else {
            cur += c;
        }
    }
    if (!cur.empty()) out.push_back(cur);
    return out;
}

/// The 1-based rotation r with rotate(original, r) == rotated, or 0 when there is none.
std::size_t rotation_of(const std::vector<std::string>& original,
                        const std::vector<std::string>& rotated) {
    if (original.size() != rotated.size()) return 0;
    const std::size_t n = original.size();
    for (std::size_t r = 1; r <= n; ++r) {
        bool ok = true;
        for (std::size_t i = 0; i < n && ok; ++i) ok = rotated[i] == original[(r - 1 + i) % n];
        if (ok) return r;
    }
    return 0;
}

}  // namespace

// ------------------------------------------------------------------------------------------
// Text triples

TEST(TextTriples, BomCrlfEmptyPassageAndExtraNegatives) {
    TempDir dir("text");
    auto p = write(dir / "t.tsv",
                   "\xEF\xBB\xBFq one\tpos one\tneg one\r\n"
                   "\n"
                   "q two\t\tneg a\tneg b\r\n"
                   "\t\t\n");
    auto src = pr::open_text_triples(p);
    auto a = src->next();
    ASSERT_TRUE(a);
    EXPECT_EQ(a->query, "q one");
    EXPECT_EQ(a->positive, "pos one");
    EXPECT_EQ(a->negatives, std::vector<std::string>{"neg one"});
    EXPECT_TRUE(a->qid.empty());
    EXPECT_TRUE(a->positive_id.empty());
    EXPECT_TRUE(a->negative_ids.empty());
    auto b = src->next();
    ASSERT_TRUE(b);
    EXPECT_EQ(b->query, "q two");
    EXPECT_EQ(b->positive, "");
    EXPECT_EQ(b->negatives, (std::vector<std::string>{"neg a", "neg b"}));
    auto c = src->next();  // all three texts empty: valid
    ASSERT_TRUE(c);
    EXPECT_EQ(c->query, "");
    EXPECT_EQ(c->negatives, std::vector<std::string>{""});
    EXPECT_FALSE(src->next());
    // rewind starts over.
    src->rewind(1);
    auto again = src->next();
    ASSERT_TRUE(again);
    EXPECT_EQ(again->query, "q one");
}

TEST(TextTriples, GzipInput) {
    TempDir dir("gz");
    auto p = dir / "t.tsv.gz";
    gzFile f = gzopen(p.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    const std::string body = "q1\tp1\tn1\nq2\tp2\tn2\r\n";
    gzwrite(f, body.data(), static_cast<unsigned>(body.size()));
    gzclose(f);
    auto src = pr::open_text_triples(p);
    auto a = src->next();
    auto b = src->next();
    ASSERT_TRUE(a && b);
    EXPECT_EQ(a->query, "q1");
    EXPECT_EQ(b->negatives, std::vector<std::string>{"n2"});
    EXPECT_FALSE(src->next());
}

TEST(TextTriples, MalformedLineNamesFileAndLine) {
    TempDir dir("bad");
    auto p = write(dir / "broken_triples.tsv", "q1\tp1\tn1\nq2\tp2\n");
    auto src = pr::open_text_triples(p);
    ASSERT_TRUE(src->next());
    try {
        src->next();
        FAIL() << "expected a ParseError";
    } catch (const ParseError& e) {
        EXPECT_EQ(e.line(), 2u);
        EXPECT_NE(std::string(e.what()).find("broken_triples.tsv:2"), std::string::npos)
            << e.what();
        EXPECT_NE(std::string(e.what()).find("found 2 fields"), std::string::npos) << e.what();
    }
    auto bad_utf8 = write(dir / "utf8.tsv", "q1\tp\xFF\tn1\n");
    auto s2 = pr::open_text_triples(bad_utf8);
    try {
        s2->next();
        FAIL() << "expected a ParseError";
    } catch (const ParseError& e) {
        EXPECT_EQ(e.line(), 1u);
        EXPECT_NE(std::string(e.what()).find("invalid UTF-8 at byte 5"), std::string::npos)
            << e.what();
    }
    EXPECT_THROW(pr::open_text_triples(dir / "missing.tsv"), plumb::IoError);
}

TEST(TextTriples, SkipBadCountsPerPass) {
    TempDir dir("skip");
    auto p = write(dir / "t.tsv", "q1\tp1\tn1\nonly one field\nq2\tp2\nq\xC3\tp\tn\nq3\tp3\tn3\n");
    auto src = pr::open_text_triples(p, {.skip_bad = true});
    std::vector<std::string> qs;
    while (auto ex = src->next()) qs.push_back(ex->query);
    EXPECT_EQ(qs, (std::vector<std::string>{"q1", "q3"}));
    EXPECT_EQ(src->skipped(), 3u);
    src->rewind(1);
    EXPECT_EQ(src->skipped(), 0u);
    while (src->next()) {
    }
    EXPECT_EQ(src->skipped(), 3u);
}

// ------------------------------------------------------------------------------------------
// Sources over a tiny index

class IndexedData : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        dir = new TempDir("index");
        write(*dir / "corpus.tsv",
              "d1\talpha passage one\n"
              "d2\tbravo passage two\n"
              "d3\tcharlie passage three\n"
              "d4\tdelta passage four\n"
              "d5\techo passage five\n"
              "d6\t\n");
        plumb::index::build_index(*dir / "corpus.tsv", *dir / "idx");
        docs = plumb::index::PassageIndex::open(*dir / "idx");
        write(*dir / "topics.tsv", "q1\tfirst query\nq2\tsecond query\nq3\tthird query\n");
    }
    static void TearDownTestSuite() {
        docs.reset();
        delete dir;
    }
    static TempDir* dir;
    static std::shared_ptr<const plumb::index::PassageIndex> docs;
};
TempDir* IndexedData::dir = nullptr;
std::shared_ptr<const plumb::index::PassageIndex> IndexedData::docs;

TEST_F(IndexedData, IdTriplesResolveTexts) {
    auto p = write(*dir / "ids.tsv", "q1\td1\td2\td3\r\nq2 \t d4\td6\n");
    auto src = pr::open_id_triples(p, *dir / "topics.tsv", docs);
    auto a = src->next();
    ASSERT_TRUE(a);
    EXPECT_EQ(a->qid, "q1");
    EXPECT_EQ(a->query, "first query");
    EXPECT_EQ(a->positive_id, "d1");
    EXPECT_EQ(a->positive, "alpha passage one");
    EXPECT_EQ(a->negative_ids, (std::vector<std::string>{"d2", "d3"}));
    EXPECT_EQ(a->negatives,
              (std::vector<std::string>{"bravo passage two", "charlie passage three"}));
    auto b = src->next();
    ASSERT_TRUE(b);
    EXPECT_EQ(b->qid, "q2");  // ids are trimmed
    EXPECT_EQ(b->positive, "delta passage four");
    EXPECT_EQ(b->negatives, std::vector<std::string>{""});  // empty passage d6
    EXPECT_FALSE(src->next());
    EXPECT_NE(src->describe().find("ids.tsv"), std::string::npos);
}

TEST_F(IndexedData, IdTriplesUnknownIds) {
    auto p = write(*dir / "unknown.tsv", "q1\td1\td2\nq9\td1\td2\nq1\td1\tdX\nq2\td2\n");
    auto src = pr::open_id_triples(p, *dir / "topics.tsv", docs);
    ASSERT_TRUE(src->next());
    try {
        src->next();
        FAIL();
    } catch (const ParseError& e) {
        EXPECT_EQ(e.line(), 2u);
        EXPECT_NE(std::string(e.what()).find("unknown.tsv:2"), std::string::npos);
        EXPECT_NE(std::string(e.what()).find("unknown query id 'q9'"), std::string::npos);
    }
    try {
        src->next();
        FAIL();
    } catch (const ParseError& e) {
        EXPECT_EQ(e.line(), 3u);
        EXPECT_NE(std::string(e.what()).find("unknown passage id 'dX'"), std::string::npos);
    }
    auto skipping = pr::open_id_triples(p, *dir / "topics.tsv", docs, {.skip_bad = true});
    int n = 0;
    while (skipping->next()) ++n;
    EXPECT_EQ(n, 1);
    EXPECT_EQ(skipping->skipped(), 3u);
    EXPECT_THROW(pr::open_id_triples(p, *dir / "topics.tsv", nullptr), plumb::InvalidArgument);
}

TEST_F(IndexedData, LoadValidation) {
    // q3 has no judgements; q4 is not in the topics. q1's list: d2 and d4 tie at 5 (docid
    // descending: d4 first), d1 scores 7 -> d1, d4, d2, d3.
    write(*dir / "val.qrels", "q1 0 d1 1\nq2 0 d5 0\nq4 0 d1 1\n");
    write(*dir / "val.run",
          "q2 Q0 d5 1 3.0 r\n"
          "q2 Q0 d3 2 2.0 r\n"
          "q1 Q0 d2 1 5.0 r\n"
          "q1 Q0 d3 2 1.0 r\n"
          "q1 Q0 d4 3 5.0 r\n"
          "q1 Q0 d1 4 7.0 r\n"
          "q3 Q0 d1 1 1.0 r\n"
          "q4 Q0 d1 1 1.0 r\n");
    auto v =
        pr::load_validation(*dir / "topics.tsv", *dir / "val.qrels", *dir / "val.run", *docs, 3);
    ASSERT_EQ(v.queries.size(), 2u);
    ASSERT_EQ(v.candidates.size(), 2u);
    EXPECT_EQ(v.queries[0].id, "q1");
    EXPECT_EQ(v.queries[0].text, "first query");
    EXPECT_EQ(v.queries[1].id, "q2");
    const auto& c1 = v.candidates[0].candidates;
    EXPECT_EQ(v.candidates[0].qid, "q1");
    ASSERT_EQ(c1.size(), 3u);
    EXPECT_EQ(c1[0].docid, "d1");
    EXPECT_EQ(c1[1].docid, "d4");
    EXPECT_EQ(c1[2].docid, "d2");
    EXPECT_EQ(c1[0].text, "alpha passage one");
    EXPECT_EQ(c1[1].text, "delta passage four");
    EXPECT_FLOAT_EQ(c1[0].score, 7.0f);
    ASSERT_EQ(c1[0].trace.size(), 1u);
    EXPECT_EQ(c1[0].trace[0].stage, "run");
    ASSERT_EQ(v.candidates[1].candidates.size(), 2u);
    EXPECT_EQ(v.candidates[1].candidates[0].docid, "d5");
    ASSERT_TRUE(v.qrels);
    EXPECT_NE(v.qrels->find("q1"), nullptr);

    auto one =
        pr::load_validation(*dir / "topics.tsv", *dir / "val.qrels", *dir / "val.run", *docs, 3, 1);
    ASSERT_EQ(one.queries.size(), 1u);
    EXPECT_EQ(one.queries[0].id, "q1");

    // A docid missing from the index within the depth names the run file and line; one
    // beyond the depth is never fetched.
    write(*dir / "missing.run", "q1 Q0 d1 1 3.0 r\nq1 Q0 dZ 2 2.0 r\nq1 Q0 dY 3 1.0 r\n");
    EXPECT_NO_THROW(pr::load_validation(*dir / "topics.tsv", *dir / "val.qrels",
                                        *dir / "missing.run", *docs, 1));
    try {
        pr::load_validation(*dir / "topics.tsv", *dir / "val.qrels", *dir / "missing.run", *docs,
                            2);
        FAIL();
    } catch (const ParseError& e) {
        EXPECT_EQ(e.line(), 2u);
        EXPECT_NE(std::string(e.what()).find("missing.run:2"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("dZ"), std::string::npos);
    }
}

// ------------------------------------------------------------------------------------------
// Qrels + run

class QrelsRunData : public ::testing::Test {
protected:
    void SetUp() override {
        std::unordered_map<std::string, std::string> m;
        for (int i = 1; i <= 10; ++i) m["d" + std::to_string(i)] = "text " + std::to_string(i);
        docs = std::make_shared<MapDocs>(std::move(m));
        write(dir / "topics.tsv", "q1\tquery one\nq2\tquery two\nq3\tquery three\n");
        // q1: d1 (1) and d2 (2) relevant, d3 judged 0, d4 judged -1 (not relevant).
        // q2: nothing relevant. q3: d7 relevant but it is its only run entry.
        write(dir / "q.qrels",
              "q1 0 d1 1\nq1 0 d2 2\nq1 0 d3 0\nq1 0 d4 -1\nq2 0 d5 0\n"
              "q3 0 d7 1\n");
        // q1 ranked by score: d2 9, d1 8, d3 7, d4 6, then d5 and d6 tie at 5 (docid
        // descending: d6 before d5), d7 4, ... Top-5 = d2 d1 d3 d4 d6 -> pool {d3, d4, d6}.
        write(dir / "r.run",
              "q1 Q0 d5 1 5 r\n"
              "q1 Q0 d9 2 2 r\n"
              "q1 Q0 d1 3 8 r\n"
              "q1 Q0 d6 4 5 r\n"
              "q1 Q0 d4 5 6 r\n"
              "q1 Q0 d2 6 9 r\n"
              "q1 Q0 d3 7 7 r\n"
              "q1 Q0 d7 8 4 r\n"
              "q1 Q0 d8 9 3 r\n"
              "q2 Q0 d5 1 1 r\n"
              "q3 Q0 d7 1 1 r\n");
    }
    std::unique_ptr<pr::ExampleSource> open(pr::QrelsSamplingOptions o) {
        return pr::open_qrels_run(dir / "topics.tsv", dir / "q.qrels", dir / "r.run", docs, o);
    }
    TempDir dir{"qrels"};
    std::shared_ptr<MapDocs> docs;
};

TEST_F(QrelsRunData, NegativesComeFromNonRelevantTopDepth) {
    pr::QrelsSamplingOptions o;
    o.depth = 5;
    o.negatives = 2;
    auto src = open(o);
    const std::set<std::string> pool = {"d3", "d4", "d6"};
    std::map<std::string, int> seen;
    for (std::uint64_t epoch = 0; epoch < 60; ++epoch) {
        src->rewind(epoch);
        std::vector<std::string> positives;
        while (auto ex = src->next()) {
            EXPECT_EQ(ex->qid, "q1");
            EXPECT_EQ(ex->query, "query one");
            positives.push_back(ex->positive_id);
            EXPECT_EQ(ex->positive, "text " + ex->positive_id.substr(1));
            ASSERT_EQ(ex->negative_ids.size(), 2u);
            ASSERT_EQ(ex->negatives.size(), 2u);
            EXPECT_NE(ex->negative_ids[0], ex->negative_ids[1]);  // without replacement
            for (std::size_t i = 0; i < 2; ++i) {
                EXPECT_TRUE(pool.count(ex->negative_ids[i])) << ex->negative_ids[i];
                EXPECT_EQ(ex->negatives[i], "text " + ex->negative_ids[i].substr(1));
                ++seen[ex->negative_ids[i]];
            }
        }
        // One example per relevant passage of q1, qrels order; q2 and q3 are left out.
        EXPECT_EQ(positives, (std::vector<std::string>{"d1", "d2"}));
    }
    // 60 epochs x 2 examples x 2 negatives = 240 draws over 3 passages: each about 80.
    ASSERT_EQ(seen.size(), 3u);
    for (const auto& [id, n] : seen) {
        EXPECT_GT(n, 50) << id;
        EXPECT_LT(n, 110) << id;
    }
    EXPECT_NE(src->describe().find("2 examples per epoch"), std::string::npos) << src->describe();
    EXPECT_NE(src->describe().find("1 topics without relevant"), std::string::npos);
    EXPECT_NE(src->describe().find("1 without negatives"), std::string::npos);
}

TEST_F(QrelsRunData, DeterministicPerSeedDifferentAcrossEpochs) {
    pr::QrelsSamplingOptions o;
    o.depth = 9;  // pool: d3 d4 d5 d6 d7 d8 d9
    o.negatives = 1;
    auto draw = [&](std::uint64_t seed, std::uint64_t epochs) {
        o.seed = seed;
        auto src = open(o);
        std::vector<std::string> out;
        for (std::uint64_t e = 0; e < epochs; ++e) {
            src->rewind(e);
            while (auto ex = src->next()) out.push_back(ex->negative_ids.at(0));
        }
        return out;
    };
    auto a = draw(3, 8);
    EXPECT_EQ(a, draw(3, 8));
    EXPECT_NE(a, draw(4, 8));
    // Not the same draws in every epoch (8 epochs x 2 examples from a pool of 7).
    std::set<std::vector<std::string>> per_epoch;
    for (std::size_t e = 0; e < 8; ++e) per_epoch.insert({a[2 * e], a[2 * e + 1]});
    EXPECT_GT(per_epoch.size(), 1u);
}

TEST_F(QrelsRunData, SmallPoolGivesAllItsPassages) {
    pr::QrelsSamplingOptions o;
    o.depth = 5;
    o.negatives = 10;
    auto src = open(o);
    auto ex = src->next();
    ASSERT_TRUE(ex);
    std::set<std::string> got(ex->negative_ids.begin(), ex->negative_ids.end());
    EXPECT_EQ(got, (std::set<std::string>{"d3", "d4", "d6"}));
    EXPECT_EQ(ex->negative_ids.size(), 3u);
    o.negatives = 0;
    EXPECT_THROW(open(o), plumb::InvalidArgument);
}

TEST_F(QrelsRunData, MissingPassageNamesRunLine) {
    docs = std::make_shared<MapDocs>(std::unordered_map<std::string, std::string>{
        {"d1", "a"}, {"d2", "b"}, {"d3", "c"}, {"d4", "d"}, {"d5", "e"}});
    pr::QrelsSamplingOptions o;
    o.depth = 5;
    o.negatives = 3;  // the whole pool {d3, d4, d6}: d6 (run line 4) is missing
    auto src = open(o);
    try {
        src->next();
        FAIL();
    } catch (const ParseError& e) {
        EXPECT_EQ(e.line(), 4u);
        EXPECT_NE(std::string(e.what()).find("r.run:4"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("'d6'"), std::string::npos);
    }
    o.skip_bad = true;
    auto skipping = open(o);
    auto ex = skipping->next();
    ASSERT_TRUE(ex);
    std::set<std::string> got(ex->negative_ids.begin(), ex->negative_ids.end());
    EXPECT_EQ(got, (std::set<std::string>{"d3", "d4"}));
}

// ------------------------------------------------------------------------------------------
// TrainingStream

TEST(TrainingStream, NoShuffleIsFileOrderOverEpochs) {
    TempDir dir("order");
    auto p = numbered_triples(dir, 10);
    pr::StreamOptions o;
    o.shuffle_buffer = 1;
    o.epochs = 3;
    pr::TrainingStream s(pr::open_text_triples(p), o);
    EXPECT_EQ(s.epoch(), 0u);
    std::vector<std::string> all;
    for (int e = 0; e < 3; ++e) {
        for (int i = 0; i < 10; ++i) {
            auto ex = s.next();
            ASSERT_TRUE(ex);
            all.push_back(ex->query);
            EXPECT_EQ(s.epoch(), static_cast<std::uint64_t>(e));
        }
    }
    EXPECT_FALSE(s.next());
    EXPECT_EQ(s.served(), 30u);
    std::vector<std::string> expected;
    for (int e = 0; e < 3; ++e) {
        auto f = file_order(10);
        expected.insert(expected.end(), f.begin(), f.end());
    }
    EXPECT_EQ(all, expected);
    // shuffle_buffer 0 is file order too.
    o.shuffle_buffer = 0;
    o.epochs = 1;
    pr::TrainingStream s0(pr::open_text_triples(p), o);
    EXPECT_EQ(queries_of(s0), file_order(10));
}

TEST(TrainingStream, ShuffleIsAPermutationPerEpochAndSeeded) {
    TempDir dir("shuffle");
    auto p = numbered_triples(dir, 10);
    auto run = [&](std::uint64_t seed) {
        pr::StreamOptions o;
        o.shuffle_buffer = 4;
        o.seed = seed;
        o.epochs = 3;
        pr::TrainingStream s(pr::open_text_triples(p), o);
        return queries_of(s);
    };
    auto a = run(7);
    ASSERT_EQ(a.size(), 30u);
    const auto order = file_order(10);
    bool any_shuffled = false;
    for (int e = 0; e < 3; ++e) {
        std::vector<std::string> epoch(a.begin() + 10 * e, a.begin() + 10 * (e + 1));
        any_shuffled = any_shuffled || epoch != order;
        std::sort(epoch.begin(), epoch.end());
        auto sorted = order;
        std::sort(sorted.begin(), sorted.end());
        EXPECT_EQ(epoch, sorted) << "epoch " << e;
    }
    EXPECT_TRUE(any_shuffled);
    EXPECT_EQ(a, run(7));
    EXPECT_NE(a, run(8));
    // A buffer of 4 delays an example by at most... nothing earlier than its buffer allows:
    // the first example served is one of the first four lines.
    std::set<std::string> first4 = {"q0", "q1", "q2", "q3"};
    EXPECT_TRUE(first4.count(a[0]));
}

TEST(TrainingStream, KeepFractionKeepsTheSameSubsetEveryEpoch) {
    TempDir dir("keep");
    auto p = numbered_triples(dir, 200);
    pr::StreamOptions o;
    o.shuffle_buffer = 16;
    o.keep_fraction = 0.2;
    o.epochs = 3;
    o.seed = 5;
    pr::TrainingStream s(pr::open_text_triples(p), o);
    std::vector<std::set<std::string>> kept(3);
    std::size_t total = 0;
    while (auto ex = s.next()) {
        ASSERT_LT(s.epoch(), 3u);
        EXPECT_TRUE(kept[s.epoch()].insert(ex->query).second) << "duplicate in an epoch";
        ++total;
    }
    EXPECT_EQ(kept[0], kept[1]);
    EXPECT_EQ(kept[1], kept[2]);
    EXPECT_EQ(total, 3 * kept[0].size());
    // 20 % of 200 = 40 expected; binomial sd ~5.7.
    EXPECT_GE(kept[0].size(), 22u);
    EXPECT_LE(kept[0].size(), 58u);
    // A different seed keeps a different subset.
    o.seed = 6;
    o.epochs = 1;
    pr::TrainingStream s2(pr::open_text_triples(p), o);
    auto other = queries_of(s2);
    EXPECT_NE(std::set<std::string>(other.begin(), other.end()), kept[0]);

    o.keep_fraction = 0.0;
    EXPECT_THROW(pr::TrainingStream(pr::open_text_triples(p), o), plumb::InvalidArgument);
    o.keep_fraction = 1.5;
    EXPECT_THROW(pr::TrainingStream(pr::open_text_triples(p), o), plumb::InvalidArgument);
    EXPECT_THROW(pr::TrainingStream(nullptr), plumb::InvalidArgument);
}

TEST(TrainingStream, SkipEqualsNextCalls) {
    TempDir dir("skip");
    auto p = numbered_triples(dir, 10);
    auto make = [&]() {
        pr::StreamOptions o;
        o.shuffle_buffer = 5;
        o.seed = 11;
        o.epochs = 4;
        o.keep_fraction = 0.9;
        o.passage_transform = pr::rotation_transform(3);
        o.query_transform = [](std::string_view t, std::uint64_t key) {
            return std::string(t) + "#" + std::to_string(key);
        };
        return pr::TrainingStream(pr::open_text_triples(p), o);
    };
    for (std::uint64_t n : {0u, 1u, 7u, 13u, 25u}) {
        auto a = make();
        auto b = make();
        a.skip(n);
        for (std::uint64_t i = 0; i < n; ++i) ASSERT_TRUE(b.next());
        EXPECT_EQ(a.served(), n);
        EXPECT_EQ(b.served(), n);
        EXPECT_EQ(a.epoch(), b.epoch());
        for (;;) {
            auto x = a.next();
            auto y = b.next();
            ASSERT_EQ(bool(x), bool(y));
            if (!x) break;
            EXPECT_EQ(x->query, y->query);
            EXPECT_EQ(x->positive, y->positive);
            EXPECT_EQ(x->negatives, y->negatives);
        }
        EXPECT_EQ(a.served(), b.served());
    }
}

TEST(TrainingStream, BatchesUnlimitedEpochsAndEmptySources) {
    TempDir dir("batch");
    auto p = numbered_triples(dir, 10);
    pr::StreamOptions o;
    o.shuffle_buffer = 1;
    pr::TrainingStream s(pr::open_text_triples(p), o);
    EXPECT_EQ(s.next_batch(4).size(), 4u);
    EXPECT_EQ(s.next_batch(4).size(), 4u);
    auto last = s.next_batch(4);
    ASSERT_EQ(last.size(), 2u);
    EXPECT_EQ(last[1].query, "q9");
    EXPECT_TRUE(s.next_batch(4).empty());

    o.epochs = 0;  // unlimited
    pr::TrainingStream forever(pr::open_text_triples(p), o);
    auto many = forever.next_batch(35);
    ASSERT_EQ(many.size(), 35u);
    EXPECT_EQ(many[34].query, "q4");
    EXPECT_EQ(forever.epoch(), 3u);

    auto empty = write(dir / "empty.tsv", "\n");
    pr::TrainingStream none(pr::open_text_triples(empty), o);  // epochs = 0: still ends
    EXPECT_FALSE(none.next());
}

TEST(TrainingStream, TransformKeysDependOnEpochExampleAndField) {
    TempDir dir("keys");
    auto p = write(dir / "t.tsv", "qa\tpa\tna1\tna2\nqb\tpb\tnb\nqc\tpc\tnc\n");
    auto tag = [](std::string_view t, std::uint64_t key) {
        return std::string(t) + "#" + std::to_string(key);
    };
    auto keys = [&](std::size_t buffer) {
        pr::StreamOptions o;
        o.shuffle_buffer = buffer;
        o.epochs = 2;
        o.query_transform = tag;
        o.passage_transform = tag;
        pr::TrainingStream s(pr::open_text_triples(p), o);
        std::map<std::pair<std::uint64_t, std::string>, pr::TrainingExample> out;
        while (auto ex = s.next()) {
            std::string q = ex->query.substr(0, 2);
            out[{s.epoch(), q}] = *ex;
        }
        return out;
    };
    auto plain = keys(1);
    auto shuffled = keys(3);
    ASSERT_EQ(plain.size(), 6u);
    for (const auto& [k, ex] : plain) {
        // The key of a field does not depend on the shuffle buffer.
        EXPECT_EQ(ex.query, shuffled.at(k).query);
        EXPECT_EQ(ex.positive, shuffled.at(k).positive);
        // Query, positive and negatives get different keys.
        auto key_of = [](const std::string& s) { return s.substr(s.find('#')); };
        EXPECT_NE(key_of(ex.query), key_of(ex.positive));
        EXPECT_NE(key_of(ex.positive), key_of(ex.negatives[0]));
    }
    EXPECT_NE(plain.at({0, "qa"}).negatives[0].substr(4),
              plain.at({0, "qa"}).negatives[1].substr(4));
    // The same example gets other keys in the next epoch.
    EXPECT_NE(plain.at({0, "qa"}).query, plain.at({1, "qa"}).query);
    EXPECT_EQ(plain.at({0, "qa"}).query.substr(0, 3), "qa#");
}

// ------------------------------------------------------------------------------------------
// Transforms

TEST(Transforms, RotationIsACyclicShiftAndReproducible) {
    const std::string text = "one two  three four five six seven";
    const std::vector<std::string> original = {"one",  "two", "three", "four",
                                               "five", "six", "seven"};
    auto rot = pr::rotation_transform(42);
    std::set<std::size_t> offsets;
    for (std::uint64_t key = 0; key < 40; ++key) {
        auto out = rot(text, key);
        EXPECT_EQ(out, rot(text, key));  // same key, same output
        auto toks = tokens(out);
        auto sorted_out = toks, sorted_in = original;
        std::sort(sorted_out.begin(), sorted_out.end());
        std::sort(sorted_in.begin(), sorted_in.end());
        EXPECT_EQ(sorted_out, sorted_in);  // multiset preserved
        std::size_t r = rotation_of(original, toks);
        EXPECT_GE(r, 1u) << out;
        offsets.insert(r);
        EXPECT_EQ(out.find("  "), std::string::npos);  // single spaces
    }
    EXPECT_GT(offsets.size(), 3u);  // keys (epochs, examples) give different offsets
    EXPECT_EQ(rot("", 5), "");
    EXPECT_EQ(rot("single", 5), "single");
    // Another seed gives another sequence of offsets.
    auto other = pr::rotation_transform(43);
    bool differs = false;
    for (std::uint64_t key = 0; key < 10; ++key)
        differs = differs || other(text, key) != rot(text, key);
    EXPECT_TRUE(differs);
}

TEST(Transforms, RotationInTheStreamDiffersAcrossEpochs) {
    TempDir dir("rot");
    auto p = write(dir / "t.tsv", "q\ta b c d e f g h\ti j k l m n o p\n");
    pr::StreamOptions o;
    o.epochs = 6;
    o.passage_transform = pr::rotation_transform(1);
    pr::TrainingStream s(pr::open_text_triples(p), o);
    std::set<std::string> positives;
    while (auto ex = s.next()) {
        EXPECT_EQ(ex->query, "q");  // queries untouched
        EXPECT_GE(rotation_of(tokens("a b c d e f g h"), tokens(ex->positive)), 1u);
        EXPECT_GE(rotation_of(tokens("i j k l m n o p"), tokens(ex->negatives.at(0))), 1u);
        positives.insert(ex->positive);
    }
    EXPECT_GT(positives.size(), 1u);
}

TEST(Transforms, RepeatNounPhrasesOnHandBuiltTrees) {
    using plumb::debias::parse_constituent_tree;
    // Link Grammar's parse of "how long to boil an egg".
    EXPECT_EQ(
        pr::repeat_noun_phrases(
            "How long to boil an egg?",
            parse_constituent_tree("(S {how} (ADVP long.e) to.r (VP boil.v (NP an egg.s)) ?)")),
        "How long to boil an egg? an egg?");
    // Nested NPs: only the lowest one is repeated.
    EXPECT_EQ(
        pr::repeat_noun_phrases(
            "what is the capital of France",
            parse_constituent_tree("(S what (S (VP is.v (NP the capital.s of (NP france.n)))))")),
        "what is the capital of France France");
    // Two NPs; extra whitespace in the query is normalised.
    EXPECT_EQ(pr::repeat_noun_phrases(
                  "  red apples and   green pears ",
                  parse_constituent_tree("(S (NP red.a apples.p) and (NP green.a pears.p))")),
              "red apples red apples and green pears green pears");
    // A spelling substitution ("rome" parsed as "roe") still aligns to its token.
    EXPECT_EQ(pr::repeat_noun_phrases(
                  "cheap flights to rome",
                  parse_constituent_tree("(S (ADVP cheap.e) flights.v {to} (NP roe.p))")),
              "cheap flights to rome rome");
    // No NP: unchanged (single spaces); a parse with more words than the text: unchanged.
    EXPECT_EQ(pr::repeat_noun_phrases("run  fast", parse_constituent_tree("(S (VP run.v fast.e))")),
              "run fast");
    EXPECT_EQ(pr::repeat_noun_phrases("a b", parse_constituent_tree("(S (NP a) b c d)")), "a b");
}

TEST(Transforms, RepeatNounPhrasesWithLinkGrammar) {
    auto t = pr::repeat_noun_phrases_transform();
    // Parses checked with Link Grammar 5.x's English dictionary:
    // (S {how} (ADVP long.e) to.r (VP boil.v (NP an egg.s))) and
    // (S what (S (VP is.v (NP the capital.s of (NP france.n))))).
    EXPECT_EQ(t("how long to boil an egg", 0), "how long to boil an egg an egg");
    EXPECT_EQ(t("how long to boil an egg", 99), "how long to boil an egg an egg");  // cached
    EXPECT_EQ(t("what is the capital of france", 0), "what is the capital of france france");
    EXPECT_EQ(t("", 0), "");
    // Copies share the parser and the cache.
    auto copy = t;
    EXPECT_EQ(copy("how long to boil an egg", 1), "how long to boil an egg an egg");
    // In a stream, only queries change.
    TempDir dir("np");
    auto p = write(dir / "t.tsv", "how long to boil an egg\tan egg\tthe egg\n");
    pr::StreamOptions o;
    o.query_transform = t;
    pr::TrainingStream s(pr::open_text_triples(p), o);
    auto ex = s.next();
    ASSERT_TRUE(ex);
    EXPECT_EQ(ex->query, "how long to boil an egg an egg");
    EXPECT_EQ(ex->positive, "an egg");
}
