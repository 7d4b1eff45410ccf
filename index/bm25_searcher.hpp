#pragma once
/// \file bm25_searcher.hpp
/// Exact BM25 retrieval over a PassageIndex (Lucene++ postings, plumb's exact document lengths).
///
/// Score of document d for a query (a bag of analysed terms; a term occurring qtf times counts
/// qtf times, like Anserini's bag-of-words queries):
///
///     score(q, d) = sum_{t in q} qtf(t) * idf(t) * tf(t,d) * (k1 + 1)
///                                          / (tf(t,d) + k1 * (1 - b + b * dl(d) / avgdl))
///     idf(t)      = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5))
///
/// with N the number of documents, df(t) the number of documents containing t, dl(d) the exact
/// number of analysed tokens of d (not Lucene 3's lossy one-byte norm), avgdl = sum dl / N.
/// Arithmetic is single precision; per-term contributions (qtf * idf in float, times the tf part)
/// are summed in one canonical term order (score upper bound descending, ties by first
/// occurrence in the query), identically on every algorithm path.
///
/// Ranking: score descending, ties broken by external document id ascending (byte-wise), so the
/// result is deterministic and independent of thread count and algorithm.
///
/// Postings are read in bulk from plumb's postings.bin (see detail/postings.hpp) when the index
/// has it, else through Lucene++ TermDocs::read(); the MaxScore skipping cursors (next_geq)
/// always use Lucene++'s skip lists. Both sources give the same postings, so the same results.
///
/// Algorithms: exhaustive term-at-a-time accumulation (bulk reads into a dense
/// float accumulator with a touched-document list; default for deep k such as 1000, where
/// decoding the postings dominates and pruning measured no gain), the same with MaxScore-style
/// pruning of the low-bound tail using per-term score upper bounds computed at index time
/// (default for k <= 100: skips most of the frequent terms' postings), and classic MaxScore
/// (document-at-a-time). All return exactly the same top-k (same documents, bit-identical
/// scores); tests compare them on a generated corpus. Each is one functor in its own internal
/// header (index/detail/bm25_exhaustive.hpp, bm25_taat_maxscore.hpp, bm25_maxscore.hpp).

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "index/passage_index.hpp"
#include "index/shard_stats.hpp"
#include "plugin/progress.hpp"
#include "plugin/types.hpp"

namespace plumb::index {

/// BM25 parameters; defaults as Anserini's (k1 = 0.9, b = 0.4).
struct Bm25Params {
    float k1 = 0.9f;
    float b = 0.4f;
    /// Score with document lengths as Lucene 9 stores them in its one-byte norms (exact below
    /// 24 tokens, 4 significant bits above: 100 -> 96), as Anserini's BM25 does, instead of the
    /// exact lengths, and without BM25's constant (k1 + 1) factor, as Lucene 8+ scores (the
    /// ranking does not depend on it). For reproducing Anserini's regressions and scores.
    bool lucene_norms = false;
};

/// RM3 pseudo-relevance feedback, Anserini's Rm3Reranker semantics (see rm3.hpp).
struct Rm3Params {
    std::size_t fb_docs = 10;
    std::size_t fb_terms = 10;
    float original_query_weight = 0.5f;
};

enum class SearchAlgorithm {
    /// For k <= SearchOptions::pruning_max_k: BlockMaxMaxScore when the index has block-max
    /// metadata (postings.bin version 2), else TaatMaxScore; Exhaustive for larger k.
    Auto,
    Exhaustive,    ///< term-at-a-time over all postings (the reference)
    MaxScore,      ///< document-at-a-time with dynamic pruning
    TaatMaxScore,  ///< term-at-a-time; once the k-th partial score exceeds the remaining
                   ///< terms' bounds, only documents that can still reach it are completed
    /// Document-at-a-time MaxScore that also skips with per-block upper bounds. Needs
    /// postings.bin version 2: InvalidArgument from the search otherwise.
    BlockMaxMaxScore,
};

/// The names of the SearchAlgorithm values, in enum order: "auto", "exhaustive", "maxscore",
/// "taat-maxscore", "block-max-maxscore" (CLI --algorithm).
std::span<const std::string_view> search_algorithm_names();
/// The algorithm called `name`; throws InvalidArgument listing the known names.
SearchAlgorithm search_algorithm_from_name(std::string_view name);

/// Intra-query parallelism for long queries, on the block-max MaxScore path (the default for
/// k <= pruning_max_k on indexes with block-max metadata; other algorithms ignore it): a query
/// still running `after_ms` after its search began (not counting the time its thread spent on
/// other queries' chunks meanwhile), and not nearly done (its rest, projected at its speed so
/// far, takes at least after_ms / 4), splits the rest of its document-number range
/// into `parts` chunks, which the threads that search the same Bm25Searcher concurrently with
/// this option set take over at the start of their next search call or, while their own query
/// has not split, every fourth window boundary (windows of up to 4,096 documents), sharing the query's score threshold: a thread starts others' chunks only within
/// the first `lend_ms` of a query of its own (a query that has run longer may be long itself,
/// and its helping would make it longer still), so each query grows by at most lend_ms plus one
/// chunk; the query's own thread scans every chunk nobody else took, then merges. Results are
/// exactly those of one pass (same documents, order and bit-identical scores); only the latency
/// changes: a long query's shrinks, a helping thread's current query grows by the chunks it
/// scans. Meant for hosts that search from several threads at once (a thread alone scans all its
/// chunks itself, a little slower). The technique: incremental parallelism of long requests
/// (Haque et al., "Few-to-Many", ASPLOS 2015) restricted to long queries as in predictive
/// parallelisation (Jeon et al., SIGIR 2014), with elapsed time as the predictor
/// (index/README.md; figures: bench/README.md, "Intra-query parallelism").
/// Largest IntraQueryOptions::parts (more chunks than that only add claims of empty ranges).
inline constexpr unsigned kMaxIntraQueryParts = 1024;
struct IntraQueryOptions {
    unsigned parts = 0;     ///< chunks of a split; 0 or 1: off (the default)
    double after_ms = 0.5;  ///< split a query that has scanned this long (>= 0)
    double lend_ms = 0.25;  ///< help others only within this long of a query's start (>= 0)
    /// The exhaustive path (k > pruning_max_k, or SearchAlgorithm::Exhaustive; needs block-max
    /// metadata): a query whose terms' postings (the sum of their document frequencies: what
    /// exhaustive scoring decodes) reach this many splits at its start into `parts` document
    /// ranges (of decreasing width, as above); a thread takes such ranges before its own query
    /// (not during it: interrupting it measured a higher p99) only while its own query's
    /// postings plus those predicted for the ranges it has taken stay at most this, or at most
    /// the split query's postings not taken by helpers (so helping shares a long query's work
    /// without making the helper's query the longer one). 0: exhaustive queries never split.
    std::uint64_t exhaustive_min_postings = 300000;
};

struct SearchOptions {
    Bm25Params bm25;
    SearchAlgorithm algorithm = SearchAlgorithm::Auto;
    std::size_t pruning_max_k = 100;
    bool rm3 = false;
    Rm3Params rm3_params;
    IntraQueryOptions intra_query;
};

/// One result.
struct Hit {
    std::uint32_t doc = 0;  ///< internal document number
    float score = 0;
};

/// A weighted analysed term (query term weight multiplies its BM25 contribution).
struct WeightedTerm {
    std::string term;
    float weight = 1;
};

class Bm25Searcher {
public:
    /// Opens the index at `dir` (see PassageIndex::open) and preloads what search needs.
    static std::shared_ptr<const Bm25Searcher> open(const std::filesystem::path& dir,
                                                    const IndexOpenOptions& options = {});
    explicit Bm25Searcher(std::shared_ptr<const PassageIndex> index);
    ~Bm25Searcher();
    Bm25Searcher(const Bm25Searcher&) = delete;
    Bm25Searcher& operator=(const Bm25Searcher&) = delete;

    /// Top-k for a raw query text (analysed with the index's analyzer; no query syntax: any text
    /// is a bag of terms; empty or all-stop-word queries give an empty result). Thread-safe.
    std::vector<Hit> search(std::string_view query_text, std::size_t k,
                            const SearchOptions& options = {}) const;

    /// Top-k for analysed weighted terms (duplicates are merged by adding weights). RM3 is not
    /// applied here. Thread-safe.
    std::vector<Hit> search_terms(std::span<const WeightedTerm> terms, std::size_t k,
                                  const SearchOptions& options = {}) const;

    /// Sharded search (shard_stats.hpp): this index's statistics of `terms` (analysed terms),
    /// with max_frac_default taken at the avgdl of `collection` (the combined collection
    /// statistics of all shards) when `params` are the defaults, else left 0. The first call for
    /// a term under a new avgdl scans its postings once (then cached; none when `collection`'s
    /// avgdl is this index's own). Terms absent here get df 0. Thread-safe.
    ShardStats term_stats(std::span<const std::string> terms, const CollectionStats& collection,
                          const Bm25Params& params = {}) const;

    /// Top-k of this index's documents scored with the whole collection's statistics `global`
    /// (combine() of every shard's term_stats for these terms) instead of this index's own: the
    /// scores are bit-identical to those one index over the whole collection gives, and so is
    /// the order (ties by external id). Throws InvalidArgument when `global` lacks a query term
    /// that occurs in this index. RM3 is not applied here. Thread-safe.
    std::vector<Hit> search_terms(std::span<const WeightedTerm> terms, std::size_t k,
                                  const SearchOptions& options, const ShardStats& global) const;

    /// The bag of words of a query: analysed terms with their counts as weights, in order of
    /// first occurrence.
    std::vector<WeightedTerm> query_terms(std::string_view query_text) const;

    /// Intra-query parallelism so far (SearchOptions::intra_query): queries that split, times a
    /// thread joined another query's split to scan its chunks, waits and lock contention
    /// (diagnostics; bench_index prints them per pass). Thread-safe.
    struct IntraQueryCounts {
        std::uint64_t splits = 0;
        std::uint64_t helper_joins = 0;
        /// Split queries whose thread, done with every chunk, waited for a helper's last
        /// chunk; of them, the waits that outlasted a short spin and slept; their total time.
        std::uint64_t owner_waits = 0, owner_sleeps = 0, owner_wait_ns = 0;
        /// Locks of the searcher's shared mutexes (the split queries' scheduler, the workspace
        /// pool) that found them taken, and those of them that then blocked (slept) after a
        /// short spin.
        std::uint64_t sched_contended = 0, sched_blocked = 0, pool_contended = 0, pool_blocked = 0;
    };
    IntraQueryCounts intra_query_counts() const;

    /// Searches many queries with `threads` threads (0 = 1). Results in query order, with
    /// external ids; candidates' text is not filled. Progress counts queries. Cancellation
    /// throws plumb::Error("cancelled"). Worker exceptions are rethrown here.
    std::vector<RankedList> search_batch(std::span<const Query> queries, std::size_t k,
                                         const SearchOptions& options = {}, unsigned threads = 1,
                                         const ProgressCallback& progress = {},
                                         const CancelToken* cancel = nullptr) const;

    /// Hits -> ranked list with external ids.
    RankedList to_ranked_list(const std::string& qid, std::span<const Hit> hits) const;

    const PassageIndex& index() const noexcept { return *m_index; }
    std::shared_ptr<const PassageIndex> index_ptr() const noexcept { return m_index; }

private:
    struct Impl;
    std::vector<Hit> search_impl(std::span<const WeightedTerm> terms, std::size_t k,
                                 const SearchOptions& options, const ShardStats* global) const;
    std::shared_ptr<const PassageIndex> m_index;
    std::unique_ptr<Impl> m_impl;
};

}  // namespace plumb::index
