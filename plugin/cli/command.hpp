#pragma once
/// \file command.hpp
/// How a folder adds subcommands to the one `plumb` CLI without a central list: a source file
/// listed with plumb_add_cli_sources() defines a static CommandRegistrar. The CLI is a thin layer
/// over the library: parse options, call library functions, print.

#include <CLI/CLI.hpp>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace plumb::cli {

/// setup(app) adds one or more subcommands (with callbacks) to the root app.
using CommandSetup = std::function<void(CLI::App& app)>;

struct CommandEntry {
    std::string name;  ///< for ordering in --help
    CommandSetup setup;
};

std::vector<CommandEntry>& command_table();

/// The subcommand `name` of `app`, added (with `description`, requiring a subcommand of its
/// own) when no earlier registrar created it: several folders attach subcommands to one group
/// such as `plumb debias`, whatever order their registrars run in.
inline CLI::App& command_group(CLI::App& app, const std::string& name,
                               const std::string& description) {
    try {
        return *app.get_subcommand(name);
    } catch (const CLI::OptionNotFound&) {
        auto* group = app.add_subcommand(name, description);
        group->require_subcommand(1);
        return *group;
    }
}

/// The subcommands that need LibTorch (neural models, training, configured pipelines) are built
/// into a separate module, libplumb_cli_torch.so (sources listed with
/// `plumb_add_cli_sources(TORCH ...)`), so that every other command starts without loading
/// LibTorch's ~300 shared libraries. main() parses with the core commands first and, when that
/// fails (unknown subcommand, --help), loads the module and parses again with all commands.
/// The module is looked up next to the executable (build tree), then in
/// <prefix>/<libdir>/plumb/ (installed), or at $PLUMB_CLI_MODULE.
/// Loads the module once; later calls do nothing. Throws plumb::Error when it cannot be loaded.
void load_torch_module();
/// True once the module is loaded.
bool torch_module_loaded() noexcept;

/// `plumb search --pipeline`: the core `search` command hands configured pipelines to the
/// module, which sets this hook when it is loaded.
struct PipelineSearchRequest {
    std::string config;
    std::string topics;
    std::string output;
    std::string tag;
    std::string topic_field = "title";  ///< TREC topics: title, description, ... joined by '+'
    unsigned threads = 1;
    bool quiet = false;
};
using PipelineSearchHook = std::function<void(const PipelineSearchRequest&)>;
PipelineSearchHook& pipeline_search_hook();

/// `plumb audit --mats-model`: the core `audit` command hands the MATS of a model (which runs
/// the model) to the module, which sets this hook when it is loaded; the same computation as
/// `plumb debias mats` with the same options (defaults as there), without writing files.
struct MatsRequest {
    std::string model;         ///< TK model folder, or a BERT-DOT / bi-encoder folder
    std::string model_type = "auto";  ///< tk | dot | auto (tk when config.json says plumb-tk)
    std::string corpus;        ///< passages (TSV or BEIR JSONL); the first `sample` are used
    std::string input_format;  ///< tsv | jsonl (empty: by extension)
    std::size_t sample = 2000;
    std::size_t max_delta = 0;
    std::size_t max_pairs = 200;
    std::size_t batch = 64;
    std::size_t passage_max_length = 256;  ///< dot: tokens per passage, [CLS]/[SEP] included
    std::uint64_t seed = 42;
    bool quiet = false;
};
/// Returns MATS (NaN when undefined: no term pair at any distance).
using MatsHook = std::function<double(const MatsRequest&)>;

/// The options of a MATS computation that choose, size and sample its model's passages, declared
/// once for `plumb debias mats` (prefix "") and `plumb audit` (prefix "mats-", its help lines
/// starting with "position: "): --<prefix>model-type, --<prefix>passage-max-length,
/// --<prefix>sample, --<prefix>seed.
inline void add_mats_model_options(CLI::App* cmd, MatsRequest& r, const std::string& prefix,
                                   const std::string& help_prefix = "") {
    cmd->add_option("--" + prefix + "model-type", r.model_type,
                    help_prefix +
                        "tk | dot | auto (auto: dot for a sentence-transformers folder, tk when "
                        "config.json's format is plumb-tk, else dot). A cross-encoder has no "
                        "passage vectors without its query: refused")
        ->check(CLI::IsMember({"tk", "dot", "auto"}))
        ->capture_default_str();
    cmd->add_option("--" + prefix + "passage-max-length", r.passage_max_length,
                    help_prefix +
                        "dot: tokens per passage, [CLS]/[SEP] included (as the model was trained, "
                        "e.g. plumb train --passage-max-length)")
        ->check(CLI::Range(3, 1 << 20))
        ->capture_default_str();
    cmd->add_option("--" + prefix + "sample", r.sample,
                    help_prefix + "passages contextualized (the first N of the corpus)")
        ->capture_default_str();
    cmd->add_option("--" + prefix + "seed", r.seed, help_prefix + "pair sampling seed")
        ->capture_default_str();
}
MatsHook& mats_hook();

/// Turns an exception from a library the core CLI does not know (LibTorch's c10::Error) into
/// the one-line message of a user error; returns "" for exceptions it does not recognise. Set
/// by the LibTorch module when loaded, so that a shape mismatch in a user's checkpoint reads
/// "plumb: error: ..." (exit 1), not an internal error with LibTorch's C++ stack trace.
using ExceptionTranslator = std::function<std::string(const std::exception&)>;
ExceptionTranslator& exception_translator();

/// Adds the subcommand `name` to `parent`. Its options fill an `Args` that lives as long as the
/// command; when the command line names it, `run(args)` runs. Returns the subcommand, to
/// declare its options on, and its arguments.
template <typename Args, typename Run>
std::pair<CLI::App*, std::shared_ptr<Args>> add_command(CLI::App& parent, const std::string& name,
                                                        const std::string& description, Run run) {
    auto args = std::make_shared<Args>();
    auto* cmd = parent.add_subcommand(name, description);
    cmd->callback([args, run = std::move(run)] { run(*args); });
    return {cmd, args};
}

struct CommandRegistrar {
    CommandRegistrar(std::string name, CommandSetup setup) {
        command_table().push_back({std::move(name), std::move(setup)});
    }
};

}  // namespace plumb::cli
