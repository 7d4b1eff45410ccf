#pragma once
/// \file sharded_build.hpp
/// `mpirun -n R plumb index --shards N`: a sharded index (index/shard_builder.hpp) built by R
/// MPI ranks at once. The shards are the same as build_shards makes in one process (the corpus
/// split into N contiguous ranges in reading order: by byte ranges for a single uncompressed
/// TSV / JSONL file, else by counted documents; index::split_by_bytes()); rank r builds shards
/// r, r + R, r + 2R, ... (N >= R). DIR must be on a file system every rank
/// sees (a cluster's shared file system), as must the corpus.
///
/// Steps, each collective (a failure on any rank fails every rank with its message, and no
/// manifest is written):
///  1. rank 0 checks DIR, removes a previous manifest, and decides the split: split by bytes,
///     it broadcasts the file's size (nothing is read: each rank seeks to its ranges);
///     otherwise it counts the corpus's documents and broadcasts the count (a gzip TSV / JSONL
///     file without skip_bad: its non-blank lines, by splitting lines only; a malformed line
///     then fails the build of the shard holding it, naming file and line);
///  2. every rank builds its shards with build_index (first_byte / end_byte: the lines starting
///     in the shard's byte range, a range without one failing every rank; or first_document /
///     max_documents);
///  3. ids unique over the whole corpus: every rank sends each of its ids to rank
///     fnv1a64(id) mod R (MPI_Alltoallv), which finds duplicates among the ids it receives;
///  4. rank 0 gathers the shards' document counts and lengths, writes DIR/plumb-shards.json
///     last (atomically), then removes shard directories of an earlier, larger build.

#include <cstddef>
#include <filesystem>

#include "index/shard_builder.hpp"
#include "mpi/comm.hpp"

namespace plumb::mpi {

/// Wall-clock seconds of the steps on this rank (step 2 waits for the slowest rank in step 3's
/// exchange, so rank 0's `ids` includes that wait).
struct BuildTimings {
    double count = 0;     ///< step 1: rank 0's counting pass (others wait for it)
    double build = 0;     ///< step 2: this rank's shards
    double ids = 0;       ///< step 3, with the wait for the slowest rank
    double manifest = 0;  ///< step 4
};

/// Builds the `shards` shards of `corpus` under `dir` with the ranks of `comm` (collective).
/// Progress reports rank-local bytes. Returns, on rank 0, the totals and the manifest written;
/// on the other ranks, their own shards' totals and manifest entries. Throws CollectiveError on
/// every rank when any rank failed (standard input as corpus, shards < ranks or more shards than
/// documents, a build error, a duplicate id, cancellation).
index::ShardBuildStats build_shards(const Comm& comm, const std::filesystem::path& corpus,
                                    const std::filesystem::path& dir, std::size_t shards,
                                    const index::IndexBuildOptions& options = {},
                                    const ProgressCallback& progress = {},
                                    const CancelToken* cancel = nullptr,
                                    BuildTimings* timings = nullptr);

}  // namespace plumb::mpi
