// plumb::mpi::ShardedSearch (the library behind `mpirun plumb search`), run by ctest under
// `mpirun -n 2 --oversubscribe`: search_batch (rank 0), search_part (each rank's part of the
// queries) and search_run (the run text rank 0 writes) against the one-process ShardedSearcher
// over the same 3 shards (itself checked byte for byte against one index over the whole corpus
// in tests/index/test_sharding.cpp), for BM25 and BM25 + RM3, with batches smaller than the
// number of ranks (a rank with no query) and larger.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "index/index_builder.hpp"
#include "index/shard_builder.hpp"
#include "index/shard_manifest.hpp"
#include "index/sharded_searcher.hpp"
#include "mpi/comm.hpp"
#include "mpi/sharded_search.hpp"
#include "plugin/text_io.hpp"
#include "plugin/trec_run.hpp"

namespace fs = std::filesystem;
using plumb::mpi::Comm;

namespace {

std::string run_text(const std::vector<plumb::RankedList>& lists) {
    std::string out;
    for (const auto& l : lists) out += plumb::format_trec_run(l, "t");
    return out;
}

/// A directory every rank sees (named by rank 0's pid), removed by rank 0 at the end.
struct SharedDir {
    Comm w = Comm::world();
    fs::path path;
    SharedDir() {
        const std::string name = w.broadcast(
            w.rank() == 0 ? "plumb_mpi_search_" + std::to_string(::getpid()) : std::string());
        path = fs::temp_directory_path() / name;
    }
    ~SharedDir() {
        w.barrier();
        if (w.rank() == 0) fs::remove_all(path);
    }
};

/// 240 passages over 30 words (word i in passage d when (d * 7 + i * 3) % (i + 2) == 0), with
/// ids not in corpus order, built as 3 shards by rank 0.
void build(const Comm& w, const fs::path& dir) {
    w.collective([&] {
        if (w.rank() != 0) return;
        fs::create_directories(dir);
        std::ofstream c(dir / "corpus.tsv");
        for (int d = 0; d < 240; ++d) {
            c << "p" << (d * 37) % 240 << '\t';
            for (int i = 0; i < 30; ++i) {
                if ((d * 7 + i * 3) % (i + 2) == 0) c << "word" << i << ' ';
            }
            c << "common\n";
        }
        c.close();
        plumb::index::build_shards(dir / "corpus.tsv", dir / "ix", 3);
    });
}

}  // namespace

TEST(MpiShardedSearch, BatchPartAndRunEqualOneProcessOverTheShards) {
    SharedDir shared;
    const auto& w = shared.w;
    build(w, shared.path);
    const auto ix = shared.path / "ix";
    const std::vector<plumb::Query> queries{
        {"1", "word3 word5"}, {"2", "common"}, {"3", "word0 word29 common"},
        {"4", "nosuchword"},  {"5", ""},       {"6", "word7 word7 word11"},
        {"7", "word1 word2"}};
    const auto one = plumb::index::ShardedSearcher::open(ix);
    plumb::mpi::ShardedSearch dist(w, ix);
    for (bool rm3 : {false, true}) {
        for (std::size_t k : {std::size_t{5}, std::size_t{50}}) {
            SCOPED_TRACE("rm3 " + std::to_string(rm3) + " k " + std::to_string(k));
            plumb::index::SearchOptions o;
            o.rm3 = rm3;
            o.rm3_params.fb_docs = 3;
            const auto want = one->search_batch(queries, k, o);
            ASSERT_GT(run_text(want).size(), 100u);
            // search_batch: everything on rank 0, nothing elsewhere.
            const auto batch = dist.search_batch(queries, k, o);
            if (w.rank() == 0) {
                EXPECT_EQ(run_text(batch), run_text(want));
            } else {
                EXPECT_TRUE(batch.empty());
            }
            // search_part: queries [first, first + count) of partition().
            const auto part = dist.search_part(queries, k, o);
            const auto p = plumb::mpi::partition(queries.size(), w.rank(), w.size());
            ASSERT_EQ(part.size(), p.count);
            EXPECT_EQ(run_text(part),
                      run_text({want.begin() + static_cast<std::ptrdiff_t>(p.first),
                                want.begin() + static_cast<std::ptrdiff_t>(p.first + p.count)}));
            // search_run: batches of 1 (one rank without a query), 3 and all; 1 and 2 threads
            // (the run lines formatted in one buffer or per query).
            for (std::size_t b : {std::size_t{1}, std::size_t{3}, std::size_t{100}})
            for (unsigned threads : {1u, 2u}) {
                const auto file = shared.path / ("run." + std::to_string(b));
                std::optional<plumb::AtomicFile> out;
                if (w.rank() == 0) out.emplace(file);
                const auto lines =
                    dist.search_run(queries, k, o, "t", out ? &*out : nullptr, threads, b);
                std::size_t expected = 0;
                for (const auto& l : want) expected += l.candidates.size();
                EXPECT_EQ(lines, expected) << "batch " << b;
                if (out) out->commit();
                w.barrier();
                std::ifstream in(file);
                std::stringstream text;
                text << in.rdbuf();
                EXPECT_EQ(text.str(), run_text(want)) << "batch " << b;
            }
        }
    }
}

// The owner's merge of the ranks' lists (views into the received bytes) against
// index::merge_topk (a full sort of every hit) on random lists with many ties: 1 to 3 lists
// (the linear scan over the heads) and 12 (the heap).
TEST(MpiShardedSearch, MergeHitsEqualsMergeTopk) {
    std::mt19937 rng(16);
    for (std::size_t lists : {std::size_t{1}, std::size_t{2}, std::size_t{3}, std::size_t{12}}) {
        for (std::size_t k : {std::size_t{1}, std::size_t{7}, std::size_t{60}}) {
            SCOPED_TRACE("lists " + std::to_string(lists) + " k " + std::to_string(k));
            std::vector<std::vector<plumb::index::ShardHit>> per(lists);
            std::uniform_int_distribution<int> score(0, 9);  // few values: many ties
            std::uniform_int_distribution<int> len(0, 30);
            int id = 0;
            for (auto& l : per) {
                const int n = len(rng);
                for (int i = 0; i < n; ++i) {
                    // ids of different lengths and orders ("d10" < "d9" byte-wise)
                    l.push_back({"d" + std::to_string((id++ * 7919) % 1000),
                                 static_cast<float>(score(rng)) / 4.0f, 0, 0});
                }
                std::sort(l.begin(), l.end(), plumb::index::shard_hit_before);
            }
            const auto want = plumb::index::merge_topk(per, k);
            std::vector<std::vector<plumb::mpi::detail::MergedHit>> views(lists);
            for (std::size_t l = 0; l < lists; ++l) {
                for (const auto& h : per[l]) views[l].push_back({h.score, 0, 0, h.docid});
            }
            std::vector<plumb::mpi::detail::MergedHit> got{{-1.0f, 0, 0, "before"}};
            plumb::mpi::detail::merge_hits(views, k, got);
            ASSERT_EQ(got.size(), want.size() + 1);
            EXPECT_EQ(got[0].id, "before");  // appended, not replaced
            for (std::size_t i = 0; i < want.size(); ++i) {
                EXPECT_EQ(got[i + 1].id, want[i].docid) << i;
                EXPECT_EQ(got[i + 1].score, want[i].score) << i;
            }
        }
    }
    // The same hit on two lists (a document in two shards) is an error.
    std::vector<std::vector<plumb::mpi::detail::MergedHit>> dup{{{2.0f, 0, 0, "a"}},
                                                                {{2.0f, 0, 0, "a"}}};
    std::vector<plumb::mpi::detail::MergedHit> out;
    EXPECT_THROW(plumb::mpi::detail::merge_hits(dup, 5, out), plumb::Error);
}

// A document in two shards (a manifest put together by hand: both shard builders reject it)
// makes the merge of the query that finds it on both ranks fail on every rank, and the error
// names that query by id and by its number in the caller's topics (query 4, in the second batch
// of 2, merged by rank 1), not by its place in a batch.
TEST(MpiShardedSearch, DocumentInTwoShardsNamesTheQuery) {
    SharedDir shared;
    const auto& w = shared.w;
    const auto ix = shared.path / "ix";
    w.collective([&] {
        if (w.rank() != 0) return;
        fs::create_directories(ix);
        const std::string corpora[2] = {"a1\talpha beta\ndup\tgamma delta\n",
                                        "b1\talpha\ndup\tgamma delta\n"};
        plumb::index::ShardManifest manifest;
        for (int i = 0; i < 2; ++i) {
            const auto corpus = shared.path / ("corpus" + std::to_string(i) + ".tsv");
            std::ofstream(corpus) << corpora[i];
            const std::string name = "shard-00" + std::to_string(i);
            const auto built = plumb::index::build_index(corpus, ix / name);
            manifest.shards.push_back({name, built.documents, built.total_length});
        }
        manifest.write(ix);
    });
    plumb::mpi::ShardedSearch dist(w, ix);
    const std::vector<plumb::Query> queries{
        {"q1", "alpha"}, {"q2", "beta"}, {"q3", "nosuchword"}, {"q4", "gamma"}};
    const std::string want =
        "rank 1: MPI: query 'q4' (query 4 of the topics): document id 'dup' comes from two ranks";
    std::optional<plumb::AtomicFile> out;
    if (w.rank() == 0) out.emplace(shared.path / "run");
    try {
        dist.search_run(queries, 10, {}, "t", out ? &*out : nullptr, 1, 2);
        ADD_FAILURE() << "no error";
    } catch (const plumb::mpi::CollectiveError& e) {
        EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
    }
    try {
        dist.search_batch(queries, 10);
        ADD_FAILURE() << "no error";
    } catch (const plumb::mpi::CollectiveError& e) {
        EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
    }
    // Without the query that finds the document twice, the same shards search normally.
    const auto fine = dist.search_batch(std::span(queries).first(3), 10);
    if (w.rank() == 0) {
        ASSERT_EQ(fine.size(), 3u);
        EXPECT_EQ(fine[0].candidates.size(), 2u);  // a1 and b1
    }
}

int main(int argc, char** argv) {
    plumb::mpi::Session session(&argc, &argv);
    ::testing::InitGoogleTest(&argc, argv);
    return RUN_ALL_TESTS();
}
