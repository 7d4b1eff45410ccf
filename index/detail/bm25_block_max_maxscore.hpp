#pragma once
/// \file detail/bm25_block_max_maxscore.hpp
/// INTERNAL: SearchAlgorithm::BlockMaxMaxScore, the default for k <= SearchOptions::pruning_max_k
/// on indexes with block-max metadata (postings.bin version 2; the algorithms' contract:
/// detail/bm25_query.hpp).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "index/detail/bm25_block_cursor.hpp"
#include "index/detail/bm25_query.hpp"  // the contract, the queues, the workspace

namespace plumb::index::detail {

/// Document-at-a-time block-max MaxScore (Chakrabarti et al., WSDM 2011; Dimopoulos et al.,
/// WSDM 2013; PISA's block_max_maxscore_query). As MaxScore (detail/bm25_maxscore.hpp): terms
/// sorted by list upper bound ascending, the prefix whose cumulated bounds cannot reach the heap's
/// worst score is non-essential and documents are enumerated from the essential lists only. Each
/// candidate's essential partial score is then completed with the block upper bounds of the
/// non-essential lists at that document (their block pointers move without decoding): when even
/// that cannot reach the threshold, no non-essential posting is decoded. Otherwise the
/// non-essential lists are looked up from the highest bound down, stopping as soon as the
/// partial score plus the remaining block bounds falls short. (Skipping whole ranges of the
/// essential lists when the sum of all lists' block bounds falls short, as block-max WAND does,
/// measured ~10 % slower on the benchmark collection: its 128-posting blocks of the frequent
/// words span few documents, so the ranges were short and the check ran for every candidate.)
struct Bm25BlockMaxMaxScore {
    void operator()(const Bm25Query& query, Bm25Workspace& ws, TopKHeap& top) const {
        const auto& q = query.terms;
        const float k1p1 = query.k1p1;
        const IndexData& d = ws.index();
        const std::size_t m = q.size();
        // Order terms by upper bound ascending; order[j] = query position of the j-th term.
        auto& order = ws.order;
        order.resize(m);
        for (std::size_t i = 0; i < m; ++i) order[i] = i;
        std::stable_sort(order.begin(), order.end(),
                         [&](std::size_t a, std::size_t b) { return q[a].ub < q[b].ub; });
        auto& cum = ws.cum;  // cum[j] = sum of list bounds of sorted terms 0..j
        cum.resize(m);
        double s = 0;
        for (std::size_t j = 0; j < m; ++j) cum[j] = (s += q[order[j]].ub);
        auto& cur = ws.block_cursors;
        cur.resize(m);
        auto& w = ws.weight;  // by sorted position
        w.resize(m);
        for (std::size_t j = 0; j < m; ++j) {
            const Bm25Term& t = q[order[j]];
            cur[j] = &ws.block_cursor(j);
            cur[j]->open(d.postings, static_cast<std::uint64_t>(t.entry - d.terms.data()),
                         static_cast<std::uint32_t>(t.entry->df), query.block_bound, query.norm);
            w[j] = t.w;
        }
        auto& contrib = ws.contrib;  // by query position; zero between documents
        contrib.assign(m, 0.0f);
        auto& bcum = ws.block_cum;  // bcum[j] = block bounds of sorted terms 0..j at `doc`
        bcum.resize(m);
        const float* nm = query.norm;
        const std::uint32_t* rank = d.idrank.data();
        constexpr double kUp = 1.0 + kBoundSlack;
        double theta = -1.0;  // no threshold until the heap is full
        std::size_t p = 0;    // terms [0, p) are non-essential
        while (p < m) {
            std::uint32_t doc = kEndDoc;
            for (std::size_t j = p; j < m; ++j) doc = std::min(doc, cur[j]->doc);
            if (doc == kEndDoc) break;
            const float nd = nm[doc];
            double est = 0;
            for (std::size_t j = p; j < m; ++j) {
                BlockCursor& c = *cur[j];
                if (c.doc == doc) {
                    float v = w[j] * bm25_frac(static_cast<float>(c.tf), k1p1, nd);
                    contrib[order[j]] = v;
                    est += v;
                    c.next();
                }
            }
            bool pruned = false;
            if (p > 0) {
                // Block bounds of the non-essential lists at `doc` (0 past a list's end).
                double b = 0;
                for (std::size_t j = 0; j < p; ++j) {
                    BlockCursor& c = *cur[j];
                    if (c.shallow_geq(doc)) b += static_cast<double>(w[j]) * c.block_frac();
                    bcum[j] = b;
                }
                if ((est + b) * kUp < theta) {
                    pruned = true;
                } else {
                    for (std::size_t j = p; j-- > 0;) {
                        if ((est + bcum[j]) * kUp < theta) {
                            pruned = true;
                            break;
                        }
                        BlockCursor& c = *cur[j];
                        c.next_geq(doc);
                        if (c.doc == doc) {
                            float v = w[j] * bm25_frac(static_cast<float>(c.tf), k1p1, nd);
                            contrib[order[j]] = v;
                            est += v;
                        }
                    }
                }
            }
            // Exact score: contributions summed in query term order, as the exhaustive path does
            // (adding the zero of an unmatched term leaves a positive float sum unchanged).
            float score = 0.0f;
            for (std::size_t qi = 0; qi < m; ++qi) {
                score += contrib[qi];
                contrib[qi] = 0.0f;
            }
            // Below the worst kept score: out, without loading the id rank (a cache miss).
            if (pruned || static_cast<double>(score) < theta) continue;
            TopKEntry e{score, rank[doc], doc};
            if (top.accepts(e)) {
                top.push(e);
                if (top.full()) {
                    theta = top.worst().score;
                    while (p < m && cum[p] * kUp < theta) ++p;
                }
            }
        }
    }
};

}  // namespace plumb::index::detail
