// `plumb pipeline`: runs a JSON- or YAML-configured pipeline over a topics file into a TREC run.
#include <cstdio>
#include <string>
#include <vector>

#include "index/corpus.hpp"
#include "plugin/builtins/builtins.hpp"
#include "plugin/cli/command.hpp"
#include "plugin/cli/options.hpp"
#include "plugin/cli/progress_bar.hpp"
#ifdef PLUMB_WITH_MPI
#include "mpi/batch.hpp"
#include "plugin/text_io.hpp"
#endif

namespace {

#ifdef PLUMB_WITH_MPI
/// One rank's --stats table under a heading naming the rank and its queries (1-based, in topics
/// order).
std::string part_stats(int rank, int ranks, const plumb::mpi::Part& part,
                       const std::string& table) {
    std::string head = "MPI rank " + std::to_string(rank) + " of " + std::to_string(ranks) + ", ";
    head += part.count == 0 ? std::string("no queries")
                            : "queries " + std::to_string(part.first + 1) + "-" +
                                  std::to_string(part.first + part.count) + " (" +
                                  std::to_string(part.count) + ")";
    return (rank == 0 ? "" : "\n") + head + ":\n" + table;
}
#endif

struct PipelineArgs {
    std::string config;
    std::string topics;
    std::string topic_field = "title";
    std::string output;
    std::vector<std::string> plugins;
    unsigned threads = 1;
    std::string tag = "plumb";
    std::string report;
    bool stats = false;
    bool quiet = false;
};

void setup(CLI::App& app) {
    auto args = std::make_shared<PipelineArgs>();
    auto* cmd = app.add_subcommand(
        "pipeline",
        "Run a JSON- or YAML-configured pipeline (first stage, re-rankers, post-filters) "
        "over a topics file into a TREC run");
    cmd->add_option("--config", args->config,
                    "pipeline configuration (JSON, or YAML when named *.yaml / *.yml)")
        ->required()
        ->check(CLI::ExistingFile);
    cmd->add_option("--topics", args->topics,
                    "topics (TSV qid<TAB>query, BEIR JSONL or TREC <top> topics)")
        ->required()
        ->check(CLI::ExistingFile);
    cmd->add_option("--topic-field", args->topic_field,
                    "TREC topics: title, description, narrative or several joined by '+'")
        ->capture_default_str();
    cmd->add_option("--output,-o", args->output, "output TREC run")->required();
    cmd->add_option("--plugin", args->plugins, "plugin library to load (repeatable)");
    plumb::cli::add_threads_option(cmd, "--threads,-t", args->threads,
                                   "queries searched in parallel");
    cmd->add_option("--tag", args->tag, "run tag");
    cmd->add_option("--report", args->report,
                    "write the post-filters' per-query measures (bias and utility before and "
                    "after) as TSV qid, stage, measure, value");
    cmd->add_flag("--stats", args->stats,
                  "print per-stage latency statistics (ms) and the post-filters' mean measures");
    plumb::cli::add_quiet_flag(cmd, args->quiet, "no progress bar");
    cmd->callback([args] {
        plumb::PipelineRunOptions o;
        o.threads = args->threads;
        o.tag = args->tag;
        o.report = args->report;
        o.topic_fields = plumb::index::parse_topic_fields(args->topic_field);
        std::vector<std::filesystem::path> plugins(args->plugins.begin(), args->plugins.end());
#ifdef PLUMB_WITH_MPI
        // Under mpirun -n R: rank r runs a contiguous part of the topics; rank 0 writes the
        // run (and --report) from the parts in order; --stats prints every rank's table,
        // labelled with the rank and its queries (latency percentiles do not combine exactly).
        if (const auto world = plumb::mpi::parallel_world()) {
            const bool rank0 = world->rank() == 0;
            std::string run_lines, report_lines, table;
            plumb::mpi::Part mine;
            o.part = [&](std::size_t n) {
                mine = plumb::mpi::partition(n, world->rank(), world->size());
                return std::pair<std::size_t, std::size_t>(mine.first, mine.count);
            };
            o.emit = [&](std::string run, std::string report) {
                run_lines = std::move(run);
                report_lines = std::move(report);
            };
            world->collective([&] {
                plumb::cli::ProgressBar bar("pipeline", "queries", !args->quiet && rank0);
                o.progress = bar.callback();
                table = plumb::run_pipeline_config(args->config, args->topics, args->output,
                                                   plugins, o, args->stats);
                bar.finish();
            });
            const auto run = plumb::mpi::gather_concat(*world, run_lines);
            const auto report = plumb::mpi::gather_concat(*world, report_lines);
            if (args->stats) {
                table = plumb::mpi::gather_concat(
                    *world, part_stats(world->rank(), world->size(), mine, table));
            }
            world->collective([&] {
                if (!rank0) return;
                if (!args->report.empty()) {
                    plumb::AtomicFile out(args->report);
                    out.write(plumb::format_report_header());
                    out.write(report);
                    out.commit();
                }
                plumb::AtomicFile out(args->output);
                out.write(run);
                out.commit();
            });
            if (rank0 && !table.empty()) std::fputs(table.c_str(), stdout);
            return;
        }
#endif
        plumb::cli::ProgressBar bar("pipeline", "queries", !args->quiet);
        o.progress = bar.callback();
        std::string table = plumb::run_pipeline_config(args->config, args->topics, args->output,
                                                       plugins, o, args->stats);
        bar.finish();
        if (!table.empty()) std::fputs(table.c_str(), stdout);
    });
}

const plumb::cli::CommandRegistrar registrar("pipeline", setup);

}  // namespace
