#pragma once
/// \file vector_store.hpp
/// Passage vectors of a whole collection on disk (a vector folder), written resumably.
///
/// A vector folder (VECDIR) holds:
///  - `manifest.json`: {"format": "plumb-dense-vectors", "version": 1, "dim": D, "meta": {...},
///    "chunks": [{"file": "chunk-000000", "count": n}, ...], "count": N, "complete": bool};
///  - per chunk `chunk-NNNNNN.vec` (8 bytes "PLUMBVEC", u32 version 1, u32 dim, u64 count, then
///    count x dim little-endian float32, row-major) and `chunk-NNNNNN.ids` (one docid a line);
///  - once indexed, the FAISS index files (rerank/dense_index.hpp).
/// Chunks are append-only and written atomically (temporary file, then rename), each followed by
/// an atomic rewrite of the manifest; an interrupted encoding run therefore leaves only whole
/// chunks, and the next run resumes after the last one (checking that the collection still
/// starts with the same docids). Unknown formats or newer versions are rejected by name.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "plugin/progress.hpp"
#include "plugin/types.hpp"

namespace plumb::rerank {

/// Identity of the vectors of a folder (checked when resuming, reported when searching).
struct VectorStoreMeta {
    std::size_t dim = 0;
    std::map<std::string, std::string> meta;  ///< e.g. model, pooling, similarity
};

/// Appends chunks of vectors to a vector folder. Not thread-safe.
class VectorStoreWriter {
public:
    /// Creates `dir` (and an empty manifest) or opens an existing folder to resume. Throws
    /// IndexError when an existing manifest is not a vector folder, is of a newer version, or has
    /// another dimension or meta; IoError on file errors.
    VectorStoreWriter(std::filesystem::path dir, VectorStoreMeta meta);
    ~VectorStoreWriter();

    /// Vectors stored so far.
    std::uint64_t count() const noexcept;
    /// Docids stored so far, in order.
    const std::vector<DocId>& ids() const noexcept;
    /// True once finish() was called (in this or an earlier run).
    bool complete() const noexcept;
    /// Writes one chunk (ids.size() rows of dim floats) atomically, then the manifest. Throws
    /// InvalidArgument for mismatched sizes or an id with whitespace, IndexError when complete.
    void append(std::span<const DocId> ids, std::span<const float> vectors);
    /// Marks the folder complete.
    void finish();

private:
    void write_manifest() const;
    std::filesystem::path m_dir;
    VectorStoreMeta m_meta;
    std::vector<std::pair<std::string, std::uint64_t>> m_chunks;
    std::vector<DocId> m_ids;
    bool m_complete = false;
};

/// All vectors of a folder in memory.
struct VectorStore {
    VectorStoreMeta meta;
    std::vector<DocId> ids;
    std::vector<float> vectors;  ///< ids.size() x meta.dim, row-major
    bool complete = false;

    /// Reads manifest and chunks, checking magic, version, dims and counts. Throws IndexError
    /// (naming the file) for a corrupt or truncated folder, IoError when unreadable.
    static VectorStore load(const std::filesystem::path& dir);
};

/// Reads the next document of a collection: false at the end.
using DocumentStream = std::function<bool(DocId& id, std::string& text)>;
/// A collection to stream: its documents and their number (0 when unknown).
struct CollectionStream {
    DocumentStream docs;
    std::uint64_t total = 0;
};
/// Streams the passages of a plumb index (`index` non-empty: docno order, stored text, total =
/// its size) or of a corpus file (`corpus`: TSV / JSONL, `format` "" = detected from the file;
/// text as indexed, i.e. as a DocumentSource serves it; total 0). ConfigError when both or
/// neither are given; the index's / reader's own errors (naming the file) otherwise.
CollectionStream open_collection_stream(const std::filesystem::path& index,
                                        const std::filesystem::path& corpus,
                                        const std::string& format = "");

/// Encodes texts to a row-major [n x dim] matrix.
using TextEncoder = std::function<std::vector<float>(std::span<const std::string_view>)>;

struct EncodeCollectionOptions {
    std::size_t chunk_size = 8192;  ///< documents per chunk file (and per encoder call)
};

/// Encodes every document of `docs` into `writer`, resuming after the writer's count (the
/// first count() documents are skipped after checking their ids match the stored ones:
/// IndexError otherwise). Reports progress in documents (total may be 0 = unknown) and stops
/// cleanly between chunks when `cancel` is requested (returning false). Calls finish() at the
/// end and returns true when the collection is complete.
bool encode_collection(VectorStoreWriter& writer, const DocumentStream& docs,
                       const TextEncoder& encoder, std::uint64_t total,
                       const EncodeCollectionOptions& options = {},
                       const ProgressCallback& progress = {}, const CancelToken* cancel = nullptr);

}  // namespace plumb::rerank
