#include "index/generator.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <unordered_set>

#include "plugin/error.hpp"
#include "plugin/hash.hpp"
#include "plugin/text_io.hpp"

namespace plumb::index {

namespace fs = std::filesystem;

namespace {

// Stream domains: each kind of random decision has its own independent stream.
constexpr std::uint64_t kVocabDomain = 1;
constexpr std::uint64_t kPlanDomain = 2;
constexpr std::uint64_t kPassageDomain = 3;
constexpr std::uint64_t kQueryTextDomain = 4;

using plumb::splitmix64;

// Letters chosen so that no Porter / Porter2 suffix rule applies and no stop word can form:
// no 'e', 's', 'y', 'c', 'x', 'q'; words are (consonant vowel)+ final-consonant, so two vowels or
// two consonants are never adjacent ("ion", "ou", "ant", "ing", "ll" cannot occur), and the final
// consonant is never 'l', 'r' or 'n' ("-al", "-ful", "-ator", "-ion").
constexpr char kConsonants[] = "bdfghjklmnprtvwz";
constexpr char kVowels[] = "aiou";
constexpr char kFinals[] = "bdgkmptz";

template <class T>
void shuffle(std::vector<T>& v, std::mt19937_64& rng) {
    for (std::size_t i = v.size(); i > 1; --i) {
        std::size_t j = static_cast<std::size_t>(uniform_below(rng, i));
        std::swap(v[i - 1], v[j]);
    }
}

}  // namespace

double uniform01(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

std::uint64_t uniform_below(std::mt19937_64& rng, std::uint64_t n) {
    if (n == 0) throw InvalidArgument("uniform_below: n must be positive");
    // Rejection: accept draws below the largest multiple of n (unbiased, portable).
    const std::uint64_t limit =
        std::numeric_limits<std::uint64_t>::max() - std::numeric_limits<std::uint64_t>::max() % n;
    for (;;) {
        std::uint64_t x = rng();
        if (x < limit) return x % n;
    }
}

// ---------------------------------------------------------------------------------------------
// ZipfSampler
// ---------------------------------------------------------------------------------------------

ZipfSampler::ZipfSampler(std::uint32_t n, double s) {
    if (n == 0) throw InvalidArgument("Zipf sampler: n must be positive");
    if (!(s > 0.0)) throw InvalidArgument("Zipf sampler: exponent must be positive");
    m_cdf.resize(n);
    double sum = 0.0;
    for (std::uint32_t r = 1; r <= n; ++r) {
        // s == 1 avoids pow(), whose last bit may differ between math libraries.
        sum += s == 1.0 ? 1.0 / r : 1.0 / std::pow(static_cast<double>(r), s);
        m_cdf[r - 1] = sum;
    }
    for (double& c : m_cdf) c /= sum;
    m_cdf.back() = 1.0;
}

std::uint32_t ZipfSampler::operator()(std::mt19937_64& rng) const {
    double u = uniform01(rng);
    auto it = std::upper_bound(m_cdf.begin(), m_cdf.end(), u);
    if (it == m_cdf.end()) --it;  // unreachable: u < 1 = back()
    return static_cast<std::uint32_t>(it - m_cdf.begin()) + 1;
}

double ZipfSampler::probability(std::uint32_t r) const {
    if (r == 0 || r > m_cdf.size()) throw InvalidArgument("Zipf sampler: rank out of range");
    return r == 1 ? m_cdf[0] : m_cdf[r - 1] - m_cdf[r - 2];
}

// ---------------------------------------------------------------------------------------------
// GeneratorConfig
// ---------------------------------------------------------------------------------------------

void GeneratorConfig::validate() const {
    auto bad = [](const std::string& m) { throw InvalidArgument("generator: " + m); };
    if (passages == 0) bad("passages must be at least 1");
    if (vocab < 10) bad("vocab must be at least 10");
    if (vocab > 50'000'000) bad("vocab must be at most 50,000,000");
    if (!(zipf_s > 0.0 && zipf_s <= 5.0)) bad("zipf exponent must be in (0, 5]");
    if (min_words == 0 || max_words < min_words) bad("need 1 <= min_words <= max_words");
    if (max_words > 100'000) bad("max_words must be at most 100,000");
    if (topic_terms == 0 || topic_terms > vocab / 2) bad("topic_terms must be in [1, vocab/2]");
    if (min_query_terms == 0 || max_query_terms < min_query_terms)
        bad("need 1 <= min_query_terms <= max_query_terms");
    if (!(query_noise >= 0.0 && query_noise <= 1.0)) bad("query_noise must be in [0, 1]");
    if (queries > 10'000'000) bad("queries must be at most 10,000,000");
    if (!(topic_rank_min > 0.0 && topic_rank_min <= topic_rank_max && topic_rank_max <= 1.0))
        bad("need 0 < topic_rank_min <= topic_rank_max <= 1");
}

// ---------------------------------------------------------------------------------------------
// CorpusGenerator
// ---------------------------------------------------------------------------------------------

CorpusGenerator::CorpusGenerator(GeneratorConfig config)
    : m_config((config.validate(), config)), m_zipf(config.vocab, config.zipf_s) {
    build_vocabulary();
    build_plans();
}

std::mt19937_64 CorpusGenerator::stream(std::uint64_t domain, std::uint64_t index) const {
    std::uint64_t x = splitmix64(m_config.seed);
    x = splitmix64(x ^ splitmix64(domain));
    x = splitmix64(x ^ index);
    return std::mt19937_64(x);
}

void CorpusGenerator::build_vocabulary() {
    auto rng = stream(kVocabDomain, 0);
    std::unordered_set<std::string> seen;
    seen.reserve(m_config.vocab * 2);
    m_words.reserve(m_config.vocab);
    std::string w;
    for (std::uint32_t r = 1; r <= m_config.vocab; ++r) {
        // Frequent words are short (Zipf's law of abbreviation); capacities 32,768 / 2.1 M /
        // 134 M words for 2 / 3 / 4 syllables keep rejections rare.
        std::size_t syllables = r <= 3000 ? 2 : r <= 300'000 ? 3 : 4;
        for (;;) {
            w.clear();
            for (std::size_t k = 0; k < syllables; ++k) {
                w += kConsonants[uniform_below(rng, sizeof kConsonants - 1)];
                w += kVowels[uniform_below(rng, sizeof kVowels - 1)];
            }
            w += kFinals[uniform_below(rng, sizeof kFinals - 1)];
            if (seen.insert(w).second) break;
        }
        m_words.push_back(w);
    }
}

void CorpusGenerator::build_plans() {
    const auto& c = m_config;
    // Topic words: log-uniform ranks in [lo, hi], mid-frequency words.
    double hi = std::floor(std::max(1.0, c.topic_rank_max * c.vocab));
    double lo = std::floor(std::min(hi, std::max(1.0, c.topic_rank_min * c.vocab)));
    if (hi - lo + 1 < 2.0 * c.topic_terms) {  // tiny vocabularies: widen to fit distinct words
        hi = std::min<double>(c.vocab, lo + 2.0 * c.topic_terms);
        if (hi - lo + 1 < c.topic_terms) lo = 1;
    }
    m_plans.reserve(c.queries);
    for (std::uint64_t q = 0; q < c.queries; ++q) {
        auto rng = stream(kPlanDomain, q);
        QueryPlan plan;
        plan.qid = std::to_string(q + 1);
        while (plan.topic.size() < c.topic_terms) {
            auto r =
                static_cast<std::uint32_t>(lo * std::exp(uniform01(rng) * std::log((hi + 1) / lo)));
            r = std::clamp<std::uint32_t>(r, 1, static_cast<std::uint32_t>(hi));
            if (std::find(plan.topic.begin(), plan.topic.end(), r) == plan.topic.end())
                plan.topic.push_back(r);
        }
        std::vector<int> grades{3};
        for (auto n = uniform_below(rng, c.max_grade2 + 1); n > 0; --n) grades.push_back(2);
        for (auto n = uniform_below(rng, c.max_grade1 + 1); n > 0; --n) grades.push_back(1);
        for (auto n = c.distractors; n > 0; --n) grades.push_back(0);
        if (grades.size() > c.passages) grades.resize(c.passages);
        std::vector<std::uint64_t> used;
        for (int g : grades) {
            std::uint64_t p;
            do {
                p = uniform_below(rng, c.passages);
            } while (std::find(used.begin(), used.end(), p) != used.end());
            used.push_back(p);
            if (g > 0) plan.judged.emplace_back(p, g);
            m_plants[p].push_back(Plant{static_cast<std::uint32_t>(q), g});
        }
        std::sort(plan.judged.begin(), plan.judged.end(), [](const auto& a, const auto& b) {
            return a.second != b.second ? a.second > b.second : a.first < b.first;
        });
        m_plans.push_back(std::move(plan));
    }
}

const std::string& CorpusGenerator::word(std::uint32_t rank) const {
    if (rank == 0 || rank > m_words.size()) throw InvalidArgument("generator: rank out of range");
    return m_words[rank - 1];
}

std::string CorpusGenerator::join(const std::vector<std::uint32_t>& ranks) const {
    std::string out;
    out.reserve(ranks.size() * 8);
    for (std::size_t k = 0; k < ranks.size(); ++k) {
        if (k) out += ' ';
        out += m_words[ranks[k] - 1];
    }
    return out;
}

std::vector<std::uint32_t> CorpusGenerator::passage_words(std::uint64_t,
                                                          std::mt19937_64& rng) const {
    const auto& c = m_config;
    auto len =
        c.min_words + static_cast<std::uint32_t>(uniform_below(rng, c.max_words - c.min_words + 1));
    std::vector<std::uint32_t> words(len);
    for (auto& w : words) w = m_zipf(rng);
    return words;
}

void CorpusGenerator::plant(const std::vector<Plant>& plants, std::vector<std::uint32_t>& words,
                            std::mt19937_64& rng) const {
    for (const Plant& p : plants) {
        std::vector<std::uint32_t> topic = m_plans[p.query].topic;
        std::vector<std::uint32_t> insert;
        const std::size_t t = topic.size();
        if (p.grade >= 3) {
            for (auto w : topic)
                for (auto n = 1 + uniform_below(rng, 2); n > 0; --n) insert.push_back(w);
        } else {
            shuffle(topic, rng);
            std::size_t keep = p.grade == 2   ? (2 * t + 2) / 3
                               : p.grade == 1 ? std::max<std::size_t>(1, t / 3)
                                              : 1 + uniform_below(rng, std::min<std::size_t>(2, t));
            insert.assign(topic.begin(), topic.begin() + static_cast<std::ptrdiff_t>(keep));
        }
        for (auto w : insert) {
            auto pos = uniform_below(rng, words.size() + 1);
            words.insert(words.begin() + static_cast<std::ptrdiff_t>(pos), w);
        }
    }
}

Document CorpusGenerator::passage(std::uint64_t i) const {
    if (i >= m_config.passages) throw InvalidArgument("generator: passage index out of range");
    auto rng = stream(kPassageDomain, i);
    auto words = passage_words(i, rng);
    if (auto it = m_plants.find(i); it != m_plants.end()) plant(it->second, words, rng);
    Document doc;
    doc.id = std::to_string(i);
    doc.text = join(words);
    return doc;
}

std::string CorpusGenerator::query_text(const QueryPlan& q, std::mt19937_64& rng) const {
    const auto& c = m_config;
    std::vector<std::uint32_t> topic = q.topic;
    shuffle(topic, rng);
    auto n = c.min_query_terms + uniform_below(rng, c.max_query_terms - c.min_query_terms + 1);
    n = std::min<std::uint64_t>(n, topic.size());
    topic.resize(static_cast<std::size_t>(n));
    if (uniform01(rng) < c.query_noise) {
        auto pos = uniform_below(rng, topic.size() + 1);
        topic.insert(topic.begin() + static_cast<std::ptrdiff_t>(pos), m_zipf(rng));
    }
    return join(topic);
}

std::vector<Query> CorpusGenerator::topics() const {
    std::vector<Query> out;
    out.reserve(m_plans.size());
    for (std::size_t q = 0; q < m_plans.size(); ++q) {
        auto rng = stream(kQueryTextDomain, q);
        out.push_back(Query{m_plans[q].qid, query_text(m_plans[q], rng)});
    }
    return out;
}

std::vector<Judgment> CorpusGenerator::qrels() const {
    std::vector<Judgment> out;
    for (const auto& plan : m_plans)
        for (const auto& [p, g] : plan.judged)
            out.push_back(Judgment{plan.qid, std::to_string(p), g});
    return out;
}

GeneratedCollection CorpusGenerator::write(const fs::path& dir, const ProgressCallback& progress,
                                           const CancelToken* cancel) const {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) throw IoError(dir.string() + ": cannot create directory: " + ec.message());

    GeneratedCollection out;
    const bool jsonl = m_config.format == CorpusFormat::Jsonl;
    out.corpus = dir / (jsonl ? "corpus.jsonl" : "corpus.tsv");
    out.topics = dir / "topics.tsv";
    out.qrels = dir / "qrels.txt";

    AtomicFile corpus(out.corpus);
    std::string line;
    const std::uint64_t n = m_config.passages;
    for (std::uint64_t i = 0; i < n; ++i) {
        if ((i & 4095) == 0) {
            if (cancel && cancel->requested()) return out;  // AtomicFile discards the temp file
            if (progress) progress(i, n);
        }
        Document doc = passage(i);
        if (jsonl) {
            nlohmann::json obj{{"_id", doc.id}, {"title", doc.title}, {"text", doc.text}};
            line = obj.dump();
        } else {
            line = doc.id;
            line += '\t';
            line += doc.text;
        }
        line += '\n';
        corpus.write(line);
        out.corpus_bytes += line.size();
        ++out.passages;
    }
    if (progress) progress(n, n);

    AtomicFile topics(out.topics);
    for (const Query& q : this->topics()) {
        topics.write(q.id + '\t' + q.text + '\n');
        ++out.queries;
    }
    AtomicFile qrels(out.qrels);
    for (const Judgment& j : this->qrels()) {
        qrels.write(j.qid + " 0 " + j.docid + ' ' + std::to_string(j.grade) + '\n');
        ++out.judgments;
    }
    corpus.commit();
    topics.commit();
    qrels.commit();
    return out;
}

}  // namespace plumb::index
