#pragma once
/// \file command.hpp
/// How a folder adds subcommands to the one `plumb` CLI without a central list: a source file
/// listed with plumb_add_cli_sources() defines a static CommandRegistrar. The CLI is a thin layer
/// over the library: parse options, call library functions, print.

#include <CLI/CLI.hpp>

#include <functional>
#include <string>
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

struct CommandRegistrar {
    CommandRegistrar(std::string name, CommandSetup setup) {
        command_table().push_back({std::move(name), std::move(setup)});
    }
};

}  // namespace plumb::cli
