// The `plumb` command line: a thin layer over the library. Each folder contributes its
// subcommands through plumb::cli::CommandRegistrar (see command.hpp).
#include <algorithm>
#include <csignal>
#include <cstdio>
#include <exception>

#include "plugin/cli/command.hpp"
#include "plugin/error.hpp"

namespace plumb::cli {
std::vector<CommandEntry>& command_table() {
    static std::vector<CommandEntry> table;
    return table;
}
}  // namespace plumb::cli

int main(int argc, char** argv) {
    CLI::App app{"plumb: debiased retrieval — BM25 first stage, neural re-ranking, bias-aware "
                 "post-filters, and an evaluator for effectiveness and bias"};
    app.require_subcommand(1);
    app.set_version_flag("--version", std::string("plumb 0.1.0"));
    auto& table = plumb::cli::command_table();
    std::sort(table.begin(), table.end(),
              [](const auto& a, const auto& b) { return a.name < b.name; });
    for (auto& entry : table) entry.setup(app);
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return app.exit(e);
    } catch (const plumb::Error& e) {
        std::fprintf(stderr, "plumb: error: %s\n", e.what());
        return 1;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "plumb: internal error: %s\n", e.what());
        return 2;
    }
    return 0;
}
