#include "index/shard_stats.hpp"

#include <algorithm>

#include "index/passage_index.hpp"

namespace plumb::index {

const TermStats* ShardStats::find(std::string_view term) const {
    auto it = terms.find(term);
    return it == terms.end() ? nullptr : &it->second;
}

CollectionStats collection_stats(const PassageIndex& shard) {
    return {shard.info().documents, shard.info().total_length};
}

ShardStats doc_freq_stats(const PassageIndex& shard, std::span<const std::string> terms) {
    ShardStats out;
    out.collection = collection_stats(shard);
    for (const auto& t : terms) out.terms[t].df = shard.doc_freq(t);
    return out;
}

CollectionStats combine(std::span<const CollectionStats> shards) {
    CollectionStats out;
    for (const auto& s : shards) {
        out.documents += s.documents;
        out.total_length += s.total_length;
    }
    return out;
}

ShardStats combine(std::span<const ShardStats> shards) {
    ShardStats out;
    for (const auto& s : shards) {
        out.collection.documents += s.collection.documents;
        out.collection.total_length += s.collection.total_length;
        for (const auto& [term, t] : s.terms) {
            auto& g = out.terms[term];
            g.df += t.df;
            g.max_tf = std::max(g.max_tf, t.max_tf);
            g.min_dl = std::min(g.min_dl, t.min_dl);
            g.max_frac_default = std::max(g.max_frac_default, t.max_frac_default);
        }
    }
    return out;
}

}  // namespace plumb::index
