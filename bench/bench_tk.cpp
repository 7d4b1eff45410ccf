// bench_tk: TK re-ranking speed (issue 4): ms per query to re-score 1,000 candidates, and
// passage contextualisation throughput (passages/s), with random weights at paper 000's
// dimensions (300-d embeddings, 2 layers, 16 heads of 32, feed-forward 100) and at the
// ECAI'20 code's (10 heads of 30 = the 300-d embedding split, nn.TransformerEncoderLayer).
//
// Input: a random 50,000-word vocabulary, queries of 2-8 words, passages of 60-200 words drawn
// from it (Zipf-like), so passages are truncated nowhere (max length 200). Timing: wall clock
// of TkModel::score() per query (tokenisation included), one warm-up query first; median and
// mean over the queries, and the process CPU time per query (the machine may be shared).
// Torch intra-op threads are set with --threads (default 1).
//
// Passage cache (rerank/tk_cache.hpp): the same passages are written to a cache file
// (build_tk_cache, timed: passages/s), then each query's 1,000 candidates are re-scored through
// the TK stage with that cache (docid lookup, text-hash check of the candidate's text, query
// contextualisation, cosine match and kernel pooling; median/mean ms per query) and through
// TkModel::score_cached alone (the query contextualised on 1 Torch thread, the match and
// pooling on --threads threads: the stage's setup); printed beside the uncached figure with the ratio, the largest
// |cached - uncached| score difference (200 candidates of one query), and the cache size per
// million passages at the measured mean length. --cached-repeats N > 1 reports the later passes
// (the cache's pages already mapped, as in a serving process) beside the first.
//
// Kernels (issue 14): the float32 matmul peak is measured first in the same process (best of 5
// torch::mm 2048 x 2048); the contextualisation (TkModel::passage_vectors of one query's
// candidates) is timed through TK's kernels (BERT's attention kernel and oneDNN sgemm) and,
// unless --no-reference, through the pre-kernel reference path (ATen's batched matmul), with
// the GFLOP/s of each, the % of the peak and the ratio. FLOPs are counted on real tokens only
// (padding excluded): per layer and passage of n words 2n·D·3P (Q, K, V) + 4n²P (scores and
// weighted sum) + 2n·P·D (output) + 4n·D·F (feed-forward). The same figures per process CPU
// second (peak too) are printed beside them: robust to other processes sharing the cores, but
// OpenMP's spinning workers count as CPU time.
#include <torch/torch.h>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <random>
#include <string>
#include <vector>

#include <filesystem>
#include <unistd.h>

#include "rerank/detail/tk_module.hpp"
#include "rerank/tk_cache.hpp"
#include "rerank/tk_model.hpp"
#include "rerank/tk_stage.hpp"

using namespace plumb::rerank;

namespace {

double cpu_ms() {
    // Process CPU time (user + system): robust to other processes sharing the machine.
    return 1000.0 * static_cast<double>(std::clock()) / CLOCKS_PER_SEC;
}

double now_ms() {
    return std::chrono::duration<double, std::milli>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

std::string random_text(std::mt19937_64& rng, std::size_t words, std::size_t vocab) {
    // Zipf-like: rank = floor(vocab^u) for u uniform.
    std::uniform_real_distribution<double> u(0.0, 1.0);
    std::string s;
    for (std::size_t i = 0; i < words; ++i) {
        auto r = static_cast<std::size_t>(std::pow(static_cast<double>(vocab), u(rng))) - 1;
        if (i) s += ' ';
        s += "t" + std::to_string(std::min(r, vocab - 1));
    }
    return s;
}

/// Best GFLOP/s of torch::mm n x n over `reps`, by wall clock (first) and per process CPU
/// second (second: robust to other processes taking the cores).
std::pair<double, double> measure_peak_gflops(std::int64_t n, int reps) {
    c10::InferenceMode guard;
    auto a = torch::randn({n, n}), b = torch::randn({n, n});
    auto c = torch::mm(a, b);  // warm-up
    double best = 0, best_cpu = 0;
    const double flop = 2.0 * static_cast<double>(n * n) * static_cast<double>(n);
    for (int r = 0; r < reps; ++r) {
        const double t0 = now_ms(), c0 = cpu_ms();
        c = torch::mm(a, b);
        const double ms = now_ms() - t0, cms = cpu_ms() - c0;
        best = std::max(best, flop / ms / 1e6);
        if (cms > 0) best_cpu = std::max(best_cpu, flop / cms / 1e6);
    }
    return {best, best_cpu};
}

/// FLOPs of TK's contextualisation of `vecs` (real tokens only; see the file comment).
double contextualise_flops(const TkConfig& c, const std::vector<TkTermVectors>& vecs) {
    const double d = static_cast<double>(c.embedding_dim);
    const double p = static_cast<double>(c.attention_dim());
    const double f = static_cast<double>(c.ff_dim);
    double total = 0;
    for (const auto& v : vecs) {
        const double n = static_cast<double>(v.terms.size());
        total += 2 * n * d * 3 * p + 4 * n * n * p + 2 * n * p * d + 4 * n * d * f;
    }
    return total * static_cast<double>(c.layers);
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app("bench_tk: TK re-ranking ms/query and passages/s");
    std::size_t queries = 5, candidates = 1000, batch = 32, vocab = 50000;
    int threads = 1;
    std::uint64_t seed = 1;
    bool no_cache = false;
    std::string only;
    std::size_t repeats = 1;
    std::size_t uncached_queries = 0;
    app.add_option("--queries", queries, "timed queries")->capture_default_str();
    app.add_option("--candidates", candidates, "candidates per query")->capture_default_str();
    app.add_option("--batch", batch, "passages per forward call")->capture_default_str();
    app.add_option("--threads", threads, "Torch intra-op threads")->capture_default_str();
    app.add_option("--vocab", vocab, "vocabulary size")->capture_default_str();
    app.add_option("--seed", seed)->capture_default_str();
    app.add_flag("--no-cache", no_cache, "skip the passage-cache measurements");
    app.add_option("--cached-repeats", repeats,
                   "time the cached scoring over all queries this many times (the first pass "
                   "maps the cache's pages; the figures are of the later passes when > 1)")
        ->capture_default_str();
    app.add_option("--uncached-queries", uncached_queries,
                   "time the uncached path on the first N queries only (0 = all)")
        ->capture_default_str();
    app.add_option("--setup", only, "only this setup: paper000 or ecai20 (default both)");
    bool no_reference = false;
    std::string precision = "fp16";
    app.add_option("--cache-precision", precision, "passage cache values: fp16 or int8")
        ->capture_default_str()
        ->check(CLI::IsMember({"fp16", "int8"}));
    app.add_flag("--no-reference", no_reference,
                 "skip timing the pre-kernel reference path of the contextualisation");
    CLI11_PARSE(app, argc, argv);

    tk_set_intra_op_threads(threads);
    const auto [peak, peak_cpu] = measure_peak_gflops(2048, 5);
    std::printf("matmul peak (torch::mm 2048x2048 float32, %d thread(s)): %.1f GFLOP/s (%.1f per "
                "CPU-second)\n",
                threads, peak, peak_cpu);
    std::vector<std::string> words;
    for (std::size_t i = 0; i < vocab; ++i) words.push_back("t" + std::to_string(i));
    std::mt19937_64 rng(seed);
    std::uniform_int_distribution<std::size_t> plen(60, 200), qlen(2, 8);
    std::vector<std::string> qs;
    std::vector<std::vector<std::string>> ps;
    std::size_t total_words = 0;
    for (std::size_t q = 0; q < queries + 1; ++q) {
        qs.push_back(random_text(rng, qlen(rng), vocab));
        ps.emplace_back();
        for (std::size_t i = 0; i < candidates; ++i) {
            auto n = plen(rng);
            total_words += n;
            ps.back().push_back(random_text(rng, n, vocab));
        }
    }
    std::printf("bench_tk: %zu queries (+1 warm-up) x %zu candidates, passages 60-200 words "
                "(mean %.1f), batch %zu, %d intra-op thread(s)\n",
                queries, candidates,
                static_cast<double>(total_words) / static_cast<double>((queries + 1) * candidates),
                batch, threads);

    struct Setup {
        const char* name;
        std::int64_t heads, head_dim;
    };
    for (const Setup& s : {Setup{"paper000 16 heads x 32", 16, 32},
                           Setup{"ecai20   10 heads x 30", 10, 0}}) {
        if (!only.empty() && std::string(s.name).rfind(only, 0) != 0) continue;
        TkConfig c;  // 300-d, 2 layers, ff 100, 11 kernels, max lengths 30 / 200
        c.heads = s.heads;
        c.head_dim = s.head_dim;
        auto model = TkModel::create(c, TkVocabulary(words), {}, seed);
        std::vector<double> times;
        double cpu = 0;
        const std::size_t timed =
            uncached_queries ? std::min(qs.size(), uncached_queries + 1) : qs.size();
        for (std::size_t q = 0; q < timed; ++q) {
            double t0 = now_ms(), c0 = cpu_ms();
            auto scores = model.score(qs[q], ps[q], batch);
            double t1 = now_ms(), c1 = cpu_ms();
            if (scores.size() != candidates) return 1;
            if (q > 0) {  // query 0 is the warm-up
                times.push_back(t1 - t0);
                cpu += c1 - c0;
            }
        }
        cpu /= static_cast<double>(times.size());
        std::sort(times.begin(), times.end());
        double mean = 0;
        for (double t : times) mean += t;
        mean /= static_cast<double>(times.size());
        const double median = times[times.size() / 2];
        // Contextualisation alone (what ATS/MATS and passage caching use).
        std::vector<std::string_view> views(ps[1].begin(), ps[1].end());
        double t0 = now_ms(), k0 = cpu_ms();
        auto vecs = model.passage_vectors(views, batch);
        double t1 = now_ms(), k1 = cpu_ms();
        const double flops = contextualise_flops(c, vecs);
        const double gflops = flops / (t1 - t0) / 1e6;
        const double gflops_cpu = flops / (k1 - k0) / 1e6;
        std::printf("%s: contextualise %zu passages through TK's kernels: %.0f ms, %.1f GFLOP/s "
                    "= %.0f%% of the matmul peak | per CPU-second %.1f = %.0f%%\n",
                    s.name, vecs.size(), t1 - t0, gflops, 100.0 * gflops / peak, gflops_cpu,
                    100.0 * gflops_cpu / peak_cpu);
        if (!no_reference) {
            auto module = plumb::rerank::detail::TkModelAccess::module(model);
            module->set_reference_kernels(true);
            const double r0 = now_ms(), rk0 = cpu_ms();
            auto ref = model.passage_vectors(views, batch);
            const double r1 = now_ms(), rk1 = cpu_ms();
            module->set_reference_kernels(false);
            double diff = 0;
            for (std::size_t i = 0; i < ref.size(); ++i) {
                for (std::size_t j = 0; j < ref[i].values.size(); ++j) {
                    diff = std::max(diff, static_cast<double>(std::abs(ref[i].values[j] -
                                                                       vecs[i].values[j])));
                }
            }
            const double rg = flops / (r1 - r0) / 1e6;
            const double rg_cpu = flops / (rk1 - rk0) / 1e6;
            std::printf("%s: contextualise %zu passages through the reference path (ATen): %.0f "
                        "ms, %.1f GFLOP/s = %.0f%% of the matmul peak | per CPU-second %.1f = "
                        "%.0f%% | kernels %.2fx faster (%.2fx in CPU time) | max |kernels - "
                        "reference| %.2e\n",
                        s.name, ref.size(), r1 - r0, rg, 100.0 * rg / peak, rg_cpu,
                        100.0 * rg_cpu / peak_cpu, (r1 - r0) / (t1 - t0),
                        (rk1 - rk0) / (k1 - k0), diff);
        }
        std::printf("%s: %lld parameters | re-rank %zu candidates: median %.1f ms/query, mean "
                    "%.1f ms/query (%.0f passages/s), CPU %.1f ms/query | contextualise: %.0f "
                    "passages/s\n",
                    s.name, static_cast<long long>(model.parameter_count()), candidates, median,
                    mean, 1000.0 * static_cast<double>(candidates) / mean, cpu,
                    1000.0 * static_cast<double>(vecs.size()) / (t1 - t0));
        std::fflush(stdout);
        if (no_cache) continue;

        // Passage cache of every query's candidates (docid "q<query>-<rank>").
        const auto dir = std::filesystem::temp_directory_path() /
                         ("bench_tk_cache_" + std::to_string(::getpid()));
        std::filesystem::create_directories(dir);
        const auto file = dir / "bench.plumbtkc";
        std::size_t next = 0;
        DocumentStream docs = [&](plumb::DocId& id, std::string& text) {
            if (next >= qs.size() * candidates) return false;
            id = "q" + std::to_string(next / candidates) + "-" + std::to_string(next % candidates);
            text = ps[next / candidates][next % candidates];
            ++next;
            return true;
        };
        TkCacheBuildOptions bo;
        bo.batch_size = batch;
        bo.precision = parse_tk_cache_precision(precision);
        const double b0 = now_ms();
        auto report = build_tk_cache(model, docs, 0, file, bo);
        const double b1 = now_ms();
        auto shared = std::make_shared<const TkModel>(std::move(model));
        TkStageOptions so;
        so.depth = candidates;
        so.batch_size = batch;
        so.cache = file.string();
        so.threads = threads;  // the match; the query side on 1 Torch thread (as the stage does)
        tk_set_intra_op_threads(1);
        auto stage = make_tk_stage(shared, so);
        auto cache = TkPassageCache::open(file);
        std::vector<double> st, mt, first;
        double cached_cpu = 0;
        double max_diff = 0;
        // Pass 0 touches each query's passages for the first time (their pages are mapped); with
        // --cached-repeats > 1 the figures are those of the later passes (a warm cache).
        for (std::size_t rep = 0; rep < std::max<std::size_t>(repeats, 1); ++rep) {
            for (std::size_t q = 0; q < qs.size(); ++q) {
                std::vector<plumb::Candidate> cands(candidates);
                std::vector<TkCachedPassage> rows(candidates);
                for (std::size_t i = 0; i < candidates; ++i) {
                    cands[i].docid = "q" + std::to_string(q) + "-" + std::to_string(i);
                    cands[i].text = ps[q][i];
                    rows[i] = cache->find(cands[i].docid)->passage;
                }
                const plumb::Query query{"q", qs[q]};
                double a0 = now_ms(), k0 = cpu_ms();
                auto cached = stage->score(query, cands);
                double a1 = now_ms(), k1 = cpu_ms();
                auto direct = shared->score_cached(qs[q], rows, threads);
                double a2 = now_ms();
                if (cached.size() != candidates || direct.size() != candidates) return 1;
                if (rep == 0 && q > 0) first.push_back(a1 - a0);
                if ((repeats <= 1 && q > 0) || rep > 0) {
                    st.push_back(a1 - a0);
                    mt.push_back(a2 - a1);
                    cached_cpu += k1 - k0;
                }
                // Compare with the uncached path (query 1, its first 200 candidates).
                if (rep == 0 && q == 1) {
                    tk_set_intra_op_threads(threads);
                    const std::size_t m = std::min<std::size_t>(candidates, 200);
                    std::vector<std::string> head(ps[q].begin(), ps[q].begin() + m);
                    auto ref = shared->score(qs[q], head, batch);
                    for (std::size_t i = 0; i < m; ++i) {
                        max_diff =
                            std::max(max_diff, static_cast<double>(std::abs(ref[i] - cached[i])));
                    }
                    tk_set_intra_op_threads(1);
                }
            }
        }
        auto med = [](std::vector<double> v) {
            std::sort(v.begin(), v.end());
            return v[v.size() / 2];
        };
        auto avg = [](const std::vector<double>& v) {
            double m = 0;
            for (double x : v) m += x;
            return m / static_cast<double>(v.size());
        };
        const double per_passage =
            static_cast<double>(report.bytes) / static_cast<double>(report.passages);
        std::printf("%s: %s cache: cached re-rank %zu candidates: first pass (pages mapped) median %.2f "
                    "ms/query; %s: stage median %.2f ms/query, mean %.2f, CPU %.2f ms/query "
                    "(%.0fx faster than uncached); score_cached alone median %.2f ms | max "
                    "|cached - uncached| %.2e | cache build %.0f passages/s, %.1f terms/passage, "
                    "%.0f bytes/passage = %.1f GB per million passages (%.0f bytes/term)\n",
                    s.name, precision.c_str(), candidates, med(first), repeats > 1 ? "later passes" : "same pass",
                    med(st), avg(st), cached_cpu / static_cast<double>(st.size()),
                    median / med(st), med(mt), max_diff,
                    1000.0 * static_cast<double>(report.passages) / (b1 - b0),
                    static_cast<double>(report.rows) / static_cast<double>(report.passages),
                    per_passage, per_passage * 1e6 / 1e9,
                    per_passage * static_cast<double>(report.passages) /
                        static_cast<double>(report.rows));
        std::fflush(stdout);
        tk_set_intra_op_threads(threads);
        std::filesystem::remove_all(dir);
    }
    return 0;
}
