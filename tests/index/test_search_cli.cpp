// CLI smoke test: plumb index + plumb search on a tiny corpus, checking the run file.
#include <gtest/gtest.h>

#include <sstream>

#include "bm25_test_util.hpp"

using plumb_test::slurp;
using plumb_test::TempDir;
using plumb_test::write_file;

namespace {
int run(const std::string& args, const plumb_test::fs::path& log) {
    std::string cmd = std::string(PLUMB_CLI_PATH) + " " + args + " >" + log.string() + " 2>&1";
    int rc = std::system(cmd.c_str());
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}
std::vector<std::vector<std::string>> lines_of(const std::string& text) {
    std::vector<std::vector<std::string>> out;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
        std::istringstream ls(line);
        std::vector<std::string> f;
        std::string w;
        while (ls >> w) f.push_back(w);
        out.push_back(f);
    }
    return out;
}
}  // namespace

TEST(SearchCli, IndexAndSearchTinyCorpus) {
    TempDir dir("cli");
    write_file(dir / "c.tsv",
               "p1\tThe cat sat on the mat\n"
               "p2\tDogs chase cats in the garden\n"
               "p3\tA garden of roses\n"
               "p4\t\n");
    write_file(dir / "q.tsv", "q1\tcats\nq2\tgarden roses\nq3\tc++? AND \"\nq4\t\n");
    auto log = dir / "log.txt";
    ASSERT_EQ(run("index --corpus " + (dir / "c.tsv").string() + " --index " +
                      (dir / "idx").string() + " --threads 2 --quiet",
                  log),
              0)
        << slurp(log);
    EXPECT_NE(slurp(log).find("indexed 4 documents"), std::string::npos) << slurp(log);
    ASSERT_EQ(run("search --index " + (dir / "idx").string() + " --topics " +
                      (dir / "q.tsv").string() + " --output " + (dir / "run.txt").string() +
                      " --k 2 --tag t1 --quiet",
                  log),
              0)
        << slurp(log);
    auto lines = lines_of(slurp(dir / "run.txt"));
    // q1 "cats" -> cat (Porter): p1 and p2 match; q2: p3 has both words, p2 only garden.
    ASSERT_EQ(lines.size(), 4u);
    for (const auto& f : lines) {
        ASSERT_EQ(f.size(), 6u);
        EXPECT_EQ(f[1], "Q0");
        EXPECT_EQ(f[5], "t1");
    }
    EXPECT_EQ(lines[0][0], "q1");
    EXPECT_EQ(lines[0][3], "1");
    EXPECT_EQ(lines[1][3], "2");
    EXPECT_EQ(lines[2][0], "q2");
    EXPECT_EQ(lines[2][2], "p3");
    EXPECT_EQ(lines[3][2], "p2");
    EXPECT_GT(std::stod(lines[2][4]), std::stod(lines[3][4]));

    // RM3 and explicit parameters run too.
    ASSERT_EQ(run("search --index " + (dir / "idx").string() + " --topics " +
                      (dir / "q.tsv").string() + " --output " + (dir / "rm3.txt").string() +
                      " --rm3 --bm25.k1 1.2 --bm25.b 0.75 --threads 2 --quiet",
                  log),
              0)
        << slurp(log);
    EXPECT_FALSE(slurp(dir / "rm3.txt").empty());

    // Mismatching analysis request and missing index are clear errors (exit 1).
    EXPECT_EQ(run("search --index " + (dir / "idx").string() + " --topics " +
                      (dir / "q.tsv").string() + " --output " + (dir / "x.txt").string() +
                      " --no-stem --quiet",
                  log),
              1);
    EXPECT_NE(slurp(log).find("plumb: error:"), std::string::npos);
    EXPECT_NE(slurp(log).find("analysis"), std::string::npos) << slurp(log);
    EXPECT_EQ(run("search --index " + (dir / "nope").string() + " --topics " +
                      (dir / "q.tsv").string() + " --output " + (dir / "x.txt").string(),
                  log),
              1);
    EXPECT_NE(slurp(log).find("no committed plumb index"), std::string::npos) << slurp(log);

    // Duplicate ids: error naming file and line.
    write_file(dir / "dup.tsv", "a\tx\na\ty\n");
    EXPECT_EQ(run("index --corpus " + (dir / "dup.tsv").string() + " --index " +
                      (dir / "idx2").string() + " --quiet",
                  log),
              1);
    EXPECT_NE(slurp(log).find("dup.tsv:2"), std::string::npos) << slurp(log);
}

TEST(SearchCli, AnseriniAnalyzerOption) {
    TempDir dir("cli-anserini");
    write_file(dir / "c.tsv",
               "p1\tAn 11-fold increase\n"
               "p2\tA 1.5-fold change\n"
               "p3\tNothing here\n");
    write_file(dir / "q.tsv", "q1\tfold\n");
    auto log = dir / "log.txt";
    const std::string idx = (dir / "idx").string();
    ASSERT_EQ(run("index --corpus " + (dir / "c.tsv").string() + " --index " + idx +
                      " --analyzer anserini --quiet",
                  log),
              0)
        << slurp(log);
    EXPECT_NE(slurp(log).find("uax29+possessive+lowercase+stop+porter"), std::string::npos)
        << slurp(log);
    const std::string search = "search --index " + idx + " --topics " +
                               (dir / "q.tsv").string() + " --output " +
                               (dir / "run.txt").string() + " --quiet";
    ASSERT_EQ(run(search, log), 0) << slurp(log);
    // "fold" is a token of p1 and p2 only when "11-fold" / "1.5-fold" are split.
    auto lines = lines_of(slurp(dir / "run.txt"));
    ASSERT_EQ(lines.size(), 2u);
    EXPECT_NE(lines[0][2], "p3");
    EXPECT_NE(lines[1][2], "p3");
    EXPECT_EQ(run(search + " --analyzer anserini", log), 0) << slurp(log);
    // Requiring the other analyzer (or an unknown one) is an error.
    EXPECT_EQ(run(search + " --analyzer lucene3", log), 1);
    EXPECT_NE(slurp(log).find("was built with analysis"), std::string::npos) << slurp(log);
    EXPECT_EQ(run(search + " --no-stem", log), 1);
    EXPECT_NE(slurp(log).find("uax29+possessive+lowercase+stop'"), std::string::npos)
        << slurp(log);
    EXPECT_NE(run("index --corpus " + (dir / "c.tsv").string() + " --index " + idx +
                      "2 --analyzer lucene9 --quiet",
                  log),
              0);
    EXPECT_NE(slurp(log).find("lucene9"), std::string::npos) << slurp(log);
}

// `plumb index --shards N` + `plumb search` over the manifest: the run files are byte-identical
// to the single index's (BM25 and BM25 + RM3, k = 10 and 1000); a broken manifest is an error.
TEST(SearchCli, ShardedRunsAreByteIdentical) {
    TempDir dir("cli_shards");
    auto log = dir / "log.txt";
    const std::string d = dir.path.string();
    ASSERT_EQ(run("generate --output " + d + "/gen --passages 1500 --queries 25 --quiet", log), 0)
        << slurp(log);
    // Topics with terms absent from the collection and from single shards too.
    write_file(dir / "extra.tsv", slurp(dir / "gen" / "topics.tsv") + "900\tnosuchword\n");
    ASSERT_EQ(run("index -c " + d + "/gen/corpus.tsv -i " + d + "/whole --quiet", log), 0)
        << slurp(log);
    for (const char* n : {"2", "3"}) {
        ASSERT_EQ(run("index -c " + d + "/gen/corpus.tsv -i " + d + "/s" + n + " --shards " + n +
                          " --quiet",
                      log),
                  0)
            << slurp(log);
        EXPECT_NE(slurp(log).find(std::string("as ") + n + " shards"), std::string::npos);
    }
    for (const char* k : {"10", "1000"}) {
        for (const char* extra : {"", " --rm3"}) {
            std::string runs[3];
            const char* ix[3] = {"whole", "s2", "s3"};
            for (int i = 0; i < 3; ++i) {
                auto out = d + "/run." + ix[i];
                ASSERT_EQ(run("search -i " + d + "/" + ix[i] + " --topics " + d + "/extra.tsv -o " +
                                  out + " --k " + k + extra + " --quiet",
                              log),
                          0)
                    << slurp(log);
                runs[i] = slurp(out);
            }
            SCOPED_TRACE(std::string("k=") + k + extra);
            EXPECT_GT(runs[0].size(), 1000u);
            EXPECT_EQ(runs[0], runs[1]);
            EXPECT_EQ(runs[0], runs[2]);
        }
    }
    // Rebuilt with fewer shards: the stale shard-002 is removed once the new manifest is in
    // place (a non-shard directory beside it stays).
    ASSERT_EQ(run("index -c " + d + "/gen/corpus.tsv -i " + d + "/s3b --shards 3 --quiet", log), 0);
    ASSERT_TRUE(plumb_test::fs::exists(dir / "s3b" / "shard-002"));
    plumb_test::fs::create_directories(dir / "s3b" / "shard-notes");
    ASSERT_EQ(run("index -c " + d + "/gen/corpus.tsv -i " + d + "/s3b --shards 2 --quiet", log), 0)
        << slurp(log);
    EXPECT_FALSE(plumb_test::fs::exists(dir / "s3b" / "shard-002"));
    EXPECT_TRUE(plumb_test::fs::exists(dir / "s3b" / "shard-001" / "plumb-index.json"));
    EXPECT_TRUE(plumb_test::fs::exists(dir / "s3b" / "shard-notes"));
    // A manifest naming a missing shard.
    plumb_test::fs::rename(dir / "s3" / "shard-002", dir / "gone");
    EXPECT_NE(
        run("search -i " + d + "/s3 --topics " + d + "/extra.tsv -o " + d + "/x --quiet", log), 0);
    EXPECT_NE(slurp(log).find("shard 2 ('shard-002') is missing"), std::string::npos) << slurp(log);
}

TEST(SearchCli, IntraQueryParallelismGivesTheSameRun) {
    // --intra-query-parts with 2 threads: queries split (after 0 ms at k = 10; every exhaustive
    // query at k = 1000 with a postings threshold of 1), the stderr line counts the splits, and
    // the run is byte-identical to the 1-thread run without splitting. Bad values are usage
    // errors (exit 2).
    TempDir dir("cli-intra");
    std::string corpus, topics;
    std::uint32_t x = 12345;
    auto next = [&x] { return x = x * 1103515245u + 12345u, (x >> 16) % 30; };
    for (int d = 0; d < 5000; ++d) {
        corpus += "d" + std::to_string(d) + "\t";
        const int len = 3 + static_cast<int>(next() % 20);
        for (int w = 0; w < len; ++w) corpus += "word" + std::to_string(next()) + "x ";
        corpus += "\n";
    }
    for (int q = 0; q < 40; ++q) {
        topics += "q" + std::to_string(q) + "\t";
        for (int w = 0; w < 3; ++w) topics += "word" + std::to_string(next()) + "x ";
        topics += "\n";
    }
    write_file(dir / "c.tsv", corpus);
    write_file(dir / "q.tsv", topics);
    auto log = dir / "log.txt";
    ASSERT_EQ(run("index --corpus " + (dir / "c.tsv").string() + " --index " +
                      (dir / "idx").string() + " --quiet",
                  log),
              0)
        << slurp(log);
    const std::string base = "search --index " + (dir / "idx").string() + " --topics " +
                             (dir / "q.tsv").string() + " --quiet --output ";
    for (const char* k : {"10", "1000"}) {
        const auto one = dir / (std::string("one") + k), two = dir / (std::string("two") + k);
        ASSERT_EQ(run(base + one.string() + " --k " + k, log), 0) << slurp(log);
        EXPECT_EQ(slurp(log).find("intra-query"), std::string::npos) << slurp(log);
        ASSERT_EQ(run(base + two.string() + " --k " + k +
                          " --threads 2 --intra-query-parts 4 --intra-query-after-ms 0 "
                          "--intra-query-lend-ms 1000 --intra-query-exhaustive-postings 1",
                      log),
                  0)
            << slurp(log);
        // Every query has a term in the index: all 40 split.
        EXPECT_NE(slurp(log).find("intra-query parallelism: 40 queries split"), std::string::npos)
            << k << ": " << slurp(log);
        EXPECT_FALSE(slurp(one).empty());
        EXPECT_EQ(slurp(one), slurp(two)) << k;
    }
    for (const char* bad : {"--intra-query-parts 5000", "--intra-query-parts -1",
                            "--intra-query-after-ms -1",
                            "--intra-query-lend-ms x", "--intra-query-exhaustive-postings -3"}) {
        EXPECT_EQ(run(base + (dir / "bad.txt").string() + " " + bad, log), 2) << bad;
        EXPECT_FALSE(plumb_test::fs::exists(dir / "bad.txt")) << bad;
    }
}
