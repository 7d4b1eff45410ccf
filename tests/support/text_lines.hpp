#pragma once
/// \file text_lines.hpp
/// Splitting a test's output files into lines and words.
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "plugin/text_io.hpp"

namespace plumb::test {

/// The lines of the file at `path`, without their '\n'.
inline std::vector<std::string> lines_of(const std::filesystem::path& path) {
    std::vector<std::string> out;
    std::istringstream in(read_file(path));
    std::string line;
    while (std::getline(in, line)) out.push_back(line);
    return out;
}

/// The whitespace-separated words of `text`.
inline std::vector<std::string> words_of(const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    std::string w;
    while (in >> w) out.push_back(w);
    return out;
}

}  // namespace plumb::test
