#include "eval/run.hpp"

#include <limits>
#include <unordered_map>

#include "eval/detail_parse.hpp"
#include "plugin/error.hpp"
#include "plugin/text_io.hpp"

namespace plumb::eval {

void RunQuery::add(std::string_view docid, double score, std::uint64_t line) {
    RunDoc d;
    d.offset = static_cast<std::uint32_t>(docids.size());
    d.length = static_cast<std::uint32_t>(docid.size());
    d.score = score;
    d.line = line;
    docids.append(docid);
    docs.push_back(d);
}

namespace {

struct ParsedLine {
    std::string_view qid;
    std::string_view docid;
    std::string_view tag;
    double score = 0.0;
};

/// Layout of a run file, fixed by its first content line.
enum class RunLayout { Unknown, Trec, MsMarco };

/// Parses one run line; false for a line to skip (empty or comment). Throws ParseError.
/// TREC: `qid Q0 docid rank score tag` (six or more fields; the rank is ignored). MS MARCO:
/// `qid docid rank` (three fields; score = -rank, so rank order is score order).
bool parse_run_line(std::string_view line, const std::string& name, std::uint64_t line_no,
                    RunLayout& layout, std::uint64_t& layout_line, ParsedLine& out) {
    std::string_view f[6];
    std::size_t n = detail::split_fields(line, f, 6);
    if (n == 0 || f[0].front() == '#') return false;
    if (layout == RunLayout::Unknown) {
        if (n == 3) {
            layout = RunLayout::MsMarco;
        } else if (n >= 6) {
            layout = RunLayout::Trec;
        } else {
            throw ParseError(name, line_no,
                             "malformed run line: expected 6 fields 'qid Q0 docid rank score "
                             "tag' (TREC) or 3 fields 'qid docid rank' (MS MARCO), got " +
                                 std::to_string(n));
        }
        layout_line = line_no;
    }
    if (layout == RunLayout::MsMarco) {
        if (n != 3) {
            throw ParseError(name, line_no,
                             "malformed run line: expected 3 fields 'qid docid rank' as in the "
                             "MS MARCO run format of line " +
                                 std::to_string(layout_line) + ", got " + std::to_string(n));
        }
        long rank = 0;
        if (!detail::parse_long(f[2], rank) || rank < 1) {
            throw ParseError(name, line_no,
                             "rank is not a positive integer: '" + std::string(f[2]) + "'");
        }
        out.score = -static_cast<double>(rank);
        out.tag = {};
    } else {
        if (n < 6) {
            throw ParseError(name, line_no,
                             "malformed run line: expected 6 fields 'qid Q0 docid rank score "
                             "tag', got " +
                                 std::to_string(n));
        }
        if (!detail::parse_double(f[4], out.score)) {
            throw ParseError(name, line_no, "score is not a number: '" + std::string(f[4]) + "'");
        }
        out.tag = f[5];
    }
    const std::string_view docid = layout == RunLayout::MsMarco ? f[1] : f[2];
    if (docid.size() > std::numeric_limits<std::uint32_t>::max()) {
        throw ParseError(name, line_no, "document id too long");
    }
    out.qid = f[0];
    out.docid = docid;
    return true;
}

}  // namespace

struct RunReader::Impl {
    explicit Impl(const std::filesystem::path& path) : reader(path) {}
    LineReader reader;
    std::string run_id;
    RunLayout layout = RunLayout::Unknown;
    std::uint64_t layout_line = 0;
    // A parsed line that starts the next block.
    bool have_pending = false;
    std::string pending_qid;
    std::string pending_docid;
    double pending_score = 0.0;
    std::uint64_t pending_line = 0;

    /// Next content line, or false at end of file.
    bool read(ParsedLine& p) {
        std::string_view line;
        while (reader.next(line)) {
            if (parse_run_line(line, reader.name(), reader.line_number(), layout, layout_line, p)) {
                if (layout == RunLayout::Trec && p.tag != run_id) run_id.assign(p.tag);
                return true;
            }
        }
        return false;
    }
};

RunReader::RunReader(const std::filesystem::path& path) : m_impl(std::make_unique<Impl>(path)) {}
RunReader::~RunReader() = default;

bool RunReader::next(RunQuery& out) {
    out.clear();
    Impl& im = *m_impl;
    ParsedLine p;
    if (im.have_pending) {
        out.qid = im.pending_qid;
        out.add(im.pending_docid, im.pending_score, im.pending_line);
        im.have_pending = false;
    } else {
        if (!im.read(p)) return false;
        out.qid.assign(p.qid);
        out.add(p.docid, p.score, im.reader.line_number());
    }
    while (im.read(p)) {
        if (p.qid == out.qid) {
            out.add(p.docid, p.score, im.reader.line_number());
        } else {
            im.pending_qid.assign(p.qid);
            im.pending_docid.assign(p.docid);
            im.pending_score = p.score;
            im.pending_line = im.reader.line_number();
            im.have_pending = true;
            break;
        }
    }
    return true;
}

const std::string& RunReader::run_id() const noexcept { return m_impl->run_id; }
const std::string& RunReader::name() const noexcept { return m_impl->reader.name(); }
std::uint64_t RunReader::bytes_read() const noexcept { return m_impl->reader.bytes_read(); }
std::uint64_t RunReader::size() const noexcept { return m_impl->reader.size(); }

Run read_run(const std::filesystem::path& path) {
    RunReader reader(path);
    Run run;
    run.name = reader.name();
    std::unordered_map<std::string, std::size_t> index;
    RunQuery block;
    while (reader.next(block)) {
        auto [it, inserted] = index.emplace(block.qid, run.queries.size());
        if (inserted) {
            run.queries.push_back(std::move(block));
            block = RunQuery{};
        } else {
            RunQuery& q = run.queries[it->second];
            for (const auto& d : block.docs) q.add(block.docid(d), d.score, d.line);
        }
    }
    run.run_id = reader.run_id();
    return run;
}

Run read_run_parts(const std::vector<std::filesystem::path>& parts) {
    if (parts.empty()) throw InvalidArgument("read_run_parts: no parts");
    Run run;
    std::unordered_map<std::string, std::size_t> index;
    // Per query: docid -> (part, line) of its first occurrence.
    std::vector<std::unordered_map<std::string, std::pair<std::size_t, std::uint64_t>>> seen;
    std::vector<std::string> names;
    for (std::size_t p = 0; p < parts.size(); ++p) {
        Run part = read_run(parts[p]);
        names.push_back(part.name);
        if (!run.name.empty()) run.name += " + ";
        run.name += part.name;
        run.run_id = part.run_id;
        for (auto& block : part.queries) {
            auto [it, inserted] = index.emplace(block.qid, run.queries.size());
            if (inserted) {
                run.queries.push_back(RunQuery{});
                run.queries.back().qid = block.qid;
                seen.emplace_back();
            }
            RunQuery& q = run.queries[it->second];
            auto& docs = seen[it->second];
            for (const auto& d : block.docs) {
                const auto id = block.docid(d);
                auto [at, fresh] = docs.emplace(std::string(id), std::make_pair(p, d.line));
                if (!fresh) {
                    throw ParseError(part.name, d.line,
                                     "duplicate document '" + std::string(id) + "' for query '" +
                                         block.qid + "' (also at " + names[at->second.first] +
                                         ":" + std::to_string(at->second.second) + ")");
                }
                q.add(id, d.score, d.line);
            }
        }
    }
    return run;
}

std::vector<std::filesystem::path> run_parts(const std::string& argument) {
    std::error_code ec;
    if (argument.find(',') == std::string::npos || std::filesystem::exists(argument, ec)) {
        return {argument};
    }
    std::vector<std::filesystem::path> out;
    std::size_t start = 0;
    while (true) {
        const auto comma = argument.find(',', start);
        const auto name = argument.substr(start, comma == std::string::npos ? std::string::npos
                                                                            : comma - start);
        if (name.empty()) return {argument};
        out.emplace_back(name);
        if (comma == std::string::npos) break;
        start = comma + 1;
    }
    return out;
}

}  // namespace plumb::eval
