// `plumb train`: trains TK, BERT-CAT or BERT-DOT in process (hinge, ce, contrastive,
// EqualizeIR's product of experts, IBBR) on triples or on qrels + a first-stage run.
#include <fmt/format.h>

#include <csignal>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "index/corpus.hpp"
#include "index/passage_index.hpp"
#include "plugin/cli/command.hpp"
#include "plugin/cli/options.hpp"
#include "plugin/cli/progress_bar.hpp"
#include "plugin/error.hpp"
#include "rerank/detail/cli_options.hpp"
#include "rerank/train_data.hpp"
#include "rerank/trainer.hpp"

namespace {

namespace fs = std::filesystem;
namespace pr = plumb::rerank;

struct TrainArgs {
    std::string model = "tk", init, output, objective = "hinge";
    std::string triples, id_triples, qrels, run, topics, index;
    std::size_t negatives = 1, sample_depth = 100;
    bool skip_bad = false, rotate = false;
    std::uint64_t rotate_seed = 42;
    std::string val_topics, val_qrels, val_run;
    std::size_t val_depth = 100, val_max_queries = 0;
    std::size_t batch = 32, accumulation = 1, shuffle_buffer = 10000;
    std::uint64_t steps = 0, epochs = 1, seed = 42, warmup = 0, validate_every = 0, log_every = 10,
                  checkpoint_every = 0;
    int threads = 0;
    double lr = 3e-6, weight_decay = 0.01, clip = 0.0, margin = 1.0, temperature = 1.0;
    std::vector<std::string> lr_groups;
    std::string optimizer = "adamw", select_metric = "ndcg_cut_10";
    bool no_decay = false, no_in_batch = false;
    std::size_t patience = 0;
    std::vector<std::size_t> tune_depths = {5, 10, 20, 50, 100};
    bool no_tune = false;
    double alpha = 0.1, weak_fraction = 0.2;
    std::string weak_strategy = "checkpoint", weak_model, weak_schedule = "own";
    std::string fairness = "pd", gender_words, fairness_negatives = "own", fairness_scores = "raw";
    double lambda = 1.0, lambda_lr = 0.01;
    bool learn_lambda = false;
    std::size_t max_length = 256, query_max_length = 32, passage_max_length = 200;
    bool freeze_word_embeddings = false;
    pr::detail::DotEncoderArgs dot;
    bool resume = false, quiet = false;
    bool epochs_given = false;
};

plumb::CancelToken g_cancel;
extern "C" void on_train_interrupt(int) { g_cancel.request(); }

void need_file(const std::string& path, const char* option) {
    if (path.empty()) return;
    std::error_code ec;
    if (!fs::is_regular_file(path, ec)) {
        throw plumb::IoError(fmt::format("{}: no such file ({})", path, option));
    }
}

void need_dir(const std::string& path, const char* option) {
    if (path.empty()) return;
    std::error_code ec;
    if (!fs::is_directory(path, ec)) {
        throw plumb::IoError(fmt::format("{}: no such directory ({})", path, option));
    }
}

pr::TrainOptions make_options(const TrainArgs& a) {
    pr::TrainOptions o;
    o.model = pr::parse_model_kind(a.model);
    o.objective = pr::parse_objective(a.objective);
    o.init = a.init;
    o.output = a.output;
    o.resume = a.resume;
    o.batch_size = a.batch;
    o.accumulation = a.accumulation;
    o.max_steps = a.steps;
    o.seed = a.seed;
    o.threads = a.threads;
    o.optimizer = a.optimizer;
    o.lr = a.lr;
    for (const auto& g : a.lr_groups) {
        auto eq = g.find('=');
        if (eq == std::string::npos || eq == 0) {
            throw plumb::InvalidArgument("--lr-group expects NAME=LR, got '" + g + "'");
        }
        try {
            std::size_t used = 0;
            double v = std::stod(g.substr(eq + 1), &used);
            if (used != g.size() - eq - 1) throw std::invalid_argument("trailing");
            o.group_lr[g.substr(0, eq)] = v;
        } catch (const std::exception&) {
            throw plumb::InvalidArgument("--lr-group expects NAME=LR, got '" + g + "'");
        }
    }
    o.weight_decay = a.weight_decay;
    o.warmup_steps = a.warmup;
    o.linear_decay = !a.no_decay;
    o.clip_norm = a.clip;
    o.margin = a.margin;
    o.in_batch_negatives = !a.no_in_batch;
    o.temperature = a.temperature;
    o.poe_alpha = a.alpha;
    o.weak_strategy = pr::parse_weak_strategy(a.weak_strategy);
    o.weak_model = a.weak_model;
    o.weak_fraction = a.weak_fraction;
    o.weak_truncated_schedule = a.weak_schedule == "truncated";
    o.fairness = a.fairness;
    o.fairness_negatives = pr::parse_fairness_negatives(a.fairness_negatives);
    o.fairness_softmax = a.fairness_scores == "softmax";
    o.lambda = a.lambda;
    o.learn_lambda = a.learn_lambda;
    o.lambda_lr = a.lambda_lr;
    o.gender_words = a.gender_words;
    o.max_length = a.max_length;
    o.query_max_length = a.query_max_length;
    o.passage_max_length = a.passage_max_length;
    o.freeze_word_embeddings = a.freeze_word_embeddings;
    o.pooling = a.dot.pooling;
    o.similarity = a.dot.similarity;
    o.validate_every = a.validate_every;
    o.patience = a.patience;
    o.select_metric = a.select_metric == "mrr" || a.select_metric == "mrr10"     ? "recip_rank"
                      : a.select_metric == "ndcg" || a.select_metric == "ndcg10" ? "ndcg_cut_10"
                                                                                 : a.select_metric;
    if (a.no_tune)
        o.tune_depths.clear();
    else
        o.tune_depths = a.tune_depths;
    o.log_every = a.log_every;
    o.checkpoint_every = a.checkpoint_every;
    return o;
}

void run_train(const TrainArgs& a) {
    // --- inputs: exactly one data source
    int sources = !a.triples.empty() + !a.id_triples.empty() + !a.qrels.empty();
    if (sources != 1) {
        throw plumb::ConfigError(
            "train: give exactly one data source: --triples TSV, --id-triples TSV (with --topics "
            "and --index), or --qrels and --run (with --topics and --index)");
    }
    if (!a.qrels.empty() && a.run.empty()) throw plumb::ConfigError("train: --qrels needs --run");
    if (!a.run.empty() && a.qrels.empty()) throw plumb::ConfigError("train: --run needs --qrels");
    if ((!a.id_triples.empty() || !a.qrels.empty()) && (a.topics.empty() || a.index.empty())) {
        throw plumb::ConfigError("train: --id-triples and --qrels/--run need --topics and --index");
    }
    bool val = !a.val_topics.empty() || !a.val_qrels.empty() || !a.val_run.empty();
    if (val && (a.val_topics.empty() || a.val_qrels.empty() || a.val_run.empty())) {
        throw plumb::ConfigError("train: validation needs --val-topics, --val-qrels and --val-run");
    }
    if (val && a.index.empty()) {
        throw plumb::ConfigError("train: validation needs --index (the candidates' text)");
    }
    need_file(a.triples, "--triples");
    need_file(a.id_triples, "--id-triples");
    need_file(a.qrels, "--qrels");
    need_file(a.run, "--run");
    need_file(a.topics, "--topics");
    need_file(a.val_topics, "--val-topics");
    need_file(a.val_qrels, "--val-qrels");
    need_file(a.val_run, "--val-run");
    need_file(a.gender_words, "--gender-words");
    need_dir(a.index, "--index");
    if (!a.resume || !a.init.empty()) need_dir(a.init, "--init");
    need_dir(a.weak_model, "--weak-model");

    pr::TrainOptions o = make_options(a);

    std::shared_ptr<const plumb::DocumentSource> docs;
    if (!a.index.empty()) docs = plumb::index::PassageIndex::open(a.index);

    pr::SourceOptions so;
    so.skip_bad = a.skip_bad;
    auto open_source = [&]() -> std::unique_ptr<pr::ExampleSource> {
        if (!a.triples.empty()) return pr::open_text_triples(a.triples, so);
        if (!a.id_triples.empty()) return pr::open_id_triples(a.id_triples, a.topics, docs, so);
        pr::QrelsSamplingOptions qo;
        qo.depth = a.sample_depth;
        qo.negatives = a.negatives;
        qo.seed = a.seed;
        qo.skip_bad = a.skip_bad;
        return pr::open_qrels_run(a.topics, a.qrels, a.run, docs, qo);
    };
    pr::StreamOptions base;
    base.shuffle_buffer = a.shuffle_buffer;
    base.seed = a.seed;
    // With a step budget and no explicit --epochs, the data repeats until the budget is spent.
    base.epochs = (a.steps > 0 && !a.epochs_given) ? 0 : a.epochs;
    if (a.rotate) base.passage_transform = pr::rotation_transform(a.rotate_seed);

    std::optional<pr::ValidationSet> validation;
    if (val) {
        validation = pr::load_validation(a.val_topics, a.val_qrels, a.val_run, *docs, a.val_depth,
                                         a.val_max_queries);
        if (validation->queries.empty()) {
            throw plumb::ConfigError(
                "train: no validation query is in all of --val-topics, "
                "--val-qrels and --val-run");
        }
    }

    auto old_int = std::signal(SIGINT, on_train_interrupt);
    auto old_term = std::signal(SIGTERM, on_train_interrupt);
    struct Restore {
        decltype(old_int) i, t;
        ~Restore() {
            std::signal(SIGINT, i);
            std::signal(SIGTERM, t);
        }
    } restore{old_int, old_term};

    pr::TrainReport r;
    {
        plumb::cli::ProgressBar bar("train", "steps", !a.quiet);
        auto progress = [&](std::uint64_t step, std::uint64_t total, double loss, double eps) {
            bar.update(step, total, fmt::format("loss {:.4f}, {:.1f} examples/s", loss, eps));
        };
        const pr::ValidationSet* vp = validation ? &*validation : nullptr;
        if (o.objective == pr::Objective::Poe) {
            auto factory = [&](const pr::StreamOptions& adjust) {
                pr::StreamOptions so2 = base;
                if (adjust.query_transform) so2.query_transform = adjust.query_transform;
                if (adjust.passage_transform) so2.passage_transform = adjust.passage_transform;
                so2.keep_fraction = adjust.keep_fraction;
                return pr::TrainingStream(open_source(), so2);
            };
            r = pr::train_equalizeir(o, factory, vp, progress, &g_cancel);
        } else {
            pr::TrainingStream stream(open_source(), base);
            r = pr::train(o, stream, vp, progress, &g_cancel);
        }
        bar.finish();
    }

    std::printf("%s\n", fmt::format("train: {} {} — {} steps, {} examples in {:.1f} s ({:.1f} "
                                    "examples/s); loss {:.4f} -> {:.4f}",
                                    a.model, a.objective, r.steps, r.examples, r.seconds,
                                    r.examples_per_second, r.first_loss, r.last_loss)
                            .c_str());
    if (r.resumed)
        std::printf("  resumed from step %llu\n", static_cast<unsigned long long>(r.start_step));
    if (!r.weak_model.empty()) std::printf("  weak learner: %s\n", r.weak_model.c_str());
    if (o.objective == pr::Objective::Ibbr) std::printf("  lambda: %.6g\n", r.lambda);
    if (r.best) {
        std::printf(
            "  best validation at step %llu: nDCG@10 %.4f, MRR@10 %.4f (%zu validations%s)\n",
            static_cast<unsigned long long>(r.best->step), r.best->ndcg10, r.best->mrr10,
            r.validations.size(), r.early_stopped ? ", early stopped" : "");
    }
    if (r.tuned_depth > 0) std::printf("  tuned re-rank depth: %zu\n", r.tuned_depth);
    if (!r.best_model.empty()) std::printf("  best model: %s\n", r.best_model.c_str());
    std::printf("  last checkpoint: %s\n", (fs::path(a.output) / "last").c_str());
    if (r.cancelled) {
        throw plumb::Error(
            fmt::format("train: cancelled after step {}; continue with --resume", r.steps));
    }
}

const plumb::cli::CommandRegistrar kRegistrar{
    "train", [](CLI::App& app) {
        auto args = std::make_shared<TrainArgs>();
        auto* cmd = app.add_subcommand(
            "train",
            "Train a TK, BERT-CAT or BERT-DOT re-ranker (hinge, ce, contrastive, EqualizeIR "
            "poe, IBBR)");
        cmd->add_option("--model,-m", args->model, "tk | cat | dot")->capture_default_str();
        cmd->add_option("--init", args->init,
                        "Initial model folder (TK: plumb tk-init; BERT: Hugging Face folder); a "
                        "trained checkpoint = fine-tuning");
        cmd->add_option("--output,-o", args->output,
                        "Output directory (best/, last/, report.json, "
                        "train_log.jsonl)")
            ->required();
        cmd->add_option("--objective", args->objective, "hinge | ce | contrastive | poe | ibbr")
            ->capture_default_str();
        // data
        cmd->add_option("--triples", args->triples, "query<TAB>positive<TAB>negative TSV (.gz ok)");
        cmd->add_option("--id-triples", args->id_triples,
                        "qid<TAB>pid+<TAB>pid- TSV (needs --topics, --index)");
        cmd->add_option("--qrels", args->qrels, "Qrels: relevant passages (with --run)");
        cmd->add_option("--run", args->run,
                        "First-stage run to sample negatives from (with --qrels)");
        cmd->add_option("--topics", args->topics, "Topics of the training queries");
        cmd->add_option("--index,-i", args->index, "Index directory (passage text source)");
        cmd->add_option("--negatives", args->negatives, "Negatives per example (--qrels/--run)")
            ->capture_default_str();
        cmd->add_option("--sample-depth", args->sample_depth, "Negatives from the run's top-K")
            ->capture_default_str();
        cmd->add_flag("--skip-bad", args->skip_bad, "Skip malformed lines / unknown ids (counted)");
        cmd->add_flag("--rotate", args->rotate,
                      "Rotate every training passage (position debiasing)");
        cmd->add_option("--rotate-seed", args->rotate_seed, "Seed of the rotation offsets")
            ->capture_default_str();
        // validation
        cmd->add_option("--val-topics", args->val_topics, "Validation topics");
        cmd->add_option("--val-qrels", args->val_qrels, "Validation qrels");
        cmd->add_option("--val-run", args->val_run, "Validation candidates (a first-stage run)");
        cmd->add_option("--val-depth", args->val_depth, "Validation candidates per query")
            ->capture_default_str();
        cmd->add_option("--val-max-queries", args->val_max_queries,
                        "Use at most this many validation queries (0 = all)")
            ->capture_default_str();
        // loop
        cmd->add_option("--batch", args->batch, "Examples per forward pass")->capture_default_str();
        cmd->add_option("--accumulation", args->accumulation, "Forward passes per optimizer step")
            ->capture_default_str();
        cmd->add_option("--steps", args->steps, "Optimizer steps (0 = until the data ends)")
            ->capture_default_str();
        auto* ep = cmd->add_option("--epochs", args->epochs,
                                   "Passes over the data (0 = unlimited; default: 1, or unlimited "
                                   "with --steps)");
        cmd->add_option("--shuffle-buffer", args->shuffle_buffer,
                        "Shuffling buffer (0/1 = file order)")
            ->capture_default_str();
        cmd->add_option("--seed", args->seed,
                        "Seed (data order, sampling, initialisation, dropout)")
            ->capture_default_str();
        pr::detail::add_torch_threads_option(cmd, args->threads);
        cmd->add_option("--lr", args->lr, "Learning rate (groups without their own rate)")
            ->capture_default_str();
        cmd->add_option("--lr-group", args->lr_groups,
                        "Rate of one parameter group, NAME=LR (repeatable; TK default: "
                        "embeddings=1e-4 contextualizer=1e-4 kernels=1e-3; BERT: encoder, head)");
        cmd->add_option("--optimizer", args->optimizer, "adam | adamw")->capture_default_str();
        cmd->add_option("--weight-decay", args->weight_decay,
                        "Weight decay (not on biases / LayerNorm weights)")
            ->capture_default_str();
        cmd->add_option("--warmup", args->warmup, "Linear warm-up steps")->capture_default_str();
        cmd->add_flag("--no-decay", args->no_decay,
                      "Constant rate after warm-up (default: linear decay to 0 at --steps)");
        cmd->add_option("--clip", args->clip, "Clip the global gradient norm (0 = off)")
            ->capture_default_str();
        cmd->add_option("--validate-every", args->validate_every,
                        "Validate every N steps (0 = at the end only)")
            ->capture_default_str();
        cmd->add_option("--patience", args->patience,
                        "Stop after N validations without improvement (0 = never)")
            ->capture_default_str();
        cmd->add_option("--select-metric", args->select_metric,
                        "ndcg_cut_10 (ndcg) or recip_rank (mrr): picks best/")
            ->capture_default_str();
        cmd->add_option("--tune-depths", args->tune_depths,
                        "Re-rank depths tried on validation after training")
            ->capture_default_str()
            ->delimiter(',');
        cmd->add_flag("--no-tune", args->no_tune, "No depth tuning");
        cmd->add_option("--log-every", args->log_every, "Steps per train_log.jsonl line")
            ->capture_default_str();
        cmd->add_option("--checkpoint-every", args->checkpoint_every,
                        "Write last/ every N steps (0 = at validations and the end)")
            ->capture_default_str();
        // objectives
        cmd->add_option("--margin", args->margin, "hinge margin")->capture_default_str();
        cmd->add_option("--temperature", args->temperature, "contrastive/ibbr/poe(dot) temperature")
            ->capture_default_str();
        cmd->add_flag("--no-in-batch", args->no_in_batch, "dot: no in-batch negatives");
        cmd->add_option("--alpha", args->alpha, "EqualizeIR α (poe)")->capture_default_str();
        cmd->add_option("--weak-strategy", args->weak_strategy,
                        "checkpoint | noun-phrases | smaller-model | fewer-steps | less-data")
            ->capture_default_str();
        cmd->add_option("--weak-model", args->weak_model,
                        "checkpoint: the trained weak model; smaller-model: its initial folder");
        cmd->add_option("--weak-fraction", args->weak_fraction,
                        "fewer-steps / less-data: share of the steps / data")
            ->capture_default_str();
        cmd->add_option("--weak-schedule", args->weak_schedule,
                        "fewer-steps: own (a complete warm-up/decay schedule over the weak "
                        "learner's steps) | truncated (the robust run's schedule over --steps, "
                        "stopped after the share: the first 20 % of the baseline's training)")
            ->check(CLI::IsMember({"own", "truncated"}))
            ->capture_default_str();
        cmd->add_option("--fairness", args->fairness, "ibbr: pd | ts")->capture_default_str();
        cmd->add_option("--fairness-negatives", args->fairness_negatives,
                        "ibbr: nPRF's non-relevant set: own (the query's own negatives, paper "
                        "004) | in-batch (also the batch's other passages; needs in-batch "
                        "negatives)")
            ->check(CLI::IsMember({"own", "in-batch"}))
            ->capture_default_str();
        cmd->add_option("--fairness-scores", args->fairness_scores,
                        "ibbr: R in nPRF: raw (the dot products, FORMULAS.md) | softmax (over "
                        "the query's candidates of the fairness term: R in (0, 1), as paper 004 "
                        "states; a negative raw R turns the fairness gradient around)")
            ->check(CLI::IsMember({"raw", "softmax"}))
            ->capture_default_str();
        cmd->add_option("--lambda", args->lambda, "ibbr: λ (initial value with --learn-lambda)")
            ->capture_default_str();
        cmd->add_flag(
            "--learn-lambda", args->learn_lambda,
            "ibbr: learn λ (uncertainty weighting: L_rank + exp(-s)·L_fair + s, λ = exp(-s))");
        cmd->add_option("--lambda-lr", args->lambda_lr, "ibbr: learning rate of the learned λ's s")
            ->capture_default_str();
        cmd->add_option("--gender-words", args->gender_words, "ibbr: word list (word,f / word,m)");
        // model inputs
        cmd->add_option("--max-length", args->max_length, "cat: tokens per pair")
            ->capture_default_str();
        cmd->add_option("--query-max-length", args->query_max_length, "dot: tokens per query")
            ->capture_default_str();
        cmd->add_option("--passage-max-length", args->passage_max_length, "dot: tokens per passage")
            ->capture_default_str();
        cmd->add_flag("--freeze-word-embeddings", args->freeze_word_embeddings,
                      "cat/dot: keep the word-embedding matrix as initialised (not trained)");
        args->dot.add_to(cmd, "dot: cls | mean", "dot: dot | cosine");
        cmd->add_flag("--resume", args->resume, "Continue from <output>/last");
        plumb::cli::add_quiet_flag(cmd, args->quiet, "No progress bar");
        cmd->callback([args, ep] {
            args->epochs_given = ep->count() > 0;
            run_train(*args);
        });
    }};

}  // namespace
