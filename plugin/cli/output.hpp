#pragma once
/// \file output.hpp
/// Writing a command's report to standard output or, atomically, to a file (CLI only).

#include <cstdio>
#include <string>

#include "plugin/error.hpp"
#include "plugin/text_io.hpp"

namespace plumb::cli {

/// Writes `text` to `path` atomically, or to standard output when `path` is empty.
inline void write_output(const std::string& text, const std::string& path) {
    if (path.empty()) {
        if (std::fwrite(text.data(), 1, text.size(), stdout) != text.size())
            throw IoError("cannot write to standard output");
        std::fflush(stdout);
        return;
    }
    AtomicFile out(path);
    out.write(text);
    out.commit();
}

/// Writes the rendering that `format` ("json", "csv", anything else = text) names.
inline void write_formatted(const std::string& format, const std::string& text,
                            const std::string& csv, const std::string& json,
                            const std::string& path) {
    write_output(format == "json" ? json : format == "csv" ? csv : text, path);
}

}  // namespace plumb::cli
