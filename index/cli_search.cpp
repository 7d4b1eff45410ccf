// `plumb search`: batch BM25 (optionally RM3) retrieval of a topics file into a TREC run.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "index/bm25_searcher.hpp"
#include "index/corpus.hpp"
#include "index/shard_manifest.hpp"
#include "index/sharded_searcher.hpp"
#include "plugin/cli/command.hpp"
#include "plugin/cli/options.hpp"
#include "plugin/cli/progress_bar.hpp"
#include "plugin/error.hpp"
#include "plugin/text_io.hpp"
#include "plugin/trec_run.hpp"
#ifdef PLUMB_WITH_MPI
#include "mpi/sharded_search.hpp"
#endif

namespace {

std::vector<std::string> algorithm_names() {
    const auto names = plumb::index::search_algorithm_names();
    return {names.begin(), names.end()};
}

struct SearchArgs {
    std::string index;
    std::string topics;
    std::string output;
    std::size_t k = 1000;
    unsigned threads = 1;
    float k1 = 0.9f;
    float b = 0.4f;
    bool lucene_norms = false;
    bool rm3 = false;
    std::size_t fb_docs = 10;
    std::size_t fb_terms = 10;
    float original_weight = 0.5f;
    std::string tag;
    std::string algorithm = "auto";
    std::string analyzer;  ///< required analyzer (empty: the index's, whichever it is)
    bool no_stem = false;
    bool no_stop = false;
    bool skip_bad = false;
    std::string topic_field = "title";
    bool quiet = false;
    std::string pipeline;  ///< JSON pipeline configuration (replaces the BM25 options)
    plumb::index::IntraQueryOptions intra;  ///< --intra-query-* (parts 0: off)
};

/// `--pipeline FILE`: the configured pipeline instead of plain BM25 (same as `plumb pipeline`).
/// Pipelines may hold neural stages: they run in the LibTorch CLI module.
void run_pipeline_search(const SearchArgs& a) {
#ifdef PLUMB_WITH_MPI
    if (plumb::mpi::parallel_world()) {
        throw plumb::UsageError(
            "search --pipeline does not split its work across MPI ranks: use `plumb pipeline "
            "--config` under mpirun (each rank runs a part of the topics)");
    }
#endif
    plumb::cli::load_torch_module();
    auto& hook = plumb::cli::pipeline_search_hook();
    if (!hook)
        throw plumb::Error(
            "search --pipeline: the LibTorch CLI module registered no pipeline runner");
    plumb::cli::PipelineSearchRequest request;
    request.config = a.pipeline;
    request.topics = a.topics;
    request.output = a.output;
    request.tag = a.tag.empty() ? "plumb-pipeline" : a.tag;
    request.topic_field = a.topic_field;
    request.threads = a.threads;
    request.quiet = a.quiet;
    hook(request);
}

void run_search(const SearchArgs& a) {
    namespace pi = plumb::index;
    pi::parse_topic_fields(a.topic_field);  // a bad --topic-field fails before any work
    if (!a.pipeline.empty()) {
        run_pipeline_search(a);
        return;
    }
    if (a.index.empty()) throw plumb::ConfigError("search: --index is required (or --pipeline)");
    pi::IndexOpenOptions open_options;
    if (a.no_stem || a.no_stop || !a.analyzer.empty()) {
        // An explicit analysis request must match the index's; without --analyzer, the
        // index's analyzer is taken as requested.
        pi::AnalysisOptions want;
        want.stem = !a.no_stem;
        want.stop = !a.no_stop;
        if (a.analyzer.empty()) {
            const bool sharded = pi::ShardManifest::present(a.index);
            auto first = sharded ? pi::ShardManifest::read(a.index).shard_dir(a.index, 0)
                                 : std::filesystem::path(a.index);
            want.analyzer = pi::PassageIndex::open(first)->info().analysis.analyzer;
        } else {
            want.analyzer = pi::parse_analyzer_kind(a.analyzer);
        }
        open_options.expect_analysis = want;
    }
    pi::TopicReadOptions topic_options;
    topic_options.skip_bad = a.skip_bad;
    topic_options.fields = pi::parse_topic_fields(a.topic_field);
    // A directory holding plumb-shards.json is a sharded index: searched over all its shards
    // with the collection's statistics (the same run as one index over the whole corpus).
    std::shared_ptr<const pi::Bm25Searcher> searcher;
    std::shared_ptr<const pi::ShardedSearcher> sharded;
    bool rank0 = true;
#ifdef PLUMB_WITH_MPI
    // Under mpirun -n R (R > 1) over a sharded index: rank r searches shards r, r + R, ...;
    // statistics and hits are exchanged with MPI collectives; rank 0 writes the run.
    const auto world = plumb::mpi::parallel_world();
    std::optional<plumb::mpi::ShardedSearch> distributed;
    if (world) {
        rank0 = world->rank() == 0;
        world->collective([&] {
            if (!pi::ShardManifest::present(a.index)) {
                throw plumb::UsageError(
                    "search under mpirun needs a sharded index (plumb index --shards N): " +
                    a.index + " holds no plumb-shards.json");
            }
        });
        distributed.emplace(*world, a.index, open_options);
    } else
#endif
    if (pi::ShardManifest::present(a.index)) {
        sharded = pi::ShardedSearcher::open(a.index, open_options);
    } else {
        searcher = pi::Bm25Searcher::open(a.index, open_options);
    }
    std::uint64_t skipped = 0;
    std::vector<plumb::Query> queries;
#ifdef PLUMB_WITH_MPI
    if (world) {
        world->collective([&] { queries = pi::read_topics(a.topics, topic_options, &skipped); });
    } else
#endif
    queries = pi::read_topics(a.topics, topic_options, &skipped);

    pi::SearchOptions o;
    o.bm25.k1 = a.k1;
    o.bm25.b = a.b;
    o.bm25.lucene_norms = a.lucene_norms;
    o.rm3 = a.rm3;
    o.rm3_params.fb_docs = a.fb_docs;
    o.rm3_params.fb_terms = a.fb_terms;
    o.rm3_params.original_query_weight = a.original_weight;
    o.algorithm = pi::search_algorithm_from_name(a.algorithm);
    o.intra_query = a.intra;
    std::string tag = a.tag.empty() ? (a.rm3 ? "plumb-bm25-rm3" : "plumb-bm25") : a.tag;

    // Streams the run in chunks of queries so that memory stays bounded for large topic sets.
    std::optional<plumb::AtomicFile> out;
#ifdef PLUMB_WITH_MPI
    if (world) {
        world->collective([&] {
            if (rank0) out.emplace(a.output);
        });
    } else
#endif
    out.emplace(a.output);
    plumb::cli::ProgressBar bar("search", "queries", !a.quiet && rank0);
    const std::size_t chunk = 1024;
    std::size_t done = 0, lines = 0;
#ifdef PLUMB_WITH_MPI
    if (distributed) {
        // Every rank merges and formats its part of each chunk; rank 0 writes.
        lines = distributed->search_run(
            queries, a.k, o, tag, out ? &*out : nullptr, a.threads, chunk,
            [&](std::uint64_t d, std::uint64_t total) { bar.update(d, total); });
    } else
#endif
    for (std::size_t start = 0; start < queries.size(); start += chunk) {
        std::size_t n = std::min(chunk, queries.size() - start);
        std::span<const plumb::Query> part(queries.data() + start, n);
        auto progress = [&](std::uint64_t d, std::uint64_t) {
            bar.update(done + d, queries.size());
        };
        auto lists = sharded ? sharded->search_batch(part, a.k, o, a.threads, progress)
                             : searcher->search_batch(part, a.k, o, a.threads, progress);
        done += n;
        for (const auto& list : lists) {
            plumb::write_trec_run(*out, list, tag);
            lines += list.candidates.size();
        }
    }
    bar.finish();
#ifdef PLUMB_WITH_MPI
    if (world) {
        world->collective([&] {
            if (out) out->commit();
        });
    } else
#endif
    out->commit();
#ifdef PLUMB_WITH_MPI
    if (distributed) {
        const auto all = distributed->all_timings();  // (collective)
        for (std::size_t r = 0; rank0 && r < all.size(); ++r) {
            const auto& t = all[r];
            std::fprintf(stderr,
                         "on %d MPI ranks (rank %zu: own shards %.2f s, MPI exchanges and waits "
                         "%.2f s, merge %.2f s, run lines %.2f s, waiting for the writer %.2f s)\n",
                         world->size(), r, t.local, t.exchange, t.merge, t.format, t.write);
        }
    }
#endif
    if (!rank0) return;
    if (searcher && a.intra.parts >= 2) {
        const auto c = searcher->intra_query_counts();
        std::fprintf(stderr,
                     "intra-query parallelism: %llu queries split, other threads took over "
                     "chunks %llu times\n",
                     static_cast<unsigned long long>(c.splits),
                     static_cast<unsigned long long>(c.helper_joins));
    }
    std::fprintf(stderr, "searched %zu queries (%llu bad lines skipped): %zu results -> %s\n",
                 queries.size(), static_cast<unsigned long long>(skipped), lines, a.output.c_str());
}

void add_search(CLI::App& app) {
    auto [cmd, args] = plumb::cli::add_command<SearchArgs>(
        app, "search",
        "Batch BM25 retrieval (exact document lengths; optional RM3) of a topics file "
        "(TSV qid<TAB>query or BEIR queries.jsonl) into a TREC run",
        run_search);
    cmd->add_option("--index,-i", args->index,
                    "Index directory (plumb index), or a sharded index (a directory holding "
                    "plumb-shards.json: plumb index --shards; under mpirun -n R, R <= shards, "
                    "rank r searches shards r, r + R, ... and rank 0 writes the run); required "
                    "unless --pipeline is given");
    cmd->add_option("--pipeline", args->pipeline,
                    "JSON pipeline configuration (see `plumb pipeline`); only --topics, "
                    "--output, --threads, --tag and --quiet apply")
        ->check(CLI::ExistingFile);
    plumb::cli::add_topics_options(cmd, args->topics, args->topic_field);
    cmd->add_option("--output,-o", args->output, "Output run file (written atomically)")
        ->required();
    cmd->add_option("--k,--hits", args->k, "Results per query")
        ->capture_default_str()
        ->check(plumb::cli::positive_count());
    plumb::cli::add_threads_option(cmd, "--threads,-t", args->threads, "Search threads");
    cmd->add_option("--bm25.k1", args->k1, "BM25 k1")->capture_default_str()->check(
        CLI::Range(0.0f, 100.0f));
    cmd->add_option("--bm25.b", args->b, "BM25 b")->capture_default_str()->check(
        CLI::Range(0.0f, 1.0f));
    cmd->add_flag("--bm25.lucene-norms", args->lucene_norms,
                  "score with document lengths as Lucene 9's one-byte norms keep them (as "
                  "Anserini does): for reproducing Anserini's BM25 figures");
    cmd->add_flag("--rm3", args->rm3, "RM3 query expansion (Anserini's Rm3Reranker)");
    cmd->add_option("--rm3.fb-docs", args->fb_docs, "RM3 feedback documents")
        ->capture_default_str();
    cmd->add_option("--rm3.fb-terms", args->fb_terms, "RM3 feedback terms")
        ->capture_default_str();
    cmd->add_option("--rm3.original-weight", args->original_weight,
                    "RM3 weight of the original query")
        ->capture_default_str()
        ->check(CLI::Range(0.0f, 1.0f));
    cmd->add_option("--tag", args->tag, "Run tag (default plumb-bm25 / plumb-bm25-rm3)");
    cmd->add_option("--algorithm", args->algorithm,
                    "auto (for k <= 100 block-max-maxscore, or taat-maxscore on indexes "
                    "without block-max metadata; else exhaustive), exhaustive, maxscore, "
                    "taat-maxscore or block-max-maxscore; all give identical results")
        ->check(CLI::IsMember(algorithm_names()))
        ->capture_default_str();
    // Intra-query parallelism (SearchOptions::intra_query; index/README.md).
    cmd->add_option("--intra-query-parts", args->intra.parts,
                    "With --threads > 1: split a long query into this many document ranges "
                    "that the other search threads take over (same results; lower latency of "
                    "long queries). 0 = off")
        ->capture_default_str()
        ->check(CLI::Range(0u, plumb::index::kMaxIntraQueryParts));
    cmd->add_option("--intra-query-after-ms", args->intra.after_ms,
                    "... a block-max query (k <= 100) splits once it has scanned this long")
        ->capture_default_str()
        ->check(CLI::Range(0.0, 1e9));
    cmd->add_option("--intra-query-lend-ms", args->intra.lend_ms,
                    "... a thread takes others' block-max ranges only within this long of its own "
                    "query's start")
        ->capture_default_str()
        ->check(CLI::Range(0.0, 1e9));
    cmd->add_option("--intra-query-exhaustive-postings", args->intra.exhaustive_min_postings,
                    "... an exhaustive query (k > 100) with this many postings splits at its "
                    "start (0: never)")
        ->capture_default_str()
        ->check(CLI::NonNegativeNumber);
    cmd->add_option("--analyzer", args->analyzer,
                    "Require an index built with this analyzer (lucene3 or anserini; the "
                    "index's analyzer is always used)")
        ->check(CLI::IsMember({"lucene3", "anserini"}));
    cmd->add_flag("--no-stem", args->no_stem,
                  "Require an index built with --no-stem (the index's analysis is always used)");
    cmd->add_flag("--no-stop", args->no_stop,
                  "Require an index built with --no-stop (the index's analysis is always used)");
    cmd->add_flag("--skip-bad", args->skip_bad, "Skip (and count) malformed topic lines");
    plumb::cli::add_quiet_flag(cmd, args->quiet, "No progress bar");
}

const plumb::cli::CommandRegistrar kSearch{"search", add_search};

}  // namespace
