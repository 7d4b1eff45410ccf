#pragma once
/// \file json.hpp
/// Strict JSON reading for every JSON input plumb accepts (pipeline configurations, model
/// configurations, safetensors headers, JSONL corpora and topics, reports). The input is
/// untrusted: nesting deeper than a limit, an object with the same key twice and a number that
/// does not fit a double are errors, and every error is a ParseError naming the source and line,
/// never an nlohmann exception.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>

namespace plumb {

/// Limits for parse_json().
struct JsonLimits {
    /// Deepest nesting of arrays and objects accepted (the document's top level is depth 1).
    std::size_t max_depth = 256;
    /// Reject an object that holds the same key twice (nlohmann would keep the last silently).
    bool reject_duplicate_keys = true;
};

/// Parses `text` as one JSON document. `source` names the input in errors (a file name); when
/// `line` > 0, `text` is that line of a JSON Lines file and errors name it, otherwise errors
/// name the line within `text`. Throws ParseError.
nlohmann::json parse_json(std::string_view text, const std::string& source, std::uint64_t line = 0,
                          const JsonLimits& limits = {});

/// Reads and parses a whole JSON file (IoError when it cannot be read, ParseError when it is
/// not valid JSON within the limits).
nlohmann::json read_json_file(const std::filesystem::path& path, const JsonLimits& limits = {});

}  // namespace plumb
