#include "index/corpus.hpp"


#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string_view>
#include <unordered_map>

#include "plugin/error.hpp"
#include "plugin/text_io.hpp"

namespace plumb::index {

namespace fs = std::filesystem;

namespace {

bool has_suffix(std::string_view s, std::string_view suffix) {
    return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

std::string lower(std::string s) {
    std::transform(s.begin(), s.end(), s.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return s;
}

bool is_blank(std::string_view line) { return trim(line).empty(); }

bool has_ascii_ws(std::string_view s) {
    return s.find_first_of(" \t\r\n\v\f") != std::string_view::npos;
}

/// A recoverable problem with one line: becomes a ParseError or a skip.
struct LineError {
    std::string message;
};

/// Validates UTF-8; the error names the 1-based byte within the line.
void check_utf8(std::string_view line) {
    std::size_t bad = find_invalid_utf8(line);
    if (bad != std::string_view::npos) {
        throw LineError{"invalid UTF-8 at byte " + std::to_string(bad + 1)};
    }
}

/// Trims and checks an id; `what` is "document id" or "query id".
std::string_view check_id(std::string_view raw, const char* what) {
    std::string_view id = trim(raw);
    if (id.empty()) throw LineError{std::string("missing ") + what};
    if (has_ascii_ws(id)) {
        throw LineError{std::string(what) + " '" + std::string(id) + "' contains whitespace"};
    }
    return id;
}

/// Splits `id<TAB>text`. With `tabs_in_text` the text is everything after the first TAB.
/// `query` selects the wording of messages (topics vs corpus).
void parse_tsv(std::string_view line, bool tabs_in_text, bool query, std::string& id,
               std::string& text) {
    std::size_t tab = line.find('\t');
    if (tab == std::string_view::npos) {
        throw LineError{std::string("expected ") + (query ? "qid<TAB>query" : "id<TAB>text") +
                        ", found no TAB"};
    }
    std::string_view rest = line.substr(tab + 1);
    if (!tabs_in_text && rest.find('\t') != std::string_view::npos) {
        std::size_t fields =
            1 + static_cast<std::size_t>(std::count(line.begin(), line.end(), '\t'));
        throw LineError{"expected 2 TAB-separated fields, found " + std::to_string(fields) +
                        (query ? std::string()
                               : std::string(" (a TAB inside the text is ambiguous: "
                                             "a title column?; the reader option "
                                             "tabs_in_text accepts it)"))};
    }
    id.assign(check_id(line.substr(0, tab), query ? "query id" : "document id"));
    text.assign(rest);
}

/// Reads a JSON id value: a string or an integer.
std::string json_id(const nlohmann::json& v, const char* what) {
    if (v.is_string()) return std::string(check_id(v.get_ref<const std::string&>(), what));
    if (v.is_number_integer() || v.is_number_unsigned()) return v.dump();
    throw LineError{std::string(what) + " must be a string or an integer, found " +
                    std::string(v.type_name())};
}

/// Reads an optional text value: a string, or null / absent (empty).
void json_text(const nlohmann::json& obj, const char* key, std::string& out) {
    auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) {
        out.clear();
        return;
    }
    if (!it->is_string()) {
        throw LineError{std::string("\"") + key + "\" must be a string, found " +
                        std::string(it->type_name())};
    }
    out = it->get_ref<const std::string&>();
}

nlohmann::json parse_json_object(std::string_view line) {
    nlohmann::json obj;
    try {
        obj = nlohmann::json::parse(line);
    } catch (const nlohmann::json::parse_error& e) {
        std::string msg = e.what();
        // nlohmann prefixes "[json.exception.parse_error.101] "; keep the readable part.
        auto p = msg.find("] ");
        throw LineError{"invalid JSON: " + (p == std::string::npos ? msg : msg.substr(p + 2))};
    }
    if (!obj.is_object()) {
        throw LineError{std::string("expected a JSON object, found ") + obj.type_name()};
    }
    return obj;
}

/// BEIR corpus line: `_id` (or `id`), `title` (optional), `text` (or `contents`).
void parse_jsonl_doc(std::string_view line, Document& doc) {
    nlohmann::json obj = parse_json_object(line);
    auto id = obj.find("_id");
    if (id == obj.end()) id = obj.find("id");
    if (id == obj.end()) throw LineError{"missing document id (\"_id\")"};
    doc.id = json_id(*id, "document id");
    const char* text_key = obj.contains("text") ? "text" : "contents";
    if (!obj.contains(text_key)) throw LineError{"missing \"text\""};
    json_text(obj, text_key, doc.text);
    json_text(obj, "title", doc.title);
}

/// BEIR queries line: `_id` (or `id`), `text`.
void parse_jsonl_query(std::string_view line, Query& q) {
    nlohmann::json obj = parse_json_object(line);
    auto id = obj.find("_id");
    if (id == obj.end()) id = obj.find("id");
    if (id == obj.end()) throw LineError{"missing query id (\"_id\")"};
    q.id = json_id(*id, "query id");
    if (!obj.contains("text")) throw LineError{"missing \"text\""};
    json_text(obj, "text", q.text);
}

}  // namespace

CorpusFormat parse_corpus_format(const std::string& name) {
    std::string n = lower(name);
    if (n == "tsv") return CorpusFormat::Tsv;
    if (n == "jsonl" || n == "json") return CorpusFormat::Jsonl;
    throw InvalidArgument("unknown corpus format '" + name + "' (expected tsv or jsonl)");
}

const char* corpus_format_name(CorpusFormat format) noexcept {
    return format == CorpusFormat::Jsonl ? "jsonl" : "tsv";
}

CorpusFormat detect_corpus_format(const fs::path& path) {
    std::string name = lower(path.filename().string());
    if (has_suffix(name, ".gz")) name.resize(name.size() - 3);
    if (has_suffix(name, ".jsonl") || has_suffix(name, ".json")) return CorpusFormat::Jsonl;
    return CorpusFormat::Tsv;
}

// ---------------------------------------------------------------------------------------------
// CorpusReader
// ---------------------------------------------------------------------------------------------

struct CorpusReader::Impl {
    Impl(const fs::path& path, CorpusReaderOptions opts)
        : reader(std::make_unique<LineReader>(path)), options(opts) {}
    std::unique_ptr<LineReader> reader;
    CorpusReaderOptions options;
    std::uint64_t skipped = 0;
    std::uint64_t line = 0;
};

CorpusReader::CorpusReader(const fs::path& path, CorpusReaderOptions options)
    : m_impl(std::make_unique<Impl>(path, options)) {}
CorpusReader::~CorpusReader() = default;
CorpusReader::CorpusReader(CorpusReader&&) noexcept = default;
CorpusReader& CorpusReader::operator=(CorpusReader&&) noexcept = default;

bool CorpusReader::next(Document& doc) {
    Impl& m = *m_impl;
    std::string_view line;
    while (m.reader->next(line)) {
        if (is_blank(line)) continue;
        try {
            check_utf8(line);
            if (m.options.format == CorpusFormat::Tsv) {
                doc.title.clear();
                parse_tsv(line, m.options.tabs_in_text, false, doc.id, doc.text);
            } else {
                parse_jsonl_doc(line, doc);
            }
        } catch (const LineError& e) {
            if (m.options.skip_bad) {
                ++m.skipped;
                continue;
            }
            m.reader->fail(e.message);
        }
        m.line = m.reader->line_number();
        return true;
    }
    return false;
}

std::uint64_t CorpusReader::skipped() const noexcept { return m_impl->skipped; }
std::uint64_t CorpusReader::line_number() const noexcept { return m_impl->line; }
std::uint64_t CorpusReader::bytes_read() const noexcept { return m_impl->reader->bytes_read(); }
std::uint64_t CorpusReader::size_bytes() const noexcept { return m_impl->reader->size(); }
const std::string& CorpusReader::name() const noexcept { return m_impl->reader->name(); }

// ---------------------------------------------------------------------------------------------
// Topics
// ---------------------------------------------------------------------------------------------

std::vector<Query> read_topics(const fs::path& path, bool skip_bad, std::uint64_t* skipped) {
    const bool jsonl = detect_corpus_format(path) == CorpusFormat::Jsonl;
    LineReader reader(path);
    std::vector<Query> topics;
    std::unordered_map<std::string, std::uint64_t> seen;  // qid -> line
    std::uint64_t bad = 0;
    std::string_view line;
    Query q;
    while (reader.next(line)) {
        if (is_blank(line)) continue;
        try {
            check_utf8(line);
            if (jsonl) {
                parse_jsonl_query(line, q);
            } else {
                parse_tsv(line, false, true, q.id, q.text);
            }
            auto [it, inserted] = seen.emplace(q.id, reader.line_number());
            if (!inserted) {
                throw LineError{"duplicate query id '" + q.id + "' (first on line " +
                                std::to_string(it->second) + ")"};
            }
        } catch (const LineError& e) {
            if (skip_bad) {
                ++bad;
                continue;
            }
            reader.fail(e.message);
        }
        topics.push_back(std::move(q));
        q = Query{};
    }
    if (skipped) *skipped = bad;
    return topics;
}

}  // namespace plumb::index
