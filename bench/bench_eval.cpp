// bench_eval: speed and memory of plumb's embedded trec_eval.
//
// Generates (deterministically) a run of Q queries x D documents (default 10,000 x 1,000 =
// 10 M lines, MS MARCO-like numeric docids, scores with ties) and qrels (~20 judgements per
// query, graded 0..3, half of them retrieved) in a temporary directory, then evaluates the run
// with 10 measures through Evaluator::evaluate_run (parse + rank + measures, one core) and
// prints run lines/s, MB/s, the raw read speed of the same file for reference, and the peak RSS
// (getrusage). Goal (issue 3): >= 2 M lines/s, memory ~ one query's lines + qrels.
//
//   bench_eval [--queries 10000] [--docs 1000] [--dir DIR] [--keep]
#include <sys/resource.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>

#include "eval/evaluator.hpp"

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

double seconds_since(Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
}

/// User + system CPU seconds of this process so far.
double cpu_seconds() {
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

double peak_rss_mb() {
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    return static_cast<double>(ru.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB on Linux
}

/// Writes the run grouped by query (the usual layout) or interleaved (rank 1 of every query,
/// then rank 2 of every query, ...: each query comes back `docs` times).
void generate(const fs::path& run, const fs::path& qrels, long queries, long docs,
              bool interleaved) {
    std::mt19937_64 rng(42);
    std::FILE* fr = std::fopen(run.c_str(), "wb");
    std::FILE* fq = std::fopen(qrels.c_str(), "wb");
    if (!fr || !fq) throw std::runtime_error("cannot create benchmark files");
    std::vector<char> buf(1 << 20);
    std::setvbuf(fr, buf.data(), _IOFBF, buf.size());
    // Per query: documents are distinct ids from a window of an 8.8M-passage id space.
    std::vector<long> base(static_cast<std::size_t>(queries)), stride(base.size());
    std::vector<double> score(base.size(), 30.0);
    for (long q = 0; q < queries; ++q) {
        base[static_cast<std::size_t>(q)] = static_cast<long>(rng() % 8000000);
        stride[static_cast<std::size_t>(q)] = 1 + static_cast<long>(rng() % 7);
    }
    char line[128];
    auto emit = [&](long q, long d) {
        const auto i = static_cast<std::size_t>(q);
        if (rng() % 10 != 0) score[i] -= static_cast<double>(rng() % 1000) / 100000.0;  // ties
        int n = std::snprintf(line, sizeof line, "%ld Q0 %ld %ld %.6f bench\n", 1000000 + q,
                              base[i] + d * stride[i], d + 1, score[i]);
        std::fwrite(line, 1, static_cast<std::size_t>(n), fr);
    };
    if (interleaved) {
        for (long d = 0; d < docs; ++d) {
            for (long q = 0; q < queries; ++q) emit(q, d);
        }
    } else {
        for (long q = 0; q < queries; ++q) {
            for (long d = 0; d < docs; ++d) emit(q, d);
        }
    }
    for (long q = 0; q < queries; ++q) {
        // 20 distinct judged documents: 10 retrieved (one per tenth of the ranking), 10 not.
        const auto i = static_cast<std::size_t>(q);
        const long window = std::max(1L, docs / 10);
        for (long j = 0; j < 20; ++j) {
            long doc =
                (j % 2 == 0)
                    ? base[i] + ((j / 2) * window + static_cast<long>(rng() % window)) * stride[i]
                    : 9000000 + q * 100 + j;
            std::fprintf(fq, "%ld 0 %ld %d\n", 1000000 + q, doc, static_cast<int>(rng() % 4));
        }
    }
    std::fclose(fr);
    std::fclose(fq);
}

double raw_read_mb_s(const fs::path& p) {
    auto t = Clock::now();
    std::FILE* f = std::fopen(p.c_str(), "rb");
    std::vector<char> buf(1 << 20);
    std::size_t total = 0, n;
    while ((n = std::fread(buf.data(), 1, buf.size(), f)) > 0) total += n;
    std::fclose(f);
    return static_cast<double>(total) / 1e6 / seconds_since(t);
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"bench_eval: plumb's embedded trec_eval on a generated run"};
    long queries = 10000, docs = 1000;
    std::string dir;
    bool keep = false, interleaved = false;
    std::string trec_eval;
    app.add_option("--queries", queries, "queries in the run");
    app.add_flag("--interleaved", interleaved,
                 "write each query's lines spread through the run (rank 1 of all queries, then "
                 "rank 2, ...): the partitioned path");
    app.add_option("--trec-eval", trec_eval,
                   "path of the official trec_eval binary: timed on the same files (peer)");
    app.add_option("--docs", docs, "documents per query");
    app.add_option("--dir", dir, "working directory (default: a new temporary one)");
    app.add_flag("--keep", keep, "keep the generated files");
    CLI11_PARSE(app, argc, argv);

    try {
        fs::path work = dir.empty() ? fs::temp_directory_path() /
                                          ("plumb_bench_eval_" + std::to_string(::getpid()))
                                    : fs::path(dir);
        fs::create_directories(work);
        const fs::path run = work / "bench.run", qrels = work / "bench.qrels";

        auto t0 = Clock::now();
        generate(run, qrels, queries, docs, interleaved);
        const double lines = static_cast<double>(queries) * static_cast<double>(docs);
        const double mb = static_cast<double>(fs::file_size(run)) / 1e6;
        std::printf("generated %.0f run lines (%.0f MB) in %.1f s\n", lines, mb, seconds_since(t0));
        std::printf("raw read of the run file (page cache): %.0f MB/s\n", raw_read_mb_s(run));

        const std::vector<std::string> measures = {
            "map",        "P.10",  "recall.1000", "ndcg",       "ndcg_cut.10",
            "recip_rank", "Rprec", "bpref",       "mrr_cut.10", "success.10"};
        auto t1 = Clock::now();
        auto q = std::make_shared<const plumb::eval::Qrels>(plumb::eval::Qrels::load(qrels));
        const double t_qrels = seconds_since(t1);
        plumb::eval::Evaluator ev(q, plumb::eval::MeasureSet::parse(measures));
        auto t2 = Clock::now();
        const double c2 = cpu_seconds();
        auto result = ev.evaluate_run(run);
        const double t_eval = seconds_since(t2);
        const double c_eval = cpu_seconds() - c2;

        std::printf("qrels: %zu judgements loaded in %.3f s\n", q->num_judgements(), t_qrels);
        std::printf(
            "evaluate_run (parse + rank + 10 measures, 1 core): %.2f s, %.2f M lines/s, "
            "%.0f MB/s  [goal >= 2 M lines/s: %s]\n",
            t_eval, lines / t_eval / 1e6, mb / t_eval, lines / t_eval >= 2e6 ? "met" : "NOT met");
        std::printf(
            "  CPU time %.2f s -> %.2f M lines/s per core busy (wall time also counts waiting "
            "for a shared CPU)\n",
            c_eval, lines / c_eval / 1e6);
        std::printf("queries evaluated: %zu; map %.4f, ndcg_cut_10 %.4f, mrr_cut_10 %.4f\n",
                    result.queries.size(), result.summary_value("map"),
                    result.summary_value("ndcg_cut_10"), result.summary_value("mrr_cut_10"));
        std::printf("peak RSS: %.1f MB (run file %.0f MB, %s)\n", peak_rss_mb(), mb,
                    interleaved ? "interleaved" : "grouped by query");
        if (!trec_eval.empty()) {
            std::string cmd = "'" + trec_eval + "'";
            for (const auto& m : measures) {
                if (m.rfind("mrr_cut", 0) != 0) cmd += " -m " + m;  // trec_eval has no mrr_cut
            }
            cmd += " '" + qrels.string() + "' '" + run.string() + "' > /dev/null";
            auto t3 = Clock::now();
            const int status = std::system(cmd.c_str());
            const double t_te = seconds_since(t3);
            std::printf(
                "trec_eval (same files, 9 measures): %.2f s, %.2f M lines/s (exit %d); "
                "plumb %.1fx\n",
                t_te, lines / t_te / 1e6, status, t_te / t_eval);
        }
        if (!keep && dir.empty()) fs::remove_all(work);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "bench_eval: %s\n", e.what());
        return 1;
    }
    return 0;
}
