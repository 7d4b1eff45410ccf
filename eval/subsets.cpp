#include "eval/subsets.hpp"

#include <algorithm>
#include <charconv>
#include <map>
#include <unordered_set>

#include "plugin/error.hpp"
#include "plugin/text_io.hpp"

namespace plumb::eval {

std::vector<std::string> read_qid_list(const std::filesystem::path& path) {
    std::vector<std::string> out;
    std::unordered_set<std::string> seen;
    LineReader reader(path);
    std::string_view line;
    std::vector<std::string_view> fields;
    while (reader.next(line)) {
        split_ws(line, fields);
        if (fields.empty() || fields[0].front() == '#') continue;
        std::string q(fields[0]);
        if (seen.insert(q).second) out.push_back(std::move(q));
    }
    return out;
}

std::vector<std::string> read_query_subset(const std::filesystem::path& path,
                                           const std::string& label) {
    std::vector<std::string> out;
    std::unordered_set<std::string> seen;
    LineReader reader(path);
    std::string_view line;
    while (reader.next(line)) {
        const auto t = trim(line);
        if (t.empty() || t.front() == '#') continue;
        std::string_view qid = t, last;
        bool has_label = false;
        if (const auto tab = t.find('\t'); tab != std::string_view::npos) {
            qid = trim(t.substr(0, tab));
            last = trim(t.substr(t.rfind('\t') + 1));
            has_label = true;
        } else if (const auto comma = t.find(','); comma != std::string_view::npos) {
            qid = trim(t.substr(0, comma));
            last = trim(t.substr(t.rfind(',') + 1));
            has_label = true;
        }
        if (qid == "qid" || qid == "query_id") continue;
        if (qid.empty()) reader.fail("empty qid");
        if (!label.empty()) {
            if (!has_label)
                reader.fail("no label field (expected qid<TAB>label or qid,text,label)");
            if (last != label) continue;
        }
        if (seen.emplace(qid).second) out.emplace_back(qid);
    }
    return out;
}

ShownRanks read_shown_ranks(const std::filesystem::path& path) {
    ShownRanks shown;
    std::unordered_map<std::string, std::size_t> index;
    // Per query: ranks and docids seen, for duplicate detection.
    std::vector<std::unordered_set<unsigned>> ranks;
    std::vector<std::unordered_set<std::string>> docids;
    LineReader reader(path);
    std::string_view line;
    std::vector<std::string_view> fields;
    while (reader.next(line)) {
        if (trim(line).empty() || line.front() == '#') continue;
        split(line, '\t', fields);
        if (fields.size() != 4)
            reader.fail("expected 4 tab-separated fields (qid, rank, docid, is_selected), got " +
                        std::to_string(fields.size()));
        const auto qid = trim(fields[0]);
        const auto rank_s = trim(fields[1]);
        const auto docid = trim(fields[2]);
        const auto sel = trim(fields[3]);
        if (qid.empty()) reader.fail("empty qid");
        if (docid.empty()) reader.fail("empty docid");
        unsigned rank = 0;
        auto [p, ec] = std::from_chars(rank_s.data(), rank_s.data() + rank_s.size(), rank);
        if (ec != std::errc() || p != rank_s.data() + rank_s.size() || rank == 0)
            reader.fail("rank must be a positive integer, got '" + std::string(rank_s) + "'");
        if (sel != "0" && sel != "1")
            reader.fail("is_selected must be 0 or 1, got '" + std::string(sel) + "'");
        auto [it, fresh] = index.emplace(std::string(qid), shown.queries.size());
        if (fresh) {
            shown.queries.push_back({std::string(qid), {}, std::nullopt});
            ranks.emplace_back();
            docids.emplace_back();
        }
        const std::size_t qi = it->second;
        if (!ranks[qi].insert(rank).second)
            reader.fail("rank " + std::to_string(rank) + " repeated for query '" +
                        std::string(qid) + "'");
        if (!docids[qi].emplace(docid).second)
            reader.fail("docid '" + std::string(docid) + "' repeated for query '" +
                        std::string(qid) + "'");
        shown.queries[qi].passages.push_back({rank, std::string(docid), sel == "1"});
        shown.max_rank = std::max(shown.max_rank, rank);
    }
    for (auto& q : shown.queries) {
        std::sort(q.passages.begin(), q.passages.end(),
                  [](const ShownPassage& a, const ShownPassage& b) { return a.rank < b.rank; });
        for (const auto& p : q.passages) {
            if (p.selected) {
                q.first_selected = p.rank;
                break;
            }
        }
    }
    return shown;
}

std::vector<std::string> subset_qids(const ShownRanks& shown, unsigned k) {
    if (k == 0) throw InvalidArgument("subset rank threshold must be >= 1");
    std::vector<std::string> out;
    for (const auto& q : shown.queries)
        if (q.first_selected && *q.first_selected <= k) out.push_back(q.qid);
    return out;
}

namespace {

double subset_mean(const std::vector<std::string>& qids,
                   const std::unordered_map<std::string, double>& values) {
    if (qids.empty()) return 0.0;
    double sum = 0.0;
    for (const auto& q : qids) {
        auto it = values.find(q);
        if (it != values.end()) sum += it->second;
    }
    return sum / static_cast<double>(qids.size());
}

}  // namespace

std::vector<SubsetRow> survivorship_table(
    const ShownRanks& shown, const std::vector<std::unordered_map<std::string, double>>& per_query,
    unsigned max_k) {
    if (max_k == 0) max_k = shown.max_rank;
    std::vector<SubsetRow> rows;
    std::vector<std::string> all;
    for (const auto& q : shown.queries) all.push_back(q.qid);
    auto make_row = [&](std::string label, unsigned k, const std::vector<std::string>& qids) {
        SubsetRow r;
        r.label = std::move(label);
        r.k = k;
        r.num_queries = qids.size();
        for (const auto& run : per_query) r.means.push_back(subset_mean(qids, run));
        rows.push_back(std::move(r));
    };
    make_row("All", 0, all);
    for (unsigned k = max_k; k >= 1; --k) make_row(std::to_string(k), k, subset_qids(shown, k));
    return rows;
}

std::vector<UnansweredRow> unanswered_by_type(
    const ShownRanks& shown, const std::unordered_map<std::string, std::string>& types) {
    UnansweredRow all;
    all.type = "all";
    std::map<std::string, UnansweredRow> by_type;
    for (const auto& q : shown.queries) {
        const bool unanswered = !q.first_selected.has_value();
        ++all.total;
        all.unanswered += unanswered;
        if (types.empty()) continue;
        auto it = types.find(q.qid);
        const std::string type = it == types.end() ? "(none)" : it->second;
        auto& row = by_type[type];
        row.type = type;
        ++row.total;
        row.unanswered += unanswered;
    }
    std::vector<UnansweredRow> out{all};
    for (auto& [t, row] : by_type) out.push_back(row);
    for (auto& r : out)
        r.share =
            r.total == 0 ? 0.0 : static_cast<double>(r.unanswered) / static_cast<double>(r.total);
    return out;
}

}  // namespace plumb::eval
