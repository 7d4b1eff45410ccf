#pragma once
/// \file cli.hpp
/// Running the `plumb` binary from a test: its exit status and what it printed.
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

namespace plumb::test {

struct CliResult {
    int status = -1;  ///< exit status, -1 when the process did not exit normally
    std::string out;  ///< standard output (and standard error when merged)
};

/// Runs `plumb <args>` (args are passed to the shell as written: quote paths yourself) with
/// standard error merged into `out` when `merge_stderr`, else discarded.
inline CliResult run_plumb(const std::string& args, bool merge_stderr = true) {
    CliResult r;
    const std::string cmd = std::string("'") + PLUMB_CLI_PATH + "' " + args +
                            (merge_stderr ? " 2>&1" : " 2>/dev/null");
    FILE* p = ::popen(cmd.c_str(), "r");
    if (!p) return r;
    char buf[65536];
    std::size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
    const int st = ::pclose(p);
    r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    return r;
}

/// Runs `plumb <args>` (args passed to the shell as written) with standard output and standard
/// error written to the file `log`; returns the exit status (-1 when the process did not exit
/// normally).
inline int run_plumb_to(const std::string& args, const std::filesystem::path& log) {
    const std::string cmd =
        std::string(PLUMB_CLI_PATH) + " " + args + " > " + log.string() + " 2>&1";
    const int st = std::system(cmd.c_str());
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/// `plumb <args>` started by `launcher` (e.g. "mpirun -n 2"), output to `log` as run_plumb_to.
inline int run_plumb_launched(const std::string& launcher, const std::string& args,
                              const std::filesystem::path& log) {
    const std::string cmd = launcher + " " + std::string(PLUMB_CLI_PATH) + " " + args + " > " +
                            log.string() + " 2>&1";
    const int st = std::system(cmd.c_str());
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

}  // namespace plumb::test
