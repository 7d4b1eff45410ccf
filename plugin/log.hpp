#pragma once
/// \file log.hpp
/// Logging through a sink the host can replace. Default: warnings and errors to stderr.

#include <functional>
#include <string_view>

namespace plumb {

enum class LogLevel { Debug = 0, Info = 1, Warning = 2, Error = 3 };

/// A sink receives every message at or above the threshold. Must be thread-safe.
using LogSink = std::function<void(LogLevel, std::string_view)>;

/// Replaces the process-wide sink (nullptr restores the default stderr sink).
void set_log_sink(LogSink sink);
/// Messages below `level` are dropped (default Warning).
void set_log_level(LogLevel level);
LogLevel log_level() noexcept;
/// Sends a message to the current sink when `level` passes the threshold.
void log(LogLevel level, std::string_view message);

}  // namespace plumb
