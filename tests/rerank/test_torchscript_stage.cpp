#include <gtest/gtest.h>
#include <unistd.h>

#include <torch/script.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "plugin/error.hpp"
#include "rerank/torchscript_stage.hpp"
#include "tests/test_tmp.hpp"

namespace fs = std::filesystem;
using namespace plumb::rerank;

namespace {

fs::path temp_dir() {
    auto dir = plumb::test::process_dir("plumb_test_ts_");
    fs::create_directories(dir);
    return dir;
}

/// vocab.txt: [PAD]=0 [UNK]=1 [CLS]=2 [SEP]=3 hello=4 world=5 the=6
fs::path tokenizer_dir() {
    auto dir = temp_dir() / "tok";
    fs::create_directories(dir);
    std::ofstream(dir / "vocab.txt") << "[PAD]\n[UNK]\n[CLS]\n[SEP]\nhello\nworld\nthe\n";
    return dir;
}

/// Scripts a module from TorchScript source and saves it.
fs::path scripted(const std::string& name, const std::string& forward_src) {
    torch::jit::Module m("plumb_test_" + name);
    m.define(forward_src);
    auto p = temp_dir() / (name + ".pt");
    m.save(p.string());
    return p;
}

TorchScriptStageOptions options(const fs::path& model) {
    TorchScriptStageOptions o;
    o.model = model;
    o.tokenizer = tokenizer_dir();
    return o;
}

// Σ (id + 1) over the real (unmasked) positions: padding would add 1 per position if it leaked.
const char* kSumModel = R"(
def forward(self, input_ids, attention_mask, token_type_ids):
    return ((input_ids + 1) * attention_mask).sum(1).float()
)";

// [B, 2]: column 0 = -length, column 1 = length + 100 * (number of type-1 tokens)
const char* kTwoLabelModel = R"(
def forward(self, input_ids, attention_mask, token_type_ids):
    n = attention_mask.sum(1)
    t = (token_type_ids * attention_mask).sum(1)
    return (torch.stack([-n, n + 100 * t], 1).float(), n)
)";

}  // namespace

TEST(TorchScriptStage, HandComputedScoresIndependentOfBatching) {
    auto model = scripted("sum", kSumModel);
    // pairs: [CLS] hello [SEP] <passage> [SEP]
    //   "world"   -> ids 2 4 3 5 3    -> (3+5+4+6+4)       = 22
    //   "the the" -> ids 2 4 3 6 6 3  -> (3+5+4+7+7+4)     = 30
    //   ""        -> ids 2 4 3 3      -> (3+5+4+4)         = 16
    //   "zebra"   -> ids 2 4 3 1 3    -> (3+5+4+2+4)       = 18
    const std::vector<float> expect = {22, 30, 16, 18};
    std::vector<std::string_view> passages = {"world", "the the", "", "zebra"};
    for (std::size_t batch : {1, 2, 3, 8}) {
        for (bool group : {true, false}) {
            auto o = options(model);
            o.batch_size = batch;
            o.group_by_length = group;
            TorchScriptStage stage(o);
            EXPECT_EQ(stage.score_pairs("hello", passages), expect)
                << "batch " << batch << " group " << group;
        }
    }
}

TEST(TorchScriptStage, PositiveIndexOfTwoLabelOutputInTuple) {
    auto model = scripted("two", kTwoLabelModel);
    auto o = options(model);
    o.batch_size = 2;
    std::vector<std::string_view> passages = {"world", "the the", ""};
    // lengths 5, 6, 4; type-1 tokens: passage + final [SEP] = 2, 3, 1
    EXPECT_EQ(TorchScriptStage(o).score_pairs("hello", passages), (std::vector<float>{205, 306, 104}));
    o.positive_index = 0;
    EXPECT_EQ(TorchScriptStage(o).score_pairs("hello", passages), (std::vector<float>{-5, -6, -4}));
    o.positive_index = 2;
    EXPECT_THROW(TorchScriptStage(o).score_pairs("hello", passages), plumb::CheckpointError);
}

TEST(TorchScriptStage, TwoInputModelAndTruncation) {
    auto model = scripted("two_in", R"(
def forward(self, input_ids, attention_mask):
    return attention_mask.sum(1, keepdim=True).double()
)");
    auto o = options(model);
    o.pass_token_type_ids = false;
    o.max_length = 6;  // [CLS] hello [SEP] + at most 2 passage tokens + [SEP]
    std::vector<std::string_view> passages = {"the the the the", "world"};
    EXPECT_EQ(TorchScriptStage(o).score_pairs("hello", passages), (std::vector<float>{6, 5}));
    // the three-input contract on a two-input model fails cleanly, naming the file
    o.pass_token_type_ids = true;
    try {
        TorchScriptStage(o).score_pairs("hello", passages);
        FAIL() << "no CheckpointError";
    } catch (const plumb::CheckpointError& e) {
        EXPECT_NE(std::string(e.what()).find(model.string()), std::string::npos) << e.what();
    }
}

TEST(TorchScriptStage, RerankKeepsTailBelowDepth) {
    auto model = scripted("sum2", kSumModel);
    auto o = options(model);
    o.depth = 3;
    o.name = "ts";
    TorchScriptStage stage(o);
    EXPECT_EQ(stage.name(), "ts");
    EXPECT_EQ(stage.depth(), 3u);
    plumb::Query q{"q1", "hello"};
    plumb::RankedList list{"q1", {}};
    for (auto [id, text] : {std::pair{"d1", ""}, {"d2", "the the"}, {"d3", "world"},
                            {"d4", "the the the the"}}) {
        plumb::Candidate c;
        c.docid = id;
        c.text = text;
        c.score = 10.0f;
        list.candidates.push_back(c);
    }
    std::vector<plumb::RankedList> lists = {list};
    stage.rerank(std::span<const plumb::Query>(&q, 1), lists);
    const auto& c = lists[0].candidates;
    ASSERT_EQ(c.size(), 4u);
    EXPECT_EQ(c[0].docid, "d2");  // 30
    EXPECT_EQ(c[0].score, 30.0f);
    EXPECT_EQ(c[1].docid, "d3");  // 22
    EXPECT_EQ(c[2].docid, "d1");  // 16
    EXPECT_EQ(c[3].docid, "d4");  // beyond depth: kept last
    EXPECT_LT(c[3].score, c[2].score);
    ASSERT_EQ(c[0].trace.size(), 1u);
    EXPECT_EQ(c[0].trace[0].stage, "ts");
}

TEST(TorchScriptStage, BadModelsAreCheckpointErrors) {
    auto garbage = temp_dir() / "garbage.pt";
    std::ofstream(garbage) << "this is not a zip archive";
    auto error_of = [](const TorchScriptStageOptions& o) {
        try {
            TorchScriptStage s(o);
        } catch (const plumb::CheckpointError& e) {
            return std::string(e.what());
        }
        return std::string("<no CheckpointError>");
    };
    EXPECT_NE(error_of(options(garbage)).find(garbage.string()), std::string::npos);
    auto missing = temp_dir() / "missing.pt";
    EXPECT_NE(error_of(options(missing)).find("not found"), std::string::npos);

    // wrong output shape: [B, 2, 1]
    auto bad_shape = scripted("shape", R"(
def forward(self, input_ids, attention_mask, token_type_ids):
    return torch.zeros([input_ids.size(0), 2, 1])
)");
    TorchScriptStage stage(options(bad_shape));
    std::vector<std::string_view> passages = {"world"};
    try {
        stage.score_pairs("hello", passages);
        FAIL() << "no CheckpointError";
    } catch (const plumb::CheckpointError& e) {
        EXPECT_NE(std::string(e.what()).find("[1, 2, 1]"), std::string::npos) << e.what();
    }
    auto o = options(bad_shape);
    o.batch_size = 0;
    EXPECT_THROW(TorchScriptStage s(o), plumb::InvalidArgument);
}

TEST(TorchScriptStage, FromModelFolderWithSettings) {
    auto dir = temp_dir() / "folder";
    fs::create_directories(dir);
    fs::copy_file(scripted("two_f", kTwoLabelModel), dir / "cross.pt",
                  fs::copy_options::overwrite_existing);
    fs::copy_file(tokenizer_dir() / "vocab.txt", dir / "vocab.txt",
                  fs::copy_options::overwrite_existing);
    TorchScriptStageOptions base;
    base.depth = 7;
    auto stage = make_torchscript_stage(dir, base);
    EXPECT_EQ(stage->depth(), 7u);
    std::vector<std::string_view> passages = {"world"};
    EXPECT_EQ(stage->score_pairs("hello", passages), (std::vector<float>{205}));
    std::ofstream(dir / "torchscript.json") << R"({"positive_index": 0, "max_length": 4})";
    stage = make_torchscript_stage(dir / "cross.pt", base);
    // max_length 4: [CLS] hello [SEP] [SEP] -> the passage is cut entirely, -length = -4
    EXPECT_EQ(stage->score_pairs("hello", passages), (std::vector<float>{-4}));
    std::ofstream(dir / "torchscript.json") << R"({"positive_idx": 0})";
    EXPECT_THROW(make_torchscript_stage(dir, base), plumb::CheckpointError);
    fs::remove(dir / "torchscript.json");
    fs::copy_file(dir / "cross.pt", dir / "other.ts");
    EXPECT_THROW(make_torchscript_stage(dir, base), plumb::CheckpointError);  // ambiguous
}

TEST(TorchScriptStage, ConcurrentScoringGivesSameScores) {
    auto o = options(scripted("sum_mt", kSumModel));
    o.batch_size = 2;
    TorchScriptStage stage(o);
    std::vector<std::string_view> passages = {"world", "the the", "", "zebra", "hello world"};
    // hand-computed as above; "hello world" -> 2 4 3 4 5 3 -> 3+5+4+5+6+4 = 27
    const std::vector<float> expect = {22, 30, 16, 18, 27};
    std::vector<int> ok(3, 0);
    std::vector<std::thread> threads;
    for (int t = 0; t < 3; ++t) {
        threads.emplace_back([&, t] {
            bool same = true;
            for (int i = 0; i < 20; ++i) same &= stage.score_pairs("hello", passages) == expect;
            ok[t] = same;
        });
    }
    for (auto& th : threads) th.join();
    EXPECT_EQ(ok, (std::vector<int>{1, 1, 1}));
}
