#include "rerank/train_data.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <random>
#include <unordered_map>
#include <utility>

#include "debias/constituency.hpp"
#include "debias/rotation.hpp"
#include "eval/qrels.hpp"
#include "eval/run.hpp"
#include "index/corpus.hpp"
#include "plugin/error.hpp"
#include "plugin/hash.hpp"
#include "plugin/text_io.hpp"

namespace plumb::rerank {

namespace fs = std::filesystem;

namespace {

// ------------------------------------------------------------------------------------------
// Hashing

using plumb::splitmix64;
std::uint64_t mix64(std::uint64_t x) noexcept { return splitmix64(x); }

/// Order-sensitive combination of two 64-bit values.
std::uint64_t mix(std::uint64_t a, std::uint64_t b) noexcept { return mix64(a ^ mix64(b)); }

// Line input: plumb::LineReader (plain or gzip-compressed; line end "\n" or "\r\n" removed, BOM
// of line 1 removed, 1-based line numbers).
std::unique_ptr<LineReader> open_lines(const fs::path& path) {
    return std::make_unique<LineReader>(path);
}

/// A recoverable problem with one line: a ParseError, or a skip with skip_bad.
struct LineError {
    std::string message;
};

void check_utf8(std::string_view line) {
    std::size_t bad = find_invalid_utf8(line);
    if (bad != std::string_view::npos) {
        throw LineError{"invalid UTF-8 at byte " + std::to_string(bad + 1)};
    }
}

/// Splits a triples line into >= 3 TAB-separated fields; `what` names the expected layout.
void split_triple(std::string_view line, const char* what, std::vector<std::string_view>& f) {
    check_utf8(line);
    split(line, '\t', f);
    if (f.size() < 3) {
        throw LineError{std::string("expected ") + what + ", found " + std::to_string(f.size()) +
                        (f.size() == 1 ? " field" : " fields")};
    }
}

bool is_blank(std::string_view line) { return trim(line).empty() && line.find('\t') == line.npos; }

// ------------------------------------------------------------------------------------------
// Triples files

/// What the triples formats share: a file read line by line, blank lines skipped, every other
/// line one example (parse(); a LineError is a ParseError naming the line, or a skipped and
/// counted line with skip_bad).
class TriplesFile : public ExampleSource {
public:
    void rewind(std::uint64_t) override { open(); }

    std::optional<TrainingExample> next() override {
        std::string_view line;
        while (m_lines->next(line)) {
            if (is_blank(line)) continue;
            try {
                return parse(line);
            } catch (const LineError& e) {
                if (!m_options.skip_bad)
                    throw ParseError(m_lines->name(), m_lines->line_number(), e.message);
                ++m_skipped;
            }
        }
        return std::nullopt;
    }

    std::uint64_t skipped() const noexcept override { return m_skipped; }

protected:
    TriplesFile(fs::path path, SourceOptions options)
        : m_path(std::move(path)), m_options(options) {}

    /// (Re)opens the file at its first line.
    void open() {
        m_lines = open_lines(m_path);
        m_skipped = 0;
    }
    /// The example of one non-blank line; throws LineError.
    virtual TrainingExample parse(std::string_view line) = 0;

    fs::path m_path;
    std::vector<std::string_view> m_fields;  ///< parse()'s scratch: the line's fields

private:
    SourceOptions m_options;
    std::unique_ptr<LineReader> m_lines;
    std::uint64_t m_skipped = 0;
};

// ------------------------------------------------------------------------------------------
// Text triples

class TextTriples final : public TriplesFile {
public:
    TextTriples(fs::path path, SourceOptions options) : TriplesFile(std::move(path), options) {
        open();
    }

    std::string describe() const override { return "text triples " + m_path.string(); }

private:
    TrainingExample parse(std::string_view line) override {
        split_triple(line, "query<TAB>positive<TAB>negative[<TAB>negative...]", m_fields);
        TrainingExample ex;
        ex.query.assign(m_fields[0]);
        ex.positive.assign(m_fields[1]);
        for (std::size_t i = 2; i < m_fields.size(); ++i) ex.negatives.emplace_back(m_fields[i]);
        return ex;
    }
};

// ------------------------------------------------------------------------------------------
// Id triples

std::unordered_map<std::string, std::string> topic_map(const fs::path& topics) {
    std::unordered_map<std::string, std::string> out;
    for (auto& q : index::read_topics(topics)) out.emplace(std::move(q.id), std::move(q.text));
    return out;
}

class IdTriples final : public TriplesFile {
public:
    IdTriples(fs::path path, const fs::path& topics, std::shared_ptr<const DocumentSource> docs,
              SourceOptions options)
        : TriplesFile(std::move(path), options),
          m_topics_name(topics.string()),
          m_docs(std::move(docs)) {
        if (!m_docs) throw InvalidArgument("open_id_triples: no document source");
        open();
        m_topics = topic_map(topics);
    }

    std::string describe() const override {
        return "id triples " + m_path.string() + " (topics " + m_topics_name + ", " +
               std::to_string(m_topics.size()) + " queries)";
    }

private:
    std::string id_field(std::string_view raw, const char* what) const {
        std::string_view id = trim(raw);
        if (id.empty()) throw LineError{std::string("missing ") + what};
        return std::string(id);
    }

    std::string passage(const std::string& pid) const {
        auto t = m_docs->text(pid);
        if (!t) throw LineError{"unknown passage id '" + pid + "' (not in the document source)"};
        return std::move(*t);
    }

    TrainingExample parse(std::string_view line) override {
        split_triple(line, "qid<TAB>pid+<TAB>pid-[<TAB>pid-...]", m_fields);
        TrainingExample ex;
        ex.qid = id_field(m_fields[0], "query id");
        auto q = m_topics.find(ex.qid);
        if (q == m_topics.end()) {
            throw LineError{"unknown query id '" + ex.qid + "' (not in " + m_topics_name + ")"};
        }
        ex.query = q->second;
        ex.positive_id = id_field(m_fields[1], "positive passage id");
        ex.positive = passage(ex.positive_id);
        for (std::size_t i = 2; i < m_fields.size(); ++i) {
            ex.negative_ids.push_back(id_field(m_fields[i], "negative passage id"));
            ex.negatives.push_back(passage(ex.negative_ids.back()));
        }
        return ex;
    }

    std::string m_topics_name;
    std::shared_ptr<const DocumentSource> m_docs;
    std::unordered_map<std::string, std::string> m_topics;
};

// ------------------------------------------------------------------------------------------
// Qrels + run

struct RankedDoc {
    std::string docid;
    std::uint64_t line = 0;
};

/// The run list of one query ranked as trec_eval ranks it (score descending, ties by docid
/// descending), cut at depth (0 = all).
std::vector<RankedDoc> rank_run_query(const eval::RunQuery& q, std::size_t depth,
                                      std::vector<double>* scores = nullptr) {
    std::vector<const eval::RunDoc*> docs;
    docs.reserve(q.docs.size());
    for (const auto& d : q.docs) docs.push_back(&d);
    std::stable_sort(docs.begin(), docs.end(), [&](const eval::RunDoc* a, const eval::RunDoc* b) {
        if (a->score != b->score) return a->score > b->score;
        return q.docid(*a) > q.docid(*b);
    });
    if (depth > 0 && docs.size() > depth) docs.resize(depth);
    std::vector<RankedDoc> out;
    out.reserve(docs.size());
    for (const auto* d : docs) {
        out.push_back({std::string(q.docid(*d)), d->line});
        if (scores) scores->push_back(d->score);
    }
    return out;
}

class QrelsRun final : public ExampleSource {
public:
    QrelsRun(const fs::path& topics, const fs::path& qrels, const fs::path& run,
             std::shared_ptr<const DocumentSource> docs, QrelsSamplingOptions options)
        : m_docs(std::move(docs)), m_options(options), m_qrels_name(qrels.string()) {
        if (!m_docs) throw InvalidArgument("open_qrels_run: no document source");
        if (m_options.negatives == 0) {
            throw InvalidArgument("open_qrels_run: negatives must be at least 1");
        }
        auto queries = index::read_topics(topics);
        auto judged = eval::Qrels::load(qrels);
        auto r = eval::read_run(run);
        m_run_name = r.name;
        std::unordered_map<std::string_view, const eval::RunQuery*> by_qid;
        for (const auto& q : r.queries) by_qid.emplace(q.qid, &q);
        for (auto& q : queries) {
            const eval::QueryQrels* qq = judged.find(q.id);
            std::vector<std::string> relevant;
            if (qq) {
                for (auto& [docid, grade] : qq->judgements()) {
                    if (grade >= m_options.relevance_level) relevant.push_back(std::move(docid));
                }
            }
            if (relevant.empty()) {
                ++m_no_relevant;
                continue;
            }
            QueryPool pool;
            auto it = by_qid.find(q.id);
            if (it != by_qid.end()) {
                for (auto& d : rank_run_query(*it->second, m_options.depth)) {
                    const long* g = qq->find(d.docid);
                    if (g && *g >= m_options.relevance_level) continue;
                    pool.negatives.push_back(std::move(d));
                }
            }
            if (pool.negatives.empty()) {
                ++m_no_negatives;
                continue;
            }
            pool.qid = std::move(q.id);
            pool.query = std::move(q.text);
            std::size_t query_index = m_pools.size();
            for (auto& docid : relevant) m_examples.push_back({query_index, std::move(docid)});
            m_pools.push_back(std::move(pool));
        }
    }

    void rewind(std::uint64_t epoch) override {
        m_epoch = epoch;
        m_pos = 0;
        m_skipped = 0;
    }

    std::optional<TrainingExample> next() override {
        while (m_pos < m_examples.size()) {
            const std::uint64_t n = m_pos++;
            const auto& item = m_examples[n];
            const auto& pool = m_pools[item.query];
            TrainingExample ex;
            ex.qid = pool.qid;
            ex.query = pool.query;
            ex.positive_id = item.positive;
            auto pos = m_docs->text(item.positive);
            if (!pos) {
                if (!m_options.skip_bad) {
                    throw ParseError(m_qrels_name, 0,
                                     "relevant passage '" + item.positive + "' of query '" +
                                         pool.qid + "' is not in the document source");
                }
                ++m_skipped;
                continue;
            }
            ex.positive = std::move(*pos);
            // Partial Fisher-Yates over the pool's indices, seeded per (seed, epoch, n).
            std::mt19937_64 gen(mix(mix(m_options.seed, m_epoch), n));
            std::vector<std::size_t> idx(pool.negatives.size());
            for (std::size_t i = 0; i < idx.size(); ++i) idx[i] = i;
            for (std::size_t i = 0; i < idx.size() && ex.negatives.size() < m_options.negatives;
                 ++i) {
                std::size_t j =
                    i + static_cast<std::size_t>(debias::uniform_below(gen, idx.size() - i));
                std::swap(idx[i], idx[j]);
                const auto& d = pool.negatives[idx[i]];
                auto text = m_docs->text(d.docid);
                if (!text) {
                    if (!m_options.skip_bad) {
                        throw ParseError(m_run_name, d.line,
                                         "passage '" + d.docid + "' is not in the document source");
                    }
                    continue;  // draw another one
                }
                ex.negative_ids.push_back(d.docid);
                ex.negatives.push_back(std::move(*text));
            }
            if (ex.negatives.empty()) {
                ++m_skipped;
                continue;
            }
            return ex;
        }
        return std::nullopt;
    }

    std::uint64_t skipped() const noexcept override { return m_skipped; }
    std::string describe() const override {
        return "qrels+run (" + m_qrels_name + ", " + m_run_name +
               "): " + std::to_string(m_pools.size()) + " queries, " +
               std::to_string(m_examples.size()) + " examples per epoch, depth " +
               std::to_string(m_options.depth) + ", " + std::to_string(m_options.negatives) +
               " negatives; left out: " + std::to_string(m_no_relevant) +
               " topics without relevant passages, " + std::to_string(m_no_negatives) +
               " without negatives in the top-depth";
    }

private:
    struct QueryPool {
        std::string qid;
        std::string query;
        std::vector<RankedDoc> negatives;  ///< non-relevant passages of the top-depth, rank order
    };
    struct Item {
        std::size_t query = 0;
        std::string positive;
    };
    std::shared_ptr<const DocumentSource> m_docs;
    QrelsSamplingOptions m_options;
    std::string m_qrels_name;
    std::string m_run_name;
    std::vector<QueryPool> m_pools;
    std::vector<Item> m_examples;
    std::uint64_t m_no_relevant = 0;
    std::uint64_t m_no_negatives = 0;
    std::uint64_t m_epoch = 0;
    std::size_t m_pos = 0;
    std::uint64_t m_skipped = 0;
};

// ------------------------------------------------------------------------------------------
// Noun phrases

/// Collects the lowest-level NPs (no NP below them) as [first, last] word indices; `next_word`
/// counts the words of the tree in order.
void collect_nps(const debias::ParseNode& node, std::size_t& next_word,
                 std::vector<std::pair<std::size_t, std::size_t>>& out, bool& has_np) {
    if (node.is_word()) {
        ++next_word;
        return;
    }
    const std::size_t first = next_word;
    bool below = false;
    for (const auto& c : node.children) collect_nps(c, next_word, out, below);
    const bool is_np = node.label == "NP";
    if (is_np && !below && next_word > first) out.emplace_back(first, next_word - 1);
    has_np = has_np || below || is_np;
}

void collect_words(const debias::ParseNode& node, std::vector<const std::string*>& out) {
    if (node.is_word()) {
        out.push_back(&node.word);
        return;
    }
    for (const auto& c : node.children) collect_words(c, out);
}

std::string ascii_lower(std::string_view s) {
    std::string out(s);
    for (auto& c : out) {
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    }
    return out;
}

struct NounPhraseState {
    debias::ConstituencyParser parser;
    std::mutex mutex;
    std::unordered_map<std::string, std::string> cache;
};

constexpr std::size_t kMaxNpTokens = 64;
constexpr std::size_t kMaxNpCache = std::size_t{1} << 20;

}  // namespace

// ------------------------------------------------------------------------------------------
// Sources

std::unique_ptr<ExampleSource> open_text_triples(const fs::path& path, SourceOptions options) {
    return std::make_unique<TextTriples>(path, options);
}

std::unique_ptr<ExampleSource> open_id_triples(const fs::path& path, const fs::path& topics,
                                               std::shared_ptr<const DocumentSource> docs,
                                               SourceOptions options) {
    return std::make_unique<IdTriples>(path, topics, std::move(docs), options);
}

std::unique_ptr<ExampleSource> open_qrels_run(const fs::path& topics, const fs::path& qrels,
                                              const fs::path& run,
                                              std::shared_ptr<const DocumentSource> docs,
                                              QrelsSamplingOptions options) {
    return std::make_unique<QrelsRun>(topics, qrels, run, std::move(docs), options);
}

// ------------------------------------------------------------------------------------------
// Transforms

TextTransform rotation_transform(std::uint64_t seed) {
    return [seed](std::string_view text, std::uint64_t key) {
        return debias::rotate_passage(mix(seed, key), text).text;
    };
}

std::string repeat_noun_phrases(std::string_view query, const debias::ParseNode& tree) {
    std::vector<std::string_view> tokens;
    split_ws(query, tokens);
    std::string unchanged(query);
    if (tokens.empty()) return unchanged;
    std::vector<std::string> lowered;
    lowered.reserve(tokens.size());
    for (auto t : tokens) lowered.push_back(ascii_lower(t));

    // Align the parse words to the whitespace tokens: a word matches at the current position
    // of the current token (Link Grammar splits punctuation and affixes off tokens), or else
    // at the start of the next token; a word matching nowhere is a spelling substitution
    // ("rome" parsed as "roe") and takes the next token whole.
    std::vector<const std::string*> words;
    collect_words(tree, words);
    std::vector<std::size_t> token_of(words.size());
    std::size_t ti = 0, ci = 0;
    for (std::size_t w = 0; w < words.size(); ++w) {
        const std::string& word = *words[w];
        if (ti < lowered.size() && ci > 0 && lowered[ti].compare(ci, word.size(), word) != 0) {
            ++ti;
            ci = 0;
        }
        if (ti >= lowered.size()) return unchanged;  // more words than the text holds
        token_of[w] = ti;
        if (lowered[ti].compare(ci, word.size(), word) == 0) {
            ci += word.size();
        } else {
            ci = lowered[ti].size();
        }
        if (ci >= lowered[ti].size()) {
            ++ti;
            ci = 0;
        }
    }

    std::vector<std::pair<std::size_t, std::size_t>> nps;  // word ranges
    std::size_t counter = 0;
    bool has_np = false;
    collect_nps(tree, counter, nps, has_np);
    // Token ranges, in text order, without overlaps (two NPs sharing a split token).
    std::vector<std::pair<std::size_t, std::size_t>> spans;
    for (auto [a, b] : nps) {
        std::size_t first = token_of[a], last = token_of[b];
        if (!spans.empty() && first <= spans.back().second) continue;
        spans.emplace_back(first, last);
    }
    std::string out;
    auto append = [&](std::size_t i) {
        if (!out.empty()) out += ' ';
        out.append(tokens[i]);
    };
    std::size_t s = 0;
    for (std::size_t i = 0; i < tokens.size(); ++i) {
        append(i);
        if (s < spans.size() && spans[s].second == i) {
            for (std::size_t j = spans[s].first; j <= i; ++j) append(j);
            ++s;
        }
    }
    return out;
}

TextTransform repeat_noun_phrases_transform() {
    auto state = std::make_shared<NounPhraseState>();
    return [state](std::string_view text, std::uint64_t) {
        std::string key(text);
        {
            std::lock_guard lock(state->mutex);
            auto it = state->cache.find(key);
            if (it != state->cache.end()) return it->second;
        }
        std::vector<std::string_view> tokens;
        split_ws(text, tokens);
        std::string out = key;
        if (!tokens.empty() && tokens.size() <= kMaxNpTokens) {
            debias::ParseNode tree;
            if (state->parser.parse(text, tree)) out = repeat_noun_phrases(text, tree);
        }
        std::lock_guard lock(state->mutex);
        if (state->cache.size() >= kMaxNpCache) state->cache.clear();
        state->cache.emplace(std::move(key), out);
        return out;
    };
}

// ------------------------------------------------------------------------------------------
// TrainingStream

struct TrainingStream::Impl {
    struct Pending {
        TrainingExample example;
        std::uint64_t epoch = 0;
        std::uint64_t index = 0;  ///< number within the pass over the source
    };

    std::unique_ptr<ExampleSource> source;
    StreamOptions options;
    std::mt19937_64 rng;
    std::size_t capacity = 1;
    std::vector<Pending> buffer;
    std::uint64_t epoch = 0;          ///< pass being read (= epoch of the last served example)
    std::uint64_t index_in_pass = 0;  ///< examples read from the source in this pass
    std::uint64_t kept_in_pass = 0;   ///< of which kept (keep_fraction)
    bool pass_done = false;
    bool finished = false;
    std::uint64_t served = 0;

    bool keep(std::uint64_t index) const noexcept {
        if (options.keep_fraction >= 1.0) return true;
        const std::uint64_t h = mix(mix(options.seed, 0x6b656570ULL /* "keep" */), index);
        return static_cast<double>(h >> 11) * 0x1.0p-53 < options.keep_fraction;
    }

    std::optional<Pending> pull() {
        while (auto ex = source->next()) {
            const std::uint64_t index = index_in_pass++;
            if (!keep(index)) continue;
            ++kept_in_pass;
            return Pending{std::move(*ex), epoch, index};
        }
        return std::nullopt;
    }

    std::optional<Pending> next_raw() {
        for (;;) {
            if (finished) return std::nullopt;
            while (!pass_done && buffer.size() < capacity) {
                auto p = pull();
                if (!p) {
                    pass_done = true;
                    break;
                }
                buffer.push_back(std::move(*p));
            }
            if (!buffer.empty()) {
                const std::size_t i =
                    buffer.size() == 1
                        ? 0
                        : static_cast<std::size_t>(debias::uniform_below(rng, buffer.size()));
                Pending out = std::move(buffer[i]);
                std::optional<Pending> refill;
                if (!pass_done) {
                    refill = pull();
                    if (!refill) pass_done = true;
                }
                if (refill) {
                    buffer[i] = std::move(*refill);
                } else {
                    if (i + 1 != buffer.size()) buffer[i] = std::move(buffer.back());
                    buffer.pop_back();
                }
                return out;
            }
            // The pass is over and drained.
            if (kept_in_pass == 0 || (options.epochs != 0 && epoch + 1 >= options.epochs)) {
                finished = true;
                return std::nullopt;
            }
            ++epoch;
            source->rewind(epoch);
            index_in_pass = 0;
            kept_in_pass = 0;
            pass_done = false;
        }
    }

    void transform(Pending& p) const {
        auto key = [&](std::uint64_t field) { return mix(mix(p.epoch, p.index), field); };
        auto& ex = p.example;
        if (options.query_transform) ex.query = options.query_transform(ex.query, key(0));
        if (options.passage_transform) {
            ex.positive = options.passage_transform(ex.positive, key(1));
            for (std::size_t i = 0; i < ex.negatives.size(); ++i) {
                ex.negatives[i] = options.passage_transform(ex.negatives[i], key(2 + i));
            }
        }
    }
};

TrainingStream::TrainingStream(std::unique_ptr<ExampleSource> source, StreamOptions options)
    : m_impl(std::make_unique<Impl>()) {
    if (!source) throw InvalidArgument("TrainingStream: no example source");
    if (!(options.keep_fraction > 0.0 && options.keep_fraction <= 1.0)) {
        throw InvalidArgument("TrainingStream: keep_fraction must be in (0, 1], got " +
                              std::to_string(options.keep_fraction));
    }
    m_impl->source = std::move(source);
    m_impl->options = std::move(options);
    m_impl->rng.seed(m_impl->options.seed);
    m_impl->capacity = std::max<std::size_t>(1, m_impl->options.shuffle_buffer);
    m_impl->buffer.reserve(std::min<std::size_t>(m_impl->capacity, 1 << 16));
    m_impl->source->rewind(0);
}

TrainingStream::~TrainingStream() = default;
TrainingStream::TrainingStream(TrainingStream&&) noexcept = default;
TrainingStream& TrainingStream::operator=(TrainingStream&&) noexcept = default;

std::optional<TrainingExample> TrainingStream::next() {
    auto p = m_impl->next_raw();
    if (!p) return std::nullopt;
    ++m_impl->served;
    m_impl->transform(*p);
    return std::move(p->example);
}

std::vector<TrainingExample> TrainingStream::next_batch(std::size_t n) {
    std::vector<TrainingExample> out;
    out.reserve(n);
    while (out.size() < n) {
        auto ex = next();
        if (!ex) break;
        out.push_back(std::move(*ex));
    }
    return out;
}

void TrainingStream::skip(std::uint64_t n) {
    for (std::uint64_t i = 0; i < n; ++i) {
        if (!m_impl->next_raw()) break;
        ++m_impl->served;
    }
}

std::uint64_t TrainingStream::epoch() const noexcept { return m_impl->epoch; }
std::uint64_t TrainingStream::served() const noexcept { return m_impl->served; }
const ExampleSource& TrainingStream::source() const noexcept { return *m_impl->source; }

// ------------------------------------------------------------------------------------------
// Validation

ValidationSet load_validation(const fs::path& topics, const fs::path& qrels, const fs::path& run,
                              const DocumentSource& docs, std::size_t depth,
                              std::size_t max_queries) {
    auto queries = index::read_topics(topics);
    auto judged = std::make_shared<eval::Qrels>(eval::Qrels::load(qrels));
    auto r = eval::read_run(run);
    std::unordered_map<std::string_view, const eval::RunQuery*> by_qid;
    for (const auto& q : r.queries) by_qid.emplace(q.qid, &q);

    std::vector<std::pair<Query, const eval::RunQuery*>> kept;
    for (auto& q : queries) {
        auto it = by_qid.find(q.id);
        if (it == by_qid.end() || !judged->find(q.id)) continue;
        kept.emplace_back(std::move(q), it->second);
    }
    std::sort(kept.begin(), kept.end(),
              [](const auto& a, const auto& b) { return a.first.id < b.first.id; });
    if (max_queries > 0 && kept.size() > max_queries) kept.resize(max_queries);

    ValidationSet out;
    out.qrels = judged;
    for (auto& [q, rq] : kept) {
        RankedList list;
        list.qid = q.id;
        std::vector<double> scores;
        auto ranked = rank_run_query(*rq, depth, &scores);
        for (std::size_t i = 0; i < ranked.size(); ++i) {
            auto text = docs.text(ranked[i].docid);
            if (!text) {
                throw ParseError(r.name, ranked[i].line,
                                 "passage '" + ranked[i].docid + "' is not in the document source");
            }
            Candidate c;
            c.docid = std::move(ranked[i].docid);
            c.score = static_cast<float>(scores[i]);
            c.text = std::move(*text);
            c.trace.push_back({"run", c.score});
            list.candidates.push_back(std::move(c));
        }
        out.queries.push_back(std::move(q));
        out.candidates.push_back(std::move(list));
    }
    return out;
}

}  // namespace plumb::rerank
