#pragma once
/// \file parse_error.hpp
/// Catching the plumb::ParseError a reader throws, to check the file and line it names.
#include <gtest/gtest.h>

#include "plugin/error.hpp"

namespace plumb::test {

/// Runs `f`, which must throw plumb::ParseError, and returns the error. When `f` returns
/// normally the test fails (ADD_FAILURE) and an error naming no file and line 0 is returned;
/// any other exception propagates.
template <class F>
plumb::ParseError expect_parse_error(F&& f) {
    try {
        f();
    } catch (const plumb::ParseError& e) {
        return e;
    }
    ADD_FAILURE() << "no ParseError";
    return plumb::ParseError("", 0, "");
}

}  // namespace plumb::test
