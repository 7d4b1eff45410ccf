// A pipeline of Torch-free stages (BM25, a text re-rank stage, the near-duplicates post-filter
// over the re-ranked head, which has text)
// searched from several threads at once: the results equal sequential ones. Needs no LibTorch,
// so that the ThreadSanitizer tree (PLUMB_SANITIZE=thread scripts/test) runs it.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "debias/post_filters.hpp"
#include "index/bm25_retriever.hpp"
#include "index/bm25_searcher.hpp"
#include "index/index_builder.hpp"
#include "index/passage_index.hpp"
#include "plugin/pipeline.hpp"
#include "tests/support/temp_dir.hpp"

namespace fs = std::filesystem;
namespace pi = plumb::index;

namespace {

/// Re-rank stage: score = bytes of the passage text (needs text).
class LengthStage : public plumb::RerankStage {
public:
    std::string name() const override { return "len"; }
    std::size_t depth() const override { return 5; }
    std::vector<float> score(const plumb::Query&,
                             std::span<const plumb::Candidate> c) const override {
        std::vector<float> out;
        for (const auto& x : c) out.push_back(static_cast<float>(x.text.size()));
        return out;
    }
};

bool same(const plumb::SearchResult& a, const plumb::SearchResult& b) {
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
}

}  // namespace

TEST(PipelineConcurrency, ConcurrentSearchesEqualSequential) {
    plumb::test::TempDir dir("plumb_test_pipeline_concurrency");
    {
        std::ofstream out(dir / "c.tsv", std::ios::binary);
        const char* words[] = {"apple", "banana", "cherry", "date", "elder", "fig", "grape"};
        for (int d = 0; d < 60; ++d) {
            out << "d" << d << '\t';
            for (int w = 0; w < 3 + d % 5; ++w) out << words[(d * 3 + w * (d % 4 + 1)) % 7] << ' ';
            out << '\n';
        }
    }
    pi::build_index(dir / "c.tsv", dir / "idx", {});
    auto index = pi::PassageIndex::open(dir / "idx");
    auto searcher = std::make_shared<const pi::Bm25Searcher>(index);
    plumb::StageContext ctx;
    ctx.set_documents(index);  // the filter reads text beyond the re-ranker's depth
    auto p = plumb::Pipeline::Builder()
                 .first_stage(std::make_shared<pi::Bm25Retriever>(searcher, pi::SearchOptions{}, 2))
                 .rerank(std::make_shared<LengthStage>())
                 .post_filter(plumb::debias::make_post_filter(
                     nlohmann::json::parse(R"({"type": "near_duplicates", "shingle": 1,
                                               "threshold": 0.8, "depth": 5})"),
                     ctx))
                 .documents(index)
                 .k(10)
                 .build();
    std::vector<plumb::Query> qs;
    const char* texts[] = {"apple",      "cherry fig", "apple cherry", "banana grape",
                           "date elder", "fig",        "grape apple",  "nothing here"};
    for (int i = 0; i < 32; ++i) qs.push_back({"q" + std::to_string(i), texts[i % 8]});
    std::vector<plumb::SearchResult> seq;
    for (const auto& q : qs) seq.push_back(p.search(q));

    std::vector<std::vector<plumb::SearchResult>> par(4);
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
        threads.emplace_back([&, t] {
            for (std::size_t i = 0; i < qs.size(); ++i) {
                par[t].push_back(p.search(qs[(i + t * 5) % qs.size()]));
            }
        });
    }
    for (auto& t : threads) t.join();
    for (int t = 0; t < 4; ++t) {
        for (std::size_t i = 0; i < qs.size(); ++i) {
            EXPECT_TRUE(same(par[t][i], seq[(i + t * 5) % qs.size()])) << t << " " << i;
        }
    }
    plumb::BatchOptions bo;
    bo.threads = 4;
    auto batch = p.search_batch(qs, bo);
    ASSERT_EQ(batch.size(), qs.size());
    for (std::size_t i = 0; i < qs.size(); ++i) EXPECT_TRUE(same(batch[i], seq[i])) << i;
}
