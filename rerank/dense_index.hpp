#pragma once
/// \file dense_index.hpp
/// A FAISS index over a vector folder (rerank/vector_store.hpp), with rows mapped back to
/// docids. DenseIndex::build() adds to the folder `index.faiss` (faiss::write_index) and
/// `index.json` ({"format": "plumb-dense-index", "version": 1, "factory", "metric", "dim",
/// "count"}); unknown formats or newer versions are rejected by name. No FAISS type leaves
/// dense_index.cpp.

#include <cstddef>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "plugin/progress.hpp"
#include "plugin/types.hpp"
#include "rerank/vector_store.hpp"

namespace plumb::rerank {

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
