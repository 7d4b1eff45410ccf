// bench_rerank: neural re-ranking speed (issue 4). Prints, for randomly initialised models:
//  - the machine's float32 matrix-multiply peak, measured with torch::mm on large matrices;
//  - BERT-CAT throughput (query-passage pairs/s) end to end (WordPiece + batching + model) for a
//    BERT-base-sized (12 x 768) and a MiniLM-sized (6 x 384) config at N candidates of ~180
//    tokens, with the achieved GFLOP/s and its fraction of the peak;
//  - the same cross-encoders with int8 dynamic quantisation (rerank/bert.hpp Precision::Int8) and
//    the int8 / fp32 pairs/s ratio (the "GOP/s" of int8 count its multiply-adds like fp32's);
//  - BERT-DOT passage encoding (passages/s);
//  - FAISS HNSW vs flat search on clustered random vectors: recall@10 and queries/s.
// The PyTorch peer runs the same configs from Python (bench/bench_rerank_pytorch.py); both are
// started by bench/run_rerank_bench. Output: human-readable lines plus one JSON object per
// figure on lines starting with "JSON ".

#include <torch/torch.h>

#include <faiss/IndexFlat.h>
#include <faiss/IndexHNSW.h>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <sys/resource.h>

#include "bench/matmul_peak.hpp"
#include "plugin/allocator.hpp"
#include "rerank/bert.hpp"
#include "rerank/bi_encoder.hpp"
#include "rerank/cross_encoder.hpp"
#include "rerank/wordpiece.hpp"

namespace pr = plumb::rerank;
using Clock = std::chrono::steady_clock;

namespace {

double seconds_since(Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
}

using plumb::bench::measure_peak_gflops;

/// CPU seconds (user + system) of the whole process so far: with a busy machine the wall clock
/// measures the share the scheduler gave us, the CPU time the work (with --threads 1).
double process_cpu_seconds() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    auto sec = [](const timeval& t) { return double(t.tv_sec) + double(t.tv_usec) * 1e-6; };
    return sec(u.ru_utime) + sec(u.ru_stime);
}

struct ModelSize {
    std::string name;
    std::int64_t layers, hidden, heads, intermediate;
};

pr::HfConfig config_of(const ModelSize& m, std::int64_t vocab) {
    pr::HfConfig c;
    c.vocab_size = vocab;
    c.hidden_size = m.hidden;
    c.num_hidden_layers = m.layers;
    c.num_attention_heads = m.heads;
    c.intermediate_size = m.intermediate;
    c.max_position_embeddings = 512;
    return c;
}

/// Multiply-adds x2 of one encoder pass over a sequence of `len` tokens.
double encoder_flops(const ModelSize& m, double len) {
    const double h = double(m.hidden), i = double(m.intermediate);
    const double per_layer = 2 * len * h * 3 * h       // QKV
                             + 2 * 2 * len * len * h   // scores + context
                             + 2 * len * h * h         // attention output
                             + 2 * 2 * len * h * i;    // feed-forward
    return per_layer * double(m.layers);
}

std::shared_ptr<const pr::WordPieceTokenizer> synthetic_tokenizer(std::int64_t vocab) {
    std::vector<std::string> tokens = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};
    for (std::int64_t i = static_cast<std::int64_t>(tokens.size()); i < vocab; ++i) {
        tokens.push_back("w" + std::to_string(i));
    }
    auto v = std::make_shared<const pr::Vocab>(std::move(tokens));
    return std::make_shared<const pr::WordPieceTokenizer>(v);
}

std::string random_text(std::mt19937_64& rng, std::size_t words, std::int64_t vocab) {
    std::uniform_int_distribution<std::int64_t> tok(5, vocab - 1);
    std::string s;
    for (std::size_t i = 0; i < words; ++i) {
        if (i) s += ' ';
        s += "w" + std::to_string(tok(rng));
    }
    return s;
}

void json_line(const std::string& body) { std::printf("JSON {%s}\n", body.c_str()); }

/// Pairs/s of one cross-encoder run in `precision` (same seed = same weights for both).
double bench_cross_encoder(const ModelSize& m, std::size_t candidates, std::size_t batch,
                           double peak, std::uint64_t seed,
                           pr::Precision precision = pr::Precision::Fp32) {
    const std::int64_t vocab = 30522;
    auto built = std::make_shared<pr::BertModel>(config_of(m, vocab), pr::BertHeads{true, 1}, seed);
    built->set_precision(precision);
    std::shared_ptr<const pr::BertModel> model = std::move(built);
    auto tok = synthetic_tokenizer(vocab);
    pr::CrossEncoderOptions o;
    o.depth = candidates;
    o.batch_size = batch;
    o.precision = precision;
    const std::string prec = pr::precision_name(precision);
    pr::CrossEncoderStage stage(model, tok, o);
    std::mt19937_64 rng(seed);
    // ~180 tokens per pair: [CLS] 8-token query [SEP] 160-180-token passage [SEP].
    std::string query = random_text(rng, 8, vocab);
    std::vector<std::string> passages;
    std::uniform_int_distribution<std::size_t> plen(160, 180);
    double tokens = 0, flops = 0;
    for (std::size_t i = 0; i < candidates; ++i) {
        auto n = plen(rng);
        passages.push_back(random_text(rng, n, vocab));
        tokens += double(n + 11);
        flops += encoder_flops(m, double(n + 11));
    }
    std::vector<std::string_view> views(passages.begin(), passages.end());
    // Warm-up on a few pairs (allocator, thread pool).
    stage.score_pairs(query, std::span<const std::string_view>(views.data(), std::min<std::size_t>(batch, views.size())));
    const double cpu0 = process_cpu_seconds();
    auto t = Clock::now();
    auto scores = stage.score_pairs(query, views);
    double s = seconds_since(t);
    const double cpu = process_cpu_seconds() - cpu0;
    double gflops = flops / s / 1e9;
    std::printf("bert-cat %-8s %s %zu pairs x %.0f tokens: %.2f s (CPU %.2f s), %.1f pairs/s, "
                "%.1f %s/s (%.0f%% of the %.1f GFLOP/s fp32 matmul peak)\n",
                m.name.c_str(), prec.c_str(), candidates, tokens / double(candidates), s, cpu,
                double(candidates) / s, gflops,
                precision == pr::Precision::Fp32 ? "GFLOP" : "G(int8+fp32)OP", 100.0 * gflops / peak,
                peak);
    const std::string impl = precision == pr::Precision::Fp32 ? "plumb" : "plumb-" + prec;
    json_line("\"bench\":\"bert-cat\",\"impl\":\"" + impl + "\",\"model\":\"" + m.name +
              "\",\"pairs\":" + std::to_string(candidates) +
              ",\"seconds\":" + std::to_string(s) + ",\"cpu_seconds\":" + std::to_string(cpu) +
              ",\"pairs_per_s\":" + std::to_string(double(candidates) / s) +
              ",\"gflops\":" + std::to_string(gflops) + ",\"peak_gflops\":" + std::to_string(peak));
    (void)scores;
    return double(candidates) / s;
}

/// fp32 and int8 of the same weights, and their ratio.
void bench_cross_encoder_int8(const ModelSize& m, std::size_t candidates, std::size_t batch,
                              double peak, std::uint64_t seed) {
    const double fp = bench_cross_encoder(m, candidates, batch, peak, seed);
    const double q = bench_cross_encoder(m, candidates, batch, peak, seed, pr::Precision::Int8);
    std::printf("bert-cat %-8s int8 / fp32: %.2fx pairs/s\n", m.name.c_str(), q / fp);
    json_line("\"bench\":\"bert-cat-int8-ratio\",\"model\":\"" + m.name +
              "\",\"ratio\":" + std::to_string(q / fp));
}

void bench_encoding(const ModelSize& m, std::size_t passages_n, std::size_t batch,
                    std::uint64_t seed) {
    const std::int64_t vocab = 30522;
    auto model = std::make_shared<const pr::BertModel>(config_of(m, vocab), pr::BertHeads{}, seed);
    pr::BiEncoderOptions o;
    o.batch_size = batch;
    o.passage_max_length = 256;
    pr::BiEncoder enc(model, synthetic_tokenizer(vocab), o);
    std::mt19937_64 rng(seed + 1);
    std::uniform_int_distribution<std::size_t> plen(40, 120);  // MS MARCO-like passages
    std::vector<std::string> texts;
    double tokens = 0;
    for (std::size_t i = 0; i < passages_n; ++i) {
        auto n = plen(rng);
        texts.push_back(random_text(rng, n, vocab));
        tokens += double(n + 2);
    }
    std::vector<std::string_view> views(texts.begin(), texts.end());
    enc.encode_passages(std::span<const std::string_view>(views.data(), std::min(batch, views.size())));
    auto t = Clock::now();
    auto v = enc.encode_passages(views);
    double s = seconds_since(t);
    std::printf("bert-dot %-8s encoding %zu passages (%.0f tokens avg): %.2f s, %.1f passages/s\n",
                m.name.c_str(), passages_n, tokens / double(passages_n), s,
                double(passages_n) / s);
    json_line("\"bench\":\"encode\",\"impl\":\"plumb\",\"model\":\"" + m.name +
              "\",\"passages\":" + std::to_string(passages_n) +
              ",\"passages_per_s\":" + std::to_string(double(passages_n) / s));
    (void)v;
}

void bench_ann(std::size_t n, std::size_t d, std::size_t nq, std::uint64_t seed) {
    // Clustered data: 1,000 Gaussian centres, points = centre + noise, L2-normalised
    // (inner product = cosine, as BERT-DOT with cosine similarity).
    std::mt19937_64 rng(seed);
    std::normal_distribution<float> g(0.0f, 1.0f);
    const std::size_t centres_n = 1000;
    std::vector<float> centres(centres_n * d);
    for (auto& x : centres) x = g(rng);
    auto make = [&](std::size_t count) {
        std::vector<float> v(count * d);
        std::uniform_int_distribution<std::size_t> pick(0, centres_n - 1);
        for (std::size_t i = 0; i < count; ++i) {
            const float* c = centres.data() + pick(rng) * d;
            double norm = 0;
            for (std::size_t j = 0; j < d; ++j) {
                v[i * d + j] = c[j] + 0.5f * g(rng);
                norm += double(v[i * d + j]) * v[i * d + j];
            }
            const float inv = static_cast<float>(1.0 / std::sqrt(norm));
            for (std::size_t j = 0; j < d; ++j) v[i * d + j] *= inv;
        }
        return v;
    };
    auto base = make(n);
    auto queries = make(nq);
    const int k = 10;
    const auto di = static_cast<faiss::Index::idx_t>(d);
    faiss::IndexFlatIP flat(di);
    flat.add(static_cast<faiss::Index::idx_t>(n), base.data());
    std::vector<float> dist(nq * k);
    std::vector<faiss::Index::idx_t> truth(nq * k), got(nq * k);
    auto t = Clock::now();
    flat.search(static_cast<faiss::Index::idx_t>(nq), queries.data(), k, dist.data(), truth.data());
    double flat_s = seconds_since(t);
    std::printf("faiss Flat      %zu x %zu: %.1f q/s (exact)\n", n, d, double(nq) / flat_s);
    json_line("\"bench\":\"ann\",\"index\":\"Flat\",\"n\":" + std::to_string(n) +
              ",\"dim\":" + std::to_string(d) + ",\"qps\":" + std::to_string(double(nq) / flat_s) +
              ",\"recall10\":1");

    faiss::IndexHNSWFlat hnsw(static_cast<int>(d), 32, faiss::METRIC_INNER_PRODUCT);
    hnsw.hnsw.efConstruction = 40;
    t = Clock::now();
    hnsw.add(static_cast<faiss::Index::idx_t>(n), base.data());
    double build_s = seconds_since(t);
    std::printf("faiss HNSW32    build: %.1f s\n", build_s);
    for (int ef : {16, 32, 64, 128}) {
        hnsw.hnsw.efSearch = ef;
        t = Clock::now();
        hnsw.search(static_cast<faiss::Index::idx_t>(nq), queries.data(), k, dist.data(), got.data());
        double s = seconds_since(t);
        std::size_t hits = 0;
        for (std::size_t q = 0; q < nq; ++q) {
            for (int a = 0; a < k; ++a) {
                for (int b = 0; b < k; ++b) {
                    if (got[q * k + a] == truth[q * k + b]) {
                        ++hits;
                        break;
                    }
                }
            }
        }
        double recall = double(hits) / double(nq * k);
        std::printf("faiss HNSW32 ef=%-4d recall@10 %.4f, %.1f q/s (%.1fx flat)\n", ef, recall,
                    double(nq) / s, flat_s / s);
        json_line("\"bench\":\"ann\",\"index\":\"HNSW32\",\"ef\":" + std::to_string(ef) +
                  ",\"n\":" + std::to_string(n) + ",\"qps\":" + std::to_string(double(nq) / s) +
                  ",\"recall10\":" + std::to_string(recall) +
                  ",\"build_s\":" + std::to_string(build_s));
    }
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"bench_rerank: BERT-CAT/BERT-DOT throughput and FAISS ANN (issue 4)"};
    std::size_t candidates = 1000, batch = 32, ann_n = 500000, ann_dim = 384, ann_queries = 1000,
                encode_n = 1000;
    int threads = 0, peak_n = 2048;
    bool quick = false, skip_base = false, skip_ann = false, skip_int8 = false, only_cat = false;
    std::string only;
    app.add_option("--candidates", candidates, "Pairs per cross-encoder run")->capture_default_str();
    app.add_option("--batch", batch, "Pairs per forward pass")->capture_default_str();
    app.add_option("--threads", threads, "Torch intra-op threads (0 = Torch default)")
        ->capture_default_str();
    app.add_option("--encode-passages", encode_n, "Passages for the encoding figure")
        ->capture_default_str();
    app.add_option("--ann-n", ann_n, "Vectors in the ANN benchmark")->capture_default_str();
    app.add_option("--ann-dim", ann_dim, "Vector dimension")->capture_default_str();
    app.add_option("--ann-queries", ann_queries, "ANN queries")->capture_default_str();
    app.add_flag("--quick", quick, "Small sizes for a smoke run (100 pairs, 50,000 vectors)");
    app.add_flag("--skip-base", skip_base, "Skip the BERT-base config");
    app.add_flag("--skip-ann", skip_ann, "Skip the FAISS benchmark");
    app.add_flag("--skip-int8", skip_int8, "Skip the int8 cross-encoder figures");
    app.add_flag("--only-cat", only_cat, "Only the cross-encoder figures (no encoding, no FAISS)");
    bool default_malloc = false;
    app.add_flag("--default-malloc", default_malloc,
                 "glibc's allocator defaults instead of plumb::tune_allocator_for_inference() "
                 "(what the plumb CLI applies; plugin/allocator.hpp)");
    CLI11_PARSE(app, argc, argv);
    {
        const std::string alloc = default_malloc ? "" : plumb::tune_allocator_for_inference();
        std::printf("allocator: %s\n", alloc.empty() ? "glibc defaults" : alloc.c_str());
    }
    if (quick) {
        candidates = std::min<std::size_t>(candidates, 100);
        encode_n = std::min<std::size_t>(encode_n, 200);
        ann_n = std::min<std::size_t>(ann_n, 50000);
        ann_queries = std::min<std::size_t>(ann_queries, 200);
        peak_n = 1024;
    }
    if (threads > 0) torch::set_num_threads(threads);  // explicit request: the bench's own setting
    std::printf("torch intra-op threads: %d\n", torch::get_num_threads());
    const double peak = measure_peak_gflops(peak_n, 5);
    std::printf("matmul peak (torch::mm %dx%d float32): %.1f GFLOP/s\n", peak_n, peak_n, peak);
    json_line("\"bench\":\"peak\",\"impl\":\"plumb\",\"gflops\":" + std::to_string(peak));

    const ModelSize minilm{"minilm", 6, 384, 12, 1536};
    const ModelSize base{"base", 12, 768, 12, 3072};
    if (skip_int8) {
        bench_cross_encoder(minilm, candidates, batch, peak, 1);
        if (!skip_base) bench_cross_encoder(base, candidates, batch, peak, 2);
    } else {
        bench_cross_encoder_int8(minilm, candidates, batch, peak, 1);
        if (!skip_base) bench_cross_encoder_int8(base, candidates, batch, peak, 2);
    }
    if (only_cat) return 0;
    bench_encoding(minilm, encode_n, batch, 3);
    if (!skip_ann) bench_ann(ann_n, ann_dim, ann_queries, 4);
    return 0;
}
