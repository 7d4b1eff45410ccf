#pragma once
/// \file batch.hpp
/// Batch jobs partitioned across MPI ranks and gathered into the output one process writes:
///  - query jobs (`plumb rerank`, `plumb pipeline`): rank r takes a contiguous part of the
///    queries (partition(), in whole groups of the stages' cross-query batching so that every
///    forward pass sees the same inputs as in one process), runs it alone, and rank 0 writes
///    the parts' run text in rank order (gather_concat);
///  - encoding (`plumb encode`): chunk c of the collection goes to rank c mod R; in round j the
///    ranks encode chunks jR .. jR + R - 1 at once and rank 0 appends them in order
///    (encode_chunks; on a second thread, while the ranks encode round j + 1), so memory stays
///    at about two chunks per rank and the vector folder is the one a single process writes,
///    chunk for chunk.

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "mpi/comm.hpp"
#include "plugin/progress.hpp"
#include "plugin/types.hpp"

namespace plumb::mpi {

/// Every rank's `part` concatenated in rank order on rank 0 ("" on the others). Collective.
std::string gather_concat(const Comm& comm, const std::string& part);

/// Reads the next document of the collection: false at the end.
using ChunkDocuments = std::function<bool(DocId& id, std::string& text)>;
/// Encodes texts to a row-major [n x dim] matrix.
using ChunkEncoder = std::function<std::vector<float>(std::span<const std::string_view>)>;
/// Rank 0: stores one chunk (its ids and vectors), in collection order. Called on a second
/// thread of rank 0 (one call at a time) while the ranks encode the next round: it must not
/// share unsynchronised state with the ChunkDocuments or the ChunkEncoder.
using ChunkSink = std::function<void(std::span<const DocId>, std::span<const float>)>;

struct EncodeChunksResult {
    std::uint64_t encoded = 0;  ///< documents encoded by the whole job in this call
    bool complete = false;      ///< false when cancelled
};

/// Collective. `stored` (rank 0's value counts; others may pass 0): documents a previous run
/// stored; every rank skips them in `docs` (rank 0's caller checks their ids). Then chunks of
/// `chunk_size` documents: chunk c is read by every rank and encoded by rank c mod R; rank 0
/// receives the chunks in order and hands them to `sink`. Progress (rank 0) in documents out of
/// `total` (0: unknown). Cancellation on any rank stops every rank between rounds (complete =
/// false; every chunk handed to `sink` is whole). Errors on any rank: CollectiveError on all.
EncodeChunksResult encode_chunks(const Comm& comm, std::uint64_t stored, const ChunkDocuments& docs,
                                 const ChunkEncoder& encoder, const ChunkSink& sink,
                                 std::size_t chunk_size, std::uint64_t total = 0,
                                 const ProgressCallback& progress = {},
                                 const CancelToken* cancel = nullptr);

}  // namespace plumb::mpi
