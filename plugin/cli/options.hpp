#pragma once
/// \file options.hpp
/// Options whose meaning is the same in every command, declared once.

#include <CLI/CLI.hpp>
#include <algorithm>
#include <string>
#include <thread>

namespace plumb::cli {

/// Largest thread count any command accepts: far above any machine plumb runs on, low enough
/// that a typo (--threads 10000) is an error instead of a machine brought to a crawl.
inline constexpr int kMaxThreads = 256;

/// Threads of this machine (at least 1).
inline int hardware_threads() {
    return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

/// Adds a thread-count option (`names`, e.g. "--threads,-t") to `cmd`: an integer from `min`
/// (1, or 0 where 0 keeps a library's own default) to kMaxThreads, or "auto" for `auto_value`
/// (-1: the machine's threads). Anything else is a usage error (exit 2).
template <typename T>
CLI::Option* add_threads_option(CLI::App* cmd, const std::string& names, T& out,
                                const std::string& help, int min = 1, int auto_value = -1) {
    const int resolved_auto = auto_value < 0 ? hardware_threads() : auto_value;
    return cmd
        ->add_option(
            names, out,
            help + " (" + std::to_string(min) + " to " + std::to_string(kMaxThreads) + ", or auto)")
        ->capture_default_str()
        ->transform([resolved_auto](
                        std::string s) { return s == "auto" ? std::to_string(resolved_auto) : s; },
                    "", "")
        ->check(CLI::Range(min, kMaxThreads));
}

}  // namespace plumb::cli
