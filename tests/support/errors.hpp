#pragma once
/// \file errors.hpp
/// Checking what a call throws, beyond EXPECT_THROW: the exception itself, to test its line,
/// file or message.
#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <utility>

#include "plugin/error.hpp"

namespace plumb::test {

/// The exception of type `E` that `f()` throws; nullopt, and a test failure, when `f()`
/// returns. An exception of another type propagates.
template <typename E, typename F>
std::optional<E> thrown(F&& f) {
    try {
        std::forward<F>(f)();
    } catch (const E& e) {
        return e;
    }
    ADD_FAILURE() << "expected an exception, none was thrown";
    return std::nullopt;
}

/// The line of the ParseError that `f()` throws; 0, and a test failure, when `f()` returns.
template <typename F>
std::uint64_t parse_error_line(F&& f) {
    const auto e = thrown<ParseError>(std::forward<F>(f));
    return e ? e->line() : 0;
}

}  // namespace plumb::test
