// `plumb index`: build a passage index (Lucene++ + exact BM25 side files) from a corpus file.
#include <csignal>
#include <cstdio>
#include <memory>
#include <optional>

#include "index/index_builder.hpp"
#include "index/shard_builder.hpp"
#include "plugin/cli/command.hpp"
#include "plugin/cli/options.hpp"
#include "plugin/cli/progress_bar.hpp"
#include "plugin/error.hpp"
#ifdef PLUMB_WITH_MPI
#include "mpi/sharded_build.hpp"
#endif

namespace {

struct IndexArgs {
    std::string corpus;
    std::string index;
    std::string format;  // empty: by extension
    unsigned threads = 1;
    std::string analyzer = "lucene3";
    bool no_stem = false;
    bool no_stop = false;
    bool skip_bad = false;
    double max_bad_share = 0.1;
    bool no_title = false;
    double ram_mb = 256;
    bool allow_empty = false;
    std::size_t shards = 0;  ///< 0: one index
    bool quiet = false;
};

plumb::CancelToken g_cancel;
extern "C" void on_interrupt(int) { g_cancel.request(); }

void run_index(const IndexArgs& a) {
    plumb::index::IndexBuildOptions o;
    o.format = plumb::index::resolve_corpus_format(a.format, a.corpus);
    o.analysis.analyzer = plumb::index::parse_analyzer_kind(a.analyzer);
    o.analysis.stem = !a.no_stem;
    o.analysis.stop = !a.no_stop;
    o.skip_bad = a.skip_bad;
    o.max_bad_share = a.max_bad_share;
    o.title = !a.no_title;
    o.threads = a.threads;
    o.ram_buffer_mb = a.ram_mb;
    o.allow_empty = a.allow_empty;
    // Ctrl-C / SIGTERM cancel cleanly: the temporary build directory is removed and a previous
    // index at --index stays as it was.
    auto old_int = std::signal(SIGINT, on_interrupt);
    auto old_term = std::signal(SIGTERM, on_interrupt);
    plumb::index::IndexBuildStats s;
    std::size_t shards = a.shards;
    bool rank0 = true;
    std::string mpi_note;  // (MPI: the steps' times on rank 0)
    {
#ifdef PLUMB_WITH_MPI
        // Under mpirun -n R (R > 1): the ranks build the shards together (--shards defaults
        // to R); only rank 0 shows progress and prints.
        const auto world = plumb::mpi::parallel_world();
        if (world) {
            if (shards == 0) shards = static_cast<std::size_t>(world->size());
            rank0 = world->rank() == 0;
        }
#endif
        plumb::cli::ProgressBar bar("index", "bytes", !a.quiet && rank0);
        try {
#ifdef PLUMB_WITH_MPI
            if (world) {
                plumb::mpi::BuildTimings t;
                s = plumb::mpi::build_shards(*world, a.corpus, a.index, shards, o, bar.callback(),
                                             &g_cancel, &t)
                        .total;
                char buf[256];
                std::snprintf(buf, sizeof buf,
                              "on %d MPI ranks: count pass %.1f s, shard builds %.1f s (rank 0), "
                              "id check and wait %.1f s, manifest %.2f s\n",
                              world->size(), t.count, t.build, t.ids, t.manifest);
                mpi_note = buf;
            } else
#endif
            if (shards > 0) {
                s = plumb::index::build_shards(a.corpus, a.index, shards, o, bar.callback(),
                                               &g_cancel)
                        .total;
            } else {
                s = plumb::index::build_index(a.corpus, a.index, o, bar.callback(), &g_cancel);
            }
        } catch (...) {
            std::signal(SIGINT, old_int);
            std::signal(SIGTERM, old_term);
            throw;
        }
        bar.finish();
    }
    std::signal(SIGINT, old_int);
    std::signal(SIGTERM, old_term);
    if (!rank0) return;
    double avg = s.documents ? static_cast<double>(s.total_length) / s.documents : 0.0;
    std::printf("indexed %llu documents (%llu terms, avg length %.2f, %llu bad lines skipped) "
                "with analysis %s in %.1f s (%.0f docs/s) -> %s\n",
                static_cast<unsigned long long>(s.documents),
                static_cast<unsigned long long>(s.terms), avg,
                static_cast<unsigned long long>(s.skipped), o.analysis.name().c_str(), s.seconds,
                s.seconds > 0 ? static_cast<double>(s.documents) / s.seconds : 0.0,
                a.index.c_str());
    if (shards > 0) {
        std::printf(
            "as %zu shards (%s/shard-000 ..., manifest %s/plumb-shards.json; terms "
            "counted per shard)\n",
            shards, a.index.c_str(), a.index.c_str());
    }
    if (!mpi_note.empty()) std::fputs(mpi_note.c_str(), stdout);
}

void add_index(CLI::App& app) {
    auto [cmd, args] = plumb::cli::add_command<IndexArgs>(
        app, "index",
        "Index a corpus (MS MARCO TSV id<TAB>text, BEIR JSONL or folder, TREC SGML files or "
        "folder, HTML folder or tarball) with Lucene++ for exact BM25; "
        "crash-safe (the previous index at --index is replaced only when the new one is "
        "complete)",
        run_index);
    cmd->add_option("--corpus,-c", args->corpus,
                    "Corpus file, folder (BEIR, TREC, HTML) or tarball (\"-\" = standard input)")
        ->required();
    cmd->add_option("--index,-i", args->index, "Index directory to create or replace")
        ->required();
    plumb::cli::add_input_format_option(cmd, args->format,
                    "Corpus format: tsv, jsonl, trec or html (default: detected: a folder with "
                    "corpus.jsonl = jsonl, other folders by their first file, .tar/.tgz = html, "
                    ".jsonl/.json = jsonl, a file starting with <DOC> = trec, else tsv)")
        ->check(CLI::IsMember({"tsv", "jsonl", "trec", "html"}));
    plumb::cli::add_threads_option(cmd, "--threads,-t", args->threads,
                                   "Analysis threads (plus one writer thread)");
    cmd->add_option("--analyzer", args->analyzer,
                    "lucene3 (Lucene++ 3 classic tokenizer) or anserini (Anserini's default "
                    "English analyzer: Lucene 9 UAX#29 tokenizer, possessives, stop words, "
                    "Porter); recorded in the index and used for queries")
        ->capture_default_str()
        ->check(CLI::IsMember({"lucene3", "anserini"}));
    cmd->add_flag("--no-stem", args->no_stem, "Disable Porter stemming");
    cmd->add_flag("--no-stop", args->no_stop, "Keep English stop words");
    cmd->add_flag("--skip-bad", args->skip_bad,
                  "Skip (and count) malformed corpus lines or documents; a file where none "
                  "parses or more than --max-bad-share fail is still an error");
    cmd->add_option("--max-bad-share", args->max_bad_share,
                    "With --skip-bad: largest tolerated share of bad records per file")
        ->capture_default_str()
        ->check(CLI::Range(0.0, 1.0));
    cmd->add_flag("--no-title", args->no_title,
                  "JSONL: index and store only the text (default: title + \" \" + text)");
    cmd->add_option("--ram-mb", args->ram_mb, "Lucene++ RAM buffer in MB")
        ->capture_default_str()
        ->check(CLI::Range(16.0, 2000.0));
    cmd->add_flag("--allow-empty", args->allow_empty,
                  "Build an empty index from a corpus without documents (otherwise an error)");
    cmd->add_option("--shards", args->shards,
                    "Build N shards from contiguous ranges of the corpus, one after the other, "
                    "as normal indexes --index/shard-000 ..., then the manifest "
                    "--index/plumb-shards.json (plumb search --index reads it); the corpus is "
                    "read N + 1 times. Under mpirun -n R the R ranks build the shards in "
                    "parallel (rank r: shards r, r + R, ...; default N = R; --index and "
                    "--corpus on a file system every rank sees)")
        ->check(CLI::Range(std::size_t{1}, std::size_t{999}));
    plumb::cli::add_quiet_flag(cmd, args->quiet, "No progress bar");
}

const plumb::cli::CommandRegistrar kIndex{"index", add_index};

}  // namespace
