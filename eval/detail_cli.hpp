#pragma once
/// \file detail_cli.hpp
/// Internal (not installed): the option groups of the evaluation commands (compare, eval-groups,
/// eval-subsets, position-table, bias-table, eval-bias, eval-prf, eval-liwc), declared once, as
/// PISA's tools/app.hpp composes its argument groups. Each group is a struct holding the values
/// and a function adding its options to a command; the commands' own options stay in their files.

#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <string>
#include <unordered_set>
#include <vector>

#include "eval/compare.hpp"
#include "eval/evaluator.hpp"
#include "eval/run.hpp"
#include "eval/subsets.hpp"
#include "plugin/cli/output.hpp"
#include "plugin/error.hpp"

namespace plumb::eval::detail {

/// `v` with `decimals` digits after the point ("%.*f").
inline std::string fixed(double v, int decimals = 4) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
    return buf;
}

/// `s` padded with spaces to at least `w` characters.
inline std::string pad(const std::string& s, std::size_t w) {
    return s.size() >= w ? s : s + std::string(w - s.size(), ' ');
}

/// `--run FILE` (required, repeatable) and `--name NAME` (one per run, in --run order).
struct RunArgs {
    std::vector<std::string> runs;
    std::vector<std::string> names;

    void add(CLI::App* cmd, const std::string& help = "run file (repeatable)") {
        cmd->add_option("--run", runs, help)->required();
        cmd->add_option("--name", names, "display name per run (repeat, in --run order)");
    }

    /// The runs' display names: the --name values (one per run), else the files' names (a file
    /// name that two runs share is replaced by the path given).
    std::vector<std::string> display_names() const {
        if (!names.empty()) {
            if (names.size() != runs.size())
                throw ConfigError("--name given " + std::to_string(names.size()) + " times for " +
                                  std::to_string(runs.size()) + " runs");
            return names;
        }
        std::vector<std::string> out;
        std::unordered_set<std::string> seen;
        for (const auto& r : runs) {
            std::string n = std::filesystem::path(r).filename().string();
            if (n.empty() || !seen.insert(n).second) n = r;
            out.push_back(n);
        }
        return out;
    }
};

/// Evaluates a run argument: a file, or a run written in parts "A,B,C" (run_parts(), read as
/// their concatenation by read_run_parts()).
inline EvalResult evaluate_run_argument(const Evaluator& evaluator, const std::string& argument) {
    const auto parts = run_parts(argument);
    if (parts.size() == 1) return evaluator.evaluate_run(parts.front());
    return evaluator.evaluate_run(read_run_parts(parts));
}

/// `--qrels FILE` and `-l,--level N` (trec_eval's minimum relevant grade).
struct QrelsArgs {
    std::string path;
    long level = 1;

    void add(CLI::App* cmd, const std::string& help = "qrels file", bool required = true,
             const std::string& level_help = "minimum relevant grade (default 1)") {
        auto* opt = cmd->add_option("--qrels", path, help);
        if (required) opt->required();
        cmd->add_option("-l,--level", level, level_help);
    }
};

/// `--test`, `--correction`, `--alpha`: the significance tests behind the marks.
struct SignificanceArgs {
    std::string test = "both";
    std::string correction;
    double alpha = 0.05;

    explicit SignificanceArgs(std::string default_correction)
        : correction(std::move(default_correction)) {}

    void add(CLI::App* cmd) {
        cmd->add_option("--test", test, "t | wilcoxon | both (default both: a mark needs both)");
        cmd->add_option("--correction", correction,
                        "none | bonferroni | holm (default " + correction + ")");
        cmd->add_option("--alpha", alpha, "significance level (default 0.05)");
    }

    TestKind test_kind() const { return parse_test_kind(test); }
    Correction correction_kind() const { return parse_correction(correction); }
};

/// `--format` (one of `formats`, the first is the default) and `--output FILE`.
struct OutputArgs {
    std::string format;
    std::string output;
    std::vector<std::string> formats;

    explicit OutputArgs(std::vector<std::string> names)
        : format(names.front()), formats(std::move(names)) {}

    void add(CLI::App* cmd) {
        std::string help;
        for (const auto& f : formats) help += (help.empty() ? "" : " | ") + f;
        cmd->add_option("--format", format, help + " (default " + formats.front() + ")");
        cmd->add_option("--output", output, "write to FILE atomically instead of stdout");
    }

    /// ConfigError "--format must be a, b or c" unless the format is one of `formats`.
    void check() const {
        for (const auto& f : formats)
            if (f == format) return;
        std::string list;
        for (std::size_t i = 0; i < formats.size(); ++i)
            list += (i == 0 ? "" : i + 1 == formats.size() ? " or " : ", ") + formats[i];
        throw ConfigError("--format must be " + list);
    }

    /// Writes `text` to --output (atomically) or standard output.
    void write(const std::string& text) const { cli::write_output(text, output); }
    /// Writes the rendering the format names (json, csv, else text).
    void write(const std::string& text, const std::string& csv, const std::string& json) const {
        cli::write_formatted(format, text, csv, json, output);
    }
};

/// `--queries FILE` and `--label L`: a query subset (eval/subsets.hpp read_query_subset).
struct QuerySubsetArgs {
    std::string queries;
    std::string label;

    void add(CLI::App* cmd, const std::string& help =
                                "query subset: qid, qid<TAB>label or qid,text,label lines "
                                "(default: all run queries)") {
        cmd->add_option("--queries", queries, help);
        cmd->add_option("--label", label, "keep only queries with this label (e.g. n = neutral)");
    }

    /// The selected qids in file order; empty when no --queries file was given.
    std::vector<std::string> qids() const {
        return queries.empty() ? std::vector<std::string>{} : read_query_subset(queries, label);
    }
};

}  // namespace plumb::eval::detail
