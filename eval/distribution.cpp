#include "eval/distribution.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <map>
#include <unordered_set>

#include "eval/detail_parse.hpp"
#include "plugin/error.hpp"
#include "plugin/text_io.hpp"

namespace plumb::eval {

namespace {

std::string fmt_edge(double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%g", v);
    return buf;
}

}  // namespace

DistributionStats describe(std::span<const double> values, SdKind kind) {
    DistributionStats s;
    s.n = values.size();
    if (s.n == 0) return s;
    double sum = 0.0;
    for (double v : values) {
        if (!std::isfinite(v)) throw InvalidArgument("describe: value is not finite");
        sum += v;
    }
    s.mean = sum / static_cast<double>(s.n);
    double ss = 0.0;
    for (double v : values) ss += (v - s.mean) * (v - s.mean);
    const std::size_t div = kind == SdKind::Population ? s.n : s.n - 1;
    s.sd = div == 0 ? 0.0 : std::sqrt(ss / static_cast<double>(div));
    if (s.mean != 0.0) s.cv = s.sd / s.mean;
    return s;
}

bool QueryAttributes::numeric() const {
    if (rows.empty()) return false;
    double v;
    for (const auto& [q, value] : rows)
        if (!detail::parse_finite(value, v)) return false;
    return true;
}

QueryAttributes read_query_attributes(const std::filesystem::path& path) {
    QueryAttributes a;
    std::unordered_set<std::string> seen;
    LineReader reader(path);
    std::string_view line;
    while (reader.next(line)) {
        if (trim(line).empty() || line.front() == '#') continue;
        const auto tab = line.find('\t');
        if (tab == std::string_view::npos) reader.fail("expected 'qid<TAB>value'");
        const auto qid = trim(line.substr(0, tab));
        const auto value = trim(line.substr(tab + 1));
        if (qid.empty()) reader.fail("empty qid");
        if (value.empty()) reader.fail("empty value for qid '" + std::string(qid) + "'");
        if (!seen.emplace(qid).second) reader.fail("repeated qid '" + std::string(qid) + "'");
        a.rows.emplace_back(std::string(qid), std::string(value));
    }
    return a;
}

double quantile_sorted(std::span<const double> sorted, double p) {
    if (sorted.empty()) throw InvalidArgument("quantile of an empty sample");
    if (!(p >= 0.0 && p <= 1.0)) throw InvalidArgument("quantile level outside [0, 1]");
    const double pos = p * static_cast<double>(sorted.size() - 1);
    const auto lo = static_cast<std::size_t>(std::floor(pos));
    const std::size_t hi = std::min(lo + 1, sorted.size() - 1);
    const double frac = pos - static_cast<double>(lo);
    return sorted[lo] + frac * (sorted[hi] - sorted[lo]);
}

QueryGroups group_queries(const QueryAttributes& attributes, const GroupingSpec& spec) {
    if (attributes.rows.empty()) throw InvalidArgument("grouping: no attribute rows");
    QueryGroups g;
    bool numeric = false;
    switch (spec.kind) {
        case GroupingKind::Auto:
            numeric = attributes.numeric();
            break;
        case GroupingKind::Numeric:
            numeric = true;
            break;
        case GroupingKind::Categorical:
            numeric = false;
            break;
    }
    if (!numeric) {
        std::map<std::string, std::size_t> index;
        for (const auto& [q, v] : attributes.rows) index.emplace(v, 0);
        for (auto& [v, i] : index) {
            i = g.names.size();
            g.names.push_back(v);
        }
        for (const auto& [q, v] : attributes.rows) g.group.emplace(q, index.at(v));
        return g;
    }

    std::vector<double> values;
    values.reserve(attributes.rows.size());
    for (const auto& [q, v] : attributes.rows) {
        double x;
        if (!detail::parse_finite(v, x))
            throw InvalidArgument("grouping: value '" + v + "' of query '" + q +
                                  "' is not a number");
        values.push_back(x);
    }
    std::vector<double> inner;  // inner edges; bucket = number of inner edges < value
    std::vector<std::string> names;
    if (!spec.edges.empty()) {
        for (std::size_t i = 0; i < spec.edges.size(); ++i) {
            if (!std::isfinite(spec.edges[i]) || (i > 0 && !(spec.edges[i] > spec.edges[i - 1])))
                throw InvalidArgument("grouping: edges must be finite and strictly increasing");
        }
        inner = spec.edges;
        names.push_back("<=" + fmt_edge(inner.front()));
        for (std::size_t i = 1; i < inner.size(); ++i)
            names.push_back("(" + fmt_edge(inner[i - 1]) + "," + fmt_edge(inner[i]) + "]");
        names.push_back(">" + fmt_edge(inner.back()));
        g.edges = inner;
    } else {
        if (spec.quantiles == 0) throw InvalidArgument("grouping: quantiles must be >= 1");
        std::vector<double> sorted = values;
        std::sort(sorted.begin(), sorted.end());
        const auto q = static_cast<double>(spec.quantiles);
        g.edges.push_back(sorted.front());
        for (std::size_t i = 1; i < spec.quantiles; ++i) {
            inner.push_back(quantile_sorted(sorted, static_cast<double>(i) / q));
            g.edges.push_back(inner.back());
        }
        g.edges.push_back(sorted.back());
        if (spec.quantiles == 3) {
            names = {"easy", "medium", "hard"};
        } else {
            for (std::size_t i = 0; i < spec.quantiles; ++i)
                names.push_back("Q" + std::to_string(i + 1));
        }
    }
    if (!spec.labels.empty()) {
        if (spec.labels.size() != names.size())
            throw InvalidArgument("grouping: " + std::to_string(spec.labels.size()) +
                                  " labels given for " + std::to_string(names.size()) + " buckets");
        names = spec.labels;
    }
    g.names = names;
    for (std::size_t r = 0; r < values.size(); ++r) {
        const auto bucket = static_cast<std::size_t>(
            std::lower_bound(inner.begin(), inner.end(), values[r]) - inner.begin());
        g.group.emplace(attributes.rows[r].first, bucket);
    }
    return g;
}

std::vector<GroupStats> group_stats(std::span<const std::string> qids,
                                    std::span<const double> values, const QueryGroups& groups,
                                    SdKind kind, std::size_t* unassigned) {
    if (qids.size() != values.size())
        throw InvalidArgument("group_stats: qids and values differ in size");
    std::vector<std::vector<double>> per(groups.names.size());
    for (std::size_t i = 0; i < qids.size(); ++i) {
        auto it = groups.group.find(qids[i]);
        if (it == groups.group.end()) {
            if (unassigned) ++*unassigned;
            continue;
        }
        per[it->second].push_back(values[i]);
    }
    std::vector<GroupStats> out;
    for (std::size_t gi = 0; gi < groups.names.size(); ++gi)
        out.push_back({groups.names[gi], describe(per[gi], kind)});
    return out;
}

}  // namespace plumb::eval
