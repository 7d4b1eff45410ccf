// The built-in stages through a pipeline configuration: dense (BERT-DOT ANN over a FAISS index
// built by `plumb encode`), hybrid (BM25 + dense, rrf and interpolation), and the cat / dot / tk
// / torchscript re-rank stages, each followed by a bias-aware post-filter on its scores. Models
// are tiny: the reference BERT checkpoints of tests/rerank/reference, a TK model created here,
// and a TorchScript module defined here. Expected values are computed independently: by calling
// the model / stage API directly on the same candidates, by brute-force dot products, or by hand.
#include <gtest/gtest.h>
#include <torch/script.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "index/bm25_retriever.hpp"
#include "index/index_builder.hpp"
#include "plugin/builtins/builtins.hpp"
#include "plugin/error.hpp"
#include "plugin/pipeline.hpp"
#include "plugin/pipeline_config.hpp"
#include "plugin/registry.hpp"
#include "rerank/bi_encoder.hpp"
#include "rerank/bi_encoder_stage.hpp"
#include "rerank/cross_encoder.hpp"
#include "rerank/tk_model.hpp"
#include "rerank/tk_stage.hpp"
#include "rerank/torchscript_stage.hpp"
#include "tests/support/cli.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/tiny_index.hpp"

namespace fs = std::filesystem;
namespace pi = plumb::index;
namespace pr = plumb::rerank;
using plumb::test::read_text;
using plumb::test::write_file;

namespace {

const fs::path kRef = fs::path(PLUMB_SOURCE_DIR) / "tests/rerank/reference";

// Every word is in the tiny BERT vocabulary (tests/rerank/reference/tiny_bert_base/vocab.txt),
// so that WordPiece gives one known id per word. For the query "the cat sat" (no stemming, no
// stop words) BM25 retrieves p1, p4, p7 (two or more query words) and p2, p6 (only "the").
const std::vector<std::pair<std::string, std::string>> kDocs = {
    {"p1", "the cat sat on the mat"},  {"p2", "the dog ran"}, {"p3", "a big red fish swim"},
    {"p4", "the cat ran on a tree"},   {"p5", "hello world"}, {"p6", "where is the bird"},
    {"p7", "the big dog sat on a car"}};
const plumb::Query kQuery{"q", "the cat sat"};

std::string text_of(const std::string& id) {
    for (const auto& [d, t] : kDocs)
        if (d == id) return t;
    return {};
}

/// The index of kDocs, built on first use and shared by the tests of this process; the index
/// objects are never destroyed, the folder is removed at exit.
const plumb::test::TinyIndex& fixture() {
    static const plumb::test::TempDir dir("plumb_test_builtins");
    static const auto* f = [] {
        std::string corpus;
        for (const auto& [id, text] : kDocs) corpus += id + "\t" + text + "\n";
        return new plumb::test::TinyIndex(plumb::test::build_tiny_index(dir.path, corpus));
    }();
    return *f;
}

plumb::Pipeline from_config(const std::string& text, const std::string& name) {
    plumb::Registry r;
    plumb::register_builtins(r);
    write_file(fixture().dir / name, text);
    return plumb::load_pipeline(fixture().dir / name, r);
}

/// BM25 top-n of the query, straight from the index API, with passage text.
std::vector<plumb::Candidate> bm25_top(std::size_t n) {
    pi::Bm25Retriever retriever(fixture().searcher);
    auto lists = retriever.retrieve(std::span<const plumb::Query>(&kQuery, 1), n);
    auto c = lists.at(0).candidates;
    for (auto& x : c) x.text = text_of(x.docid);
    return c;
}

std::string abs(const fs::path& p) { return p.string(); }

/// Checks a pipeline "BM25 top 5 -> `stage` (depth 3) -> bias_balance (k 3)" against the stage
/// applied directly to BM25's top 3: (a) final scores are the stage's, (b) traces and timings,
/// (c) the two candidates below depth keep BM25 order below the head, (d) the post-filter's
/// reported utility before is the sum of the stage's top-3 scores.
void check_rerank_pipeline(const std::string& stage_json, const std::string& stage_name,
                           const plumb::RerankStage& direct, const std::string& file) {
    write_file(fixture().dir / "words.txt", "cat,f\ndog,m\n");
    auto p = from_config(R"({"first_stage": {"type": "bm25", "index": "idx"},
        "rerank": [)" + stage_json +
                             R"(],
        "post_filters": [{"type": "bias_balance", "budget": 0, "k": 3, "words": "words.txt"}],
        "candidates": 5, "k": 5, "return_text": true})",
                         file);
    auto bm = bm25_top(5);
    ASSERT_EQ(bm.size(), 5u);
    std::vector<plumb::Candidate> head(bm.begin(), bm.begin() + 3);
    auto s = direct.score(kQuery, head);
    ASSERT_EQ(s.size(), 3u);
    std::vector<std::size_t> order = {0, 1, 2};
    std::stable_sort(order.begin(), order.end(), [&](auto a, auto b) { return s[a] > s[b]; });

    auto r = p.search(kQuery);
    ASSERT_EQ(r.list.candidates.size(), 5u);
    for (std::size_t i = 0; i < 3; ++i) {
        const auto& c = r.list.candidates[i];
        EXPECT_EQ(c.docid, head[order[i]].docid) << stage_name << " rank " << i;
        EXPECT_NEAR(c.score, s[order[i]], 1e-4) << stage_name;
        EXPECT_EQ(c.text, text_of(c.docid));
        ASSERT_EQ(c.trace.size(), 2u) << stage_name;
        EXPECT_EQ(c.trace[0].stage, "bm25");
        EXPECT_NEAR(c.trace[0].score, head[order[i]].score, 1e-5);
        EXPECT_EQ(c.trace[1].stage, stage_name);
        EXPECT_NEAR(c.trace[1].score, s[order[i]], 1e-4);
    }
    const float head_min = *std::min_element(s.begin(), s.end());
    for (std::size_t i = 3; i < 5; ++i) {
        const auto& c = r.list.candidates[i];
        EXPECT_EQ(c.docid, bm[i].docid) << stage_name << ": below depth keeps BM25 order";
        EXPECT_LT(c.score, head_min);
        EXPECT_EQ(c.trace.front().stage, "bm25");
        EXPECT_NEAR(c.trace.front().score, bm[i].score, 1e-5);
    }
    std::vector<std::string> timed;
    for (const auto& t : r.timings) {
        timed.push_back(t.stage);
        EXPECT_GE(t.ms, 0.0);
    }
    EXPECT_EQ(timed, (std::vector<std::string>{"bm25", "text", stage_name, "bias_balance"}));
    auto stats = p.stats();
    ASSERT_EQ(stats.size(), 4u);
    for (const auto& st : stats) EXPECT_EQ(st.count, 1u) << st.stage;

    // (d) The post-filter saw the neural scores: with budget 0 nothing moves, and its utility
    // before (and after) is the sum of the stage's three scores.
    ASSERT_EQ(r.reports.size(), 1u);
    EXPECT_EQ(r.reports[0].stage, "bias_balance");
    std::map<std::string, double> m(r.reports[0].measures.begin(), r.reports[0].measures.end());
    EXPECT_NEAR(m.at("utility_before"), double(s[0]) + s[1] + s[2], 1e-4);
    EXPECT_NEAR(m.at("utility_after"), m.at("utility_before"), 1e-9);
    EXPECT_EQ(m.at("k"), 3.0);
    // Bias (tc, computed from the text with the word list cat = f, dog = m): the head is
    // {p1, p4, p7}: p1 and p4 one female word each, p7 one male word -> (1 - 2) / 3.
    EXPECT_NEAR(m.at("bias_before"), -1.0 / 3.0, 1e-9);
}

}  // namespace

TEST(BuiltinsPipeline, CatStage) {
    pr::CrossEncoderOptions o;
    o.depth = 3;
    auto direct = pr::CrossEncoderStage::from_folder(kRef / "tiny_bert_cat1", o);
    check_rerank_pipeline(R"({"type": "cat", "model": ")" + abs(kRef / "tiny_bert_cat1") +
                              R"(", "depth": 3, "name": "cat1", "batch_size": 2})",
                          "cat1", *direct, "cat.json");
}

TEST(BuiltinsPipeline, DotStageIsTheDotProductOfEncodedVectors) {
    auto enc = pr::BiEncoder::from_folder(kRef / "tiny_bert_base");
    pr::BiEncoderStageOptions so;
    so.depth = 3;
    pr::BiEncoderStage direct(enc, so);
    check_rerank_pipeline(R"({"type": "dot", "model": ")" + abs(kRef / "tiny_bert_base") +
                              R"(", "depth": 3, "name": "dot1"})",
                          "dot1", direct, "dot.json");
    // The stage's scores are q · p of the encoder's own vectors.
    auto head = bm25_top(3);
    auto s = direct.score(kQuery, head);
    std::string_view qt = kQuery.text;
    auto qv = enc->encode_queries(std::span<const std::string_view>(&qt, 1));
    for (std::size_t i = 0; i < head.size(); ++i) {
        std::string_view pt = head[i].text;
        auto pv = enc->encode_passages(std::span<const std::string_view>(&pt, 1));
        ASSERT_EQ(pv.size(), qv.size());
        double d = 0;
        for (std::size_t j = 0; j < qv.size(); ++j) d += double(qv[j]) * pv[j];
        EXPECT_NEAR(s[i], d, 1e-4);
    }
}

TEST(BuiltinsPipeline, TkStage) {
    pr::TkConfig c;
    c.embedding_dim = 8;
    c.layers = 1;
    c.heads = 2;
    c.head_dim = 4;
    c.ff_dim = 8;
    std::vector<std::string> words = {"the", "cat", "sat", "on",   "mat",  "dog",  "ran",
                                      "a",   "big", "red", "fish", "swim", "tree", "car"};
    auto model = pr::TkModel::create(c, pr::TkVocabulary(words), {}, 5);
    model.save(fixture().dir / "tk");
    auto direct = pr::make_tk_stage(fixture().dir / "tk", {3, 64, 0, "tk", ""});
    check_rerank_pipeline(R"({"type": "tk", "model": "tk", "depth": 3})", "tk", *direct, "tk.json");
}

TEST(BuiltinsPipeline, TorchScriptStageScoresAreHandComputable) {
    const auto dir = fixture().dir / "ts";
    fs::create_directories(dir);
    fs::copy_file(kRef / "tiny_bert_cat1/vocab.txt", dir / "vocab.txt",
                  fs::copy_options::overwrite_existing);
    torch::jit::Module m("plumb_test_sum");
    m.define(R"(
def forward(self, input_ids, attention_mask, token_type_ids):
    return ((input_ids + 1) * attention_mask).sum(1).float()
)");
    m.save((dir / "model.pt").string());
    pr::TorchScriptStageOptions o;
    o.depth = 3;
    auto direct = pr::make_torchscript_stage(dir, o);
    check_rerank_pipeline(R"({"type": "torchscript", "model": "ts", "depth": 3, "name": "ts"})",
                          "ts", *direct, "ts.json");
    // Σ (id + 1) over [CLS] query [SEP] passage [SEP], ids = line numbers (from 0) of vocab.txt.
    std::map<std::string, int> vocab;
    {
        std::istringstream in(read_text(dir / "vocab.txt"));
        std::string w;
        int i = 0;
        while (std::getline(in, w)) vocab[w] = i++;
    }
    auto sum = [&](const std::string& text) {
        std::istringstream in(text);
        std::string w;
        double s = 0;
        while (in >> w) s += vocab.at(w) + 1;
        return s;
    };
    const double special = (vocab.at("[CLS]") + 1) + 2.0 * (vocab.at("[SEP]") + 1);
    auto r = from_config(R"({"first_stage": {"type": "bm25", "index": "idx"},
        "rerank": [{"type": "torchscript", "model": "ts", "depth": 5}], "k": 5})",
                         "ts2.json")
                 .search(kQuery);
    ASSERT_EQ(r.list.candidates.size(), 5u);
    for (const auto& c : r.list.candidates) {
        EXPECT_DOUBLE_EQ(c.score, special + sum(kQuery.text) + sum(text_of(c.docid))) << c.docid;
    }
}

namespace {

/// The dense fixture: vectors of the corpus encoded by `plumb encode` (flat FAISS index), and
/// the brute-force ranking of every passage by q · p with the encoder's own vectors.
struct Dense {
    std::vector<std::pair<std::string, double>> ranking;  // best first, ties by docid
};

const Dense& dense() {
    static Dense* d = [] {
        auto& f = fixture();
        const auto r =
            plumb::test::run_plumb("encode --quiet --index " + (f.dir / "idx").string() +
                                   " --model " + (kRef / "tiny_bert_base").string() + " --output " +
                                   (f.dir / "vec").string() + " --factory Flat");
        EXPECT_EQ(r.status, 0) << r.out;
        auto enc = pr::BiEncoder::from_folder(kRef / "tiny_bert_base");
        std::string_view qt = kQuery.text;
        auto qv = enc->encode_queries(std::span<const std::string_view>(&qt, 1));
        auto* x = new Dense;
        for (const auto& [id, text] : kDocs) {
            std::string_view pt = text;
            auto pv = enc->encode_passages(std::span<const std::string_view>(&pt, 1));
            double s = 0;
            for (std::size_t j = 0; j < qv.size(); ++j) s += double(qv[j]) * pv[j];
            x->ranking.emplace_back(id, s);
        }
        std::stable_sort(x->ranking.begin(), x->ranking.end(),
                         [](const auto& a, const auto& b) { return a.second > b.second; });
        return x;
    }();
    return *d;
}

}  // namespace

TEST(BuiltinsPipeline, DenseFirstStageEqualsBruteForce) {
    const auto& d = dense();
    auto p = from_config(
        R"({"first_stage": {"type": "dense", "model": ")" + abs(kRef / "tiny_bert_base") +
            R"(", "vectors": "vec", "index": "idx"}, "k": 4, "return_text": true})",
        "dense.json");
    auto r = p.search(kQuery);
    ASSERT_EQ(r.list.candidates.size(), 4u);
    for (std::size_t i = 0; i < 4; ++i) {
        const auto& c = r.list.candidates[i];
        EXPECT_EQ(c.docid, d.ranking[i].first) << i;
        EXPECT_NEAR(c.score, d.ranking[i].second, 1e-4);
        EXPECT_EQ(c.text, text_of(c.docid));  // the "index" is the document source
        ASSERT_FALSE(c.trace.empty());
        EXPECT_EQ(c.trace[0].stage, "dense");
    }
    ASSERT_EQ(r.timings.size(), 1u);
    EXPECT_EQ(r.timings[0].stage, "dense");
    // A vector folder that does not exist: an error.
    EXPECT_THROW(from_config(R"({"first_stage": {"type": "dense", "model": ")" +
                                 abs(kRef / "tiny_bert_base") + R"(", "vectors": "nothing"}})",
                             "dense_bad.json"),
                 plumb::Error);
}

TEST(BuiltinsPipeline, HybridRrfOfBm25AndDenseByHand) {
    const auto& d = dense();
    auto p = from_config(R"({"first_stage": {"type": "hybrid", "method": "rrf", "rrf_k": 60,
        "stages": [{"type": "bm25", "index": "idx"},
                   {"type": "dense", "model": ")" +
                             abs(kRef / "tiny_bert_base") + R"(", "vectors": "vec"}]},
        "candidates": 4, "k": 4})",
                         "rrf.json");
    auto r = p.search(kQuery);
    // Each part retrieves 4; RRF score = Σ 1 / (60 + rank) over the lists holding the passage.
    auto bm = bm25_top(4);
    std::map<std::string, double> fused;
    for (std::size_t i = 0; i < bm.size(); ++i) fused[bm[i].docid] += 1.0 / (60.0 + i + 1);
    for (std::size_t i = 0; i < 4; ++i) fused[d.ranking[i].first] += 1.0 / (60.0 + i + 1);
    std::vector<std::pair<std::string, double>> want(fused.begin(), fused.end());  // by docid
    std::stable_sort(want.begin(), want.end(),
                     [](const auto& a, const auto& b) { return a.second > b.second; });
    want.resize(4);
    ASSERT_EQ(r.list.candidates.size(), 4u);
    for (std::size_t i = 0; i < 4; ++i) {
        EXPECT_EQ(r.list.candidates[i].docid, want[i].first) << i;
        EXPECT_NEAR(r.list.candidates[i].score, want[i].second, 1e-6);
    }
    EXPECT_EQ(r.timings.at(0).stage, "hybrid");
}

TEST(BuiltinsPipeline, HybridInterpolationOfBm25AndDenseByHand) {
    const auto& d = dense();
    auto p = from_config(R"({"first_stage": {"type": "hybrid", "method": "interp", "alpha": 0.3,
        "stages": [{"type": "bm25", "index": "idx"},
                   {"type": "dense", "model": ")" +
                             abs(kRef / "tiny_bert_base") + R"(", "vectors": "vec"}]},
        "candidates": 4, "k": 4})",
                         "interp.json");
    auto r = p.search(kQuery);
    // 0.3 · minmax(BM25 top 4) + 0.7 · minmax(dense top 4); absent from a list: 0 from it.
    auto bm = bm25_top(4);
    std::map<std::string, double> fused;
    const double bmax = bm.front().score, bmin = bm.back().score;
    for (const auto& c : bm) fused[c.docid] += 0.3 * (c.score - bmin) / (bmax - bmin);
    const double dmax = d.ranking[0].second, dmin = d.ranking[3].second;
    for (std::size_t i = 0; i < 4; ++i)
        fused[d.ranking[i].first] += 0.7 * (d.ranking[i].second - dmin) / (dmax - dmin);
    std::vector<std::pair<std::string, double>> want(fused.begin(), fused.end());
    std::stable_sort(want.begin(), want.end(),
                     [](const auto& a, const auto& b) { return a.second > b.second; });
    want.resize(4);
    ASSERT_EQ(r.list.candidates.size(), 4u);
    for (std::size_t i = 0; i < 4; ++i) {
        EXPECT_EQ(r.list.candidates[i].docid, want[i].first) << i;
        EXPECT_NEAR(r.list.candidates[i].score, want[i].second, 1e-4);
    }
}
