#pragma once
/// \file detail_cli.hpp
/// What the `plumb debias` command files (cli_*.cpp) share: the command group their subcommands
/// join and the option groups several subcommands declare alike. CLI only, not installed.

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "plugin/cli/command.hpp"
#include "plugin/cli/options.hpp"

namespace plumb::debias::detail {

/// `plumb debias`, created by whichever command file registers first.
inline CLI::App& debias_command(CLI::App& app) {
    return cli::command_group(app, "debias", "Audits and transformations of retrieval data");
}

/// `--input-format tsv|jsonl`: the format of a corpus given to `cmd`, by extension when absent.
inline CLI::Option* add_corpus_format_option(CLI::App* cmd, std::string& format) {
    return cli::add_input_format_option(cmd, format, "Corpus format (default: by extension)")
        ->check(CLI::IsMember({"tsv", "jsonl"}));
}

/// `--corpus` or `--index` (not both), and the corpus' `--input-format`: the passages a command
/// reads, from a corpus file or from a plumb index.
inline void add_passage_options(CLI::App* cmd, std::string& corpus, std::string& index,
                                std::string& format) {
    auto* corpus_option = cmd->add_option("--corpus", corpus, "Corpus (TSV or BEIR JSONL)");
    auto* index_option = cmd->add_option("--index", index, "A plumb passage index directory");
    corpus_option->excludes(index_option);
    add_corpus_format_option(cmd, format);
}

/// `--dic` (required) and `--categories`: a LIWC dictionary and the categories used from it.
inline void add_liwc_options(CLI::App* cmd, std::string& dic,
                             std::vector<std::string>& categories) {
    cmd->add_option("--dic", dic, "LIWC-format dictionary (.dic)")->required();
    cmd->add_option("--categories", categories,
                    "Categories (names or ids, comma-separated; default: all)")
        ->delimiter(',');
}

}  // namespace plumb::debias::detail
