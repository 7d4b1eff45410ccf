#pragma once
/// \file shard_stats.hpp
/// Sharded search, piece 1: the statistics BM25 needs, per shard and combined over all shards
/// (see sharded_searcher.hpp for the whole protocol and README.md "Sharded indexes").
///
/// Every score over a sharded collection must equal, bit for bit, the score one index built over
/// the whole corpus gives. BM25 (bm25_searcher.hpp) reads three collection-wide quantities:
/// N, avgdl = total_length / N and df(t); and its canonical term order (the order in which a
/// document's float contributions are summed) sorts terms by an upper bound that depends on the
/// postings of the whole collection. So the exchange has two rounds:
///  1. once per collection: each shard's CollectionStats (documents, total length), combined by
///     summing; this fixes N and avgdl;
///  2. per query (and per RM3 pass): each shard's TermStats for the query's terms, computed with
///     the combined CollectionStats, combined by sum (df), max (max_tf, max_frac), min (min_dl).
/// All types are plain values: a host may serialise them between machines as it likes.

#include <cstdint>
#include <limits>
#include <map>
#include <span>
#include <string>
#include <string_view>

namespace plumb::index {

class PassageIndex;

/// Collection-level statistics of one shard or, combined, of the whole collection.
struct CollectionStats {
    std::uint64_t documents = 0;     ///< N
    std::uint64_t total_length = 0;  ///< sum of exact document lengths (analysed tokens)

    /// total_length / documents in double, exactly as a single index computes it (0 when empty).
    double avgdl() const noexcept {
        return documents ? static_cast<double>(total_length) / static_cast<double>(documents) : 0;
    }
};

/// Statistics of one term in one shard or, combined, in the whole collection.
struct TermStats {
    std::uint64_t df = 0;      ///< documents containing the term
    std::uint32_t max_tf = 0;  ///< largest tf in its postings (0 when df == 0)
    /// Smallest document length in its postings (max uint32 when df == 0).
    std::uint32_t min_dl = std::numeric_limits<std::uint32_t>::max();
    /// max over its postings of tf (k1 + 1) / (tf + k1 (1 - b + b dl / avgdl)) at the default
    /// k1 = 0.9, b = 0.4 and the *collection's* avgdl (what a single index stores as its BM25
    /// upper bound); 0 when df == 0 or when the statistics were taken for other BM25 parameters.
    float max_frac_default = 0;
};

/// Query-term statistics of one shard, or combined over all shards (then the global statistics a
/// shard-local search takes). Terms are analysed terms (byte strings), looked up exactly.
struct ShardStats {
    CollectionStats collection;  ///< the shard's own (combined: the whole collection's)
    std::map<std::string, TermStats, std::less<>> terms;

    /// The statistics of `term`, or nullptr when it was not asked for.
    const TermStats* find(std::string_view term) const;
};

/// The collection statistics of one shard (from its metadata).
CollectionStats collection_stats(const PassageIndex& shard);

/// Document frequencies only (max_tf, min_dl, max_frac_default left as for an absent term) of
/// `terms` in one shard: what RM3's exchange needs (rm3.hpp, rm3_df_terms), no postings read.
ShardStats doc_freq_stats(const PassageIndex& shard, std::span<const std::string> terms);

/// Sums the shards' collection statistics.
CollectionStats combine(std::span<const CollectionStats> shards);

/// Combines per-shard term statistics into the whole collection's: collection statistics and df
/// summed, max_tf and max_frac_default by maximum, min_dl by minimum. A term missing from one
/// shard's map counts as absent there (df 0). The result does not depend on the shards' order.
ShardStats combine(std::span<const ShardStats> shards);

}  // namespace plumb::index
