#pragma once
/// \file options.hpp
/// Options whose meaning is the same in every command, declared once.

#include <CLI/CLI.hpp>
#include <algorithm>
#include <string>
#include <thread>

#include "plugin/error.hpp"

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

/// A check for a count that must be at least 1 (`--k`, `--cutoff`, `--batch`, ...): a usage
/// error (exit 2) "--k: 0 is not a positive whole number" for 0, a negative or a non-number.
inline CLI::Validator positive_count() {
    return CLI::Validator(
        [](std::string& value) -> std::string {
            std::size_t used = 0;
            unsigned long long v = 0;
            try {
                v = std::stoull(value, &used);
            } catch (const std::exception&) {
                used = 0;
            }
            if (value.empty() || value.front() == '-' || used != value.size() || v == 0)
                return value + " is not a positive whole number";
            return {};
        },
        "POSITIVE", "positive count");
}

/// Adds `--quiet` (`help`, e.g. "No progress bar"). `-q` has one meaning in plumb, trec_eval's
/// per-query output (`plumb eval -q`); given to this command it is a usage error naming --quiet.
inline CLI::Option* add_quiet_flag(CLI::App* cmd, bool& quiet,
                                   const std::string& help = "No progress bar") {
    cmd->add_flag_callback(
           "-q",
           [] {
               throw UsageError(
                   "-q is trec_eval's per-query option (plumb eval -q); use --quiet for no "
                   "progress output");
           })
        ->group("");
    return cmd->add_flag("--quiet", quiet, help);
}

/// Adds `--topics` (required) and `--topic-field` (its default is `topic_field`'s value): a
/// topics file as index::read_topics reads it and, for TREC topics, the fields that make the
/// query (index::parse_topic_fields checks them).
inline void add_topics_options(CLI::App* cmd, std::string& topics, std::string& topic_field) {
    cmd->add_option("--topics", topics,
                    "Topics: TSV qid<TAB>query, BEIR queries.jsonl (or its folder), or TREC "
                    "<top> topics")
        ->required();
    cmd->add_option("--topic-field", topic_field,
                    "TREC topics: the fields making the query, title, description, narrative "
                    "or several joined by '+' (e.g. title+description)")
        ->capture_default_str();
}

/// Adds `--input-format` (the format of an input file). `--format` has one meaning in plumb,
/// the format of what a command writes; given to this command it is a usage error naming
/// --input-format.
template <typename T>
CLI::Option* add_input_format_option(CLI::App* cmd, T& format, const std::string& help) {
    cmd->add_option_function<std::string>(
           "--format",
           [](const std::string&) {
               throw UsageError(
                   "--format names an output format; the format of this command's input is "
                   "--input-format");
           })
        ->group("");
    return cmd->add_option("--input-format", format, help);
}

}  // namespace plumb::cli
