#pragma once
/// \file detail/bm25_maxscore.hpp
/// INTERNAL: SearchAlgorithm::MaxScore (the algorithms' contract: detail/bm25_query.hpp).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "index/detail/bm25_query.hpp"  // the contract, the queues, the workspace

namespace plumb::index::detail {

/// Document-at-a-time MaxScore (Turtle and Flood, 1995): terms sorted by upper bound
/// ascending; once `top` is full, the terms whose cumulated bounds cannot reach its worst score
/// are non-essential: documents are enumerated from the essential terms' cursors only, and the
/// non-essential ones are looked up (skipping) while the document can still enter.
struct Bm25MaxScore {
    void operator()(const Bm25Query& query, Bm25Workspace& ws, TopKHeap& top) const {
        const auto& q = query.terms;
        const float k1p1 = query.k1p1;
        const IndexData& d = ws.index();
        const std::size_t m = q.size();
        // Order terms by upper bound ascending; order[j] = query position of the j-th term.
        std::vector<std::size_t> order(m);
        for (std::size_t i = 0; i < m; ++i) order[i] = i;
        std::stable_sort(order.begin(), order.end(),
                         [&](std::size_t a, std::size_t b) { return q[a].ub < q[b].ub; });
        std::vector<double> cum(m);  // cum[j] = sum of bounds of terms 0..j (sorted)
        double s = 0;
        for (std::size_t j = 0; j < m; ++j) cum[j] = (s += q[order[j]].ub);
        std::vector<PostingCursor*> cur(m);
        for (std::size_t j = 0; j < m; ++j) {
            cur[j] = &ws.cursor(j);
            cur[j]->open(*q[order[j]].entry, d.body_term);
        }
        std::vector<float> contrib(m);  // by query position
        std::vector<char> matched(m);
        const float* nm = query.norm;
        const std::uint32_t* rank = d.idrank.data();
        double theta = -1.0;  // no threshold until the heap is full
        std::size_t p = 0;    // terms [0, p) are non-essential
        while (p < m) {
            std::uint32_t doc = kEndDoc;
            for (std::size_t j = p; j < m; ++j) doc = std::min(doc, cur[j]->doc);
            if (doc == kEndDoc) break;
            std::fill(matched.begin(), matched.end(), 0);
            double est = 0;
            // The contribution of the j-th sorted term, whose cursor is on `doc`.
            auto take = [&](std::size_t j, const PostingCursor& c) {
                std::size_t qi = order[j];
                float v = q[qi].w * bm25_frac(static_cast<float>(c.tf), k1p1, nm[doc]);
                contrib[qi] = v;
                matched[qi] = 1;
                est += v;
            };
            for (std::size_t j = p; j < m; ++j) {
                PostingCursor& c = *cur[j];
                if (c.doc == doc) {
                    take(j, c);
                    c.next();
                }
            }
            bool pruned = false;
            for (std::size_t j = p; j-- > 0;) {
                if ((est + cum[j]) * (1.0 + kBoundSlack) < theta) {
                    pruned = true;
                    break;
                }
                PostingCursor& c = *cur[j];
                c.next_geq(doc);
                if (c.doc == doc) take(j, c);
            }
            if (pruned) continue;
            // Exact score: contributions summed in query term order, as the exhaustive path does.
            float score = 0.0f;
            for (std::size_t qi = 0; qi < m; ++qi) {
                if (matched[qi]) score += contrib[qi];
            }
            TopKEntry e{score, rank[doc], doc};
            if (top.accepts(e)) {
                top.push(e);
                if (top.full()) {
                    theta = top.worst().score;
                    while (p < m && cum[p] * (1.0 + kBoundSlack) < theta) ++p;
                }
            }
        }
    }
};

}  // namespace plumb::index::detail
