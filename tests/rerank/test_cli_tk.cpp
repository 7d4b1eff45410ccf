// CLI smoke tests of `plumb tk-init`, `plumb tk-vectors` and `plumb tk-cache`.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "plugin/text_io.hpp"
#include "rerank/tk_cache.hpp"
#include "rerank/tk_model.hpp"
#include "tests/rerank/fixtures.hpp"
#include "tests/support/cli.hpp"
#include "tests/support/temp_dir.hpp"

namespace fs = std::filesystem;
using namespace plumb::rerank;
using plumb::test::write_text;

namespace {

/// A scratch folder (tests/support/temp_dir.hpp) with this file's name prefix.
struct TempDir : plumb::test::TempDir {
    TempDir() : plumb::test::TempDir("plumb_test_cli_tk") {}
};

/// `plumb <args>` with its output in `log` (tests/support/cli.hpp).
constexpr auto& run = plumb::test::run_plumb_to;

}  // namespace

TEST(CliTk, InitThenVectors) {
    TempDir t;
    // "The" duplicates "the" once lower-cased: 1 duplicate, 3 words.
    write_text(t.path / "glove.txt",
               "the 0.1 0.2 0.3 0.4\ncat 1 0 0 0\nsat 0 1 0 0\nThe 9 9 9 9\n");
    const auto model = t.path / "model";
    ASSERT_EQ(
        run("tk-init --embeddings " + (t.path / "glove.txt").string() + " --output " +
                model.string() + " --layers 1 --heads 2 --head-dim 0 --ff-dim 3 --quiet --seed 3",
            t.path / "init.log"),
        0)
        << plumb::read_file(t.path / "init.log");
    EXPECT_NE(plumb::read_file(t.path / "init.log").find("3 words (1 duplicates skipped), 4-d"),
              std::string::npos)
        << plumb::read_file(t.path / "init.log");
    auto m = TkModel::load(model);
    EXPECT_EQ(m.vocabulary().size(), 5);
    EXPECT_EQ(m.vocabulary().id("cat"), 3);
    EXPECT_EQ(m.config().embedding_dim, 4);
    EXPECT_EQ(m.config().layers, 1);
    EXPECT_EQ(m.config().attention_dim(), 4);
    EXPECT_NE(plumb::read_file(model / "config.json").find("\"plumb-tk\""), std::string::npos);

    write_text(t.path / "corpus.tsv", "d1\tThe cat, sat!\nd2\tdog\n");
    ASSERT_EQ(run("tk-vectors --model " + model.string() + " --corpus " +
                      (t.path / "corpus.tsv").string() + " --output " +
                      (t.path / "vec.tsv").string() + " --quiet",
                  t.path / "vec.log"),
              0)
        << plumb::read_file(t.path / "vec.log");
    std::ifstream in(t.path / "vec.tsv");
    std::vector<std::string> lines;
    for (std::string l; std::getline(in, l);) lines.push_back(l);
    ASSERT_EQ(lines.size(), 4u);  // the, cat, sat, dog (OOV)
    auto expected = m.passage_vectors("The cat, sat!");
    for (std::size_t k = 0; k < 3; ++k) {
        std::vector<std::string_view> f;
        plumb::split(lines[k], '\t', f);
        ASSERT_EQ(f.size(), 4u);
        EXPECT_EQ(f[0], "d1");
        EXPECT_EQ(f[1], std::to_string(k));
        EXPECT_EQ(f[2], expected.terms[k]);
        std::istringstream vs{std::string(f[3])};
        for (std::size_t j = 0; j < 4; ++j) {
            double v = 0;
            ASSERT_TRUE(vs >> v);
            EXPECT_NEAR(v, expected.row(k)[j], 1e-4);
        }
    }
    EXPECT_EQ(lines[3].substr(0, 9), "d2\t0\tdog\t");
}

TEST(CliTk, BadEmbeddingsFileNamesLine) {
    TempDir t;
    write_text(t.path / "bad.txt", "a 1 2 3\nb 1 2\n");
    EXPECT_EQ(run("tk-init --embeddings " + (t.path / "bad.txt").string() + " --output " +
                      (t.path / "m").string() + " --heads 1 --head-dim 0 --quiet",
                  t.path / "log"),
              1);
    EXPECT_NE(plumb::read_file(t.path / "log").find("bad.txt:2"), std::string::npos)
        << plumb::read_file(t.path / "log");
    EXPECT_FALSE(fs::exists(t.path / "m" / "config.json"));
    // 3-d embeddings cannot be split into 2 heads without --head-dim.
    write_text(t.path / "ok.txt", "a 1 2 3\n");
    EXPECT_EQ(run("tk-init --embeddings " + (t.path / "ok.txt").string() + " --output " +
                      (t.path / "m").string() + " --heads 2 --head-dim 0 --quiet",
                  t.path / "log2"),
              1);
    EXPECT_NE(plumb::read_file(t.path / "log2").find("divisible"), std::string::npos);
    // A model folder that does not exist.
    EXPECT_EQ(run("tk-vectors --model " + (t.path / "none").string() + " --corpus " +
                      (t.path / "ok.txt").string() + " --output " + (t.path / "v").string(),
                  t.path / "log3"),
              1);
}

TEST(CliTk, Word2VecBinaryEmbeddings) {
    // The C tool's binary layout: "count dim\n", then "word " + dim float32 (LE) + "\n".
    TempDir t;
    std::string bin = "2 4\n";
    const std::vector<std::pair<std::string, std::vector<float>>> rows = {
        {"cat", {1, 0, 0, 0}}, {"sat", {0, 1, 0.5f, -2}}};
    for (const auto& [word, values] : rows) {
        bin += word + " ";
        bin.append(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
        bin += "\n";
    }
    write_text(t.path / "vectors.bin", bin);
    for (const char* format : {"auto", "word2vec", "word2vec-binary"}) {
        const auto model = t.path / (std::string("m_") + format);
        ASSERT_EQ(run("tk-init --embeddings " + (t.path / "vectors.bin").string() + " --input-format " +
                          format + " --output " + model.string() +
                          " --layers 1 --heads 2 --head-dim 0 --ff-dim 3 --quiet",
                      t.path / "init.log"),
                  0)
            << plumb::read_file(t.path / "init.log");
        EXPECT_NE(plumb::read_file(t.path / "init.log").find("2 words (0 duplicates skipped), 4-d"),
                  std::string::npos)
            << plumb::read_file(t.path / "init.log");
        EXPECT_EQ(TkModel::load(model).vocabulary().id("sat"), 3);
    }
    // Forced text reading of the binary file fails naming the file.
    EXPECT_EQ(run("tk-init --embeddings " + (t.path / "vectors.bin").string() +
                      " --input-format word2vec-text --output " + (t.path / "m").string() +
                      " --heads 1 --head-dim 0 --quiet",
                  t.path / "log"),
              1);
    EXPECT_NE(plumb::read_file(t.path / "log").find("vectors.bin:2"), std::string::npos)
        << plumb::read_file(t.path / "log");
}

TEST(CliTk, CacheThenRerankUsesIt) {
    TempDir t;
    write_text(t.path / "glove.txt", "the 0.1 0.2 0.3 0.4\ncat 1 0 0 0\nsat 0 1 0 0\ndog 0 0 1 1\n");
    const auto model = t.path / "model";
    ASSERT_EQ(run("tk-init --embeddings " + (t.path / "glove.txt").string() + " --output " +
                      model.string() + " --layers 1 --heads 2 --head-dim 0 --ff-dim 3 --quiet",
                  t.path / "init.log"),
              0)
        << plumb::read_file(t.path / "init.log");
    write_text(t.path / "corpus.tsv", "d1\tThe cat, sat!\nd2\tdog\nd3\tcat dog the\n");
    // Default output: the model folder's passage-cache-<checksum>.plumbtkc.
    ASSERT_EQ(run("tk-cache --model " + model.string() + " --corpus " +
                      (t.path / "corpus.tsv").string() + " --quiet --threads 1",
                  t.path / "cache.log"),
              0)
        << plumb::read_file(t.path / "cache.log");
    EXPECT_NE(plumb::read_file(t.path / "cache.log").find("3 passages (0 from an earlier run), 7 terms"),
              std::string::npos)
        << plumb::read_file(t.path / "cache.log");
    auto m = TkModel::load(model);
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(m.checksum()));
    const auto cache_file = model / ("passage-cache-" + std::string(hex) + ".plumbtkc");
    EXPECT_TRUE(fs::exists(cache_file));
    // Both sources at once: a usage error.
    EXPECT_NE(run("tk-cache --model " + model.string() + " --corpus " +
                      (t.path / "corpus.tsv").string() + " --index " + t.path.string() +
                      " --output " + (t.path / "x.plumbtkc").string() + " --quiet",
                  t.path / "both.log"),
              0);
    EXPECT_FALSE(fs::exists(t.path / "x.plumbtkc"));

    // rerank with the automatic cache, an explicit one, and none: the same run.
    write_text(t.path / "topics.tsv", "q1\tcat sat\n");
    write_text(t.path / "in.run", "q1 Q0 d2 1 3.0 bm25\nq1 Q0 d3 2 2.0 bm25\nq1 Q0 d1 3 1.0 bm25\n");
    std::vector<std::string> runs;
    for (const std::string& opt :
         {std::string(), std::string(" --tk-cache none"), " --tk-cache " + cache_file.string()}) {
        const auto out = t.path / ("out" + std::to_string(runs.size()) + ".run");
        ASSERT_EQ(run("rerank --corpus " + (t.path / "corpus.tsv").string() + " --topics " +
                          (t.path / "topics.tsv").string() + " --run " +
                          (t.path / "in.run").string() + " --model " + model.string() +
                          " --type tk --depth 3 --quiet --output " + out.string() + opt,
                      t.path / "rerank.log"),
                  0)
            << plumb::read_file(t.path / "rerank.log");
        runs.push_back(plumb::read_file(out));
    }
    // Ranks and docids equal (scores agree to fp16 rounding, printed to 4+ digits).
    auto docids = [](const std::string& r) {
        std::string ids;
        std::istringstream in(r);
        for (std::string q, q0, d, rank, s, tag; in >> q >> q0 >> d >> rank >> s >> tag;) {
            ids += d + rank + " ";
        }
        return ids;
    };
    EXPECT_EQ(docids(runs[0]), docids(runs[1]));
    EXPECT_EQ(docids(runs[2]), docids(runs[1]));
    // An int8 cache (--precision int8): the same ranking; an unknown precision is refused.
    const auto int8_file = t.path / "int8.plumbtkc";
    ASSERT_EQ(run("tk-cache --model " + model.string() + " --corpus " +
                      (t.path / "corpus.tsv").string() + " --quiet --threads 1 --precision int8" +
                      " --output " + int8_file.string(),
                  t.path / "int8.log"),
              0)
        << plumb::read_file(t.path / "int8.log");
    EXPECT_NE(plumb::read_file(t.path / "int8.log").find("(int8)"), std::string::npos)
        << plumb::read_file(t.path / "int8.log");
    EXPECT_EQ(TkPassageCache::open(int8_file)->precision(), TkCachePrecision::Int8);
    {
        const auto out = t.path / "int8.run";
        ASSERT_EQ(run("rerank --corpus " + (t.path / "corpus.tsv").string() + " --topics " +
                          (t.path / "topics.tsv").string() + " --run " +
                          (t.path / "in.run").string() + " --model " + model.string() +
                          " --type tk --depth 3 --quiet --output " + out.string() +
                          " --tk-cache " + int8_file.string(),
                      t.path / "rerank.log"),
                  0)
            << plumb::read_file(t.path / "rerank.log");
        EXPECT_EQ(docids(plumb::read_file(out)), docids(runs[1]));
    }
    EXPECT_NE(run("tk-cache --model " + model.string() + " --corpus " +
                      (t.path / "corpus.tsv").string() + " --quiet --precision int4 --output " +
                      (t.path / "int4.plumbtkc").string(),
                  t.path / "int4.log"),
              0);
    EXPECT_FALSE(fs::exists(t.path / "int4.plumbtkc"));
    // Not a cache: an error naming the file.
    write_text(t.path / "junk.plumbtkc", std::string(200, 'x'));
    EXPECT_NE(run("rerank --corpus " + (t.path / "corpus.tsv").string() + " --topics " +
                      (t.path / "topics.tsv").string() + " --run " + (t.path / "in.run").string() +
                      " --model " + model.string() + " --type tk --depth 3 --quiet --output " +
                      (t.path / "bad.run").string() + " --tk-cache " +
                      (t.path / "junk.plumbtkc").string(),
                  t.path / "bad.log"),
              0);
    EXPECT_NE(plumb::read_file(t.path / "bad.log").find("junk.plumbtkc: not a TK passage cache"),
              std::string::npos)
        << plumb::read_file(t.path / "bad.log");
}
