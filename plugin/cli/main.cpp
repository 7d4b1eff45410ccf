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
#include <string_view>
#include <system_error>
#include <vector>

#include "plugin/allocator.hpp"
#include "plugin/cli/command.hpp"
#include "plugin/error.hpp"
#include "plugin/text_io.hpp"
#ifdef PLUMB_WITH_MPI
#include "mpi/comm.hpp"
#endif

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

MatsHook& mats_hook() {
    static MatsHook hook;
    return hook;
}

ExceptionTranslator& exception_translator() {
    static ExceptionTranslator translator;
    return translator;
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
                "), which could not be loaded; tried:" +
                tried);
}

}  // namespace plumb::cli

namespace {

/// Exit statuses of `plumb` (README "Exit status"): 0 success; 1 an error in the input or
/// environment (a file that is missing or malformed, a bad configuration or model); 2 a usage
/// error (unknown command or option, a missing or impossible option value); 3 an internal error
/// (a bug: please report it).
constexpr int kExitError = 1;
constexpr int kExitUsage = 2;
constexpr int kExitInternal = 3;

/// Levenshtein distance (for "did you mean").
std::size_t edit_distance(const std::string& a, const std::string& b) {
    std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
        cur[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j) {
            cur[j] = std::min(
                {prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
        }
        std::swap(prev, cur);
    }
    return prev[b.size()];
}

/// The name among `names` closest to `word` (distance <= 1/3 of its length, at least 2), or "".
std::string closest(const std::string& word, const std::vector<std::string>& names) {
    std::string best;
    std::size_t best_d = std::max<std::size_t>(2, word.size() / 3) + 1;
    for (const auto& n : names) {
        const std::size_t d = edit_distance(word, n);
        if (d < best_d || (n.rfind(word, 0) == 0 && word.size() >= 3 && best.empty())) {
            best_d = std::min(d, best_d);
            best = n;
        }
    }
    return best;
}

/// The subcommand chain named on the command line and the first word that is not one of its
/// subcommands, for "unknown command" messages.
std::string usage_hint(CLI::App& app, int argc, char** argv, std::string& unknown) {
    CLI::App* cur = &app;
    std::string path = "plumb";
    for (int i = 1; i < argc; ++i) {
        const std::string w = argv[i];
        if (w.empty() || w[0] == '-') break;
        CLI::App* sub = nullptr;
        for (auto* s : cur->get_subcommands([](CLI::App*) { return true; })) {
            if (s->get_name() == w) sub = s;
        }
        if (!sub) {
            if (cur->get_subcommands([](CLI::App*) { return true; }).empty()) break;
            std::vector<std::string> names;
            for (auto* s : cur->get_subcommands([](CLI::App*) { return true; })) {
                names.push_back(s->get_name());
            }
            unknown = "unknown command '" + w + "' for '" + path + "'";
            const std::string c = closest(w, names);
            if (!c.empty()) unknown += "; did you mean '" + path + " " + c + "'?";
            break;
        }
        cur = sub;
        path += " " + w;
    }
    return path;
}

int fail(const char* what, const std::string& message, int status, bool collective);

/// True on MPI ranks other than 0 of a job of several ranks: they print no help or notes (every
/// rank parses the same command line).
bool secondary_rank() {
#ifdef PLUMB_WITH_MPI
    if (plumb::mpi::active()) {
        const auto world = plumb::mpi::Comm::world();
        return world.size() > 1 && world.rank() != 0;
    }
#endif
    return false;
}

/// app.exit(e) (help, version) printed by rank 0 only.
int exit_quietly_on_secondary(CLI::App& app, const CLI::Error& e) {
    if (secondary_rank()) return e.get_exit_code();
    return app.exit(e);
}

/// One CLI11 app with every registered command (the core ones, plus the module's once loaded).
int parse_and_run(int argc, char** argv, bool last_attempt, bool& retry) {
    CLI::App app{
        "plumb: debiased retrieval — BM25 first stage, neural re-ranking, bias-aware "
        "post-filters, and an evaluator for effectiveness and bias"};
    app.require_subcommand(1);
    app.set_version_flag("--version", std::string("plumb 0.1.0"));
    // Limits on untrusted input that apply to every command (given before the command name).
    app.add_option_function<std::string>(
           "--max-line-bytes",
           [](const std::string& v) {
               const auto n = plumb::parse_byte_size(v);
               if (!n) throw plumb::UsageError("--max-line-bytes: expected a size such as 512M");
               plumb::LineReader::set_default_max_line_bytes(*n);
               // The LibTorch module holds its own copy of the readers' default: it reads it
               // from the environment.
               ::setenv("PLUMB_MAX_LINE_BYTES", std::to_string(*n).c_str(), 1);
           },
           "Longest line any text input may have (bytes, or with K/M/G; default 64M, or "
           "$PLUMB_MAX_LINE_BYTES); longer lines are errors naming file and line")
        ->type_name("SIZE");
    auto table = plumb::cli::command_table();  // copy: setups may not reorder the registry
    std::sort(table.begin(), table.end(),
              [](const auto& a, const auto& b) { return a.name < b.name; });
    for (auto& entry : table) entry.setup(app);
    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForVersion& e) {
        return exit_quietly_on_secondary(app, e);
    } catch (const CLI::ParseError& e) {
        // An unknown subcommand (or --help, which should list every command) may belong to
        // the LibTorch module: parse again with it loaded.
        std::string unknown;
        const std::string path = usage_hint(app, argc, argv, unknown);
        // Only an unknown command (or a bare --help listing every command) may be the
        // module's: a mistake in a core command's options is reported without loading it.
        const bool maybe_module = !unknown.empty() || path == "plumb";
        if (!last_attempt && maybe_module) {
            retry = true;
            return 0;
        }
        if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) {
            return exit_quietly_on_secondary(app, e);  // --help, --help-all
        }
        // (under MPI every rank parses the same command line: printed once, by rank 0)
        return fail("error",
                    (unknown.empty() ? std::string(e.what()) : unknown) + "\n(run '" + path +
                        " --help' for usage)",
                    kExitUsage, false);
    }
    return 0;
}

/// Reports an error that ends `plumb`. Under MPI (mpirun -n N, N > 1): an error every rank
/// raised together (plumb::mpi::CollectiveError) is printed once, by rank 0, and every rank exits
/// with `status`. Any other error first waits a few seconds for every rank to fail too
/// (agree_on_failure: a bad command line, a usage error every rank finds): then rank 0 prints the
/// message once (or each rank's, labelled, when they differ) and every rank exits with the
/// largest status. An error of some ranks only is printed with its rank and aborts the whole job
/// (the other ranks may be waiting for it in a collective call).
int fail(const char* what, const std::string& message, int status, bool collective) {
#ifdef PLUMB_WITH_MPI
    if (plumb::mpi::active()) {
        const auto world = plumb::mpi::Comm::world();
        if (world.size() > 1) {
            if (collective) {
                if (world.rank() == 0) std::fprintf(stderr, "plumb: %s: %s\n", what, message.c_str());
                return status;
            }
            if (const auto all = plumb::mpi::agree_on_failure(message, status, 5.0)) {
                if (world.rank() == 0) {
                    const bool same = std::all_of(all->messages.begin(), all->messages.end(),
                                                  [&](const auto& m) { return m == message; });
                    for (std::size_t r = 0; r < all->messages.size(); ++r) {
                        if (same) {
                            std::fprintf(stderr, "plumb: %s: %s\n", what, message.c_str());
                            break;
                        }
                        std::fprintf(stderr, "plumb: %s (MPI rank %zu of %d): %s\n", what, r,
                                     world.size(), all->messages[r].c_str());
                    }
                }
                return all->status;
            }
            std::fprintf(stderr, "plumb: %s (MPI rank %d of %d): %s\n", what, world.rank(),
                         world.size(), message.c_str());
            std::fflush(stderr);
            world.abort(status);
        }
    }
#else
    (void)collective;
#endif
    std::fprintf(stderr, "plumb: %s: %s\n", what, message.c_str());
    return status;
}

bool is_collective(const std::exception& e) {
#ifdef PLUMB_WITH_MPI
    return dynamic_cast<const plumb::mpi::CollectiveError*>(&e) != nullptr;
#else
    (void)e;
    return false;
#endif
}

int run_main(int argc, char** argv) {
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
            if (rc != 0 && !module_error.empty() && !secondary_rank()) {
                std::fprintf(stderr, "plumb: note: the LibTorch commands are unavailable: %s\n",
                             module_error.c_str());
            }
        }
        return rc;
    } catch (const plumb::UsageError& e) {
        return fail("error", e.what(), kExitUsage, false);
    } catch (const plumb::Error& e) {
        return fail("error", e.what(), kExitError, is_collective(e));
    } catch (const std::bad_alloc&) {
        return fail("error", "out of memory", kExitError, false);
    } catch (const std::exception& e) {
        if (auto& translate = plumb::cli::exception_translator()) {
            const std::string message = translate(e);
            if (!message.empty()) return fail("error", message, kExitError, false);
        }
        return fail("internal error", e.what(), kExitInternal, false);
    }
}

}  // namespace

int main(int argc, char** argv) {
    // Large inference temporaries from the heap instead of a fresh mmap per forward pass
    // (plugin/allocator.hpp); PLUMB_MALLOC=default keeps glibc's defaults, and GLIBC_TUNABLES
    // malloc settings win.
    if (const char* m = std::getenv("PLUMB_MALLOC"); !(m && std::string_view(m) == "default")) {
        plumb::tune_allocator_for_inference();
    }
#ifdef PLUMB_WITH_MPI
    // MPI starts only when a launcher (mpirun, srun) started this process; a plain `plumb`
    // never touches MPI. Finalised when main returns.
    plumb::mpi::Session mpi_session(&argc, &argv);
#endif
    return run_main(argc, argv);
}
