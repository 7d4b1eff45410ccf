// The embeddable pipeline: builder, JSON configuration, registry errors, concurrency, the C-ABI
// plugin library, per-stage statistics, the `plumb pipeline` CLI.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "index/bm25_retriever.hpp"
#include "index/index_builder.hpp"
#include "plugin/builtins/builtins.hpp"
#include "plugin/error.hpp"
#include "plugin/pipeline.hpp"
#include "plugin/pipeline_config.hpp"
#include "plugin/registry.hpp"
#include "rerank/tk_stage.hpp"
#include "tests/support/cli.hpp"
#include "tests/support/run_file.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/tiny_index.hpp"

namespace fs = std::filesystem;
namespace pi = plumb::index;
using plumb::test::run_plumb;
using plumb::test::write_file;

namespace {

// No stemming/stop words. N = 5, lengths 3, 2, 4, 3, 1 (avgdl 2.6). For "apple cherry"
// (df apple 2, df cherry 3; k1 0.9, b 0.4) BM25 by hand:
//   d4 = 0.8755 * 0.9717 + 0.5390 * 0.9717 = 1.3744, d1 = 0.8755 * 1.2858 = 1.1257,
//   d3 = 0.5390 * 1.4920 = 0.8042,  d2 = 0.5390 * 1.0457 = 0.5636;  d5 not retrieved.
const char* kCorpus =
    "d1\tapple banana apple\n"
    "d2\tbanana cherry\n"
    "d3\tcherry cherry cherry cherry\n"
    "d4\tapple cherry date\n"
    "d5\tdate\n";

/// The index of kCorpus, built on first use and shared by the tests of this process; the index
/// objects are never destroyed, the folder is removed at exit.
const plumb::test::TinyIndex& fixture() {
    static const plumb::test::TempDir dir("plumb_test_pipeline");
    static const auto* f =
        new plumb::test::TinyIndex(plumb::test::build_tiny_index(dir.path, kCorpus));
    return *f;
}

/// Re-rank stage: score = number of bytes of the passage text (needs text).
class LengthStage : public plumb::RerankStage {
public:
    explicit LengthStage(std::size_t depth) : m_depth(depth) {}
    std::string name() const override { return "len"; }
    std::size_t depth() const override { return m_depth; }
    std::vector<float> score(const plumb::Query&,
                             std::span<const plumb::Candidate> c) const override {
        std::vector<float> out;
        for (const auto& x : c) out.push_back(static_cast<float>(x.text.size()));
        return out;
    }

private:
    std::size_t m_depth;
};

/// Re-rank stage without text: score = minus the docid's number (d1 -> -1), depth 10.
class NoTextStage : public plumb::RerankStage {
public:
    std::string name() const override { return "notext"; }
    std::size_t depth() const override { return 10; }
    plumb::StageNeeds needs() const override { return {false}; }
    std::vector<float> score(const plumb::Query&,
                             std::span<const plumb::Candidate> c) const override {
        std::vector<float> out;
        for (const auto& x : c) {
            EXPECT_TRUE(x.text.empty());
            out.push_back(-std::stof(x.docid.substr(1)));
        }
        return out;
    }
};

/// Post-filter dropping one docid.
class DropFilter : public plumb::PostFilter {
public:
    explicit DropFilter(std::string id) : m_id(std::move(id)) {}
    std::string name() const override { return "drop"; }
    void apply(const plumb::Query&, plumb::RankedList& list) const override {
        std::erase_if(list.candidates, [&](const plumb::Candidate& c) { return c.docid == m_id; });
    }

private:
    std::string m_id;
};

/// Counts text() calls.
class CountingSource : public plumb::DocumentSource {
public:
    explicit CountingSource(std::shared_ptr<const plumb::DocumentSource> s) : m_s(std::move(s)) {}
    std::optional<std::string> text(std::string_view id) const override {
        ++calls;
        return m_s->text(id);
    }
    std::uint64_t size() const override { return m_s->size(); }
    mutable std::atomic<int> calls{0};

private:
    std::shared_ptr<const plumb::DocumentSource> m_s;
};

std::vector<std::string> ids(const plumb::RankedList& l) {
    std::vector<std::string> out;
    for (const auto& c : l.candidates) out.push_back(c.docid);
    return out;
}

void register_test_stages(plumb::Registry& r) {
    r.add_rerank("len", [](const nlohmann::json& c, plumb::StageContext&) {
        plumb::check_keys(c, {"depth"}, "len");
        return std::make_shared<LengthStage>(plumb::config_size(c, "depth", 3, "len"));
    });
    r.add_post_filter("drop", [](const nlohmann::json& c, plumb::StageContext&) {
        plumb::check_keys(c, {"docid"}, "drop");
        return std::make_shared<DropFilter>(plumb::config_required_string(c, "docid", "drop"));
    });
}

plumb::Pipeline from_config(const std::string& text, const std::string& name = "p.json") {
    plumb::Registry r;
    plumb::register_builtins(r);
    register_test_stages(r);
    write_file(fixture().dir / name, text);
    return plumb::load_pipeline(fixture().dir / name, r);
}

const char* kConfig = R"({
  "first_stage": {"type": "bm25", "index": "idx"},
  "rerank": [{"type": "len", "depth": 3}],
  "post_filters": [{"type": "drop", "docid": "d3"}],
  "k": 10
})";

}  // namespace

TEST(Pipeline, BuilderBm25RerankPostFilterHandChecked) {
    auto& f = fixture();
    auto docs = std::make_shared<CountingSource>(f.index);
    auto p = plumb::Pipeline::Builder()
                 .first_stage(std::make_shared<pi::Bm25Retriever>(f.searcher))
                 .rerank(std::make_shared<LengthStage>(3))
                 .post_filter(std::make_shared<DropFilter>("d3"))
                 .documents(docs)
                 .k(10)
                 .build();
    auto r = p.search({"q1", "apple cherry"});
    // BM25: d4 d1 d3 d2. Head of 3 re-scored by text length: d3 27, d1 18, d4 17; tail d2
    // gets 17 - 1 = 16. The filter drops d3.
    EXPECT_EQ(r.list.qid, "q1");
    ASSERT_EQ(ids(r.list), (std::vector<std::string>{"d1", "d4", "d2"}));
    EXPECT_FLOAT_EQ(r.list.candidates[0].score, 18.0f);
    EXPECT_FLOAT_EQ(r.list.candidates[1].score, 17.0f);
    EXPECT_FLOAT_EQ(r.list.candidates[2].score, 16.0f);
    const auto& t1 = r.list.candidates[0].trace;
    ASSERT_EQ(t1.size(), 2u);
    EXPECT_EQ(t1[0].stage, "bm25");
    EXPECT_NEAR(t1[0].score, 1.1257f, 2e-3);
    EXPECT_EQ(t1[1].stage, "len");
    EXPECT_FLOAT_EQ(t1[1].score, 18.0f);
    EXPECT_NEAR(r.list.candidates[1].trace[0].score, 1.3744f, 2e-3);
    ASSERT_EQ(r.list.candidates[2].trace.size(), 1u);  // d2 was below the re-rank depth
    EXPECT_NEAR(r.list.candidates[2].trace[0].score, 0.5636f, 2e-3);
    // Text fetched once, for the 3 candidates of the re-rank depth; not returned.
    EXPECT_EQ(docs->calls.load(), 3);
    for (const auto& c : r.list.candidates) EXPECT_TRUE(c.text.empty());
    // Timings: one per stage, in order.
    ASSERT_EQ(r.timings.size(), 4u);
    EXPECT_EQ(r.timings[0].stage, "bm25");
    EXPECT_EQ(r.timings[1].stage, "text");
    EXPECT_EQ(r.timings[2].stage, "len");
    EXPECT_EQ(r.timings[3].stage, "drop");
    EXPECT_EQ(p.candidates(), 10u);
}

TEST(Pipeline, TextFetchedJustBeforeTheFirstStageNeedingIt) {
    auto& f = fixture();
    auto docs = std::make_shared<CountingSource>(f.index);
    auto p = plumb::Pipeline::Builder()
                 .first_stage(std::make_shared<pi::Bm25Retriever>(f.searcher))
                 .rerank(std::make_shared<NoTextStage>())
                 .rerank(std::make_shared<LengthStage>(2))
                 .documents(docs)
                 .build();
    EXPECT_EQ(p.stage_names(), (std::vector<std::string>{"bm25", "notext", "text", "len"}));
    auto r = p.search({"q", "apple cherry"});
    // notext: d1 d2 d3 d4 (scores -1 .. -4); len on the top 2: d1 18, d2 13.
    EXPECT_EQ(ids(r.list), (std::vector<std::string>{"d1", "d2", "d3", "d4"}));
    EXPECT_EQ(docs->calls.load(), 2);
    ASSERT_EQ(r.timings.size(), 4u);
    EXPECT_EQ(r.timings[2].stage, "text");
    auto st = p.stats();
    ASSERT_EQ(st.size(), 4u);
    EXPECT_EQ(st[2].stage, "text");
    EXPECT_EQ(st[2].count, 1u);
}

TEST(Pipeline, KCutsAndReturnText) {
    auto& f = fixture();
    auto p = plumb::Pipeline::Builder()
                 .first_stage(std::make_shared<pi::Bm25Retriever>(f.searcher))
                 .documents(f.index)
                 .k(2)
                 .return_text(true)
                 .build();
    auto r = p.search({"q", "apple cherry"});
    ASSERT_EQ(ids(r.list), (std::vector<std::string>{"d4", "d1"}));
    EXPECT_EQ(r.list.candidates[0].text, "apple cherry date");
    EXPECT_EQ(r.list.candidates[1].text, "apple banana apple");
}

TEST(Pipeline, InvalidSpecs) {
    auto& f = fixture();
    EXPECT_THROW(plumb::Pipeline::Builder().build(), plumb::InvalidArgument);
    auto bm25 = std::make_shared<pi::Bm25Retriever>(f.searcher);
    // A stage needing text without a document source.
    EXPECT_THROW(plumb::Pipeline::Builder()
                     .first_stage(bm25)
                     .rerank(std::make_shared<LengthStage>(3))
                     .build(),
                 plumb::InvalidArgument);
    EXPECT_THROW(plumb::Pipeline::Builder().first_stage(bm25).k(0).build(), plumb::InvalidArgument);
    // Duplicate stage names.
    EXPECT_THROW(plumb::Pipeline::Builder()
                     .first_stage(bm25)
                     .documents(f.index)
                     .rerank(std::make_shared<LengthStage>(3))
                     .rerank(std::make_shared<LengthStage>(2))
                     .build(),
                 plumb::InvalidArgument);
}

TEST(PipelineConfig, JsonGivesSameResultsAsBuilder) {
    auto p = from_config(kConfig);
    auto r = p.search({"q1", "apple cherry"});
    ASSERT_EQ(ids(r.list), (std::vector<std::string>{"d1", "d4", "d2"}));
    EXPECT_FLOAT_EQ(r.list.candidates[0].score, 18.0f);
    EXPECT_FLOAT_EQ(r.list.candidates[2].score, 16.0f);
    EXPECT_EQ(p.stage_names(), (std::vector<std::string>{"bm25", "text", "len", "drop"}));
}

TEST(PipelineConfig, UnknownTypeListsKnownOnes) {
    try {
        from_config(R"({"first_stage": {"type": "bm26", "index": "idx"}})");
        FAIL() << "no error";
    } catch (const plumb::ConfigError& e) {
        std::string m = e.what();
        EXPECT_NE(m.find("unknown type \"bm26\""), std::string::npos) << m;
        EXPECT_NE(m.find("bm25, dense, hybrid"), std::string::npos) << m;
        EXPECT_NE(m.find("p.json"), std::string::npos) << m;
    }
    try {
        from_config(R"({"first_stage": {"type": "bm25", "index": "idx"},
                        "rerank": [{"type": "nope"}]})");
        FAIL() << "no error";
    } catch (const plumb::ConfigError& e) {
        std::string m = e.what();
        EXPECT_NE(m.find("cat, dot, len, tk, torchscript"), std::string::npos) << m;
    }
}

TEST(PipelineConfig, UnknownKeysAndBadValues) {
    auto expect_error = [](const std::string& cfg, const std::string& needle) {
        try {
            from_config(cfg);
            ADD_FAILURE() << "no error for " << cfg;
        } catch (const plumb::ConfigError& e) {
            EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
        }
    };
    expect_error(R"({"first_stage": {"type": "bm25", "index": "idx"}, "kk": 3})",
                 "unknown key \"kk\"");
    expect_error(R"({"first_stage": {"type": "bm25", "indx": "idx"}})", "unknown key \"indx\"");
    expect_error(R"({"first_stage": {"type": "bm25"}})", "missing \"index\"");
    expect_error(R"({"rerank": []})", "missing \"first_stage\"");
    expect_error(R"({"first_stage": {"type": "bm25", "index": "idx"}, "k": "ten"})",
                 "\"k\" must be");
    expect_error(R"({"first_stage": {"type": "bm25", "index": "idx"}, "rerank": {}})",
                 "\"rerank\" must be an array");
}

TEST(PipelineConfig, InvalidJsonNamesFileAndLine) {
    try {
        from_config("{\n  \"k\": 3,\n  \"first_stage\": ]\n}\n", "bad.json");
        FAIL() << "no error";
    } catch (const plumb::ParseError& e) {
        EXPECT_EQ(e.line(), 3u) << e.what();
        EXPECT_NE(e.file().find("bad.json"), std::string::npos);
    }
    plumb::Registry r;
    EXPECT_THROW(plumb::load_pipeline(fixture().dir / "missing.json", r), plumb::IoError);
}

// kConfig in YAML (comments, a flow sequence, a block sequence, an unquoted and a quoted
// string).
constexpr const char* kYamlConfig = R"(# the same pipeline as kConfig
first_stage:
  type: bm25
  index: "idx"
rerank: [{type: len, depth: 3}]
post_filters:
  - type: drop
    docid: d3
k: 10
)";

TEST(PipelineConfigYaml, SameResultsAsJson) {
    auto pj = from_config(kConfig, "same.json");
    auto py = from_config(kYamlConfig, "same.yaml");
    EXPECT_EQ(py.stage_names(), pj.stage_names());
    for (const char* text : {"apple cherry", "date", "banana"}) {
        auto rj = pj.search({"q", text});
        auto ry = py.search({"q", text});
        ASSERT_EQ(ids(ry.list), ids(rj.list)) << text;
        for (std::size_t i = 0; i < rj.list.candidates.size(); ++i) {
            EXPECT_EQ(ry.list.candidates[i].score, rj.list.candidates[i].score);
            ASSERT_EQ(ry.list.candidates[i].trace.size(), rj.list.candidates[i].trace.size());
        }
    }
    // By hand as in JsonGivesSameResultsAsBuilder: d1 (18 bytes), d4 (17), d2 (13; d3 dropped).
    auto r = py.search({"q1", "apple cherry"});
    EXPECT_EQ(ids(r.list), (std::vector<std::string>{"d1", "d4", "d2"}));
    EXPECT_FLOAT_EQ(r.list.candidates[0].score, 18.0f);
    // The .yml extension too; numbers, booleans and nulls follow the YAML core schema.
    auto p2 = from_config(
        "first_stage: {type: bm25, index: idx, k1: 0.9, b: 4e-1}\n"
        "k: 0x2\nreturn_text: True\n",
        "scalars.yml");
    auto r2 = p2.search({"q", "apple cherry"});
    EXPECT_EQ(ids(r2.list), (std::vector<std::string>{"d4", "d1"}));
    EXPECT_EQ(r2.list.candidates[0].text, "apple cherry date");
}

TEST(PipelineConfigYaml, SyntaxErrorNamesFileAndLine) {
    try {
        from_config("k: 3\nfirst_stage:\n  type: bm25\n  index: [idx\n", "bad.yaml");
        FAIL() << "no error";
    } catch (const plumb::ParseError& e) {
        EXPECT_NE(e.file().find("bad.yaml"), std::string::npos) << e.what();
        EXPECT_GE(e.line(), 4u) << e.what();  // the unclosed flow sequence opens on line 4
        EXPECT_LE(e.line(), 5u) << e.what();
        EXPECT_NE(std::string(e.what()).find("bad.yaml:"), std::string::npos) << e.what();
    }
    try {
        from_config("k: 3\nfirst_stage: {type: bm25, index: idx}\nk: 4\n", "dup.yaml");
        FAIL() << "no error";
    } catch (const plumb::ParseError& e) {
        EXPECT_EQ(e.line(), 3u) << e.what();
        EXPECT_NE(std::string(e.what()).find("duplicate key \"k\""), std::string::npos);
    }
    // A document that is not a mapping.
    EXPECT_THROW(from_config("- a\n- b\n", "list.yaml"), plumb::ParseError);
}

TEST(PipelineConfigYaml, SameConfigErrorsAsJson) {
    auto expect_error = [](const std::string& cfg, const std::string& needle) {
        try {
            from_config(cfg, "e.yaml");
            ADD_FAILURE() << "no error for " << cfg;
        } catch (const plumb::ConfigError& e) {
            EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
            EXPECT_NE(std::string(e.what()).find("e.yaml"), std::string::npos) << e.what();
        }
    };
    expect_error("first_stage: {type: bm25, index: idx}\nkk: 3\n", "unknown key \"kk\"");
    expect_error("first_stage: {type: bm25, indx: idx}\n", "unknown key \"indx\"");
    expect_error("first_stage: {type: bm26, index: idx}\n", "unknown type \"bm26\"");
    // A quoted number is a string, as in JSON.
    expect_error("first_stage: {type: bm25, index: idx}\nk: \"10\"\n", "\"k\" must be");
    expect_error("first_stage: {type: bm25, index: idx}\nrerank: {}\n",
                 "\"rerank\" must be an array");
    expect_error("first_stage: {type: bm25, index: idx}\nk: -3\n", "\"k\" must be");
}

TEST(PipelineCli, YamlConfig) {
    auto& f = fixture();
    write_file(f.dir / "ytopics.tsv", "q1\tapple cherry\nq2\tdate\n");
    write_file(f.dir / "cli.yaml", "first_stage:\n  type: bm25\n  index: idx\nk: 2\n");
    const auto ok =
        run_plumb("pipeline --quiet --config " + (f.dir / "cli.yaml").string() + " --topics " +
                  (f.dir / "ytopics.tsv").string() + " --output " + (f.dir / "yrun.txt").string());
    ASSERT_EQ(ok.status, 0) << ok.out;
    std::vector<std::string> got;
    for (const auto& l : plumb::test::read_run_lines(f.dir / "yrun.txt"))
        got.push_back(l.qid + " " + l.docid + " " + std::to_string(l.rank));
    // BM25 by hand (see kCorpus); q2 "date": d5 (length 1) before d4 (length 3).
    EXPECT_EQ(got, (std::vector<std::string>{"q1 d4 1", "q1 d1 2", "q2 d5 1", "q2 d4 2"}));
    // A YAML syntax error: exit status 1, message naming the file and line.
    write_file(f.dir / "cli_bad.yaml", "k: 2\nfirst_stage: {type: bm25\n");
    const auto bad =
        run_plumb("pipeline --quiet --config " + (f.dir / "cli_bad.yaml").string() + " --topics " +
                  (f.dir / "ytopics.tsv").string() + " --output " + (f.dir / "yrun2.txt").string());
    EXPECT_NE(bad.status, 0);
    EXPECT_NE(bad.out.find("cli_bad.yaml:"), std::string::npos) << bad.out;
    EXPECT_FALSE(fs::exists(f.dir / "yrun2.txt"));
}

TEST(PipelineConfig, PostFilterReportsBiasAndUtilityBeforeAndAfter) {
    // Bias file (docid, bias, female, male): d4 male, d1 female, d3 male, d2 neutral.
    write_file(fixture().dir / "bias.tsv",
               "d1\t1\t1\t0\nd2\t0\t0\t0\nd3\t-1\t0\t1\nd4\t-1\t0\t1\n");
    auto p = from_config(R"({"first_stage": {"type": "bm25", "index": "idx"},
        "post_filters": [{"type": "near_duplicates", "shingle": 1, "threshold": 0.5,
                          "bias_file": "bias.tsv"}], "k": 10})",
                         "rep.json");
    auto r = p.search({"q", "apple cherry"});
    // As in BuiltinNearDuplicatesFilter: d2 removed.
    EXPECT_EQ(ids(r.list), (std::vector<std::string>{"d4", "d1", "d3"}));
    ASSERT_EQ(r.reports.size(), 1u);
    EXPECT_EQ(r.reports[0].stage, "near_duplicates");
    std::map<std::string, double> m(r.reports[0].measures.begin(), r.reports[0].measures.end());
    // BM25 by hand (kCorpus): before d4 1.3744, d1 1.1257, d3 0.8042, d2 0.5636; after d2 gone.
    EXPECT_NEAR(m.at("utility_before"), 1.3744 + 1.1257 + 0.8042 + 0.5636, 4e-3);
    EXPECT_NEAR(m.at("utility_after"), 1.3744 + 1.1257 + 0.8042, 3e-3);
    // Bias = mean (male - female) over the top min(k, n): (1 - 1 + 1 + 0) / 4, then 1 / 3.
    EXPECT_NEAR(m.at("bias_before"), 0.25, 1e-12);
    EXPECT_NEAR(m.at("bias_after"), 1.0 / 3.0, 1e-12);
    EXPECT_EQ(m.at("removed"), 1.0);
    EXPECT_EQ(m.at("changed"), 1.0);
    EXPECT_EQ(m.at("missing_bias"), 0.0);
    // A filter that does not report (the test's "drop") adds nothing.
    auto p2 = from_config(kConfig, "norep.json");
    EXPECT_TRUE(p2.search({"q", "apple cherry"}).reports.empty());
    // The means over queries, as `plumb pipeline --stats` prints them.
    std::vector<plumb::SearchResult> results = {r, p.search({"q2", "apple cherry"})};
    std::string table = plumb::format_report_means(results);
    EXPECT_NE(table.find("near_duplicates"), std::string::npos) << table;
    EXPECT_NE(table.find("bias_before"), std::string::npos) << table;
    EXPECT_EQ(plumb::format_report_means({}), "");
}

/// A first stage that leaves the score trace empty (as a third-party plugin may).
class BareRetriever : public plumb::Retriever {
public:
    std::string name() const override { return "bare"; }
    std::vector<plumb::RankedList> retrieve(std::span<const plumb::Query> queries,
                                            std::size_t) const override {
        std::vector<plumb::RankedList> out(queries.size());
        for (auto& l : out) l.candidates = {{"d1", 2.0f, "", {}}, {"d2", 1.0f, "", {}}};
        return out;
    }
};

TEST(Pipeline, ScoreTraceHoldsOneEntryPerScoringStage) {
    // Rule (plugin/types.hpp, Candidate): an entry per score a stage computed; the pipeline
    // writes a first stage's entry when it left none; post-filters write none.
    auto p = plumb::Pipeline::Builder()
                 .first_stage(std::make_shared<BareRetriever>())
                 .post_filter(std::make_shared<DropFilter>("d9"))
                 .k(10)
                 .build();
    auto r = p.search({"q", "x"});
    ASSERT_EQ(r.list.candidates.size(), 2u);
    for (const auto& c : r.list.candidates) {
        ASSERT_EQ(c.trace.size(), 1u);
        EXPECT_EQ(c.trace[0].stage, "bare");
        EXPECT_FLOAT_EQ(c.trace[0].score, c.score);
    }
    // A built-in filter that re-orders and rewrites scores (bias balance at k = 1 puts a
    // passage without male lean first) keeps the BM25 entry as the only one.
    write_file(fixture().dir / "bias_t.tsv",
               "d1\t1\t1\t0\nd2\t0\t0\t0\nd3\t-1\t0\t1\nd4\t-1\t0\t1\n");
    auto q = from_config(R"({"first_stage": {"type": "bm25", "index": "idx"},
        "post_filters": [{"type": "bias_balance", "k": 1, "budget": "inf",
                          "bias_file": "bias_t.tsv"}],
        "k": 10})",
                         "trace.json");
    auto b = q.search({"q", "apple cherry"});
    ASSERT_EQ(b.reports.size(), 1u);
    std::map<std::string, double> m(b.reports[0].measures.begin(), b.reports[0].measures.end());
    EXPECT_EQ(m.at("changed"), 1.0);
    EXPECT_NE(b.list.candidates[0].docid, "d4");
    // BM25 by hand (kCorpus).
    const std::map<std::string, float> bm25{
        {"d4", 1.3744f}, {"d1", 1.1257f}, {"d3", 0.8042f}, {"d2", 0.5636f}};
    for (std::size_t i = 0; i < b.list.candidates.size(); ++i) {
        const auto& c = b.list.candidates[i];
        ASSERT_EQ(c.trace.size(), 1u) << c.docid;
        EXPECT_EQ(c.trace[0].stage, "bm25");
        EXPECT_NEAR(c.trace[0].score, bm25.at(c.docid), 2e-3) << c.docid;
        if (i) {
            EXPECT_LT(c.score, b.list.candidates[i - 1].score);  // score order == rank order
        }
    }
}

TEST(PipelineCli, ReportFileAndMeans) {
    auto& f = fixture();
    write_file(f.dir / "rtopics.tsv", "q1\tapple cherry\nq2\tdate\n");
    write_file(f.dir / "bias2.tsv",
               "d1\t1\t1\t0\nd2\t0\t0\t0\nd3\t-1\t0\t1\nd4\t-1\t0\t1\nd5\t1\t1\t0\n");
    write_file(f.dir / "rep.yaml",
               "first_stage: {type: bm25, index: idx}\n"
               "post_filters:\n  - {type: fair_topk, p: 0.5, alpha: 0.1, k: 2, "
               "bias_file: bias2.tsv}\nk: 10\n");
    const auto r = run_plumb("pipeline --quiet --stats --config " + (f.dir / "rep.yaml").string() +
                                 " --topics " + (f.dir / "rtopics.tsv").string() + " --output " +
                                 (f.dir / "rrun.txt").string() + " --report " +
                                 (f.dir / "report.tsv").string(),
                             false);  // standard output only: the --stats table
    ASSERT_EQ(r.status, 0);
    std::istringstream rep(plumb::test::read_text(f.dir / "report.tsv"));
    std::string line;
    std::getline(rep, line);
    EXPECT_EQ(line, "qid\tstage\tmeasure\tvalue");
    std::map<std::string, double> q2;
    std::size_t lines = 0;
    while (std::getline(rep, line)) {
        ++lines;
        std::istringstream ls(line);
        std::string qid, stage, measure;
        double value;
        ls >> qid >> stage >> measure >> value;
        EXPECT_EQ(stage, "fair_topk");
        if (qid == "q2") q2[measure] = value;
    }
    EXPECT_EQ(lines, 2 * 14u);  // 14 measures per query
    // q2 "date": d5 (female) then d4 (male): bias at k 2 = (1 - 1) / 2 = 0, one protected.
    EXPECT_DOUBLE_EQ(q2.at("bias_before"), 0.0);
    EXPECT_DOUBLE_EQ(q2.at("protected_before"), 1.0);
    const std::string& out = r.out;
    EXPECT_NE(out.find("p99_ms"), std::string::npos) << out;
    EXPECT_NE(out.find("utility_after"), std::string::npos) << out;
}

TEST(PipelineCli, DebiasPostFilterComputesBiasFromAWordList) {
    // `plumb debias post-filter` with the passages' bias computed on the fly (--words + --corpus)
    // rather than read from a bias file. tc: a = "said he he" (2 male words), b = "she ran"
    // (1 female), c = "the cat" (none).
    auto& f = fixture();
    write_file(f.dir / "g_run.txt", "q1 Q0 a 1 3 t\nq1 Q0 b 2 2 t\nq1 Q0 c 3 1 t\n");
    write_file(f.dir / "g_corpus.tsv", "a\tsaid he he\nb\tshe ran\nc\tthe cat\n");
    write_file(f.dir / "g_words.txt", "he,m\nshe,f\n");
    const auto r = run_plumb(
        "debias post-filter --quiet --filter balance -k 2 --budget 0 --run " +
        (f.dir / "g_run.txt").string() + " --corpus " + (f.dir / "g_corpus.tsv").string() +
        " --words " + (f.dir / "g_words.txt").string() + " -o " + (f.dir / "g_out.txt").string() +
        " --report " + (f.dir / "g_rep.tsv").string());
    ASSERT_EQ(r.status, 0) << r.out;
    std::istringstream rep(plumb::test::read_text(f.dir / "g_rep.tsv"));
    std::string header, row;
    ASSERT_TRUE(std::getline(rep, header));
    ASSERT_TRUE(std::getline(rep, row));
    std::map<std::string, std::string> m;
    std::istringstream hs(header), rs(row);
    std::string h, v;
    while (std::getline(hs, h, '\t') && std::getline(rs, v, '\t')) m[h] = v;
    // Top 2 before: a (male - female = 2), b (-1): bias (2 - 1) / 2; utility 3 + 2. Budget 0:
    // nothing moves.
    EXPECT_DOUBLE_EQ(std::stod(m.at("bias_before")), 0.5);
    EXPECT_DOUBLE_EQ(std::stod(m.at("bias_after")), 0.5);
    EXPECT_DOUBLE_EQ(std::stod(m.at("utility_before")), 5.0);
    EXPECT_EQ(m.at("missing_bias"), "0");
}

TEST(PipelineConfig, HybridRrfOfTwoIdenticalListsKeepsOrder) {
    auto p = from_config(R"({"first_stage": {"type": "hybrid", "method": "rrf",
        "stages": [{"type": "bm25", "index": "idx"}, {"type": "bm25", "index": "idx", "k1": 0.9}]},
        "k": 10})",
                         "h.json");
    auto r = p.search({"q", "apple cherry"});
    ASSERT_EQ(ids(r.list), (std::vector<std::string>{"d4", "d1", "d3", "d2"}));
    // RRF (k = 60): 2 / (60 + rank).
    EXPECT_NEAR(r.list.candidates[0].score, 2.0 / 61, 1e-6);
    EXPECT_NEAR(r.list.candidates[3].score, 2.0 / 64, 1e-6);
}

TEST(PipelineConfig, BuiltinNearDuplicatesFilter) {
    // One-word shingles = the sets of distinct words; a candidate whose Jaccard with a kept
    // higher-ranked one is >= threshold is removed. In BM25 order d4 {apple cherry date},
    // d1 {apple banana}, d3 {cherry}, d2 {banana cherry}: J(d1,d4) = 1/4, J(d3,d4) = 1/3,
    // J(d3,d1) = 0, J(d2,d4) = 1/4, J(d2,d1) = 1/3, J(d2,d3) = 1/2.
    auto p = from_config(R"({"first_stage": {"type": "bm25", "index": "idx"},
        "post_filters": [{"type": "dedup", "shingle": 1, "threshold": 0.6}], "k": 10})",
                         "d.json");
    auto r = p.search({"q", "apple cherry"});
    EXPECT_EQ(ids(r.list), (std::vector<std::string>{"d4", "d1", "d3", "d2"}));
    auto p2 = from_config(R"({"first_stage": {"type": "bm25", "index": "idx"},
        "post_filters": [{"type": "near_duplicates", "shingle": 1, "threshold": 0.5}], "k": 10})",
                          "d2.json");
    auto r2 = p2.search({"q", "apple cherry"});
    EXPECT_EQ(ids(r2.list), (std::vector<std::string>{"d4", "d1", "d3"}));
}

TEST(Pipeline, ConcurrentSearchesEqualSequential) {
    auto p = from_config(kConfig, "c.json");
    std::vector<plumb::Query> qs;
    const char* texts[] = {"apple", "cherry",      "apple cherry",      "banana",
                           "date",  "banana date", "cherry date apple", "nothing here"};
    for (int i = 0; i < 40; ++i) qs.push_back({"q" + std::to_string(i), texts[i % 8]});
    std::vector<plumb::SearchResult> seq;
    for (const auto& q : qs) seq.push_back(p.search(q));
    auto same = [](const plumb::SearchResult& a, const plumb::SearchResult& b) {
        if (a.list.qid != b.list.qid || a.list.candidates.size() != b.list.candidates.size()) {
            return false;
        }
        for (std::size_t i = 0; i < a.list.candidates.size(); ++i) {
            if (a.list.candidates[i].docid != b.list.candidates[i].docid ||
                a.list.candidates[i].score != b.list.candidates[i].score) {
                return false;
            }
        }
        return true;
    };
    std::vector<std::vector<plumb::SearchResult>> par(4);
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
        threads.emplace_back([&, t] {
            for (std::size_t i = 0; i < qs.size(); ++i) {
                par[t].push_back(p.search(qs[(i + t * 7) % qs.size()]));
            }
        });
    }
    for (auto& t : threads) t.join();
    for (int t = 0; t < 4; ++t) {
        for (std::size_t i = 0; i < qs.size(); ++i) {
            EXPECT_TRUE(same(par[t][i], seq[(i + t * 7) % qs.size()])) << t << " " << i;
        }
    }
    std::uint64_t last = 0, calls = 0;
    plumb::BatchOptions bo;
    bo.threads = 4;
    bo.progress = [&](std::uint64_t done, std::uint64_t total) {
        EXPECT_EQ(total, qs.size());
        EXPECT_EQ(done, last + 1);
        last = done;
        ++calls;
    };
    auto batch = p.search_batch(qs, bo);
    ASSERT_EQ(batch.size(), qs.size());
    for (std::size_t i = 0; i < qs.size(); ++i) EXPECT_TRUE(same(batch[i], seq[i])) << i;
    EXPECT_EQ(calls, qs.size());
}

TEST(Pipeline, StageStatistics) {
    auto p = from_config(kConfig, "s.json");
    for (int i = 0; i < 10; ++i) p.search({"q", "apple cherry"});
    plumb::BatchOptions bo;
    bo.threads = 3;
    std::vector<plumb::Query> qs(20, plumb::Query{"q", "banana"});
    p.search_batch(qs, bo);
    auto st = p.stats();
    ASSERT_EQ(st.size(), 4u);
    const char* names[] = {"bm25", "text", "len", "drop"};
    for (std::size_t i = 0; i < 4; ++i) {
        EXPECT_EQ(st[i].stage, names[i]);
        EXPECT_EQ(st[i].count, 30u);
        EXPECT_GE(st[i].mean_ms, 0.0);
        EXPECT_LE(st[i].p50_ms, st[i].p99_ms);
    }
    auto table = plumb::format_stage_stats(st);
    EXPECT_NE(table.find("bm25"), std::string::npos);
    p.reset_stats();
    EXPECT_EQ(p.stats()[0].count, 0u);
}

TEST(Registry, DuplicateRegistrationRejected) {
    plumb::Registry r;
    plumb::register_builtins(r);
    EXPECT_THROW(plumb::register_builtins(r), plumb::ConfigError);
    EXPECT_EQ(r.post_filter_types(), (std::vector<std::string>{"balance", "bias_balance", "dedup",
                                                               "fair_topk", "near_duplicates"}));
}

TEST(PluginLibrary, LoadsAndScores) {
    plumb::Registry r;
    plumb::register_builtins(r);
    EXPECT_EQ(r.load_library(PLUMB_EXAMPLE_PLUGIN), "example-query-words");
    auto types = r.rerank_types();
    EXPECT_NE(std::find(types.begin(), types.end(), "query_words"), types.end());
    write_file(fixture().dir / "plug.json", R"({"first_stage": {"type": "bm25", "index": "idx"},
        "rerank": [{"type": "query_words", "depth": 10, "name": "qw"}], "k": 10})");
    auto p = plumb::load_pipeline(fixture().dir / "plug.json", r);
    auto res = p.search({"q", "Apple cherry"});
    // Distinct query words present: d4 2; d1, d3, d2 1 each (ties keep the BM25 order).
    ASSERT_EQ(ids(res.list), (std::vector<std::string>{"d4", "d1", "d3", "d2"}));
    EXPECT_FLOAT_EQ(res.list.candidates[0].score, 2.0f);
    EXPECT_FLOAT_EQ(res.list.candidates[1].score, 1.0f);
    EXPECT_EQ(res.list.candidates[0].trace.back().stage, "qw");
    // Loading it twice registers "query_words" twice: rejected.
    EXPECT_THROW(r.load_library(PLUMB_EXAMPLE_PLUGIN), plumb::ConfigError);
    // Through the configuration's "plugins" list in a fresh registry.
    plumb::Registry r2;
    plumb::register_builtins(r2);
    write_file(fixture().dir / "plug2.json",
               std::string(R"({"plugins": [")") + PLUMB_EXAMPLE_PLUGIN + R"("],
        "first_stage": {"type": "bm25", "index": "idx"},
        "rerank": [{"type": "query_words", "depth": 10}], "k": 10})");
    auto p2 = plumb::load_pipeline(fixture().dir / "plug2.json", r2);
    EXPECT_EQ(ids(p2.search({"q", "apple cherry"}).list), ids(res.list));
}

TEST(PluginLibrary, VersionMismatchAndMissingLibrary) {
    plumb::Registry r;
    try {
        r.load_library(PLUMB_EXAMPLE_PLUGIN_BAD_ABI);
        FAIL() << "no error";
    } catch (const plumb::ConfigError& e) {
        std::string m = e.what();
        EXPECT_NE(m.find(PLUMB_EXAMPLE_PLUGIN_BAD_ABI), std::string::npos) << m;
        EXPECT_NE(m.find("ABI version 999"), std::string::npos) << m;
    }
    EXPECT_TRUE(r.rerank_types().empty());
    EXPECT_THROW(r.load_library(fixture().dir / "no_such_plugin.so"), plumb::ConfigError);
}

TEST(PipelineCli, RunsConfigIntoTrecRun) {
    auto& f = fixture();
    write_file(f.dir / "topics.tsv", "q1\tapple cherry\nq2\tdate\n");
    write_file(f.dir / "cli.json", R"({"first_stage": {"type": "bm25", "index": "idx"}, "k": 2})");
    const auto ok =
        run_plumb("pipeline --quiet --stats --threads 2 --config " + (f.dir / "cli.json").string() +
                      " --topics " + (f.dir / "topics.tsv").string() + " --output " +
                      (f.dir / "run.txt").string() + " --tag t",
                  false);  // standard output only: the --stats table
    ASSERT_EQ(ok.status, 0);
    std::vector<std::string> got;
    for (const auto& l : plumb::test::read_run_lines(f.dir / "run.txt"))
        got.push_back(l.qid + " " + l.docid + " " + std::to_string(l.rank));
    // q2 "date": d5 (length 1) before d4 (length 3).
    EXPECT_EQ(got, (std::vector<std::string>{"q1 d4 1", "q1 d1 2", "q2 d5 1", "q2 d4 2"}));
    EXPECT_NE(ok.out.find("bm25"), std::string::npos);
    // A bad configuration fails with a message.
    write_file(f.dir / "bad.json", R"({"first_stage": {"type": "bm25", "index": "idx", "x": 1}})");
    const auto bad = run_plumb("pipeline --quiet --config " + (f.dir / "bad.json").string() +
                                   " --topics " + (f.dir / "topics.tsv").string() + " --output " +
                                   (f.dir / "run2.txt").string(),
                               false);
    EXPECT_NE(bad.status, 0);
    EXPECT_FALSE(fs::exists(f.dir / "run2.txt"));
}

TEST(PipelineConfig, TkStageFromConfigMatchesTheStageAppliedByHand) {
    auto& f = fixture();
    write_file(f.dir / "glove.txt",
               "apple 1 0 0 0\nbanana 0 1 0 0\ncherry 0 0 1 0\ndate 0 0 0 1\n");
    const auto init = run_plumb("tk-init --embeddings " + (f.dir / "glove.txt").string() +
                                " --output " + (f.dir / "tkm").string() +
                                " --layers 1 --heads 2 --head-dim 0 --ff-dim 3 --quiet --seed 3");
    ASSERT_EQ(init.status, 0) << init.out;
    auto p = from_config(R"({"first_stage": {"type": "bm25", "index": "idx"},
        "rerank": [{"type": "tk", "model": "tkm", "depth": 3, "name": "tk1"}], "k": 10})",
                         "tk.json");
    plumb::Query q{"q", "apple cherry"};
    auto r = p.search(q);
    // The same model applied by hand to BM25's top 3 (d4 d1 d3) with their text.
    plumb::rerank::TkStageOptions o;
    o.depth = 3;
    auto stage = plumb::rerank::make_tk_stage(f.dir / "tkm", o);
    std::vector<plumb::Candidate> head = {{"d4", 0, "apple cherry date", {}},
                                          {"d1", 0, "apple banana apple", {}},
                                          {"d3", 0, "cherry cherry cherry cherry", {}}};
    auto s = stage->score(q, head);
    ASSERT_EQ(s.size(), 3u);
    std::vector<std::size_t> order = {0, 1, 2};
    std::stable_sort(order.begin(), order.end(), [&](auto a, auto b) { return s[a] > s[b]; });
    ASSERT_EQ(r.list.candidates.size(), 4u);
    for (std::size_t i = 0; i < 3; ++i) {
        EXPECT_EQ(r.list.candidates[i].docid, head[order[i]].docid);
        ASSERT_EQ(r.list.candidates[i].trace.size(), 2u);
        EXPECT_EQ(r.list.candidates[i].trace[1].stage, "tk1");
        EXPECT_NEAR(r.list.candidates[i].trace[1].score, s[order[i]], 1e-5);
    }
    EXPECT_EQ(r.list.candidates[3].docid, "d2");
}

TEST(PipelineCli, SearchWithPipelineOption) {
    auto& f = fixture();
    write_file(f.dir / "topics2.tsv", "q1\tapple cherry\n");
    write_file(f.dir / "s.json", R"({"first_stage": {"type": "bm25", "index": "idx"},
        "post_filters": [{"type": "dedup", "shingle": 1, "threshold": 0.5}], "k": 10})");
    const auto ok =
        run_plumb("search --quiet --pipeline " + (f.dir / "s.json").string() + " --topics " +
                  (f.dir / "topics2.tsv").string() + " --output " + (f.dir / "srun.txt").string());
    ASSERT_EQ(ok.status, 0) << ok.out;
    std::vector<std::string> got;
    for (const auto& l : plumb::test::read_run_lines(f.dir / "srun.txt")) got.push_back(l.docid);
    // As in BuiltinNearDuplicatesFilter: d2 removed.
    EXPECT_EQ(got, (std::vector<std::string>{"d4", "d1", "d3"}));
    // Neither --index nor --pipeline: an error.
    const auto bad = run_plumb("search --quiet --topics " + (f.dir / "topics2.tsv").string() +
                                   " --output " + (f.dir / "srun2.txt").string(),
                               false);
    EXPECT_NE(bad.status, 0);
}

TEST(PipelineConfig, HybridInterpolationMinMax) {
    auto p = from_config(R"({"first_stage": {"type": "hybrid", "method": "interp", "alpha": 0.25,
        "stages": [{"type": "bm25", "index": "idx"}, {"type": "bm25", "index": "idx"}]}})",
                         "hi.json");
    auto r = p.search({"q", "apple cherry"});
    ASSERT_EQ(ids(r.list), (std::vector<std::string>{"d4", "d1", "d3", "d2"}));
    // Both lists alike: 0.25 x + 0.75 x = x = (s - 0.5636) / (1.3744 - 0.5636).
    EXPECT_NEAR(r.list.candidates[0].score, 1.0, 1e-6);
    EXPECT_NEAR(r.list.candidates[1].score, (1.1257 - 0.5636) / (1.3744 - 0.5636), 2e-3);
    EXPECT_NEAR(r.list.candidates[2].score, (0.8042 - 0.5636) / (1.3744 - 0.5636), 2e-3);
    EXPECT_NEAR(r.list.candidates[3].score, 0.0, 1e-6);
    EXPECT_THROW(from_config(R"({"first_stage": {"type": "hybrid", "method": "interp",
        "stages": [{"type": "bm25", "index": "idx"}]}})",
                             "hb.json"),
                 plumb::ConfigError);
}

TEST(Pipeline, CancelledBatchThrows) {
    auto p = from_config(kConfig, "x.json");
    std::vector<plumb::Query> qs(5, plumb::Query{"q", "apple"});
    plumb::CancelToken cancel;
    cancel.request();
    plumb::BatchOptions bo;
    bo.cancel = &cancel;
    EXPECT_THROW(p.search_batch(qs, bo), plumb::Error);
    EXPECT_EQ(p.stats()[0].count, 0u);
}

TEST(Registry, MovedRegistryStillBuildsCompositeStages) {
    plumb::Registry a;
    plumb::register_builtins(a);
    plumb::Registry b = std::move(a);
    write_file(fixture().dir / "mv.json", R"({"first_stage": {"type": "hybrid",
        "stages": [{"type": "bm25", "index": "idx"}, {"type": "bm25", "index": "idx"}]}})");
    auto p = plumb::load_pipeline(fixture().dir / "mv.json", b);
    EXPECT_EQ(ids(p.search({"q", "apple cherry"}).list),
              (std::vector<std::string>{"d4", "d1", "d3", "d2"}));
}

namespace {
/// Sleeps 80 ms on its first call and 1 ms on every other call (needs no text).
class SleepStage : public plumb::RerankStage {
public:
    std::string name() const override { return "sleep"; }
    std::size_t depth() const override { return 1; }
    plumb::StageNeeds needs() const override { return {false}; }
    std::vector<float> score(const plumb::Query&,
                             std::span<const plumb::Candidate> c) const override {
        bool first = m_calls.fetch_add(1) == 0;
        std::this_thread::sleep_for(std::chrono::milliseconds(first ? 80 : 1));
        return std::vector<float>(c.size(), 1.0f);
    }

private:
    mutable std::atomic<int> m_calls{0};
};
}  // namespace

TEST(Pipeline, StatisticsUseNearestRankPercentiles) {
    auto p = plumb::Pipeline::Builder()
                 .first_stage(std::make_shared<pi::Bm25Retriever>(fixture().searcher))
                 .rerank(std::make_shared<SleepStage>())
                 .build();
    for (int i = 0; i < 100; ++i) p.search({"q", "apple"});
    auto st = p.stats();
    ASSERT_EQ(st.size(), 2u);
    EXPECT_EQ(st[1].stage, "sleep");
    EXPECT_EQ(st[1].count, 100u);
    // 99 samples of >= 1 ms and one of >= 80 ms: mean >= (80 + 99) / 100; the nearest-rank p99
    // is the 99th smallest sample, i.e. not the 80 ms outlier; p50 >= 1 ms.
    EXPECT_GE(st[1].mean_ms, 1.79);
    EXPECT_GE(st[1].p50_ms, 1.0);
    EXPECT_LT(st[1].p50_ms, 80.0);
    EXPECT_LT(st[1].p99_ms, 80.0);
    EXPECT_GE(st[1].p99_ms, st[1].p50_ms);
}

/// A document source that lacks one document.
class MissingSource : public plumb::DocumentSource {
public:
    MissingSource(std::shared_ptr<const plumb::DocumentSource> s, std::string missing)
        : m_s(std::move(s)), m_missing(std::move(missing)) {}
    std::optional<std::string> text(std::string_view id) const override {
        if (id == m_missing) return std::nullopt;
        return m_s->text(id);
    }
    std::uint64_t size() const override { return m_s->size(); }

private:
    std::shared_ptr<const plumb::DocumentSource> m_s;
    std::string m_missing;
};

TEST(Pipeline, ACandidateWithoutTextIsAnErrorNotAnEmptyPassage) {
    auto& f = fixture();
    auto p = plumb::Pipeline::Builder()
                 .first_stage(std::make_shared<pi::Bm25Retriever>(f.searcher))
                 .rerank(std::make_shared<LengthStage>(3))
                 .documents(std::make_shared<MissingSource>(f.index, "d3"))
                 .build();
    // BM25 order for "apple cherry": d4 d1 d3 d2; d3 is in the re-ranked head.
    try {
        p.search({"q7", "apple cherry"});
        FAIL() << "a missing passage was scored as an empty one";
    } catch (const plumb::ConfigError& e) {
        EXPECT_NE(std::string(e.what()).find("'d3' (query q7)"), std::string::npos) << e.what();
    }
    // Below the head it is never fetched: no error.
    auto shallow = plumb::Pipeline::Builder()
                       .first_stage(std::make_shared<pi::Bm25Retriever>(f.searcher))
                       .rerank(std::make_shared<LengthStage>(2))
                       .documents(std::make_shared<MissingSource>(f.index, "d3"))
                       .build();
    EXPECT_EQ(ids(shallow.search({"q", "apple cherry"}).list),
              (std::vector<std::string>{"d1", "d4", "d3", "d2"}));
}

/// Records the number of lists each rerank() call receives.
class GroupStage : public plumb::RerankStage {
public:
    std::string name() const override { return "group"; }
    std::size_t depth() const override { return 10; }
    plumb::StageNeeds needs() const override { return {false}; }
    std::vector<float> score(const plumb::Query&,
                             std::span<const plumb::Candidate> c) const override {
        std::vector<float> out;
        for (const auto& x : c) out.push_back(-std::stof(x.docid.substr(1)));
        return out;
    }
    void rerank(std::span<const plumb::Query> queries,
                std::span<plumb::RankedList> lists) const override {
        std::lock_guard lock(m_mutex);
        sizes.push_back(queries.size());
        EXPECT_EQ(queries.size(), lists.size());
        for (std::size_t i = 0; i < lists.size(); ++i) {
            EXPECT_EQ(lists[i].qid, queries[i].id);
            plumb::apply_rerank_scores(lists[i], score(queries[i], lists[i].candidates), name());
        }
    }
    mutable std::vector<std::size_t> sizes;

private:
    mutable std::mutex m_mutex;
};

TEST(Pipeline, SearchBatchHandsStagesGroupsOfQueries) {
    auto& f = fixture();
    auto stage = std::make_shared<GroupStage>();
    auto p = plumb::Pipeline::Builder()
                 .first_stage(std::make_shared<pi::Bm25Retriever>(f.searcher))
                 .rerank(stage)
                 .post_filter(std::make_shared<DropFilter>("d2"))
                 .build();
    std::vector<plumb::Query> qs;
    const char* texts[] = {"apple cherry", "banana", "date", "cherry", "apple"};
    for (int i = 0; i < 11; ++i) qs.push_back({"q" + std::to_string(i), texts[i % 5]});
    std::vector<plumb::SearchResult> one;
    for (const auto& q : qs) one.push_back(p.search(q));
    stage->sizes.clear();
    plumb::BatchOptions bo;
    bo.group = 4;
    auto grouped = p.search_batch(qs, bo);
    // 11 queries in groups of 4: 4, 4, 3 lists per call.
    EXPECT_EQ(stage->sizes, (std::vector<std::size_t>{4, 4, 3}));
    ASSERT_EQ(grouped.size(), qs.size());
    for (std::size_t i = 0; i < qs.size(); ++i) {
        EXPECT_EQ(grouped[i].list.qid, qs[i].id);
        EXPECT_EQ(ids(grouped[i].list), ids(one[i].list)) << qs[i].id;
        ASSERT_EQ(grouped[i].timings.size(), 3u);  // group, ... per query
    }
}

TEST(Pipeline, LatencySamplesAreBounded) {
    auto& f = fixture();
    auto p = plumb::Pipeline::Builder()
                 .first_stage(std::make_shared<pi::Bm25Retriever>(f.searcher))
                 .build();
    // 70,000 searches: more than the 65,536 kept per stage; count and mean stay exact.
    plumb::BatchOptions bo;
    bo.group = 1000;
    std::vector<plumb::Query> qs(70000, plumb::Query{"q", "date"});
    p.search_batch(qs, bo);
    const auto st = p.stats();
    ASSERT_EQ(st.size(), 1u);
    EXPECT_EQ(st[0].count, 70000u);
    EXPECT_LE(st[0].p50_ms, st[0].p99_ms);
}

TEST(PipelineConfig, RunFirstStageReadsATrecRunInTrecEvalOrder) {
    auto& f = fixture();
    // Lines out of order; d7 and d8 tie: trec_eval ranks ties by docid descending.
    write_file(f.dir / "in.run",
               "q2 Q0 d2 1 0.5 r\nq1 Q0 d8 2 1.0 r\nq1 Q0 d1 1 3.0 r\nq1 Q0 d7 3 1.0 r\n");
    plumb::Registry registry;
    plumb::register_builtins(registry);
    plumb::StageContext ctx(f.dir);
    auto run = registry.make_retriever(nlohmann::json{{"type", "run"}, {"run", "in.run"}}, ctx);
    std::vector<plumb::Query> qs = {{"q1", ""}, {"q9", ""}, {"q2", ""}};
    auto lists = run->retrieve(qs, 2);
    ASSERT_EQ(lists.size(), 3u);
    EXPECT_EQ(ids(lists[0]), (std::vector<std::string>{"d1", "d8"}));
    EXPECT_TRUE(lists[1].candidates.empty());
    EXPECT_EQ(ids(lists[2]), (std::vector<std::string>{"d2"}));
    EXPECT_FLOAT_EQ(lists[0].candidates[1].score, 1.0f);
}
