#pragma once
/// \file error.hpp
/// plumb's exception hierarchy. Library code reports caller mistakes and bad input by throwing
/// one of these; it never aborts, exits or prints.

#include <cstdint>
#include <stdexcept>
#include <string>

namespace plumb {

/// Base of every exception plumb throws.
class Error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// A caller passed a value outside the documented domain.
class InvalidArgument : public Error {
public:
    using Error::Error;
};

/// A configuration (JSON, CLI, stage parameters) is inconsistent or names something unknown.
class ConfigError : public Error {
public:
    using Error::Error;
};

/// A command line asks for something impossible (unknown option, missing argument, a value out
/// of range): the CLI exits with status 2 instead of 1.
class UsageError : public ConfigError {
public:
    using ConfigError::ConfigError;
};

/// A model checkpoint is truncated, corrupt or does not match the expected architecture.
class CheckpointError : public Error {
public:
    using Error::Error;
};

/// A file could not be opened, read, written or renamed.
class IoError : public Error {
public:
    using Error::Error;
};

/// Malformed input. what() reads "<file>:<line>: <message>" (line omitted when 0).
class ParseError : public Error {
public:
    ParseError(std::string file, std::uint64_t line, const std::string& message)
        : Error(format(file, line, message)),
          m_file(std::move(file)),
          m_line(line),
          m_message(message) {}

    const std::string& file() const noexcept { return m_file; }
    /// 1-based line number, 0 when the error is not tied to a line.
    std::uint64_t line() const noexcept { return m_line; }
    const std::string& message() const noexcept { return m_message; }

private:
    static std::string format(const std::string& file, std::uint64_t line,
                              const std::string& message) {
        std::string s = file;
        if (line > 0) s += ":" + std::to_string(line);
        return s + ": " + message;
    }
    std::string m_file;
    std::uint64_t m_line;
    std::string m_message;
};

/// An index, vector store or other saved artifact is corrupt, of an unknown version, or was
/// built with settings that conflict with the requested ones.
class IndexError : public Error {
public:
    using Error::Error;
};

}  // namespace plumb
