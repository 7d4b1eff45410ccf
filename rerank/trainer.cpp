// The training loop (see trainer.hpp): optimizer with parameter groups, schedule, clipping,
// accumulation, objectives, validation, checkpoints, resume, EqualizeIR.
#include "rerank/trainer.hpp"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <mutex>
#include <nlohmann/json.hpp>
#include <span>

#include "eval/evaluator.hpp"
#include "eval/gender.hpp"
#include "plugin/atomic_directory.hpp"
#include "plugin/error.hpp"
#include "plugin/json.hpp"
#include "plugin/text_io.hpp"
#include "rerank/detail/train_losses.hpp"
#include "rerank/detail/trainable.hpp"
#include "rerank/torch_threads.hpp"

namespace plumb::rerank {

namespace fs = std::filesystem;
using json = nlohmann::json;

ModelKind parse_model_kind(const std::string& s) {
    if (s == "tk") return ModelKind::Tk;
    if (s == "cat") return ModelKind::Cat;
    if (s == "dot") return ModelKind::Dot;
    throw InvalidArgument("unknown model kind '" + s + "' (known: tk, cat, dot)");
}

Objective parse_objective(const std::string& s) {
    if (s == "hinge") return Objective::Hinge;
    if (s == "ce") return Objective::CrossEntropy;
    if (s == "contrastive") return Objective::Contrastive;
    if (s == "poe") return Objective::Poe;
    if (s == "ibbr") return Objective::Ibbr;
    throw InvalidArgument("unknown objective '" + s +
                          "' (known: hinge, ce, contrastive, poe, ibbr)");
}

WeakStrategy parse_weak_strategy(const std::string& s) {
    if (s == "checkpoint") return WeakStrategy::Checkpoint;
    if (s == "noun-phrases") return WeakStrategy::NounPhrases;
    if (s == "smaller-model") return WeakStrategy::SmallerModel;
    if (s == "fewer-steps") return WeakStrategy::FewerSteps;
    if (s == "less-data") return WeakStrategy::LessData;
    throw InvalidArgument("unknown weak strategy '" + s +
                          "' (known: checkpoint, noun-phrases, smaller-model, fewer-steps, "
                          "less-data)");
}

const char* model_kind_name(ModelKind k) noexcept {
    switch (k) {
        case ModelKind::Tk:
            return "tk";
        case ModelKind::Cat:
            return "cat";
        case ModelKind::Dot:
            return "dot";
    }
    return "?";
}

FairnessNegatives parse_fairness_negatives(const std::string& s) {
    if (s == "own") return FairnessNegatives::Own;
    if (s == "in-batch") return FairnessNegatives::InBatch;
    throw InvalidArgument("unknown fairness negatives '" + s + "' (known: own, in-batch)");
}

const char* fairness_negatives_name(FairnessNegatives f) noexcept {
    return f == FairnessNegatives::Own ? "own" : "in-batch";
}

const char* objective_name(Objective o) noexcept {
    switch (o) {
        case Objective::Hinge:
            return "hinge";
        case Objective::CrossEntropy:
            return "ce";
        case Objective::Contrastive:
            return "contrastive";
        case Objective::Poe:
            return "poe";
        case Objective::Ibbr:
            return "ibbr";
    }
    return "?";
}

const char* weak_strategy_name(WeakStrategy w) noexcept {
    switch (w) {
        case WeakStrategy::Checkpoint:
            return "checkpoint";
        case WeakStrategy::NounPhrases:
            return "noun-phrases";
        case WeakStrategy::SmallerModel:
            return "smaller-model";
        case WeakStrategy::FewerSteps:
            return "fewer-steps";
        case WeakStrategy::LessData:
            return "less-data";
    }
    return "?";
}

double lr_multiplier(const TrainOptions& o, std::uint64_t s) {
    if (s == 0) s = 1;
    const std::uint64_t w = o.warmup_steps, t = o.schedule_steps ? o.schedule_steps : o.max_steps;
    if (w > 0 && s <= w) return static_cast<double>(s) / static_cast<double>(w);
    if (o.linear_decay && t > w) {
        if (s > t) return 0.0;
        return static_cast<double>(t - s + 1) / static_cast<double>(t - w);
    }
    return 1.0;
}

namespace {

using detail::Trainable;

detail::TrainableKind trainable_kind(ModelKind k) {
    switch (k) {
        case ModelKind::Tk:
            return detail::TrainableKind::Tk;
        case ModelKind::Cat:
            return detail::TrainableKind::Cat;
        case ModelKind::Dot:
            return detail::TrainableKind::Dot;
    }
    return detail::TrainableKind::Tk;
}

detail::TrainableOptions trainable_options(const TrainOptions& o, bool dropout) {
    detail::TrainableOptions t;
    t.kind = trainable_kind(o.model);
    t.max_length = o.max_length;
    t.query_max_length = o.query_max_length;
    t.passage_max_length = o.passage_max_length;
    t.pooling = o.pooling;
    t.similarity = o.similarity;
    t.freeze_word_embeddings = o.freeze_word_embeddings;
    t.dropout = dropout;
    t.seed = o.seed;
    return t;
}

void check_options(const TrainOptions& o) {
    auto bad = [](const std::string& m) { throw InvalidArgument("train: " + m); };
    if (o.output.empty()) bad("no output directory");
    if (o.init.empty() && !o.resume) bad("no initial model (init)");
    if (o.batch_size == 0) bad("batch_size must be > 0");
    if (o.accumulation == 0) bad("accumulation must be > 0");
    if (o.optimizer != "adam" && o.optimizer != "adamw") {
        bad("optimizer must be adam or adamw, not '" + o.optimizer + "'");
    }
    if (!(o.lr > 0) || !std::isfinite(o.lr)) bad("lr must be > 0");
    for (const auto& [name, lr] : o.group_lr) {
        if (!(lr >= 0) || !std::isfinite(lr))
            bad("learning rate of group '" + name + "' must be >= 0");
    }
    if (o.freeze_word_embeddings && o.model == ModelKind::Tk) {
        bad("freeze_word_embeddings is for cat/dot (TK: tk-init --freeze-embeddings)");
    }
    if (o.weight_decay < 0) bad("weight_decay must be >= 0");
    if (o.clip_norm < 0) bad("clip_norm must be >= 0");
    if (!(o.temperature > 0)) bad("temperature must be > 0");
    if (o.select_metric != "ndcg_cut_10" && o.select_metric != "recip_rank") {
        bad("select_metric must be ndcg_cut_10 or recip_rank, not '" + o.select_metric + "'");
    }
    if ((o.objective == Objective::Contrastive || o.objective == Objective::Ibbr) &&
        o.model != ModelKind::Dot) {
        bad(std::string("objective ") + objective_name(o.objective) +
            " needs a bi-encoder (model dot)");
    }
    if (o.objective == Objective::Poe) {
        if (o.poe_alpha < 0 || o.poe_alpha > 1) bad("poe alpha must be in [0, 1]");
        if (o.weak_model.empty()) bad("objective poe needs a weak model");
    }
    if (o.objective == Objective::Ibbr) {
        if (o.fairness != "pd" && o.fairness != "ts") bad("fairness must be pd or ts");
        if (o.gender_words.empty()) bad("objective ibbr needs a gender word list");
        if (o.lambda < 0) bad("lambda must be >= 0");
        if (o.fairness_negatives == FairnessNegatives::InBatch && !o.in_batch_negatives)
            bad("in-batch fairness negatives need in-batch negatives");
    }
    if (o.log_every == 0) bad("log_every must be > 0");
    if (o.schedule_steps != 0 && o.schedule_steps < o.max_steps) {
        bad("schedule_steps must be 0 or at least max_steps");
    }
}

std::string hex_encode(const std::uint8_t* p, std::size_t n) {
    static const char* k = "0123456789abcdef";
    std::string s(2 * n, '0');
    for (std::size_t i = 0; i < n; ++i) {
        s[2 * i] = k[p[i] >> 4];
        s[2 * i + 1] = k[p[i] & 15];
    }
    return s;
}

std::vector<std::uint8_t> hex_decode(const std::string& s) {
    auto v = [](char c) -> int {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        throw CheckpointError("trainer_state.json: bad rng state");
    };
    if (s.size() % 2) throw CheckpointError("trainer_state.json: bad rng state");
    std::vector<std::uint8_t> out(s.size() / 2);
    for (std::size_t i = 0; i < out.size(); ++i) {
        out[i] = static_cast<std::uint8_t>(v(s[2 * i]) * 16 + v(s[2 * i + 1]));
    }
    return out;
}

std::string rng_state() {
    auto gen = at::detail::getDefaultCPUGenerator();
    at::Tensor st;
    {
        std::lock_guard<std::mutex> lock(gen.mutex());
        st = gen.get_state();
    }
    st = st.contiguous().to(torch::kUInt8);
    return hex_encode(st.data_ptr<std::uint8_t>(), static_cast<std::size_t>(st.numel()));
}

void set_rng_state(const std::string& hex) {
    auto bytes = hex_decode(hex);
    auto t =
        torch::from_blob(bytes.data(), {static_cast<std::int64_t>(bytes.size())}, torch::kUInt8)
            .clone();
    auto gen = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(gen.mutex());
    gen.set_state(t);
}

void write_json(const fs::path& path, const json& j) {
    AtomicFile f(path);
    f.write(j.dump(2));
    f.write("\n");
    f.commit();
}

/// Replaces directory `dst` by `tmp` (both siblings): dst -> dst.old, tmp -> dst, drop old.
/// A crash in between leaves dst.old, which find_checkpoint() falls back to.
/// <output>/last, or last.old left by an interrupted swap of plumb before AtomicDirectory; empty
/// when neither exists.
fs::path find_checkpoint(const fs::path& dir) {
    if (fs::exists(dir / "trainer_state.json")) return dir;
    fs::path old = dir;
    old += ".old";
    if (fs::exists(old / "trainer_state.json")) return old;
    return {};
}

json point_json(const ValidationPoint& p) {
    return {{"step", p.step}, {"ndcg_cut_10", p.ndcg10}, {"recip_rank", p.mrr10}};
}

ValidationPoint point_from(const json& j) {
    return {j.at("step").get<std::uint64_t>(), j.at("ndcg_cut_10").get<double>(),
            j.at("recip_rank").get<double>()};
}

double metric_of(const ValidationPoint& p, const std::string& metric) {
    return metric == "recip_rank" ? p.mrr10 : p.ndcg10;
}

/// Evaluates lists cut at 10 with nDCG@10 and MRR@10.
ValidationPoint evaluate_lists(std::vector<RankedList> lists, const ValidationSet& v,
                               std::uint64_t step) {
    for (auto& l : lists) {
        if (l.candidates.size() > 10) l.candidates.resize(10);
    }
    eval::Evaluator ev(v.qrels, eval::MeasureSet::parse({"ndcg_cut.10", "recip_rank"}));
    auto r = ev.evaluate(lists);
    ValidationPoint p;
    p.step = step;
    if (r.queries.empty()) return p;
    p.ndcg10 = r.summary_value("ndcg_cut_10");
    p.mrr10 = r.summary_value("recip_rank");
    return p;
}

std::size_t max_candidates(const ValidationSet& v) {
    std::size_t d = 1;
    for (const auto& l : v.candidates) d = std::max(d, l.candidates.size());
    return d;
}

/// Scores of every validation candidate (all of them, run order) by `model`; nullopt when
/// `cancel` is requested before the last query (checked before each query, so a stop request
/// does not wait for a whole validation pass).
std::optional<std::vector<std::vector<float>>> score_validation(Trainable& model,
                                                                const ValidationSet& v,
                                                                std::size_t batch,
                                                                const CancelToken* cancel) {
    model.set_training(false);
    auto stage = model.stage(max_candidates(v), std::max<std::size_t>(batch, 1));
    std::vector<std::vector<float>> out(v.queries.size());
    bool cancelled = false;
    {
        torch::NoGradGuard no_grad;
        for (std::size_t i = 0; i < v.queries.size(); ++i) {
            if (cancel && cancel->requested()) {
                cancelled = true;
                break;
            }
            out[i] = stage->score(v.queries[i], v.candidates[i].candidates);
        }
    }
    model.set_training(true);
    if (cancelled) return std::nullopt;
    return out;
}

/// Lists re-ranked with the scores of their top `depth` candidates (tail in run order).
std::vector<RankedList> apply_depth(const ValidationSet& v,
                                    const std::vector<std::vector<float>>& scores,
                                    std::size_t depth) {
    std::vector<RankedList> lists = v.candidates;
    for (std::size_t i = 0; i < lists.size(); ++i) {
        std::size_t n = std::min({depth, scores[i].size(), lists[i].candidates.size()});
        for (auto& c : lists[i].candidates) c.text.clear();
        apply_rerank_scores(lists[i], std::span<const float>(scores[i].data(), n), "train");
    }
    return lists;
}

struct LossParts {
    torch::Tensor loss;      // total, scalar
    torch::Tensor fairness;  // ibbr: the fairness term (undefined otherwise)
};

class Session {
public:
    Session(const TrainOptions& o, TrainingStream& stream, const ValidationSet* validation,
            const TrainProgress& progress, const CancelToken* cancel)
        : m_o(o), m_stream(stream), m_val(validation), m_progress(progress), m_cancel(cancel) {}

    TrainReport run();

private:
    void setup_model(const fs::path& from);
    void setup_optimizer();
    void load_state(const fs::path& dir);
    LossParts compute_loss(std::span<const TrainingExample> batch);
    torch::Tensor list_scores(Trainable& model, std::span<const TrainingExample> batch);
    torch::Tensor passage_labels(std::span<const TrainingExample> batch, std::int64_t group,
                                 std::int64_t rows);
    /// nullopt when the cancel token stopped the pass (nothing recorded).
    std::optional<ValidationPoint> validate();
    void save_model(Trainable& model, const fs::path& dst);
    void save_last();
    void flush_log();
    void log_line(json j);
    double elapsed() const;
    double current_lambda() const { return m_learned ? m_learned->value() : m_lambda; }
    void tune_depth();
    json state_json() const;

    TrainOptions m_o;
    TrainingStream& m_stream;
    const ValidationSet* m_val;
    const TrainProgress& m_progress;
    const CancelToken* m_cancel;

    std::unique_ptr<Trainable> m_model;
    std::unique_ptr<Trainable> m_weak;
    std::unique_ptr<torch::optim::Optimizer> m_opt;
    std::vector<double> m_base_lr;  // per optimizer group
    std::vector<std::string> m_group_names;
    std::vector<torch::Tensor> m_params;  // all trained parameters (clipping)
    std::optional<eval::GenderWordList> m_words;
    double m_lambda = 0.0;                             // fixed λ
    std::unique_ptr<detail::LearnedLambda> m_learned;  // learned λ (learn_lambda)

    std::vector<std::string> m_log;
    TrainReport m_report;
    std::uint64_t m_step = 0;
    std::uint64_t m_examples = 0;
    double m_prior_seconds = 0.0;
    std::chrono::steady_clock::time_point m_start;
    std::uint64_t m_bad_validations = 0;
    double m_window_loss = 0.0, m_window_fair = 0.0;
    std::uint64_t m_window_steps = 0, m_window_examples = 0;
    double m_window_start = 0.0;
    bool m_have_first = false;
    std::uint64_t m_last_validated = 0, m_last_saved = 0;
};

double Session::elapsed() const {
    return m_prior_seconds +
           std::chrono::duration<double>(std::chrono::steady_clock::now() - m_start).count();
}

void Session::setup_model(const fs::path& from) {
    m_model = detail::load_trainable(from, trainable_options(m_o, true));
    if (m_o.objective == Objective::Poe) {
        m_weak = detail::load_trainable(m_o.weak_model, trainable_options(m_o, false));
        if (m_weak->kind() != m_model->kind()) {
            throw InvalidArgument("train: the weak model must be of the same kind as the model");
        }
        m_weak->set_training(false);
        for (auto& [name, p] : m_weak->named_parameters()) p.set_requires_grad(false);
    }
    m_model->set_training(true);
}

void Session::setup_optimizer() {
    std::map<std::string, double> rates;
    if (m_o.model == ModelKind::Tk) {
        // paper 000: 1e-4 for embeddings and contextualization, 1e-3 for the kernel weights
        rates = {{"embeddings", 1e-4}, {"contextualizer", 1e-4}, {"kernels", 1e-3}};
    }
    for (const auto& [name, lr] : m_o.group_lr) rates[name] = lr;
    const bool adamw = m_o.optimizer == "adamw";
    std::vector<torch::optim::OptimizerParamGroup> groups;
    for (auto& g : m_model->parameter_groups()) {
        if (g.params.empty()) continue;
        auto it = rates.find(g.name);
        double lr = it != rates.end() ? it->second : m_o.lr;
        double wd = g.no_weight_decay ? 0.0 : m_o.weight_decay;
        std::unique_ptr<torch::optim::OptimizerOptions> opts;
        if (adamw) {
            opts = std::make_unique<torch::optim::AdamWOptions>(torch::optim::AdamWOptions(lr)
                                                                    .betas({m_o.beta1, m_o.beta2})
                                                                    .eps(m_o.eps)
                                                                    .weight_decay(wd));
        } else {
            opts = std::make_unique<torch::optim::AdamOptions>(torch::optim::AdamOptions(lr)
                                                                   .betas({m_o.beta1, m_o.beta2})
                                                                   .eps(m_o.eps)
                                                                   .weight_decay(wd));
        }
        for (auto& p : g.params) m_params.push_back(p);
        m_base_lr.push_back(lr);
        m_group_names.push_back(g.name + (g.no_weight_decay ? "/no_decay" : ""));
        groups.emplace_back(g.params, std::move(opts));
    }
    if (groups.empty()) throw InvalidArgument("train: the model has no trainable parameters");
    if (m_learned) {
        std::unique_ptr<torch::optim::OptimizerOptions> opts;
        if (adamw) {
            opts = std::make_unique<torch::optim::AdamWOptions>(
                torch::optim::AdamWOptions(m_o.lambda_lr)
                    .betas({m_o.beta1, m_o.beta2})
                    .eps(m_o.eps)
                    .weight_decay(0.0));
        } else {
            opts =
                std::make_unique<torch::optim::AdamOptions>(torch::optim::AdamOptions(m_o.lambda_lr)
                                                                .betas({m_o.beta1, m_o.beta2})
                                                                .eps(m_o.eps)
                                                                .weight_decay(0.0));
        }
        m_base_lr.push_back(m_o.lambda_lr);
        m_group_names.push_back("lambda");
        groups.emplace_back(std::vector<torch::Tensor>{m_learned->parameter()}, std::move(opts));
    }
    if (adamw) {
        m_opt = std::make_unique<torch::optim::AdamW>(std::move(groups));
    } else {
        m_opt = std::make_unique<torch::optim::Adam>(std::move(groups));
    }
}

json Session::state_json() const {
    json j;
    j["format"] = "plumb-trainer-state";
    j["version"] = 1;
    j["model"] = model_kind_name(m_o.model);
    j["objective"] = objective_name(m_o.objective);
    j["step"] = m_step;
    j["examples"] = m_examples;
    j["stream_served"] = m_stream.served();
    j["seconds"] = elapsed();
    j["seed"] = m_o.seed;
    j["rng"] = rng_state();
    j["lambda"] = current_lambda();
    if (m_learned) j["lambda_s"] = m_learned->parameter().item<double>();
    j["bad_validations"] = m_bad_validations;
    j["last_validated"] = m_last_validated;
    j["first_loss"] = m_report.first_loss;
    j["last_loss"] = m_report.last_loss;
    j["have_first"] = m_have_first;
    json vals = json::array();
    for (const auto& v : m_report.validations) vals.push_back(point_json(v));
    j["validations"] = vals;
    if (m_report.best) j["best"] = point_json(*m_report.best);
    return j;
}

void Session::load_state(const fs::path& dir) {
    json j;
    try {
        j = read_json_file(dir / "trainer_state.json");
        if (j.at("format") != "plumb-trainer-state") throw CheckpointError("unknown format");
        if (j.at("model") != model_kind_name(m_o.model)) {
            throw CheckpointError(std::string("checkpoint is of model ") +
                                  j.at("model").get<std::string>() + ", not " +
                                  model_kind_name(m_o.model));
        }
        m_step = j.at("step").get<std::uint64_t>();
        m_examples = j.at("examples").get<std::uint64_t>();
        m_prior_seconds = j.at("seconds").get<double>();
        if (m_learned) {
            torch::NoGradGuard no_grad;
            m_learned->parameter().fill_(j.at("lambda_s").get<double>());
        }
        m_bad_validations = j.at("bad_validations").get<std::uint64_t>();
        m_last_validated = j.at("last_validated").get<std::uint64_t>();
        m_report.first_loss = j.at("first_loss").get<double>();
        m_report.last_loss = j.at("last_loss").get<double>();
        m_have_first = j.at("have_first").get<bool>();
        for (const auto& v : j.at("validations")) m_report.validations.push_back(point_from(v));
        if (j.contains("best")) m_report.best = point_from(j.at("best"));
        set_rng_state(j.at("rng").get<std::string>());
        std::uint64_t served = j.at("stream_served").get<std::uint64_t>();
        if (m_stream.served() > served) {
            throw InvalidArgument("train: resume needs a fresh stream (it already served " +
                                  std::to_string(m_stream.served()) + " examples)");
        }
        m_stream.skip(served - m_stream.served());
    } catch (const ParseError& e) {
        throw CheckpointError(e.what());
    } catch (const json::exception& e) {
        throw CheckpointError((dir / "trainer_state.json").string() + ": " + e.what());
    }
    try {
        torch::load(*m_opt, (dir / "optimizer.pt").string());
    } catch (const c10::Error& e) {
        throw CheckpointError((dir / "optimizer.pt").string() +
                              ": cannot load optimizer state: " + e.what_without_backtrace());
    }
    m_last_saved = m_step;
    // The log of the resumed run: keep the lines up to the checkpoint's step.
    fs::path log = m_o.output / "train_log.jsonl";
    if (fs::exists(log)) {
        LineReader reader(log);
        std::string_view line;
        while (reader.next(line)) {
            if (trim(line).empty()) continue;
            try {
                auto l = parse_json(line, reader.name(), reader.line_number());
                if (l.value("step", std::uint64_t{0}) <= m_step) m_log.emplace_back(line);
            } catch (const std::exception&) {
                // a line cut by a kill: the log is rebuilt from the state's step
            }
        }
    }
}

torch::Tensor Session::list_scores(Trainable& model, std::span<const TrainingExample> batch) {
    if (model.kind() == detail::TrainableKind::Dot) {
        auto [q, p] = model.encode_batch(batch);
        std::int64_t g = p.size(0) / std::max<std::int64_t>(q.size(0), 1);
        return detail::contrastive_scores(q, p, g, m_o.in_batch_negatives, false, m_o.temperature);
    }
    return model.score_batch(batch);
}

/// IBBR bias labels d(p) of the passages of a batch, [rows·G] in passage order (row r = example
/// r / G, slot r % G: 0 = positive, k = negative k-1).
torch::Tensor Session::passage_labels(std::span<const TrainingExample> batch, std::int64_t g,
                                      std::int64_t rows) {
    const std::int64_t n = rows * g;
    std::vector<std::int64_t> passage(static_cast<std::size_t>(n));
    for (std::int64_t r = 0; r < n; ++r) {
        const auto& ex = batch[static_cast<std::size_t>(r / g)];
        std::int64_t slot = r % g;
        const std::string& text =
            slot == 0 ? ex.positive : ex.negatives[static_cast<std::size_t>(slot - 1)];
        passage[static_cast<std::size_t>(r)] =
            eval::ibbr_label(eval::count_gender_words(text, *m_words));
    }
    return torch::tensor(passage, torch::kInt64);
}

LossParts Session::compute_loss(std::span<const TrainingExample> batch) {
    LossParts out;
    switch (m_o.objective) {
        case Objective::Hinge:
            out.loss = detail::hinge_loss(m_model->score_batch(batch), m_o.margin);
            break;
        case Objective::CrossEntropy:
            out.loss = detail::softmax_ce_loss(m_model->score_batch(batch));
            break;
        case Objective::Contrastive: {
            auto [q, p] = m_model->encode_batch(batch);
            std::int64_t g = p.size(0) / std::max<std::int64_t>(q.size(0), 1);
            out.loss =
                detail::contrastive_loss(q, p, g, m_o.in_batch_negatives, false, m_o.temperature);
            break;
        }
        case Objective::Poe: {
            torch::Tensor biased;
            {
                torch::NoGradGuard no_grad;
                biased = list_scores(*m_weak, batch);
            }
            auto robust = list_scores(*m_model, batch);
            out.loss = detail::poe_loss(biased, robust, m_o.poe_alpha);
            break;
        }
        case Objective::Ibbr: {
            auto [q, p] = m_model->encode_batch(batch);
            std::int64_t g = p.size(0) / std::max<std::int64_t>(q.size(0), 1);
            auto scores =
                detail::contrastive_scores(q, p, g, m_o.in_batch_negatives, false, m_o.temperature);
            auto rank = detail::softmax_ce_loss(scores);
            detail::FairnessGroups groups;
            out.fairness = detail::ibbr_batch_fairness(
                q, p, passage_labels(batch, g, q.size(0)), g,
                m_o.fairness_negatives == FairnessNegatives::InBatch,
                m_o.fairness == "ts" ? detail::FairnessTerm::TS : detail::FairnessTerm::PD,
                m_o.temperature, &groups, m_o.fairness_softmax);
            out.loss = m_learned ? m_learned->combine(rank, out.fairness, groups.defined())
                                 : rank + m_lambda * out.fairness;
            break;
        }
    }
    return out;
}

std::optional<ValidationPoint> Session::validate() {
    auto scores = score_validation(*m_model, *m_val, m_o.eval_batch, m_cancel);
    if (!scores) return std::nullopt;
    return evaluate_lists(apply_depth(*m_val, *scores, max_candidates(*m_val)), *m_val, m_step);
}

void Session::save_model(Trainable& model, const fs::path& dst) {
    AtomicDirectory out(dst);
    model.set_training(false);
    model.save(out.path());
    model.set_training(true);
    out.commit();
}

void Session::save_last() {
    AtomicDirectory out(m_o.output / "last");
    const fs::path& tmp = out.path();
    m_model->set_training(false);
    m_model->save(tmp);
    m_model->set_training(true);
    try {
        torch::save(*m_opt, (tmp / "optimizer.pt").string());
    } catch (const c10::Error& e) {
        throw IoError((tmp / "optimizer.pt").string() + ": " + e.what_without_backtrace());
    }
    write_json(tmp / "trainer_state.json", state_json());
    out.commit();
    m_last_saved = m_step;
    flush_log();
}

void Session::flush_log() {
    AtomicFile f(m_o.output / "train_log.jsonl");
    for (const auto& l : m_log) {
        f.write(l);
        f.write("\n");
    }
    f.commit();
}

void Session::log_line(json j) { m_log.push_back(j.dump()); }

void Session::tune_depth() {
    fs::path best = m_o.output / "best";
    auto model = detail::load_trainable(best, trainable_options(m_o, false));
    auto scored = score_validation(*model, *m_val, m_o.eval_batch, m_cancel);
    if (!scored) {  // stopped: no depth chosen; a resumed run tunes it
        m_report.cancelled = true;
        return;
    }
    const auto& scores = *scored;
    double best_value = -1.0;
    json rows = json::array();
    for (std::size_t d : m_o.tune_depths) {
        if (d == 0) continue;
        auto p = evaluate_lists(apply_depth(*m_val, scores, d), *m_val, m_step);
        double v = metric_of(p, m_o.select_metric);
        rows.push_back({{"depth", d}, {"ndcg_cut_10", p.ndcg10}, {"recip_rank", p.mrr10}});
        if (v > best_value) {
            best_value = v;
            m_report.tuned_depth = d;
        }
    }
    log_line({{"step", m_step}, {"depth_tuning", rows}, {"tuned_depth", m_report.tuned_depth}});
}

TrainReport Session::run() {
    check_options(m_o);
    if (m_val && m_val->queries.size() != m_val->candidates.size()) {
        throw InvalidArgument("train: validation queries and candidate lists differ in number");
    }
    if (m_val && !m_val->qrels) throw InvalidArgument("train: validation set without qrels");
    fs::create_directories(m_o.output);

    TorchThreadsScope threads(m_o.threads);  // restored when training ends
    torch::manual_seed(m_o.seed);

    if (m_o.objective == Objective::Ibbr) {
        m_words = eval::GenderWordList::load(m_o.gender_words);
        if (m_o.learn_lambda) {
            m_learned = std::make_unique<detail::LearnedLambda>(std::clamp(m_o.lambda, 1e-4, 1e4));
        }
    }
    m_lambda = m_o.lambda;

    fs::path resume_from;
    if (m_o.resume) resume_from = find_checkpoint(m_o.output / "last");
    if (m_o.resume && resume_from.empty() && m_o.init.empty()) {
        throw CheckpointError("train: nothing to resume in " + (m_o.output / "last").string());
    }
    setup_model(resume_from.empty() ? m_o.init : resume_from);
    setup_optimizer();
    if (!resume_from.empty()) {
        load_state(resume_from);
        m_report.resumed = true;
        m_report.start_step = m_step;
        log_line({{"step", m_step}, {"event", "resumed"}});
    } else {
        log_line({{"step", 0},
                  {"event", "start"},
                  {"model", model_kind_name(m_o.model)},
                  {"objective", objective_name(m_o.objective)},
                  {"fairness_negatives", m_o.objective == Objective::Ibbr
                                             ? json(fairness_negatives_name(m_o.fairness_negatives))
                                             : json(nullptr)},
                  {"fairness_scores", m_o.objective == Objective::Ibbr
                                          ? json(m_o.fairness_softmax ? "softmax" : "raw")
                                          : json(nullptr)},
                  {"source", m_stream.source().describe()},
                  {"max_steps", m_o.max_steps},
                  {"schedule_steps", m_o.schedule_steps ? m_o.schedule_steps : m_o.max_steps},
                  {"groups", m_group_names},
                  {"group_lr", m_base_lr}});
    }
    m_start = std::chrono::steady_clock::now();
    m_window_start = elapsed();
    std::uint64_t session_examples = 0;

    auto select = [&](const ValidationPoint& p) {
        m_report.validations.push_back(p);
        m_last_validated = m_step;
        bool improved = !m_report.best || metric_of(p, m_o.select_metric) >
                                              metric_of(*m_report.best, m_o.select_metric);
        if (improved) {
            m_report.best = p;
            m_bad_validations = 0;
            save_model(*m_model, m_o.output / "best");
        } else {
            ++m_bad_validations;
        }
        log_line({{"step", m_step},
                  {"validation", {{"ndcg_cut_10", p.ndcg10}, {"recip_rank", p.mrr10}}},
                  {"best", improved}});
    };

    // The validation of step m_step, when one is due and has not happened: false when the
    // cancel token stopped it (the step's state is saved without it, last_validated stays
    // behind, and a resumed run validates this step first, so interrupted + resumed equals
    // uninterrupted).
    auto validate_due = [&]() {
        if (!m_val || m_o.validate_every == 0 || m_step == 0 || m_step % m_o.validate_every != 0 ||
            m_last_validated == m_step) {
            return true;
        }
        auto p = validate();
        if (!p) {
            m_report.cancelled = true;
            return false;
        }
        select(*p);
        if (m_o.patience > 0 && m_bad_validations >= m_o.patience) m_report.early_stopped = true;
        save_last();
        return true;
    };
    if (m_report.resumed) validate_due();

    bool ended = false;
    while (!m_report.cancelled && !m_report.early_stopped &&
           (m_o.max_steps == 0 || m_step < m_o.max_steps)) {
        if (m_cancel && m_cancel->requested()) {
            m_report.cancelled = true;
            break;
        }
        std::vector<std::vector<TrainingExample>> micro;
        std::size_t total = 0;
        for (std::size_t a = 0; a < m_o.accumulation; ++a) {
            auto b = m_stream.next_batch(m_o.batch_size);
            if (b.empty()) break;
            total += b.size();
            bool short_batch = b.size() < m_o.batch_size;
            micro.push_back(std::move(b));
            if (short_batch) break;
        }
        if (micro.empty()) {
            ended = true;
            break;
        }
        m_opt->zero_grad();
        double step_loss = 0.0, step_fair = 0.0;
        for (const auto& b : micro) {
            auto parts = compute_loss(b);
            double w = static_cast<double>(b.size()) / static_cast<double>(total);
            (parts.loss * w).backward();
            step_loss += parts.loss.item<double>() * w;
            if (parts.fairness.defined()) step_fair += parts.fairness.item<double>() * w;
        }
        double grad_norm = 0.0;
        {
            torch::NoGradGuard no_grad;
            if (m_o.clip_norm > 0) {
                grad_norm = torch::nn::utils::clip_grad_norm_(m_params, m_o.clip_norm);
            } else {
                double sq = 0.0;
                for (const auto& p : m_params) {
                    if (p.grad().defined()) sq += p.grad().pow(2).sum().item<double>();
                }
                grad_norm = std::sqrt(sq);
            }
        }
        const double mult = lr_multiplier(m_o, m_step + 1);
        for (std::size_t g = 0; g < m_opt->param_groups().size(); ++g) {
            m_opt->param_groups()[g].options().set_lr(m_base_lr[g] * mult);
        }
        m_opt->step();
        ++m_step;
        m_examples += total;
        session_examples += total;

        m_window_loss += step_loss;
        m_window_fair += step_fair;
        ++m_window_steps;
        m_window_examples += total;
        double now = elapsed();
        double eps = now > 0 ? static_cast<double>(m_examples) / now : 0.0;
        if (m_progress) m_progress(m_step, m_o.max_steps, m_window_loss / m_window_steps, eps);

        if (m_step % m_o.log_every == 0) {
            double mean = m_window_loss / static_cast<double>(m_window_steps);
            json j = {{"step", m_step},
                      {"examples", m_examples},
                      {"loss", mean},
                      {"lr_multiplier", mult},
                      {"lr", m_base_lr.front() * mult},
                      {"grad_norm", grad_norm},
                      {"seconds", now},
                      {"examples_per_second",
                       now > m_window_start
                           ? static_cast<double>(m_window_examples) / (now - m_window_start)
                           : 0.0}};
            if (m_o.clip_norm > 0) {
                double sq = 0.0;
                for (const auto& p : m_params) {
                    if (p.grad().defined()) sq += p.grad().pow(2).sum().item<double>();
                }
                j["clipped_norm"] = std::sqrt(sq);
            }
            if (m_o.objective == Objective::Ibbr) {
                j["fairness"] = m_window_fair / static_cast<double>(m_window_steps);
                j["lambda"] = current_lambda();
            }
            log_line(j);
            if (!m_have_first) {
                m_report.first_loss = mean;
                m_have_first = true;
            }
            m_report.last_loss = mean;
            m_window_loss = m_window_fair = 0.0;
            m_window_steps = m_window_examples = 0;
            m_window_start = now;
        }

        const std::uint64_t saved = m_last_saved;
        if (!validate_due()) break;
        if (m_last_saved == saved && m_o.checkpoint_every > 0 &&
            m_step % m_o.checkpoint_every == 0) {
            save_last();
        }
        if (m_report.early_stopped) break;
    }
    (void)ended;

    // the partial last window
    if (m_window_steps > 0) {
        double mean = m_window_loss / static_cast<double>(m_window_steps);
        if (!m_have_first) {
            m_report.first_loss = mean;
            m_have_first = true;
        }
        m_report.last_loss = mean;
        json j = {{"step", m_step}, {"examples", m_examples}, {"loss", mean}, {"partial", true}};
        if (m_o.objective == Objective::Ibbr) {
            j["fairness"] = m_window_fair / static_cast<double>(m_window_steps);
            j["lambda"] = current_lambda();
        }
        log_line(j);
    }
    if (m_report.early_stopped) log_line({{"step", m_step}, {"event", "early_stopped"}});

    if (!m_report.cancelled) {
        if (m_val) {
            if (m_last_validated != m_step || m_report.validations.empty()) {
                if (auto p = validate()) {
                    select(*p);
                } else {
                    m_report.cancelled = true;
                }
            }
        } else if (!m_report.best) {
            // no validation: best = last (a resumed run keeps the best its validations chose)
            save_model(*m_model, m_o.output / "best");
        }
    }
    if (m_last_saved != m_step || !fs::exists(m_o.output / "last" / "trainer_state.json")) {
        save_last();
    }
    if (!m_report.cancelled && m_val && !m_o.tune_depths.empty() &&
        fs::exists(m_o.output / "best")) {
        tune_depth();
    }

    // (after the final validation and depth tuning, which a stop request can also end)
    if (m_report.cancelled) log_line({{"step", m_step}, {"event", "cancelled"}});
    m_report.steps = m_step;
    m_report.examples = m_examples;
    m_report.seconds = elapsed();
    m_report.examples_per_second =
        m_report.seconds > 0 ? static_cast<double>(m_examples) / m_report.seconds : 0.0;
    m_report.lambda = current_lambda();
    m_report.best_model = fs::exists(m_o.output / "best") ? m_o.output / "best" : fs::path();
    if (m_o.objective == Objective::Poe) m_report.weak_model = m_o.weak_model;
    (void)session_examples;
    flush_log();

    json r;
    r["model"] = model_kind_name(m_o.model);
    r["objective"] = objective_name(m_o.objective);
    r["steps"] = m_report.steps;
    r["examples"] = m_report.examples;
    r["seconds"] = m_report.seconds;
    r["examples_per_second"] = m_report.examples_per_second;
    r["first_loss"] = m_report.first_loss;
    r["last_loss"] = m_report.last_loss;
    json vals = json::array();
    for (const auto& v : m_report.validations) vals.push_back(point_json(v));
    r["validations"] = vals;
    r["best"] = m_report.best ? point_json(*m_report.best) : json(nullptr);
    r["tuned_depth"] = m_report.tuned_depth;
    r["early_stopped"] = m_report.early_stopped;
    r["cancelled"] = m_report.cancelled;
    r["resumed"] = m_report.resumed;
    r["start_step"] = m_report.start_step;
    if (m_o.objective == Objective::Ibbr) {
        r["lambda"] = current_lambda();
        r["fairness"] = m_o.fairness;
        r["fairness_negatives"] = fairness_negatives_name(m_o.fairness_negatives);
        r["fairness_scores"] = m_o.fairness_softmax ? "softmax" : "raw";
    }
    r["best_model"] = m_report.best_model.string();
    if (!m_report.weak_model.empty()) r["weak_model"] = m_report.weak_model.string();
    r["seed"] = m_o.seed;
    write_json(m_o.output / "report.json", r);
    return m_report;
}

}  // namespace

TrainReport train(const TrainOptions& options, TrainingStream& stream,
                  const ValidationSet* validation, const TrainProgress& progress,
                  const CancelToken* cancel) {
    try {
        Session s(options, stream, validation, progress, cancel);
        return s.run();
    } catch (const c10::Error& e) {
        throw Error(std::string("train: ") + e.what_without_backtrace());
    } catch (const fs::filesystem_error& e) {
        throw IoError(std::string("train: ") + e.what());
    }
}

TrainReport train_equalizeir(const TrainOptions& options, const StreamFactory& make_stream,
                             const ValidationSet* validation, const TrainProgress& progress,
                             const CancelToken* cancel) {
    if (!make_stream) throw InvalidArgument("train_equalizeir: no stream factory");
    if (options.output.empty()) throw InvalidArgument("train: no output directory");
    if (options.poe_alpha < 0 || options.poe_alpha > 1) {
        throw InvalidArgument("train: poe alpha must be in [0, 1]");
    }
    TrainOptions robust = options;
    robust.objective = Objective::Poe;
    fs::path weak_dir = options.output / "weak";

    if (options.weak_strategy == WeakStrategy::Checkpoint) {
        if (options.weak_model.empty()) {
            throw InvalidArgument("train: weak strategy checkpoint needs a weak model");
        }
    } else {
        // The weak learner: the plain recipe (softmax CE; contrastive for a bi-encoder),
        // modified as the strategy says, trained into <output>/weak.
        TrainOptions weak = options;
        weak.objective =
            options.model == ModelKind::Dot ? Objective::Contrastive : Objective::CrossEntropy;
        weak.output = weak_dir;
        weak.weak_model.clear();
        weak.tune_depths.clear();
        weak.validate_every = 0;
        weak.patience = 0;
        StreamOptions adjust;
        switch (options.weak_strategy) {
            case WeakStrategy::NounPhrases:
                adjust.query_transform = repeat_noun_phrases_transform();
                break;
            case WeakStrategy::SmallerModel:
                if (options.weak_model.empty()) {
                    throw InvalidArgument(
                        "train: weak strategy smaller-model needs the smaller model's initial "
                        "checkpoint (weak_model)");
                }
                weak.init = options.weak_model;
                break;
            case WeakStrategy::FewerSteps:
                if (options.max_steps == 0) {
                    throw InvalidArgument("train: weak strategy fewer-steps needs max_steps > 0");
                }
                if (!(options.weak_fraction > 0 && options.weak_fraction <= 1)) {
                    throw InvalidArgument("train: weak_fraction must be in (0, 1]");
                }
                weak.max_steps = std::max<std::uint64_t>(
                    1, static_cast<std::uint64_t>(std::ceil(
                           options.weak_fraction * static_cast<double>(options.max_steps))));
                if (options.weak_truncated_schedule) {
                    // The first weak_fraction of the robust run's schedule, not a complete one.
                    weak.schedule_steps =
                        options.schedule_steps ? options.schedule_steps : options.max_steps;
                } else {
                    weak.warmup_steps = std::min(weak.warmup_steps, weak.max_steps);
                }
                break;
            case WeakStrategy::LessData:
                if (!(options.weak_fraction > 0 && options.weak_fraction <= 1)) {
                    throw InvalidArgument("train: weak_fraction must be in (0, 1]");
                }
                adjust.keep_fraction = options.weak_fraction;
                break;
            case WeakStrategy::Checkpoint:
                break;
        }
        bool done = false;
        if (fs::exists(weak_dir / "report.json") && fs::exists(weak_dir / "best")) {
            try {
                auto j = read_json_file(weak_dir / "report.json");
                done = !j.value("cancelled", true);
            } catch (const std::exception&) {
                done = false;
            }
        }
        if (!done) {
            weak.resume = options.resume && !find_checkpoint(weak_dir / "last").empty();
            auto stream = make_stream(adjust);
            auto r = train(weak, stream, nullptr, progress, cancel);
            if (r.cancelled) {
                r.weak_model = weak_dir / "best";
                return r;
            }
        }
        robust.weak_model = weak_dir / "best";
    }
    auto stream = make_stream(StreamOptions{});
    auto report = train(robust, stream, validation, progress, cancel);
    report.weak_model = robust.weak_model;
    return report;
}

}  // namespace plumb::rerank
