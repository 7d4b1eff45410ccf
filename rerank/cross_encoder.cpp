#include "rerank/cross_encoder.hpp"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "plugin/error.hpp"
#include "rerank/bert_checkpoint.hpp"
#include "rerank/torch_threads.hpp"

namespace plumb::rerank {

CrossEncoderStage::CrossEncoderStage(std::shared_ptr<const BertModel> model,
                                     std::shared_ptr<const WordPieceTokenizer> tokenizer,
                                     CrossEncoderOptions options)
    : m_model(std::move(model)), m_tokenizer(std::move(tokenizer)), m_options(std::move(options)) {
    if (!m_model || !m_tokenizer) throw InvalidArgument("CrossEncoderStage: null model/tokenizer");
    const auto labels = m_model->heads().num_labels;
    if (labels < 1) throw InvalidArgument("CrossEncoderStage: the model has no classifier head");
    m_label = m_options.label >= 0 ? m_options.label : (labels == 1 ? 0 : 1);
    if (m_label >= labels) {
        throw InvalidArgument("CrossEncoderStage: label " + std::to_string(m_label) +
                              " but the head has " + std::to_string(labels) + " labels");
    }
    if (m_options.log_softmax && labels < 2) {
        throw InvalidArgument("CrossEncoderStage: log_softmax needs a head with >= 2 labels");
    }
    if (m_model->precision() != m_options.precision) {
        throw InvalidArgument(std::string("CrossEncoderStage: the model computes in ") +
                              precision_name(m_model->precision()) + " but the options ask for " +
                              precision_name(m_options.precision) +
                              " (BertModel::set_precision before sharing the model)");
    }
    check_vocabulary_fits(*m_model, m_tokenizer->vocab(), "CrossEncoderStage");
    const auto positions = static_cast<std::size_t>(m_model->config().max_position_embeddings);
    m_options.max_length = std::min(m_options.max_length, positions);
    if (m_options.max_length < 3) throw InvalidArgument("CrossEncoderStage: max_length < 3");
}

CrossEncoderStage::~CrossEncoderStage() = default;

std::unique_ptr<CrossEncoderStage> CrossEncoderStage::from_folder(const std::filesystem::path& dir,
                                                                  CrossEncoderOptions options) {
    BertCheckpointOptions ck;
    ck.heads = HeadSelection::Classifier;
    auto loaded = std::make_shared<BertModel>(load_bert_checkpoint(dir, ck));
    loaded->set_precision(options.precision);  // int8: quantised from the fp32 checkpoint
    std::shared_ptr<const BertModel> model = std::move(loaded);
    auto tok = std::make_shared<const WordPieceTokenizer>(WordPieceTokenizer::from_folder(dir));
    return std::make_unique<CrossEncoderStage>(std::move(model), std::move(tok),
                                               std::move(options));
}

std::string CrossEncoderStage::name() const { return m_options.name; }
std::size_t CrossEncoderStage::depth() const { return m_options.depth; }

std::vector<float> CrossEncoderStage::score_encodings(std::span<const Encoding> pairs) const {
    TorchThreadsScope threads(m_options.threads);
    const auto labels = static_cast<std::size_t>(m_model->heads().num_labels);
    auto logits = m_model->logits(pairs, m_options.batch_size);
    std::vector<float> scores(pairs.size());
    for (std::size_t i = 0; i < pairs.size(); ++i) {
        const float* row = logits.data() + i * labels;
        float s = row[m_label];
        if (m_options.log_softmax) {
            float mx = *std::max_element(row, row + labels);
            double sum = 0;
            for (std::size_t j = 0; j < labels; ++j) sum += std::exp(double(row[j]) - mx);
            s = static_cast<float>(double(s) - mx - std::log(sum));
        }
        scores[i] = s;
    }
    return scores;
}

std::vector<float> CrossEncoderStage::score_pairs(std::string_view query,
                                                  std::span<const std::string_view> passages) const {
    const auto q = m_tokenizer->encode_ids(query, m_options.max_length);
    std::vector<Encoding> pairs;
    pairs.reserve(passages.size());
    for (auto p : passages) {
        // Tokenize no more of the passage than can fit (same prefix as full tokenization).
        auto ids = m_tokenizer->encode_ids(p, m_options.max_length);
        pairs.push_back(
            m_tokenizer->encode_pair_ids(q, ids, m_options.max_length, m_options.truncation));
    }
    return score_encodings(pairs);
}

std::vector<float> CrossEncoderStage::score(const Query& query,
                                            std::span<const Candidate> candidates) const {
    const auto n = std::min(m_options.depth, candidates.size());
    std::vector<std::string_view> texts;
    texts.reserve(n);
    for (std::size_t i = 0; i < n; ++i) texts.push_back(candidates[i].text);
    return score_pairs(query.text, texts);
}

void CrossEncoderStage::rerank(std::span<const Query> queries, std::span<RankedList> lists) const {
    if (queries.size() != lists.size()) {
        throw InvalidArgument(name() + ": " + std::to_string(queries.size()) + " queries but " +
                              std::to_string(lists.size()) + " lists");
    }
    // Queries are processed in groups of about kGroupPairs pairs: large enough for
    // length-grouped batches across queries, small enough to bound the memory of encodings.
    // int8 quantises each forward batch's activations with one scale (rerank/bert.hpp
    // Precision), so an int8 model scores each query's list in its own batches: a query's
    // scores then do not depend on the other queries handed over with it.
    constexpr std::size_t kGroupPairs = 4096;
    const std::size_t group_pairs = m_model->precision() == Precision::Int8 ? 1 : kGroupPairs;
    std::size_t first = 0;
    while (first < lists.size()) {
        std::vector<Encoding> pairs;
        std::vector<std::size_t> counts;
        std::size_t last = first;
        while (last < lists.size() && (last == first || pairs.size() < group_pairs)) {
            const auto q = m_tokenizer->encode_ids(queries[last].text, m_options.max_length);
            const auto n = std::min(m_options.depth, lists[last].candidates.size());
            counts.push_back(n);
            for (std::size_t j = 0; j < n; ++j) {
                auto ids =
                    m_tokenizer->encode_ids(lists[last].candidates[j].text, m_options.max_length);
                pairs.push_back(m_tokenizer->encode_pair_ids(q, ids, m_options.max_length,
                                                             m_options.truncation));
            }
            ++last;
        }
        auto scores = score_encodings(pairs);
        std::size_t offset = 0;
        for (std::size_t i = first; i < last; ++i) {
            const auto n = counts[i - first];
            apply_rerank_scores(lists[i], std::span<const float>(scores.data() + offset, n),
                                name());
            offset += n;
        }
        first = last;
    }
}


std::shared_ptr<const RerankStage> CrossEncoderStage::from_config(const nlohmann::json& c,
                                                                  StageContext& ctx) {
    const std::string where = "re-rank stage cat";
    check_keys(
        c,
        {"model", "depth", "name", "batch_size", "max_length", "label", "log_softmax", "threads",
         "quantize"},
        where);
    CrossEncoderOptions o;
    o.depth = config_positive_size(c, "depth", o.depth, where);
    o.batch_size = config_positive_size(c, "batch_size", o.batch_size, where);
    o.max_length = config_positive_size(c, "max_length", o.max_length, where);
    if (c.contains("label")) {
        if (!c["label"].is_number_integer()) {
            throw ConfigError(where + ": \"label\" must be an integer");
        }
        o.label = c["label"].get<std::int64_t>();
    }
    o.log_softmax = config_bool(c, "log_softmax", false, where);
    o.threads = static_cast<int>(config_size(c, "threads", 0, where));
    o.name = config_string(c, "name", o.name, where);
    if (c.contains("quantize")) {
        const auto& q = c["quantize"];
        if (!q.is_string() || (q != "fp32" && q != "int8")) {
            throw ConfigError(where + ": \"quantize\" must be \"fp32\" or \"int8\", got " +
                              q.dump());
        }
        o.precision = parse_precision(q.get<std::string>());
    }
    return from_folder(ctx.resolve(config_required_string(c, "model", where)), o);
}

}  // namespace plumb::rerank
