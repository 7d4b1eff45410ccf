#include "eval/fuse.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <unordered_map>
#include <utility>

#include "plugin/error.hpp"

namespace plumb::eval {

namespace {

// ranx guards every normalisation denominator with max(denominator, 1e-9).
constexpr double kNormFloor = 1e-9;

struct MethodName {
    std::string_view name;
    FusionMethod method;
};
constexpr std::array<MethodName, 15> kMethods{{
    {"rrf", FusionMethod::Rrf},
    {"combsum", FusionMethod::CombSum},
    {"combmnz", FusionMethod::CombMnz},
    {"combanz", FusionMethod::CombAnz},
    {"combmax", FusionMethod::CombMax},
    {"combmin", FusionMethod::CombMin},
    {"combmed", FusionMethod::CombMed},
    {"wsum", FusionMethod::WSum},
    {"wmnz", FusionMethod::WMnz},
    // ranx's short names
    {"sum", FusionMethod::CombSum},
    {"mnz", FusionMethod::CombMnz},
    {"anz", FusionMethod::CombAnz},
    {"max", FusionMethod::CombMax},
    {"min", FusionMethod::CombMin},
    {"med", FusionMethod::CombMed},
}};

struct NormName {
    std::string_view name;
    ScoreNorm norm;
};
constexpr std::array<NormName, 6> kNorms{{
    {"none", ScoreNorm::None},
    {"min-max", ScoreNorm::MinMax},
    {"z-score", ScoreNorm::ZScore},
    {"max", ScoreNorm::Max},
    {"sum", ScoreNorm::Sum},
    {"zmuv", ScoreNorm::ZScore},  // ranx's name
}};

/// One document of one input list: its id, its score, where it came from.
struct Entry {
    std::string_view docid;
    double score = 0.0;
    const Candidate* source = nullptr;  ///< in-memory input: text and trace to carry over
    std::uint64_t line = 0;             ///< run-file input: line, for errors
};

/// One input list of one query, in rank order (best first).
struct ListView {
    std::vector<Entry> entries;
    std::string_view file;  ///< run file name for errors (empty for in-memory lists)
};

/// Per-document accumulator over the lists retrieving it.
struct Slot {
    std::string_view docid;
    const Candidate* source = nullptr;
    double sum = 0.0;           ///< Σ s_i
    double weighted = 0.0;      ///< Σ w_i s_i
    double weight_total = 0.0;  ///< Σ w_i
    double max = -std::numeric_limits<double>::infinity();
    double min = std::numeric_limits<double>::infinity();
    std::size_t count = 0;
    std::vector<double> values;  ///< CombMED only
    double fused = 0.0;
    float stored = 0.0f;
};

void validate(const FusionOptions& o, std::size_t lists) {
    if (!(o.rrf_k >= 0) || !std::isfinite(o.rrf_k)) {
        throw InvalidArgument("fusion: rrf k must be a finite number >= 0");
    }
    if (!std::isfinite(o.min_max_constant)) {
        throw InvalidArgument("fusion: min_max_constant must be finite");
    }
    const auto method = std::string(fusion_method_name(o.method));
    if (!o.weights.empty() && !fusion_takes_weights(o.method)) {
        throw InvalidArgument("fusion: method " + method +
                              " takes no weights (weights apply to rrf, wsum, wmnz)");
    }
    if (o.weights.empty() && fusion_needs_weights(o.method)) {
        throw InvalidArgument("fusion: method " + method + " needs one weight per list");
    }
    if (!o.weights.empty() && o.weights.size() != lists) {
        throw InvalidArgument("fusion: " + std::to_string(o.weights.size()) + " weights for " +
                              std::to_string(lists) + " lists");
    }
    for (double w : o.weights) {
        if (!std::isfinite(w)) throw InvalidArgument("fusion: weights must be finite");
    }
}

/// The list's scores normalised per `norm` (ranx's definitions, see fuse.hpp).
std::vector<double> normalise(const ListView& list, ScoreNorm norm, double min_max_constant) {
    std::vector<double> out;
    out.reserve(list.entries.size());
    for (const auto& e : list.entries) out.push_back(e.score);
    if (out.empty() || norm == ScoreNorm::None) return out;
    double lo = out.front(), hi = out.front(), total = 0.0;
    for (double s : out) {
        lo = std::min(lo, s);
        hi = std::max(hi, s);
        total += s;
    }
    const auto n = static_cast<double>(out.size());
    switch (norm) {
        case ScoreNorm::None:
            break;
        case ScoreNorm::MinMax:
            for (double& s : out) {
                s = hi > lo ? (s - lo) / std::max(hi - lo, kNormFloor) : min_max_constant;
            }
            break;
        case ScoreNorm::ZScore: {
            const double mean = total / n;
            double ss = 0.0;
            for (double s : out) ss += (s - mean) * (s - mean);
            const double sd = std::max(std::sqrt(ss / n), kNormFloor);
            for (double& s : out) s = (s - mean) / sd;
            break;
        }
        case ScoreNorm::Max: {
            const double d = std::max(hi, kNormFloor);
            for (double& s : out) s /= d;
            break;
        }
        case ScoreNorm::Sum: {
            const double d = std::max(total - lo * n, kNormFloor);
            for (double& s : out) s = (s - lo) / d;
            break;
        }
    }
    return out;
}

double median(std::vector<double>& v) {
    const auto mid = v.size() / 2;
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
    const double upper = v[mid];
    if (v.size() % 2 == 1) return upper;
    const double lower = *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid));
    return (lower + upper) / 2.0;
}

double combine(FusionMethod method, Slot& s) {
    const auto n = static_cast<double>(s.count);
    switch (method) {
        case FusionMethod::Rrf:
        case FusionMethod::WSum:
            return s.weighted;
        case FusionMethod::CombSum:
            return s.sum;
        case FusionMethod::CombMnz:
            return s.sum * n;
        case FusionMethod::CombAnz:
            return s.sum / n;
        case FusionMethod::CombMax:
            return s.max;
        case FusionMethod::CombMin:
            return s.min;
        case FusionMethod::CombMed:
            return median(s.values);
        case FusionMethod::WMnz:
            return s.sum * s.weight_total;
    }
    return 0.0;
}

/// The fusion itself; every public entry point ends here. Options validated by the caller.
RankedList fuse_views(std::string qid, std::span<const ListView> lists, const FusionOptions& o) {
    const bool scores = fusion_uses_scores(o.method);
    std::vector<Slot> slots;
    std::unordered_map<std::string_view, std::size_t> index;
    for (std::size_t li = 0; li < lists.size(); ++li) {
        const auto& list = lists[li];
        if (scores) {
            for (const auto& e : list.entries) {
                if (std::isfinite(e.score)) continue;
                if (e.line > 0) {
                    throw ParseError(std::string(list.file), e.line,
                                     "score is not finite (" +
                                         std::string(fusion_method_name(o.method)) +
                                         " fuses scores)");
                }
                throw InvalidArgument("fusion: document " + std::string(e.docid) + " of query " +
                                      qid + " has a non-finite score");
            }
        }
        const double weight = o.weights.empty() ? 1.0 : o.weights[li];
        std::vector<double> values;
        if (scores) values = normalise(list, o.norm, o.min_max_constant);
        for (std::size_t r = 0; r < list.entries.size(); ++r) {
            const auto& e = list.entries[r];
            // RRF is a weighted sum of reciprocal ranks (as in ranx: rrf scores, then comb_sum).
            const double s = scores ? values[r] : 1.0 / (o.rrf_k + static_cast<double>(r + 1));
            auto [it, inserted] = index.emplace(e.docid, slots.size());
            if (inserted) {
                slots.emplace_back();
                slots.back().docid = e.docid;
                slots.back().source = e.source;
            }
            Slot& slot = slots[it->second];
            slot.sum += s;
            slot.weighted += weight * s;
            slot.weight_total += weight;
            slot.max = std::max(slot.max, s);
            slot.min = std::min(slot.min, s);
            ++slot.count;
            if (o.method == FusionMethod::CombMed) slot.values.push_back(s);
        }
    }
    for (auto& s : slots) {
        s.fused = combine(o.method, s);
        s.stored = static_cast<float>(s.fused);
    }
    // Sorted by the score a run file will hold (the float), so that ranks follow written
    // scores; ties by docid ascending.
    auto before = [](const Slot* a, const Slot* b) {
        if (a->stored != b->stored) return a->stored > b->stored;
        return a->docid < b->docid;
    };
    std::vector<const Slot*> order;
    order.reserve(slots.size());
    for (const auto& s : slots) order.push_back(&s);
    const std::size_t keep = o.depth > 0 && o.depth < order.size() ? o.depth : order.size();
    std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(keep), order.end(),
                      before);
    RankedList out;
    out.qid = std::move(qid);
    out.candidates.reserve(keep);
    for (std::size_t i = 0; i < keep; ++i) {
        const Slot& s = *order[i];
        Candidate c;
        if (s.source != nullptr) {
            c = *s.source;
        } else {
            c.docid = std::string(s.docid);
        }
        c.score = s.stored;
        c.trace.push_back({o.stage, c.score});
        out.candidates.push_back(std::move(c));
    }
    return out;
}

ListView view_of(const RankedList& list) {
    ListView v;
    v.entries.reserve(list.candidates.size());
    for (const auto& c : list.candidates) v.entries.push_back({c.docid, c.score, &c, 0});
    return v;
}

/// A run query's lines in trec_eval's order: score descending, ties by docid descending.
ListView view_of(const RunQuery& q, std::string_view file) {
    ListView v;
    v.file = file;
    v.entries.reserve(q.docs.size());
    for (const auto& d : q.docs) v.entries.push_back({q.docid(d), d.score, nullptr, d.line});
    std::sort(v.entries.begin(), v.entries.end(), [](const Entry& a, const Entry& b) {
        if (a.score != b.score) return a.score > b.score;
        return a.docid > b.docid;
    });
    return v;
}

/// Matches the runs' queries by qid (union, in order of first appearance) and fuses each.
/// `queries(i)` is run i's queries; `qid_of(q)` a query's id; `view(i, q)` its ListView.
template <class Query, class Queries, class QidOf, class View>
std::vector<RankedList> fuse_by_qid(std::size_t runs, Queries queries, QidOf qid_of, View view,
                                    const FusionOptions& o) {
    validate(o, runs);
    std::vector<std::string_view> order;
    std::unordered_map<std::string_view, std::vector<const Query*>> by_qid;
    for (std::size_t i = 0; i < runs; ++i) {
        for (const Query& q : queries(i)) {
            const std::string_view qid = qid_of(q);
            auto [it, inserted] = by_qid.try_emplace(qid, runs, nullptr);
            if (inserted) order.push_back(qid);
            if (it->second[i] != nullptr) {
                throw InvalidArgument("fusion: run " + std::to_string(i + 1) + " holds query " +
                                      std::string(qid) + " twice");
            }
            it->second[i] = &q;
        }
    }
    std::vector<RankedList> out;
    out.reserve(order.size());
    std::vector<ListView> views(runs);
    for (auto qid : order) {
        const auto& per_run = by_qid.at(qid);
        for (std::size_t i = 0; i < runs; ++i) {
            views[i] = per_run[i] != nullptr ? view(i, *per_run[i]) : ListView{};
        }
        out.push_back(fuse_views(std::string(qid), views, o));
    }
    return out;
}

}  // namespace

FusionMethod parse_fusion_method(std::string_view name) {
    for (const auto& m : kMethods) {
        if (m.name == name) return m.method;
    }
    throw ConfigError("unknown fusion method '" + std::string(name) +
                      "' (known: rrf, combsum, combmnz, combanz, combmax, combmin, combmed, "
                      "wsum, wmnz; ranx's sum, mnz, anz, max, min, med)");
}

ScoreNorm parse_score_norm(std::string_view name) {
    for (const auto& n : kNorms) {
        if (n.name == name) return n.norm;
    }
    throw ConfigError("unknown score normalisation '" + std::string(name) +
                      "' (known: none, min-max, z-score, max, sum)");
}

std::string_view fusion_method_name(FusionMethod method) noexcept {
    for (const auto& m : kMethods) {
        if (m.method == method) return m.name;
    }
    return "?";
}

std::string_view score_norm_name(ScoreNorm norm) noexcept {
    for (const auto& n : kNorms) {
        if (n.norm == norm) return n.name;
    }
    return "?";
}

bool fusion_takes_weights(FusionMethod method) noexcept {
    return method == FusionMethod::Rrf || fusion_needs_weights(method);
}

bool fusion_needs_weights(FusionMethod method) noexcept {
    return method == FusionMethod::WSum || method == FusionMethod::WMnz;
}

bool fusion_uses_scores(FusionMethod method) noexcept { return method != FusionMethod::Rrf; }

RankedList fuse(std::span<const RankedList> lists, const FusionOptions& options) {
    validate(options, lists.size());
    std::string qid;
    std::vector<ListView> views;
    views.reserve(lists.size());
    for (const auto& l : lists) {
        if (qid.empty()) qid = l.qid;
        views.push_back(view_of(l));
    }
    return fuse_views(std::move(qid), views, options);
}

std::vector<RankedList> fuse_runs(std::span<const std::vector<RankedList>> runs,
                                  const FusionOptions& options) {
    return fuse_by_qid<RankedList>(
        runs.size(), [&](std::size_t i) -> const std::vector<RankedList>& { return runs[i]; },
        [](const RankedList& l) -> std::string_view { return l.qid; },
        [](std::size_t, const RankedList& l) { return view_of(l); }, options);
}

std::vector<RankedList> fuse_runs(std::span<const Run> runs, const FusionOptions& options) {
    return fuse_by_qid<RunQuery>(
        runs.size(), [&](std::size_t i) -> const std::vector<RunQuery>& { return runs[i].queries; },
        [](const RunQuery& q) -> std::string_view { return q.qid; },
        [&](std::size_t i, const RunQuery& q) { return view_of(q, runs[i].name); }, options);
}

}  // namespace plumb::eval
