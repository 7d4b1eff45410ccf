#pragma once
/// \file generator.hpp
/// Deterministic synthetic corpora: passages of Zipf-distributed pseudo-words, topics and graded
/// qrels such that BM25 retrieval is meaningful. The embedded default corpus and the benchmark
/// corpus (see index/README.md, "Synthetic corpora").
///
/// Model. Word ranks follow Zipf's law, P(rank r) ∝ 1/r^s over `vocab` pseudo-words (frequent
/// words are shorter, as in natural language). Each query owns a set of `topic_terms` mid- to
/// low-frequency "topic" words. Its relevant passages are ordinary background passages into which
/// topic words are planted: grade 3 passages receive every topic word (1–2 times each), grade 2
/// about two thirds of them, grade 1 about a third (at least one); `distractors` unjudged passages
/// receive one or two topic words (hard negatives). The query text is a subset of the
/// topic words plus, with probability `query_noise`, one frequent background word. BM25 therefore
/// ranks higher grades higher, with realistic misses.
///
/// Determinism. Everything derives from `seed` through std::mt19937_64 (whose output sequence the
/// C++ standard fixes) and plumb's own distributions (no std:: distributions, whose results differ
/// between standard libraries): the same configuration gives byte-identical files everywhere.
/// Passage i is generated from its own stream (seed, i), so passages can be produced in any order.
///
/// Pseudo-words are built from consonant–vowel syllables over letters that no Porter-stemmer rule
/// rewrites and that never form an English stop word, so the default analyzer (stop words +
/// Porter) keeps every word distinct: the vocabulary statistics survive analysis.
///
/// Extension. Later generators (planted biases) derive from CorpusGenerator and override the
/// virtual hooks (passage_text, query_text, plan) or post-process Document objects.

#include <cstdint>
#include <filesystem>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "index/corpus.hpp"
#include "plugin/progress.hpp"
#include "plugin/types.hpp"

namespace plumb::index {

/// Parameters of a synthetic corpus. Defaults: MS MARCO-like passage lengths (mean ~55 words).
struct GeneratorConfig {
    std::uint64_t passages = 10000;  ///< number of passages (ids "0" .. "passages-1")
    std::uint64_t queries = 100;     ///< number of topics (qids "1" .. "queries")
    std::uint64_t seed = 42;
    std::uint32_t vocab = 50000;   ///< vocabulary size (pseudo-words)
    double zipf_s = 1.0;           ///< Zipf exponent s: P(rank r) ∝ 1/r^s
    std::uint32_t min_words = 20;  ///< passage length range (words, inclusive)
    std::uint32_t max_words = 90;
    std::uint32_t topic_terms = 5;      ///< topic words per query
    std::uint32_t min_query_terms = 2;  ///< query length range (topic words, before noise)
    std::uint32_t max_query_terms = 4;
    double query_noise = 0.5;        ///< probability of one extra frequent word in a query
    std::uint32_t max_grade2 = 2;    ///< grade-2 passages per query: uniform in [0, max_grade2]
    std::uint32_t max_grade1 = 3;    ///< grade-1 passages per query: uniform in [0, max_grade1]
    std::uint32_t distractors = 6;   ///< unjudged passages per query planted with 1-2 topic words
    double topic_rank_min = 0.0005;  ///< topic-word ranks: log-uniform in
    double topic_rank_max = 0.05;    ///< [max(1, min*vocab), max*vocab]
    CorpusFormat format = CorpusFormat::Tsv;

    /// Throws InvalidArgument when a value is outside its domain.
    void validate() const;
};

/// One relevance judgment (TREC qrels line `qid 0 docid grade`).
struct Judgment {
    std::string qid;
    std::string docid;
    int grade = 0;
};

/// Samples ranks 1..n with P(r) ∝ 1/r^s by inverse CDF (binary search over a table of n
/// doubles). Deterministic across platforms.
class ZipfSampler {
public:
    ZipfSampler(std::uint32_t n, double s);
    /// A rank in [1, n].
    std::uint32_t operator()(std::mt19937_64& rng) const;
    /// P(rank r), r in [1, n].
    double probability(std::uint32_t r) const;
    std::uint32_t size() const noexcept { return static_cast<std::uint32_t>(m_cdf.size()); }

private:
    std::vector<double> m_cdf;  // m_cdf[r-1] = P(rank <= r)
};

/// Uniform double in [0, 1) from the top 53 bits of one draw.
double uniform01(std::mt19937_64& rng);
/// Uniform integer in [0, n) without modulo bias (rejection); n > 0.
std::uint64_t uniform_below(std::mt19937_64& rng, std::uint64_t n);

/// Paths and counts of a generated collection.
struct GeneratedCollection {
    std::filesystem::path corpus;  ///< DIR/corpus.tsv or DIR/corpus.jsonl
    std::filesystem::path topics;  ///< DIR/topics.tsv
    std::filesystem::path qrels;   ///< DIR/qrels.txt
    std::uint64_t passages = 0;
    std::uint64_t queries = 0;
    std::uint64_t judgments = 0;
    std::uint64_t corpus_bytes = 0;
};

/// Generates one synthetic collection. Construction builds the vocabulary and the query plan
/// (O(vocab + queries) memory); passages are produced on demand. Const methods are thread-safe.
class CorpusGenerator {
public:
    /// Throws InvalidArgument for an invalid configuration.
    explicit CorpusGenerator(GeneratorConfig config);
    virtual ~CorpusGenerator() = default;

    const GeneratorConfig& config() const noexcept { return m_config; }
    /// The pseudo-word of Zipf rank r (1-based).
    const std::string& word(std::uint32_t rank) const;
    /// Passage i (0-based), deterministic.
    Document passage(std::uint64_t i) const;
    /// All topics, in qid order.
    std::vector<Query> topics() const;
    /// All judgments, by query then grade (descending) then passage index.
    std::vector<Judgment> qrels() const;

    /// Writes DIR/corpus.{tsv,jsonl}, DIR/topics.tsv and DIR/qrels.txt, each atomically
    /// (creates DIR). Progress counts passages. When `cancel` is requested, stops and leaves no
    /// partial output (returns with passages < config().passages, nothing committed).
    /// Throws IoError.
    GeneratedCollection write(const std::filesystem::path& dir,
                              const ProgressCallback& progress = {},
                              const CancelToken* cancel = nullptr) const;

protected:
    /// A query's plan: topic words and judged passages.
    struct QueryPlan {
        std::string qid;
        std::vector<std::uint32_t> topic;                   ///< ranks of topic words
        std::vector<std::pair<std::uint64_t, int>> judged;  ///< (passage, grade)
    };
    /// Planted words of one passage for one query.
    struct Plant {
        std::uint32_t query = 0;
        int grade = 0;  ///< 1..3, or 0 for a distractor (unjudged, 1-2 topic words)
    };

    /// Background words of passage i (before planting), drawn from `rng`.
    virtual std::vector<std::uint32_t> passage_words(std::uint64_t i, std::mt19937_64& rng) const;
    /// Inserts topic words of the plants into `words` (ranks), at random positions.
    virtual void plant(const std::vector<Plant>& plants, std::vector<std::uint32_t>& words,
                       std::mt19937_64& rng) const;
    /// Query text of plan `q` (topic words + noise), drawn from `rng`. Called by topics(), never
    /// from the constructor, so overrides take effect.
    virtual std::string query_text(const QueryPlan& q, std::mt19937_64& rng) const;

    /// An independent stream for (domain, index): splitmix64 of the seed and both values.
    std::mt19937_64 stream(std::uint64_t domain, std::uint64_t index) const;
    std::string join(const std::vector<std::uint32_t>& ranks) const;

    const std::vector<QueryPlan>& plans() const noexcept { return m_plans; }
    const ZipfSampler& zipf() const noexcept { return m_zipf; }

private:
    void build_vocabulary();
    void build_plans();

    GeneratorConfig m_config;
    ZipfSampler m_zipf;
    std::vector<std::string> m_words;  // m_words[r-1] = word of rank r
    std::vector<QueryPlan> m_plans;
    std::unordered_map<std::uint64_t, std::vector<Plant>> m_plants;  // passage -> plants
};

}  // namespace plumb::index
