// Model folders and embedding files are untrusted input (issue 15): each hostile case is
// generated here and must end in a clean error (exit 1, "plumb: error:", the file named), never
// a crash, a LibTorch trace or an allocation chosen by the input.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "tests/support/cli.hpp"
#include "tests/support/temp_dir.hpp"

namespace fs = std::filesystem;
using plumb::test::run_plumb;
using plumb::test::TempDir;

namespace {

void write(const fs::path& p, const std::string& bytes) {
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << bytes;
}

std::string bert_config(const std::string& vocab, const std::string& positions) {
    return R"({"model_type": "bert", "vocab_size": )" + vocab +
           R"(, "hidden_size": 8, "num_hidden_layers": 1, "num_attention_heads": 2,)"
           R"( "intermediate_size": 16, "max_position_embeddings": )" +
           positions + "}";
}

void expect_clean_error(const plumb::test::CliResult& r, const std::string& part) {
    EXPECT_EQ(r.status, 1) << r.out;
    EXPECT_NE(r.out.find("plumb: error: "), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(part), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("internal error"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("Exception raised from"), std::string::npos) << r.out;  // c10 trace
}

}  // namespace

TEST(HostileCheckpoints, DeeplyNestedConfigIsAnError) {
    TempDir dir("hostile_ckpt");
    write(dir / "m" / "config.json", std::string(100000, '[') + std::string(100000, ']'));
    expect_clean_error(run_plumb("checkpoint-info '" + (dir / "m").string() + "'"),
                       "config.json:1: invalid JSON: nested deeper than 256 levels");
}

TEST(HostileCheckpoints, AbsurdDimensionsAreRefusedBeforeAllocation) {
    TempDir dir("hostile_ckpt");
    write(dir / "v" / "config.json", bert_config("1000000000000", "512"));
    expect_clean_error(run_plumb("checkpoint-info '" + (dir / "v").string() + "'"),
                       "config.json: vocab_size: 1000000000000 is beyond the supported maximum");
    write(dir / "p" / "config.json", bert_config("100", "1000000000"));
    expect_clean_error(run_plumb("checkpoint-info '" + (dir / "p").string() + "'"),
                       "max_position_embeddings: 1000000000 is beyond");
    write(dir / "f" / "config.json", bert_config("1e400", "512"));
    expect_clean_error(run_plumb("checkpoint-info '" + (dir / "f").string() + "'"),
                       "config.json:1: invalid JSON: number overflow");
}

TEST(HostileCheckpoints, OverlongEmbeddingLinesNameTheLine) {
    TempDir dir("hostile_ckpt");
    std::string glove = "the 0.1 0.2\n" + std::string("x");
    for (int i = 0; i < 500; ++i) glove += " 0.5";
    write(dir / "g.txt", glove + "\n");
    expect_clean_error(run_plumb("--max-line-bytes 1K tk-init --embeddings '" +
                                 (dir / "g.txt").string() + "' --output '" +
                                 (dir / "tk").string() + "'"),
                       "g.txt:2: line longer than 1024 bytes");
    EXPECT_FALSE(fs::exists(dir / "tk"));
}

TEST(HostileCheckpoints, TrainThreadCountsAreBounded) {
    for (const char* bad : {"10000", "-5", "lots"}) {
        auto r = run_plumb(std::string("train --threads ") + bad);
        EXPECT_EQ(r.status, 2) << bad << ": " << r.out;
        EXPECT_NE(r.out.find("--threads"), std::string::npos) << r.out;
    }
}
