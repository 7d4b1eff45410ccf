#pragma once
/// \file shard_manifest.hpp
/// The manifest of a sharded index: DIR/plumb-shards.json names the shards (each a normal plumb
/// index, by default DIR/shard-000, shard-001, ...) and their document counts and total lengths.
///
///     {"format": "plumb-shards", "version": 1, "documents": N, "total_length": L,
///      "shards": [{"path": "shard-000", "documents": n0, "total_length": l0}, ...]}
///
/// Paths are relative to DIR (absolute paths are allowed: a host may list shards elsewhere). The
/// manifest is written last and atomically: it is the commit marker of a sharded build. Shards
/// are in corpus order when built by build_shards (contiguous ranges), but nothing depends on
/// it: ties are broken by external id, so any partition of a corpus gives the same results.

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace plumb::index {

struct ShardManifest {
    struct Shard {
        std::string path;  ///< relative to the manifest's directory, or absolute
        std::uint64_t documents = 0;
        std::uint64_t total_length = 0;
    };
    std::vector<Shard> shards;

    std::uint64_t documents() const noexcept;
    std::uint64_t total_length() const noexcept;

    /// The file name, "plumb-shards.json".
    static const char* file_name() noexcept;
    /// True when `dir` holds a manifest (a sharded index).
    static bool present(const std::filesystem::path& dir);
    /// Reads DIR/plumb-shards.json. Throws IndexError (missing file, unknown format or version,
    /// malformed JSON, no shards, a duplicate path, totals that are not the shards' sums).
    static ShardManifest read(const std::filesystem::path& dir);
    /// Writes DIR/plumb-shards.json atomically (fsynced, renamed into place). Throws IoError.
    void write(const std::filesystem::path& dir) const;
    /// The directory of shard `i`.
    std::filesystem::path shard_dir(const std::filesystem::path& dir, std::size_t i) const;
};

}  // namespace plumb::index
