// The `plumb` command line: a thin layer over the library. Each folder contributes its
// subcommands through plumb::cli::CommandRegistrar (see command.hpp). Commands that need
// LibTorch live in libplumb_cli_torch.so, loaded only when the command line asks for one.
#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include "plugin/cli/command.hpp"
#include "plugin/error.hpp"

#ifndef PLUMB_CLI_MODULE_NAME
#define PLUMB_CLI_MODULE_NAME "libplumb_cli_torch.so"
#endif
#ifndef PLUMB_CLI_MODULE_INSTALL_DIR
#define PLUMB_CLI_MODULE_INSTALL_DIR "../lib/plumb"
#endif

namespace plumb::cli {

std::vector<CommandEntry>& command_table() {
    static std::vector<CommandEntry> table;
    return table;
}

PipelineSearchHook& pipeline_search_hook() {
    static PipelineSearchHook hook;
    return hook;
}

namespace {
bool g_module_loaded = false;

std::vector<std::filesystem::path> module_candidates() {
    std::vector<std::filesystem::path> out;
    if (const char* env = std::getenv("PLUMB_CLI_MODULE"); env != nullptr && *env != '\0') {
        out.emplace_back(env);
        return out;
    }
    std::error_code ec;
    const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (!ec) {
        const auto dir = exe.parent_path();
        out.push_back(dir / PLUMB_CLI_MODULE_NAME);
        out.push_back(dir / PLUMB_CLI_MODULE_INSTALL_DIR / PLUMB_CLI_MODULE_NAME);
    }
    return out;
}
}  // namespace

bool torch_module_loaded() noexcept { return g_module_loaded; }

void load_torch_module() {
    if (g_module_loaded) return;
    std::string tried;
    for (const auto& path : module_candidates()) {
        std::error_code ec;
        if (!std::filesystem::exists(path, ec)) {
            tried += "\n  " + path.string() + " (missing)";
            continue;
        }
        // RTLD_GLOBAL: Torch's own plugins resolve symbols through the global scope.
        if (dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL) != nullptr) {
            g_module_loaded = true;
            return;
        }
        const char* why = dlerror();
        tried += "\n  " + path.string() + ": " + (why != nullptr ? why : "dlopen failed");
    }
    throw Error("this command needs plumb's LibTorch module (" PLUMB_CLI_MODULE_NAME
                "), which could not be loaded; tried:" + tried);
}

}  // namespace plumb::cli

namespace {

/// One CLI11 app with every registered command (the core ones, plus the module's once loaded).
int parse_and_run(int argc, char** argv, bool last_attempt, bool& retry) {
    CLI::App app{"plumb: debiased retrieval — BM25 first stage, neural re-ranking, bias-aware "
                 "post-filters, and an evaluator for effectiveness and bias"};
    app.require_subcommand(1);
    app.set_version_flag("--version", std::string("plumb 0.1.0"));
    auto table = plumb::cli::command_table();  // copy: setups may not reorder the registry
    std::sort(table.begin(), table.end(),
              [](const auto& a, const auto& b) { return a.name < b.name; });
    for (auto& entry : table) entry.setup(app);
    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForVersion& e) {
        return app.exit(e);
    } catch (const CLI::ParseError& e) {
        // An unknown subcommand (or --help, which should list every command) may belong to
        // the LibTorch module: parse again with it loaded.
        if (!last_attempt) {
            retry = true;
            return 0;
        }
        return app.exit(e);
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    try {
        bool retry = false;
        int rc = parse_and_run(argc, argv, plumb::cli::torch_module_loaded(), retry);
        if (retry) {
            std::string module_error;
            try {
                plumb::cli::load_torch_module();
            } catch (const plumb::Error& e) {
                module_error = e.what();
            }
            rc = parse_and_run(argc, argv, true, retry);
            if (rc != 0 && !module_error.empty()) {
                std::fprintf(stderr, "plumb: note: the LibTorch commands are unavailable: %s\n",
                             module_error.c_str());
            }
        }
        return rc;
    } catch (const plumb::Error& e) {
        std::fprintf(stderr, "plumb: error: %s\n", e.what());
        return 1;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "plumb: internal error: %s\n", e.what());
        return 2;
    }
}
