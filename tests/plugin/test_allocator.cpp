// plumb::tune_allocator_for_inference (plugin/allocator.hpp): after it, a block above glibc's
// default mmap threshold (its dynamic maximum is 32 MiB) comes from the heap, not from a fresh
// mmap (mallinfo2's hblkhd: bytes in mmapped blocks); a malloc setting in GLIBC_TUNABLES wins.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "plugin/allocator.hpp"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define PLUMB_TEST_SANITIZER_MALLOC 1  // the sanitizer's allocator replaces glibc's malloc
#endif

#if defined(__GLIBC__)
#include <malloc.h>

TEST(Allocator, UserTunablesWinAndNothingChanges) {
    ::setenv("GLIBC_TUNABLES", "glibc.malloc.trim_threshold=1000000", 1);
    EXPECT_EQ(plumb::tune_allocator_for_inference(), "");
    ::unsetenv("GLIBC_TUNABLES");
    ::setenv("MALLOC_MMAP_THRESHOLD_", "65536", 1);  // glibc's older variable
    EXPECT_EQ(plumb::tune_allocator_for_inference(), "");
    ::unsetenv("MALLOC_MMAP_THRESHOLD_");
}

TEST(Allocator, LargeBlocksComeFromTheHeapAfterTuning) {
    ::unsetenv("GLIBC_TUNABLES");
    const std::size_t size = std::size_t{40} << 20;  // above glibc's largest dynamic threshold
    const std::string applied = plumb::tune_allocator_for_inference();
#ifdef PLUMB_TEST_SANITIZER_MALLOC
    // mallopt is the sanitizer's (it refuses the settings): nothing is applied or claimed.
    EXPECT_EQ(applied, "");
    GTEST_SKIP() << "the sanitizer's allocator replaces glibc's malloc";
#endif
    EXPECT_EQ(applied, "glibc malloc: mmap threshold 256 MiB, trim threshold 1024 MiB");
    const std::size_t before = mallinfo2().hblkhd;
    auto* p = static_cast<volatile char*>(std::malloc(size));
    ASSERT_NE(p, nullptr);
    p[0] = 1;
    p[size - 1] = 2;
    EXPECT_EQ(mallinfo2().hblkhd, before);  // not mmapped
    std::free(const_cast<char*>(p));
}
#else
TEST(Allocator, NothingOutsideGlibc) { EXPECT_EQ(plumb::tune_allocator_for_inference(), ""); }
#endif
