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
///     own top k; rank 0 gathers the ranks' lists (MPI_Gatherv) and merges them exactly
///     (merge_topk: score descending, ties by id);
///  3. RM3: steps 1-2 with k = fb_docs and the lists gathered on every rank (MPI_Allgatherv);
///     the rank holding each feedback document analyses it and its (term, count) list is
///     all-gathered; the collection df of rm3_df_terms is summed by MPI_Allreduce; every rank
///     expands every query identically; steps 1-2 with the expanded queries.
/// Scores are the single index's bit for bit (floats travel as their bits; sum, max and min of
/// integers and max of floats do not depend on the reduction order), so the run equals the run
/// of one index over the whole corpus byte for byte.

#include <cstddef>
#include <filesystem>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "index/bm25_searcher.hpp"
#include "index/shard_merge.hpp"
#include "index/shard_stats.hpp"
#include "mpi/comm.hpp"
#include "plugin/progress.hpp"
#include "plugin/types.hpp"

namespace plumb::mpi {

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

    const index::CollectionStats& collection() const noexcept { return m_collection; }

    /// Wall-clock seconds this rank spent so far in search_batch: on its own shards (analysis,
    /// statistics, search, RM3 feedback analysis), in MPI exchanges (including waiting for
    /// slower ranks), and merging the ranks' lists (rank 0).
    struct Timings {
        double local = 0;
        double exchange = 0;
        double merge = 0;
    };
    const Timings& timings() const noexcept { return m_timings; }
    /// The shards this rank holds: (shard number, searcher).
    const std::vector<std::pair<std::uint32_t, std::shared_ptr<const index::Bm25Searcher>>>&
    local_shards() const noexcept {
        return m_shards;
    }

private:
    /// Steps 1-2 for every query's weighted terms: the merged top k on rank 0 (on every rank
    /// when `everywhere`).
    std::vector<std::vector<index::ShardHit>> round(
        const std::vector<std::vector<index::WeightedTerm>>& terms, std::size_t k,
        const index::SearchOptions& options, unsigned threads, bool everywhere,
        const CancelToken* cancel) const;

    Comm m_comm;
    std::vector<std::pair<std::uint32_t, std::shared_ptr<const index::Bm25Searcher>>> m_shards;
    index::CollectionStats m_collection;
    mutable Timings m_timings;
};

}  // namespace plumb::mpi
