// BERT-DOT from sentence-transformers folders (modules.json, 1_Pooling/config.json, optional
// 2_Normalize): pooling and normalisation come from the folder unless set explicitly. Expected
// vectors are the numpy reference's CLS / mean pooling (tests/rerank/reference/expected.json,
// computed independently of plumb), normalised here for the cosine case.

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "plugin/error.hpp"
#include "plugin/text_io.hpp"
#include "rerank/bi_encoder.hpp"
#include "tests/test_tmp.hpp"

namespace fs = std::filesystem;
using namespace plumb::rerank;

namespace {

const fs::path kRef = fs::path(PLUMB_SOURCE_DIR) / "tests/rerank/reference";

struct Single {
    std::string text;
    std::vector<float> cls, mean;
};

std::vector<Single> singles() {
    const auto j = nlohmann::json::parse(plumb::read_file(kRef / "expected.json"));
    std::vector<Single> out;
    for (const auto& c : j.at("models").at("tiny_bert_base")) {
        if (c.at("kind") != "single") continue;
        out.push_back({c.at("text").at(0).get<std::string>(), c.at("cls").get<std::vector<float>>(),
                       c.at("mean").get<std::vector<float>>()});
    }
    return out;
}

std::vector<float> normalized(std::vector<float> v) {
    double n = 0;
    for (float x : v) n += double(x) * x;
    n = std::sqrt(n);
    for (auto& x : v) x = static_cast<float>(x / n);
    return v;
}

void put(const fs::path& p, const std::string& text) {
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
}

// A sentence-transformers folder around the reference BERT: the Transformer module at `path`
// ("" = the folder itself, as current sentence-transformers writes it).
fs::path st_folder(const std::string& name, const std::string& pooling_json, bool normalize,
                   const std::string& transformer_path = "") {
    const auto dir = plumb::test::process_dir("plumb_test_st_") / name;
    const auto bert = transformer_path.empty() ? dir : dir / transformer_path;
    fs::create_directories(bert);
    for (const char* f : {"config.json", "vocab.txt", "model.safetensors"}) {
        fs::copy_file(kRef / "tiny_bert_base" / f, bert / f, fs::copy_options::overwrite_existing);
    }
    std::string modules = R"([{"idx": 0, "name": "0", "path": ")" + transformer_path +
                          R"(", "type": "sentence_transformers.models.Transformer"},
            {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"})";
    if (normalize) {
        modules += R"(, {"idx": 2, "name": "2", "path": "2_Normalize",
                        "type": "sentence_transformers.models.Normalize"})";
        fs::create_directories(dir / "2_Normalize");
    }
    put(dir / "modules.json", modules + "]");
    put(dir / "1_Pooling/config.json", pooling_json);
    return dir;
}

const char* kMean = R"({"word_embedding_dimension": 8, "pooling_mode_cls_token": false,
    "pooling_mode_mean_tokens": true, "pooling_mode_max_tokens": false,
    "pooling_mode_mean_sqrt_len_tokens": false})";
const char* kCls = R"({"word_embedding_dimension": 8, "pooling_mode_cls_token": true,
    "pooling_mode_mean_tokens": false, "pooling_mode_max_tokens": false,
    "pooling_mode_mean_sqrt_len_tokens": false})";

void expect_near(const std::vector<float>& a, const std::vector<float>& b) {
    ASSERT_EQ(a.size(), b.size());
    for (std::size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-5) << i;
}

std::vector<float> encode_one(const BiEncoder& e, const std::string& text) {
    std::string_view t = text;
    return e.encode_passages(std::span<const std::string_view>(&t, 1));
}

}  // namespace

TEST(SentenceTransformers, MeanPoolingAndNormalizeFromTheFolder) {
    const auto dir = st_folder("mean_norm", kMean, true);
    auto enc = BiEncoder::from_folder(dir);
    EXPECT_EQ(enc->options().pooling, Pooling::Mean);
    EXPECT_EQ(enc->options().similarity, Similarity::Cosine);
    for (const auto& s : singles()) expect_near(encode_one(*enc, s.text), normalized(s.mean));

    // Explicit options win over the folder.
    BiEncoderOptions o;
    o.pooling = Pooling::Cls;
    o.explicit_pooling = true;
    o.similarity = Similarity::Dot;
    o.explicit_similarity = true;
    enc = BiEncoder::from_folder(dir, o);
    EXPECT_EQ(enc->options().pooling, Pooling::Cls);
    EXPECT_EQ(enc->options().similarity, Similarity::Dot);
    for (const auto& s : singles()) expect_near(encode_one(*enc, s.text), s.cls);
}

TEST(SentenceTransformers, ClsWithoutNormalizeAndTransformerSubfolder) {
    BiEncoderOptions o;
    o.pooling = Pooling::Mean;  // not explicit: the folder decides
    auto enc = BiEncoder::from_folder(st_folder("cls", kCls, false, "0_Transformer"), o);
    EXPECT_EQ(enc->options().pooling, Pooling::Cls);
    EXPECT_EQ(enc->options().similarity, Similarity::Dot);
    for (const auto& s : singles()) expect_near(encode_one(*enc, s.text), s.cls);
    // A plain Hugging Face folder keeps the options as given.
    enc = BiEncoder::from_folder(kRef / "tiny_bert_base", o);
    EXPECT_EQ(enc->options().pooling, Pooling::Mean);
    EXPECT_FALSE(read_sentence_transformers_config(kRef / "tiny_bert_base").has_value());
}

TEST(SentenceTransformers, UnsupportedModulesAreErrorsNamingTheFile) {
    auto message = [](const fs::path& dir, BiEncoderOptions o = {}) {
        try {
            BiEncoder::from_folder(dir, o);
        } catch (const plumb::CheckpointError& e) {
            return std::string(e.what());
        }
        return std::string("<no CheckpointError>");
    };
    const auto max_dir = st_folder("max", R"({"pooling_mode_max_tokens": true})", false);
    std::string msg = message(max_dir);
    EXPECT_NE(msg.find("pooling mode 'max_tokens' is not supported"), std::string::npos) << msg;
    BiEncoderOptions o;
    o.explicit_pooling = true;  // the caller's pooling replaces the folder's
    EXPECT_EQ(message(max_dir, o), "<no CheckpointError>");

    const auto two = st_folder("two", R"({"pooling_mode_cls_token": true,
        "pooling_mode_mean_tokens": true})",
                               false);
    msg = message(two);
    EXPECT_NE(msg.find((two / "1_Pooling/config.json").string() + ": expected exactly one"),
              std::string::npos)
        << msg;

    const auto dense = st_folder("dense", kMean, false);
    put(dense / "modules.json",
        R"([{"path": "", "type": "sentence_transformers.models.Transformer"},
            {"path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
            {"path": "2_Dense", "type": "sentence_transformers.models.Dense"}])");
    msg = message(dense);
    EXPECT_NE(msg.find((dense / "modules.json").string() +
                       ": module 'sentence_transformers.models.Dense' (2_Dense) is not supported"),
              std::string::npos)
        << msg;

    put(dense / "modules.json", "[{");
    msg = message(dense);
    EXPECT_NE(msg.find((dense / "modules.json").string() + ":1: invalid JSON"), std::string::npos)
        << msg;
}
