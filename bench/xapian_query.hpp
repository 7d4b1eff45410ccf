// The Xapian peer's query, shared by the benchmarks that compare plumb's BM25 with Xapian
// (bench_index, bench_pipeline): plumb's analyzer output as a bag of words (distinct terms in
// order of first occurrence, wqf = count) combined with OP_OR.
#pragma once

#include <xapian.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "index/analysis.hpp"

namespace plumb::bench {

inline Xapian::Query xapian_bag_query(const plumb::index::Analyzer& analyzer,
                                      const std::string& text) {
    auto terms = analyzer.analyze(text);
    std::vector<std::pair<std::string, unsigned>> bag;
    for (auto& t : terms) {
        auto it = std::find_if(bag.begin(), bag.end(), [&](auto& p) { return p.first == t; });
        if (it == bag.end())
            bag.emplace_back(std::move(t), 1);
        else
            ++it->second;
    }
    std::vector<Xapian::Query> sub;
    for (auto& [t, c] : bag) sub.emplace_back(t, c);
    return Xapian::Query(Xapian::Query::OP_OR, sub.begin(), sub.end());
}

}  // namespace plumb::bench
