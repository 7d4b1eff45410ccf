#pragma once
/// \file detail_parse.hpp
/// Internal helpers of the qrels and run parsers (not part of the public API).

#include <charconv>
#include <cmath>
#include <cstddef>
#include <string_view>
#include <system_error>

namespace plumb::eval::detail {

/// trec_eval's field separators: C isspace() in the "C" locale, as a lookup table.
struct SpaceTable {
    bool v[256] = {};
    constexpr SpaceTable() {
        v[static_cast<unsigned char>(' ')] = v[static_cast<unsigned char>('\t')] = true;
        v[static_cast<unsigned char>('\n')] = v[static_cast<unsigned char>('\v')] = true;
        v[static_cast<unsigned char>('\f')] = v[static_cast<unsigned char>('\r')] = true;
    }
};
inline constexpr SpaceTable kSpaceTable{};

inline bool is_space(char c) noexcept { return kSpaceTable.v[static_cast<unsigned char>(c)]; }

/// Splits `line` on runs of whitespace into at most `max` fields; returns how many were found
/// (`max` when there are `max` or more).
inline std::size_t split_fields(std::string_view line, std::string_view* out,
                                std::size_t max) noexcept {
    const char* p = line.data();
    const char* end = p + line.size();
    std::size_t n = 0;
    while (n < max) {
        while (p < end && is_space(*p)) ++p;
        if (p >= end) break;
        const char* start = p;
        while (p < end && !is_space(*p)) ++p;
        out[n++] = std::string_view(start, static_cast<std::size_t>(p - start));
    }
    return n;
}

/// Parses a whole field as a base-10 integer (optional sign). False when not an integer.
inline bool parse_long(std::string_view s, long& out) noexcept {
    if (!s.empty() && s.front() == '+') s.remove_prefix(1);
    if (s.empty()) return false;
    auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    return ec == std::errc() && ptr == s.data() + s.size();
}

/// Parses a whole field as a finite or infinite double (decimal or exponent form, optional
/// sign). False when not a number or NaN.
inline bool parse_double(std::string_view s, double& out) noexcept {
    if (!s.empty() && s.front() == '+') s.remove_prefix(1);
    if (s.empty()) return false;
    auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    if (ec == std::errc::result_out_of_range) {
        // strtod semantics: overflow -> +-HUGE_VAL, underflow -> 0 (trec_eval uses atof).
        return false;
    }
    return ec == std::errc() && ptr == s.data() + s.size() && !std::isnan(out);
}

/// Parses a whole field, surrounding ASCII whitespace allowed, as a finite double (optional
/// sign). False for anything else, including inf and NaN: the attribute, bias and category files
/// hold finite values only.
inline bool parse_finite(std::string_view s, double& out) noexcept {
    while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
    while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
    if (!s.empty() && s.front() == '+') s.remove_prefix(1);
    if (s.empty()) return false;
    auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    return ec == std::errc() && ptr == s.data() + s.size() && std::isfinite(out);
}

}  // namespace plumb::eval::detail
