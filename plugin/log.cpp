#include "plugin/log.hpp"

#include <atomic>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>

namespace plumb {
namespace {
std::mutex g_mutex;
LogSink g_sink;
std::atomic<int> g_level{static_cast<int>(LogLevel::Warning)};

const char* level_name(LogLevel l) {
    switch (l) {
        case LogLevel::Debug: return "debug";
        case LogLevel::Info: return "info";
        case LogLevel::Warning: return "warning";
        case LogLevel::Error: return "error";
    }
    return "?";
}
}  // namespace

void set_log_sink(LogSink sink) {
    std::lock_guard lock(g_mutex);
    g_sink = std::move(sink);
}

void set_log_level(LogLevel level) { g_level.store(static_cast<int>(level)); }

LogLevel log_level() noexcept { return static_cast<LogLevel>(g_level.load()); }

void log(LogLevel level, std::string_view message) {
    if (static_cast<int>(level) < g_level.load()) return;
    std::lock_guard lock(g_mutex);
    if (g_sink) {
        g_sink(level, message);
    } else {
        std::fprintf(stderr, "plumb %s: %.*s\n", level_name(level),
                     static_cast<int>(message.size()), message.data());
    }
}

}  // namespace plumb
