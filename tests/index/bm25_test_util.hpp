#pragma once
// Helpers shared by the index/BM25 tests: temporary directories and small files.
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <string>

#include "tests/support/temp_dir.hpp"

namespace plumb_test {

namespace fs = std::filesystem;

/// A fresh directory removed at destruction.
struct TempDir : plumb::test::TempDir {
    explicit TempDir(const std::string& name) : plumb::test::TempDir("plumb_bm25_" + name) {}
};

inline fs::path write_file(const fs::path& p, const std::string& content) {
    std::ofstream(p, std::ios::binary) << content;
    return p;
}

inline std::string slurp(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace plumb_test
