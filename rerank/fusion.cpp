#include "rerank/fusion.hpp"

#include <algorithm>
#include <map>
#include <unordered_map>

#include "plugin/error.hpp"

namespace plumb::rerank {

namespace {

struct Accumulator {
    std::vector<Candidate> docs;
    std::vector<double> scores;
    std::unordered_map<std::string, std::size_t> index;

    std::size_t slot(const Candidate& c) {
        auto [it, inserted] = index.emplace(c.docid, docs.size());
        if (inserted) {
            docs.push_back(c);
            scores.push_back(0.0);
        }
        return it->second;
    }

    RankedList finish(std::string qid, std::size_t depth, const std::string& stage) {
        std::vector<std::size_t> order(docs.size());
        for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
        std::sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) {
            if (scores[x] != scores[y]) return scores[x] > scores[y];
            return docs[x].docid < docs[y].docid;
        });
        if (depth > 0 && order.size() > depth) order.resize(depth);
        RankedList out;
        out.qid = std::move(qid);
        for (auto i : order) {
            Candidate c = std::move(docs[i]);
            c.score = static_cast<float>(scores[i]);
            c.trace.push_back({stage, c.score});
            out.candidates.push_back(std::move(c));
        }
        return out;
    }
};

std::string qid_of(std::span<const RankedList> lists) {
    for (const auto& l : lists) {
        if (!l.qid.empty()) return l.qid;
    }
    return "";
}

}  // namespace

RankedList reciprocal_rank_fusion(std::span<const RankedList> lists, double k, std::size_t depth,
                                  const std::string& stage) {
    if (!(k >= 0)) throw InvalidArgument("reciprocal_rank_fusion: k must be >= 0");
    Accumulator acc;
    for (const auto& list : lists) {
        for (std::size_t r = 0; r < list.candidates.size(); ++r) {
            const auto slot = acc.slot(list.candidates[r]);
            acc.scores[slot] += 1.0 / (k + static_cast<double>(r + 1));
        }
    }
    return acc.finish(qid_of(lists), depth, stage);
}

RankedList interpolate_scores(const RankedList& a, const RankedList& b, double alpha,
                              std::size_t depth, const std::string& stage) {
    if (!(alpha >= 0 && alpha <= 1)) {
        throw InvalidArgument("interpolate_scores: alpha must be in [0, 1]");
    }
    Accumulator acc;
    auto add = [&](const RankedList& list, double weight) {
        if (list.candidates.empty()) return;
        double lo = list.candidates.front().score, hi = lo;
        for (const auto& c : list.candidates) {
            lo = std::min<double>(lo, c.score);
            hi = std::max<double>(hi, c.score);
        }
        for (const auto& c : list.candidates) {
            const double norm = hi > lo ? (c.score - lo) / (hi - lo) : 1.0;
            const auto slot = acc.slot(c);
            acc.scores[slot] += weight * norm;
        }
    };
    add(a, alpha);
    add(b, 1.0 - alpha);
    const RankedList both[2] = {a, b};
    return acc.finish(qid_of(both), depth, stage);
}

std::vector<RankedList> fuse_runs(const std::vector<RankedList>& a,
                                  const std::vector<RankedList>& b, const std::string& method,
                                  double alpha, std::size_t depth, double rrf_k) {
    if (method != "rrf" && method != "interp") {
        throw InvalidArgument("unknown fusion method '" + method + "' (known: rrf, interp)");
    }
    std::map<std::string, const RankedList*> by_qid;
    for (const auto& l : b) by_qid[l.qid] = &l;
    std::vector<RankedList> out;
    std::map<std::string, bool> seen;
    auto fuse = [&](const RankedList& x, const RankedList& y, const std::string& qid) {
        RankedList r = method == "rrf"
                           ? reciprocal_rank_fusion(std::vector<RankedList>{x, y}, rrf_k, depth)
                           : interpolate_scores(x, y, alpha, depth);
        r.qid = qid;
        out.push_back(std::move(r));
    };
    const RankedList empty;
    for (const auto& l : a) {
        seen[l.qid] = true;
        auto it = by_qid.find(l.qid);
        fuse(l, it == by_qid.end() ? empty : *it->second, l.qid);
    }
    for (const auto& l : b) {
        if (!seen.count(l.qid)) fuse(empty, l, l.qid);
    }
    return out;
}

}  // namespace plumb::rerank
