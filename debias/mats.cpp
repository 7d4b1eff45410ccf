#include "debias/mats.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <unordered_map>

#include "plugin/error.hpp"

namespace plumb::debias {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

struct Occ {
    std::uint32_t passage;
    const float* vec;
    double norm;
};

double cosine(const Occ& a, const Occ& b, std::size_t dim) {
    if (a.norm == 0 || b.norm == 0) return 0.0;
    double dot = 0;
    for (std::size_t k = 0; k < dim; ++k) dot += static_cast<double>(a.vec[k]) * b.vec[k];
    return dot / (a.norm * b.norm);
}

/// Uniform integer in [0, n) from a 64-bit generator (portable, unlike std distributions).
std::uint64_t uniform(std::mt19937_64& rng, std::uint64_t n) {
    // Rejection sampling removes modulo bias.
    std::uint64_t limit = std::numeric_limits<std::uint64_t>::max() -
                          std::numeric_limits<std::uint64_t>::max() % n;
    std::uint64_t x;
    do {
        x = rng();
    } while (x >= limit);
    return x % n;
}

}  // namespace

double mats_from_curve(const std::vector<double>& ats) {
    if (ats.size() < 3 || std::isnan(ats[0])) return kNaN;
    const std::size_t max_delta = ats.size() - 1;
    double sum = 0;
    for (std::size_t i = 1; i <= max_delta; ++i) {
        if (!std::isnan(ats[i])) sum += ats[0] - ats[i];
    }
    return sum / static_cast<double>(max_delta - 1);
}

AtsCurve compute_ats(std::span<const PassageTermVectors> passages, std::size_t dim,
                     const AtsOptions& options) {
    if (dim == 0) throw InvalidArgument("compute_ats: vector dimension must be positive");
    if (options.max_pairs == 0) throw InvalidArgument("compute_ats: max_pairs must be positive");
    // term -> position -> occurrences; std::map keeps the iteration order deterministic.
    std::map<std::string, std::map<std::uint32_t, std::vector<Occ>>> index;
    std::uint32_t largest_pos = 0;
    for (std::size_t p = 0; p < passages.size(); ++p) {
        const auto& pv = passages[p];
        if (pv.positions.size() != pv.terms.size() || pv.vectors.size() != pv.terms.size() * dim) {
            throw InvalidArgument("compute_ats: passage " + std::to_string(p) +
                                  " has inconsistent terms/positions/vectors sizes");
        }
        for (std::size_t i = 0; i < pv.terms.size(); ++i) {
            const float* v = pv.vectors.data() + i * dim;
            double n = 0;
            for (std::size_t k = 0; k < dim; ++k) n += static_cast<double>(v[k]) * v[k];
            index[pv.terms[i]][pv.positions[i]].push_back(
                {static_cast<std::uint32_t>(p), v, std::sqrt(n)});
            largest_pos = std::max(largest_pos, pv.positions[i]);
        }
    }
    std::size_t max_delta = options.max_delta ? options.max_delta : largest_pos;
    std::vector<double> sum(max_delta + 1, 0.0), sumsq(max_delta + 1, 0.0);
    std::vector<std::size_t> count(max_delta + 1, 0);
    std::mt19937_64 rng(options.seed);

    struct PosPair {
        const std::vector<Occ>* a;
        const std::vector<Occ>* b;
        std::uint64_t weight;
        bool same;  // Δa = 0: pairs within one position list
    };
    std::vector<std::vector<PosPair>> by_delta(max_delta + 1);
    for (const auto& [term, positions] : index) {
        for (auto& v : by_delta) v.clear();
        for (auto it1 = positions.begin(); it1 != positions.end(); ++it1) {
            const auto& l1 = it1->second;
            if (l1.size() >= 2) {
                by_delta[0].push_back({&l1, &l1, l1.size() * (l1.size() - 1) / 2, true});
            }
            for (auto it2 = std::next(it1); it2 != positions.end(); ++it2) {
                std::size_t d = it2->first - it1->first;
                if (d > max_delta) break;
                by_delta[d].push_back({&l1, &it2->second, l1.size() * it2->second.size(), false});
            }
        }
        for (std::size_t d = 0; d <= max_delta; ++d) {
            const auto& pairs = by_delta[d];
            if (pairs.empty()) continue;
            std::uint64_t total = 0;
            for (const auto& pp : pairs) total += pp.weight;
            double s = 0;
            std::size_t n = 0;
            if (total <= options.max_pairs) {
                for (const auto& pp : pairs) {
                    for (std::size_t i = 0; i < pp.a->size(); ++i) {
                        for (std::size_t j = pp.same ? i + 1 : 0; j < pp.b->size(); ++j) {
                            const Occ& x = (*pp.a)[i];
                            const Occ& y = (*pp.b)[j];
                            if (x.passage == y.passage) continue;
                            s += cosine(x, y, dim);
                            ++n;
                        }
                    }
                }
            } else {
                std::size_t attempts = 0, limit = options.max_pairs * 20;
                while (n < options.max_pairs && attempts++ < limit) {
                    std::uint64_t r = uniform(rng, total);
                    std::size_t k = 0;
                    while (r >= pairs[k].weight) r -= pairs[k++].weight;
                    const auto& pp = pairs[k];
                    std::size_t i = uniform(rng, pp.a->size());
                    std::size_t j = uniform(rng, pp.b->size());
                    if (pp.same && i == j) continue;
                    const Occ& x = (*pp.a)[i];
                    const Occ& y = (*pp.b)[j];
                    if (x.passage == y.passage) continue;
                    s += cosine(x, y, dim);
                    ++n;
                }
            }
            if (n == 0) continue;  // every pair was within one passage: t has no pair here
            double mean = s / static_cast<double>(n);
            sum[d] += mean;
            sumsq[d] += mean * mean;
            ++count[d];
        }
    }
    AtsCurve out;
    out.ats.assign(max_delta + 1, kNaN);
    out.sd.assign(max_delta + 1, kNaN);
    out.terms = count;
    for (std::size_t d = 0; d <= max_delta; ++d) {
        if (count[d] == 0) continue;
        double m = sum[d] / static_cast<double>(count[d]);
        out.ats[d] = m;
        out.sd[d] = std::sqrt(std::max(0.0, sumsq[d] / static_cast<double>(count[d]) - m * m));
    }
    // Trim trailing Δa without pairs when the range was inferred.
    if (options.max_delta == 0) {
        while (out.ats.size() > 1 && std::isnan(out.ats.back())) {
            out.ats.pop_back();
            out.sd.pop_back();
            out.terms.pop_back();
        }
    }
    out.mats = mats_from_curve(out.ats);
    return out;
}

}  // namespace plumb::debias
