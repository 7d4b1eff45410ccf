#include "eval/bias_metrics.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <memory>

#include "eval/detail_parse.hpp"
#include "plugin/error.hpp"
#include "plugin/text_io.hpp"

namespace plumb::eval {

std::vector<QueryRanking> rankings_from_run(const Run& run, std::size_t depth) {
    std::vector<QueryRanking> out;
    out.reserve(run.queries.size());
    std::vector<std::size_t> order;
    for (const auto& q : run.queries) {
        order.resize(q.docs.size());
        for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
        std::sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) {
            const auto& a = q.docs[x];
            const auto& b = q.docs[y];
            if (a.score != b.score) return a.score > b.score;
            return q.docid(a) > q.docid(b);
        });
        QueryRanking r;
        r.qid = q.qid;
        const std::size_t n = depth == 0 ? order.size() : std::min(depth, order.size());
        r.docids.reserve(n);
        for (std::size_t i = 0; i < n; ++i) r.docids.emplace_back(q.docid(q.docs[order[i]]));
        out.push_back(std::move(r));
    }
    return out;
}

std::vector<ScoredRanking> scored_rankings_from_run(const Run& run) {
    std::vector<ScoredRanking> out;
    out.reserve(run.queries.size());
    for (const auto& q : run.queries) {
        ScoredRanking r;
        r.qid = q.qid;
        r.docs.reserve(q.docs.size());
        for (const auto& d : q.docs) r.docs.emplace_back(std::string(q.docid(d)), d.score);
        out.push_back(std::move(r));
    }
    return out;
}

QueryRankBias query_rank_bias(std::span<const std::string> ranking, const BiasTable& table,
                              std::size_t t, const RankBiasOptions& options, std::size_t* missing) {
    if (t == 0) throw InvalidArgument("RaB: cutoff must be >= 1");
    if (ranking.empty()) throw InvalidArgument("RaB: empty ranking");
    const std::size_t depth = std::min(t, ranking.size());
    QueryRankBias out;
    double sum_f = 0.0, sum_m = 0.0;    // running sums over the top t' passages
    double arab_f = 0.0, arab_m = 0.0;  // Σ_{t'} RaB_t'
    for (std::size_t i = 0; i < depth; ++i) {
        auto it = table.find(ranking[i]);
        if (it == table.end()) {
            if (options.strict)
                throw InvalidArgument("RaB: passage '" + ranking[i] + "' has no bias entry");
            if (missing) ++*missing;
        } else {
            sum_f += it->second.female;
            sum_m += it->second.male;
        }
        const double k = static_cast<double>(i + 1);
        arab_f += sum_f / k;
        arab_m += sum_m / k;
    }
    const double d = static_cast<double>(depth);
    out.rab.female = sum_f / d;
    out.rab.male = sum_m / d;
    out.rab.bias = out.rab.male - out.rab.female;
    out.arab.female = arab_f / d;
    out.arab.male = arab_m / d;
    out.arab.bias = out.arab.male - out.arab.female;
    return out;
}

std::vector<RankBiasSummary> rank_bias(const std::vector<QueryRanking>& rankings,
                                       const BiasTable& table, std::span<const std::size_t> cutoffs,
                                       const RankBiasOptions& options) {
    std::vector<RankBiasSummary> out;
    for (std::size_t t : cutoffs) {
        if (t == 0) throw InvalidArgument("RaB: cutoff must be >= 1");
        RankBiasSummary s;
        s.cutoff = t;
        for (const auto& q : rankings) {
            if (q.docids.empty()) {
                ++s.empty;
                continue;
            }
            const auto r = query_rank_bias(q.docids, table, t, options, &s.missing);
            ++s.queries;
            s.rab.female += r.rab.female;
            s.rab.male += r.rab.male;
            s.arab.female += r.arab.female;
            s.arab.male += r.arab.male;
        }
        if (s.queries > 0) {
            const double n = static_cast<double>(s.queries);
            s.rab.female /= n;
            s.rab.male /= n;
            s.arab.female /= n;
            s.arab.male /= n;
        }
        // Mean of (male - female) = mean male - mean female.
        s.rab.bias = s.rab.male - s.rab.female;
        s.arab.bias = s.arab.male - s.arab.female;
        out.push_back(s);
    }
    return out;
}

QueryPrf query_prf(std::span<const double> scores, std::span<const bool> relevant,
                   std::span<const int> labels) {
    if (scores.size() != relevant.size() || scores.size() != labels.size())
        throw InvalidArgument("PRF: scores, relevance and labels differ in size");
    QueryPrf q;
    std::vector<double> nonrel;
    for (std::size_t i = 0; i < scores.size(); ++i) {
        if (labels[i] < -1 || labels[i] > 1)
            throw InvalidArgument("PRF: bias label must be -1, 0 or +1, got " +
                                  std::to_string(labels[i]));
        if (!relevant[i]) nonrel.push_back(scores[i]);
    }
    q.n0 = nonrel.size();
    double pm = 0, pf = 0, nm = 0, nf = 0;
    for (std::size_t j = 0; j < scores.size(); ++j) {
        if (!relevant[j] || labels[j] == 0) continue;
        std::size_t wins = 0;
        for (double rk : nonrel)
            if (scores[j] >= rk) ++wins;
        const double w = static_cast<double>(wins);
        const double half_sq = 0.5 * scores[j] * scores[j];
        if (labels[j] > 0) {
            ++q.n1_male;
            pm += w;
            nm += half_sq * w;
        } else {
            ++q.n1_female;
            pf += w;
            nf += half_sq * w;
        }
    }
    if (q.n0 > 0) {
        const double n0 = static_cast<double>(q.n0);
        if (q.n1_male > 0) {
            const double pairs = static_cast<double>(q.n1_male) * n0;
            q.prf_male = pm / pairs;
            q.nprf_male = nm / pairs;
        }
        if (q.n1_female > 0) {
            const double pairs = static_cast<double>(q.n1_female) * n0;
            q.prf_female = pf / pairs;
            q.nprf_female = nf / pairs;
        }
    }
    return q;
}

PrfSummary prf(const std::vector<ScoredRanking>& rankings, const Qrels& qrels,
               const std::unordered_map<std::string, int>& labels, long relevance_level) {
    PrfSummary s;
    std::vector<double> scores;
    std::vector<int> lab;
    std::unique_ptr<bool[]> rel_buf;
    for (const auto& q : rankings) {
        const QueryQrels* judged = qrels.find(q.qid);
        scores.clear();
        lab.clear();
        rel_buf.reset(new bool[q.docs.size()]);
        for (std::size_t i = 0; i < q.docs.size(); ++i) {
            const auto& [docid, score] = q.docs[i];
            scores.push_back(score);
            const long* grade = judged ? judged->find(docid) : nullptr;
            rel_buf[i] = grade && *grade >= relevance_level;
            auto l = labels.find(docid);
            if (l == labels.end()) {
                ++s.unlabelled;
                lab.push_back(0);
            } else {
                lab.push_back(l->second);
            }
        }
        auto r = query_prf(scores, std::span<const bool>(rel_buf.get(), q.docs.size()), lab);
        if (r.prf_male) {
            ++s.queries_male;
            s.mean_prf_male += *r.prf_male;
        }
        if (r.prf_female) {
            ++s.queries_female;
            s.mean_prf_female += *r.prf_female;
        }
        s.per_query.emplace_back(q.qid, r);
    }
    if (s.queries_male > 0) s.mean_prf_male /= static_cast<double>(s.queries_male);
    if (s.queries_female > 0) s.mean_prf_female /= static_cast<double>(s.queries_female);
    if (s.queries_male > 0 && s.queries_female > 0)
        s.delta = std::fabs(s.mean_prf_male - s.mean_prf_female);
    return s;
}

std::unordered_map<std::string, int> read_bias_labels(const std::filesystem::path& path) {
    std::unordered_map<std::string, int> out;
    LineReader reader(path);
    std::string_view line;
    std::vector<std::string_view> fields;
    while (reader.next(line)) {
        if (trim(line).empty() || line.front() == '#') continue;
        split(line, '\t', fields);
        if (fields.size() != 2) reader.fail("expected 'docid<TAB>label' (label -1, 0 or 1)");
        const auto docid = trim(fields[0]);
        const auto v = trim(fields[1]);
        int d;
        if (v == "-1") {
            d = -1;
        } else if (v == "0") {
            d = 0;
        } else if (v == "1" || v == "+1") {
            d = 1;
        } else {
            reader.fail("label must be -1, 0 or 1, got '" + std::string(v) + "'");
        }
        if (docid.empty()) reader.fail("empty docid");
        if (!out.emplace(std::string(docid), d).second)
            reader.fail("duplicate docid '" + std::string(docid) + "'");
    }
    return out;
}

CategoryVectors read_category_vectors(const std::filesystem::path& path) {
    CategoryVectors cv;
    LineReader reader(path);
    std::string_view line;
    std::vector<std::string_view> fields;
    bool header = false;
    while (reader.next(line)) {
        if (trim(line).empty()) continue;
        split(line, '\t', fields);
        if (!header) {
            if (fields.size() < 2 || trim(fields[0]) != "docid")
                reader.fail("expected a header 'docid<TAB>category1<TAB>...'");
            for (std::size_t i = 1; i < fields.size(); ++i) {
                const auto name = trim(fields[i]);
                if (name.empty()) reader.fail("empty category name");
                cv.categories.emplace_back(name);
            }
            header = true;
            continue;
        }
        if (fields.size() != cv.categories.size() + 1)
            reader.fail("expected " + std::to_string(cv.categories.size() + 1) +
                        " tab-separated fields, got " + std::to_string(fields.size()));
        const auto docid = trim(fields[0]);
        if (docid.empty()) reader.fail("empty docid");
        std::vector<double> v(cv.categories.size());
        for (std::size_t i = 0; i < v.size(); ++i) {
            if (!detail::parse_finite(fields[i + 1], v[i]))
                reader.fail("category value '" + std::string(fields[i + 1]) +
                            "' is not a finite number");
        }
        if (!cv.vectors.emplace(std::string(docid), std::move(v)).second)
            reader.fail("duplicate docid '" + std::string(docid) + "'");
    }
    if (!header) throw ParseError(reader.name(), 0, "empty category file (no header)");
    return cv;
}

namespace {

/// Mean over queries of the per-query mean vector of their top-k passages.
std::vector<double> group_mean(const std::vector<QueryRanking>& group,
                               const CategoryVectors& vectors, std::size_t k, std::size_t& used,
                               std::size_t& missing) {
    const std::size_t dim = vectors.categories.size();
    std::vector<double> total(dim, 0.0);
    std::vector<double> q(dim);
    used = 0;
    for (const auto& r : group) {
        std::fill(q.begin(), q.end(), 0.0);
        std::size_t n = 0;
        for (std::size_t i = 0; i < std::min(k, r.docids.size()); ++i) {
            auto it = vectors.vectors.find(r.docids[i]);
            if (it == vectors.vectors.end()) {
                ++missing;
                continue;
            }
            for (std::size_t c = 0; c < dim; ++c) q[c] += it->second[c];
            ++n;
        }
        if (n == 0) continue;
        for (std::size_t c = 0; c < dim; ++c) total[c] += q[c] / static_cast<double>(n);
        ++used;
    }
    if (used > 0)
        for (double& v : total) v /= static_cast<double>(used);
    return total;
}

}  // namespace

CategoryDifference category_difference(const std::vector<QueryRanking>& group_a,
                                       const std::vector<QueryRanking>& group_b,
                                       const CategoryVectors& vectors, std::size_t k) {
    if (k == 0) throw InvalidArgument("category difference: k must be >= 1");
    CategoryDifference d;
    d.categories = vectors.categories;
    d.mean_a = group_mean(group_a, vectors, k, d.queries_a, d.missing);
    d.mean_b = group_mean(group_b, vectors, k, d.queries_b, d.missing);
    d.difference.resize(d.categories.size());
    d.abs_difference.resize(d.categories.size());
    for (std::size_t c = 0; c < d.categories.size(); ++c) {
        d.difference[c] = d.mean_a[c] - d.mean_b[c];
        d.abs_difference[c] = std::fabs(d.difference[c]);
    }
    return d;
}

}  // namespace plumb::eval
