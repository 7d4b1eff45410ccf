// BERT-CAT and BERT-DOT stages, the vector folder, the FAISS index and fusion. Model outputs are
// compared with the independent numpy reference (tests/rerank/reference/bert_reference.py).

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "plugin/error.hpp"
#include "plugin/text_io.hpp"
#include "index/index_builder.hpp"
#include "rerank/bi_encoder.hpp"
#include "rerank/bi_encoder_stage.hpp"
#include "rerank/cross_encoder.hpp"
#include "rerank/dense_index.hpp"
#include "rerank/dense_retriever.hpp"
#include "rerank/fusion.hpp"
#include "rerank/vector_store.hpp"
#include "tests/support/temp_dir.hpp"

namespace fs = std::filesystem;
using namespace plumb::rerank;
using plumb::Candidate;
using plumb::Query;
using plumb::RankedList;

namespace {

const fs::path kRef = fs::path(PLUMB_SOURCE_DIR) / "tests/rerank/reference";

const nlohmann::json& expected(const std::string& model) {
    static const auto j = nlohmann::json::parse(plumb::read_file(kRef / "expected.json"));
    return j.at("models").at(model);
}

/// A scratch folder (tests/support/temp_dir.hpp) with this file's name prefix.
struct TempDir : plumb::test::TempDir {
    TempDir() : plumb::test::TempDir("plumb_test_stages") {}
};

std::vector<float> normalised(std::vector<float> v) {
    double n = 0;
    for (float x : v) n += double(x) * x;
    for (float& x : v) x = static_cast<float>(x / std::sqrt(n));
    return v;
}

double dot(const std::vector<float>& a, const float* b) {
    double s = 0;
    for (std::size_t i = 0; i < a.size(); ++i) s += double(a[i]) * b[i];
    return s;
}

// The pair cases of the reference: (query, passage, logits).
struct PairCase {
    std::string query, passage;
    std::vector<float> logits;
};
std::vector<PairCase> pair_cases(const std::string& model) {
    std::vector<PairCase> out;
    for (const auto& c : expected(model)) {
        if (c.at("kind") != "pair") continue;
        out.push_back({c.at("text")[0].get<std::string>(), c.at("text")[1].get<std::string>(),
                       c.at("logits").get<std::vector<float>>()});
    }
    return out;
}

struct SingleCase {
    std::string text;
    std::vector<float> cls, mean;
};
std::vector<SingleCase> single_cases() {
    std::vector<SingleCase> out;
    for (const auto& c : expected("tiny_bert_base")) {
        if (c.at("kind") != "single") continue;
        out.push_back({c.at("text")[0].get<std::string>(), c.at("cls").get<std::vector<float>>(),
                       c.at("mean").get<std::vector<float>>()});
    }
    return out;
}

}  // namespace

TEST(CrossEncoder, OneLabelLogitMatchesReference) {
    auto stage = CrossEncoderStage::from_folder(kRef / "tiny_bert_cat1");
    auto cases = pair_cases("tiny_bert_cat1");
    ASSERT_EQ(cases.size(), 4u);
    for (const auto& c : cases) {
        std::string_view p = c.passage;
        auto s = stage->score_pairs(c.query, std::span<const std::string_view>(&p, 1));
        ASSERT_EQ(s.size(), 1u);
        EXPECT_NEAR(s[0], c.logits[0], 1e-5) << c.query << " / " << c.passage;
    }
}

TEST(CrossEncoder, TwoLabelHeadUsesPositiveLogitOrLogProbability) {
    auto cases = pair_cases("tiny_bert_cat2_gelu_new");
    std::vector<std::string_view> passages;
    for (const auto& c : cases) passages.push_back(c.passage);
    const std::string q = cases[0].query;  // all passages against the first query
    // The reference computed pair 0 only for its own query; check pair 0 and shape for others.
    CrossEncoderOptions o;
    auto pos = CrossEncoderStage::from_folder(kRef / "tiny_bert_cat2_gelu_new", o);
    auto s = pos->score_pairs(q, passages);
    EXPECT_NEAR(s[0], cases[0].logits[1], 1e-5);

    o.label = 0;
    auto neg = CrossEncoderStage::from_folder(kRef / "tiny_bert_cat2_gelu_new", o);
    EXPECT_NEAR(neg->score_pairs(q, passages)[0], cases[0].logits[0], 1e-5);

    o.label = -1;
    o.log_softmax = true;
    auto lsm = CrossEncoderStage::from_folder(kRef / "tiny_bert_cat2_gelu_new", o);
    const double a = cases[0].logits[0], b = cases[0].logits[1];
    const double want = b - std::log(std::exp(a) + std::exp(b));
    EXPECT_NEAR(lsm->score_pairs(q, passages)[0], want, 1e-5);

    o.label = 2;
    o.log_softmax = false;
    EXPECT_THROW(CrossEncoderStage::from_folder(kRef / "tiny_bert_cat2_gelu_new", o),
                 plumb::InvalidArgument);
    CrossEncoderOptions one;
    one.log_softmax = true;
    EXPECT_THROW(CrossEncoderStage::from_folder(kRef / "tiny_bert_cat1", one),
                 plumb::InvalidArgument);
    // A folder without a classifier cannot be a cross-encoder.
    EXPECT_THROW(CrossEncoderStage::from_folder(kRef / "tiny_bert_base"), plumb::CheckpointError);
}

TEST(CrossEncoder, DistilBertPairsMatchReference) {
    auto stage = CrossEncoderStage::from_folder(kRef / "tiny_distilbert_cat2");
    for (const auto& c : pair_cases("tiny_distilbert_cat2")) {
        std::string_view p = c.passage;
        EXPECT_NEAR(stage->score_pairs(c.query, std::span<const std::string_view>(&p, 1))[0],
                    c.logits[1], 1e-5);
    }
}

TEST(CrossEncoder, RerankReordersHeadKeepsTailAndBatchesAcrossQueries) {
    auto cases = pair_cases("tiny_bert_cat1");
    CrossEncoderOptions o;
    o.depth = 3;
    o.batch_size = 2;
    auto stage = CrossEncoderStage::from_folder(kRef / "tiny_bert_cat1", o);
    // One query per case, each with its own passage first, plus two other candidates.
    std::vector<Query> queries;
    std::vector<RankedList> lists;
    for (std::size_t i = 0; i < cases.size(); ++i) {
        queries.push_back({"q" + std::to_string(i), cases[i].query});
        RankedList l;
        l.qid = queries.back().id;
        for (std::size_t j = 0; j < 4; ++j) {
            const auto& c = cases[(i + j) % cases.size()];
            l.candidates.push_back({"d" + std::to_string((i + j) % cases.size()),
                                    10.0f - static_cast<float>(j),
                                    c.passage,
                                    {}});
        }
        lists.push_back(l);
    }
    auto per_query = lists;
    stage->rerank(queries, lists);
    for (std::size_t i = 0; i < lists.size(); ++i) {
        // Same result as the one-query score() path.
        auto scores = stage->score(queries[i], per_query[i].candidates);
        ASSERT_EQ(scores.size(), 3u);
        plumb::apply_rerank_scores(per_query[i], scores, stage->name());
        ASSERT_EQ(lists[i].candidates.size(), 4u);
        for (std::size_t j = 0; j < 4; ++j) {
            EXPECT_EQ(lists[i].candidates[j].docid, per_query[i].candidates[j].docid);
            EXPECT_NEAR(lists[i].candidates[j].score, per_query[i].candidates[j].score, 1e-5);
        }
        // The fourth candidate (beyond depth) stays last, below the head.
        EXPECT_EQ(lists[i].candidates[3].docid, "d" + std::to_string((i + 3) % cases.size()));
        EXPECT_LT(lists[i].candidates[3].score, lists[i].candidates[2].score);
        // The own passage's score is the reference logit.
        for (const auto& c : lists[i].candidates) {
            if (c.docid == "d" + std::to_string(i)) {
                EXPECT_NEAR(c.score, cases[i].logits[0], 1e-5);
                ASSERT_EQ(c.trace.size(), 1u);
                EXPECT_EQ(c.trace[0].stage, "bert-cat");
            }
        }
    }
}

TEST(BiEncoder, ClsAndMeanPoolingMatchReference) {
    auto cases = single_cases();
    std::vector<std::string_view> texts;
    for (const auto& c : cases) texts.push_back(c.text);
    for (auto pooling : {Pooling::Cls, Pooling::Mean}) {
        for (auto sim : {Similarity::Dot, Similarity::Cosine}) {
            BiEncoderOptions o;
            o.pooling = pooling;
            o.similarity = sim;
            o.batch_size = 2;
            auto enc = BiEncoder::from_folder(kRef / "tiny_bert_cat1", o);  // heads ignored
            ASSERT_EQ(enc->dim(), 8u);
            auto v = enc->encode_passages(texts);
            auto q = enc->encode_queries(texts);
            for (std::size_t i = 0; i < cases.size(); ++i) {
                auto want = pooling == Pooling::Cls ? cases[i].cls : cases[i].mean;
                if (sim == Similarity::Cosine) want = normalised(want);
                for (std::size_t j = 0; j < 8; ++j) {
                    EXPECT_NEAR(v[i * 8 + j], want[j], 1e-5);
                    EXPECT_NEAR(q[i * 8 + j], want[j], 1e-5);
                }
            }
        }
    }
}

TEST(BiEncoder, StageScoresAreDotProductsOfReferenceVectors) {
    auto cases = single_cases();
    auto enc = BiEncoder::from_folder(kRef / "tiny_bert_base");
    BiEncoderStage stage(enc, {2, "bert-dot"});
    Query q{"q1", cases[0].text};
    std::vector<Candidate> cands;
    for (std::size_t i = 0; i < cases.size(); ++i)
        cands.push_back({"d" + std::to_string(i), 0, cases[i].text, {}});
    auto s = stage.score(q, cands);
    ASSERT_EQ(s.size(), 2u);  // depth 2
    for (std::size_t i = 0; i < 2; ++i) {
        EXPECT_NEAR(s[i], dot(cases[0].cls, cases[i].cls.data()), 1e-4);
    }
}

namespace {

std::vector<std::pair<std::string, std::string>> tiny_collection() {
    std::vector<std::pair<std::string, std::string>> docs;
    int i = 0;
    for (const auto& c : single_cases()) docs.emplace_back("s" + std::to_string(i++), c.text);
    for (const auto& c : pair_cases("tiny_bert_cat1"))
        docs.emplace_back("p" + std::to_string(i++), c.passage);
    return docs;
}

DocumentStream stream_of(const std::vector<std::pair<std::string, std::string>>& docs) {
    auto pos = std::make_shared<std::size_t>(0);
    return [&docs, pos](plumb::DocId& id, std::string& text) {
        if (*pos >= docs.size()) return false;
        id = docs[*pos].first;
        text = docs[*pos].second;
        ++*pos;
        return true;
    };
}

}  // namespace

TEST(DenseIndex, EncodeResumeBuildSearch) {
    auto enc = BiEncoder::from_folder(kRef / "tiny_bert_base");
    auto docs = tiny_collection();
    TextEncoder encode = [&](std::span<const std::string_view> t) {
        return enc->encode_passages(t);
    };
    TempDir tmp;
    const auto dir = tmp.path / "vec";
    EncodeCollectionOptions eo;
    eo.chunk_size = 2;
    {  // first run cancelled after the first chunk
        VectorStoreWriter w(dir, enc->store_meta("tiny"));
        plumb::CancelToken cancel;
        auto progress = [&](std::uint64_t done, std::uint64_t) {
            if (done >= 2) cancel.request();
        };
        EXPECT_FALSE(
            encode_collection(w, stream_of(docs), encode, docs.size(), eo, progress, &cancel));
        EXPECT_EQ(w.count(), 2u);
        EXPECT_FALSE(w.complete());
    }
    EXPECT_THROW(DenseIndex::build(dir, {}), plumb::IndexError);  // incomplete
    {  // resumed with a changed collection: refused
        auto changed = docs;
        changed[1].first = "other";
        VectorStoreWriter w(dir, enc->store_meta("tiny"));
        EXPECT_THROW(encode_collection(w, stream_of(changed), encode, 0, eo), plumb::IndexError);
    }
    {  // other settings: refused
        EXPECT_THROW(VectorStoreWriter(dir, enc->store_meta("another-model")), plumb::IndexError);
    }
    {  // resumed: completes
        VectorStoreWriter w(dir, enc->store_meta("tiny"));
        EXPECT_EQ(w.count(), 2u);
        EXPECT_TRUE(encode_collection(w, stream_of(docs), encode, docs.size(), eo));
        EXPECT_TRUE(w.complete());
    }
    auto store = VectorStore::load(dir);
    ASSERT_EQ(store.ids.size(), docs.size());
    std::vector<std::string_view> texts;
    for (const auto& d : docs) texts.push_back(d.second);
    auto direct = enc->encode_passages(texts);
    ASSERT_EQ(store.vectors.size(), direct.size());
    for (std::size_t i = 0; i < direct.size(); ++i) EXPECT_NEAR(store.vectors[i], direct[i], 1e-6);
    for (std::size_t i = 0; i < docs.size(); ++i) EXPECT_EQ(store.ids[i], docs[i].first);

    // Exhaustive reference ranking for each doc used as a query.
    std::vector<std::string_view> queries = {docs[0].second, docs[4].second};
    auto qv = enc->encode_queries(queries);
    for (std::string factory : {"Flat", "HNSW8,Flat"}) {
        DenseIndex::build(dir, {factory, DenseMetric::InnerProduct});
        auto index = std::make_shared<const DenseIndex>(DenseIndex::load(dir, 8, 64));
        EXPECT_EQ(index->size(), docs.size());
        auto hits = index->search(qv, 3);
        for (std::size_t q = 0; q < queries.size(); ++q) {
            std::vector<std::pair<double, std::size_t>> all;
            for (std::size_t r = 0; r < docs.size(); ++r) {
                all.emplace_back(dot(std::vector<float>(qv.begin() + q * 8, qv.begin() + q * 8 + 8),
                                     direct.data() + r * 8),
                                 r);
            }
            std::sort(all.rbegin(), all.rend());
            ASSERT_EQ(hits[q].size(), 3u) << factory;
            for (std::size_t j = 0; j < 3; ++j) {
                EXPECT_EQ(hits[q][j].first, all[j].second) << factory;
                EXPECT_NEAR(hits[q][j].second, all[j].first, 1e-4);
            }
        }
        DenseRetriever retriever(enc, index);
        std::vector<Query> qs = {{"a", docs[0].second}};
        auto lists = retriever.retrieve(qs, 2);
        ASSERT_EQ(lists[0].candidates.size(), 2u);
        EXPECT_EQ(lists[0].qid, "a");
        EXPECT_EQ(lists[0].candidates[0].docid, docs[hits[0][0].first].first);
    }
    EXPECT_THROW(DenseIndex::load(dir, 16), plumb::IndexError);
    EXPECT_THROW(DenseIndex::build(dir, {"NoSuchIndex", DenseMetric::InnerProduct}),
                 plumb::InvalidArgument);
    // Corrupt chunk: truncated.
    fs::resize_file(dir / "chunk-000001.vec", fs::file_size(dir / "chunk-000001.vec") - 4);
    EXPECT_THROW(VectorStore::load(dir), plumb::IndexError);
}

TEST(Fusion, ReciprocalRankFusionByHand) {
    RankedList a{"q", {{"d1", 3, "", {}}, {"d2", 2, "", {}}, {"d3", 1, "", {}}}};
    RankedList b{"q", {{"d3", 9, "", {}}, {"d1", 8, "", {}}, {"d4", 7, "", {}}}};
    std::vector<RankedList> lists{a, b};
    auto r = reciprocal_rank_fusion(lists);
    ASSERT_EQ(r.candidates.size(), 4u);
    EXPECT_EQ(r.qid, "q");
    EXPECT_EQ(r.candidates[0].docid, "d1");
    EXPECT_NEAR(r.candidates[0].score, 1.0 / 61 + 1.0 / 62, 1e-7);
    EXPECT_EQ(r.candidates[1].docid, "d3");
    EXPECT_NEAR(r.candidates[1].score, 1.0 / 63 + 1.0 / 61, 1e-7);
    EXPECT_EQ(r.candidates[2].docid, "d2");
    EXPECT_EQ(r.candidates[3].docid, "d4");
    EXPECT_NEAR(r.candidates[3].score, 1.0 / 63, 1e-7);
    EXPECT_EQ(reciprocal_rank_fusion(lists, 60, 2).candidates.size(), 2u);
}

TEST(Fusion, MinMaxInterpolationByHand) {
    RankedList a{"q", {{"d1", 10, "", {}}, {"d2", 6, "", {}}, {"d3", 2, "", {}}}};
    RankedList b{"q", {{"d3", 3, "", {}}, {"d1", 2, "", {}}, {"d4", 1, "", {}}}};
    auto r = interpolate_scores(a, b, 0.5);
    ASSERT_EQ(r.candidates.size(), 4u);
    EXPECT_EQ(r.candidates[0].docid, "d1");
    EXPECT_NEAR(r.candidates[0].score, 0.75, 1e-7);
    EXPECT_EQ(r.candidates[1].docid, "d3");
    EXPECT_NEAR(r.candidates[1].score, 0.5, 1e-7);
    EXPECT_EQ(r.candidates[2].docid, "d2");
    EXPECT_NEAR(r.candidates[2].score, 0.25, 1e-7);
    EXPECT_EQ(r.candidates[3].docid, "d4");
    EXPECT_NEAR(r.candidates[3].score, 0.0, 1e-7);
    // alpha = 1: list a alone (d4 = 0 ties with d3 = 0: docid order).
    auto only_a = interpolate_scores(a, b, 1.0);
    EXPECT_EQ(only_a.candidates[0].docid, "d1");
    EXPECT_EQ(only_a.candidates[2].docid, "d3");
    EXPECT_EQ(only_a.candidates[3].docid, "d4");
    EXPECT_THROW(interpolate_scores(a, b, 1.5), plumb::InvalidArgument);
    // A list whose scores are all equal normalises to 1.
    RankedList flat{"q", {{"x", 5, "", {}}, {"y", 5, "", {}}}};
    auto f = interpolate_scores(flat, RankedList{}, 0.5);
    EXPECT_NEAR(f.candidates[0].score, 0.5, 1e-7);
    // Runs fused by qid; a qid only in b is kept.
    auto runs = fuse_runs({a}, {b, RankedList{"q2", {{"z", 1, "", {}}}}}, "rrf");
    ASSERT_EQ(runs.size(), 2u);
    EXPECT_EQ(runs[1].qid, "q2");
    EXPECT_THROW(fuse_runs({a}, {b}, "max"), plumb::InvalidArgument);
}

TEST(CollectionStream, IndexAndCorpusGiveTheSameDocumentsAndErrorsAreClear) {
    TempDir tmp;
    // CRLF line ends, a JSONL title joined to its text as indexed, an empty passage.
    auto write = [](const fs::path& p, const std::string& text) {
        std::ofstream(p, std::ios::binary) << text;
    };
    write(tmp.path / "c.tsv", "a1\tred apple\r\nb2\t\r\nc3\tgreen  pear\r\n");
    write(tmp.path / "c.jsonl", "{\"_id\": \"a1\", \"title\": \"Fruit\", \"text\": \"red apple\"}\n");
    auto drain = [](CollectionStream s) {
        std::vector<std::pair<std::string, std::string>> out;
        plumb::DocId id;
        std::string text;
        while (s.docs(id, text)) out.emplace_back(id, text);
        return out;
    };
    const std::vector<std::pair<std::string, std::string>> expected = {
        {"a1", "red apple"}, {"b2", ""}, {"c3", "green  pear"}};
    auto from_corpus = open_collection_stream({}, tmp.path / "c.tsv");
    EXPECT_EQ(from_corpus.total, 0u);  // unknown before reading
    EXPECT_EQ(drain(std::move(from_corpus)), expected);
    plumb::index::build_index(tmp.path / "c.tsv", tmp.path / "idx");
    auto from_index = open_collection_stream(tmp.path / "idx", {});
    EXPECT_EQ(from_index.total, 3u);
    EXPECT_EQ(drain(std::move(from_index)), expected);
    EXPECT_EQ(drain(open_collection_stream({}, tmp.path / "c.jsonl")),
              (std::vector<std::pair<std::string, std::string>>{{"a1", "Fruit red apple"}}));
    EXPECT_THROW(open_collection_stream(tmp.path / "idx", tmp.path / "c.tsv"), plumb::ConfigError);
    EXPECT_THROW(open_collection_stream({}, {}), plumb::ConfigError);
    EXPECT_THROW(open_collection_stream({}, tmp.path / "c.tsv", "xml"), plumb::InvalidArgument);
}
