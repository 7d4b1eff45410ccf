#pragma once
// Helpers shared by the index/BM25 tests: temporary directories and small files.
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <string>

namespace plumb_test {

namespace fs = std::filesystem;

/// A fresh directory removed at destruction.
struct TempDir {
    fs::path path;
    explicit TempDir(const std::string& name) {
        static std::atomic<int> counter{0};
        path = fs::temp_directory_path() /
               ("plumb_bm25_" + name + "_" + std::to_string(::getpid()) + "_" +
                std::to_string(counter++));
        fs::remove_all(path);
        fs::create_directories(path);
    }
    ~TempDir() {
        std::error_code ec;
        fs::remove_all(path, ec);
    }
    fs::path operator/(const std::string& s) const { return path / s; }
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
