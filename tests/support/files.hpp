#pragma once
/// \file files.hpp
/// Writing and reading whole files in tests, byte for byte (no text-mode translation, embedded
/// NUL bytes kept). Scratch files go into a TempDir (temp_dir.hpp: `dir.write(name, content)`).
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <string_view>

namespace plumb::test {

/// Writes `content` to `path` (replacing the file; the folder must exist) and returns `path`.
/// Throws std::runtime_error naming the path when the file cannot be written.
inline std::filesystem::path write_file(const std::filesystem::path& path,
                                        std::string_view content) {
    std::ofstream out(path, std::ios::binary);
    out.write(content.data(), static_cast<std::streamsize>(content.size()));
    out.close();
    if (!out) throw std::runtime_error("cannot write " + path.string());
    return path;
}

/// The bytes of `path`. Throws std::runtime_error naming the path when it cannot be opened.
inline std::string read_text(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("cannot read " + path.string());
    return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace plumb::test
