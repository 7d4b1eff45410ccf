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
/// with skip_bad). BOM, CRLF, empty texts and non-numeric ids are valid.
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
    std::size_t depth = 100;      ///< negatives come from the run's top-depth
    std::size_t negatives = 1;    ///< negatives per example
    long relevance_level = 1;     ///< minimum grade that counts as relevant
    std::uint64_t seed = 42;
    bool skip_bad = false;
};

/// Examples from judged queries: each relevant passage paired with sampled run negatives.
/// Queries without relevant passages or without any negative in the top-depth are left out
/// (counted by describe()).
std::unique_ptr<ExampleSource> open_qrels_run(const std::filesystem::path& topics,
                                              const std::filesystem::path& qrels,
                                              const std::filesystem::path& run,
                                              std::shared_ptr<const DocumentSource> docs,
                                              QrelsSamplingOptions options = {});

/// Rewrites a text; `key` is a stable per-example-and-field number (the trainer's example
/// counter mixed with the field), so that transforms that draw at random stay reproducible.
using TextTransform = std::function<std::string(std::string_view text, std::uint64_t key)>;

/// Rotation debiasing on the fly (FORMULAS.md Eq. 7, debias::rotate_passage): every passage
/// (positive and negatives) rotated by an offset drawn from `seed`, the epoch and the text.
TextTransform rotation_transform(std::uint64_t seed);

/// EqualizeIR's "repeated linguistic constructs" (paper 003 §2.2): each noun phrase of the
/// query (from the Link Grammar constituency parse, debias/constituency.hpp) is repeated once
/// in place ("cheap flights to rome" -> "cheap flights cheap flights to rome rome"). Queries
/// the parser cannot handle are returned unchanged.
TextTransform repeat_noun_phrases_transform();

struct StreamOptions {
    std::size_t shuffle_buffer = 10000;  ///< 0 or 1 = file order
    std::uint64_t seed = 42;
    std::uint64_t epochs = 1;            ///< passes over the source; 0 = unlimited
    double keep_fraction = 1.0;          ///< (0, 1]: keep this share of examples (seeded hash)
    TextTransform query_transform;       ///< applied to queries when set
    TextTransform passage_transform;     ///< applied to every passage when set
};

/// The stream of training examples seen by a trainer. Not thread-safe.
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

    std::uint64_t epoch() const noexcept;   ///< current epoch, 0-based
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

/// Loads topics, qrels and a run; keeps the queries that are in all three, with the run's
/// top-`depth` candidates (texts from `docs`; a docid missing there is a ParseError naming the
/// run file and line). `max_queries` > 0 keeps the first that many queries (byte-wise qid
/// order).
ValidationSet load_validation(const std::filesystem::path& topics,
                              const std::filesystem::path& qrels,
                              const std::filesystem::path& run,
                              const DocumentSource& docs, std::size_t depth = 100,
                              std::size_t max_queries = 0);

}  // namespace plumb::rerank
