// bench_train: training throughput (issue 6): examples/s of forward + backward + AdamW step
// for batches of triples (query, 1 positive, 1 negative) with the pairwise hinge loss, for
//  - TK at paper 000's dimensions (300-d embeddings, 2 layers, 16 heads of 32, feed-forward
//    100, 11 kernels; parameter groups 1e-4 / 1e-4 / 1e-3), vocabulary of --vocab random words,
//    queries of 5-11 words, passages of 80-200 words;
//  - BERT-CAT (and BERT-DOT, --models dot) at MiniLM size (6 layers x 384, 12 heads, feed-forward
//    1536, vocabulary 30,522, dropout 0.1), pairs of ~180 tokens ([CLS] 8-token query [SEP]
//    160-180-token passage [SEP]), or with --bert-size small at the main job's size (plumb
//    bert-init 2 x 128, 2 heads, feed-forward 512, vocabulary 48,299, batch 16, passages of
//    120-150 words; DOT mean pooling), each through BERT's kernels and, unless --no-reference,
//    through the former ATen path ("-ref").
// Models are randomly initialised (speed does not depend on the weights). Timing: wall clock and
// process CPU time of --steps optimizer steps after --warmup untimed ones (the machine may be
// shared: compare CPU time too). Torch intra-op threads: --threads (default 1).
// Output: a table, then one JSON object per model on lines starting with "JSON ".
//
// TK kernels (issue 14): TK is trained twice, through its kernels (BERT's attention kernel and
// oneDNN sgemm with their own backward passes) and, unless --no-reference, through the
// pre-kernel reference path (ATen's batched matmul; model "tk-paper000-ref"). Before that, the
// contextualisation alone (forward + backward of 2 x --tk-batch passages of 80-200 words, in
// length-sorted groups of 16 as a training step has them) is timed on both paths and printed in
// GFLOP/s and % of the float32 matmul peak (best of 5 torch::mm 2048 x 2048, same process).
// FLOPs = 3 x the forward's (each product's backward is two products of its size), counted on
// real tokens only: per layer and passage of n words 2n·D·3P + 4n²P + 2n·P·D + 4n·D·F.

#include <torch/torch.h>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "bench/matmul_peak.hpp"
#include "rerank/bert.hpp"
#include "rerank/detail/bert_modules.hpp"
#include "rerank/detail/tk_module.hpp"
#include "rerank/detail/trainable.hpp"
#include "rerank/tk_model.hpp"
#include "rerank/train_data.hpp"
#include "rerank/wordpiece.hpp"

namespace pr = plumb::rerank;
namespace rd = plumb::rerank::detail;
using Clock = std::chrono::steady_clock;

namespace {

double seconds_since(Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
}

double cpu_seconds() { return static_cast<double>(std::clock()) / CLOCKS_PER_SEC; }

std::string random_text(std::mt19937_64& rng, std::size_t words, std::int64_t first,
                        std::int64_t vocab, const char* prefix) {
    std::uniform_int_distribution<std::int64_t> tok(first, vocab - 1);
    std::string s;
    for (std::size_t i = 0; i < words; ++i) {
        if (i) s += ' ';
        s += prefix + std::to_string(tok(rng));
    }
    return s;
}

struct Result {
    std::string model;
    std::size_t batch = 0, steps = 0;
    double seconds = 0, cpu = 0;
    double avg_passage_tokens = 0;
    std::int64_t parameters = 0;
    double loss_first = 0, loss_last = 0;
};

/// Times `steps` AdamW steps (after `warmup`) of the hinge loss on batches from `make_batch`.
Result run(rd::Trainable& t, const std::map<std::string, double>& lrs,
           const std::function<std::vector<pr::TrainingExample>()>& make_batch, std::size_t batch,
           std::size_t warmup, std::size_t steps) {
    std::vector<torch::optim::OptimizerParamGroup> groups;
    Result r;
    for (auto& g : t.parameter_groups()) {
        auto o = std::make_unique<torch::optim::AdamWOptions>(lrs.at(g.name));
        o->weight_decay(g.no_weight_decay ? 0.0 : 0.01);
        for (auto& p : g.params) r.parameters += p.numel();
        groups.emplace_back(g.params, std::move(o));
    }
    torch::optim::AdamW opt(groups);
    t.set_training(true);
    std::vector<std::vector<pr::TrainingExample>> batches;
    for (std::size_t i = 0; i < warmup + steps; ++i) batches.push_back(make_batch());
    Clock::time_point t0;
    double c0 = 0;
    for (std::size_t i = 0; i < warmup + steps; ++i) {
        if (i == warmup) {
            t0 = Clock::now();
            c0 = cpu_seconds();
        }
        opt.zero_grad();
        auto s = t.score_batch(batches[i]);
        auto loss = torch::clamp_min(1.0 - s.select(1, 0) + s.select(1, 1), 0.0).mean();
        loss.backward();
        opt.step();
        if (i == warmup) r.loss_first = loss.item<double>();
        r.loss_last = loss.item<double>();
    }
    r.seconds = seconds_since(t0);
    r.cpu = cpu_seconds() - c0;
    r.batch = batch;
    r.steps = steps;
    return r;
}

using plumb::bench::measure_peak_gflops;

/// Seconds per forward + backward of TK's contextualisation of the packed groups (median of
/// `reps` after one warm-up), on the kernel or the reference path.
double time_contextualise_train(rd::TkModule& module,
                                const std::vector<std::pair<torch::Tensor, torch::Tensor>>& groups,
                                bool reference, std::size_t reps) {
    module->set_reference_kernels(reference);
    std::vector<double> times;
    for (std::size_t r = 0; r < reps + 1; ++r) {
        module->zero_grad();
        auto t = Clock::now();
        torch::Tensor total = torch::zeros({});
        for (const auto& [ids, mask] : groups) {
            total = total + module->contextualize(ids, mask, true).sum();
        }
        total.backward();
        if (r > 0) times.push_back(seconds_since(t));
    }
    module->set_reference_kernels(false);
    module->zero_grad();
    std::sort(times.begin(), times.end());
    return times[times.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app("bench_train: training examples/s (forward + backward + AdamW) for TK, "
                 "BERT-CAT and BERT-DOT");
    std::size_t steps = 10, warmup = 1, tk_batch = 32, cat_batch = 8;
    std::int64_t vocab = 30000;
    int threads = 1;
    std::uint64_t seed = 1;
    std::string models = "tk,cat";
    std::string bert_size = "minilm";
    std::size_t bert_batch = 16;
    app.add_option("--steps", steps, "timed optimizer steps per model")->capture_default_str();
    app.add_option("--warmup", warmup, "untimed steps first")->capture_default_str();
    app.add_option("--tk-batch", tk_batch, "TK triples per step")->capture_default_str();
    app.add_option("--cat-batch", cat_batch, "BERT-CAT triples per step")->capture_default_str();
    app.add_option("--vocab", vocab, "TK vocabulary size")->capture_default_str();
    app.add_option("--threads", threads, "Torch intra-op threads")->capture_default_str();
    app.add_option("--models", models, "comma-separated: tk, cat, dot")->capture_default_str();
    app.add_option("--bert-size", bert_size,
                   "BERT-CAT / BERT-DOT size: minilm (6 x 384, pairs of ~180 tokens, "
                   "--cat-batch) or small (the main job's plumb bert-init 2 x 128, 2 heads, "
                   "vocabulary 48,299, pairs of ~150 tokens, --bert-batch)")
        ->check(CLI::IsMember({"minilm", "small"}))
        ->capture_default_str();
    app.add_option("--bert-batch", bert_batch, "triples per step at --bert-size small")
        ->capture_default_str();
    app.add_option("--seed", seed)->capture_default_str();
    bool no_reference = false;
    app.add_flag("--no-reference", no_reference,
                 "skip the pre-kernel reference paths (TK contextualisation and training, "
                 "BERT training)");
    CLI11_PARSE(app, argc, argv);
    if (steps == 0 || tk_batch == 0 || cat_batch == 0 || bert_batch == 0) {
        std::fprintf(stderr, "bench_train: steps and batch sizes must be > 0\n");
        return 2;
    }
    auto has_model = [&](const std::string& m) {
        std::string list = "," + models + ",";
        return list.find("," + m + ",") != std::string::npos;
    };
    torch::set_num_threads(threads);
    std::mt19937_64 rng(seed);
    std::vector<Result> results;

    if (has_model("tk")) {
        std::vector<std::string> words;
        for (std::int64_t i = 0; i < vocab; ++i) words.push_back("t" + std::to_string(i));
        pr::TkConfig c;  // paper 000: 300-d, 2 layers, 16 heads x 32, ff 100, 11 kernels
        auto model = std::make_shared<pr::TkModel>(
            pr::TkModel::create(c, pr::TkVocabulary(words), {}, seed));
        auto t = rd::make_trainable_tk(model);
        std::uniform_int_distribution<std::size_t> qlen(5, 11), plen(80, 200);
        double ptokens = 0, pcount = 0;
        auto make_batch = [&] {
            std::vector<pr::TrainingExample> b(tk_batch);
            for (auto& e : b) {
                e.query = random_text(rng, qlen(rng), 0, vocab, "t");
                auto n1 = plen(rng), n2 = plen(rng);
                e.positive = random_text(rng, n1, 0, vocab, "t");
                e.negatives = {random_text(rng, n2, 0, vocab, "t")};
                ptokens += double(n1 + n2);
                pcount += 2;
            }
            return b;
        };
        {
            // Contextualisation alone, forward + backward, kernels vs reference path.
            const double peak = measure_peak_gflops(2048, 5);
            std::vector<std::vector<std::int64_t>> seqs;
            double flops = 0;
            const double d = double(c.embedding_dim), p = double(c.attention_dim()),
                         f = double(c.ff_dim);
            for (std::size_t i = 0; i < 2 * tk_batch; ++i) {
                seqs.push_back(model->passage_ids(random_text(rng, plen(rng), 0, vocab, "t")));
                const double n = double(seqs.back().size());
                flops += 3 * double(c.layers) *
                         (2 * n * d * 3 * p + 4 * n * n * p + 2 * n * p * d + 4 * n * d * f);
            }
            // Length-sorted groups of 16, each padded to its longest, as a training step
            // contextualises them (TrainableTk::score_batch).
            std::sort(seqs.begin(), seqs.end(),
                      [](const auto& a, const auto& b) { return a.size() < b.size(); });
            std::vector<std::pair<torch::Tensor, torch::Tensor>> groups;
            double real = 0, padded = 0;
            for (std::size_t i = 0; i < seqs.size(); i += 16) {
                std::vector<std::span<const std::int64_t>> g(
                    seqs.begin() + static_cast<std::ptrdiff_t>(i),
                    seqs.begin() + static_cast<std::ptrdiff_t>(std::min(seqs.size(), i + 16)));
                groups.push_back(rd::pack_token_ids(g));
                real += double(groups.back().second.sum().item<std::int64_t>());
                padded += double(groups.back().first.numel());
            }
            auto module = rd::TkModelAccess::module(*model);
            module->train(true);
            const std::size_t reps = std::max<std::size_t>(steps, 3);
            const double tk_s = time_contextualise_train(module, groups, false, reps);
            std::printf("tk contextualise fwd+bwd, %zu passages (%.0f real tokens/passage, %.0f "
                        "with padding in length-sorted groups of 16): kernels %.3f s = %.1f "
                        "GFLOP/s = %.0f%% of the %.1f GFLOP/s matmul peak",
                        seqs.size(), real / double(seqs.size()), padded / double(seqs.size()),
                        tk_s, flops / tk_s / 1e9, 100.0 * flops / tk_s / 1e9 / peak, peak);
            if (!no_reference) {
                const double ref_s = time_contextualise_train(module, groups, true, reps);
                std::printf(" | reference path %.3f s = %.1f GFLOP/s = %.0f%% | kernels %.2fx "
                            "faster",
                            ref_s, flops / ref_s / 1e9, 100.0 * flops / ref_s / 1e9 / peak,
                            ref_s / tk_s);
            }
            std::printf("\n");
            std::fflush(stdout);
        }
        auto r = run(*t, {{"embeddings", 1e-4}, {"contextualizer", 1e-4}, {"kernels", 1e-3}},
                     make_batch, tk_batch, warmup, steps);
        r.model = "tk-paper000";
        r.avg_passage_tokens = ptokens / pcount;
        r.parameters = model->parameter_count();
        results.push_back(r);
        if (!no_reference) {
            rd::TkModelAccess::module(*model)->set_reference_kernels(true);
            ptokens = pcount = 0;
            auto rr = run(*t, {{"embeddings", 1e-4}, {"contextualizer", 1e-4}, {"kernels", 1e-3}},
                          make_batch, tk_batch, warmup, steps);
            rd::TkModelAccess::module(*model)->set_reference_kernels(false);
            rr.model = "tk-paper000-ref";
            rr.avg_passage_tokens = ptokens / pcount;
            rr.parameters = model->parameter_count();
            results.push_back(rr);
        }
    }

    // BERT-CAT / BERT-DOT: trained through BERT's kernels and, unless --no-reference, through
    // the former ATen path (BertNet::set_reference_kernels; model names "...-ref").
    for (const std::string kind : {"cat", "dot"}) {
        if (!has_model(kind)) continue;
        const bool small = bert_size == "small";
        const std::int64_t bert_vocab = small ? 48299 : 30522;
        pr::HfConfig c;
        c.vocab_size = bert_vocab;
        c.hidden_size = small ? 128 : 384;
        c.num_hidden_layers = small ? 2 : 6;
        c.num_attention_heads = small ? 2 : 12;
        c.intermediate_size = small ? 512 : 1536;
        c.max_position_embeddings = small ? 256 : 512;
        c.num_labels = 1;
        const bool cat = kind == "cat";
        auto model = std::make_shared<pr::BertModel>(c, pr::BertHeads{cat, cat ? 1 : 0}, seed);
        std::vector<std::string> tokens = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};
        for (std::int64_t i = 5; i < bert_vocab; ++i) tokens.push_back("w" + std::to_string(i));
        auto tok = std::make_shared<const pr::WordPieceTokenizer>(
            std::make_shared<const pr::Vocab>(std::move(tokens)));
        rd::TrainableOptions o;
        o.kind = cat ? rd::TrainableKind::Cat : rd::TrainableKind::Dot;
        // The main job's lengths at the small size (scripts/run: --max-length 160; DOT mean
        // pooling, 24 / 136), MiniLM's 256 otherwise.
        o.max_length = small ? 160 : 256;
        o.query_max_length = small ? 24 : 32;
        o.passage_max_length = small ? 136 : 256;
        o.pooling = small ? "mean" : "cls";
        o.seed = seed;
        auto t = rd::make_trainable_bert(model, tok, o);
        auto net = rd::BertModelAccess::net(*model);
        std::uniform_int_distribution<std::size_t> plen(small ? 120 : 160, small ? 150 : 180);
        double ptokens = 0, pcount = 0;
        const std::size_t batch = small ? bert_batch : cat_batch;
        auto make_batch = [&] {
            std::vector<pr::TrainingExample> b(batch);
            for (auto& e : b) {
                e.query = random_text(rng, 8, 5, bert_vocab, "w");
                auto n1 = plen(rng), n2 = plen(rng);
                e.positive = random_text(rng, n1, 5, bert_vocab, "w");
                e.negatives = {random_text(rng, n2, 5, bert_vocab, "w")};
                ptokens += double(n1 + n2 + 11);  // pair length: + query 8 + 3 special
                pcount += 2;
            }
            return b;
        };
        const std::map<std::string, double> lrs = {{"encoder", small ? 1e-3 : 3e-5},
                                                   {"head", small ? 1e-3 : 3e-5}};
        const std::string name = "bert-" + kind + (small ? "-small" : "-minilm");
        for (const bool reference : {false, true}) {
            if (reference && no_reference) break;
            net->set_reference_kernels(reference);
            ptokens = pcount = 0;
            auto r = run(*t, lrs, make_batch, batch, warmup, steps);
            r.model = name + (reference ? "-ref" : "");
            r.avg_passage_tokens = ptokens / pcount;
            results.push_back(r);
        }
        net->set_reference_kernels(false);
    }

    std::printf("bench_train: %zu timed steps (+%zu warm-up), %d intra-op thread(s)\n", steps,
                warmup, threads);
    std::printf("%-16s %11s %6s %10s %10s %10s %10s %11s %9s\n", "model", "parameters", "batch",
                "tokens/psg", "s/step", "CPU s/step", "examples/s", "ex/CPU-s", "loss");
    for (const auto& r : results) {
        const double eps = double(r.batch * r.steps) / r.seconds;
        std::printf("%-16s %11lld %6zu %10.0f %10.2f %10.2f %10.2f %11.2f %4.2f>%4.2f\n",
                    r.model.c_str(), static_cast<long long>(r.parameters), r.batch,
                    r.avg_passage_tokens, r.seconds / double(r.steps), r.cpu / double(r.steps),
                    eps, double(r.batch * r.steps) / r.cpu, r.loss_first, r.loss_last);
    }
    for (const auto& r : results) {
        std::printf("JSON {\"bench\":\"train\",\"model\":\"%s\",\"threads\":%d,\"batch\":%zu,"
                    "\"steps\":%zu,\"seconds\":%.3f,\"cpu_seconds\":%.3f,\"examples_per_s\":%.3f,"
                    "\"examples_per_cpu_s\":%.3f,\"passage_tokens\":%.1f,\"parameters\":%lld}\n",
                    r.model.c_str(), threads, r.batch, r.steps, r.seconds, r.cpu,
                    double(r.batch * r.steps) / r.seconds, double(r.batch * r.steps) / r.cpu,
                    r.avg_passage_tokens,
                    static_cast<long long>(r.parameters));
    }
    return 0;
}
