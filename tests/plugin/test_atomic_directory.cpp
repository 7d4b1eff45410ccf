// plumb::AtomicDirectory: a directory written as a unit (plugin/atomic_directory.hpp).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "plugin/atomic_directory.hpp"
#include "plugin/error.hpp"
#include "tests/support/temp_dir.hpp"

namespace fs = std::filesystem;
using plumb::AtomicDirectory;
using plumb::test::read_text;
using plumb::test::TempDir;
using plumb::test::write_file;

namespace {

/// Names in `dir`, sorted.
std::vector<std::string> names(const fs::path& dir) {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
}

}  // namespace

TEST(AtomicDirectory, CommitCreatesTheTargetAndLeavesNoTemporary) {
    TempDir t("atomic_dir");
    const fs::path target = t / "sub" / "model";  // parents are created
    {
        AtomicDirectory d(target);
        EXPECT_TRUE(fs::is_directory(d.path()));
        EXPECT_EQ(d.target(), fs::absolute(target).lexically_normal());
        EXPECT_FALSE(fs::exists(target));  // nothing visible before commit
        fs::create_directories(d.path() / "inner");
        write_file(d.path() / "a.txt", "new a");
        write_file(d.path() / "inner" / "b.txt", "new b");
        d.commit();
        EXPECT_THROW(d.commit(), plumb::InvalidArgument);
    }
    EXPECT_EQ(read_text(target / "a.txt"), "new a");
    EXPECT_EQ(read_text(target / "inner" / "b.txt"), "new b");
    EXPECT_EQ(names(t / "sub"), std::vector<std::string>{"model"});
}

TEST(AtomicDirectory, CommitReplacesAnExistingTargetWhole) {
    TempDir t("atomic_dir");
    const fs::path target = t / "index";
    fs::create_directories(target);
    write_file(target / "old_only.txt", "old");
    write_file(target / "a.txt", "old a");
    {
        AtomicDirectory d(t.path.string() + "/index/");  // a trailing slash names the same target
        EXPECT_EQ(d.target(), fs::absolute(target).lexically_normal());
        write_file(d.path() / "a.txt", "new a");
        // Until commit the previous directory is what readers see.
        EXPECT_EQ(read_text(target / "a.txt"), "old a");
        d.commit();
    }
    EXPECT_EQ(names(target), std::vector<std::string>{"a.txt"});  // no file of the old one
    EXPECT_EQ(read_text(target / "a.txt"), "new a");
    EXPECT_EQ(names(t.path), std::vector<std::string>{"index"});  // old copy removed too
}

TEST(AtomicDirectory, WithoutCommitTheTargetIsUntouchedAndTheTemporaryRemoved) {
    TempDir t("atomic_dir");
    const fs::path target = t / "ckpt";
    fs::create_directories(target);
    write_file(target / "a.txt", "old a");
    {
        AtomicDirectory d(target);
        write_file(d.path() / "a.txt", "half-written");
        // e.g. an exception while writing: the object goes away uncommitted
    }
    EXPECT_EQ(read_text(target / "a.txt"), "old a");
    EXPECT_EQ(names(t.path), std::vector<std::string>{"ckpt"});
}

TEST(AtomicDirectory, StaleTemporariesOfDeadProcessesAreSweptLiveOnesKept) {
    TempDir t("atomic_dir");
    const fs::path target = t / "out";
    // pid 2^22 + 1 is above Linux's largest pid_max, so no live process has it.
    const fs::path dead = t.path.string() + "/out.tmp-4194305-0";
    fs::create_directories(dead);
    write_file(dead / "x", "left by a killed run");
    const fs::path live = t.path.string() + "/out.tmp-" + std::to_string(::getpid()) + "-999999";
    fs::create_directories(live);
    {
        AtomicDirectory d(target);
        EXPECT_FALSE(fs::exists(dead));
        EXPECT_TRUE(fs::exists(live));
        d.commit();
    }
    EXPECT_TRUE(fs::is_directory(target));
}

TEST(AtomicDirectory, AnUnwritableParentIsAnIoError) {
    TempDir t("atomic_dir");
    t.write("file", "x");
    EXPECT_THROW(AtomicDirectory(t / "file" / "target"), plumb::IoError);
}
