#include "rerank/bert_init.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>
#include <vector>

#include "plugin/atomic_directory.hpp"
#include "plugin/error.hpp"
#include "plugin/text_io.hpp"
#include "rerank/bert.hpp"
#include "rerank/bert_checkpoint.hpp"

namespace plumb::rerank {

namespace {

/// Byte length of the UTF-8 sequence starting with `lead` (the words are valid UTF-8: the
/// basic tokenizer rejects anything else).
std::size_t utf8_length(unsigned char lead) noexcept {
    if (lead < 0x80) return 1;
    if ((lead >> 5) == 0x6) return 2;
    if ((lead >> 4) == 0xE) return 3;
    return 4;
}

/// Code point of the sequence at `s` (length `n`), for ordering characters.
std::uint32_t code_point(std::string_view s) noexcept {
    const auto b = [&](std::size_t i) { return static_cast<unsigned char>(s[i]); };
    switch (s.size()) {
        case 1: return b(0);
        case 2: return ((b(0) & 0x1Fu) << 6) | (b(1) & 0x3Fu);
        case 3: return ((b(0) & 0x0Fu) << 12) | ((b(1) & 0x3Fu) << 6) | (b(2) & 0x3Fu);
        default:
            return ((b(0) & 0x07u) << 18) | ((b(1) & 0x3Fu) << 12) | ((b(2) & 0x3Fu) << 6) |
                   (b(3) & 0x3Fu);
    }
}

}  // namespace

WordPieceVocabBuilder::WordPieceVocabBuilder(WordPieceVocabOptions options)
    : m_options(std::move(options)), m_basic(m_options.tokenizer) {}

void WordPieceVocabBuilder::add_text(std::string_view text) {
    for (auto& w : m_basic.tokenize(text)) ++m_counts[std::move(w)];
}

Vocab WordPieceVocabBuilder::build() const {
    const auto& t = m_options.tokenizer;
    std::vector<std::string> tokens = {t.pad_token, t.unk_token, t.cls_token, t.sep_token,
                                       t.mask_token};
    std::set<std::string> listed(tokens.begin(), tokens.end());
    // Characters of every counted word (also of words below min_count: they must stay
    // representable), ordered by code point.
    std::set<std::pair<std::uint32_t, std::string>> chars;
    for (const auto& [word, count] : m_counts) {
        (void)count;
        for (std::size_t i = 0; i < word.size();) {
            const std::size_t n = std::min(utf8_length(static_cast<unsigned char>(word[i])),
                                           word.size() - i);
            std::string_view c(word.data() + i, n);
            chars.emplace(code_point(c), std::string(c));
            i += n;
        }
    }
    for (const auto& c : chars) {
        if (listed.insert(c.second).second) tokens.push_back(c.second);
    }
    for (const auto& c : chars) {
        std::string piece = "##" + c.second;
        if (listed.insert(piece).second) tokens.push_back(std::move(piece));
    }
    if (tokens.size() > m_options.max_size) {
        throw InvalidArgument(fmt::format(
            "WordPiece vocabulary: the {} special tokens and {} character pieces exceed the "
            "maximum size {}",
            5, tokens.size() - 5, m_options.max_size));
    }
    std::vector<std::pair<std::uint64_t, const std::string*>> words;
    words.reserve(m_counts.size());
    for (const auto& [word, count] : m_counts) {
        if (count >= m_options.min_count && !listed.contains(word)) words.emplace_back(count, &word);
    }
    std::sort(words.begin(), words.end(), [](const auto& a, const auto& b) {
        return a.first != b.first ? a.first > b.first : *a.second < *b.second;
    });
    for (const auto& w : words) {
        if (tokens.size() >= m_options.max_size) break;
        tokens.push_back(*w.second);
    }
    return Vocab(std::move(tokens));
}

HfConfig make_bert_init_config(const BertInitOptions& options, std::int64_t vocab_size) {
    HfConfig c;
    c.model_type = ModelType::Bert;
    c.vocab_size = vocab_size;
    c.hidden_size = options.hidden;
    c.num_hidden_layers = options.layers;
    c.num_attention_heads = options.heads;
    c.intermediate_size = options.intermediate;
    c.max_position_embeddings = options.max_positions;
    c.pad_token_id = 0;
    c.architectures = {"BertModel"};
    c.validate("bert-init");
    return c;
}

BertInitSummary write_bert_init(const std::filesystem::path& dir, const Vocab& vocab,
                                const BertInitOptions& options,
                                const WordPieceOptions& tokenizer) {
    if (vocab.size() == 0 || vocab.token(0) != tokenizer.pad_token) {
        throw InvalidArgument("bert-init: the vocabulary's first token must be " +
                              tokenizer.pad_token + " (the pad id 0)");
    }
    for (const auto* special : {&tokenizer.unk_token, &tokenizer.cls_token, &tokenizer.sep_token}) {
        if (!vocab.contains(*special)) {
            throw InvalidArgument("bert-init: the vocabulary lacks " + *special);
        }
    }
    BertInitSummary s;
    s.config = make_bert_init_config(options, static_cast<std::int64_t>(vocab.size()));
    s.vocab_size = vocab.size();
    BertModel model(s.config, BertHeads{}, options.seed);
    if (!(options.word_std > 0) || !std::isfinite(options.word_std)) {
        throw InvalidArgument("bert-init: word_std must be > 0");
    }
    if (options.word_std != 0.02) {
        // Redrawn N(0, word_std²) from their own generator (the other weights stay those of
        // the seed); the pad row stays 0 as transformers' padding_idx row.
        const auto h = static_cast<std::size_t>(s.config.hidden_size);
        std::vector<float> w(vocab.size() * h);
        std::mt19937_64 rng(options.seed ^ 0x776f7264ULL);  // "word"
        std::normal_distribution<double> dist(0.0, options.word_std);
        for (std::size_t i = h; i < w.size(); ++i) w[i] = static_cast<float>(dist(rng));
        model.set_parameter("embeddings.word_embeddings.weight", w);
    }
    for (const auto& p : model.parameters()) {
        std::size_t n = 1;
        for (auto d : p.shape) n *= static_cast<std::size_t>(d);
        s.parameters += n;
    }
    AtomicDirectory out(dir);
    save_bert_checkpoint(model, out.path(), DType::F32, &vocab);
    nlohmann::ordered_json j;
    j["tokenizer_class"] = "BertTokenizer";
    j["do_lower_case"] = tokenizer.lowercase;
    if (tokenizer.strip_accents) {
        j["strip_accents"] = *tokenizer.strip_accents;
    } else {
        j["strip_accents"] = nullptr;
    }
    j["tokenize_chinese_chars"] = tokenizer.tokenize_chinese_chars;
    j["model_max_length"] = options.max_positions;
    j["unk_token"] = tokenizer.unk_token;
    j["sep_token"] = tokenizer.sep_token;
    j["pad_token"] = tokenizer.pad_token;
    j["cls_token"] = tokenizer.cls_token;
    j["mask_token"] = tokenizer.mask_token;
    {
        AtomicFile f(out.path() / "tokenizer_config.json");
        f.write(j.dump(2));
        f.write("\n");
        f.commit();
    }
    out.commit();
    return s;
}

}  // namespace plumb::rerank
