#pragma once
/// \file shard_builder.hpp
/// Building a sharded index in one process (`plumb index --shards N`): the corpus is split into
/// N contiguous ranges in reading order, each built one after the other with
/// build_index into DIR/shard-000, DIR/shard-001, ... (each a normal, crash-safe plumb index),
/// then DIR/plumb-shards.json (shard_manifest.hpp) is written last, atomically: a previous
/// manifest is removed before the first shard is built, so a build that fails or is interrupted
/// leaves no manifest and DIR does not open as an index. Once the new manifest is in place,
/// shard directories of an earlier build with more shards (shard-NNN not named by it) are
/// removed.
///
/// The split (split_by_bytes()): a single uncompressed TSV or JSONL file (without skip_bad) is
/// split by byte ranges, shard i holding the lines that start in [i * size / N, (i + 1) * size
/// / N) (shard_bytes(); CorpusReaderOptions::first_byte), so no pass counts the documents
/// first and a shard's builder (an MPI rank) seeks to its range instead of reading what comes
/// before it; shard sizes then follow the bytes of the lines, and a range without any line
/// start (more shards than a tiny corpus or one huge line can fill) is an error. Every other
/// corpus (gzip, folders, TREC / HTML, skip_bad) is split into N ranges of documents counted in
/// a first pass (shard_range(): sizes differing by at most one). Both splits depend on the
/// corpus and N only, so every builder (one process, MPI ranks, a host's machines) makes the
/// same shards.
///
/// Document ids must be unique over the whole corpus, as for one index: each shard checks its
/// own range, and after the last one the shards' sorted ids are merged to find duplicates across
/// shards (IndexError naming both shards). Hosts sharding over their own machines build each
/// shard with build_index (IndexBuildOptions::first_document / max_documents, or their own split
/// of the corpus) and write the manifest with ShardManifest::write.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <vector>

#include "index/index_builder.hpp"
#include "index/shard_manifest.hpp"
#include "plugin/progress.hpp"

namespace plumb::index {

struct ShardBuildStats {
    IndexBuildStats total;  ///< summed over the shards (skipped: bad records of the corpus)
    ShardManifest manifest;
};

/// "shard-000", "shard-001", ...: the directory name of shard `i` under a sharded index.
std::string shard_dir_name(std::size_t i);

/// The documents of shard `i` of `shards` over a corpus of `total` documents: [first, first +
/// count) in reading order; sizes differ by at most one, the last shards taking the remainder.
struct ShardRange {
    std::uint64_t first = 0;
    std::uint64_t count = 0;
};
ShardRange shard_range(std::uint64_t total, std::size_t shards, std::size_t i);

/// Whether build_shards splits `corpus` by byte ranges: a regular, uncompressed (no gzip magic)
/// TSV or JSONL file, options.skip_bad off. Throws IoError when the file cannot be read.
bool split_by_bytes(const std::filesystem::path& corpus, const IndexBuildOptions& options);

/// Shard `i` of `shards` of a file of `size` bytes split by bytes: the lines that start in
/// [first, end), first = floor(i * size / shards), end = the next shard's first (size for the
/// last).
struct ShardBytes {
    std::uint64_t first = 0;
    std::uint64_t end = 0;
};
ShardBytes shard_bytes(std::uint64_t size, std::size_t shards, std::size_t i);
/// Throws InvalidArgument, naming the shard and its byte range, when a shard split by bytes
/// received no document (documents == 0).
void check_shard_bytes(const std::filesystem::path& corpus, std::size_t shards, std::size_t i,
                       std::uint64_t size, std::uint64_t documents);

/// Removes the directories DIR/shard-NNN (NNN digits) that `manifest` does not name: shards of
/// an earlier build with more shards. Call after the manifest is in place. Returns the paths
/// removed; a directory that cannot be removed is logged as a warning and left.
std::vector<std::filesystem::path> remove_stale_shards(const std::filesystem::path& dir,
                                                       const ShardManifest& manifest);

/// Builds `shards` (>= 1) shards of `corpus` under `dir` and their manifest. Split by bytes,
/// each shard reads its own range; otherwise the corpus is read shards + 1 times (a first pass
/// counts its documents). It cannot be standard input.
/// `options.first_document` / `max_documents` / `first_byte` / `end_byte` must be left at their
/// defaults. Progress counts the bytes of every pass. Throws InvalidArgument (standard input,
/// shards 0, more shards than documents or a byte range without a document), and what
/// build_index throws.
ShardBuildStats build_shards(const std::filesystem::path& corpus, const std::filesystem::path& dir,
                             std::size_t shards, const IndexBuildOptions& options = {},
                             const ProgressCallback& progress = {},
                             const CancelToken* cancel = nullptr);

}  // namespace plumb::index
