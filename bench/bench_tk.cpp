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
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <random>
#include <string>
#include <vector>

#include "rerank/tk_model.hpp"

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

}  // namespace

int main(int argc, char** argv) {
    CLI::App app("bench_tk: TK re-ranking ms/query and passages/s");
    std::size_t queries = 5, candidates = 1000, batch = 32, vocab = 50000;
    int threads = 1;
    std::uint64_t seed = 1;
    app.add_option("--queries", queries, "timed queries")->capture_default_str();
    app.add_option("--candidates", candidates, "candidates per query")->capture_default_str();
    app.add_option("--batch", batch, "passages per forward call")->capture_default_str();
    app.add_option("--threads", threads, "Torch intra-op threads")->capture_default_str();
    app.add_option("--vocab", vocab, "vocabulary size")->capture_default_str();
    app.add_option("--seed", seed)->capture_default_str();
    CLI11_PARSE(app, argc, argv);

    tk_set_intra_op_threads(threads);
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
        TkConfig c;  // 300-d, 2 layers, ff 100, 11 kernels, max lengths 30 / 200
        c.heads = s.heads;
        c.head_dim = s.head_dim;
        auto model = TkModel::create(c, TkVocabulary(words), {}, seed);
        std::vector<double> times;
        double cpu = 0;
        for (std::size_t q = 0; q < qs.size(); ++q) {
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
        double t0 = now_ms();
        auto vecs = model.passage_vectors(views, batch);
        double t1 = now_ms();
        std::printf("%s: %lld parameters | re-rank %zu candidates: median %.1f ms/query, mean "
                    "%.1f ms/query (%.0f passages/s), CPU %.1f ms/query | contextualise: %.0f "
                    "passages/s\n",
                    s.name, static_cast<long long>(model.parameter_count()), candidates, median,
                    mean, 1000.0 * static_cast<double>(candidates) / mean, cpu,
                    1000.0 * static_cast<double>(vecs.size()) / (t1 - t0));
    }
    return 0;
}
