// Index building, crash safety, analysis checks, pruning equivalence and concurrent search.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "bm25_test_util.hpp"
#include "index/bm25_searcher.hpp"
#include "index/detail/index_data.hpp"
#include "index/generator.hpp"
#include "index/index_builder.hpp"
#include "index/rm3.hpp"
#include "plugin/error.hpp"

namespace pi = plumb::index;
namespace fs = std::filesystem;
using plumb_test::TempDir;
using plumb_test::write_file;

namespace {

std::string numbered_corpus(int n, const std::string& word) {
    std::string s;
    for (int i = 0; i < n; ++i) s += "doc" + std::to_string(i) + "\t" + word + " text\n";
    return s;
}

/// Copies the index at `from` to `to` as an index of the previous layout: no postings.bin and
/// no "postings" entry in the metadata.
void copy_without_postings(const fs::path& from, const fs::path& to) {
    fs::copy(from, to, fs::copy_options::recursive);
    fs::remove(to / "postings.bin");
    auto meta = nlohmann::json::parse(plumb_test::slurp(to / "plumb-index.json"));
    meta.erase("postings");
    write_file(to / "plumb-index.json", meta.dump(2));
}

std::vector<fs::path> leftovers(const fs::path& parent) {
    std::vector<fs::path> out;
    for (const auto& e : fs::directory_iterator(parent)) {
        if (e.path().filename().string().find(".tmp-") != std::string::npos) {
            out.push_back(e.path());
        }
    }
    return out;
}

/// A generated corpus indexed once for the equivalence and concurrency tests.
class GeneratedIndex : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        dir = new TempDir("gen");
        pi::GeneratorConfig c;
        c.passages = 4000;
        c.queries = 60;
        c.vocab = 3000;
        c.seed = 7;
        auto col = pi::CorpusGenerator(c).write(dir->path / "col");
        topics = new std::vector<plumb::Query>(pi::read_topics(col.topics));
        corpus = col.corpus;
        pi::IndexBuildOptions o;
        o.threads = 2;
        pi::build_index(col.corpus, dir->path / "idx", o);
        searcher = pi::Bm25Searcher::open(dir->path / "idx");
    }
    static void TearDownTestSuite() {
        searcher.reset();
        delete topics;
        delete dir;
    }
    static TempDir* dir;
    static std::vector<plumb::Query>* topics;
    static fs::path corpus;
    static std::shared_ptr<const pi::Bm25Searcher> searcher;
};
TempDir* GeneratedIndex::dir = nullptr;
std::vector<plumb::Query>* GeneratedIndex::topics = nullptr;
fs::path GeneratedIndex::corpus;
std::shared_ptr<const pi::Bm25Searcher> GeneratedIndex::searcher;

void expect_same(const std::vector<pi::Hit>& a, const std::vector<pi::Hit>& b,
                 const std::string& what) {
    ASSERT_EQ(a.size(), b.size()) << what;
    for (std::size_t i = 0; i < a.size(); ++i) {
        ASSERT_EQ(a[i].doc, b[i].doc) << what << " rank " << i;
        ASSERT_EQ(a[i].score, b[i].score) << what << " rank " << i;  // bit-identical
    }
}

}  // namespace

TEST_F(GeneratedIndex, MaxScoreEqualsExhaustiveForEveryK) {
    pi::SearchOptions ex, ms, tp, au, bm;
    ex.algorithm = pi::SearchAlgorithm::Exhaustive;
    ms.algorithm = pi::SearchAlgorithm::MaxScore;
    tp.algorithm = pi::SearchAlgorithm::TaatMaxScore;
    bm.algorithm = pi::SearchAlgorithm::BlockMaxMaxScore;
    std::size_t nonempty = 0;
    for (const auto& q : *topics) {
        for (std::size_t k : {1, 3, 10, 100, 1000}) {
            auto a = searcher->search(q.text, k, ex);
            expect_same(a, searcher->search(q.text, k, ms),
                        q.id + " maxscore k=" + std::to_string(k));
            expect_same(a, searcher->search(q.text, k, tp), q.id + " taat k=" + std::to_string(k));
            expect_same(a, searcher->search(q.text, k, au), q.id + " auto k=" + std::to_string(k));
            expect_same(a, searcher->search(q.text, k, bm),
                        q.id + " block-max k=" + std::to_string(k));
            if (!a.empty()) ++nonempty;
        }
    }
    EXPECT_GT(nonempty, topics->size() * 4);
}

TEST_F(GeneratedIndex, OwnPostingsEqualLuceneTermDocsForEveryTerm) {
    const auto& d = searcher->index().data();
    ASSERT_TRUE(d.postings.loaded());
    ASSERT_EQ(d.term_index.size(), d.terms.size());
    ASSERT_GT(d.terms.size(), 1000u);
    std::vector<std::int32_t> docs(100), freqs(100);  // small blocks: exercise resumption
    auto ldocs = Lucene::Collection<int32_t>::newInstance(64);
    auto lfreqs = Lucene::Collection<int32_t>::newInstance(64);
    std::uint64_t total_tf = 0;
    for (const auto& [term, ordinal] : d.term_index) {
        const auto& e = d.terms[ordinal];
        std::vector<std::pair<std::int32_t, std::int32_t>> ours, lucene;
        auto r = d.postings.reader(ordinal, e.df);
        while (true) {
            auto n = r.read(docs.data(), freqs.data(), 100);
            if (n <= 0) break;
            for (int j = 0; j < n; ++j) ours.emplace_back(docs[j], freqs[j]);
        }
        auto td = d.segment->termDocs(
            Lucene::newLucene<Lucene::Term>(L"body", Lucene::StringUtils::toUnicode(term)));
        while (true) {
            auto n = td->read(ldocs, lfreqs);
            if (n <= 0) break;
            for (int j = 0; j < n; ++j) lucene.emplace_back(ldocs[j], lfreqs[j]);
        }
        td->close();
        ASSERT_EQ(ours, lucene) << term;
        ASSERT_EQ(ours.size(), static_cast<std::size_t>(e.df)) << term;
        for (const auto& p : ours) total_tf += static_cast<std::uint64_t>(p.second);
    }
    EXPECT_EQ(total_tf, searcher->index().info().total_length);
}

TEST_F(GeneratedIndex, IndexWithoutOwnPostingsSearchesThroughLuceneIdentically) {
    copy_without_postings(dir->path / "idx", dir->path / "old");
    auto old = pi::Bm25Searcher::open(dir->path / "old");
    ASSERT_FALSE(old->index().data().postings.loaded());
    for (auto alg : {pi::SearchAlgorithm::Exhaustive, pi::SearchAlgorithm::TaatMaxScore,
                     pi::SearchAlgorithm::MaxScore}) {
        pi::SearchOptions o;
        o.algorithm = alg;
        for (const auto& q : *topics) {
            for (std::size_t k : {10, 1000}) {
                expect_same(searcher->search(q.text, k, o), old->search(q.text, k, o),
                            q.id + " k=" + std::to_string(k));
            }
        }
    }
}

TEST_F(GeneratedIndex, MaxScoreEqualsExhaustiveWithOtherParamsAndWeights) {
    pi::SearchOptions ex, ms;
    ex.algorithm = pi::SearchAlgorithm::Exhaustive;
    ms.algorithm = pi::SearchAlgorithm::MaxScore;
    ex.bm25 = ms.bm25 = pi::Bm25Params{1.2f, 0.75f};
    for (const auto& q : *topics) {
        expect_same(searcher->search(q.text, 10, ex), searcher->search(q.text, 10, ms), q.id);
        // Long weighted queries (RM3-like): several frequent and rare words.
        auto terms = searcher->query_terms(q.text);
        auto fb = searcher->search_terms(terms, 10, ex);
        auto expanded = pi::rm3_expand(searcher->index(), terms, fb, {});
        expect_same(searcher->search_terms(expanded, 20, ex),
                    searcher->search_terms(expanded, 20, ms), q.id + " rm3");
        pi::SearchOptions bm = ms;
        bm.algorithm = pi::SearchAlgorithm::BlockMaxMaxScore;
        expect_same(searcher->search_terms(expanded, 20, ex),
                    searcher->search_terms(expanded, 20, bm), q.id + " rm3 block-max");
        expect_same(searcher->search(q.text, 10, ex), searcher->search(q.text, 10, bm),
                    q.id + " block-max params");
        pi::SearchOptions tp = ex;
        tp.algorithm = pi::SearchAlgorithm::TaatMaxScore;
        expect_same(searcher->search_terms(expanded, 5, ex),
                    searcher->search_terms(expanded, 5, tp), q.id + " rm3 taat");
        expect_same(searcher->search(q.text, 50, ex), searcher->search(q.text, 50, tp),
                    q.id + " taat params");
    }
}

TEST_F(GeneratedIndex, ExhaustiveMatchesNaiveReferenceScoring) {
    // Independent reference: analyse every passage, score every document in double precision
    // with the BM25 formula, rank by score then id.
    const auto& idx = searcher->index();
    const auto n = idx.size();
    std::vector<std::map<std::string, int>> tf(n);
    std::map<std::string, int> df;
    double total = 0;
    std::vector<double> len(n);
    for (std::uint32_t d = 0; d < n; ++d) {
        for (auto& t : idx.analyzer().analyze(idx.text_at(d))) tf[d][t]++;
        double l = 0;
        for (auto& [t, c] : tf[d]) {
            df[t]++;
            l += c;
        }
        len[d] = l;
        total += l;
    }
    const double avgdl = total / static_cast<double>(n), k1 = 0.9, b = 0.4;
    for (std::size_t qi = 0; qi < 15; ++qi) {
        const auto& q = (*topics)[qi];
        std::map<std::string, int> qtf;
        for (auto& t : idx.analyzer().analyze(q.text)) qtf[t]++;
        std::vector<std::pair<double, std::string>> ref;
        for (std::uint32_t d = 0; d < n; ++d) {
            double s = 0;
            for (auto& [t, c] : qtf) {
                auto it = tf[d].find(t);
                if (it == tf[d].end()) continue;
                double idf = std::log(1 + (n - df[t] + 0.5) / (df[t] + 0.5));
                s += c * idf * it->second * (k1 + 1) /
                     (it->second + k1 * (1 - b + b * len[d] / avgdl));
            }
            if (s > 0) ref.emplace_back(-s, std::string(idx.docid(d)));
        }
        std::sort(ref.begin(), ref.end());
        pi::SearchOptions ex;
        ex.algorithm = pi::SearchAlgorithm::Exhaustive;
        auto hits = searcher->search(q.text, 50, ex);
        ASSERT_EQ(hits.size(), std::min<std::size_t>(50, ref.size()));
        for (std::size_t i = 0; i < hits.size(); ++i) {
            EXPECT_NEAR(hits[i].score, -ref[i].first, 1e-4 * -ref[i].first) << q.id << " " << i;
            // Ids agree unless the reference has a near-tie at this rank.
            bool near_tie =
                (i > 0 && std::abs(ref[i].first - ref[i - 1].first) < 1e-5) ||
                (i + 1 < ref.size() && std::abs(ref[i].first - ref[i + 1].first) < 1e-5);
            if (!near_tie) {
                EXPECT_EQ(idx.docid(hits[i].doc), ref[i].second) << q.id << " " << i;
            }
        }
    }
}

TEST_F(GeneratedIndex, ConcurrentSearchGivesIdenticalResults) {
    std::span<const plumb::Query> qs(*topics);
    auto one = searcher->search_batch(qs, 100, {}, 1);
    auto four = searcher->search_batch(qs, 100, {}, 4);
    ASSERT_EQ(one.size(), four.size());
    for (std::size_t i = 0; i < one.size(); ++i) {
        ASSERT_EQ(one[i].qid, four[i].qid);
        ASSERT_EQ(one[i].candidates.size(), four[i].candidates.size());
        for (std::size_t j = 0; j < one[i].candidates.size(); ++j) {
            EXPECT_EQ(one[i].candidates[j].docid, four[i].candidates[j].docid);
            EXPECT_EQ(one[i].candidates[j].score, four[i].candidates[j].score);
        }
    }
    // Raw threads mixing algorithms, k and RM3 on the same searcher.
    std::atomic<int> mismatches{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
        threads.emplace_back([&, t] {
            pi::SearchOptions o;
            o.rm3 = (t % 2) == 1;
            for (std::size_t i = 0; i < qs.size(); ++i) {
                auto a = searcher->search(qs[i].text, t < 2 ? 10 : 1000, o);
                auto b = searcher->search(qs[i].text, t < 2 ? 10 : 1000, o);
                if (a.size() != b.size()) ++mismatches;
                for (std::size_t j = 0; j < std::min(a.size(), b.size()); ++j) {
                    if (a[j].doc != b[j].doc || a[j].score != b[j].score) ++mismatches;
                }
            }
        });
    }
    for (auto& th : threads) th.join();
    EXPECT_EQ(mismatches.load(), 0);
}

TEST_F(GeneratedIndex, Rm3ChangesTheQueryLikeAnserini) {
    const auto& q = (*topics)[0];
    auto terms = searcher->query_terms(q.text);
    auto fb = searcher->search_terms(terms, 10, {});
    ASSERT_FALSE(fb.empty());
    auto expanded = pi::rm3_expand(searcher->index(), terms, fb, {});
    // Weights: 0.5 * (original L1-normalised) + 0.5 * (relevance model L1-normalised): sum 1.
    double sum = 0;
    for (const auto& t : expanded) sum += t.weight;
    EXPECT_NEAR(sum, 1.0, 1e-4);
    EXPECT_LE(expanded.size(), terms.size() + 10);
    for (const auto& t : terms) {
        bool found = false;
        for (const auto& e : expanded) found |= e.term == t.term;
        EXPECT_TRUE(found) << t.term;
    }
    pi::SearchOptions o;
    o.rm3 = true;
    auto hits = searcher->search(q.text, 1000, o);
    EXPECT_FALSE(hits.empty());
}

TEST(IndexBuild, DuplicateIdIsAnErrorNamingFileAndLine) {
    TempDir dir("dup");
    auto c = write_file(dir / "c.tsv", "a\tone\nb\ttwo\na\tthree\n");
    try {
        pi::build_index(c, dir / "idx");
        FAIL() << "expected ParseError";
    } catch (const plumb::ParseError& e) {
        EXPECT_EQ(e.line(), 3u);
        EXPECT_NE(std::string(e.what()).find("c.tsv:3"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("'a'"), std::string::npos) << e.what();
    }
    EXPECT_FALSE(fs::exists(dir / "idx"));
    EXPECT_TRUE(leftovers(dir.path).empty());
}

TEST(IndexBuild, FailedRebuildKeepsThePreviousIndex) {
    TempDir dir("keep");
    pi::build_index(write_file(dir / "a.tsv", numbered_corpus(50, "alpha")), dir / "idx");
    // A later build fails half-way (duplicate id at line 301).
    auto bad = numbered_corpus(300, "beta") + "doc5\tbeta again\n";
    EXPECT_THROW(pi::build_index(write_file(dir / "b.tsv", bad), dir / "idx"), plumb::ParseError);
    auto s = pi::Bm25Searcher::open(dir / "idx");
    EXPECT_EQ(s->index().size(), 50u);
    EXPECT_EQ(s->search("alpha", 5).size(), 5u);
    EXPECT_TRUE(s->search("beta", 5).empty());
    EXPECT_TRUE(leftovers(dir.path).empty());
    // A successful rebuild replaces it.
    pi::build_index(write_file(dir / "c.tsv", numbered_corpus(70, "gamma")), dir / "idx");
    auto s2 = pi::Bm25Searcher::open(dir / "idx");
    EXPECT_EQ(s2->index().size(), 70u);
    EXPECT_TRUE(leftovers(dir.path).empty());
    // The already opened searcher keeps working on its files.
    EXPECT_EQ(s->search("alpha", 5).size(), 5u);
}

TEST(IndexBuild, CancelledBuildLeavesNothing) {
    TempDir dir("cancel");
    pi::build_index(write_file(dir / "a.tsv", numbered_corpus(20, "alpha")), dir / "idx");
    std::string big;
    for (int i = 0; i < 30000; ++i) big += "n" + std::to_string(i) + "\tsome words here\n";
    plumb::CancelToken cancel;
    cancel.request();
    EXPECT_THROW(pi::build_index(write_file(dir / "big.tsv", big), dir / "idx", {}, {}, &cancel),
                 plumb::Error);
    EXPECT_EQ(pi::PassageIndex::open(dir / "idx")->size(), 20u);
    EXPECT_TRUE(leftovers(dir.path).empty());
}

TEST(IndexBuild, KilledBuildNeverLeavesAnOpenableIndex) {
    TempDir dir("kill");
    pi::build_index(write_file(dir / "a.tsv", numbered_corpus(20, "alpha")), dir / "idx");
    std::string big;
    for (int i = 0; i < 40000; ++i) big += "n" + std::to_string(i) + "\tsome words here\n";
    auto corpus = write_file(dir / "big.tsv", big);
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        // Child: dies abruptly in the middle of the build (no cleanup, like a crash or kill -9).
        try {
            pi::build_index(corpus, dir / "idx", {}, [](std::uint64_t done, std::uint64_t) {
                if (done > 0) ::_exit(0);
            });
        } catch (...) {
        }
        ::_exit(1);
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFEXITED(status));
    ASSERT_EQ(WEXITSTATUS(status), 0) << "the child was expected to die mid-build";
    // The previous index is intact; the half-built temporary directory does not open.
    EXPECT_EQ(pi::PassageIndex::open(dir / "idx")->size(), 20u);
    auto left = leftovers(dir.path);
    ASSERT_EQ(left.size(), 1u);
    EXPECT_THROW(pi::PassageIndex::open(left[0]), plumb::IndexError);
}

TEST(IndexOpen, MissingCommitMarkerOrCorruptFilesAreIndexErrors) {
    TempDir dir("corrupt");
    pi::build_index(write_file(dir / "a.tsv", numbered_corpus(10, "alpha")), dir / "idx");
    EXPECT_THROW(pi::PassageIndex::open(dir / "nothing"), plumb::IndexError);
    fs::copy(dir / "idx", dir / "nomarker", fs::copy_options::recursive);
    fs::remove(dir / "nomarker" / "plumb-index.json");
    try {
        pi::PassageIndex::open(dir / "nomarker");
        FAIL();
    } catch (const plumb::IndexError& e) {
        EXPECT_NE(std::string(e.what()).find("plumb-index.json"), std::string::npos);
    }
    fs::copy(dir / "idx", dir / "trunc", fs::copy_options::recursive);
    fs::resize_file(dir / "trunc" / "doclen.u32", 8);
    EXPECT_THROW(pi::PassageIndex::open(dir / "trunc"), plumb::IndexError);
    fs::copy(dir / "idx", dir / "terms", fs::copy_options::recursive);
    fs::resize_file(dir / "terms" / "terms.bin", 20);
    EXPECT_THROW(pi::PassageIndex::open(dir / "terms"), plumb::IndexError);
    fs::copy(dir / "idx", dir / "version", fs::copy_options::recursive);
    write_file(dir / "version" / "plumb-index.json",
               "{\"format\": \"plumb-passage-index\", \"version\": 99}");
    EXPECT_THROW(pi::PassageIndex::open(dir / "version"), plumb::IndexError);
    // Refuses to replace a directory that is not an index.
    fs::create_directories(dir / "other");
    write_file(dir / "other" / "keep.txt", "precious");
    EXPECT_THROW(pi::build_index(dir / "a.tsv", dir / "other"), plumb::IndexError);
    EXPECT_TRUE(fs::exists(dir / "other" / "keep.txt"));
}

TEST(IndexOpen, TruncatedOrCorruptPostingsAreIndexErrors) {
    TempDir dir("postings");
    pi::build_index(write_file(dir / "a.tsv", numbered_corpus(10, "alpha")), dir / "idx");
    pi::SearchOptions ex;
    ex.algorithm = pi::SearchAlgorithm::Exhaustive;
    EXPECT_EQ(pi::Bm25Searcher::open(dir / "idx")->search("alpha", 1000, ex).size(), 10u);
    const auto size = fs::file_size(dir / "idx" / "postings.bin");
    // Truncated (by one byte, and to the header only).
    for (std::uintmax_t keep : {size - 1, std::uintmax_t{20}}) {
        fs::remove_all(dir / "trunc");
        fs::copy(dir / "idx", dir / "trunc", fs::copy_options::recursive);
        fs::resize_file(dir / "trunc" / "postings.bin", keep);
        EXPECT_THROW(pi::PassageIndex::open(dir / "trunc"), plumb::IndexError) << keep;
    }
    // Declared in the metadata but missing.
    fs::copy(dir / "idx", dir / "missing", fs::copy_options::recursive);
    fs::remove(dir / "missing" / "postings.bin");
    EXPECT_THROW(pi::PassageIndex::open(dir / "missing"), plumb::IndexError);
    // Postings data overwritten (structure intact): the search fails cleanly.
    fs::copy(dir / "idx", dir / "bad", fs::copy_options::recursive);
    {
        std::string bytes = plumb_test::slurp(dir / "bad" / "postings.bin");
        std::uint64_t table = 0;
        std::memcpy(&table, bytes.data() + 16, 8);
        ASSERT_GT(table, plumb::index::detail::kPostingsHeader);
        for (std::uint64_t i = plumb::index::detail::kPostingsHeader; i < table; ++i) {
            bytes[i] = '\xff';
        }
        write_file(dir / "bad" / "postings.bin", bytes);
    }
    auto bad = pi::Bm25Searcher::open(dir / "bad");
    EXPECT_THROW(bad->search("alpha", 1000, ex), plumb::IndexError);
    EXPECT_THROW(bad->search("text", 10), plumb::IndexError);
    pi::SearchOptions bm;
    bm.algorithm = pi::SearchAlgorithm::BlockMaxMaxScore;
    EXPECT_THROW(bad->search("alpha", 10, bm), plumb::IndexError);
    // An index of the previous layout (no postings.bin) opens and searches.
    copy_without_postings(dir / "idx", dir / "old");
    EXPECT_EQ(pi::Bm25Searcher::open(dir / "old")->search("alpha", 1000, ex).size(), 10u);
}

TEST(IndexOpen, AnalysisMismatchIsAClearError) {
    TempDir dir("mismatch");
    pi::IndexBuildOptions o;
    o.analysis.stem = false;
    pi::build_index(write_file(dir / "a.tsv", "x\trunning dogs\n"), dir / "idx", o);
    pi::IndexOpenOptions want;
    want.expect_analysis = pi::AnalysisOptions{};  // stemming
    try {
        pi::Bm25Searcher::open(dir / "idx", want);
        FAIL();
    } catch (const plumb::IndexError& e) {
        std::string m = e.what();
        EXPECT_NE(m.find("standard+lowercase+stop'"), std::string::npos) << m;
        EXPECT_NE(m.find("standard+lowercase+stop+porter"), std::string::npos) << m;
    }
    // The index's own analysis is used at query time: "running" matches only unstemmed.
    auto s = pi::Bm25Searcher::open(dir / "idx");
    EXPECT_EQ(s->search("running", 10).size(), 1u);
    EXPECT_TRUE(s->search("run", 10).empty());
}

TEST(IndexOpen, AnseriniAnalyzerIsRecordedCheckedAndUsedForQueries) {
    TempDir dir("anserini");
    auto corpus = write_file(dir / "c.tsv",
                             "d1\tAn 11-fold increase in caspase-3 activity\n"
                             "d2\tA 1.5-fold change of the dose\n"
                             "d3\tJohn's fold-out map of the old town\n"
                             "d4\tnothing relevant here\n");
    pi::IndexBuildOptions o;
    o.analysis.analyzer = pi::AnalyzerKind::Anserini;
    pi::build_index(corpus, dir / "new", o);
    pi::build_index(corpus, dir / "old", pi::IndexBuildOptions{});  // lucene3 (default)

    // Recorded in the metadata: the analysis name and the analyzer.
    auto meta = nlohmann::json::parse(plumb_test::slurp(dir / "new" / "plumb-index.json"));
    EXPECT_EQ(meta.at("analysis"), "uax29+possessive+lowercase+stop+porter");
    EXPECT_EQ(meta.at("analyzer"), "anserini");
    auto s = pi::Bm25Searcher::open(dir / "new");
    EXPECT_EQ(s->index().info().analysis.analyzer, pi::AnalyzerKind::Anserini);
    // d1: 11 fold increas caspas 3 activ (Porter: caspase -> caspas, activity -> activ);
    // d2: 1.5 fold chang dose; d3: john fold out map old town; d4: noth relev here.
    EXPECT_EQ(s->index().doc_length(0), 6u);
    EXPECT_EQ(s->index().doc_length(1), 4u);
    EXPECT_EQ(s->index().doc_length(2), 6u);

    // Queries go through the same analyzer: "fold" is a token of d1, d2 and d3 only with it.
    std::set<std::string> found;
    for (const auto& h : s->search("FOLD", 10)) found.insert(std::string(s->index().docid(h.doc)));
    EXPECT_EQ(found, (std::set<std::string>{"d1", "d2", "d3"}));
    auto fold_old = pi::Bm25Searcher::open(dir / "old")->search("fold", 10);
    ASSERT_EQ(fold_old.size(), 1u);  // lucene3: "11-fold", "1.5-fold" stay whole (d3 splits)
    auto hits = s->search("John's 1.5-fold", 10);
    ASSERT_EQ(hits.size(), 3u);
    // d2 and d3 match two query terms each (df 1 and df 3), d2 is shorter; d1 only "fold".
    EXPECT_EQ(s->index().docid(hits[0].doc), "d2");
    EXPECT_EQ(s->index().docid(hits[1].doc), "d3");
    pi::SearchOptions rm3;
    rm3.rm3 = true;
    EXPECT_EQ(s->search("caspase", 10, rm3).front().doc, 0u);  // RM3 feedback analysed alike

    // Opening it as the other analyzer is refused by the analysis check, and vice versa.
    pi::IndexOpenOptions want_lucene3;
    want_lucene3.expect_analysis = pi::AnalysisOptions{};
    try {
        pi::Bm25Searcher::open(dir / "new", want_lucene3);
        FAIL();
    } catch (const plumb::IndexError& e) {
        std::string m = e.what();
        EXPECT_NE(m.find("uax29+possessive+lowercase+stop+porter"), std::string::npos) << m;
        EXPECT_NE(m.find("standard+lowercase+stop+porter"), std::string::npos) << m;
    }
    pi::IndexOpenOptions want_anserini;
    want_anserini.expect_analysis = o.analysis;
    EXPECT_NO_THROW(pi::Bm25Searcher::open(dir / "new", want_anserini));
    EXPECT_THROW(pi::Bm25Searcher::open(dir / "old", want_anserini), plumb::IndexError);

    // Indexes written before "analyzer" existed open as lucene3; a contradicting value is an
    // error naming the metadata file.
    auto old_meta = nlohmann::json::parse(plumb_test::slurp(dir / "old" / "plumb-index.json"));
    EXPECT_EQ(old_meta.at("analyzer"), "lucene3");
    old_meta.erase("analyzer");
    write_file(dir / "old" / "plumb-index.json", old_meta.dump(2));
    EXPECT_EQ(pi::Bm25Searcher::open(dir / "old")->index().info().analysis, pi::AnalysisOptions{});
    old_meta["analyzer"] = "anserini";
    write_file(dir / "old" / "plumb-index.json", old_meta.dump(2));
    try {
        pi::Bm25Searcher::open(dir / "old");
        FAIL();
    } catch (const plumb::IndexError& e) {
        std::string m = e.what();
        EXPECT_NE(m.find("plumb-index.json"), std::string::npos) << m;
        EXPECT_NE(m.find("contradicts"), std::string::npos) << m;
    }
}

TEST(IndexBuild, EmptyCorpusAndEmptyPassages) {
    TempDir dir("empty");
    // An empty corpus is an error naming the file (issue 15: it used to give an empty index
    // with exit 0), and leaves nothing behind ...
    try {
        pi::build_index(write_file(dir / "e.tsv", "\n\n"), dir / "idx");
        ADD_FAILURE() << "an empty corpus was accepted";
    } catch (const plumb::ParseError& e) {
        EXPECT_NE(std::string(e.what()).find("e.tsv"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("no documents"), std::string::npos) << e.what();
    }
    EXPECT_FALSE(fs::exists(dir / "idx"));
    // ... unless asked for.
    pi::IndexBuildOptions allow;
    allow.allow_empty = true;
    pi::build_index(write_file(dir / "e.tsv", ""), dir / "idx", allow);
    auto s = pi::Bm25Searcher::open(dir / "idx");
    EXPECT_EQ(s->index().size(), 0u);
    EXPECT_TRUE(s->search("anything", 10).empty());
    pi::build_index(write_file(dir / "p.tsv", "a\t\nb\tthe\nc\treal word\n"), dir / "idx2");
    auto s2 = pi::Bm25Searcher::open(dir / "idx2");
    EXPECT_EQ(s2->index().size(), 3u);
    EXPECT_EQ(s2->index().doc_length(0), 0u);
    EXPECT_EQ(s2->index().doc_length(1), 0u);  // only a stop word
    EXPECT_EQ(s2->index().info().total_length, 2u);
    EXPECT_EQ(s2->search("word", 10).size(), 1u);
}

TEST(IndexBuild, SkipBadCountsMalformedLines) {
    TempDir dir("skip");
    auto c = write_file(dir / "c.tsv", "a\tone\nno tab here\nb\ttwo\n");
    EXPECT_THROW(pi::build_index(c, dir / "idx"), plumb::ParseError);
    pi::IndexBuildOptions o;
    o.skip_bad = true;
    // 1 bad line of 3 is more than the default 10 % --skip-bad tolerates ...
    EXPECT_THROW(pi::build_index(c, dir / "idx", o), plumb::ParseError);
    EXPECT_FALSE(fs::exists(dir / "idx"));
    // ... and fine with a larger share.
    o.max_bad_share = 0.5;
    auto st = pi::build_index(c, dir / "idx", o);
    EXPECT_EQ(st.documents, 2u);
    EXPECT_EQ(st.skipped, 1u);
}

TEST_F(GeneratedIndex, LuceneNormsPrunedEqualsExhaustive) {
    pi::SearchOptions ex, ms, tp;
    ex.algorithm = pi::SearchAlgorithm::Exhaustive;
    ms.algorithm = pi::SearchAlgorithm::MaxScore;
    tp.algorithm = pi::SearchAlgorithm::TaatMaxScore;
    pi::SearchOptions bm;
    bm.algorithm = pi::SearchAlgorithm::BlockMaxMaxScore;
    ex.bm25.lucene_norms = ms.bm25.lucene_norms = tp.bm25.lucene_norms = true;
    bm.bm25.lucene_norms = true;
    for (const auto& q : *topics) {
        for (std::size_t k : {1, 10, 100}) {
            auto a = searcher->search(q.text, k, ex);
            expect_same(a, searcher->search(q.text, k, ms), q.id + " lucene maxscore");
            expect_same(a, searcher->search(q.text, k, tp), q.id + " lucene taat");
            expect_same(a, searcher->search(q.text, k, bm), q.id + " lucene block-max");
        }
    }
}
