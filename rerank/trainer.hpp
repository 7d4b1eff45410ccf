#pragma once
/// \file trainer.hpp
/// Training TK, BERT-CAT and BERT-DOT in process (Torch-free API).
///
/// Objectives (FORMULAS.md, papers 000, 003, 004):
///  - hinge: pairwise hinge loss, margin 1 (paper 000), any model;
///  - ce: softmax cross-entropy over (positive, negatives), any model;
///  - contrastive: BERT-DOT, hard negatives plus in-batch negatives (paper 003 Eq. 1);
///  - poe: EqualizeIR — a frozen biased weak learner f_B (a checkpoint, or trained first by
///    one of the four strategies) and the robust model trained with the product-of-experts
///    loss with α (paper: 0.1); the saved model is f_R alone;
///  - ibbr: BERT-DOT ranking loss (-log softmax over positive, hard and in-batch negatives)
///    + λ·PD or TS of nPRF over the batch (paper 004), passage bias labels d(p) from a gender
///    word list (FORMULAS.md: sgn of Σ_m ln(1+c) - Σ_f ln(1+c)); λ fixed or learned. nPRF's
///    non-relevant set is the query's own negatives (the paper's choice, default) or, with
///    fairness_negatives = InBatch, every other passage of the batch as well; the choice is
///    recorded in report.json and the train log's start line. R in nPRF is the score, or with
///    fairness_softmax its softmax over the query's candidates (R ∈ (0, 1), as the paper states).
///
/// Loop: Adam or AdamW with parameter groups (TK default: 1e-4 embeddings/contextualizer,
/// 1e-3 kernels, paper 000), linear warm-up then linear decay to 0 (or constant), gradient
/// clipping by global norm, gradient accumulation, seeded (same seed + same threads -> same
/// checkpoint), progress with loss and examples/s. Validation every N optimizer steps by
/// re-ranking the validation candidates and evaluating nDCG@10 and MRR@10 with the embedded
/// evaluator; the best checkpoint (by `select_metric`) is kept in <output>/best, the latest
/// in <output>/last together with the optimizer state and the stream position (resume);
/// early stopping after `patience` validations without improvement. After training, the
/// re-rank depth is tuned on validation over `tune_depths` (paper 000) and recorded.
///
/// Output directory layout:
///   <output>/best/      the best model (stage-loadable; = last when there is no validation)
///   <output>/last/      the latest model + trainer_state.json + optimizer.pt (torch::save)
///   <output>/weak/      EqualizeIR: the weak learner when trained here
///   <output>/train_log.jsonl   one JSON object per logged step / validation
///   <output>/report.json       the TrainReport
/// Every file is written atomically; an interrupted run (cancel token) leaves the last
/// complete checkpoint intact and resumable.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "plugin/progress.hpp"
#include "rerank/train_data.hpp"

namespace plumb::rerank {

enum class ModelKind { Tk, Cat, Dot };
enum class Objective { Hinge, CrossEntropy, Contrastive, Poe, Ibbr };
/// IBBR: where nPRF's non-relevant passages come from (paper 004: the query's own candidates).
enum class FairnessNegatives { Own, InBatch };
/// EqualizeIR's ways to obtain the biased weak learner (paper 003 §2.2).
enum class WeakStrategy {
    Checkpoint,    ///< a given, already trained model (weak_model)
    NounPhrases,   ///< trained on queries with repeated noun phrases
    SmallerModel,  ///< a smaller model (weak_model = its untrained/initial checkpoint folder)
    FewerSteps,    ///< the robust recipe for weak_fraction (0.2) of the steps
    LessData,      ///< the robust recipe on weak_fraction (0.2) of the data
};

/// Parses "tk|cat|dot", "hinge|ce|contrastive|poe|ibbr",
/// "checkpoint|noun-phrases|smaller-model|fewer-steps|less-data"; InvalidArgument otherwise.
ModelKind parse_model_kind(const std::string& s);
Objective parse_objective(const std::string& s);
WeakStrategy parse_weak_strategy(const std::string& s);
const char* model_kind_name(ModelKind k) noexcept;
const char* objective_name(Objective o) noexcept;
const char* weak_strategy_name(WeakStrategy w) noexcept;
/// "own" | "in-batch" (InvalidArgument otherwise) and back.
FairnessNegatives parse_fairness_negatives(const std::string& s);
const char* fairness_negatives_name(FairnessNegatives f) noexcept;

struct TrainOptions {
    ModelKind model = ModelKind::Tk;
    Objective objective = Objective::Hinge;
    /// The model to train: a checkpoint folder (TK layout or Hugging Face folder). Transfer
    /// learning = start from a trained checkpoint.
    std::filesystem::path init;
    std::filesystem::path output;  ///< output directory (created)
    bool resume = false;           ///< continue from <output>/last

    // --- batches and budget
    std::size_t batch_size = 32;   ///< examples per forward pass
    std::size_t accumulation = 1;  ///< forward passes per optimizer step
    std::uint64_t max_steps = 0;   ///< optimizer steps; 0 = until the stream ends
    std::uint64_t seed = 42;
    int threads = 0;  ///< Torch intra-op threads; 0 = unchanged

    // --- optimizer
    std::string optimizer = "adamw";  ///< adam | adamw
    double lr = 3e-6;                 ///< default rate (BERT); TK uses group rates below
    /// Per-group rates overriding lr (group names: see detail/trainable.hpp). TK defaults for
    /// the groups not listed here: embeddings 1e-4, contextualizer 1e-4, kernels 1e-3 (paper
    /// 000); so `lr` only reaches TK groups outside these three.
    std::map<std::string, double> group_lr;
    double weight_decay = 0.01;  ///< adamw (not on biases / LayerNorm weights)
    double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
    /// Schedule: see lr_multiplier(). Linear decay needs max_steps > 0 (else constant).
    std::uint64_t warmup_steps = 0;
    bool linear_decay = true;  ///< after warm-up, linear to 0 at max_steps
    /// The T of the schedule when it is not max_steps (0 = max_steps): a run with
    /// schedule_steps > max_steps is the first max_steps steps of a longer run (EqualizeIR's
    /// truncated fewer-steps weak learner).
    std::uint64_t schedule_steps = 0;
    double clip_norm = 0.0;    ///< global gradient norm clip; 0 = off

    // --- objective settings
    double margin = 1.0;             ///< hinge
    bool in_batch_negatives = true;  ///< contrastive / ibbr
    double temperature = 1.0;        ///< contrastive / ibbr scores divided by this
    double poe_alpha = 0.1;          ///< EqualizeIR α
    WeakStrategy weak_strategy = WeakStrategy::Checkpoint;
    std::filesystem::path weak_model;  ///< Checkpoint / SmallerModel: folder
    double weak_fraction = 0.2;        ///< FewerSteps / LessData
    /// FewerSteps: false = a complete schedule (warm-up, decay to 0) over the weak learner's
    /// ceil(weak_fraction · max_steps) steps; true = the robust run's own schedule (warm-up and
    /// decay over max_steps) stopped after those steps, i.e. the first weak_fraction of the
    /// baseline's training (paper 003: "20 % of the original training time"), which keeps the
    /// full learning rate where the compressed schedule halves it on average.
    bool weak_truncated_schedule = false;
    std::string fairness = "pd";       ///< ibbr: pd | ts
    /// ibbr: nPRF's non-relevant set: the query's own negatives (paper 004, default) or also
    /// the batch's other passages (InBatch; needs in_batch_negatives).
    FairnessNegatives fairness_negatives = FairnessNegatives::Own;
    /// ibbr: R in nPRF = the scores (false, FORMULAS.md) or their softmax over each query's
    /// candidates in the fairness term (true; R ∈ (0, 1) as paper 004 states; see
    /// detail::ibbr_batch_fairness). The ranking loss is the same either way.
    bool fairness_softmax = false;
    double lambda = 1.0;  ///< ibbr λ (initial value when learned)
    /// Learned λ (paper 004's "Auto"): detail::LearnedLambda, uncertainty weighting
    /// L_rank + exp(-s)·L_fair + s with λ = exp(-s), s trained by the optimizer in its own group
    /// (rate lambda_lr, scheduled like the others, no weight decay, not clipped); `lambda` is
    /// the initial value (clamped to [1e-4, 1e4]). Saved with the state for resume.
    bool learn_lambda = false;
    double lambda_lr = 0.01;
    std::filesystem::path gender_words;  ///< ibbr: word list `word,f` / `word,m`

    // --- model input sizes (see detail::TrainableOptions)
    std::size_t max_length = 256;
    std::size_t query_max_length = 32;
    std::size_t passage_max_length = 200;
    std::string pooling = "cls";
    std::string similarity = "dot";
    /// BERT: embeddings.word_embeddings.weight is not trained (no gradient, in no group): with
    /// random vectors, the same word stays the same vector in every query and passage.
    bool freeze_word_embeddings = false;

    // --- validation
    std::uint64_t validate_every = 0;  ///< optimizer steps; 0 = only at the end
    std::size_t patience = 0;          ///< early stop after this many validations w/o gain; 0 = off
    std::string select_metric = "ndcg_cut_10";  ///< or "recip_rank" (MRR@10, cut at 10)
    std::vector<std::size_t> tune_depths = {5, 10, 20, 50, 100};  ///< empty = no tuning
    std::size_t eval_batch = 64;

    std::uint64_t log_every = 10;  ///< steps between train_log.jsonl lines
    /// Optimizer steps between <output>/last checkpoints (0 = at validations and at the end).
    std::uint64_t checkpoint_every = 0;
};

/// Learning-rate multiplier of the s-th optimizer update (s = 1, 2, ...; W = warmup_steps,
/// T = schedule_steps, or max_steps when that is 0): s / W while s <= W; then, with linear_decay and T > W,
/// (T - s + 1) / (T - W) (1 at s = W + 1, 1/(T - W) at the last step s = T, i.e. reaching 0
/// right after it); 1 otherwise.
double lr_multiplier(const TrainOptions& options, std::uint64_t update);

struct ValidationPoint {
    std::uint64_t step = 0;
    double ndcg10 = 0.0;
    double mrr10 = 0.0;
};

struct TrainReport {
    std::uint64_t steps = 0;
    std::uint64_t examples = 0;
    double seconds = 0.0;
    double examples_per_second = 0.0;
    double first_loss = 0.0;  ///< mean loss of the first logged window
    double last_loss = 0.0;   ///< mean loss of the last logged window
    std::vector<ValidationPoint> validations;
    std::optional<ValidationPoint> best;
    std::size_t tuned_depth = 0;  ///< 0 = not tuned
    bool early_stopped = false;
    bool cancelled = false;
    bool resumed = false;
    std::uint64_t start_step = 0;      ///< the step a resumed run continued from
    double lambda = 0.0;               ///< ibbr: final λ
    std::filesystem::path best_model;  ///< <output>/best
    std::filesystem::path weak_model;  ///< EqualizeIR: the frozen weak learner used
};

/// Progress of training: step, max_steps (0 = unknown), the current mean loss, examples/s.
using TrainProgress =
    std::function<void(std::uint64_t step, std::uint64_t max_steps, double loss, double eps)>;

/// Trains according to `options` on `stream`, validating on `validation` when given.
/// Determinism: same options, inputs and thread count -> bit-identical checkpoints; a resumed
/// run (options.resume, a fresh stream built like the first one) continues exactly like an
/// uninterrupted one (weights, Adam state, schedule, stream position and the global Torch RNG
/// are restored), except that BERT dropout masks restart from the seed.
/// Logged per step window (train_log.jsonl): loss, lr multiplier, gradient norm before (and,
/// with clipping, after) clipping, examples/s; ibbr also the fairness term and λ.
/// Throws InvalidArgument / ConfigError for inconsistent options (e.g. contrastive with TK),
/// CheckpointError for unusable checkpoints, IoError. With `cancel` set the loop stops after
/// the current step, writes <output>/last, and returns with report.cancelled; a validation or
/// depth-tuning pass in progress stops before its next query and records nothing (a resumed
/// run performs that step's validation first).
TrainReport train(const TrainOptions& options, TrainingStream& stream,
                  const ValidationSet* validation = nullptr, const TrainProgress& progress = {},
                  const CancelToken* cancel = nullptr);

/// EqualizeIR end to end: obtains f_B by options.weak_strategy (training it into
/// <output>/weak with the plain recipe where needed: softmax CE, contrastive for BERT-DOT, no
/// validation), freezes it, then trains f_R with poe into <output>. `make_stream` is called
/// once per phase for a fresh stream; its argument carries the strategy's adjustments, which
/// the caller merges into its own StreamOptions: query_transform (NounPhrases:
/// repeat_noun_phrases_transform()) and keep_fraction (LessData: weak_fraction; 1 otherwise);
/// the robust phase gets a default StreamOptions. SmallerModel trains weak_model (an initial
/// checkpoint of a smaller model) for max_steps; FewerSteps trains init for
/// ceil(weak_fraction · max_steps) steps. A finished <output>/weak (report.json, not cancelled)
/// is reused; with resume an unfinished one is resumed.
using StreamFactory = std::function<TrainingStream(const StreamOptions& adjustments)>;
TrainReport train_equalizeir(const TrainOptions& options, const StreamFactory& make_stream,
                             const ValidationSet* validation = nullptr,
                             const TrainProgress& progress = {},
                             const CancelToken* cancel = nullptr);

}  // namespace plumb::rerank
