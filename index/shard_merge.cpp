#include "index/shard_merge.hpp"

#include <algorithm>
#include <string_view>
#include <unordered_set>
#include <utility>

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

std::vector<ShardHit> merge_sorted_topk(std::span<std::vector<ShardHit>> lists, std::size_t k) {
    for (std::size_t l = 0; l < lists.size(); ++l) {
        const auto& list = lists[l];
        for (std::size_t i = 1; i < list.size(); ++i) {
            if (!shard_hit_before(list[i - 1], list[i])) {
                throw InvalidArgument("merge_sorted_topk: list " + std::to_string(l) +
                                      " is not in ranking order at '" + list[i].docid +
                                      "' (position " + std::to_string(i) + ")");
            }
        }
    }
    // A heap of list heads, the worst on top of std::make_heap's max-heap order.
    using Head = std::pair<std::size_t, std::size_t>;  // list, position
    auto worse = [&](const Head& a, const Head& b) {
        return shard_hit_before(lists[b.first][b.second], lists[a.first][a.second]);
    };
    std::vector<Head> heap;
    heap.reserve(lists.size());
    std::size_t total = 0;
    for (std::size_t l = 0; l < lists.size(); ++l) {
        if (!lists[l].empty()) heap.emplace_back(l, 0);
        total += lists[l].size();
    }
    std::make_heap(heap.begin(), heap.end(), worse);
    std::vector<ShardHit> out;
    out.reserve(std::min(k, total));
    while (!heap.empty() && out.size() < k) {
        std::pop_heap(heap.begin(), heap.end(), worse);
        const auto [l, p] = heap.back();
        heap.pop_back();
        out.push_back(std::move(lists[l][p]));
        if (p + 1 < lists[l].size()) {
            heap.emplace_back(l, p + 1);
            std::push_heap(heap.begin(), heap.end(), worse);
        }
    }
    std::unordered_set<std::string_view> ids;
    ids.reserve(out.size());
    for (const auto& h : out) {
        if (!ids.insert(h.docid).second) {
            throw InvalidArgument("merge_sorted_topk: document id '" + h.docid +
                                  "' occurs twice among the merged hits");
        }
    }
    return out;
}

}  // namespace plumb::index
