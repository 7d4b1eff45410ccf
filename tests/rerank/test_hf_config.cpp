#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "plugin/error.hpp"
#include "rerank/hf_config.hpp"
#include "tests/test_tmp.hpp"

namespace fs = std::filesystem;
using namespace plumb::rerank;

namespace {

fs::path temp_dir(const std::string& sub) {
    auto dir = plumb::test::process_dir("plumb_test_cfg_") / sub;
    fs::create_directories(dir);
    return dir;
}

void write(const fs::path& p, const std::string& text) { std::ofstream(p, std::ios::binary) << text; }

std::string checkpoint_error(const std::string& json) {
    try {
        parse_hf_config(json, "cfg.json");
    } catch (const plumb::CheckpointError& e) {
        return e.what();
    }
    return "<no CheckpointError>";
}

// A cross-encoder config as Hugging Face writes it (MiniLM-style, one label).
const char* kBertJson = R"({
  "_name_or_path": "cross-encoder/ms-marco-MiniLM-L-6-v2",
  "architectures": ["BertForSequenceClassification"],
  "attention_probs_dropout_prob": 0.1,
  "classifier_dropout": null,
  "gradient_checkpointing": false,
  "hidden_act": "gelu",
  "hidden_dropout_prob": 0.1,
  "hidden_size": 384,
  "id2label": {"0": "LABEL_0"},
  "initializer_range": 0.02,
  "intermediate_size": 1536,
  "label2id": {"LABEL_0": 0},
  "layer_norm_eps": 1e-12,
  "max_position_embeddings": 512,
  "model_type": "bert",
  "num_attention_heads": 12,
  "num_hidden_layers": 6,
  "pad_token_id": 0,
  "position_embedding_type": "absolute",
  "transformers_version": "4.36.0",
  "type_vocab_size": 2,
  "use_cache": true,
  "vocab_size": 30522
})";

const char* kDistilJson = R"({
  "activation": "gelu",
  "architectures": ["DistilBertForMaskedLM"],
  "attention_dropout": 0.1,
  "dim": 768,
  "dropout": 0.1,
  "hidden_dim": 3072,
  "initializer_range": 0.02,
  "max_position_embeddings": 512,
  "model_type": "distilbert",
  "n_heads": 12,
  "n_layers": 6,
  "pad_token_id": 0,
  "qa_dropout": 0.1,
  "seq_classif_dropout": 0.2,
  "sinusoidal_pos_embds": false,
  "tie_weights_": true,
  "vocab_size": 30522
})";

}  // namespace

TEST(HfConfig, ParsesBertCrossEncoder) {
    HfConfig c = parse_hf_config(kBertJson);
    EXPECT_EQ(c.model_type, ModelType::Bert);
    EXPECT_EQ(c.vocab_size, 30522);
    EXPECT_EQ(c.hidden_size, 384);
    EXPECT_EQ(c.num_hidden_layers, 6);
    EXPECT_EQ(c.num_attention_heads, 12);
    EXPECT_EQ(c.head_dim(), 32);
    EXPECT_EQ(c.intermediate_size, 1536);
    EXPECT_EQ(c.hidden_act, "gelu");
    EXPECT_EQ(c.max_position_embeddings, 512);
    EXPECT_EQ(c.type_vocab_size, 2);
    EXPECT_DOUBLE_EQ(c.layer_norm_eps, 1e-12);
    EXPECT_EQ(c.num_labels, 1);
    EXPECT_EQ(c.id2label, (std::vector<std::string>{"LABEL_0"}));
    EXPECT_EQ(c.architectures, (std::vector<std::string>{"BertForSequenceClassification"}));
}

TEST(HfConfig, BertDefaultsAreBertBase) {
    HfConfig c = parse_hf_config(R"({"model_type": "bert"})");
    EXPECT_EQ(c.hidden_size, 768);
    EXPECT_EQ(c.num_hidden_layers, 12);
    EXPECT_EQ(c.num_attention_heads, 12);
    EXPECT_EQ(c.intermediate_size, 3072);
    EXPECT_EQ(c.num_labels, 2);  // PretrainedConfig default
    EXPECT_TRUE(c.id2label.empty());
    EXPECT_EQ(parse_hf_config(R"({"model_type": "bert", "num_labels": 1})").num_labels, 1);
}

TEST(HfConfig, ParsesDistilBert) {
    HfConfig c = parse_hf_config(kDistilJson);
    EXPECT_EQ(c.model_type, ModelType::DistilBert);
    EXPECT_EQ(c.hidden_size, 768);
    EXPECT_EQ(c.num_hidden_layers, 6);
    EXPECT_EQ(c.num_attention_heads, 12);
    EXPECT_EQ(c.intermediate_size, 3072);
    EXPECT_EQ(c.hidden_act, "gelu");
    EXPECT_EQ(c.type_vocab_size, 0);
    EXPECT_FALSE(c.sinusoidal_pos_embds);
    EXPECT_DOUBLE_EQ(c.layer_norm_eps, 1e-12);
    EXPECT_EQ(parse_hf_config(R"({"model_type":"distilbert","sinusoidal_pos_embds":true})")
                  .sinusoidal_pos_embds,
              true);
}

TEST(HfConfig, SaveAndLoadRoundTripKeepsUnknownKeys) {
    auto dir = temp_dir("rt");
    write(dir / "config.json", kBertJson);
    HfConfig c = load_hf_config(dir);
    c.num_hidden_layers = 2;
    c.id2label = {"neg", "pos"};
    c.num_labels = 2;
    save_hf_config(dir, c);
    HfConfig d = load_hf_config(dir / "config.json");
    EXPECT_EQ(d.num_hidden_layers, 2);
    EXPECT_EQ(d.hidden_size, 384);
    EXPECT_EQ(d.num_labels, 2);
    EXPECT_EQ(d.id2label, (std::vector<std::string>{"neg", "pos"}));
    auto j = nlohmann::json::parse(std::ifstream(dir / "config.json"));
    EXPECT_EQ(j["transformers_version"], "4.36.0");  // unknown key kept
    EXPECT_EQ(j["label2id"]["pos"], 1);
    EXPECT_EQ(j["num_hidden_layers"], 2);

    // DistilBERT is written with DistilBERT's key names
    HfConfig e = parse_hf_config(kDistilJson);
    e.hidden_size = 64;
    e.num_attention_heads = 4;
    save_hf_config(dir / "distil.json", e);
    auto k = nlohmann::json::parse(std::ifstream(dir / "distil.json"));
    EXPECT_EQ(k["dim"], 64);
    EXPECT_EQ(k["n_heads"], 4);
    EXPECT_FALSE(k.contains("hidden_size"));
    EXPECT_EQ(load_hf_config(dir / "distil.json").hidden_size, 64);

    // a config built in code
    HfConfig fresh;
    fresh.hidden_size = 32;
    fresh.num_attention_heads = 2;
    fresh.intermediate_size = 64;
    fresh.num_hidden_layers = 1;
    fresh.vocab_size = 100;
    fresh.num_labels = 1;
    save_hf_config(dir / "fresh.json", fresh);
    HfConfig g = load_hf_config(dir / "fresh.json");
    EXPECT_EQ(g.hidden_size, 32);
    EXPECT_EQ(g.vocab_size, 100);
    EXPECT_EQ(g.num_labels, 1);
}

TEST(HfConfig, ErrorsNameFileAndKey) {
    auto has = [](const std::string& msg, const std::string& part) {
        return msg.find(part) != std::string::npos;
    };
    std::string m = checkpoint_error("{not json");
    EXPECT_TRUE(has(m, "cfg.json") && has(m, "invalid JSON")) << m;
    m = checkpoint_error(R"({"hidden_size": 8})");
    EXPECT_TRUE(has(m, "cfg.json: model_type")) << m;
    m = checkpoint_error(R"({"model_type": "roberta"})");
    EXPECT_TRUE(has(m, "model_type") && has(m, "roberta")) << m;
    m = checkpoint_error(R"({"model_type": "bert", "hidden_size": "768"})");
    EXPECT_TRUE(has(m, "cfg.json: hidden_size: expected an integer")) << m;
    m = checkpoint_error(R"({"model_type": "bert", "hidden_size": 100, "num_attention_heads": 12})");
    EXPECT_TRUE(has(m, "hidden_size") && has(m, "multiple")) << m;
    m = checkpoint_error(R"({"model_type": "bert", "num_hidden_layers": 0})");
    EXPECT_TRUE(has(m, "num_hidden_layers: must be positive")) << m;
    m = checkpoint_error(R"({"model_type": "distilbert", "n_heads": 5})");
    EXPECT_TRUE(has(m, "dim")) << m;
    m = checkpoint_error(R"({"model_type": "bert", "id2label": {"0": "a", "2": "b"}})");
    EXPECT_TRUE(has(m, "id2label")) << m;
    m = checkpoint_error(R"({"model_type": "bert", "id2label": {"0": "a"}, "num_labels": 3})");
    EXPECT_TRUE(has(m, "num_labels")) << m;
    m = checkpoint_error(R"({"model_type": "bert", "position_embedding_type": "relative_key"})");
    EXPECT_TRUE(has(m, "position_embedding_type")) << m;
    m = checkpoint_error(R"({"model_type": "bert", "pad_token_id": 40000})");
    EXPECT_TRUE(has(m, "pad_token_id")) << m;
    EXPECT_THROW(load_hf_config(temp_dir("empty")), plumb::CheckpointError);
}

TEST(HfConfig, TokenizerSettingsAndCheckpointFolder) {
    auto dir = temp_dir("folder");
    EXPECT_FALSE(load_hf_tokenizer_settings(dir).do_lower_case.has_value());
    write(dir / "tokenizer_config.json",
          R"({"do_lower_case": false, "strip_accents": null, "model_max_length": 512,)"
          R"( "tokenize_chinese_chars": true})");
    auto s = load_hf_tokenizer_settings(dir);
    ASSERT_TRUE(s.do_lower_case.has_value());
    EXPECT_FALSE(*s.do_lower_case);
    EXPECT_FALSE(s.strip_accents.has_value());
    EXPECT_EQ(s.model_max_length.value_or(0), 512);
    EXPECT_TRUE(s.tokenize_chinese_chars.value_or(false));
    write(dir / "tokenizer_config.json", R"({"do_lower_case": "yes"})");
    EXPECT_THROW(load_hf_tokenizer_settings(dir), plumb::CheckpointError);

    auto msg = [&] {
        try {
            locate_hf_checkpoint(dir);
        } catch (const plumb::CheckpointError& e) {
            return std::string(e.what());
        }
        return std::string("<none>");
    };
    EXPECT_NE(msg().find("config.json"), std::string::npos);
    write(dir / "config.json", kBertJson);
    EXPECT_NE(msg().find("vocab.txt"), std::string::npos);
    write(dir / "vocab.txt", "[PAD]\n");
    EXPECT_NE(msg().find("no model.safetensors or pytorch_model.bin"), std::string::npos);
    write(dir / "pytorch_model.bin", "x");  // read when there is no safetensors file
    EXPECT_EQ(locate_hf_checkpoint(dir).weights, dir / "pytorch_model.bin");
    write(dir / "model.safetensors", "x");  // preferred
    auto f = locate_hf_checkpoint(dir);
    EXPECT_EQ(f.weights, dir / "model.safetensors");
    EXPECT_EQ(f.tokenizer_config, dir / "tokenizer_config.json");
}
