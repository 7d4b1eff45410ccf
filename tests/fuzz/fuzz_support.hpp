#pragma once
/// \file fuzz_support.hpp
/// Helpers for the fuzz targets (tests/fuzz/fuzz_*.cpp, see tests/fuzz/README.md).
///
/// plumb's readers take paths: a target writes the input bytes to a scratch file (one per
/// process and name, rewritten for every input) and calls the public reader. A plumb::Error
/// (ParseError, IoError, ConfigError, InvalidArgument, CheckpointError, ...) is the expected
/// answer to bad input; anything else (another exception, a crash, a sanitizer report, a hang)
/// escapes and is a finding.

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>

#include "plugin/error.hpp"

namespace plumb::fuzz {

/// This process's scratch folder (created once, removed at exit).
inline const std::filesystem::path& scratch_dir() {
    static const std::filesystem::path dir = [] {
        auto d =
            std::filesystem::temp_directory_path() / ("plumb_fuzz_" + std::to_string(::getpid()));
        std::error_code ec;
        std::filesystem::remove_all(d, ec);
        std::filesystem::create_directories(d);
        std::atexit([] {
            std::error_code e;
            std::filesystem::remove_all(scratch_dir(), e);
        });
        return d;
    }();
    return dir;
}

/// Writes `data` to `<scratch>/<name>` (replacing it) and returns the path.
inline std::filesystem::path write_input(std::string_view data, const std::string& name) {
    auto path = scratch_dir() / name;
    std::FILE* f = std::fopen(path.c_str(), "wb");
    if (!f) std::abort();
    if (!data.empty() && std::fwrite(data.data(), 1, data.size(), f) != data.size()) std::abort();
    if (std::fclose(f) != 0) std::abort();
    return path;
}

/// The input as a string_view.
inline std::string_view as_text(const std::uint8_t* data, std::size_t size) {
    return {reinterpret_cast<const char*>(data), size};
}

/// Runs `f`; a plumb::Error is the clean answer to bad input and is swallowed.
template <class F>
void expect_clean(F&& f) {
    try {
        f();
    } catch (const plumb::Error&) {
    }
}

/// Splits off the first byte as a selector (options, format); `rest` gets the remaining bytes.
inline std::uint8_t take_selector(std::string_view& rest) {
    if (rest.empty()) return 0;
    const auto s = static_cast<std::uint8_t>(rest.front());
    rest.remove_prefix(1);
    return s;
}

}  // namespace plumb::fuzz
