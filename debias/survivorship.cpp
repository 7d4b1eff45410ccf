#include "debias/survivorship.hpp"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "debias/judgements.hpp"
#include "debias/plot.hpp"
#include "debias/rotation.hpp"
#include "eval/subsets.hpp"
#include "index/corpus.hpp"
#include "plugin/error.hpp"
#include "plugin/json.hpp"
#include "plugin/text_io.hpp"

namespace plumb::debias {
namespace {

using json = nlohmann::json;

struct QnaPassage {
    bool selected = false;
    std::uint64_t hash = 0;
};

struct QnaRow {
    std::string qid;
    std::string type;
    std::vector<QnaPassage> passages;
};

std::string id_string(const json& v) {
    if (v.is_string()) return v.get<std::string>();
    if (v.is_number_integer()) return std::to_string(v.get<long long>());
    if (v.is_number_unsigned()) return std::to_string(v.get<unsigned long long>());
    return {};
}

/// Streaming SAX handler for the column layout of MS MARCO QnA v2.1.
class ColumnSax : public json::json_sax_t {
public:
    ColumnSax(std::string name, std::map<std::uint64_t, QnaRow>& rows)
        : m_name(std::move(name)), m_rows(rows) {}

    bool null() override { return true; }
    bool boolean(bool v) override { return value_bool(v); }
    bool number_integer(number_integer_t v) override {
        return value_int(static_cast<long long>(v), std::to_string(v));
    }
    bool number_unsigned(number_unsigned_t v) override {
        return value_int(static_cast<long long>(v), std::to_string(v));
    }
    bool number_float(number_float_t, const string_t& s) override { return value_int(-1, s); }
    bool string(string_t& v) override {
        if (depth_is_row_value()) {
            auto& row = current_row();
            if (m_stack[0].key == "query_id")
                row.qid = v;
            else if (m_stack[0].key == "query_type")
                row.type = v;
        } else if (depth_is_passage_value() && m_stack[3].key == "passage_text") {
            current_row().passages.back().hash = fnv1a64(v);
        } else if (depth_is_passage_value() && m_stack[3].key == "is_selected") {
            current_row().passages.back().selected = v == "1" || v == "true";
        }
        return true;
    }
    bool binary(binary_t&) override { return true; }
    bool start_object(std::size_t) override {
        if (m_stack.size() == 3 && m_stack[0].key == "passages" && !m_stack[2].object)
            current_row().passages.emplace_back();
        m_stack.push_back({true, {}});
        return true;
    }
    bool key(string_t& k) override {
        m_stack.back().key = k;
        return true;
    }
    bool end_object() override {
        m_stack.pop_back();
        return true;
    }
    bool start_array(std::size_t) override {
        if (m_stack.empty()) throw ParseError(m_name, 0, "expected the MS MARCO QnA column object");
        m_stack.push_back({false, {}});
        return true;
    }
    bool end_array() override {
        m_stack.pop_back();
        return true;
    }
    bool parse_error(std::size_t position, const std::string&,
                     const nlohmann::detail::exception& ex) override {
        throw ParseError(m_name, 0,
                         "invalid JSON at byte " + std::to_string(position) + ": " + ex.what());
    }

private:
    struct Frame {
        bool object = false;
        std::string key;
    };
    bool depth_is_row_value() const { return m_stack.size() == 2 && m_stack[1].object; }
    bool depth_is_passage_value() const {
        return m_stack.size() == 4 && m_stack[0].key == "passages" && m_stack[3].object;
    }
    QnaRow& current_row() {
        const std::string& k = m_stack[1].key;
        std::uint64_t row = 0;
        auto [ptr, ec] = std::from_chars(k.data(), k.data() + k.size(), row);
        if (ec != std::errc() || ptr != k.data() + k.size())
            throw ParseError(m_name, 0,
                             "row key '" + k +
                                 "' is not a number (expected the "
                                 "MS MARCO QnA column layout)");
        return m_rows[row];
    }
    bool value_int(long long v, const std::string& text) {
        if (depth_is_row_value() && m_stack[0].key == "query_id")
            current_row().qid = text;
        else if (depth_is_passage_value() && m_stack[3].key == "is_selected")
            current_row().passages.back().selected = v == 1;
        return true;
    }
    bool value_bool(bool v) {
        if (depth_is_passage_value() && m_stack[3].key == "is_selected")
            current_row().passages.back().selected = v;
        return true;
    }
    std::string m_name;
    std::map<std::uint64_t, QnaRow>& m_rows;
    std::vector<Frame> m_stack;
};

std::vector<QnaRow> read_qna_json(const std::filesystem::path& path) {
    std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "rb"),
                                                         &std::fclose);
    if (!file) throw IoError("cannot open " + path.string());
    std::setvbuf(file.get(), nullptr, _IOFBF, 1 << 20);
    std::map<std::uint64_t, QnaRow> rows;
    ColumnSax sax(path.string(), rows);
    json::sax_parse(file.get(), &sax);
    std::vector<QnaRow> out;
    for (auto& [k, row] : rows) {
        if (row.qid.empty()) {
            if (row.passages.empty()) continue;
            throw ParseError(path.string(), 0, "row " + std::to_string(k) + " has no query_id");
        }
        out.push_back(std::move(row));
    }
    return out;
}

std::vector<QnaRow> read_qna_jsonl(const std::filesystem::path& path) {
    LineReader reader(path);
    std::vector<QnaRow> out;
    std::string_view line;
    while (reader.next(line)) {
        if (trim(line).empty()) continue;
        const json j = parse_json(line, reader.name(), reader.line_number());
        if (!j.is_object()) reader.fail("expected a JSON object");
        QnaRow row;
        if (!j.contains("query_id")) reader.fail("missing 'query_id'");
        row.qid = id_string(j["query_id"]);
        if (row.qid.empty()) reader.fail("'query_id' must be a string or an integer");
        if (j.contains("query_type") && j["query_type"].is_string())
            row.type = j["query_type"].get<std::string>();
        if (!j.contains("passages") || !j["passages"].is_array())
            reader.fail("missing 'passages' array");
        for (const auto& p : j["passages"]) {
            if (!p.is_object()) reader.fail("a passage must be an object");
            QnaPassage qp;
            if (p.contains("is_selected")) {
                const auto& s = p["is_selected"];
                if (s.is_boolean())
                    qp.selected = s.get<bool>();
                else if (s.is_number_integer())
                    qp.selected = s.get<long long>() == 1;
                else
                    reader.fail("'is_selected' must be 0/1 or a boolean");
            }
            if (p.contains("passage_text") && p["passage_text"].is_string())
                qp.hash = fnv1a64(p["passage_text"].get_ref<const std::string&>());
            row.passages.push_back(qp);
        }
        out.push_back(std::move(row));
    }
    return out;
}

std::string fmt_share(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.4f", v);
    return buf;
}

void write_text(const std::filesystem::path& path, const std::string& text) {
    AtomicFile f(path);
    f.write(text);
    f.commit();
}

}  // namespace

std::pair<std::size_t, std::size_t> convert_qna_to_shown_ranks(
    const std::filesystem::path& input, const std::filesystem::path& shown_out,
    const std::filesystem::path& types_out, const std::filesystem::path& corpus,
    const std::string& corpus_format, const ProgressCallback& progress) {
    auto rows = input.extension() == ".jsonl" ? read_qna_jsonl(input) : read_qna_json(input);
    if (rows.empty())
        throw ParseError(input.string(), 0,
                         "no queries with shown passages found (expected MS MARCO QnA: query_id, "
                         "query_type, passages)");
    std::unordered_map<std::uint64_t, std::string> ids;
    if (!corpus.empty()) {
        for (const auto& r : rows)
            for (const auto& p : r.passages) ids.emplace(p.hash, std::string());
        index::CorpusReaderOptions ropts;
        ropts.format = index::resolve_corpus_format(corpus_format, corpus);
        index::CorpusReader reader(corpus, ropts);
        index::Document doc;
        std::uint64_t k = 0;
        while (reader.next(doc)) {
            auto it = ids.find(fnv1a64(doc.text));
            if (it != ids.end() && it->second.empty()) it->second = doc.id;
            if (progress && (++k & 4095) == 0) progress(reader.bytes_read(), reader.size_bytes());
        }
    }
    std::size_t mapped = 0, synthetic = 0;
    AtomicFile shown(shown_out);
    shown.write("# qid\trank\tdocid\tis_selected (plumb debias survivorship)\n");
    std::unordered_set<std::string> seen_qids;
    for (const auto& r : rows) {
        if (!seen_qids.insert(r.qid).second)
            throw ParseError(input.string(), 0, "duplicate query_id " + r.qid);
        std::unordered_set<std::string> used;
        for (std::size_t i = 0; i < r.passages.size(); ++i) {
            std::string docid;
            auto it = ids.find(r.passages[i].hash);
            if (it != ids.end() && !it->second.empty() && !used.count(it->second)) {
                docid = it->second;
                mapped++;
            } else {
                docid = r.qid + "_" + std::to_string(i + 1);
                synthetic++;
            }
            used.insert(docid);
            shown.write(r.qid + '\t' + std::to_string(i + 1) + '\t' + docid + '\t' +
                        (r.passages[i].selected ? "1" : "0") + '\n');
        }
    }
    shown.commit();
    if (!types_out.empty()) {
        AtomicFile types(types_out);
        for (const auto& r : rows)
            if (!r.type.empty()) types.write(r.qid + '\t' + r.type + '\n');
        types.commit();
    }
    return {mapped, synthetic};
}

SurvivorshipReport run_survivorship(const SurvivorshipOptions& o,
                                    const ProgressCallback& progress) {
    if (o.output_dir.empty()) throw InvalidArgument("an output directory is required");
    std::filesystem::create_directories(o.output_dir);
    SurvivorshipReport rep;
    std::filesystem::path shown_path = o.input, types_path = o.types;
    auto ext = o.input.extension();
    if (ext == ".json" || ext == ".jsonl") {
        shown_path = o.output_dir / "shown_ranks.tsv";
        types_path = o.output_dir / "query_types.tsv";
        auto [mapped, synthetic] = convert_qna_to_shown_ranks(o.input, shown_path, types_path,
                                                              o.corpus, o.corpus_format, progress);
        rep.passages_mapped = mapped;
        rep.passages_synthetic = synthetic;
    }
    auto shown = eval::read_shown_ranks(shown_path);
    std::unordered_map<std::string, std::string> types;
    if (!types_path.empty())
        for (auto& [q, t] : read_tsv_map(types_path)) types.emplace(q, t);
    rep.queries = shown.queries.size();
    for (const auto& row : eval::unanswered_by_type(shown, types))
        rep.by_type.push_back({row.type, row.total, row.unanswered, row.share});
    for (const auto& q : shown.queries) {
        if (q.first_selected)
            rep.first_rank[*q.first_selected]++;
        else
            rep.unanswered++;
    }
    unsigned max_k = o.max_k ? o.max_k : shown.max_rank;
    for (unsigned k = 1; k <= max_k; ++k) {
        auto qids = eval::subset_qids(shown, k);
        rep.subset_sizes.push_back(qids.size());
        std::string text;
        for (const auto& q : qids) text += q + '\n';
        write_text(o.output_dir / ("S_" + std::to_string(k) + ".qids"), text);
    }
    {
        std::string text;
        for (const auto& q : shown.queries) text += q.qid + '\n';
        write_text(o.output_dir / "all.qids", text);
    }

    nlohmann::ordered_json j;
    j["queries"] = rep.queries;
    j["unanswered"] = rep.unanswered;
    j["unanswered_share"] =
        rep.queries ? static_cast<double>(rep.unanswered) / static_cast<double>(rep.queries) : 0.0;
    j["by_type"] = nlohmann::ordered_json::array();
    std::string t = "Survivorship audit of shown rankings\n";
    t += "queries: " + std::to_string(rep.queries) +
         ", unanswered: " + std::to_string(rep.unanswered) + " (" +
         fmt_share(j["unanswered_share"].get<double>()) + ")\n";
    if (rep.passages_mapped + rep.passages_synthetic)
        t += "QnA passages mapped to corpus ids: " + std::to_string(rep.passages_mapped) +
             ", synthetic ids <qid>_<rank>: " + std::to_string(rep.passages_synthetic) + "\n";
    t += "\nunanswered by query type\ntype\ttotal\tunanswered\tshare\n";
    for (const auto& r : rep.by_type) {
        t += r.type + '\t' + std::to_string(r.total) + '\t' + std::to_string(r.unanswered) + '\t' +
             fmt_share(r.share) + '\n';
        j["by_type"].push_back({{"type", r.type},
                                {"total", r.total},
                                {"unanswered", r.unanswered},
                                {"share", r.share}});
    }
    t += "\nfirst relevant rank\nrank\tqueries\n";
    nlohmann::ordered_json fr = nlohmann::ordered_json::object();
    for (const auto& [rank, n] : rep.first_rank) {
        t += std::to_string(rank) + '\t' + std::to_string(n) + '\n';
        fr[std::to_string(rank)] = n;
    }
    t += "none\t" + std::to_string(rep.unanswered) + '\n';
    j["first_relevant_rank"] = fr;
    t += "\nsubsets (S_k = queries with a relevant passage within ranks 1..k)\nk\t|S_k|\n";
    nlohmann::ordered_json ss = nlohmann::ordered_json::object();
    for (std::size_t k = 1; k <= rep.subset_sizes.size(); ++k) {
        t += std::to_string(k) + '\t' + std::to_string(rep.subset_sizes[k - 1]) + '\n';
        ss[std::to_string(k)] = rep.subset_sizes[k - 1];
    }
    t += "All\t" + std::to_string(rep.queries) + '\n';
    j["subset_sizes"] = ss;
    j["passages_mapped"] = rep.passages_mapped;
    j["passages_synthetic"] = rep.passages_synthetic;
    write_text(o.output_dir / "report.json", j.dump(2) + "\n");
    write_text(o.output_dir / "report.txt", t);

    if (rep.queries > 0) {
        BarChart chart;
        chart.title = "First relevant rank among the shown passages";
        chart.x_label = "rank of the first passage marked relevant";
        chart.y_label = "queries";
        PlotSeries s{"queries", {}, {}};
        for (unsigned k = 1; k <= std::max(shown.max_rank, 1u); ++k) {
            chart.categories.push_back(std::to_string(k));
            auto it = rep.first_rank.find(k);
            s.values.push_back(it == rep.first_rank.end() ? 0.0 : static_cast<double>(it->second));
        }
        chart.categories.push_back("none");
        s.values.push_back(static_cast<double>(rep.unanswered));
        chart.series.push_back(std::move(s));
        write_bar_chart(chart, o.output_dir / "first_rank");
    }
    return rep;
}

}  // namespace plumb::debias
