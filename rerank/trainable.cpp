// Trainable TK, BERT-CAT and BERT-DOT (see detail/trainable.hpp).
#include "rerank/detail/trainable.hpp"

#include <ATen/CPUGeneratorImpl.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <limits>
#include <utility>

#include "plugin/text_io.hpp"
#include "rerank/bert.hpp"
#include "rerank/bert_checkpoint.hpp"
#include "rerank/bi_encoder.hpp"
#include "rerank/bi_encoder_stage.hpp"
#include "rerank/cross_encoder.hpp"
#include "rerank/detail/bert_modules.hpp"
#include "rerank/detail/tk_module.hpp"
#include "rerank/hf_config.hpp"
#include "rerank/tk_stage.hpp"
#include "rerank/wordpiece.hpp"

namespace plumb::rerank::detail {

namespace {

/// The number of negatives every example of the batch contributes (the smallest count).
std::size_t common_negatives(std::span<const TrainingExample> batch) {
    if (batch.empty()) throw InvalidArgument("score_batch: empty batch");
    std::size_t n = std::numeric_limits<std::size_t>::max();
    for (const auto& e : batch) n = std::min(n, e.negatives.size());
    if (n == 0) throw InvalidArgument("score_batch: a training example has no negative passage");
    return n;
}

/// Texts of the batch's passages, example by example: positive, then the first n negatives.
std::vector<std::string_view> passage_texts(std::span<const TrainingExample> batch,
                                            std::size_t n) {
    std::vector<std::string_view> out;
    out.reserve(batch.size() * (n + 1));
    for (const auto& e : batch) {
        out.push_back(e.positive);
        for (std::size_t j = 0; j < n; ++j) out.push_back(e.negatives[j]);
    }
    return out;
}

bool ends_with(const std::string& s, const std::string& suffix) {
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

/// Appends `p` to the group named `name` with the given decay flag (created in first-use order).
void add_to_group(std::vector<ParamGroup>& groups, const std::string& name, bool no_decay,
                  const torch::Tensor& p) {
    for (auto& g : groups) {
        if (g.name == name && g.no_weight_decay == no_decay) {
            g.params.push_back(p);
            return;
        }
    }
    groups.push_back(ParamGroup{name, {p}, no_decay});
}

/// Orders groups by `order` of names (decay group before no-decay group of the same name).
void sort_groups(std::vector<ParamGroup>& groups, const std::vector<std::string>& order) {
    auto rank = [&](const ParamGroup& g) {
        auto it = std::find(order.begin(), order.end(), g.name);
        return std::pair(static_cast<std::size_t>(it - order.begin()), g.no_weight_decay);
    };
    std::stable_sort(groups.begin(), groups.end(),
                     [&](const ParamGroup& a, const ParamGroup& b) { return rank(a) < rank(b); });
}

// ----------------------------------------------------------------------------------------- TK

/// Padded [B, L] ids and bool mask of token sequences, as TkModel packs them.
std::pair<torch::Tensor, torch::Tensor> pack_tk(const std::vector<std::vector<std::int64_t>>& seqs) {
    std::vector<std::span<const std::int64_t>> views(seqs.begin(), seqs.end());
    return pack_token_ids(views);
}

class TrainableTk final : public Trainable {
public:
    explicit TrainableTk(std::shared_ptr<TkModel> model) : m_model(std::move(model)) {
        if (!m_model) throw InvalidArgument("make_trainable_tk: null model");
        m_module = TkModelAccess::module(*m_model);
        const bool train_embeddings = m_model->config().train_embeddings;
        for (auto& p : m_module->named_parameters(true)) {
            p.value().set_requires_grad(p.key().rfind("embeddings.", 0) == 0 ? train_embeddings
                                                                             : true);
        }
        m_module->train(true);
    }

    TrainableKind kind() const noexcept override { return TrainableKind::Tk; }

    torch::Tensor score_batch(std::span<const TrainingExample> batch) override {
        const auto n = common_negatives(batch);
        const auto g = static_cast<std::int64_t>(n + 1);
        const auto& c = m_model->config();
        const auto& tok = m_model->tokenizer();
        std::vector<std::vector<std::int64_t>> queries, passages;
        queries.reserve(batch.size());
        for (const auto& e : batch) {
            queries.push_back(tok.encode(e.query, static_cast<std::size_t>(c.max_query_length)));
        }
        for (auto text : passage_texts(batch, n)) {
            passages.push_back(tok.encode(text, static_cast<std::size_t>(c.max_passage_length)));
        }
        auto [q_ids, q_mask] = pack_tk(queries);
        auto [p_ids, p_mask] = pack_tk(passages);
        // Each query is contextualised once and paired with its 1 + n passages.
        auto q_hat = m_module->contextualize(q_ids, q_mask, false).repeat_interleave(g, 0);
        auto q_mask_r = q_mask.repeat_interleave(g, 0);
        auto p_hat = contextualize_by_length(passages, p_ids.size(1));
        auto scores = m_module->score_representations(q_hat, q_mask_r, p_hat, p_mask);
        return scores.view({static_cast<std::int64_t>(batch.size()), g});
    }

    /// p̂ [N, L, D] of `seqs` as one padded batch gives it (L = the longest, rows of padding
    /// zero), computed in length-sorted groups of kGroup, each padded only to its own longest:
    /// a passage's rows do not depend on the others in its batch, so this only saves the
    /// padding's share of the projections (ordinary autograd ops: pad, cat, index_select).
    torch::Tensor contextualize_by_length(const std::vector<std::vector<std::int64_t>>& seqs,
                                          std::int64_t l) {
        constexpr std::size_t kGroup = 16;
        const std::size_t n = seqs.size();
        if (n <= kGroup) {
            auto [ids, mask] = pack_tk(seqs);
            return m_module->contextualize(ids, mask, true);
        }
        std::vector<std::int64_t> order(n);
        for (std::size_t i = 0; i < n; ++i) order[i] = static_cast<std::int64_t>(i);
        std::stable_sort(order.begin(), order.end(), [&](std::int64_t a, std::int64_t b) {
            return seqs[static_cast<std::size_t>(a)].size() <
                   seqs[static_cast<std::size_t>(b)].size();
        });
        std::vector<torch::Tensor> parts;
        for (std::size_t begin = 0; begin < n; begin += kGroup) {
            std::vector<std::span<const std::int64_t>> group;
            for (std::size_t i = begin; i < std::min(n, begin + kGroup); ++i) {
                group.emplace_back(seqs[static_cast<std::size_t>(order[i])]);
            }
            auto [ids, mask] = pack_token_ids(group);
            auto h = m_module->contextualize(ids, mask, true);  // [G, Lg, D]
            parts.push_back(torch::constant_pad_nd(h, {0, 0, 0, l - h.size(1)}));
        }
        std::vector<std::int64_t> inverse(n);
        for (std::size_t i = 0; i < n; ++i) inverse[static_cast<std::size_t>(order[i])] =
                                               static_cast<std::int64_t>(i);
        return torch::cat(parts, 0).index_select(0, torch::tensor(inverse, torch::kInt64));
    }

    std::vector<ParamGroup> parameter_groups() override {
        std::vector<ParamGroup> groups;
        for (auto& p : m_module->named_parameters(true)) {
            if (!p.value().requires_grad()) continue;
            const auto& name = p.key();
            std::string group;
            if (name.rfind("embeddings.", 0) == 0) {
                group = "embeddings";
            } else if (name.rfind("contextualizer.", 0) == 0 || name == "mixer") {
                group = "contextualizer";
            } else {
                group = "kernels";
            }
            const bool no_decay = ends_with(name, ".bias") || name.find(".norm") != std::string::npos ||
                                  name == "mixer" || name == "nn_scaler";
            add_to_group(groups, group, no_decay, p.value());
        }
        sort_groups(groups, {"embeddings", "contextualizer", "kernels"});
        return groups;
    }

    std::vector<std::pair<std::string, torch::Tensor>> named_parameters() override {
        std::vector<std::pair<std::string, torch::Tensor>> out;
        for (auto& p : m_module->named_parameters(true)) out.emplace_back(p.key(), p.value());
        return out;
    }

    void set_training(bool training) override { m_module->train(training); }

    std::shared_ptr<const RerankStage> stage(std::size_t depth, std::size_t batch_size) override {
        TkStageOptions o;
        o.depth = depth;
        o.batch_size = batch_size;
        return make_tk_stage(std::shared_ptr<const TkModel>(m_model), o);
    }

    void save(const std::filesystem::path& dir) override { m_model->save(dir); }

private:
    std::shared_ptr<TkModel> m_model;
    TkModule m_module{nullptr};
};

// --------------------------------------------------------------------------------------- BERT

/// Padded ids, token types and mask [B, L] of encodings (pad id, type 0, mask 0).
struct BertInputs {
    torch::Tensor ids, types, mask;
};

BertInputs pad_bert(const std::vector<Encoding>& encs, std::int64_t pad_id) {
    std::size_t l = 1;
    for (const auto& e : encs) l = std::max(l, e.input_ids.size());
    const auto b = static_cast<std::int64_t>(encs.size());
    const auto len = static_cast<std::int64_t>(l);
    BertInputs in{torch::full({b, len}, pad_id, torch::kInt64), torch::zeros({b, len}, torch::kInt64),
                  torch::zeros({b, len}, torch::kInt64)};
    auto* pid = in.ids.data_ptr<std::int64_t>();
    auto* ptype = in.types.data_ptr<std::int64_t>();
    auto* pmask = in.mask.data_ptr<std::int64_t>();
    for (std::int64_t r = 0; r < b; ++r) {
        const auto& e = encs[static_cast<std::size_t>(r)];
        std::copy(e.input_ids.begin(), e.input_ids.end(), pid + r * len);
        std::copy(e.token_type_ids.begin(), e.token_type_ids.end(), ptype + r * len);
        std::fill_n(pmask + r * len, e.input_ids.size(), std::int64_t{1});
    }
    return in;
}

/// What BERT-CAT and BERT-DOT share: the model, its network, the tokenizer, dropout, saving.
class TrainableBert : public Trainable {
public:
    TrainableBert(std::shared_ptr<BertModel> model, std::shared_ptr<const WordPieceTokenizer> tok,
                  HfTokenizerSettings tokenizer_settings, const TrainableOptions& options)
        : m_model(std::move(model)), m_tokenizer(std::move(tok)),
          m_tokenizer_settings(std::move(tokenizer_settings)), m_options(options) {
        if (!m_model || !m_tokenizer) throw InvalidArgument("trainable BERT: null model/tokenizer");
        const auto& c = m_model->config();
        check_vocabulary_fits(*m_model, m_tokenizer->vocab(), "trainable BERT");
        m_net = BertModelAccess::net(*m_model);
        for (auto& p : m_net->named_parameters(true)) {
            // DistilBERT's sinusoidal positions are fixed (transformers freezes them).
            const bool fixed = (c.model_type == ModelType::DistilBert && c.sinusoidal_pos_embds &&
                                p.key() == "embeddings.position_embeddings.weight") ||
                               (options.freeze_word_embeddings &&
                                p.key() == "embeddings.word_embeddings.weight");
            p.value().set_requires_grad(!fixed);
        }
        if (options.dropout) {
            auto d = std::make_shared<BertDropout>();
            d->hidden = c.hidden_dropout_prob;
            d->attention = c.attention_probs_dropout_prob;
            d->classifier = c.effective_classifier_dropout();
            d->generator = at::detail::createCPUGenerator(options.seed);
            m_net->dropout = std::move(d);
        } else {
            m_net->dropout.reset();
        }
        m_positions = static_cast<std::size_t>(c.max_position_embeddings);
        m_net->train(true);
    }

    std::vector<ParamGroup> parameter_groups() override {
        std::vector<ParamGroup> groups;
        for (auto& p : m_net->named_parameters(true)) {
            if (!p.value().requires_grad()) continue;
            const auto& name = p.key();
            const bool encoder =
                name.rfind("embeddings.", 0) == 0 || name.rfind("encoder.", 0) == 0;
            const bool no_decay =
                ends_with(name, ".bias") || name.find("LayerNorm") != std::string::npos;
            add_to_group(groups, encoder ? "encoder" : "head", no_decay, p.value());
        }
        sort_groups(groups, {"encoder", "head"});
        return groups;
    }

    std::vector<std::pair<std::string, torch::Tensor>> named_parameters() override {
        std::vector<std::pair<std::string, torch::Tensor>> out;
        for (auto& p : m_net->named_parameters(true)) out.emplace_back(p.key(), p.value());
        return out;
    }

    /// Off: also refreshes the fused Q/K/V copies used by inference (see BertLayerImpl).
    void set_training(bool training) override {
        m_net->train(training);
        if (!training) m_net->refresh_fused();
    }

    void save(const std::filesystem::path& dir) override {
        m_net->refresh_fused();
        save_bert_checkpoint(*m_model, dir, DType::F32, &m_tokenizer->vocab());
        write_tokenizer_config(dir);
    }

protected:
    torch::Tensor hidden_states(const std::vector<Encoding>& encs) {
        auto in = pad_bert(encs, m_model->config().pad_token_id);
        return m_net->forward(in.ids, in.types, in.mask);
    }

    BertInputs inputs(const std::vector<Encoding>& encs) const {
        return pad_bert(encs, m_model->config().pad_token_id);
    }

    /// tokenizer_config.json with the settings the tokenizer was built with.
    void write_tokenizer_config(const std::filesystem::path& dir) const {
        const auto& o = m_tokenizer->options();
        nlohmann::ordered_json j;
        j["tokenizer_class"] = "BertTokenizer";
        j["do_lower_case"] = o.lowercase;
        if (o.strip_accents) {
            j["strip_accents"] = *o.strip_accents;
        } else {
            j["strip_accents"] = nullptr;
        }
        j["tokenize_chinese_chars"] = o.tokenize_chinese_chars;
        if (m_tokenizer_settings.model_max_length) {
            j["model_max_length"] = *m_tokenizer_settings.model_max_length;
        }
        j["unk_token"] = o.unk_token;
        j["sep_token"] = o.sep_token;
        j["pad_token"] = o.pad_token;
        j["cls_token"] = o.cls_token;
        j["mask_token"] = o.mask_token;
        AtomicFile f(dir / "tokenizer_config.json");
        f.write(j.dump(2));
        f.write("\n");
        f.commit();
    }

    std::shared_ptr<BertModel> m_model;
    BertNet m_net{nullptr};
    std::shared_ptr<const WordPieceTokenizer> m_tokenizer;
    HfTokenizerSettings m_tokenizer_settings;
    TrainableOptions m_options;
    std::size_t m_positions = 512;
};

class TrainableCat final : public TrainableBert {
public:
    TrainableCat(std::shared_ptr<BertModel> model, std::shared_ptr<const WordPieceTokenizer> tok,
                 HfTokenizerSettings settings, const TrainableOptions& options)
        : TrainableBert(std::move(model), std::move(tok), std::move(settings), options) {
        const auto labels = m_model->heads().num_labels;
        if (labels < 1) throw InvalidArgument("trainable BERT-CAT: the model has no classifier");
        m_label = labels == 1 ? 0 : 1;  // as CrossEncoderStage's automatic label
        m_max_length = std::min(options.max_length, m_positions);
        if (m_max_length < 3) throw InvalidArgument("trainable BERT-CAT: max_length < 3");
    }

    TrainableKind kind() const noexcept override { return TrainableKind::Cat; }

    torch::Tensor score_batch(std::span<const TrainingExample> batch) override {
        const auto n = common_negatives(batch);
        std::vector<Encoding> pairs;
        pairs.reserve(batch.size() * (n + 1));
        for (const auto& e : batch) {
            // Exactly as CrossEncoderStage::score_pairs encodes a pair.
            const auto q = m_tokenizer->encode_ids(e.query, m_max_length);
            auto add = [&](std::string_view passage) {
                auto ids = m_tokenizer->encode_ids(passage, m_max_length);
                pairs.push_back(m_tokenizer->encode_pair_ids(q, ids, m_max_length,
                                                             Truncation::PassageFirst));
            };
            add(e.positive);
            for (std::size_t j = 0; j < n; ++j) add(e.negatives[j]);
        }
        auto hidden = hidden_states(pairs);
        auto pooled = m_net->pool(hidden.select(1, 0));
        if (auto* d = m_net->active_dropout()) pooled = d->apply(pooled, d->classifier);
        auto logits = m_net->classify(pooled);
        return logits.select(1, m_label).view(
            {static_cast<std::int64_t>(batch.size()), static_cast<std::int64_t>(n + 1)});
    }

    std::shared_ptr<const RerankStage> stage(std::size_t depth, std::size_t batch_size) override {
        m_net->refresh_fused();
        CrossEncoderOptions o;
        o.depth = depth;
        o.batch_size = batch_size;
        o.max_length = m_max_length;
        o.truncation = Truncation::PassageFirst;
        return std::make_shared<CrossEncoderStage>(std::shared_ptr<const BertModel>(m_model),
                                                   m_tokenizer, o);
    }

private:
    std::int64_t m_label = 0;
    std::size_t m_max_length = 256;
};

class TrainableDot final : public TrainableBert {
public:
    TrainableDot(std::shared_ptr<BertModel> model, std::shared_ptr<const WordPieceTokenizer> tok,
                 HfTokenizerSettings settings, const TrainableOptions& options)
        : TrainableBert(std::move(model), std::move(tok), std::move(settings), options),
          m_pooling(parse_pooling(options.pooling)),
          m_similarity(parse_similarity(options.similarity)) {
        m_query_max = std::min(options.query_max_length, m_positions);
        m_passage_max = std::min(options.passage_max_length, m_positions);
        if (m_query_max < 2 || m_passage_max < 2) {
            throw InvalidArgument("trainable BERT-DOT: max lengths must be >= 2");
        }
    }

    TrainableKind kind() const noexcept override { return TrainableKind::Dot; }

    std::pair<torch::Tensor, torch::Tensor> encode_batch(
        std::span<const TrainingExample> batch) override {
        const auto n = common_negatives(batch);
        std::vector<std::string_view> queries;
        queries.reserve(batch.size());
        for (const auto& e : batch) queries.push_back(e.query);
        return {encode(queries, m_query_max), encode(passage_texts(batch, n), m_passage_max)};
    }

    torch::Tensor score_batch(std::span<const TrainingExample> batch) override {
        auto [q, p] = encode_batch(batch);
        const auto b = q.size(0);
        const auto g = p.size(0) / b;
        // scores[i][j] = q_i · p_{i·G + j}
        return torch::bmm(p.view({b, g, -1}), q.unsqueeze(2)).squeeze(2);
    }

    std::shared_ptr<const RerankStage> stage(std::size_t depth, std::size_t batch_size) override {
        m_net->refresh_fused();
        BiEncoderOptions o;
        o.pooling = m_pooling;
        o.similarity = m_similarity;
        o.batch_size = batch_size;
        o.query_max_length = m_query_max;
        o.passage_max_length = m_passage_max;
        auto encoder = std::make_shared<const BiEncoder>(std::shared_ptr<const BertModel>(m_model),
                                                         m_tokenizer, o);
        BiEncoderStageOptions so;
        so.depth = depth;
        return std::make_shared<BiEncoderStage>(std::move(encoder), so);
    }

private:
    /// Pooled (and for cosine L2-normalised) vectors [n, H] of `[CLS] text [SEP]` encodings.
    torch::Tensor encode(const std::vector<std::string_view>& texts, std::size_t max_length) {
        std::vector<Encoding> encs;
        encs.reserve(texts.size());
        for (auto t : texts) encs.push_back(m_tokenizer->encode(t, max_length));
        auto in = inputs(encs);
        auto hidden = m_net->forward(in.ids, in.types, in.mask);
        torch::Tensor v;
        if (m_pooling == Pooling::Cls) {
            v = hidden.select(1, 0);
        } else {
            auto m = in.mask.to(torch::kFloat32).unsqueeze(-1);
            v = (hidden * m).sum(1) / m.sum(1);
        }
        if (m_similarity == Similarity::Cosine) {
            v = v / v.norm(2, -1, true).clamp_min(std::numeric_limits<float>::min());
        }
        return v;
    }

    Pooling m_pooling;
    Similarity m_similarity;
    std::size_t m_query_max = 32;
    std::size_t m_passage_max = 200;
};

/// A cross-encoder from a checkpoint: its own head when it has one, else the encoder (and
/// pooler when present) with a new 1-label classifier (and pooler) initialised as transformers
/// does (normal(0, 0.02) weights, zero biases) from `seed`.
std::shared_ptr<BertModel> load_cat_model(const std::filesystem::path& dir, std::uint64_t seed) {
    BertCheckpointOptions ck;
    ck.heads = HeadSelection::Auto;
    auto loaded = load_bert_checkpoint(dir, ck);
    if (loaded.heads().num_labels > 0) return std::make_shared<BertModel>(std::move(loaded));
    HfConfig c = loaded.config();
    c.num_labels = 1;
    c.id2label = {"LABEL_0"};
    c.architectures = {c.model_type == ModelType::Bert ? "BertForSequenceClassification"
                                                       : "DistilBertForSequenceClassification"};
    auto model = std::make_shared<BertModel>(c, BertHeads{true, 1}, seed);
    for (const auto& p : loaded.parameters()) model->set_parameter(p.name, loaded.parameter(p.name));
    return model;
}

}  // namespace

std::unique_ptr<Trainable> make_trainable_tk(std::shared_ptr<TkModel> model) {
    return std::make_unique<TrainableTk>(std::move(model));
}

std::unique_ptr<Trainable> make_trainable_bert(std::shared_ptr<BertModel> model,
                                               std::shared_ptr<const WordPieceTokenizer> tokenizer,
                                               const TrainableOptions& options) {
    switch (options.kind) {
        case TrainableKind::Cat:
            return std::make_unique<TrainableCat>(std::move(model), std::move(tokenizer),
                                                  HfTokenizerSettings{}, options);
        case TrainableKind::Dot:
            return std::make_unique<TrainableDot>(std::move(model), std::move(tokenizer),
                                                  HfTokenizerSettings{}, options);
        case TrainableKind::Tk: break;
    }
    throw InvalidArgument("make_trainable_bert: kind must be Cat or Dot");
}

std::unique_ptr<Trainable> load_trainable(const std::filesystem::path& dir,
                                          const TrainableOptions& options) {
    if (options.kind == TrainableKind::Tk) {
        return make_trainable_tk(std::make_shared<TkModel>(TkModel::load(dir)));
    }
    // Validate the cheap options before loading weights.
    if (options.kind == TrainableKind::Dot) {
        (void)parse_pooling(options.pooling);
        (void)parse_similarity(options.similarity);
    }
    auto tokenizer =
        std::make_shared<const WordPieceTokenizer>(WordPieceTokenizer::from_folder(dir));
    auto settings = load_hf_tokenizer_settings(dir);
    if (options.kind == TrainableKind::Cat) {
        return std::make_unique<TrainableCat>(load_cat_model(dir, options.seed),
                                              std::move(tokenizer), std::move(settings), options);
    }
    BertCheckpointOptions ck;
    ck.heads = HeadSelection::EncoderOnly;
    auto model = std::make_shared<BertModel>(load_bert_checkpoint(dir, ck));
    return std::make_unique<TrainableDot>(std::move(model), std::move(tokenizer),
                                          std::move(settings), options);
}

}  // namespace plumb::rerank::detail
