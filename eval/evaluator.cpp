#include "eval/evaluator.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unordered_map>
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
    std::vector<double> bias[3];       // per bias variant, parallel to rels
    std::vector<std::uint32_t> table;  // duplicate detection: item index + 1, 0 = empty
    std::vector<long> rels;
};

/// Returns the index pair (first, second) of a duplicate docid among the first `n` items, or
/// {npos, npos}.
std::pair<std::size_t, std::size_t> find_duplicate(Scratch& s, std::size_t n) {
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

/// What the measures see of one query: its ranking's relevance values and the options.
QueryJudgements judgements(std::span<const long> rels, const QueryQrels& qq,
                           const EvalOptions& opt) {
    QueryJudgements q;
    q.rels = rels;
    q.level_counts = qq.level_counts();
    q.relevance_level = opt.relevance_level;
    q.trec_eval_9_iprec = opt.trec_eval_9_iprec;
    q.num_docs_in_coll = opt.num_docs_in_coll;
    return q;
}

/// Ranks `s.items` (unless `keep_order`) and fills `s.rels`, then computes the measures.
/// Where a run's duplicate docids are reported (nullptr: in-memory lists, checked earlier).
struct DuplicateCheck {
    const std::string& file;
    const std::string& qid;
};

void evaluate_items(const QueryQrels& qq, Scratch& s, const MeasureSet& measures,
                    const EvalOptions& opt, std::vector<double>& out, bool keep_order = false,
                    std::string* relstring = nullptr,
                    const DuplicateCheck* check_duplicates = nullptr) {
    if (!keep_order) rank_items(s.items);
    const std::size_t n = std::min(s.items.size(), opt.max_docs_per_query);
    if (check_duplicates) {
        // trec_eval (form_res_rels.c) looks for a repeated docid after the -M cut only.
        auto [a, b] = find_duplicate(s, n);
        if (b != std::string_view::npos) {
            throw ParseError(check_duplicates->file, std::max(s.items[a].line, s.items[b].line),
                             "duplicate document '" + std::string(s.items[b].docid) +
                                 "' for query '" + check_duplicates->qid + "' (also at line " +
                                 std::to_string(std::min(s.items[a].line, s.items[b].line)) + ")");
        }
    }
    s.rels.clear();
    for (auto& b : s.bias) b.clear();
    const std::vector<int>& variants = measures.bias_variants();
    for (std::size_t i = 0; i < n; ++i) {
        const long* g = qq.find(s.items[i].docid, s.items[i].hash);
        long r = !g ? kNotInQrels : (*g < 0 ? kNegativeGrade : *g);
        if (opt.judged_docs_only && r < 0) continue;
        s.rels.push_back(r);
        for (int v : variants) {
            const BiasTable& table = *opt.bias_tables[v];
            auto it = table.find(std::string(s.items[i].docid));
            // ranking-level bias is male - female; a passage without an entry has no gender
            // words
            s.bias[v].push_back(it == table.end() ? 0.0 : it->second.male - it->second.female);
        }
    }
    QueryJudgements q = judgements(s.rels, qq, opt);
    for (int v = 0; v < 3; ++v) q.passage_bias[v] = s.bias[v];
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

/// Values of a query the run does not have, as trec_eval.c computes them with -c: a
/// one-document ranking of a document that is not in the qrels, then num_ret, utility, unj*
/// and rbp_resid reset to 0 (by exact printed name: "utility_2,-1,0,0" or "rbp_resid_p=0.8"
/// keep their values there too).
void missing_query_values(const QueryQrels& qq, const MeasureSet& measures, const EvalOptions& opt,
                          std::vector<double>& values) {
    const long bogus[1] = {kNotInQrels};
    // (-J drops that unjudged document and -M0 keeps none: then nothing is retrieved.)
    const QueryJudgements q = judgements(
        std::span<const long>(bogus, opt.judged_docs_only || opt.max_docs_per_query == 0 ? 0 : 1),
        qq, opt);
    values.assign(measures.columns().size(), 0.0);
    measures.compute(q, values);
    for (std::size_t c = 0; c < values.size(); ++c) {
        const std::string& name = measures.columns()[c].trec_name;
        if (name == "num_ret" || name == "utility" || name.rfind("unj", 0) == 0 ||
            name == "rbp_resid") {
            values[c] = 0.0;
        }
    }
}

EvalResult finish(std::vector<QueryValues> rows, const Qrels& qrels, const MeasureSet& measures,
                  const EvalOptions& opt, std::string run_id) {
    // Owned strings: `rows` grows below, so views into its elements would dangle.
    std::unordered_set<std::string> have;
    have.reserve(rows.size());
    for (const auto& r : rows) have.insert(r.qid);
    std::vector<std::string> skipped;
    for (const auto& qid : qrels.qids()) {
        if (have.count(qid)) continue;
        if (!opt.complete) {
            skipped.push_back(qid);
            continue;
        }
        QueryValues row;
        row.qid = qid;
        row.missing = true;
        missing_query_values(*qrels.find(qid), measures, opt, row.values);
        rows.push_back(std::move(row));
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
    if (opt.complete) {
        // m_num_rel.c te_calc_avg_num_rel: with -c the summary counts every judgement with a
        // grade > 0 in the whole qrels, whatever the relevance level (-l).
        long positive = 0;
        for (const auto& qid : qrels.qids()) {
            for (const auto& l : qrels.find(qid)->level_counts()) {
                if (l.grade > 0) positive += l.count;
            }
        }
        for (std::size_t c = 0; c < result.columns.size(); ++c) {
            if (result.columns[c].trec_name == "num_rel") {
                result.summary[c] = static_cast<double>(positive);
            }
        }
    }
    result.queries = std::move(rows);
    result.qrels_queries_without_results = std::move(skipped);
    return result;
}

/// Fills scratch items from a run block (duplicates are looked for when the query is evaluated,
/// among the documents it keeps, as trec_eval does).
void load_block(const RunQuery& block, Scratch& s) {
    s.items.clear();
    s.items.reserve(block.docs.size());
    for (const auto& d : block.docs) {
        std::string_view id = block.docid(d);
        s.items.push_back({id, d.score, docid_hash(id), d.line});
    }
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Evaluator
// ---------------------------------------------------------------------------------------------

Evaluator::Evaluator(std::shared_ptr<const Qrels> qrels, MeasureSet measures, EvalOptions options)
    : m_qrels(std::move(qrels)), m_measures(std::move(measures)), m_options(options) {
    if (!m_qrels) throw InvalidArgument("Evaluator: qrels must not be null");
    for (int v : m_measures.bias_variants()) {
        if (!m_options.bias_tables[v]) {
            throw ConfigError(std::string("the ") + bias_variant_name(static_cast<BiasVariant>(v)) +
                              " gender-bias measures need a passage bias table (plumb eval "
                              "--bias-file, from plumb debias gender)");
        }
    }
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
    auto [a, b] = find_duplicate(s, s.items.size());
    if (b != std::string_view::npos) {
        throw InvalidArgument("ranked list of query '" + list.qid + "' holds document '" +
                              std::string(s.items[b].docid) + "' twice");
    }
    if (!qq) return false;
    row.qid = list.qid;
    if (list.candidates.empty()) {
        // A run file written from an empty list has no line for the query: trec_eval then
        // knows the query only from the qrels (scored with -c as a missing query).
        row.missing = true;
        missing_query_values(*qq, measures, opt, row.values);
        return true;
    }
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
        if (evaluate_list(list, *m_qrels, m_measures, m_options, row) && !row.missing) {
            rows.push_back(std::move(row));  // (an empty list is a query the run lacks)
        }
    }
    return finish(std::move(rows), *m_qrels, m_measures, m_options, {});
}

EvalResult Evaluator::evaluate_run(const Run& run) const {
    Scratch s;
    std::vector<QueryValues> rows;
    for (const auto& block : run.queries) {
        const QueryQrels* qq = m_qrels->find(block.qid);
        if (!qq) continue;
        load_block(block, s);
        QueryValues row;
        row.qid = block.qid;
        const DuplicateCheck check{run.name, block.qid};
        evaluate_items(*qq, s, m_measures, m_options, row.values, false, &row.relstring, &check);
        rows.push_back(std::move(row));
    }
    return finish(std::move(rows), *m_qrels, m_measures, m_options, run.run_id);
}

namespace {

/// Spills run lines into hash partitions by qid (in memory up to a budget, then appended to
/// temporary files, one per partition, opened only while written), so that a run in any line
/// order is evaluated one partition at a time with memory bounded by the largest partition, not
/// the whole run.
class RunPartitions {
public:
    RunPartitions(std::size_t partitions, std::size_t memory_budget)
        : m_buffers(partitions), m_spilled(partitions, false), m_budget(memory_budget) {}
    ~RunPartitions() {
        if (!m_dir.empty()) {
            std::error_code ec;
            std::filesystem::remove_all(m_dir, ec);
        }
    }
    RunPartitions(const RunPartitions&) = delete;
    RunPartitions& operator=(const RunPartitions&) = delete;

    void add(std::string_view qid, std::string_view docid, double score, std::uint64_t line) {
        const std::size_t p = docid_hash(qid) % m_buffers.size();
        std::string& b = m_buffers[p];
        const auto put32 = [&b](std::uint32_t v) {
            b.append(reinterpret_cast<const char*>(&v), 4);
        };
        put32(static_cast<std::uint32_t>(qid.size()));
        b.append(qid);
        put32(static_cast<std::uint32_t>(docid.size()));
        b.append(docid);
        b.append(reinterpret_cast<const char*>(&score), sizeof score);
        b.append(reinterpret_cast<const char*>(&line), sizeof line);
        m_buffered += kRecordOverhead + qid.size() + docid.size();
        if (m_buffered > m_budget) spill();
    }

    std::size_t size() const noexcept { return m_buffers.size(); }

    /// The lines of partition `p`, grouped by qid (each query's lines in file order).
    std::vector<RunQuery> take(std::size_t p) {
        std::string data;
        if (m_spilled[p]) {
            const auto file = part_file(p);
            std::error_code ec;
            const auto n = std::filesystem::file_size(file, ec);
            std::FILE* f = ec ? nullptr : std::fopen(file.c_str(), "rb");
            if (!f) throw IoError(file.string() + ": cannot read back a run partition");
            data.resize(static_cast<std::size_t>(n));
            const bool ok = std::fread(data.data(), 1, data.size(), f) == data.size();
            std::fclose(f);
            if (!ok) throw IoError(file.string() + ": cannot read back a run partition");
            std::filesystem::remove(file, ec);
        }
        data += m_buffers[p];
        std::string().swap(m_buffers[p]);
        std::vector<RunQuery> out;
        std::unordered_map<std::string, std::size_t> index;
        std::size_t pos = 0;
        const auto need = [&](std::size_t bytes) {
            if (data.size() - pos < bytes) {
                throw IoError(m_dir.string() +
                              ": a run partition is corrupt (changed by another "
                              "process?)");
            }
        };
        const auto get32 = [&]() {
            need(4);
            std::uint32_t v;
            std::memcpy(&v, data.data() + pos, 4);
            pos += 4;
            return v;
        };
        while (pos < data.size()) {
            const std::uint32_t ql = get32();
            need(ql);
            std::string qid(data.data() + pos, ql);
            pos += ql;
            const std::uint32_t dl = get32();
            need(std::size_t{dl} + 16);
            std::string_view docid(data.data() + pos, dl);
            pos += dl;
            double score;
            std::uint64_t line;
            std::memcpy(&score, data.data() + pos, sizeof score);
            pos += sizeof score;
            std::memcpy(&line, data.data() + pos, sizeof line);
            pos += sizeof line;
            auto [it, inserted] = index.emplace(qid, out.size());
            if (inserted) {
                out.emplace_back();
                out.back().qid = std::move(qid);
            }
            out[it->second].add(docid, score, line);
        }
        return out;
    }

private:
    static constexpr std::size_t kRecordOverhead = 4 + 4 + 8 + 8;

    std::filesystem::path part_file(std::size_t p) const {
        return m_dir / ("part-" + std::to_string(p));
    }

    void spill() {
        if (m_dir.empty()) {
            std::error_code ec;
            auto tmp = std::filesystem::temp_directory_path(ec);
            if (ec) throw IoError("no folder for temporary files (TMPDIR): " + ec.message());
            std::string templ = (tmp / "plumb-eval-XXXXXX").string();
            if (!::mkdtemp(templ.data())) {
                throw IoError(
                    templ + ": cannot create a folder for run partitions: " + std::strerror(errno));
            }
            m_dir = templ;
        }
        for (std::size_t p = 0; p < m_buffers.size(); ++p) {
            if (m_buffers[p].empty()) continue;
            const auto file = part_file(p);
            // Opened for this write only: thousands of partitions never hold descriptors.
            std::FILE* f = std::fopen(file.c_str(), "ab");
            if (!f) {
                throw IoError(file.string() +
                              ": cannot write a run partition: " + std::strerror(errno));
            }
            const bool ok =
                std::fwrite(m_buffers[p].data(), 1, m_buffers[p].size(), f) == m_buffers[p].size();
            if (std::fclose(f) != 0 || !ok) {
                throw IoError(file.string() + ": cannot write a run partition (disk full?)");
            }
            m_spilled[p] = true;
            m_buffers[p].clear();
        }
        m_buffered = 0;
    }

    std::vector<std::string> m_buffers;
    std::vector<bool> m_spilled;
    std::filesystem::path m_dir;
    std::size_t m_budget;
    std::size_t m_buffered = 0;
};

/// Partitions to use for a run of `bytes` bytes: about 32 MB of run text each. Standard input,
/// pipes (size unknown) and gzip-compressed runs (~5x their size in text) take at least 256.
std::size_t partition_count(std::uint64_t bytes) {
    return static_cast<std::size_t>(
        std::clamp<std::uint64_t>(bytes / (32u << 20) + 1, 256, 1u << 16));
}

}  // namespace

EvalResult Evaluator::evaluate_run(const std::filesystem::path& path,
                                   const ProgressCallback& progress,
                                   const CancelToken* cancel) const {
    std::error_code ec;
    if (path != "-" && !std::filesystem::exists(path, ec)) {
        throw IoError(path.string() + ": cannot open: no such file");
    }
    // Standard input, pipes and process substitutions cannot be read twice: their lines go
    // through the partitions in one pass.
    const bool regular = path != "-" && std::filesystem::is_regular_file(path, ec);
    std::vector<QueryValues> rows;
    std::size_t blocks = 0;
    auto tick = [&](const RunReader& reader) {
        if ((++blocks & 63) == 0) {
            if (cancel && cancel->requested()) throw Error("evaluation cancelled");
            if (progress) progress(reader.bytes_read(), reader.size());
        }
    };
    auto evaluate_block = [&](const RunQuery& block, const std::string& name, Scratch& s) {
        if (const QueryQrels* qq = m_qrels->find(block.qid)) {
            load_block(block, s);
            QueryValues row;
            row.qid = block.qid;
            const DuplicateCheck check{name, block.qid};
            evaluate_items(*qq, s, m_measures, m_options, row.values, false, &row.relstring,
                           &check);
            rows.push_back(std::move(row));
        }
    };
    Scratch s;
    RunQuery block;
    if (regular) {
        // The common layout (each query's lines together, in any query order) streams one
        // query at a time.
        RunReader reader(path);
        std::unordered_set<std::string> seen;
        bool grouped = true;
        while (reader.next(block)) {
            if (!seen.insert(block.qid).second) {
                grouped = false;  // a query comes back later: start over with partitions
                break;
            }
            evaluate_block(block, reader.name(), s);
            tick(reader);
        }
        if (grouped) {
            if (progress) progress(reader.bytes_read(), reader.size());
            return finish(std::move(rows), *m_qrels, m_measures, m_options, reader.run_id());
        }
        rows.clear();
    }
    RunReader reader(path);
    RunPartitions parts(partition_count(regular ? reader.size() : 0), m_options.spill_budget_bytes);
    while (reader.next(block)) {
        for (const auto& d : block.docs) parts.add(block.qid, block.docid(d), d.score, d.line);
        tick(reader);
    }
    for (std::size_t p = 0; p < parts.size(); ++p) {
        for (const auto& q : parts.take(p)) evaluate_block(q, reader.name(), s);
        if (cancel && cancel->requested()) throw Error("evaluation cancelled");
    }
    if (progress) progress(reader.bytes_read(), reader.size());
    return finish(std::move(rows), *m_qrels, m_measures, m_options, reader.run_id());
}

void load_bias_tables(EvalOptions& options, const MeasureSet& measures,
                      const std::filesystem::path& bias_file) {
    for (int v : measures.bias_variants()) {
        const auto variant = static_cast<BiasVariant>(v);
        if (bias_file.empty()) {
            throw ConfigError(std::string("gender-bias measures of variant ") +
                              bias_variant_name(variant) +
                              " need --bias-file (a bias file from plumb debias gender)");
        }
        // (a file whose comment names another variant is refused by read_bias_file)
        options.bias_tables[v] =
            std::make_shared<const BiasTable>(read_bias_file(bias_file, variant));
    }
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
