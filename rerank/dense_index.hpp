#pragma once
/// \file dense_index.hpp
/// Passage vectors of a whole collection on disk (resumable), and a FAISS index over them.
///
/// A vector folder (VECDIR) holds:
///  - `manifest.json`: {"format": "plumb-dense-vectors", "version": 1, "dim": D, "meta": {...},
///    "chunks": [{"file": "chunk-000000", "count": n}, ...], "count": N, "complete": bool};
///  - per chunk `chunk-NNNNNN.vec` (8 bytes "PLUMBVEC", u32 version 1, u32 dim, u64 count, then
///    count x dim little-endian float32, row-major) and `chunk-NNNNNN.ids` (one docid a line);
///  - after build_dense_index(): `index.faiss` (faiss::write_index) and `index.json`
///    ({"format": "plumb-dense-index", "version": 1, "factory", "metric", "dim", "count"}).
/// Chunks are append-only and written atomically (temporary file, then rename), each followed by
/// an atomic rewrite of the manifest; an interrupted encoding run therefore leaves only whole
/// chunks, and the next run resumes after the last one (checking that the collection still
/// starts with the same docids). Unknown formats or newer versions are rejected by name.
/// No FAISS type leaves dense_index.cpp.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
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

/// Similarity a FAISS index ranks by.
enum class DenseMetric { InnerProduct, L2 };
/// "ip" / "l2".
const char* dense_metric_name(DenseMetric metric) noexcept;
/// Parses "ip" / "l2"; throws InvalidArgument.
DenseMetric parse_dense_metric(const std::string& name);

struct DenseIndexOptions {
    /// Any faiss::index_factory description: "Flat", "HNSW32,Flat", "IVF1024,Flat", ...
    std::string factory = "Flat";
    DenseMetric metric = DenseMetric::InnerProduct;
};

/// A FAISS index over a vector folder, with rows mapped back to docids. search() is const and
/// safe to call concurrently.
class DenseIndex {
public:
    /// Builds the index over the complete vectors of `dir` (trains it when the factory needs
    /// training), writes index.faiss (temporary file then rename) and index.json. Throws
    /// IndexError when the folder is incomplete or corrupt, InvalidArgument for a bad factory
    /// string (FAISS's message included).
    static void build(const std::filesystem::path& dir, const DenseIndexOptions& options,
                      const ProgressCallback& progress = {});

    /// Loads index.faiss, index.json and the docids of `dir`. `expected_dim` (0 = any) is
    /// checked against the index (IndexError naming both). `ef_search` > 0 sets HNSW's efSearch (ignored
    /// for factories without HNSW).
    static DenseIndex load(const std::filesystem::path& dir, std::size_t expected_dim = 0,
                           int ef_search = 0);

    DenseIndex(DenseIndex&&) noexcept;
    DenseIndex& operator=(DenseIndex&&) noexcept;
    ~DenseIndex();

    std::size_t dim() const noexcept;
    std::size_t size() const noexcept;
    const DenseIndexOptions& options() const noexcept;
    const VectorStoreMeta& meta() const noexcept;
    const DocId& docid(std::size_t row) const;

    /// Top-k rows per query (queries: n x dim row-major), best first, as (row, score); the score
    /// is the inner product, or minus the L2 distance. Fewer than k when the index is smaller.
    std::vector<std::vector<std::pair<std::size_t, float>>> search(std::span<const float> queries,
                                                                   std::size_t k) const;

private:
    DenseIndex();
    struct Impl;
    std::unique_ptr<Impl> m_impl;
};

}  // namespace plumb::rerank
