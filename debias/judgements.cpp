#include "debias/judgements.hpp"

#include <algorithm>
#include <charconv>

#include "eval/run.hpp"
#include "plugin/error.hpp"
#include "plugin/text_io.hpp"

namespace plumb::debias {

std::vector<Judgement> read_qrels(const std::filesystem::path& path) {
    // TREC `qid iter docid rel` or BEIR `query-id corpus-id score` (header line optional); the
    // first judgement line decides, as in eval::Qrels::load.
    LineReader reader(path);
    std::vector<Judgement> out;
    std::string_view line;
    std::vector<std::string_view> fields;
    std::size_t want = 0;  // 3 (BEIR) or 4 (TREC), fixed by the first judgement line
    while (reader.next(line)) {
        if (trim(line).empty() || trim(line).front() == '#') continue;
        split_ws(line, fields);
        if (want == 0) {
            want = fields.size() == 3 ? 3 : 4;
            if (fields.size() == 3 && fields[0] == "query-id" && fields[1] == "corpus-id" &&
                fields[2] == "score") {
                continue;  // BEIR's header line
            }
        }
        if (fields.size() != want)
            reader.fail(want == 3 ? "expected 3 fields 'query-id corpus-id score' (BEIR qrels, "
                                    "as on the first line), got " +
                                        std::to_string(fields.size())
                                  : "expected 4 fields 'qid iter docid relevance', got " +
                                        std::to_string(fields.size()));
        const std::string_view rel_field = fields[want - 1];
        int rel = 0;
        auto [ptr, ec] =
            std::from_chars(rel_field.data(), rel_field.data() + rel_field.size(), rel);
        if (ec != std::errc() || ptr != rel_field.data() + rel_field.size())
            reader.fail("relevance is not an integer: '" + std::string(rel_field) + "'");
        out.push_back({std::string(fields[0]), std::string(fields[want - 2]), rel});
    }
    return out;
}

std::map<std::string, std::string> read_tsv_map(const std::filesystem::path& path) {
    LineReader reader(path);
    std::map<std::string, std::string> out;
    std::map<std::string, std::uint64_t> line_of;
    std::string_view line;
    std::vector<std::string_view> fields;
    while (reader.next(line)) {
        if (trim(line).empty()) continue;
        split(line, '\t', fields);
        if (fields.size() != 2)
            reader.fail("expected 2 TAB-separated fields, got " + std::to_string(fields.size()));
        std::string key(trim(fields[0]));
        if (key.empty()) reader.fail("empty key");
        auto [it, inserted] = out.emplace(key, std::string(trim(fields[1])));
        if (!inserted)
            reader.fail("duplicate key '" + key + "' (first on line " +
                        std::to_string(line_of[key]) + ")");
        line_of[key] = reader.line_number();
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
