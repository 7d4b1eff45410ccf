#include "eval/evaluator.hpp"

#include <algorithm>
#include <unordered_set>

#include "plugin/error.hpp"

namespace plumb::eval {

// ---------------------------------------------------------------------------------------------
// EvalResult
// ---------------------------------------------------------------------------------------------

long EvalResult::column_index(std::string_view name) const noexcept {
    for (std::size_t i = 0; i < columns.size(); ++i) {
        if (columns[i].name == name) return static_cast<long>(i);
    }
    return -1;
}

namespace {
std::size_t require_column(const EvalResult& r, std::string_view name) {
    long c = r.column_index(name);
    if (c < 0) {
        std::string known;
        for (const auto& col : r.columns) known += (known.empty() ? "" : ", ") + col.name;
        throw InvalidArgument("measure '" + std::string(name) +
                              "' was not computed (computed: " + known + ")");
    }
    return static_cast<std::size_t>(c);
}
}  // namespace

std::vector<double> EvalResult::column_values(std::string_view name) const {
    const std::size_t c = require_column(*this, name);
    std::vector<double> out;
    out.reserve(queries.size());
    for (const auto& q : queries) out.push_back(q.values[c]);
    return out;
}

double EvalResult::summary_value(std::string_view name) const {
    return summary[require_column(*this, name)];
}

const QueryValues* EvalResult::query(std::string_view qid) const noexcept {
    auto it =
        std::lower_bound(queries.begin(), queries.end(), qid,
                         [](const QueryValues& q, std::string_view id) { return q.qid < id; });
    return (it != queries.end() && it->qid == qid) ? &*it : nullptr;
}

// ---------------------------------------------------------------------------------------------
// Per-query core
// ---------------------------------------------------------------------------------------------

namespace {

struct Item {
    std::string_view docid;
    double score;
    std::uint64_t hash;
    std::uint64_t line;  // run line, 0 for in-memory lists
};

/// Reusable buffers for one evaluation pass.
struct Scratch {
    std::vector<Item> items;
    std::vector<std::uint32_t> table;  // duplicate detection: item index + 1, 0 = empty
    std::vector<long> rels;
};

/// Returns the index pair (first, second) of a duplicate docid, or {npos, npos}.
std::pair<std::size_t, std::size_t> find_duplicate(Scratch& s) {
    const std::size_t n = s.items.size();
    std::size_t cap = 16;
    while (cap < 2 * n) cap <<= 1;
    s.table.assign(cap, 0);
    const std::size_t mask = cap - 1;
    for (std::size_t i = 0; i < n; ++i) {
        const Item& it = s.items[i];
        std::size_t p = it.hash & mask;
        while (s.table[p] != 0) {
            const Item& other = s.items[s.table[p] - 1];
            if (other.hash == it.hash && other.docid == it.docid) return {s.table[p] - 1, i};
            p = (p + 1) & mask;
        }
        s.table[p] = static_cast<std::uint32_t>(i + 1);
    }
    return {std::string_view::npos, std::string_view::npos};
}

/// trec_eval's ranking (form_res_rels.c comp_sim_docno): score descending, then docid
/// descending by strcmp.
void rank_items(std::vector<Item>& items) {
    auto before = [](const Item& a, const Item& b) {
        if (a.score != b.score) return a.score > b.score;
        return a.docid > b.docid;
    };
    // Runs are usually written in this order already: check in O(n) before sorting.
    if (!std::is_sorted(items.begin(), items.end(), before)) {
        std::sort(items.begin(), items.end(), before);
    }
}

/// m_relstring.c: the relevance values of the first `len` documents as characters.
std::string make_relstring(const std::vector<long>& rels, long len) {
    std::string out;
    const std::size_t n = std::min(rels.size(), static_cast<std::size_t>(std::max(0L, len)));
    for (std::size_t i = 0; i < n; ++i) {
        const long r = rels[i];
        out += r > 9                 ? '>'
               : r >= 0              ? static_cast<char>('0' + r)
               : r == kNotInQrels    ? '-'
               : r == kNegativeGrade ? '.'
                                     : '<';
    }
    return out;
}

/// Ranks `s.items` (unless `keep_order`) and fills `s.rels`, then computes the measures.
void evaluate_items(const QueryQrels& qq, Scratch& s, const MeasureSet& measures,
                    const EvalOptions& opt, std::vector<double>& out, bool keep_order = false,
                    std::string* relstring = nullptr) {
    if (!keep_order) rank_items(s.items);
    const std::size_t n = std::min(s.items.size(), opt.max_docs_per_query);
    s.rels.clear();
    for (std::size_t i = 0; i < n; ++i) {
        const long* g = qq.find(s.items[i].docid, s.items[i].hash);
        long r = !g ? kNotInQrels : (*g < 0 ? kNegativeGrade : *g);
        if (opt.judged_docs_only && r < 0) continue;
        s.rels.push_back(r);
    }
    QueryJudgements q;
    q.rels = s.rels;
    q.level_counts = qq.level_counts();
    q.relevance_level = opt.relevance_level;
    q.trec_eval_9_iprec = opt.trec_eval_9_iprec;
    q.num_docs_in_coll = opt.num_docs_in_coll;
    out.assign(measures.columns().size(), 0.0);
    measures.compute(q, out);
    if (relstring && measures.relstring_length() >= 0) {
        *relstring = make_relstring(s.rels, measures.relstring_length());
    }
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Accumulation of rows into a result
// ---------------------------------------------------------------------------------------------

namespace {

EvalResult finish(std::vector<QueryValues> rows, const Qrels& qrels, const MeasureSet& measures,
                  const EvalOptions& opt, std::string run_id) {
    if (opt.complete) {
        std::unordered_set<std::string_view> have;
        for (const auto& r : rows) have.insert(r.qid);
        const long num_ret_col = measures.column_index("num_ret");
        for (const auto& qid : qrels.qids()) {
            if (have.count(qid)) continue;
            // trec_eval.c evaluates a missing query as a one-document ranking of a document that
            // is not in the qrels, then resets num_ret to 0.
            const QueryQrels* qq = qrels.find(qid);
            const long bogus[1] = {kNotInQrels};
            QueryJudgements q;
            q.rels = bogus;
            q.level_counts = qq->level_counts();
            q.relevance_level = opt.relevance_level;
            q.trec_eval_9_iprec = opt.trec_eval_9_iprec;
            q.num_docs_in_coll = opt.num_docs_in_coll;
            QueryValues row;
            row.qid = qid;
            row.missing = true;
            row.values.assign(measures.columns().size(), 0.0);
            measures.compute(q, row.values);
            // ... and also resets utility (and leaves relstring empty).
            if (num_ret_col >= 0) row.values[static_cast<std::size_t>(num_ret_col)] = 0.0;
            for (std::size_t c = 0; c < row.values.size(); ++c) {
                if (measures.columns()[c].name.rfind("utility", 0) == 0) row.values[c] = 0.0;
            }
            rows.push_back(std::move(row));
        }
    }
    std::sort(rows.begin(), rows.end(),
              [](const QueryValues& a, const QueryValues& b) { return a.qid < b.qid; });
    EvalResult result;
    result.columns = measures.columns();
    result.has_runid = measures.has_runid();
    result.run_id = std::move(run_id);
    std::vector<std::vector<double>> values;
    values.reserve(rows.size());
    for (const auto& r : rows) values.push_back(r.values);
    result.summary = measures.summarize(values, rows.size());
    result.queries = std::move(rows);
    return result;
}

/// Fills scratch items from a run block; throws ParseError on a duplicate docid.
void load_block(const RunQuery& block, const std::string& file, Scratch& s) {
    s.items.clear();
    s.items.reserve(block.docs.size());
    for (const auto& d : block.docs) {
        std::string_view id = block.docid(d);
        s.items.push_back({id, d.score, docid_hash(id), d.line});
    }
    auto [a, b] = find_duplicate(s);
    if (b != std::string_view::npos) {
        throw ParseError(file, s.items[b].line,
                         "duplicate document '" + std::string(s.items[b].docid) + "' for query '" +
                             block.qid + "' (first at line " + std::to_string(s.items[a].line) +
                             ")");
    }
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Evaluator
// ---------------------------------------------------------------------------------------------

Evaluator::Evaluator(std::shared_ptr<const Qrels> qrels, MeasureSet measures, EvalOptions options)
    : m_qrels(std::move(qrels)), m_measures(std::move(measures)), m_options(options) {
    if (!m_qrels) throw InvalidArgument("Evaluator: qrels must not be null");
}

namespace {
/// Evaluates one in-memory list into `row`; false when the qrels do not know the query.
bool evaluate_list(const RankedList& list, const Qrels& qrels, const MeasureSet& measures,
                   const EvalOptions& opt, QueryValues& row) {
    const QueryQrels* qq = qrels.find(list.qid);
    Scratch s;
    s.items.reserve(list.candidates.size());
    for (const auto& c : list.candidates) {
        s.items.push_back({c.docid, static_cast<double>(c.score), docid_hash(c.docid), 0});
    }
    auto [a, b] = find_duplicate(s);
    if (b != std::string_view::npos) {
        throw InvalidArgument("ranked list of query '" + list.qid + "' holds document '" +
                              std::string(s.items[b].docid) + "' twice");
    }
    if (!qq) return false;
    row.qid = list.qid;
    evaluate_items(*qq, s, measures, opt, row.values, opt.use_list_order, &row.relstring);
    return true;
}
}  // namespace

std::optional<std::vector<double>> Evaluator::evaluate_query(const RankedList& list) const {
    QueryValues row;
    if (!evaluate_list(list, *m_qrels, m_measures, m_options, row)) return std::nullopt;
    return std::move(row.values);
}

EvalResult Evaluator::evaluate(const std::vector<RankedList>& lists) const {
    std::unordered_set<std::string_view> seen;
    std::vector<QueryValues> rows;
    for (const auto& list : lists) {
        if (!seen.insert(list.qid).second) {
            throw InvalidArgument("query '" + list.qid + "' appears in more than one list");
        }
        QueryValues row;
        if (evaluate_list(list, *m_qrels, m_measures, m_options, row)) {
            rows.push_back(std::move(row));
        }
    }
    return finish(std::move(rows), *m_qrels, m_measures, m_options, {});
}

EvalResult Evaluator::evaluate_run(const Run& run) const {
    Scratch s;
    std::vector<QueryValues> rows;
    for (const auto& block : run.queries) {
        load_block(block, run.name, s);
        const QueryQrels* qq = m_qrels->find(block.qid);
        if (!qq) continue;
        QueryValues row;
        row.qid = block.qid;
        evaluate_items(*qq, s, m_measures, m_options, row.values, false, &row.relstring);
        rows.push_back(std::move(row));
    }
    return finish(std::move(rows), *m_qrels, m_measures, m_options, run.run_id);
}

EvalResult Evaluator::evaluate_run(const std::filesystem::path& path,
                                   const ProgressCallback& progress,
                                   const CancelToken* cancel) const {
    // Standard input, pipes and process substitutions cannot be read twice: read them whole.
    std::error_code ec;
    if (path == "-" || !std::filesystem::is_regular_file(path, ec)) {
        if (path != "-" && !std::filesystem::exists(path, ec)) {
            throw IoError(path.string() + ": cannot open: no such file");
        }
        return evaluate_run(read_run(path));
    }
    RunReader reader(path);
    Scratch s;
    std::vector<QueryValues> rows;
    std::unordered_set<std::string> seen;
    RunQuery block;
    std::size_t blocks = 0;
    while (reader.next(block)) {
        if (!seen.insert(block.qid).second) {
            // Not grouped by qid: evaluate the whole run from memory instead.
            return evaluate_run(read_run(path));
        }
        load_block(block, reader.name(), s);
        if (const QueryQrels* qq = m_qrels->find(block.qid)) {
            QueryValues row;
            row.qid = block.qid;
            evaluate_items(*qq, s, m_measures, m_options, row.values, false, &row.relstring);
            rows.push_back(std::move(row));
        }
        if ((++blocks & 63) == 0) {
            if (cancel && cancel->requested()) throw Error("evaluation cancelled");
            if (progress) progress(reader.bytes_read(), reader.size());
        }
    }
    if (progress) progress(reader.bytes_read(), reader.size());
    return finish(std::move(rows), *m_qrels, m_measures, m_options, reader.run_id());
}

EvalResult evaluate_files(const std::filesystem::path& qrels, const std::filesystem::path& run,
                          const std::vector<std::string>& measure_specs,
                          const EvalOptions& options) {
    auto q = std::make_shared<const Qrels>(Qrels::load(qrels));
    MeasureSet m =
        measure_specs.empty() ? MeasureSet::official() : MeasureSet::parse(measure_specs);
    Evaluator ev(std::move(q), std::move(m), options);
    return ev.evaluate_run(run);
}

}  // namespace plumb::eval
