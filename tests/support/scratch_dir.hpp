#pragma once
/// \file scratch_dir.hpp
/// A test program's scratch folder: the per-process folder `<tmp>/<prefix><pid>` of
/// tests/test_tmp.hpp, removed with everything in it after the program's last test. Declare one
/// at namespace scope (it registers a GoogleTest environment, which must happen before
/// RUN_ALL_TESTS): `const plumb::test::ScratchDir kScratch("plumb_test_corpus_");`.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>
#include <utility>

#include "tests/test_tmp.hpp"

namespace plumb::test {

class ScratchDir {
public:
    explicit ScratchDir(std::string prefix) : m_prefix(std::move(prefix)) {
        ::testing::AddGlobalTestEnvironment(new RemoveAfterTests(m_prefix));
    }

    /// The folder (not created).
    std::filesystem::path path() const { return process_dir(m_prefix); }

    /// path() / `name`, removed with what it holds if it exists (not created).
    std::filesystem::path fresh(const std::string& name) const {
        auto dir = path() / name;
        std::filesystem::remove_all(dir);
        return dir;
    }

    /// Writes `content` (binary) to path() / `name`, creating the folders; returns the path.
    std::filesystem::path file(const std::string& name, const std::string& content) const {
        auto p = path() / name;
        std::filesystem::create_directories(p.parent_path());
        std::ofstream(p, std::ios::binary) << content;
        return p;
    }

private:
    class RemoveAfterTests : public ::testing::Environment {
    public:
        explicit RemoveAfterTests(std::string prefix) : m_prefix(std::move(prefix)) {}
        void TearDown() override {
            std::error_code ec;
            std::filesystem::remove_all(process_dir(m_prefix), ec);
        }

    private:
        std::string m_prefix;
    };

    std::string m_prefix;
};

}  // namespace plumb::test
