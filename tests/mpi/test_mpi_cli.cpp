// `mpirun -n 2 plumb index / search` (MPI mode of the CLI): the on-disk result and the runs
// equal the single-process ones byte for byte; failures on one rank fail the job without a
// manifest. The reference for every comparison is the single index over the whole corpus (or
// the one-process `--shards N` build), never the MPI code's own output.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <string>

#include "tests/support/cli.hpp"
#include "tests/support/files.hpp"
#include "tests/support/temp_dir.hpp"

namespace fs = std::filesystem;

namespace {

/// `mpirun -n <ranks> --oversubscribe plumb <args>` (as root, e.g. in a CI container, with
/// Open MPI's explicit --allow-run-as-root).
int mpirun(int ranks, const std::string& args, const fs::path& log) {
    // (timeout: a hang in a collective fails the test instead of blocking ctest)
    const std::string launcher = "timeout 120 " + std::string(PLUMB_MPIEXEC) + " -n " + std::to_string(ranks) +
                                 " --oversubscribe" +
                                 (::geteuid() == 0 ? " --allow-run-as-root" : "");
    return plumb::test::run_plumb_launched(launcher, args, log);
}

std::string slurp(const fs::path& p) { return plumb::test::read_text(p); }

struct Corpus {
    plumb::test::TempDir dir{"plumb_mpi_cli"};
    std::string d = dir.path.string();
    fs::path log = dir.path / "log.txt";
    Corpus() {
        EXPECT_EQ(plumb::test::run_plumb_to(
                      "generate --output " + d + "/gen --passages 1500 --queries 25 --quiet", log),
                  0)
            << slurp(log);
        // Topics with a term absent from the collection.
        plumb::test::write_file(dir.path / "topics.tsv",
                                slurp(dir.path / "gen" / "topics.tsv") + "900\tnosuchword\n");
    }
    /// The single index `whole` over the corpus and `bm25.json`, a BM25 pipeline over it (call
    /// with ASSERT_NO_FATAL_FAILURE).
    void index_whole_with_pipeline() {
        ASSERT_EQ(plumb::test::run_plumb_to(
                      "index -c " + d + "/gen/corpus.tsv -i " + d + "/whole --quiet", log),
                  0)
            << slurp(log);
        plumb::test::write_file(
            dir.path / "bm25.json",
            R"({"first_stage": {"type": "bm25", "index": ")" + d + R"(/whole"}, "k": 10})");
    }
};

}  // namespace

TEST(MpiCli, IndexBuildsTheSameShardsAsOneProcess) {
    Corpus c;
    const auto& d = c.d;
    // `corpus` indexed as 3 shards by one process into `one` and by 2 ranks into `mpi` (rank 0
    // builds shard-000 and shard-002, rank 1 shard-001); false when either build failed.
    auto index_both = [&](const std::string& corpus, const std::string& one,
                          const std::string& mpi) {
        const std::string args =
            "index -c " + d + "/" + corpus + " --shards 3 --quiet -i " + d + "/";
        const int one_rc = plumb::test::run_plumb_to(args + one, c.log);
        EXPECT_EQ(one_rc, 0) << slurp(c.log);
        if (one_rc != 0) return false;
        const int mpi_rc = mpirun(2, args + mpi, c.log);
        EXPECT_EQ(mpi_rc, 0) << slurp(c.log);
        return mpi_rc == 0;
    };
    ASSERT_TRUE(index_both("gen/corpus.tsv", "one", "mpi"));
    const auto out = slurp(c.log);
    // Printed once (rank 0), with the one-process build's totals.
    EXPECT_EQ(out.find("indexed 1500 documents"), out.rfind("indexed 1500 documents")) << out;
    EXPECT_NE(out.find("as 3 shards"), std::string::npos) << out;
    EXPECT_EQ(slurp(c.dir.path / "one" / "plumb-shards.json"),
              slurp(c.dir.path / "mpi" / "plumb-shards.json"));
    for (const char* s : {"shard-000", "shard-001", "shard-002"}) {
        EXPECT_EQ(slurp(c.dir.path / "one" / s / "plumb-index.json"),
                  slurp(c.dir.path / "mpi" / s / "plumb-index.json"))
            << s;
    }
    // Split by bytes whatever the line ends: the corpus as JSONL with a BOM, CRLF line ends and
    // empty lines gives the one-process build's shards too.
    {
        const auto text = slurp(c.dir.path / "gen" / "corpus.tsv");
        std::string jsonl = "\xEF\xBB\xBF";
        std::size_t pos = 0, line = 0;
        while (pos < text.size()) {
            const auto end = text.find('\n', pos);
            const auto row = text.substr(pos, end - pos);
            const auto tab = row.find('\t');
            jsonl += R"({"_id": ")" + row.substr(0, tab) + R"(", "text": ")" + row.substr(tab + 1) +
                     "\"}\r\n";
            if (++line % 100 == 0) jsonl += "\r\n";
            pos = end + 1;
        }
        plumb::test::write_file(c.dir.path / "crlf.jsonl", jsonl);
        ASSERT_TRUE(index_both("crlf.jsonl", "one-j", "mpi-j"));
        EXPECT_EQ(slurp(c.dir.path / "one-j" / "plumb-shards.json"),
                  slurp(c.dir.path / "mpi-j" / "plumb-shards.json"));
        EXPECT_NE(slurp(c.dir.path / "mpi-j" / "plumb-shards.json").find("\"documents\": 1500"),
                  std::string::npos);
    }
    // Without --shards: one shard per rank; the stale shard-002 of the 3-shard build goes.
    ASSERT_EQ(mpirun(2, "index -c " + d + "/gen/corpus.tsv -i " + d + "/mpi --quiet", c.log), 0)
        << slurp(c.log);
    EXPECT_NE(slurp(c.log).find("as 2 shards"), std::string::npos) << slurp(c.log);
    EXPECT_TRUE(fs::exists(c.dir.path / "mpi" / "shard-001"));
    EXPECT_FALSE(fs::exists(c.dir.path / "mpi" / "shard-002"));
    // Fewer shards than ranks is refused, by every rank, before any work.
    EXPECT_NE(mpirun(2, "index -c " + d + "/gen/corpus.tsv -i " + d + "/x --shards 1 --quiet",
                     c.log),
              0);
    EXPECT_NE(slurp(c.log).find("2 MPI ranks for 1 shards"), std::string::npos) << slurp(c.log);
    EXPECT_FALSE(fs::exists(c.dir.path / "x" / "plumb-shards.json"));
}

TEST(MpiCli, IndexFailureOnOneRankLeavesNoManifest) {
    Corpus c;
    const auto& d = c.d;
    // The same id in the first and the last document: shard-000 (rank 0) and shard-001
    // (rank 1) of a 2-shard build each hold one; no rank sees both.
    const auto text = slurp(c.dir.path / "gen" / "corpus.tsv");
    const auto first_id = text.substr(0, text.find('\t'));
    plumb::test::write_file(c.dir.path / "dup.tsv", text + first_id + "\tanother passage\n");
    // A previous good build in the same place: its manifest must not survive the failed build.
    ASSERT_EQ(mpirun(2, "index -c " + d + "/gen/corpus.tsv -i " + d + "/ix --quiet", c.log), 0)
        << slurp(c.log);
    ASSERT_TRUE(fs::exists(c.dir.path / "ix" / "plumb-shards.json"));
    EXPECT_EQ(mpirun(2, "index -c " + d + "/dup.tsv -i " + d + "/ix --quiet", c.log), 1);
    const auto out = slurp(c.log);
    EXPECT_NE(out.find("duplicate document id '" + first_id + "' in shard-000 and shard-001"),
              std::string::npos)
        << out;
    EXPECT_FALSE(fs::exists(c.dir.path / "ix" / "plumb-shards.json"));
    // A malformed line (no tab) in the second shard's byte range: the rank building that shard
    // fails naming file and line (counted from the file's start, though the rank never read
    // the first range); no manifest.
    {
        std::string bad;
        std::size_t line = 0, pos = 0;
        while (pos < text.size()) {
            const auto end = text.find('\n', pos);
            ++line;
            bad += line == 1400 ? std::string("broken line without a tab")
                                : text.substr(pos, end - pos);
            bad += '\n';
            pos = end + 1;
        }
        plumb::test::write_file(c.dir.path / "bad.tsv", bad);
    }
    EXPECT_EQ(mpirun(2, "index -c " + d + "/bad.tsv -i " + d + "/ix --quiet", c.log), 1);
    EXPECT_NE(slurp(c.log).find("bad.tsv:1400"), std::string::npos) << slurp(c.log);
    EXPECT_FALSE(fs::exists(c.dir.path / "ix" / "plumb-shards.json"));
    // A corpus that does not exist: rank 0's error, reported once, exit status 1.
    EXPECT_EQ(mpirun(2, "index -c " + d + "/missing.tsv -i " + d + "/ix --quiet", c.log), 1);
    EXPECT_NE(slurp(c.log).find("rank 0: "), std::string::npos) << slurp(c.log);
    EXPECT_NE(slurp(c.log).find("missing.tsv"), std::string::npos) << slurp(c.log);
}

TEST(MpiCli, SearchRunsEqualTheSingleIndexRuns) {
    Corpus c;
    const auto& d = c.d;
    ASSERT_EQ(plumb::test::run_plumb_to("index -c " + d + "/gen/corpus.tsv -i " + d + "/whole --quiet",
                                        c.log),
              0)
        << slurp(c.log);
    ASSERT_EQ(mpirun(2, "index -c " + d + "/gen/corpus.tsv -i " + d + "/s2 --quiet", c.log), 0)
        << slurp(c.log);
    ASSERT_EQ(mpirun(2, "index -c " + d + "/gen/corpus.tsv -i " + d + "/s3 --shards 3 --quiet",
                     c.log),
              0)
        << slurp(c.log);
    for (const char* k : {"10", "1000"}) {
        for (const char* extra : {"", " --rm3", " --rm3 --threads 2"}) {
            SCOPED_TRACE(std::string("k=") + k + extra);
            const std::string opts = " --topics " + d + "/topics.tsv --k " + k + extra + " --quiet";
            ASSERT_EQ(plumb::test::run_plumb_to("search -i " + d + "/whole -o " + d + "/run.whole" + opts,
                                                c.log),
                      0)
                << slurp(c.log);
            const auto whole = slurp(c.dir.path / "run.whole");
            EXPECT_GT(whole.size(), 1000u);
            for (const char* ix : {"s2", "s3"}) {
                const auto out = d + "/run." + ix;
                ASSERT_EQ(mpirun(2, "search -i " + d + "/" + ix + " -o " + out + opts, c.log), 0)
                    << slurp(c.log);
                EXPECT_EQ(slurp(out), whole) << ix;
            }
            // 3 ranks over 3 shards: 26 queries merged and formatted in parts of 8, 9, 9.
            const auto out = d + "/run.r3";
            ASSERT_EQ(mpirun(3, "search -i " + d + "/s3 -o " + out + opts, c.log), 0)
                << slurp(c.log);
            EXPECT_EQ(slurp(out), whole) << "3 ranks";
        }
    }
    // More ranks than shards, and an unsharded index: errors, no run written.
    ASSERT_EQ(plumb::test::run_plumb_to(
                  "index -c " + d + "/gen/corpus.tsv -i " + d + "/s1 --shards 1 --quiet", c.log),
              0);
    EXPECT_EQ(mpirun(2, "search -i " + d + "/s1 --topics " + d + "/topics.tsv -o " + d +
                            "/run.x --quiet",
                     c.log),
              1);
    EXPECT_NE(slurp(c.log).find("2 MPI ranks for 1 shards"), std::string::npos) << slurp(c.log);
    EXPECT_EQ(mpirun(2, "search -i " + d + "/whole --topics " + d + "/topics.tsv -o " + d +
                            "/run.x --quiet",
                     c.log),
              1);
    EXPECT_NE(slurp(c.log).find("needs a sharded index"), std::string::npos) << slurp(c.log);
    EXPECT_FALSE(fs::exists(c.dir.path / "run.x"));
}

namespace {
std::size_t count_of(const std::string& text, const std::string& what) {
    std::size_t n = 0;
    for (auto p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
    return n;
}
}  // namespace

TEST(MpiCli, UsageErrorsPrintOnce) {
    Corpus c;
    const auto& d = c.d;
    // A bad option: every rank rejects the command line; rank 0 alone prints; status 2.
    EXPECT_EQ(mpirun(2,
                     "search --no-such-option -i " + d + "/x --topics " + d + "/topics.tsv -o " +
                         d + "/run.x",
                     c.log),
              2);
    auto out = slurp(c.log);
    EXPECT_EQ(count_of(out, "plumb: error:"), 1u) << out;
    EXPECT_NE(out.find("--no-such-option"), std::string::npos) << out;
    EXPECT_EQ(count_of(out, "for usage)"), 1u) << out;
    // A usage error the command raises on every rank (search --pipeline under mpirun).
    ASSERT_NO_FATAL_FAILURE(c.index_whole_with_pipeline());
    EXPECT_EQ(mpirun(2,
                     "search --pipeline " + d + "/bm25.json --topics " + d + "/topics.tsv -o " + d +
                         "/run.x --quiet",
                     c.log),
              2);
    out = slurp(c.log);
    EXPECT_EQ(count_of(out, "plumb: error:"), 1u) << out;
    EXPECT_NE(out.find("does not split its work across MPI ranks"), std::string::npos) << out;
    EXPECT_EQ(out.find("(MPI rank "), std::string::npos) << out;
    EXPECT_FALSE(fs::exists(c.dir.path / "run.x"));
    // --help: printed once.
    EXPECT_EQ(mpirun(2, "search --help", c.log), 0);
    EXPECT_EQ(count_of(slurp(c.log), "Usage:"), 1u) << slurp(c.log);
}

TEST(MpiCli, PipelineStatsPerRank) {
    if (!PLUMB_TEST_WITH_TORCH) GTEST_SKIP() << "plumb pipeline is in the LibTorch CLI module";
    Corpus c;
    const auto& d = c.d;
    ASSERT_NO_FATAL_FAILURE(c.index_whole_with_pipeline());
    // pipeline --stats: each rank's table, labelled with its queries (26 topics: 13 + 13).
    EXPECT_EQ(mpirun(2,
                     "pipeline --config " + d + "/bm25.json --topics " + d + "/topics.tsv -o " + d +
                         "/run.p --stats --quiet",
                     c.log),
              0)
        << slurp(c.log);
    const auto out = slurp(c.log);
    const auto r0 = out.find("MPI rank 0 of 2, queries 1-13 (13):");
    const auto r1 = out.find("MPI rank 1 of 2, queries 14-26 (13):");
    ASSERT_NE(r0, std::string::npos) << out;
    ASSERT_NE(r1, std::string::npos) << out;
    EXPECT_LT(r0, r1) << out;
    // Each table counts its rank's 13 queries for the first stage.
    for (auto at : {r0, r1}) {
        const auto table = out.substr(at, (at == r0 ? r1 : out.size()) - at);
        EXPECT_NE(table.find("stage"), std::string::npos) << table;
        EXPECT_EQ(count_of(table, "  13  "), 1u) << table;
    }
    ASSERT_EQ(plumb::test::run_plumb_to("pipeline --config " + d + "/bm25.json --topics " + d +
                                            "/topics.tsv -o " + d + "/run.p1 --quiet",
                                        c.log),
              0)
        << slurp(c.log);
    EXPECT_EQ(slurp(c.dir.path / "run.p"), slurp(c.dir.path / "run.p1"));
}
