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

struct CommandRegistrar {
    CommandRegistrar(std::string name, CommandSetup setup) {
        command_table().push_back({std::move(name), std::move(setup)});
    }
};

}  // namespace plumb::cli
