#pragma once
/// \file sharded_searcher.hpp
/// BM25 (and BM25 + RM3) over a sharded index by one process holding every shard: the reference
/// host of the sharding API, and what `plumb search --index DIR` uses when DIR holds a shard
/// manifest (shard_manifest.hpp). Every run equals the run of one index built over the whole
/// corpus byte for byte (scores bit-identical, same order).
///
/// The protocol, which a host sharding over its own machines follows with the same calls:
///  0. once: C = combine(collection_stats(shard_i)) (shard_stats.hpp);
///  1. per query: terms = query_terms(text) (any shard: they share the analyzer);
///     G = combine(shard_i.term_stats(term names, C, bm25 params));
///  2. H_i = search_shard(shard_i, i, terms, k, options, G); top = merge_topk({H_i}, k)
///     (shard_merge.hpp);
///  3. RM3: steps 1-2 with k = fb_docs give the feedback documents; the shard holding each one
///     analyses it (rm3_feedback_doc: (term, count) lists travel, not texts); the terms of
///     rm3_df_terms get their collection df from combine(doc_freq_stats(shard_i, terms));
///     rm3_expand(query terms, feedback, df, C.documents) gives the expanded query, searched
///     with steps 1-2.
/// Every piece is deterministic and independent of the shards' order and number.

#include <cstddef>
#include <filesystem>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "index/bm25_searcher.hpp"
#include "index/shard_manifest.hpp"
#include "index/shard_merge.hpp"
#include "index/shard_stats.hpp"
#include "plugin/document_source.hpp"
#include "plugin/progress.hpp"
#include "plugin/types.hpp"

namespace plumb::index {

class ShardedSearcher {
public:
    /// Opens the sharded index at `dir` (its plumb-shards.json and every shard it names).
    /// Throws IndexError naming the shard when one is missing or not a committed index, when a
    /// shard's document count or total length differs from the manifest's, or when the shards
    /// were built with different analysis.
    static std::shared_ptr<const ShardedSearcher> open(const std::filesystem::path& dir,
                                                       const IndexOpenOptions& options = {});
    /// Opens shard `i` of the manifest of `dir` alone (what open() does for each shard; MPI
    /// ranks open their own shards with it). Same errors as open().
    static std::shared_ptr<const Bm25Searcher> open_shard(const std::filesystem::path& dir,
                                                          const ShardManifest& manifest,
                                                          std::size_t i,
                                                          const IndexOpenOptions& options = {});
    /// Over already opened shards (numbered in this order). Throws InvalidArgument when empty or
    /// a shard is null, IndexError when their analysis differs.
    explicit ShardedSearcher(std::vector<std::shared_ptr<const Bm25Searcher>> shards);

    /// The collection's top k for a raw query text, with RM3 when options.rm3 (as
    /// Bm25Searcher::search on one index). Thread-safe.
    std::vector<ShardHit> search(std::string_view query_text, std::size_t k,
                                 const SearchOptions& options = {}) const;
    /// The collection's top k for analysed weighted terms (no RM3). Thread-safe.
    std::vector<ShardHit> search_terms(std::span<const WeightedTerm> terms, std::size_t k,
                                       const SearchOptions& options = {}) const;
    /// The combined statistics of `terms` (step 1 of the protocol).
    ShardStats global_stats(std::span<const std::string> terms, const Bm25Params& params) const;

    /// As Bm25Searcher::search_batch: results in query order, external ids, no text.
    std::vector<RankedList> search_batch(std::span<const Query> queries, std::size_t k,
                                         const SearchOptions& options = {}, unsigned threads = 1,
                                         const ProgressCallback& progress = {},
                                         const CancelToken* cancel = nullptr) const;

    std::size_t shard_count() const noexcept { return m_shards.size(); }
    const Bm25Searcher& shard(std::size_t i) const { return *m_shards.at(i); }
    const CollectionStats& collection() const noexcept { return m_collection; }

private:
    std::vector<std::shared_ptr<const Bm25Searcher>> m_shards;
    CollectionStats m_collection;
};

/// The passage texts of a sharded index (a pipeline's document source when its first stage is
/// BM25 over a sharded index): text(id) asks each shard in turn (ids are unique over the
/// shards); size() is the collection's.
class ShardedDocuments : public DocumentSource {
public:
    /// Throws InvalidArgument when `searcher` is null.
    explicit ShardedDocuments(std::shared_ptr<const ShardedSearcher> searcher);
    std::optional<std::string> text(std::string_view docid) const override;
    std::uint64_t size() const override;

private:
    std::shared_ptr<const ShardedSearcher> m_searcher;
};

}  // namespace plumb::index
