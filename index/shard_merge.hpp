#pragma once
/// \file shard_merge.hpp
/// Sharded search, pieces 2 and 3: a shard's hits with their global tie key, and the exact merge
/// of every shard's top k into the collection's top k (see sharded_searcher.hpp).
///
/// One index ranks by score descending, ties by external document id ascending (byte-wise:
/// idrank.u32). Scores taken with the combined statistics (shard_stats.hpp) are the single
/// index's scores bit for bit, and the id is global, so ordering every shard's hits by
/// (score desc, id asc) reproduces the single index's order; the collection's top k is among the
/// union of the shards' top k (a document outside its own shard's top k has k better documents
/// there). No global document numbering is needed: shards may hold any partition of the corpus.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "index/bm25_searcher.hpp"

namespace plumb::index {

/// One hit of a shard-local search.
struct ShardHit {
    std::string docid;        ///< external id: the global tie key
    float score = 0;          ///< with the collection's statistics
    std::uint32_t shard = 0;  ///< the shard's number (as the host numbers its shards)
    std::uint32_t doc = 0;    ///< internal document number within that shard
};

/// The collection's ranking order: score descending, then id ascending byte-wise (as one index).
bool shard_hit_before(const ShardHit& a, const ShardHit& b) noexcept;

/// Searches one shard with the collection's statistics `global` (Bm25Searcher::search_terms) and
/// labels the hits with their ids and `shard`. Best first. Thread-safe.
std::vector<ShardHit> search_shard(const Bm25Searcher& shard, std::uint32_t shard_number,
                                   std::span<const WeightedTerm> terms, std::size_t k,
                                   const SearchOptions& options, const ShardStats& global);

/// The top `k` of the union of the shards' hit lists, in the collection's ranking order. Each
/// list must hold its shard's top k (or all its matches) in any order; the result is exactly
/// the single index's top k. Throws InvalidArgument when the same id occurs twice (two shards
/// holding one document).
std::vector<ShardHit> merge_topk(std::span<const std::vector<ShardHit>> per_shard, std::size_t k);

/// The top `k` of the union of `lists`, each already in the collection's ranking order (strictly:
/// a shard's search_shard output, or a merge_topk / merge_sorted_topk result, e.g. one MPI rank's
/// top k): a k-way merge in O(k log L) comparisons for L lists instead of sorting every hit;
/// the result equals merge_topk's. The hits are moved out of `lists`. Throws InvalidArgument
/// when a list is not strictly in ranking order (a hit not before the next one) or an id occurs
/// twice among the merged top k (hits below the top k are not compared).
std::vector<ShardHit> merge_sorted_topk(std::span<std::vector<ShardHit>> lists, std::size_t k);

}  // namespace plumb::index
