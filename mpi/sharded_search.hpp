#pragma once
/// \file sharded_search.hpp
/// `mpirun -n R plumb search --index DIR` over a sharded index: BM25 (and BM25 + RM3) with the
/// shards spread over MPI ranks, rank r holding shards r, r + R, ... (R <= shards). The
/// protocol of index/sharded_searcher.hpp with its exchanges done by MPI collectives, for a
/// batch of queries at a time (a few collectives per batch, not per query):
///  0. once: N and the total length summed over the ranks (MPI_Allreduce);
///  1. every rank analyses every query (the shards share the analyzer) and takes its shards'
///     statistics of the query terms; df summed, max_tf and the BM25 bound by maximum, min_dl by
///     minimum over the ranks (four MPI_Allreduce over flat arrays, one slot per query term);
///  2. every rank searches its shards with these global statistics and merges them into its
///     own top k (a rank holding one shard sends that shard's hits as they come: already in
///     ranking order), packed as (score, id) per hit; the queries of the batch are split into R
///     contiguous parts (partition()) and each rank receives every rank's lists of its part
///     (one MPI_Alltoallv) and merges them exactly (detail::merge_hits: score descending, ties
///     by id) over views into the received bytes, so the merge, and in search_run the
///     formatting of the run lines straight from those views, is spread over the ranks instead
///     of done by rank 0 alone; search_batch then gathers the merged lists on rank 0 (MPI_Gatherv),
///     search_run the formatted run text, which rank 0 writes while the next batch runs;
///  3. RM3: steps 1-2 with k = fb_docs, each hit with its (shard, document), and the lists
///     gathered on every rank (MPI_Allgatherv);
///     the rank holding each feedback document analyses it and its (term, count) list is
///     all-gathered; the collection df of rm3_df_terms is summed by MPI_Allreduce; every rank
///     expands every query identically; steps 1-2 with the expanded queries.
/// Scores are the single index's bit for bit (floats travel as their bits; sum, max and min of
/// integers and max of floats do not depend on the reduction order), so the run equals the run
/// of one index over the whole corpus byte for byte.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "index/bm25_searcher.hpp"
#include "index/shard_merge.hpp"
#include "index/shard_stats.hpp"
#include "mpi/comm.hpp"
#include "plugin/progress.hpp"
#include "plugin/text_io.hpp"
#include "plugin/types.hpp"

namespace plumb::mpi {

namespace detail {
/// INTERNAL: one merged hit, its id a view into a received buffer.
struct MergedHit {
    float score = 0;
    std::uint32_t shard = 0;  ///< (shard, doc): only in the RM3 feedback round
    std::uint32_t doc = 0;
    std::string_view id;
};
/// INTERNAL: appends the top k of the union of `lists`, each strictly in the collection's
/// ranking order (score descending, id ascending byte-wise), to `out`: a linear scan over the
/// heads for up to 8 lists, a heap beyond. Throws Error when two lists hold the same hit (an id
/// on two ranks: a document in two shards, which both shard builders reject).
void merge_hits(std::span<const std::vector<MergedHit>> lists, std::size_t k,
                std::vector<MergedHit>& out);
}  // namespace detail

/// One object per rank, used by one thread: its collective calls reuse buffers kept from call to
/// call (Scratch), so two threads must not call them on the same object at once.
class ShardedSearch {
public:
    /// Collective: every rank reads DIR's manifest and opens its shards
    /// (ShardedSearcher::open_shard). Throws CollectiveError on every rank when any rank failed
    /// (a missing or mismatched shard, more ranks than shards, shards built with different
    /// analysis).
    ShardedSearch(const Comm& comm, const std::filesystem::path& dir,
                  const index::IndexOpenOptions& options = {});

    /// Collective: every rank passes the same queries and options. Returns the collection's top
    /// k per query in query order (external ids, no text) on rank 0, an empty vector on the
    /// others. `threads` threads per rank for the local work. Progress (rank 0) counts queries.
    /// Cancellation on any rank fails every rank (CollectiveError "cancelled").
    std::vector<RankedList> search_batch(std::span<const Query> queries, std::size_t k,
                                         const index::SearchOptions& options = {},
                                         unsigned threads = 1,
                                         const ProgressCallback& progress = {},
                                         const CancelToken* cancel = nullptr) const;

    /// Collective, as search_batch, but without gathering: every rank returns the collection's
    /// top k of its own part of the queries, [p.first, p.first + p.count) for
    /// p = partition(queries.size(), rank, size), in query order.
    std::vector<RankedList> search_part(std::span<const Query> queries, std::size_t k,
                                        const index::SearchOptions& options = {},
                                        unsigned threads = 1,
                                        const CancelToken* cancel = nullptr) const;

    /// Collective: searches `queries` in batches of `batch` queries and writes their TREC run
    /// (format_trec_run with `tag`, in query order: the run one process writes) to `out` on
    /// rank 0 (the other ranks' `out` is ignored and may be null). Each rank merges and formats
    /// its part of every batch (search_part); rank 0 gathers the text and writes batch b on a
    /// second thread while the ranks search batch b + 1 (at most one batch's text waits). Does
    /// not commit `out`. Returns the number of lines written (on every rank). Progress (rank 0)
    /// counts queries. A write error on rank 0 or any error on any rank: CollectiveError on every
    /// rank (and `out` holds a partial run: the caller does not commit it).
    std::uint64_t search_run(std::span<const Query> queries, std::size_t k,
                             const index::SearchOptions& options, std::string_view tag,
                             AtomicFile* out, unsigned threads = 1, std::size_t batch = 1024,
                             const ProgressCallback& progress = {},
                             const CancelToken* cancel = nullptr) const;

    const index::CollectionStats& collection() const noexcept { return m_collection; }

    /// Wall-clock seconds this rank spent so far in the calls above: on its own shards
    /// (analysis, statistics, search, RM3 feedback analysis), in MPI exchanges (including
    /// waiting for slower ranks), merging the ranks' lists of its part of the queries (and, in
    /// search_batch, decoding the gathered lists on rank 0), formatting its part's run lines,
    /// and (search_run) the end of each batch: on rank 0 waiting for the previous batch's write
    /// to finish, on every rank the collective that shares its outcome.
    struct Timings {
        double local = 0;
        double exchange = 0;
        double merge = 0;
        double format = 0;
        double write = 0;
    };
    const Timings& timings() const noexcept { return m_timings; }
    /// Collective: every rank's timings(), in rank order, on every rank.
    std::vector<Timings> all_timings() const;
    /// The shards this rank holds: (shard number, searcher).
    const std::vector<std::pair<std::uint32_t, std::shared_ptr<const index::Bm25Searcher>>>&
    local_shards() const noexcept {
        return m_shards;
    }

private:
    /// One round's merged top k per query of this rank's part (of every query when
    /// `everywhere`): views into the ranks' packed hits, which the struct owns (no id is copied
    /// until a caller needs strings: search_run formats its lines straight from the views).
    struct Merged {
        using Hit = detail::MergedHit;
        Merged() = default;
        Merged(Merged&&) noexcept = default;  // the strings' buffers move with them: views stay valid
        Merged& operator=(Merged&&) noexcept = default;
        Merged(const Merged&) = delete;  // a copy's views would point into the original's buffers
        Merged& operator=(const Merged&) = delete;
        std::string bytes;                 ///< every rank's packed hits, in rank order
        std::vector<std::size_t> parts;    ///< rank r's are bytes[parts[r], parts[r + 1])
        std::vector<Hit> hits;             ///< the lists, one after the other
        std::vector<std::size_t> offsets;  ///< list q is hits[offsets[q], offsets[q + 1])
        std::size_t size() const noexcept { return offsets.empty() ? 0 : offsets.size() - 1; }
        std::span<const Hit> list(std::size_t q) const {
            return std::span<const Hit>(hits).subspan(offsets[q], offsets[q + 1] - offsets[q]);
        }
    };
    /// Analysis, RM3 and the final round for `queries` (query `first` + i of the caller's
    /// topics, for error messages): this rank's part's merged top k.
    Merged part_hits(std::span<const Query> queries, std::size_t first, std::size_t k,
                     const index::SearchOptions& options, unsigned threads,
                     const CancelToken* cancel) const;
    /// Steps 1-2 for every query's weighted terms: the merged top k of this rank's part of the
    /// queries (of every query, with each hit's shard and document, when `everywhere`).
    Merged round(std::span<const Query> queries, std::size_t first,
                 const std::vector<std::vector<index::WeightedTerm>>& terms, std::size_t k,
                 const index::SearchOptions& options, unsigned threads, bool everywhere,
                 const CancelToken* cancel) const;
    /// Hands a round's buffers back for the next round (see Scratch).
    void recycle(Merged&& used) const;

    /// Buffers kept from one batch to the next (search_run's batches are alike in size): the
    /// per-query packed hits, the buffer sent, and a spare Merged, so that a batch reuses pages
    /// the last one faulted in instead of mapping and zeroing fresh ones (tens of MB a batch).
    struct Scratch {
        std::vector<std::string> packed;
        std::string send;
        Merged spare;
    };

    Comm m_comm;
    std::vector<std::pair<std::uint32_t, std::shared_ptr<const index::Bm25Searcher>>> m_shards;
    index::CollectionStats m_collection;
    mutable Timings m_timings;
    mutable Scratch m_scratch;
};

}  // namespace plumb::mpi
