#pragma once
// Helpers shared by the debias tests: a per-test temporary directory, file helpers, and the
// exception checks of tests/support/errors.hpp.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/errors.hpp"

namespace debias_test {

namespace fs = std::filesystem;
using plumb::test::parse_error_line;
using plumb::test::thrown;

inline fs::path temp_dir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    auto dir = fs::temp_directory_path() / ("plumb_debias_" + std::to_string(::getpid()) + "_" +
                                            info->test_suite_name() + "_" + info->name());
    fs::remove_all(dir);
    fs::create_directories(dir);
    return dir;
}

inline fs::path write(const fs::path& path, const std::string& content) {
    std::ofstream(path, std::ios::binary) << content;
    return path;
}

inline std::string slurp(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

inline std::vector<std::string> lines(const fs::path& path) {
    std::ifstream in(path);
    std::vector<std::string> out;
    for (std::string l; std::getline(in, l);) out.push_back(l);
    return out;
}

inline bool is_png(const fs::path& path) {
    auto s = slurp(path);
    return s.size() > 8 && s.compare(0, 8, "\x89PNG\r\n\x1a\n") == 0;
}

inline bool is_svg(const fs::path& path) {
    auto s = slurp(path);
    return s.find("<svg") != std::string::npos && s.find("</svg>") != std::string::npos;
}

/// No "*.tmp.*" files left behind in `dir`.
inline bool no_temp_files(const fs::path& dir) {
    for (const auto& e : fs::directory_iterator(dir))
        if (e.path().filename().string().find(".tmp.") != std::string::npos) return false;
    return true;
}

/// Runs a shell command, returns (exit status, stdout+stderr).
inline std::pair<int, std::string> run(const std::string& cmd) {
    std::string out;
    FILE* p = ::popen((cmd + " 2>&1").c_str(), "r");
    if (!p) return {-1, {}};
    char buf[4096];
    while (std::size_t n = std::fread(buf, 1, sizeof buf, p)) out.append(buf, n);
    int status = ::pclose(p);
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

}  // namespace debias_test
