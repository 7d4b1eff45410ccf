#pragma once
/// \file shard_builder.hpp
/// Building a sharded index in one process (`plumb index --shards N`): the corpus is split into
/// N contiguous ranges of documents in reading order (sizes differing by at most one, the last
/// shards taking the remainder), each built one after the other with
/// build_index into DIR/shard-000, DIR/shard-001, ... (each a normal, crash-safe plumb index),
/// then DIR/plumb-shards.json (shard_manifest.hpp) is written last, atomically: a previous
/// manifest is removed before the first shard is built, so a build that fails or is interrupted
/// leaves no manifest and DIR does not open as an index. Once the new manifest is in place,
/// shard directories of an earlier build with more shards (shard-NNN not named by it) are
/// removed.
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

/// Removes the directories DIR/shard-NNN (NNN digits) that `manifest` does not name: shards of
/// an earlier build with more shards. Call after the manifest is in place. Returns the paths
/// removed; a directory that cannot be removed is logged as a warning and left.
std::vector<std::filesystem::path> remove_stale_shards(const std::filesystem::path& dir,
                                                       const ShardManifest& manifest);

/// Builds `shards` (>= 1) shards of `corpus` under `dir` and their manifest. The corpus is read
/// shards + 1 times (a first pass counts its documents), so it cannot be standard input.
/// `options.first_document` / `max_documents` must be left at their defaults. Progress counts
/// the bytes of every pass. Throws InvalidArgument (standard input, shards 0 or more shards than
/// documents), and what build_index throws.
ShardBuildStats build_shards(const std::filesystem::path& corpus, const std::filesystem::path& dir,
                             std::size_t shards, const IndexBuildOptions& options = {},
                             const ProgressCallback& progress = {},
                             const CancelToken* cancel = nullptr);

}  // namespace plumb::index
