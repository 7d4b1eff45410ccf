#include "eval/qrels.hpp"

#include <algorithm>
#include <charconv>
#include <functional>
#include <unordered_map>

#include "eval/detail_parse.hpp"
#include "plugin/error.hpp"
#include "plugin/text_io.hpp"

namespace plumb::eval {

std::uint64_t docid_hash(std::string_view docid) noexcept {
    return std::hash<std::string_view>{}(docid);
}

// ---------------------------------------------------------------------------------------------
// QueryQrels
// ---------------------------------------------------------------------------------------------

QueryQrels::QueryQrels(std::string qid) : m_qid(std::move(qid)) { m_slots.resize(16); }

void QueryQrels::grow() {
    std::vector<Slot> old = std::move(m_slots);
    m_slots.assign(old.size() * 2, Slot{});
    const std::size_t mask = m_slots.size() - 1;
    std::vector<std::uint32_t> remap(old.size(), 0);
    for (std::size_t i = 0; i < old.size(); ++i) {
        if (!old[i].used) continue;
        std::size_t p = old[i].hash & mask;
        while (m_slots[p].used) p = (p + 1) & mask;
        m_slots[p] = old[i];
        remap[i] = static_cast<std::uint32_t>(p);
    }
    for (auto& o : m_order) o = remap[o];
}

bool QueryQrels::add(std::string_view docid, long grade) {
    const std::uint64_t h = docid_hash(docid);
    if (find(docid, h)) return false;
    if ((m_count + 1) * 2 > m_slots.size()) grow();
    const std::size_t mask = m_slots.size() - 1;
    std::size_t p = h & mask;
    while (m_slots[p].used) p = (p + 1) & mask;
    Slot& s = m_slots[p];
    s.hash = h;
    s.offset = static_cast<std::uint32_t>(m_arena.size());
    s.length = static_cast<std::uint32_t>(docid.size());
    s.grade = grade;
    s.used = true;
    m_arena.append(docid);
    m_order.push_back(static_cast<std::uint32_t>(p));
    ++m_count;
    if (grade >= 0) {
        auto it = std::lower_bound(m_levels.begin(), m_levels.end(), grade,
                                   [](const GradeCount& l, long g) { return l.grade < g; });
        if (it == m_levels.end() || it->grade != grade) it = m_levels.insert(it, {grade, 0});
        ++it->count;
    }
    return true;
}

const long* QueryQrels::find(std::string_view docid, std::uint64_t hash) const noexcept {
    const std::size_t mask = m_slots.size() - 1;
    std::size_t p = hash & mask;
    for (;;) {
        const Slot& s = m_slots[p];
        if (!s.used) return nullptr;
        if (s.hash == hash && s.length == docid.size() &&
            std::string_view(m_arena.data() + s.offset, s.length) == docid) {
            return &s.grade;
        }
        p = (p + 1) & mask;
    }
}

long QueryQrels::num_rel(long relevance_level) const noexcept {
    long n = 0;
    for (const auto& l : m_levels) {
        if (l.grade >= relevance_level) n += l.count;
    }
    return n;
}

std::vector<std::pair<std::string, long>> QueryQrels::judgements() const {
    std::vector<std::pair<std::string, long>> out;
    out.reserve(m_order.size());
    for (auto p : m_order) {
        const Slot& s = m_slots[p];
        out.emplace_back(std::string(m_arena.data() + s.offset, s.length), s.grade);
    }
    return out;
}

// ---------------------------------------------------------------------------------------------
// Qrels
// ---------------------------------------------------------------------------------------------

namespace {
struct StringHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const noexcept {
        return std::hash<std::string_view>{}(s);
    }
};
}  // namespace

struct Qrels::Impl {
    std::unordered_map<std::string, std::unique_ptr<QueryQrels>, StringHash, std::equal_to<>>
        queries;
    std::size_t judgements = 0;

    QueryQrels& query(std::string_view qid) {
        auto it = queries.find(qid);
        if (it == queries.end()) {
            it = queries.emplace(std::string(qid), std::make_unique<QueryQrels>(std::string(qid)))
                     .first;
        }
        return *it->second;
    }
};

Qrels::Qrels() : m_impl(std::make_unique<Impl>()) {}
Qrels::~Qrels() = default;
Qrels::Qrels(Qrels&&) noexcept = default;
Qrels& Qrels::operator=(Qrels&&) noexcept = default;

void Qrels::add(std::string_view qid, std::string_view docid, long grade) {
    if (!m_impl->query(qid).add(docid, grade)) {
        throw InvalidArgument("qrels: duplicate judgement for query '" + std::string(qid) +
                              "', document '" + std::string(docid) + "'");
    }
    ++m_impl->judgements;
}

const QueryQrels* Qrels::find(std::string_view qid) const noexcept {
    auto it = m_impl->queries.find(qid);
    return it == m_impl->queries.end() ? nullptr : it->second.get();
}

std::vector<std::string> Qrels::qids() const {
    std::vector<std::string> out;
    out.reserve(m_impl->queries.size());
    for (const auto& [qid, q] : m_impl->queries) out.push_back(qid);
    std::sort(out.begin(), out.end());  // std::string compares bytes as unsigned, like strcmp
    return out;
}

std::size_t Qrels::num_queries() const noexcept { return m_impl->queries.size(); }
std::size_t Qrels::num_judgements() const noexcept { return m_impl->judgements; }

namespace {

/// The layout of one qrels file, fixed by its first judgement line.
enum class QrelsLayout { Unknown, Trec, Beir };

/// Parses one line of a qrels file: TREC `qid iter docid rel` or BEIR `query-id corpus-id
/// score` (the first judgement line decides; BEIR's header line is skipped).
void parse_qrels_line(Qrels& qrels, std::string_view line, const std::string& name,
                      std::uint64_t line_no, QrelsLayout& layout) {
    std::string_view f[5];
    std::size_t n = detail::split_fields(line, f, 5);
    if (n == 0 || f[0].front() == '#') return;
    if (layout == QrelsLayout::Unknown) {
        if (n == 3 && f[0] == "query-id" && f[1] == "corpus-id" && f[2] == "score") {
            layout = QrelsLayout::Beir;  // BEIR's header line
            return;
        }
        layout = n == 3 ? QrelsLayout::Beir : QrelsLayout::Trec;
    }
    const bool beir = layout == QrelsLayout::Beir;
    const std::size_t want = beir ? 3 : 4;
    if (n != want) {
        throw ParseError(
            name, line_no,
            std::string("malformed qrels line: expected ") +
                (beir ? "3 fields 'query-id corpus-id score' (BEIR qrels, as on the first line)"
                      : "4 fields 'qid iter docid rel'") +
                ", got " + std::to_string(n) + (n == 5 ? " or more" : ""));
    }
    const std::string_view qid = f[0];
    const std::string_view docid = beir ? f[1] : f[2];
    const std::string_view rel = beir ? f[2] : f[3];
    long grade = 0;
    if (!detail::parse_long(rel, grade)) {
        throw ParseError(name, line_no,
                         "relevance grade is not an integer: '" + std::string(rel) + "'");
    }
    try {
        qrels.add(qid, docid, grade);
    } catch (const InvalidArgument&) {
        throw ParseError(name, line_no,
                         "duplicate judgement for query '" + std::string(qid) + "', document '" +
                             std::string(docid) + "'");
    }
}

}  // namespace

Qrels Qrels::load(const std::filesystem::path& path) {
    LineReader reader(path);
    Qrels qrels;
    QrelsLayout layout = QrelsLayout::Unknown;
    std::string_view line;
    while (reader.next(line)) {
        parse_qrels_line(qrels, line, reader.name(), reader.line_number(), layout);
    }
    return qrels;
}

Qrels Qrels::parse(std::string_view text, const std::string& name) {
    Qrels qrels;
    QrelsLayout layout = QrelsLayout::Unknown;
    std::uint64_t line_no = 0;
    std::size_t pos = 0;
    while (pos < text.size()) {
        std::size_t nl = text.find('\n', pos);
        if (nl == std::string_view::npos) nl = text.size();
        ++line_no;
        parse_qrels_line(qrels, text.substr(pos, nl - pos), name, line_no, layout);
        pos = nl + 1;
    }
    return qrels;
}

}  // namespace plumb::eval
