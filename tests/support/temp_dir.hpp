#pragma once
/// \file temp_dir.hpp
/// A scratch folder for one test, removed with everything in it when the object goes away.
/// Names hold the process id and a counter, so tests running in parallel (ctest -j) and
/// several folders in one test never collide; a folder a dead process left under the same name
/// is emptied first. `write(name, content)` puts a file in it (tests/support/files.hpp).
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>

#include "tests/support/files.hpp"

namespace plumb::test {

struct TempDir {
    std::filesystem::path path;

    explicit TempDir(const std::string& prefix = "plumb_test") {
        static std::atomic<int> counter{0};
        path = std::filesystem::temp_directory_path() /
               (prefix + "_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
        std::error_code ec;
        std::filesystem::remove_all(path, ec);
        std::filesystem::create_directories(path);
    }
    ~TempDir() {
        std::error_code ec;
        std::filesystem::remove_all(path, ec);
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;

    std::filesystem::path operator/(const std::string& name) const { return path / name; }

    /// Writes `content` to the file `name` in this folder and returns its path (write_file).
    std::filesystem::path write(const std::string& name, std::string_view content) const {
        return write_file(path / name, content);
    }
};

}  // namespace plumb::test
