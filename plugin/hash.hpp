#pragma once
/// \file hash.hpp
/// The project's small, stable hash functions, defined once. Their values are part of plumb's
/// reproducible outputs (generated corpora, rotation offsets, sampled negatives, shingles):
/// changing one changes those outputs.
#include <cstdint>
#include <string_view>

namespace plumb {

/// splitmix64's finaliser (Steele, Lea, Flood 2014): a bijective 64-bit mix.
constexpr std::uint64_t splitmix64(std::uint64_t x) noexcept {
    x += 0x9E3779B97F4A7C15ULL;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
    return x ^ (x >> 31);
}

inline constexpr std::uint64_t kFnv1aOffset = 0xcbf29ce484222325ULL;

/// 64-bit FNV-1a of `s`, continuing from `h` (start with kFnv1aOffset).
constexpr std::uint64_t fnv1a64(std::string_view s, std::uint64_t h = kFnv1aOffset) noexcept {
    for (unsigned char c : s) {
        h ^= c;
        h *= 0x100000001b3ULL;
    }
    return h;
}

}  // namespace plumb
