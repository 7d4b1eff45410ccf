// bench_pipeline: end-to-end latency of embedded pipelines through the public API
// (plumb::Pipeline::search, plugin/pipeline.hpp), issue 14's "Pipeline latency benchmark":
//  - "tk":        BM25@1000 -> TK@100 (with its passage cache) -> bias_balance post-filter,
//                 built from a JSON configuration (--config) through the built-in registry;
//  - "cat-fp32" / "cat-int8": the same first stage and post-filters around a MiniLM-sized
//                 BERT-CAT@100 (6 x 384, 12 heads, FFN 1536; random weights, a WordPiece
//                 vocabulary of the corpus's words) in float32 and with dynamic int8.
// For each pipeline and 1 and 2 host threads (each search on 2 / host-threads Torch threads):
// p50 / p99 / mean per query END TO END (the wall time of one search() call) and per stage
// (SearchResult::timings), then batch throughput through Pipeline::search_batch with
// cross-query groups (BatchOptions::group) and whether grouped results equal per-query ones.
// Peers: Xapian for the BM25 stage (the same terms, k1 = 0.9, b = 0.4, as bench_index), in this
// process; PyTorch for the MiniLM-CAT stage from Python (bench/bench_pipeline_pytorch.py) over
// the token ids written by --pairs-out (the same candidates). bench/run_pipeline_bench runs all.
// Output: human-readable lines plus "JSON {...}" lines.
#include <sys/resource.h>
#include <xapian.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench/xapian_query.hpp"
#include "index/analysis.hpp"
#include "index/corpus.hpp"
#include "plugin/allocator.hpp"
#include "plugin/builtins/builtins.hpp"
#include "plugin/error.hpp"
#include "plugin/pipeline.hpp"
#include "plugin/pipeline_config.hpp"
#include "plugin/registry.hpp"
#include "rerank/bert.hpp"
#include "rerank/bert_init.hpp"
#include "rerank/cross_encoder.hpp"
#include "rerank/wordpiece.hpp"

namespace fs = std::filesystem;
namespace pr = plumb::rerank;
using Clock = std::chrono::steady_clock;

namespace {

constexpr double kK1 = 0.9;  // plumb's BM25 defaults (the "bm25" first stage's k1, b)
constexpr double kB = 0.4;

double ms_since(Clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

/// Nearest-rank percentile (as Pipeline::stats()).
double percentile(std::vector<double> v, double p) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    auto rank = static_cast<std::size_t>(std::ceil(p * static_cast<double>(v.size())));
    return v[std::clamp<std::size_t>(rank, 1, v.size()) - 1];
}
double mean(const std::vector<double>& v) {
    double s = 0;
    for (double x : v) s += x;
    return v.empty() ? 0 : s / static_cast<double>(v.size());
}

/// CPU time of the whole process (all threads), ms.
double process_cpu_ms() {
    rusage ru{};
    ::getrusage(RUSAGE_SELF, &ru);
    return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
           (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
}

double load_average() {
    double l = -1;
    if (std::FILE* f = std::fopen("/proc/loadavg", "r")) {
        if (std::fscanf(f, "%lf", &l) != 1) l = -1;
        std::fclose(f);
    }
    return l;
}

void json_line(const nlohmann::json& j) { std::printf("JSON %s\n", j.dump().c_str()); }

/// Calls work(thread, query) for queries [0, n) on `threads` threads pulling from a shared
/// counter; per-query wall times (ms, in query order) and the whole pass's seconds.
/// With one thread, also the process CPU time of each query (all threads the query used: on a
/// shared machine, wall time above CPU time is time spent waiting for a core).
struct Pass {
    std::vector<double> ms;
    std::vector<double> cpu_ms;  ///< one thread only
    double seconds = 0;
};
Pass timed_pass(std::size_t n, unsigned threads,
                const std::function<void(unsigned, std::size_t)>& work) {
    Pass p;
    p.ms.assign(n, 0.0);
    if (threads == 1) p.cpu_ms.assign(n, 0.0);
    std::atomic<std::size_t> next{0};
    std::exception_ptr error;
    std::mutex error_mutex;
    const auto t0 = Clock::now();
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < threads; ++t) {
        pool.emplace_back([&, t] {
            try {
                for (;;) {
                    const std::size_t q = next.fetch_add(1);
                    if (q >= n) break;
                    const double c = threads == 1 ? process_cpu_ms() : 0.0;
                    const auto s = Clock::now();
                    work(t, q);
                    p.ms[q] = ms_since(s);
                    if (threads == 1) p.cpu_ms[q] = process_cpu_ms() - c;
                }
            } catch (...) {
                std::lock_guard lock(error_mutex);
                error = std::current_exception();
                next = n;
            }
        });
    }
    for (auto& th : pool) th.join();
    p.seconds = ms_since(t0) / 1000.0;
    if (error) std::rethrow_exception(error);
    return p;
}

// ---------------------------------------------------------------------------------------------
// Xapian: the BM25 stage's peer (bench_index's approach: plumb's analysed terms, add_term,
// BM25Weight(k1, k2 = 0, k3 = 1e9, b, min_normlen = 0), a disjunction of the query's terms).
// ---------------------------------------------------------------------------------------------

void index_xapian(const fs::path& corpus, const fs::path& dir) {
    plumb::index::CorpusReaderOptions ro;
    ro.format = plumb::index::detect_corpus_format(corpus);
    plumb::index::CorpusReader reader(corpus, ro);
    plumb::index::Analyzer analyzer;
    const fs::path tmp = dir.string() + ".tmp";
    fs::remove_all(tmp);
    {
        Xapian::WritableDatabase db(tmp.string(), Xapian::DB_CREATE_OR_OVERWRITE);
        plumb::index::Document d;
        while (reader.next(d)) {
            Xapian::Document xd;
            for (const auto& t : analyzer.analyze(plumb::index::indexed_text(d))) xd.add_term(t);
            xd.set_data(d.id);  // the docid, as plumb's first stage returns it
            db.add_document(xd);
        }
        db.commit();
    }
    fs::remove_all(dir);
    fs::rename(tmp, dir);
}

struct XapianWorker {
    explicit XapianWorker(const fs::path& dir) : db(dir.string()), enquire(db) {
        enquire.set_weighting_scheme(Xapian::BM25Weight(kK1, 0, 1e9, kB, 0));
    }
    /// Top-k docids of `text`.
    std::vector<std::string> search(const std::string& text, std::size_t k) {
        enquire.set_query(plumb::bench::xapian_bag_query(analyzer, text));
        auto mset = enquire.get_mset(0, static_cast<Xapian::doccount>(k));
        std::vector<std::string> ids;
        ids.reserve(mset.size());
        for (auto it = mset.begin(); it != mset.end(); ++it) ids.push_back(it.get_document().get_data());
        return ids;
    }
    plumb::index::Analyzer analyzer;
    Xapian::Database db;
    Xapian::Enquire enquire;
};

// ---------------------------------------------------------------------------------------------
// Latency of one pipeline
// ---------------------------------------------------------------------------------------------

struct LatencyRow {
    std::string pipeline;
    unsigned host_threads = 1;
    int torch_threads = 1;
    std::size_t queries = 0;
    double p50 = 0, p99 = 0, mean_ms = 0, qps = 0;
    std::vector<std::string> stages;
    std::map<std::string, std::vector<double>> stage_ms;  // per query
};

LatencyRow measure_latency(const std::string& label, const plumb::Pipeline& p,
                           const std::vector<plumb::Query>& queries, unsigned host_threads,
                           int torch_threads) {
    std::vector<plumb::SearchResult> results(queries.size());
    auto pass = timed_pass(queries.size(), host_threads,
                           [&](unsigned, std::size_t q) { results[q] = p.search(queries[q]); });
    LatencyRow r;
    r.pipeline = label;
    r.host_threads = host_threads;
    r.torch_threads = torch_threads;
    r.queries = queries.size();
    r.p50 = percentile(pass.ms, 0.50);
    r.p99 = percentile(pass.ms, 0.99);
    r.mean_ms = mean(pass.ms);
    r.qps = pass.seconds > 0 ? static_cast<double>(queries.size()) / pass.seconds : 0;
    r.stages = p.stage_names();
    for (const auto& res : results) {
        for (const auto& t : res.timings) r.stage_ms[t.stage].push_back(t.ms);
    }
    std::vector<double> other(queries.size());
    for (std::size_t q = 0; q < queries.size(); ++q) {
        double sum = 0;
        for (const auto& t : results[q].timings) sum += t.ms;
        other[q] = pass.ms[q] - sum;
    }
    r.stage_ms["(outside stages)"] = other;
    r.stages.push_back("(outside stages)");

    std::printf("\n%s: %u host thread(s) x %d Torch thread(s), %zu queries, %.1f q/s\n",
                label.c_str(), host_threads, torch_threads, queries.size(), r.qps);
    std::printf("  %-18s %9s %9s %9s\n", "stage", "p50 ms", "p99 ms", "mean ms");
    nlohmann::json stages = nlohmann::json::object();
    for (const auto& s : r.stages) {
        const auto& v = r.stage_ms[s];
        std::printf("  %-18s %9.2f %9.2f %9.2f\n", s.c_str(), percentile(v, 0.5),
                    percentile(v, 0.99), mean(v));
        stages[s] = {{"p50_ms", percentile(v, 0.5)},
                     {"p99_ms", percentile(v, 0.99)},
                     {"mean_ms", mean(v)}};
    }
    std::printf("  %-18s %9.2f %9.2f %9.2f\n", "END TO END", r.p50, r.p99, r.mean_ms);
    if (!pass.cpu_ms.empty()) {
        std::printf("  %-18s %9.2f %9.2f %9.2f\n", "(process CPU)", percentile(pass.cpu_ms, 0.5),
                    percentile(pass.cpu_ms, 0.99), mean(pass.cpu_ms));
    }
    json_line({{"bench", "latency"},
               {"pipeline", label},
               {"host_threads", host_threads},
               {"torch_threads", torch_threads},
               {"queries", queries.size()},
               {"p50_ms", r.p50},
               {"p99_ms", r.p99},
               {"mean_ms", r.mean_ms},
               {"qps", r.qps},
               {"stages", stages},
               {"cpu_p50_ms", pass.cpu_ms.empty() ? -1.0 : percentile(pass.cpu_ms, 0.5)},
               {"cpu_p99_ms", pass.cpu_ms.empty() ? -1.0 : percentile(pass.cpu_ms, 0.99)},
               {"load", load_average()}});
    return r;
}

/// Largest |score difference| between two runs' lists, and whether their docid orders agree.
std::pair<bool, double> compare_results(const std::vector<plumb::SearchResult>& a,
                                        const std::vector<plumb::SearchResult>& b) {
    bool same = a.size() == b.size();
    double diff = 0;
    for (std::size_t q = 0; same && q < a.size(); ++q) {
        const auto& x = a[q].list.candidates;
        const auto& y = b[q].list.candidates;
        if (x.size() != y.size()) {
            same = false;
            break;
        }
        for (std::size_t i = 0; i < x.size(); ++i) {
            if (x[i].docid != y[i].docid) same = false;
            diff = std::max(diff, std::abs(double(x[i].score) - double(y[i].score)));
        }
    }
    return {same, diff};
}

void measure_batches(const std::string& label, const plumb::Pipeline& p,
                     const std::vector<plumb::Query>& queries, unsigned host_threads,
                     int torch_threads, const std::vector<std::size_t>& groups) {
    std::vector<plumb::SearchResult> reference;
    double reference_qps = 0;
    for (std::size_t g : groups) {
        plumb::BatchOptions bo;
        bo.threads = host_threads;
        bo.group = g;
        const auto t0 = Clock::now();
        auto results = p.search_batch(queries, bo);
        const double s = ms_since(t0) / 1000.0;
        const double qps = s > 0 ? static_cast<double>(queries.size()) / s : 0;
        std::string check = "(reference)";
        bool same = true;
        double diff = 0;
        if (reference.empty()) {
            reference = std::move(results);
            reference_qps = qps;
        } else {
            std::tie(same, diff) = compare_results(reference, results);
            char buf[160];
            std::snprintf(buf, sizeof buf, "top-k %s group %zu's, max |score diff| %.3g",
                          same ? "identical to" : "DIFFERS from", groups.front(), diff);
            check = buf;
        }
        std::printf("  batch %-9s %u host x %d Torch threads, group %3zu: %7.2f q/s (%.2fx group "
                    "%zu)  %s\n",
                    label.c_str(), host_threads, torch_threads, g, qps,
                    reference_qps > 0 ? qps / reference_qps : 1.0, groups.front(), check.c_str());
        json_line({{"bench", "batch"},
                   {"pipeline", label},
                   {"host_threads", host_threads},
                   {"torch_threads", torch_threads},
                   {"group", g},
                   {"queries", queries.size()},
                   {"qps", qps},
                   {"same_topk", same},
                   {"max_score_diff", diff},
                   {"load", load_average()}});
    }
}

// ---------------------------------------------------------------------------------------------
// The MiniLM-sized cross-encoder
// ---------------------------------------------------------------------------------------------

struct MiniLm {
    std::shared_ptr<const pr::WordPieceTokenizer> tokenizer;
    std::shared_ptr<const pr::BertModel> fp32, int8;
    std::size_t vocab = 0;
};

MiniLm make_minilm(const fs::path& corpus, const std::vector<plumb::Query>& topics,
                   std::uint64_t seed) {
    pr::WordPieceVocabBuilder builder;  // at most 30,000 tokens (bert-init's default)
    plumb::index::CorpusReaderOptions ro;
    ro.format = plumb::index::detect_corpus_format(corpus);
    plumb::index::CorpusReader reader(corpus, ro);
    plumb::index::Document d;
    while (reader.next(d)) builder.add_text(plumb::index::indexed_text(d));
    for (const auto& q : topics) builder.add_text(q.text);
    auto vocab = std::make_shared<const pr::Vocab>(builder.build());
    MiniLm m;
    m.vocab = vocab->size();
    m.tokenizer = std::make_shared<const pr::WordPieceTokenizer>(vocab);
    pr::BertInitOptions bo;
    bo.layers = 6;
    bo.hidden = 384;
    bo.heads = 12;
    bo.intermediate = 1536;
    const auto config = pr::make_bert_init_config(bo, static_cast<std::int64_t>(m.vocab));
    m.fp32 = std::make_shared<const pr::BertModel>(config, pr::BertHeads{true, 1}, seed);
    auto q = std::make_shared<pr::BertModel>(config, pr::BertHeads{true, 1}, seed);  // same weights
    q->set_precision(pr::Precision::Int8);
    m.int8 = std::move(q);
    return m;
}

/// The (query, passage) token ids a CAT@depth stage scores for `queries`, one line per pair:
/// qid<TAB>input ids<TAB>token types (space-separated), for the PyTorch peer.
void write_pairs(const fs::path& out, const plumb::PipelineSpec& spec, std::size_t candidates,
                 std::size_t depth, const pr::WordPieceTokenizer& tok, std::size_t max_length,
                 const std::vector<plumb::Query>& queries) {
    const fs::path tmp = out.string() + ".tmp";
    {
        std::ofstream f(tmp);
        if (!f) throw plumb::IoError("cannot write " + tmp.string());
        for (const auto& q : queries) {
            auto lists = spec.first_stage->retrieve(std::span<const plumb::Query>(&q, 1), candidates);
            const auto qids = tok.encode_ids(q.text, max_length);
            const auto& cands = lists.at(0).candidates;
            for (std::size_t i = 0; i < std::min(depth, cands.size()); ++i) {
                auto text = spec.documents->text(cands[i].docid);
                if (!text) throw plumb::Error("document " + cands[i].docid + " has no text");
                auto e = tok.encode_pair_ids(qids, tok.encode_ids(*text, max_length), max_length,
                                             pr::Truncation::PassageFirst);
                f << q.id << '\t';
                for (std::size_t j = 0; j < e.input_ids.size(); ++j) f << (j ? " " : "") << e.input_ids[j];
                f << '\t';
                for (std::size_t j = 0; j < e.token_type_ids.size(); ++j)
                    f << (j ? " " : "") << e.token_type_ids[j];
                f << '\n';
            }
        }
        if (!f.flush()) throw plumb::IoError("write failed: " + tmp.string());
    }
    fs::rename(tmp, out);
}

std::vector<unsigned> parse_list(const std::string& s) {
    std::vector<unsigned> v;
    std::stringstream in(s);
    std::string item;
    while (std::getline(in, item, ',')) {
        if (item.empty()) continue;
        const long x = std::stol(item);
        if (x <= 0) throw plumb::InvalidArgument("list values must be positive: " + s);
        v.push_back(static_cast<unsigned>(x));
    }
    if (v.empty()) throw plumb::InvalidArgument("empty list: " + s);
    return v;
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"bench_pipeline: Pipeline::search end to end (BM25 -> TK or MiniLM-CAT -> "
                 "bias_balance), per-stage breakdown, cross-query batches; Xapian peer"};
    std::string config, topics_path, corpus, xapian_dir, pairs_out, host_list = "1,2",
                                                                   group_list = "1,8,32",
                                                                   pipelines = "tk,cat-fp32,cat-int8";
    std::size_t queries_n = 200, cat_queries_n = 20, cat_depth = 100, cat_batch = 32, repeat = 5;
    unsigned torch_total = 2;
    double goal_ms = 25.0;
    std::uint64_t seed = 1;
    bool skip_xapian = false, skip_batches = false;
    app.add_option("--config", config,
                   "TK pipeline JSON (first stage, one tk re-ranker, post-filters); the CAT "
                   "pipelines reuse its first stage and post-filters")
        ->required()
        ->check(CLI::ExistingFile);
    app.add_option("--topics", topics_path, "topics (TSV)")->required()->check(CLI::ExistingFile);
    app.add_option("--corpus", corpus, "the indexed corpus (MiniLM vocabulary, Xapian index)")
        ->required()
        ->check(CLI::ExistingFile);
    app.add_option("--queries", queries_n, "topics for the TK pipeline and the BM25 peer")
        ->capture_default_str();
    app.add_option("--repeat", repeat,
                   "TK pipeline latency: each topic searched this many times (a p99 over few "
                   "queries is their maximum)")
        ->capture_default_str()
        ->check(CLI::PositiveNumber);
    app.add_option("--cat-queries", cat_queries_n, "topics for the CAT pipelines")
        ->capture_default_str();
    app.add_option("--cat-depth", cat_depth, "MiniLM-CAT depth")->capture_default_str();
    app.add_option("--cat-batch", cat_batch, "MiniLM-CAT pairs per forward")->capture_default_str();
    app.add_option("--host-threads", host_list, "host thread counts")->capture_default_str();
    app.add_option("--torch-threads", torch_total,
                   "Torch threads in all: each search gets this / host threads")
        ->capture_default_str();
    app.add_option("--groups", group_list, "search_batch group sizes (the first is the reference)")
        ->capture_default_str();
    app.add_option("--pipelines", pipelines, "tk, cat-fp32, cat-int8")->capture_default_str();
    app.add_option("--goal-ms", goal_ms, "TK pipeline p99 goal")->capture_default_str();
    app.add_option("--xapian-db", xapian_dir, "Xapian database (built from --corpus if absent)");
    app.add_flag("--skip-xapian", skip_xapian, "no Xapian peer");
    app.add_flag("--skip-batches", skip_batches, "no search_batch throughput");
    app.add_option("--pairs-out", pairs_out,
                   "write the CAT pairs' token ids (for bench/bench_pipeline_pytorch.py)");
    app.add_option("--seed", seed, "MiniLM initialisation seed")->capture_default_str();
    bool default_malloc = false;
    app.add_flag("--default-malloc", default_malloc,
                 "glibc's allocator defaults instead of plumb::tune_allocator_for_inference() "
                 "(what the plumb CLI applies; plugin/allocator.hpp)");
    CLI11_PARSE(app, argc, argv);
    std::setvbuf(stdout, nullptr, _IOLBF, 0);  // progress visible through a pipe (tee)
    {
        const std::string alloc = default_malloc ? "" : plumb::tune_allocator_for_inference();
        std::printf("allocator: %s\n", alloc.empty() ? "glibc defaults" : alloc.c_str());
    }

    try {
        const auto hosts = parse_list(host_list);
        std::vector<std::size_t> groups;
        for (unsigned g : parse_list(group_list)) groups.push_back(g);
        auto want = [&](const std::string& p) {
            return ("," + pipelines + ",").find("," + p + ",") != std::string::npos;
        };
        auto topics = plumb::index::read_topics(topics_path);
        std::vector<plumb::Query> tk_queries(topics.begin(),
                                             topics.begin() + std::min(queries_n, topics.size()));
        std::vector<plumb::Query> cat_queries(
            topics.begin(), topics.begin() + std::min(cat_queries_n, topics.size()));
        std::printf("bench_pipeline: load %.2f; %zu topics (TK, BM25), %zu (CAT)\n",
                    load_average(), tk_queries.size(), cat_queries.size());

        // The TK pipeline's JSON, with the TK stage's Torch threads set per host-thread count.
        std::ifstream cf(config);
        const auto base_json = nlohmann::json::parse(cf);
        if (!base_json.contains("rerank") || base_json["rerank"].size() != 1 ||
            base_json["rerank"][0].value("type", "") != "tk") {
            throw plumb::ConfigError(config + ": expected exactly one re-rank stage of type tk");
        }
        plumb::Registry registry;
        plumb::register_builtins(registry);
        auto build_tk = [&](int torch_threads) {
            auto j = base_json;
            j["rerank"][0]["threads"] = torch_threads;
            plumb::StageContext ctx(fs::absolute(config).parent_path());
            return plumb::pipeline_from_json(j.dump(), registry, ctx, config);
        };
        const int full = static_cast<int>(torch_total);
        const auto tk_full = build_tk(full);
        const auto spec = tk_full.spec();  // first stage, documents, post-filters, k
        const std::size_t candidates = tk_full.candidates();
        std::printf("stages: ");
        for (const auto& s : tk_full.stage_names()) std::printf("%s ", s.c_str());
        std::printf("(first stage depth %zu, k %zu)\n", candidates, spec.k);

        std::vector<LatencyRow> rows;
        // ---------------- BM25 stage vs Xapian ----------------
        if (!skip_xapian) {
            fs::path xdir = xapian_dir.empty() ? fs::path("xapian-db") : fs::path(xapian_dir);
            if (!fs::exists(xdir)) {
                std::fprintf(stderr, "indexing %s with Xapian...\n", corpus.c_str());
                index_xapian(corpus, xdir);
            }
            std::printf("\nBM25@%zu first stage alone (plumb Retriever::retrieve vs Xapian "
                        "get_mset + docids), %zu queries\n",
                        candidates, tk_queries.size());
            for (unsigned h : hosts) {
                std::vector<std::unique_ptr<XapianWorker>> xw;
                for (unsigned t = 0; t < h; ++t) xw.push_back(std::make_unique<XapianWorker>(xdir));
                std::size_t plumb_hits = 0, xapian_hits = 0;
                std::mutex m;
                auto plumb_fn = [&](unsigned, std::size_t q) {
                    auto l = spec.first_stage->retrieve(
                        std::span<const plumb::Query>(&tk_queries[q], 1), candidates);
                    std::lock_guard lock(m);
                    plumb_hits += l.at(0).candidates.size();
                };
                auto xapian_fn = [&](unsigned t, std::size_t q) {
                    auto ids = xw[t]->search(tk_queries[q].text, candidates);
                    std::lock_guard lock(m);
                    xapian_hits += ids.size();
                };
                timed_pass(tk_queries.size(), h, plumb_fn);  // warm-up
                timed_pass(tk_queries.size(), h, xapian_fn);
                plumb_hits = xapian_hits = 0;
                auto pp = timed_pass(tk_queries.size(), h, plumb_fn);
                auto xp = timed_pass(tk_queries.size(), h, xapian_fn);
                const double pq = tk_queries.size() / pp.seconds, xq = tk_queries.size() / xp.seconds;
                std::printf("  %u thread(s): plumb %8.1f q/s p50 %6.2f p99 %6.2f ms | Xapian %8.1f "
                            "q/s p50 %6.2f p99 %6.2f ms | plumb/Xapian q/s %.2fx (hits %zu / %zu)\n",
                            h, pq, percentile(pp.ms, 0.5), percentile(pp.ms, 0.99), xq,
                            percentile(xp.ms, 0.5), percentile(xp.ms, 0.99), pq / xq, plumb_hits,
                            xapian_hits);
                json_line({{"bench", "bm25"},
                           {"threads", h},
                           {"k", candidates},
                           {"plumb_qps", pq},
                           {"plumb_p50_ms", percentile(pp.ms, 0.5)},
                           {"plumb_p99_ms", percentile(pp.ms, 0.99)},
                           {"xapian_qps", xq},
                           {"xapian_p50_ms", percentile(xp.ms, 0.5)},
                           {"xapian_p99_ms", percentile(xp.ms, 0.99)},
                           {"ratio", pq / xq},
                           {"load", load_average()}});
            }
        }

        // ---------------- TK pipeline ----------------
        if (want("tk")) {
            for (unsigned h : hosts) {
                const int tt = std::max(1, full / static_cast<int>(h));
                auto p = build_tk(tt);
                // Warm-up pass (the passage cache's pages mapped, allocator and pools warm), as
                // in a serving process; then the measured pass.
                for (const auto& q : tk_queries) p.search(q);
                std::vector<plumb::Query> repeated;
                for (std::size_t r = 0; r < repeat; ++r) {
                    repeated.insert(repeated.end(), tk_queries.begin(), tk_queries.end());
                }
                rows.push_back(measure_latency("tk", p, repeated, h, tt));
                if (!skip_batches) measure_batches("tk", p, tk_queries, h, tt, groups);
            }
        }

        // ---------------- MiniLM-CAT pipelines ----------------
        if (want("cat-fp32") || want("cat-int8")) {
            std::fprintf(stderr, "building the MiniLM-sized cross-encoder...\n");
            auto m = make_minilm(corpus, topics, seed);
            pr::CrossEncoderOptions co;
            co.depth = cat_depth;
            co.batch_size = cat_batch;
            co.name = "minilm-cat";
            std::printf("\nMiniLM-sized BERT-CAT: 6 x 384, 12 heads, FFN 1536, vocabulary %zu "
                        "(the corpus's words), random weights, depth %zu, batches of %zu\n",
                        m.vocab, cat_depth, cat_batch);
            if (!pairs_out.empty()) {
                write_pairs(pairs_out, spec, candidates, cat_depth, *m.tokenizer, co.max_length,
                            cat_queries);
            }
            for (const char* label : {"cat-fp32", "cat-int8"}) {
                if (!want(label)) continue;
                const bool int8 = std::string(label) == "cat-int8";
                for (unsigned h : hosts) {
                    auto o = co;
                    o.threads = std::max(1, full / static_cast<int>(h));
                    o.precision = int8 ? pr::Precision::Int8 : pr::Precision::Fp32;
                    auto s = spec;
                    s.rerankers = {std::make_shared<const pr::CrossEncoderStage>(
                        int8 ? m.int8 : m.fp32, m.tokenizer, o)};
                    plumb::Pipeline p(s);
                    p.search(cat_queries.front());  // warm-up
                    rows.push_back(measure_latency(label, p, cat_queries, h, o.threads));
                    if (!skip_batches) measure_batches(label, p, cat_queries, h, o.threads, groups);
                }
            }
        }

        // ---------------- Summary ----------------
        std::printf("\nSummary (per query, end to end; load %.2f)\n", load_average());
        std::printf("  %-9s %-17s %9s %9s %9s\n", "pipeline", "threads", "p50 ms", "p99 ms", "q/s");
        for (const auto& r : rows) {
            std::printf("  %-9s %u host x %d Torch  %9.2f %9.2f %9.1f\n", r.pipeline.c_str(),
                        r.host_threads, r.torch_threads, r.p50, r.p99, r.qps);
        }
        for (const auto& r : rows) {
            if (r.pipeline != "tk") continue;
            std::printf("  goal: TK pipeline p99 <= %.0f ms with %u host thread(s): %.2f ms  %s\n",
                        goal_ms, r.host_threads, r.p99, r.p99 <= goal_ms ? "MET" : "NOT MET");
        }
        for (unsigned h : hosts) {
            const LatencyRow *f = nullptr, *q = nullptr;
            for (const auto& r : rows) {
                if (r.host_threads != h) continue;
                if (r.pipeline == "cat-fp32") f = &r;
                if (r.pipeline == "cat-int8") q = &r;
            }
            if (f && q) {
                std::printf("  MiniLM-CAT int8 / fp32 with %u host thread(s): p50 %.2fx faster, "
                            "q/s %.2fx\n",
                            h, f->p50 / q->p50, q->qps / f->qps);
            }
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "bench_pipeline: %s\n", e.what());
        return 1;
    }
    return 0;
}
