#pragma once
/// \file train_data.hpp
/// Training and validation data for the trainers (Torch-free).
///
/// Sources (each one pass = one epoch, in file order; a TrainingStream shuffles):
///  - text triples: `query<TAB>positive<TAB>negative` per line (MS MARCO triples.train.*.tsv),
///    optionally gzip-compressed (.gz); extra negatives as further columns are accepted;
///  - id triples: `qid<TAB>pid+<TAB>pid-[<TAB>pid-...]` (MS MARCO qidpidtriples), the texts
///    resolved through a topics file and a DocumentSource (normally a plumb index);
///  - qrels + run: for every query of the topics with a relevant passage (grade >=
///    relevance_level) in the qrels, examples pair each relevant passage with negatives sampled
///    uniformly (seeded) from the run's top-`depth` passages that are not relevant (judged
///    non-relevant or unjudged).
/// Malformed lines are ParseErrors naming the file and line (or skipped and counted with
/// skip_bad); ids missing from the topics / document source are ParseErrors too (or skipped
/// with skip_bad). BOM, CRLF, empty texts and non-numeric ids are valid; lines are UTF-8
/// validated; blank lines are skipped silently. Gzip input is recognised by its magic bytes.
///
/// A TrainingStream draws examples from a source through a seeded shuffling buffer, over a
/// number of epochs, optionally keeping a deterministic fraction of the examples (EqualizeIR's
/// "20 % of the data") and applying query / passage transforms on the fly (rotation debiasing,
/// repeated noun phrases). Same seed and inputs -> same sequence of examples.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "plugin/document_source.hpp"
#include "plugin/types.hpp"

namespace plumb::eval {
class Qrels;
}
namespace plumb::debias {
struct ParseNode;
}

namespace plumb::rerank {

/// One training example: a query, one relevant passage and >= 1 non-relevant passages.
/// Ids are empty when the source has none (text triples).
struct TrainingExample {
    std::string qid;
    std::string query;
    std::string positive_id;
    std::string positive;
    std::vector<std::string> negative_ids;  ///< empty or parallel to negatives
    std::vector<std::string> negatives;     ///< at least one
};

/// A finite, re-readable sequence of examples (one pass = one epoch).
class ExampleSource {
public:
    virtual ~ExampleSource() = default;
    /// Starts pass number `epoch` (0-based) from the beginning. Sources that sample (qrels +
    /// run) draw differently per epoch, deterministically from their seed and the epoch.
    virtual void rewind(std::uint64_t epoch) = 0;
    /// The next example of the current pass, or nullopt at its end. Throws ParseError.
    virtual std::optional<TrainingExample> next() = 0;
    /// Examples skipped because of bad input (skip_bad) so far in this pass.
    virtual std::uint64_t skipped() const noexcept { return 0; }
    /// A short description for logs ("text triples /path (...)").
    virtual std::string describe() const = 0;
};

struct SourceOptions {
    bool skip_bad = false;  ///< skip (and count) malformed lines / unknown ids instead of throwing
};

/// `query<TAB>positive<TAB>negative[<TAB>negative...]`. Throws IoError when unreadable.
std::unique_ptr<ExampleSource> open_text_triples(const std::filesystem::path& path,
                                                 SourceOptions options = {});

/// `qid<TAB>pid+<TAB>pid-[<TAB>pid-...]`, texts from `topics` (read_topics format) and `docs`.
std::unique_ptr<ExampleSource> open_id_triples(const std::filesystem::path& path,
                                               const std::filesystem::path& topics,
                                               std::shared_ptr<const DocumentSource> docs,
                                               SourceOptions options = {});

struct QrelsSamplingOptions {
    std::size_t depth = 100;      ///< negatives come from the run's top-depth (0 = whole list)
    std::size_t negatives = 1;    ///< negatives per example (>= 1)
    long relevance_level = 1;     ///< minimum grade that counts as relevant
    std::uint64_t seed = 42;
    bool skip_bad = false;        ///< passages missing from `docs`: skipped instead of thrown
};

/// Examples from judged queries: each relevant passage paired with sampled run negatives.
/// Queries without relevant passages or without any negative in the top-depth are left out
/// (counted by describe()).
///
/// Details: one pass holds, for every topic (topics-file order) with relevant passages, one
/// example per relevant passage (qrels order). The run is ranked as trec_eval ranks it (score
/// descending, ties by docid descending) and cut at `depth`; the pool of negatives is the cut
/// list minus every passage judged >= relevance_level (negative grades and unjudged passages
/// are negatives). Each example draws min(negatives, pool size) passages uniformly without
/// replacement (partial Fisher-Yates, debias::uniform_below) from a generator seeded by
/// (seed, epoch, example number in the pass): deterministic, different per epoch, and with
/// the same number of examples in every pass. A query whose pool is smaller than `negatives`
/// gets all of its pool (>= 1), in sampled order. Texts are fetched from `docs` when an example
/// is served; a passage missing there is a ParseError naming the run file and line (negatives)
/// or the qrels file (positives); with skip_bad a missing negative is replaced by another draw
/// from the pool and an example left without positive or negatives is skipped (counted).
/// Throws IoError / ParseError from the topics, qrels and run readers;
/// InvalidArgument for a null `docs` or negatives == 0.
std::unique_ptr<ExampleSource> open_qrels_run(const std::filesystem::path& topics,
                                              const std::filesystem::path& qrels,
                                              const std::filesystem::path& run,
                                              std::shared_ptr<const DocumentSource> docs,
                                              QrelsSamplingOptions options = {});

/// Rewrites a text; `key` is a stable per-example-and-field number, so that transforms that
/// draw at random stay reproducible. TrainingStream passes
/// key = mix(mix(epoch, n), field), n = the example's number within its pass over the source
/// (before shuffling, so independent of the shuffle buffer), field = 0 for the query, 1 for the
/// positive, 2 + i for negative i (mix: a splitmix64-based hash). Transforms must be pure
/// functions of (text, key) and safe to call from several threads.
using TextTransform = std::function<std::string(std::string_view text, std::uint64_t key)>;

/// Rotation debiasing on the fly (FORMULAS.md Eq. 7): debias::rotate_passage with the seed
/// mix(seed, key), i.e. an offset r drawn uniformly from {1..n} per (seed, epoch, example,
/// field, text): reproducible, and a passage is rotated afresh in every epoch. Tokens are the
/// whitespace tokens, re-joined by single spaces (whitespace runs are normalised even when
/// r = 1).
TextTransform rotation_transform(std::uint64_t seed);

/// EqualizeIR's "repeated linguistic constructs" (paper 003 §2.2): every lowest-level noun
/// phrase of the query (an NP of the Link Grammar constituency parse, debias/constituency.hpp,
/// that contains no other NP) is repeated once in place, e.g. Link Grammar parses
/// "how long to boil an egg" with (NP an egg): -> "how long to boil an egg an egg". The output
/// is built from the query's own whitespace tokens (case and punctuation kept, single spaces):
/// parse words are aligned to the tokens, and an NP repeats the whole tokens it touches. The
/// query is returned unchanged when it is empty or longer than 64 tokens, when Link Grammar
/// finds no linkage, or when the parse cannot be aligned to the tokens. Results are cached
/// per query text (the parse costs milliseconds; the cache is cleared past 2^20 entries).
/// One parser per transform (copies share it); calls are serialised by its mutex. `key` is
/// unused (the result is a function of the text). Throws ConfigError when Link Grammar's
/// English dictionary cannot be opened.
TextTransform repeat_noun_phrases_transform();

/// The words repeated by repeat_noun_phrases_transform, exposed for tests and tools: rewrites
/// `query` given its parse tree (as returned by debias::ConstituencyParser::parse).
std::string repeat_noun_phrases(std::string_view query, const debias::ParseNode& tree);

struct StreamOptions {
    std::size_t shuffle_buffer = 10000;  ///< 0 or 1 = file order
    std::uint64_t seed = 42;
    std::uint64_t epochs = 1;            ///< passes over the source; 0 = unlimited
    double keep_fraction = 1.0;          ///< (0, 1]: keep this share of examples (seeded hash)
    TextTransform query_transform;       ///< applied to queries when set
    TextTransform passage_transform;     ///< applied to every passage when set
};

/// The stream of training examples seen by a trainer. Not thread-safe.
///
/// Shuffling: a buffer of `shuffle_buffer` examples is filled from the source; each next()
/// emits a uniformly chosen buffered example (std::mt19937_64 seeded with `seed`, continued
/// across epochs; debias::uniform_below) and refills its slot with the source's next example.
/// At the end of a pass the buffer is drained before the next pass starts, so every epoch
/// serves a permutation of that pass's examples and epochs never mix. keep_fraction keeps
/// example n of a pass when hash(seed, n) / 2^64 < keep_fraction: the same examples in every
/// epoch (for sources with a fixed order, i.e. all of the above). Transforms are applied to
/// the served example only (see TextTransform for the key). With epochs = 0 the stream still
/// ends when a whole pass yields no example.
class TrainingStream {
public:
    /// Throws InvalidArgument for a null source or keep_fraction outside (0, 1].
    TrainingStream(std::unique_ptr<ExampleSource> source, StreamOptions options = {});
    ~TrainingStream();
    TrainingStream(TrainingStream&&) noexcept;
    TrainingStream& operator=(TrainingStream&&) noexcept;

    /// The next example, or nullopt when all epochs are exhausted.
    std::optional<TrainingExample> next();
    /// Up to n examples (fewer only at the very end).
    std::vector<TrainingExample> next_batch(std::size_t n);
    /// Skips n examples exactly as if next() had been called n times (resume).
    void skip(std::uint64_t n);

    /// Epoch (0-based) of the last example served, or 0 before the first.
    std::uint64_t epoch() const noexcept;
    std::uint64_t served() const noexcept;  ///< examples returned (or skipped) so far
    const ExampleSource& source() const noexcept;

private:
    struct Impl;
    std::unique_ptr<Impl> m_impl;
};

/// A validation set: queries, their first-stage candidates with text (top-depth of a run,
/// run order), and the qrels to evaluate re-ranked lists with.
struct ValidationSet {
    std::vector<Query> queries;
    std::vector<RankedList> candidates;  ///< parallel to queries; texts filled
    std::shared_ptr<const eval::Qrels> qrels;
};

/// Loads topics, qrels and a run; keeps the queries that are in all three (a query is "in the
/// qrels" when it has any judgement), in byte-wise qid order, with the run's top-`depth`
/// candidates ranked as trec_eval ranks them (score descending, ties by docid descending;
/// depth 0 = the whole list), each with its run score as `score` and as a "run" trace entry
/// and its text from `docs` (a docid missing there is a ParseError naming the run file and
/// line). `max_queries` > 0 keeps the first that many queries. `qrels` holds all judgements
/// of the file. Throws IoError, ParseError.
ValidationSet load_validation(const std::filesystem::path& topics,
                              const std::filesystem::path& qrels,
                              const std::filesystem::path& run,
                              const DocumentSource& docs, std::size_t depth = 100,
                              std::size_t max_queries = 0);

}  // namespace plumb::rerank
