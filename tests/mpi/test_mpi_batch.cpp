// `mpirun -n 2 plumb rerank / pipeline / encode`: the queries (or the collection's chunks) are
// partitioned across the ranks and gathered into the output one process writes. The reference
// of every comparison is the single-process command on the same input (and, for the pipeline
// over a sharded index, the pipeline over one index of the whole corpus).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <algorithm>
#include <set>
#include <string>

#include "tests/support/cli.hpp"
#include "tests/support/files.hpp"
#include "tests/support/temp_dir.hpp"

namespace fs = std::filesystem;

namespace {

const fs::path kRef = fs::path(PLUMB_SOURCE_DIR) / "tests/rerank/reference";

int mpirun(int ranks, const std::string& args, const fs::path& log) {
    const std::string launcher = "timeout 300 " + std::string(PLUMB_MPIEXEC) + " -n " +
                                 std::to_string(ranks) + " --oversubscribe" +
                                 (::geteuid() == 0 ? " --allow-run-as-root" : "");
    return plumb::test::run_plumb_launched(launcher, args, log);
}

int run1(const std::string& args, const fs::path& log) {
    return plumb::test::run_plumb_to(args, log);
}

std::string slurp(const fs::path& p) { return plumb::test::read_text(p); }

struct Collection {
    plumb::test::TempDir dir{"plumb_mpi_batch"};
    std::string d = dir.path.string();
    fs::path log = dir.path / "log.txt";
    Collection() {
        EXPECT_EQ(run1("generate --output " + d + "/gen --passages 400 --queries 30 --quiet", log), 0)
            << slurp(log);
    }
};

}  // namespace

TEST(MpiBatch, RerankAndPipelineRunsEqualOneProcess) {
    Collection c;
    const auto& d = c.d;
    const std::string corpus = d + "/gen/corpus.tsv", topics = d + "/gen/topics.tsv";
    ASSERT_EQ(run1("index -c " + corpus + " -i " + d + "/whole --quiet", c.log), 0) << slurp(c.log);
    ASSERT_EQ(run1("index -c " + corpus + " -i " + d + "/sharded --shards 2 --quiet", c.log), 0)
        << slurp(c.log);
    ASSERT_EQ(run1("search -i " + d + "/whole --topics " + topics + " -o " + d +
                       "/bm25.run --k 20 --quiet",
                   c.log),
              0)
        << slurp(c.log);
    const std::string model = (kRef / "tiny_bert_cat1").string();
    const std::string rerank = " --topics " + topics + " --run " + d + "/bm25.run --model " +
                               model + " --type cat --depth 5 --batch 4 --threads 1 --quiet -o ";
    ASSERT_EQ(run1("rerank --index " + d + "/whole" + rerank + d + "/one.run", c.log), 0)
        << slurp(c.log);
    const auto one = slurp(c.dir.path / "one.run");
    const auto bm25 = slurp(c.dir.path / "bm25.run");
    EXPECT_GT(std::count(one.begin(), one.end(), '\n'), 400);
    EXPECT_EQ(std::count(one.begin(), one.end(), '\n'), std::count(bm25.begin(), bm25.end(), '\n'));
    EXPECT_NE(one, bm25);
    // 30 queries in groups of 8 over 2 ranks: queries 0-15 on rank 0, 16-29 on rank 1.
    ASSERT_EQ(mpirun(2, "rerank --index " + d + "/whole" + rerank + d + "/mpi.run", c.log), 0)
        << slurp(c.log);
    EXPECT_NE(slurp(c.log).find("re-ranked 30 queries (150 pairs"), std::string::npos)
        << slurp(c.log);
    EXPECT_EQ(slurp(c.dir.path / "mpi.run"), one);
    // Passage texts from a sharded index (ShardedDocuments).
    ASSERT_EQ(run1("rerank --index " + d + "/sharded" + rerank + d + "/sh.run", c.log), 0)
        << slurp(c.log);
    EXPECT_EQ(slurp(c.dir.path / "sh.run"), one);

    // A pipeline whose BM25 first stage is a sharded index (Bm25Retriever over
    // ShardedSearcher), in one process and on 2 ranks, against the pipeline over one index.
    auto config = [&](const std::string& index) {
        return R"({"first_stage": {"type": "bm25", "index": ")" + index +
               R"(", "rm3": true}, "rerank": [{"type": "cat", "model": ")" + model +
               R"(", "depth": 5, "batch_size": 4, "threads": 1}], "k": 20})";
    };
    plumb::test::write_file(c.dir.path / "whole.json", config(d + "/whole"));
    plumb::test::write_file(c.dir.path / "sharded.json", config(d + "/sharded"));
    const std::string p = " --topics " + topics + " --quiet -o ";
    ASSERT_EQ(run1("pipeline --config " + d + "/whole.json" + p + d + "/p_whole.run", c.log), 0)
        << slurp(c.log);
    const auto whole = slurp(c.dir.path / "p_whole.run");
    EXPECT_GT(std::count(whole.begin(), whole.end(), '\n'), 400);
    ASSERT_EQ(run1("pipeline --config " + d + "/sharded.json" + p + d + "/p_sh.run", c.log), 0)
        << slurp(c.log);
    EXPECT_EQ(slurp(c.dir.path / "p_sh.run"), whole);
    ASSERT_EQ(mpirun(2, "pipeline --config " + d + "/sharded.json" + p + d + "/p_mpi.run", c.log),
              0)
        << slurp(c.log);
    EXPECT_EQ(slurp(c.dir.path / "p_mpi.run"), whole);
    // A model folder that does not exist: every rank fails to open it; the error is reported
    // once (with each rank's message), exit status 1, no run written.
    EXPECT_EQ(mpirun(2, "rerank --index " + d + "/whole --topics " + topics + " --run " + d +
                            "/bm25.run --model " + d + "/nomodel --type cat --quiet -o " + d +
                            "/bad.run",
                     c.log),
              1);
    EXPECT_NE(slurp(c.log).find("rank 0: "), std::string::npos) << slurp(c.log);
    EXPECT_FALSE(fs::exists(c.dir.path / "bad.run"));
}

TEST(MpiBatch, EncodeWritesTheSameVectorFolder) {
    Collection c;
    const auto& d = c.d;
    // 400 passages in chunks of 64: 7 chunks, chunk c encoded by rank c mod 2.
    const std::string args = "encode --corpus " + d + "/gen/corpus.tsv --model " +
                             (kRef / "tiny_bert_base").string() +
                             " --chunk 64 --batch 16 --threads 1 --quiet --output ";
    ASSERT_EQ(run1(args + d + "/one", c.log), 0) << slurp(c.log);
    ASSERT_EQ(mpirun(2, args + d + "/mpi", c.log), 0) << slurp(c.log);
    EXPECT_NE(slurp(c.log).find("encoded 400 passages (0 from an earlier run)"), std::string::npos)
        << slurp(c.log);
    std::set<std::string> names;
    for (const auto& e : fs::directory_iterator(c.dir.path / "one")) {
        names.insert(e.path().filename().string());
    }
    for (const auto& e : fs::directory_iterator(c.dir.path / "mpi")) {
        EXPECT_TRUE(names.count(e.path().filename().string())) << e.path();
    }
    EXPECT_TRUE(names.count("chunk-000006.vec"));
    EXPECT_TRUE(names.count("index.faiss"));
    for (const auto& n : names) {
        EXPECT_EQ(slurp(c.dir.path / "one" / n), slurp(c.dir.path / "mpi" / n)) << n;
    }
    // Run again: resumes, nothing left to encode.
    ASSERT_EQ(mpirun(2, args + d + "/mpi --no-index", c.log), 0) << slurp(c.log);
    EXPECT_NE(slurp(c.log).find("(400 from an earlier run)"), std::string::npos) << slurp(c.log);
}
