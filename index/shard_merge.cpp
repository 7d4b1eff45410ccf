#include "index/shard_merge.hpp"

#include <algorithm>
#include <string_view>

#include "plugin/error.hpp"

namespace plumb::index {

bool shard_hit_before(const ShardHit& a, const ShardHit& b) noexcept {
    // std::string compares as unsigned bytes (char_traits<char>), as the builder's id ranks do.
    return a.score > b.score || (a.score == b.score && a.docid < b.docid);
}

std::vector<ShardHit> search_shard(const Bm25Searcher& shard, std::uint32_t shard_number,
                                   std::span<const WeightedTerm> terms, std::size_t k,
                                   const SearchOptions& options, const ShardStats& global) {
    auto hits = shard.search_terms(terms, k, options, global);
    std::vector<ShardHit> out;
    out.reserve(hits.size());
    for (const auto& h : hits) {
        out.push_back({std::string(shard.index().docid(h.doc)), h.score, shard_number, h.doc});
    }
    return out;
}

std::vector<ShardHit> merge_topk(std::span<const std::vector<ShardHit>> per_shard, std::size_t k) {
    std::vector<ShardHit> all;
    std::size_t total = 0;
    for (const auto& list : per_shard) total += list.size();
    all.reserve(total);
    for (const auto& list : per_shard) all.insert(all.end(), list.begin(), list.end());
    std::vector<std::string_view> ids;
    ids.reserve(all.size());
    for (const auto& h : all) ids.emplace_back(h.docid);
    std::sort(ids.begin(), ids.end());
    if (auto dup = std::adjacent_find(ids.begin(), ids.end()); dup != ids.end()) {
        throw InvalidArgument("merge_topk: document id '" + std::string(*dup) +
                              "' occurs in more than one shard list");
    }
    std::sort(all.begin(), all.end(), shard_hit_before);
    if (all.size() > k) all.resize(k);
    return all;
}

}  // namespace plumb::index
