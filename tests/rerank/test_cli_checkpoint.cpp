// CLI smoke tests of `plumb tokenize` and `plumb checkpoint-info`.

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "plugin/text_io.hpp"
#include "rerank/safetensors.hpp"
#include "tests/support/cli.hpp"
#include "tests/test_tmp.hpp"

namespace fs = std::filesystem;

namespace {

fs::path temp_dir() {
    auto dir = plumb::test::process_dir("plumb_test_cli_ckpt_");
    fs::create_directories(dir);
    return dir;
}

/// `plumb <args>` with its output in `out` (tests/support/cli.hpp).
constexpr auto& run = plumb::test::run_plumb_to;

}  // namespace

TEST(CliCheckpoint, TokenizePair) {
    auto dir = temp_dir() / "tok";
    fs::create_directories(dir);
    std::ofstream(dir / "vocab.txt") << "[PAD]\n[UNK]\n[CLS]\n[SEP]\nhello\nworld\n##s\n";
    auto out = temp_dir() / "tok.out";
    ASSERT_EQ(run("tokenize --model " + dir.string() + " 'Hello' 'worlds zebra'", out), 0)
        << plumb::read_file(out);
    EXPECT_EQ(plumb::read_file(out),
              "# token\tid\ttype\n"
              "[CLS]\t2\t0\n"
              "hello\t4\t0\n"
              "[SEP]\t3\t0\n"
              "world\t5\t1\n"
              "##s\t6\t1\n"
              "[UNK]\t1\t1\n"
              "[SEP]\t3\t1\n");
    // cased: "Hello" is unknown; max length 4 keeps [CLS] [UNK] [SEP] + [SEP]
    ASSERT_EQ(run("tokenize --model " + dir.string() +
                      " --lowercase no --max-length 4 'Hello' 'worlds'",
                  out),
              0);
    EXPECT_EQ(plumb::read_file(out), "# token\tid\ttype\n[CLS]\t2\t0\n[UNK]\t1\t0\n[SEP]\t3\t0\n[SEP]\t3\t1\n");
}

TEST(CliCheckpoint, CheckpointInfo) {
    auto p = temp_dir() / "w.safetensors";
    const float a[] = {1, 2, 3, 4, 5, 6};
    std::map<std::string, plumb::rerank::TensorData> t;
    t["encoder.weight"] = plumb::rerank::TensorData::from_float32({2, 3}, a);
    t["bias"] = plumb::rerank::TensorData::from_float32({2}, std::span<const float>(a, 2),
                                                        plumb::rerank::DType::BF16);
    plumb::rerank::save_safetensors(p, t, {{"format", "pt"}});
    auto out = temp_dir() / "info.out";
    ASSERT_EQ(run("checkpoint-info " + p.string(), out), 0) << plumb::read_file(out);
    EXPECT_EQ(plumb::read_file(out),
              "# format: a safetensors file\n"
              "# 2 tensors, 8 parameters\n"
              "# metadata format = pt\n"
              "# name\tdtype\tshape\n"
              "bias\tBF16\t[2]\n"
              "encoder.weight\tF32\t[2, 3]\n");
    // a truncated file fails cleanly
    std::string raw = plumb::read_file(p);
    std::ofstream(p, std::ios::binary | std::ios::trunc) << raw.substr(0, raw.size() - 2);
    EXPECT_EQ(run("checkpoint-info " + p.string(), out), 1);
    EXPECT_NE(plumb::read_file(out).find("plumb: error:"), std::string::npos);
    EXPECT_NE(plumb::read_file(out).find("'bias'"), std::string::npos)
        << plumb::read_file(out);
}
