#include "debias/judgements.hpp"

#include <algorithm>

#include "eval/qrels.hpp"
#include "eval/run.hpp"
#include "plugin/error.hpp"
#include "plugin/text_io.hpp"

namespace plumb::debias {

std::vector<Judgement> read_qrels(const std::filesystem::path& path) {
    const auto qrels = eval::Qrels::load(path);
    std::vector<Judgement> out;
    out.reserve(qrels.num_judgements());
    for (const auto& qid : qrels.qids()) {
        for (auto& [docid, grade] : qrels.find(qid)->judgements()) {
            out.push_back({qid, std::move(docid), grade});
        }
    }
    return out;
}

void FirstLines::add(const LineReader& reader, const std::string& key, const char* what) {
    auto [it, inserted] = m_line.emplace(key, reader.line_number());
    if (!inserted) {
        reader.fail("duplicate " + std::string(what) + " '" + key + "' (first on line " +
                    std::to_string(it->second) + ")");
    }
}

std::map<std::string, std::string> read_tsv_map(const std::filesystem::path& path) {
    LineReader reader(path);
    std::map<std::string, std::string> out;
    FirstLines first;
    std::string_view line;
    std::vector<std::string_view> fields;
    while (reader.next(line)) {
        if (trim(line).empty()) continue;
        split(line, '\t', fields);
        if (fields.size() != 2)
            reader.fail("expected 2 TAB-separated fields, got " + std::to_string(fields.size()));
        std::string key(trim(fields[0]));
        if (key.empty()) reader.fail("empty key");
        first.add(reader, key, "key");
        out.emplace(key, std::string(trim(fields[1])));
    }
    return out;
}

std::unordered_set<std::string> run_top_docids(const std::filesystem::path& run,
                                               std::size_t depth) {
    auto r = eval::read_run(run);
    std::unordered_set<std::string> out;
    for (auto& q : r.queries) {
        auto docs = q.docs;
        std::sort(docs.begin(), docs.end(), [&](const eval::RunDoc& a, const eval::RunDoc& b) {
            if (a.score != b.score) return a.score > b.score;
            return q.docid(a) > q.docid(b);
        });
        for (std::size_t i = 0; i < docs.size() && i < depth; ++i) out.emplace(q.docid(docs[i]));
    }
    return out;
}

}  // namespace plumb::debias
