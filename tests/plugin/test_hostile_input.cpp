// Hostile and careless input (issue 15): every case is generated here, and each must end in a
// clean error naming the file (and line), with memory bounded by the input, or be read in full.
// The expected values come from the inputs' definitions, not from plumb's output.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "debias/liwc.hpp"
#include "eval/evaluator.hpp"
#include "eval/measures.hpp"
#include "eval/qrels.hpp"
#include "index/corpus.hpp"
#include "index/index_builder.hpp"
#include "plugin/error.hpp"
#include "plugin/json.hpp"
#include "plugin/pipeline_config.hpp"
#include "plugin/registry.hpp"
#include "plugin/text_io.hpp"
#include "tests/support/cli.hpp"
#include "tests/support/parse_error.hpp"
#include "tests/support/temp_dir.hpp"

namespace fs = std::filesystem;
using plumb::ParseError;
using plumb::test::run_plumb;
using plumb::test::TempDir;

namespace {

bool contains(const std::string& s, const std::string& part) {
    return s.find(part) != std::string::npos;
}

/// Runs `f` expecting a ParseError; returns its what().
template <typename F>
std::string parse_error_of(F&& f) {
    return plumb::test::expect_parse_error(f).what();
}

std::string quoted(const fs::path& p) { return "'" + p.string() + "'"; }

}  // namespace

// ---- JSON -------------------------------------------------------------------------------------

TEST(HostileJson, DeepNestingIsAnErrorNotACrash) {
    const std::string deep = std::string(100000, '[') + std::string(100000, ']');
    auto m = parse_error_of([&] { plumb::parse_json(deep, "deep.json"); });
    EXPECT_TRUE(contains(m, "deep.json:1:")) << m;
    EXPECT_TRUE(contains(m, "nested deeper than 256")) << m;
    // 256 levels are fine, 257 are not.
    EXPECT_NO_THROW(plumb::parse_json(std::string(256, '[') + std::string(256, ']'), "x"));
    EXPECT_THROW(plumb::parse_json(std::string(257, '[') + std::string(257, ']'), "x"), ParseError);
    // Brackets inside strings are text, not nesting.
    EXPECT_NO_THROW(plumb::parse_json("{\"a\": \"" + std::string(1000, '[') + "\"}", "x"));
}

TEST(HostileJson, DuplicateKeysNameTheirLine) {
    auto m = parse_error_of(
        [] { plumb::parse_json("{\n\"k\": 1,\n\"other\": {\"k\": 1},\n\"k\": 2}", "dup.json"); });
    EXPECT_TRUE(contains(m, "dup.json:4:")) << m;
    EXPECT_TRUE(contains(m, "duplicate key \"k\"")) << m;
    // The same key written with an escape is the same key.
    EXPECT_THROW(plumb::parse_json(R"({"ab": 1, "\u0061b": 2})", "x"), ParseError);
    // Same key in sibling objects, and in an array of objects, is fine; so are many keys.
    EXPECT_NO_THROW(plumb::parse_json(R"([{"k": 1}, {"k": 2}])", "x"));
    std::string many = "{";
    for (int i = 0; i < 5000; ++i) many += (i ? ",\"" : "\"") + std::to_string(i) + "\":0";
    EXPECT_EQ(plumb::parse_json(many + "}", "x").size(), 5000u);
    EXPECT_THROW(plumb::parse_json(many + ",\"4999\":1}", "x"), ParseError);
}

TEST(HostileJson, NumberOverflowAndSyntaxErrorsNameFileAndLine) {
    auto m = parse_error_of([] { plumb::parse_json("{\n\"a\": 1,\n\"b\": 1e400}", "big.json"); });
    EXPECT_TRUE(contains(m, "big.json:3:")) << m;
    EXPECT_TRUE(contains(m, "1e400")) << m;
    EXPECT_FALSE(contains(m, "json.exception")) << m;
    m = parse_error_of([] { plumb::parse_json("{\"a\": 1,\n\"b\" 2}", "syn.json"); });
    EXPECT_TRUE(contains(m, "syn.json:2:")) << m;
    EXPECT_FALSE(contains(m, "json.exception")) << m;
    // A JSON Lines record names the file's line, whatever the record's own lines.
    m = parse_error_of([] { plumb::parse_json("{\"a\": tru}", "c.jsonl", 17); });
    EXPECT_TRUE(contains(m, "c.jsonl:17:")) << m;
}

// ---- YAML and pipeline configurations ---------------------------------------------------------

TEST(HostileConfig, BillionLaughsIsRefusedWithBoundedWork) {
    // 9^8 = 43 million strings from 400 bytes.
    std::string y = "a: &a [x, x, x, x, x, x, x, x, x]\n";
    const char* names = "abcdefgh";
    for (int i = 1; i < 8; ++i) {
        const std::string prev(1, names[i - 1]);
        y += std::string(1, names[i]) + ": &" + names[i] + " [";
        for (int j = 0; j < 9; ++j) y += (j ? ", *" : "*") + prev;
        y += "]\n";
    }
    plumb::Registry registry;
    plumb::StageContext ctx;
    auto m = parse_error_of([&] { plumb::pipeline_from_yaml(y, registry, ctx, "laughs.yaml"); });
    EXPECT_TRUE(contains(m, "laughs.yaml")) << m;
    EXPECT_TRUE(contains(m, "aliases expand to too many nodes")) << m;
}

TEST(HostileConfig, SecondDocumentDuplicateKeysAndOverflowAreErrors) {
    plumb::Registry registry;
    plumb::StageContext ctx;
    auto m = parse_error_of([&] {
        plumb::pipeline_from_yaml("first_stage: {type: bm25}\n---\nk: 3\n", registry, ctx,
                                  "two.yaml");
    });
    EXPECT_TRUE(contains(m, "two.yaml:3:")) << m;
    EXPECT_TRUE(contains(m, "second document")) << m;
    m = parse_error_of([&] {
        plumb::pipeline_from_json("{\"first_stage\": {\"type\": \"bm25\"},\n\"k\": 1,\n\"k\": 2}",
                                  registry, ctx, "dup.json");
    });
    EXPECT_TRUE(contains(m, "dup.json:3:")) << m;
    m = parse_error_of([&] {
        plumb::pipeline_from_yaml("first_stage: {type: bm25}\nk: 1e400\n", registry, ctx,
                                  "big.yaml");
    });
    EXPECT_TRUE(contains(m, "big.yaml:2:")) << m;
    EXPECT_TRUE(contains(m, "out of range")) << m;
    m = parse_error_of([&] {
        plumb::pipeline_from_json("{\"first_stage\": {\"type\": \"bm25\", \"k1\": 1e400}}",
                                  registry, ctx, "big.json");
    });
    EXPECT_TRUE(contains(m, "big.json:1:")) << m;
    // Deep YAML nesting: an error, not a stack overflow.
    const std::string deep = std::string(20000, '[') + std::string(20000, ']');
    EXPECT_THROW(plumb::pipeline_from_yaml("k: " + deep + "\n", registry, ctx, "deep.yaml"),
                 ParseError);
}

// ---- Lines ------------------------------------------------------------------------------------

TEST(HostileLines, LongLinesAreAnErrorNamingTheLine) {
    TempDir dir("hostile");
    const auto p = dir.write("long.tsv", "a\tb\n" + std::string(200000, 'x') + "\nc\td\n");
    plumb::LineReader r(p);
    r.set_max_line_bytes(65536);
    std::string_view line;
    ASSERT_TRUE(r.next(line));
    auto m = parse_error_of([&] { r.next(line); });
    EXPECT_TRUE(contains(m, "long.tsv:2:")) << m;
    EXPECT_TRUE(contains(m, "longer than 65536 bytes")) << m;
    // Exactly at the limit is fine (with CRLF too).
    const auto q = dir.write("edge.tsv", std::string(100, 'y') + "\r\n" + std::string(100, 'z'));
    plumb::LineReader e(q);
    e.set_max_line_bytes(100);
    ASSERT_TRUE(e.next(line));
    EXPECT_EQ(line.size(), 100u);
    ASSERT_TRUE(e.next(line));
    EXPECT_EQ(line, std::string(100, 'z'));
}

TEST(HostileLines, NulBytesAreAnErrorNotACut) {
    TempDir dir("hostile");
    const auto p = dir.write("nul.tsv", std::string("d1\tfirst\nd2\thello\0world\n", 24));
    plumb::LineReader r(p);
    std::string_view line;
    ASSERT_TRUE(r.next(line));
    auto m = parse_error_of([&] { r.next(line); });
    EXPECT_TRUE(contains(m, "nul.tsv:2:")) << m;
    EXPECT_TRUE(contains(m, "NUL byte")) << m;
    plumb::LineReader ok(p);
    ok.set_allow_nul(true);
    ASSERT_TRUE(ok.next(line));
    ASSERT_TRUE(ok.next(line));
    EXPECT_EQ(line.size(), 14u);  // "d2\thello\0world": nothing cut
}

TEST(HostileLines, ByteSizesParse) {
    EXPECT_EQ(plumb::parse_byte_size("300"), 300u);
    EXPECT_EQ(plumb::parse_byte_size("64K"), 65536u);
    EXPECT_EQ(plumb::parse_byte_size("2m"), 2u << 20);
    EXPECT_EQ(plumb::parse_byte_size("1G"), std::size_t{1} << 30);
    EXPECT_FALSE(plumb::parse_byte_size("0"));
    EXPECT_FALSE(plumb::parse_byte_size("-5"));
    EXPECT_FALSE(plumb::parse_byte_size("12Q"));
    EXPECT_FALSE(plumb::parse_byte_size("99999999999999999999G"));
}

TEST(HostileLines, CliRefusesZeroStreamsAndHonoursMaxLineBytes) {
    TempDir dir("hostile");
    const auto run = dir.write("r.txt", "q1 Q0 d1 1 2.0 r\n");
    // /dev/zero as qrels: an error about line 1, not 4 GB then bad_alloc.
    auto r = run_plumb("eval /dev/zero " + quoted(run));
    EXPECT_EQ(r.status, 1) << r.out;
    EXPECT_TRUE(contains(r.out, "/dev/zero:1: line longer than")) << r.out;
    // A 2 KB line under a 1 KB limit given on the command line.
    const auto qrels = dir.write("q.txt", "q1 0 d1 1\nq1 0 " + std::string(2048, 'd') + " 1\n");
    r = run_plumb("--max-line-bytes 1K eval " + quoted(qrels) + " " + quoted(run));
    EXPECT_EQ(r.status, 1) << r.out;
    EXPECT_TRUE(contains(r.out, "q.txt:2: line longer than 1024 bytes")) << r.out;
    r = run_plumb("eval " + quoted(qrels) + " " + quoted(run));
    EXPECT_EQ(r.status, 0) << r.out;
    r = run_plumb("--max-line-bytes lots eval " + quoted(qrels) + " " + quoted(run));
    EXPECT_EQ(r.status, 2) << r.out;
}

TEST(HostileLines, CrOnlyRunsAreReadInFull) {
    TempDir dir("hostile");
    std::string run, qrels;
    for (int i = 1; i <= 50; ++i) {
        run += "q1 Q0 d" + std::to_string(i) + " " + std::to_string(i) + " " +
               std::to_string(100 - i) + " r\r";
        if (i % 5 == 0) qrels += "q1 0 d" + std::to_string(i) + " 1\r";
    }
    auto r = run_plumb("eval -m num_ret -m num_rel_ret " + quoted(dir.write("q", qrels)) + " " +
                       quoted(dir.write("r", run)));
    EXPECT_EQ(r.status, 0) << r.out;
    EXPECT_TRUE(contains(r.out, "num_ret               \tall\t50")) << r.out;
    EXPECT_TRUE(contains(r.out, "num_rel_ret           \tall\t10")) << r.out;
}

// ---- Corpora, topics, dictionaries ------------------------------------------------------------

TEST(HostileCorpus, NulInAPassageEmptyCorpusAndOverflowAreCliErrors) {
    TempDir dir("hostile");
    auto r = run_plumb("index --quiet -c " +
                       quoted(dir.write("nul.tsv", std::string("d1\tok\nd2\tcut\0here\n", 19))) +
                       " -i " + quoted(dir / "i1"));
    EXPECT_EQ(r.status, 1) << r.out;
    EXPECT_TRUE(contains(r.out, "nul.tsv:2: NUL byte")) << r.out;
    EXPECT_FALSE(fs::exists(dir / "i1"));
    r = run_plumb("index --quiet -c " + quoted(dir.write("empty.tsv", "")) + " -i " +
                  quoted(dir / "i2"));
    EXPECT_EQ(r.status, 1) << r.out;
    EXPECT_TRUE(contains(r.out, "empty.tsv: the corpus holds no documents")) << r.out;
    EXPECT_FALSE(fs::exists(dir / "i2"));
    r = run_plumb("index --quiet --allow-empty -c " + quoted(dir / "empty.tsv") + " -i " +
                  quoted(dir / "i2"));
    EXPECT_EQ(r.status, 0) << r.out;
    r = run_plumb("index --quiet -c " +
                  quoted(dir.write("c.jsonl",
                                   "{\"_id\": \"a\", \"text\": \"x\"}\n"
                                   "{\"_id\": \"b\", \"text\": \"y\", \"n\": 1e400}\n")) +
                  " -i " + quoted(dir / "i3"));
    EXPECT_EQ(r.status, 1) << r.out;
    EXPECT_TRUE(contains(r.out, "c.jsonl:2: invalid JSON: number overflow")) << r.out;
    EXPECT_FALSE(contains(r.out, "internal error")) << r.out;
    // An escaped NUL inside a JSON string is refused the same way.
    r = run_plumb("index --quiet -c " +
                  quoted(dir.write("n.jsonl", "{\"_id\": \"a\", \"text\": \"x\\u0000y\"}\n")) +
                  " -i " + quoted(dir / "i4"));
    EXPECT_EQ(r.status, 1) << r.out;
    EXPECT_TRUE(contains(r.out, "n.jsonl:1:")) << r.out;
}

TEST(HostileCorpus, NullQueryTextIsAnError) {
    TempDir dir("hostile");
    const auto p =
        dir.write("queries.jsonl",
                  "{\"_id\": \"1\", \"text\": \"fine\"}\n{\"_id\": \"2\", \"text\": null}\n");
    auto m = parse_error_of([&] { plumb::index::read_topics(p); });
    EXPECT_TRUE(contains(m, "queries.jsonl:2:")) << m;
    EXPECT_TRUE(contains(m, "null")) << m;
}

TEST(HostileCorpus, NegativeLiwcCategoryIdsAreErrors) {
    auto m = parse_error_of(
        [] { plumb::debias::LiwcDictionary::parse("%\n-3\tfemale\n%\nshe\t-3\n", "neg.dic"); });
    EXPECT_TRUE(contains(m, "neg.dic:2:")) << m;
    EXPECT_TRUE(contains(m, "non-negative")) << m;
}

// ---- Relevance grades -------------------------------------------------------------------------

TEST(HostileQrels, HugeGradesCostOneEntryAndScoreByDefinition) {
    // Grades 2^31 - 1 and 1: the structures hold the two grades, not 2^31 levels (this test
    // runs under a 1 GiB address-space limit in a child process).
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
        // (Not in the sanitizer trees: their shadow memory needs far more address space.)
        rlimit lim{std::size_t{1} << 30, std::size_t{1} << 30};
        setrlimit(RLIMIT_AS, &lim);
#endif
        int code = 0;
        try {
            auto qrels = std::make_shared<plumb::eval::Qrels>(
                plumb::eval::Qrels::parse("q1 0 big 2147483647\nq1 0 one 1\nq1 0 zero 0\n"));
            if (qrels->find("q1")->level_counts().size() != 3) code = 3;
            plumb::eval::Evaluator ev(qrels,
                                      plumb::eval::MeasureSet::parse({"ndcg", "ndcg_cut.10"}));
            plumb::RankedList l;
            l.qid = "q1";
            for (auto [id, s] : {std::pair{"one", 3.0f}, {"zero", 2.0f}, {"big", 1.0f}}) {
                plumb::Candidate c;
                c.docid = id;
                c.score = s;
                l.candidates.push_back(c);
            }
            auto r = ev.evaluate({l});
            // DCG = 1/log2(2) + 0 + G/log2(4); ideal = G/log2(2) + 1/log2(3).
            const double G = 2147483647.0;
            const double want = (1.0 + G / 2.0) / (G + 1.0 / std::log2(3.0));
            if (std::abs(r.summary_value("ndcg") - want) > 1e-12) code = 4;
            if (std::abs(r.summary_value("ndcg_cut_10") - want) > 1e-12) code = 5;
        } catch (...) {
            code = 6;
        }
        _exit(code);
    }
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0) << "3: structure sized by value, 4/5: wrong nDCG, 6: threw";
}

// ---- Threads and temporaries ------------------------------------------------------------------

TEST(HostileOptions, ThreadCountsAreBounded) {
    TempDir dir("hostile");
    for (const char* bad : {"10000", "-5", "0", "many"}) {
        auto r = run_plumb(std::string("index --quiet -c x -i y --threads ") + bad);
        EXPECT_EQ(r.status, 2) << bad << ": " << r.out;
    }
    const auto c = dir.write("c.tsv", "d1\thello world\n");
    auto r = run_plumb("index --quiet --threads auto -c " + quoted(c) + " -i " + quoted(dir / "i"));
    EXPECT_EQ(r.status, 0) << r.out;
}

TEST(CliConventions, OneMeaningPerOptionName) {
    TempDir dir("conventions");
    const auto c = dir.write("c.tsv", "d1\thello world\nd2\thello there\n");
    const auto topics = dir.write("t.tsv", "q1\thello\n");
    // --input-format names the input format, --quiet turns the progress bar off.
    auto r = run_plumb("index --quiet --input-format tsv -c " + quoted(c) + " -i " +
                       quoted(dir / "i"));
    ASSERT_EQ(r.status, 0) << r.out;
    // The old spellings are usage errors naming the option to use, and build nothing.
    r = run_plumb("index --format tsv -c " + quoted(c) + " -i " + quoted(dir / "j"));
    EXPECT_EQ(r.status, 2) << r.out;
    EXPECT_NE(r.out.find("plumb: error: --format names an output format"), std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("--input-format"), std::string::npos) << r.out;
    EXPECT_FALSE(fs::exists(dir / "j"));
    for (const std::string& cmd :
         {"index -c " + quoted(c) + " -i " + quoted(dir / "k"),
          "search -i " + quoted(dir / "i") + " --topics " + quoted(topics) + " --output " +
              quoted(dir / "r.run"),
          "debias liwc --dic x.dic --corpus " + quoted(c) + " --output " + quoted(dir / "p")}) {
        r = run_plumb(cmd + " -q");
        EXPECT_EQ(r.status, 2) << cmd << ": " << r.out;
        EXPECT_NE(r.out.find("plumb: error: -q is trec_eval's per-query option"),
                  std::string::npos)
            << cmd << ": " << r.out;
        EXPECT_NE(r.out.find("--quiet"), std::string::npos) << r.out;
    }
    EXPECT_FALSE(fs::exists(dir / "k"));
    EXPECT_FALSE(fs::exists(dir / "r.run"));
    // In eval, -q keeps trec_eval's meaning (per-query lines) and --format is the output's.
    r = run_plumb("search --quiet -i " + quoted(dir / "i") + " --topics " + quoted(topics) +
                  " --output " + quoted(dir / "r.run"));
    ASSERT_EQ(r.status, 0) << r.out;
    const auto qrels = dir.write("q.txt", "q1 0 d1 1\n");
    r = run_plumb("eval -q -m P.1 " + quoted(qrels) + " " + quoted(dir / "r.run"), false);
    EXPECT_EQ(r.status, 0) << r.out;
    EXPECT_NE(r.out.find("P_1                   \tq1\t"), std::string::npos) << r.out;
    r = run_plumb("eval --format json -m P.1 " + quoted(qrels) + " " + quoted(dir / "r.run"),
                  false);
    EXPECT_EQ(r.status, 0) << r.out;
    EXPECT_EQ(r.out.front(), '{') << r.out;
}

TEST(HostileTemporaries, FoldersOfDeadProcessesAreRemovedLiveOnesKept) {
    TempDir dir("hostile");
    // A pid that surely does not run: a child that has exited and been reaped.
    const pid_t dead = fork();
    ASSERT_GE(dead, 0);
    if (dead == 0) _exit(0);
    ASSERT_EQ(waitpid(dead, nullptr, 0), dead);
    const auto stale = dir / ("idx.tmp-" + std::to_string(dead) + "-0");
    const auto stale_file = dir / ("idx.tmp." + std::to_string(dead) + ".3");
    const auto live = dir / ("idx.tmp-" + std::to_string(getppid()) + "-0");
    const auto other = dir / ("idxx.tmp-" + std::to_string(dead) + "-0");
    for (const auto& p : {stale, live, other}) fs::create_directories(p / "lucene");
    plumb::test::write_file(stale / "lucene" / "big", std::string(1000, 'x'));
    plumb::test::write_file(stale_file, "x");
    plumb::index::build_index(dir.write("c.tsv", "d1\thello\n"), dir / "idx");
    EXPECT_FALSE(fs::exists(stale));
    EXPECT_FALSE(fs::exists(stale_file));
    EXPECT_TRUE(fs::exists(live));
    EXPECT_TRUE(fs::exists(other));  // another target's
    EXPECT_TRUE(fs::exists(dir / "idx" / "plumb-index.json"));
}

TEST(HostileCorpus, NulInAnHtmlDocumentIsAnErrorNamingTheFile) {
    TempDir dir("hostile");
    fs::create_directories(dir / "html");
    dir.write("html/a.html", "<html><body>fine text</body></html>");
    dir.write("html/b.html", std::string("<html><body>cut\0here</body></html>", 34));
    auto r = run_plumb("index --quiet --input-format html -c " + quoted(dir / "html") + " -i " +
                       quoted(dir / "i"));
    EXPECT_EQ(r.status, 1) << r.out;
    EXPECT_TRUE(contains(r.out, "b.html")) << r.out;
    EXPECT_TRUE(contains(r.out, "NUL byte")) << r.out;
    EXPECT_FALSE(fs::exists(dir / "i"));
}
