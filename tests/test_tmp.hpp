#pragma once
/// \file test_tmp.hpp
/// Per-process scratch folders for tests: `<tmp>/<prefix><pid>`, emptied the first time a
/// process asks for it. Process ids are reused over a long ctest run (hundreds of test
/// processes), so a folder named after the pid alone may hold files a dead process left behind
/// (an optional file such as tokenizer_config.json then changes what a test reads).
/// New tests: a TempDir per test (tests/support/temp_dir.hpp), removed when the test ends, with
/// TempDir::write for the files in it.
#include <filesystem>
#include <mutex>
#include <set>
#include <string>

#include <unistd.h>

namespace plumb::test {

inline std::filesystem::path process_dir(const std::string& prefix) {
    static std::mutex mutex;
    static std::set<std::string> fresh;
    auto dir = std::filesystem::temp_directory_path() / (prefix + std::to_string(::getpid()));
    std::lock_guard<std::mutex> lock(mutex);
    if (fresh.insert(prefix).second) {
        std::error_code ec;
        std::filesystem::remove_all(dir, ec);
    }
    return dir;
}

}  // namespace plumb::test
