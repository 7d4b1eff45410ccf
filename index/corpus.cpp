#include "index/corpus.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "index/detail/sources.hpp"
#include "plugin/error.hpp"
#include "plugin/json.hpp"
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
    if (out.find('\0') != std::string::npos) {
        throw LineError{std::string("\"") + key + "\" holds a NUL character (\\u0000)"};
    }
}

nlohmann::json parse_json_object(std::string_view line) {
    nlohmann::json obj;
    try {
        obj = parse_json(line, "", 1);
    } catch (const ParseError& e) {
        throw LineError{e.message()};
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
    auto text = obj.find("text");
    if (text == obj.end()) throw LineError{"missing \"text\""};
    if (text->is_null()) throw LineError{"\"text\" is null (a query needs a text)"};
    json_text(obj, "text", q.text);
}

/// First non-blank line of a file (at most 200 bytes), empty when unreadable or blank.
std::string first_line(const fs::path& path) {
    try {
        LineReader reader(path);
        std::string_view line;
        while (reader.next(line)) {
            std::string_view t = trim(line);
            if (!t.empty()) return std::string(t.substr(0, 200));
        }
    } catch (const Error&) {
    }
    return {};
}

bool starts_doc(std::string_view line) {
    return detail::istarts_with(line, "<DOC>") || detail::istarts_with(line, "<DOC ");
}

bool starts_top(std::string_view line) {
    return detail::istarts_with(line, "<top>") || detail::istarts_with(line, "<top ");
}

/// What a file whose first non-blank line is `line` seems to hold, for error messages.
std::string looks_like(std::string_view line) {
    if (line.empty()) return "no text";
    if (line.front() == '{') return "JSONL";
    if (starts_doc(line)) return "TREC SGML documents (<DOC>)";
    if (starts_top(line)) return "TREC topics (<top>)";
    if (detail::istarts_with(line, "<!DOCTYPE html") || detail::istarts_with(line, "<html")) {
        return "HTML";
    }
    if (line.front() == '<') return "SGML/XML markup";
    if (!is_valid_utf8(line)) return "binary or non-UTF-8 data";
    std::size_t tabs = static_cast<std::size_t>(std::count(line.begin(), line.end(), '\t'));
    if (tabs > 0) return "TSV with " + std::to_string(tabs + 1) + " TAB-separated fields";
    std::vector<std::string_view> f;
    split_ws(line, f);
    if (f.size() == 4) return "TREC qrels (qid iter docid rel)";
    if (f.size() == 6) return "a TREC run (qid Q0 docid rank score tag)";
    return "plain text without TABs";
}

/// True when looks_like() found the expected format itself (the file is of the right kind
/// but has many bad records).
bool same_kind(std::string_view expected, std::string_view seen) {
    if (seen == "JSONL") return expected.find("JSONL") != std::string_view::npos;
    if (seen.starts_with("TREC SGML")) return expected.starts_with("TREC SGML");
    if (seen.starts_with("TREC topics")) return expected.starts_with("TREC topics");
    if (seen == "TSV with 2 TAB-separated fields") {
        return expected.find("TSV") != std::string_view::npos;
    }
    return false;
}

const char* expected_format(CorpusFormat format) {
    switch (format) {
        case CorpusFormat::Tsv:
            return "MS MARCO TSV (id<TAB>text)";
        case CorpusFormat::Jsonl:
            return "BEIR JSONL ({\"_id\": ..., \"text\": ...})";
        case CorpusFormat::Trec:
            return "TREC SGML (<DOC><DOCNO>...</DOCNO>...</DOC>)";
        case CorpusFormat::Html:
            return "HTML";
    }
    return "?";
}

/// Per-file counts for the --skip-bad sanity rule.
struct BadShare {
    std::uint64_t good = 0;
    std::uint64_t bad = 0;
    std::string first_error;
    std::uint64_t first_error_line = 0;
    std::string first_name;

    void reset() { *this = BadShare{}; }
    void record(const std::string& name, std::uint64_t line, const std::string& message) {
        if (bad++ == 0) {
            first_error = message;
            first_error_line = line;
            first_name = name;
        }
    }
    /// Throws when the file is of the wrong format (checked at its end, or early once many
    /// records failed and none parsed).
    void check(const fs::path& file, const std::string& expected, double max_share,
               bool at_end) const {
        if (bad == 0) return;
        const std::uint64_t total = good + bad;
        const bool none = good == 0 && (at_end || bad >= 100);
        const bool too_many =
            at_end && static_cast<double>(bad) > max_share * static_cast<double>(total);
        if (!none && !too_many) return;
        std::string seen = file.empty() ? std::string() : looks_like(first_line(file));
        std::string msg = "expected " + expected;
        if (!seen.empty() && !same_kind(expected, seen)) msg += " but the file looks like " + seen;
        if (none) {
            msg += ": no record parsed (" + std::to_string(bad) +
                   " bad; first error: " + first_error + ")";
        } else {
            char pct[32];
            std::snprintf(pct, sizeof pct, "%g", max_share * 100.0);
            msg += ": " + std::to_string(bad) + " of " + std::to_string(total) +
                   " records are bad, more than the " + pct +
                   " % that --skip-bad tolerates (max_bad_share); first error: " + first_error;
        }
        throw ParseError(first_name, first_error_line, msg);
    }
};

/// TSV / JSONL documents, one per line, from a LineReader (a whole file, or the lines starting
/// in a byte range: LineReader::restrict_to_bytes(); its line numbers are then the range's and
/// file_line() maps them to the file's).
class LineSource final : public detail::DocSource {
public:
    LineSource(CorpusReaderOptions options, const fs::path& path)
        : m_reader(path), m_options(options) {}
    LineReader& reader() noexcept { return m_reader; }
    bool next(Document& doc) override {
        std::string_view line;
        while (m_reader.next(line)) {
            if (is_blank(line)) continue;
            try {
                check_utf8(line);
                if (m_options.format == CorpusFormat::Tsv) {
                    doc.title.clear();
                    parse_tsv(line, m_options.tabs_in_text, false, doc.id, doc.text);
                } else {
                    parse_jsonl_doc(line, doc);
                }
            } catch (const LineError& e) {
                throw detail::BadRecord{e.message, m_reader.line_number()};
            }
            m_line = m_reader.line_number();
            return true;
        }
        return false;
    }
    const std::string& name() const noexcept override { return m_reader.name(); }
    std::uint64_t line() const noexcept override { return m_line; }
    std::uint64_t bytes_read() const noexcept override { return m_reader.bytes_read(); }
    std::uint64_t file_line(std::uint64_t line) const override { return m_reader.file_line(line); }

private:
    LineReader m_reader;
    CorpusReaderOptions m_options;
    std::uint64_t m_line = 0;
};

std::string lower_name(const fs::path& p) { return lower(p.filename().string()); }

/// The files of a TREC or HTML folder in reading order (byte order of their paths).
std::vector<fs::path> folder_files(const fs::path& dir, CorpusFormat format) {
    std::vector<fs::path> out;
    std::error_code ec;
    fs::recursive_directory_iterator it(dir, fs::directory_options::follow_directory_symlink, ec);
    if (ec) throw IoError(dir.string() + ": cannot list folder: " + ec.message());
    for (auto end = fs::recursive_directory_iterator(); it != end; it.increment(ec)) {
        if (ec) throw IoError(dir.string() + ": cannot list folder: " + ec.message());
        const std::string name = lower_name(it->path());
        if (name.empty() || name.front() == '.') {
            if (it->is_directory()) it.disable_recursion_pending();
            continue;
        }
        if (it->is_directory()) {
            if (format == CorpusFormat::Trec && (name == "cr" || name == "dtd" || name == "dtds")) {
                it.disable_recursion_pending();
            }
            continue;
        }
        if (!it->is_regular_file()) continue;
        if (format == CorpusFormat::Trec && name.starts_with("readme")) continue;
        out.push_back(it->path());
    }
    std::sort(out.begin(), out.end(),
              [](const fs::path& a, const fs::path& b) { return a.string() < b.string(); });
    return out;
}

/// corpus.jsonl(.gz) of a BEIR folder, or nothing.
std::optional<fs::path> beir_file(const fs::path& dir, const char* stem) {
    for (const char* ext : {".jsonl", ".jsonl.gz"}) {
        fs::path p = dir / (std::string(stem) + ext);
        std::error_code ec;
        if (fs::is_regular_file(p, ec)) return p;
    }
    return std::nullopt;
}

}  // namespace

namespace {
/// Names of the corpus formats, the canonical one of each format first.
constexpr std::pair<std::string_view, CorpusFormat> kCorpusFormatNames[] = {
    {"tsv", CorpusFormat::Tsv},
    {"jsonl", CorpusFormat::Jsonl},
    {"json", CorpusFormat::Jsonl},
    {"trec", CorpusFormat::Trec},
    {"html", CorpusFormat::Html}};
}  // namespace

CorpusFormat parse_corpus_format(const std::string& name) {
    const std::string n = lower(name);
    for (const auto& [spelling, format] : kCorpusFormatNames) {
        if (n == spelling) return format;
    }
    throw InvalidArgument("unknown corpus format '" + name +
                          "' (expected tsv, jsonl, trec or html)");
}

const char* corpus_format_name(CorpusFormat format) noexcept {
    for (const auto& [spelling, f] : kCorpusFormatNames) {
        if (f == format) return spelling.data();  // the literals are NUL-terminated
    }
    return "tsv";
}

CorpusFormat resolve_corpus_format(const std::string& name, const fs::path& path) {
    return name.empty() ? detect_corpus_format(path) : parse_corpus_format(name);
}

std::string indexed_text(const Document& doc) {
    return doc.title.empty() ? doc.text : doc.title + " " + doc.text;
}

std::string indexed_text(Document&& doc) {
    return doc.title.empty() ? std::move(doc.text) : doc.title + " " + doc.text;
}

CorpusFormat detect_corpus_format(const fs::path& path) {
    if (path == "-") return CorpusFormat::Tsv;
    std::error_code ec;
    if (fs::is_directory(path, ec)) {
        if (beir_file(path, "corpus")) return CorpusFormat::Jsonl;
        try {
            for (const auto& f : folder_files(path, CorpusFormat::Trec)) {
                if (detail::is_tar_name(f)) return CorpusFormat::Html;
                return starts_doc(first_line(f)) ? CorpusFormat::Trec : CorpusFormat::Html;
            }
        } catch (const Error&) {
        }
        return CorpusFormat::Html;
    }
    if (detail::is_tar_name(path)) return CorpusFormat::Html;
    std::string name = lower(path.filename().string());
    if (has_suffix(name, ".gz")) name.resize(name.size() - 3);
    if (has_suffix(name, ".jsonl") || has_suffix(name, ".json")) return CorpusFormat::Jsonl;
    if (has_suffix(name, ".html") || has_suffix(name, ".htm")) return CorpusFormat::Html;
    return starts_doc(first_line(path)) ? CorpusFormat::Trec : CorpusFormat::Tsv;
}

// ---------------------------------------------------------------------------------------------
// CorpusReader
// ---------------------------------------------------------------------------------------------

struct CorpusReader::Impl {
    Impl(const fs::path& path, CorpusReaderOptions opts) : options(opts), name(path.string()) {
        std::error_code ec;
        const bool dir = path != "-" && fs::is_directory(path, ec);
        if (dir) {
            if (options.format == CorpusFormat::Trec || options.format == CorpusFormat::Html) {
                files = folder_files(path, options.format);
                if (files.empty()) throw IoError(name + ": folder holds no file to read");
            } else if (auto beir = beir_file(path, "corpus")) {
                files.push_back(*beir);
            } else {
                throw IoError(name + ": is a folder without corpus.jsonl; expected a " +
                              std::string(corpus_format_name(options.format)) +
                              " file or a BEIR folder (or give --format trec|html)");
            }
        } else {
            files.push_back(path);
        }
        ranged = options.first_byte != 0 ||
                 options.end_byte != std::numeric_limits<std::uint64_t>::max();
        if (ranged && (dir || (options.format != CorpusFormat::Tsv &&
                               options.format != CorpusFormat::Jsonl))) {
            throw InvalidArgument(name + ": only a TSV or JSONL file can be read by byte ranges");
        }
        if (options.first_byte > options.end_byte) {
            throw InvalidArgument(name + ": byte range starts at " +
                                  std::to_string(options.first_byte) + ", after its end " +
                                  std::to_string(options.end_byte));
        }
        for (const auto& f : files) {
            if (f == "-") continue;
            auto sz = fs::file_size(f, ec);
            if (!ec) size += sz;
        }
        if (ranged) {
            const auto last = std::min(size, options.end_byte);
            size = last > options.first_byte ? last - options.first_byte : 0;
        }
        open_next();  // the first file opens now, so that a missing file fails at once
    }

    /// Opens files[next_file]; false when none is left.
    bool open_next() {
        source.reset();
        if (next_file >= files.size()) return false;
        const fs::path& f = files[next_file++];
        current = f;
        share.reset();
        switch (options.format) {
            case CorpusFormat::Tsv:
            case CorpusFormat::Jsonl:
                if (ranged) {
                    std::error_code dir_ec;
                    if (f == "-" || fs::is_directory(f, dir_ec)) {
                        throw InvalidArgument(f.string() + ": a byte range needs a corpus file "
                                                           "(not standard input or a folder)");
                    }
                }
                {
                    auto lines = std::make_unique<LineSource>(options, f);
                    if (ranged) lines->reader().restrict_to_bytes(options.first_byte,
                                                                  options.end_byte);
                    source = std::move(lines);
                }
                break;
            case CorpusFormat::Trec:
                source = detail::open_trec_file(f);
                break;
            case CorpusFormat::Html:
                source = detail::is_tar_name(f) ? detail::open_html_archive(f)
                                                : detail::open_html_file(f);
                break;
        }
        return true;
    }

    /// Closes the current file (after the bad-share check).
    void close_current() {
        if (options.skip_bad) {
            share.check(current, expected_format(options.format), options.max_bad_share, true);
        }
        std::error_code ec;
        if (current != "-") {
            auto sz = fs::file_size(current, ec);
            if (!ec) done_bytes += ranged ? size : sz;
        }
        source.reset();
    }

    CorpusReaderOptions options;
    std::vector<fs::path> files;
    std::size_t next_file = 0;
    fs::path current;
    std::unique_ptr<detail::DocSource> source;
    std::string name;
    std::uint64_t skipped = 0;
    std::uint64_t line = 0;
    std::uint64_t size = 0;
    std::uint64_t done_bytes = 0;
    bool ranged = false;
    BadShare share;
};

CorpusReader::CorpusReader(const fs::path& path, CorpusReaderOptions options)
    : m_impl(std::make_unique<Impl>(path, options)) {}
CorpusReader::~CorpusReader() = default;
CorpusReader::CorpusReader(CorpusReader&&) noexcept = default;
CorpusReader& CorpusReader::operator=(CorpusReader&&) noexcept = default;

bool CorpusReader::next(Document& doc) {
    Impl& m = *m_impl;
    for (;;) {
        if (!m.source) {
            if (!m.open_next()) return false;
        }
        try {
            if (m.source->next(doc)) {
                // Every format (an HTML or TREC document too, not only a text line): a NUL
                // would cut the passage at the analyzer's C strings.
                if (doc.text.find('\0') != std::string::npos ||
                    doc.title.find('\0') != std::string::npos) {
                    throw detail::BadRecord{"document '" + doc.id + "' holds a NUL byte",
                                            m.source->line()};
                }
                ++m.share.good;
                m.line = m.source->line();
                m.name = m.source->name();
                return true;
            }
        } catch (const detail::BadRecord& e) {
            if (!m.options.skip_bad) {
                throw ParseError(m.source->name(), m.source->file_line(e.line), e.message);
            }
            ++m.skipped;
            m.share.record(m.source->name(), m.source->file_line(e.line), e.message);
            m.share.check(m.current, expected_format(m.options.format), m.options.max_bad_share,
                          false);
            continue;
        }
        m.close_current();
    }
}

std::uint64_t CorpusReader::skipped() const noexcept { return m_impl->skipped; }
std::uint64_t CorpusReader::line_number() const noexcept { return m_impl->line; }
std::uint64_t CorpusReader::file_line(std::uint64_t line) const {
    return m_impl->source ? m_impl->source->file_line(line) : line;
}
std::uint64_t CorpusReader::bytes_read() const noexcept {
    return m_impl->done_bytes + (m_impl->source ? m_impl->source->bytes_read() : 0);
}
std::uint64_t CorpusReader::size_bytes() const noexcept { return m_impl->size; }
const std::string& CorpusReader::name() const noexcept { return m_impl->name; }

// ---------------------------------------------------------------------------------------------
// Topics
// ---------------------------------------------------------------------------------------------

unsigned parse_topic_fields(const std::string& spec) {
    unsigned fields = 0;
    std::vector<std::string_view> parts;
    split(spec, '+', parts);
    for (auto raw : parts) {
        std::string p = lower(std::string(trim(raw)));
        if (p == "title") {
            fields |= kTopicTitle;
        } else if (p == "description" || p == "desc") {
            fields |= kTopicDescription;
        } else if (p == "narrative" || p == "narr") {
            fields |= kTopicNarrative;
        } else {
            throw InvalidArgument("unknown topic field '" + std::string(raw) + "' in '" + spec +
                                  "' (expected title, description, narrative or several "
                                  "joined by '+', e.g. title+description)");
        }
    }
    return fields;
}

namespace {

enum class TopicFormat { Tsv, Jsonl, Trec };

const char* expected_topics(TopicFormat f) {
    switch (f) {
        case TopicFormat::Tsv:
            return "topics TSV (qid<TAB>query)";
        case TopicFormat::Jsonl:
            return "BEIR queries JSONL ({\"_id\": ..., \"text\": ...})";
        case TopicFormat::Trec:
            return "TREC topics (<top><num>...</top>)";
    }
    return "?";
}

/// The query text of a TREC topic: the requested fields joined by a space.
std::string topic_text(const detail::TrecTopic& t, unsigned fields) {
    std::string out;
    auto add = [&](bool has, const std::string& value, const char* tag) {
        if (!has) {
            throw detail::BadRecord{
                "topic '" + t.id + "' has no " + tag + " (asked for by the topic field option)",
                t.line};
        }
        if (value.empty()) return;
        if (!out.empty()) out += ' ';
        out += value;
    };
    if (fields & kTopicTitle) add(t.has_title, t.title, "<title>");
    if (fields & kTopicDescription) add(t.has_description, t.description, "<desc>");
    if (fields & kTopicNarrative) add(t.has_narrative, t.narrative, "<narr>");
    return out;
}

}  // namespace

std::vector<Query> read_topics(const fs::path& path, const TopicReadOptions& options,
                               std::uint64_t* skipped) {
    if (options.fields == 0) throw InvalidArgument("read_topics: no topic field selected");
    fs::path file = path;
    std::error_code ec;
    if (path != "-" && fs::is_directory(path, ec)) {
        auto q = beir_file(path, "queries");
        if (!q) {
            throw IoError(path.string() +
                          ": is a folder without queries.jsonl; expected a topics file");
        }
        file = *q;
    }
    TopicFormat format = TopicFormat::Tsv;
    if (detect_corpus_format(file) == CorpusFormat::Jsonl) {
        format = TopicFormat::Jsonl;
    } else if (file != "-" && starts_top(first_line(file))) {
        format = TopicFormat::Trec;
    }
    std::vector<Query> topics;
    std::unordered_map<std::string, std::uint64_t> seen;  // qid -> line
    BadShare share;
    auto bad = [&](const std::string& name, std::uint64_t line, const std::string& message) {
        if (!options.skip_bad) throw ParseError(name, line, message);
        share.record(name, line, message);
        share.check(file, expected_topics(format), options.max_bad_share, false);
    };
    std::uint64_t duplicates = 0;  // skipped, but no sign of a wrong format
    auto add = [&](Query&& q, const std::string& name, std::uint64_t line) {
        auto [it, inserted] = seen.emplace(q.id, line);
        if (!inserted) {
            std::string msg = "duplicate query id '" + q.id + "' (first on line " +
                              std::to_string(it->second) + ")";
            if (!options.skip_bad) throw ParseError(name, line, msg);
            ++duplicates;
            return;
        }
        ++share.good;
        topics.push_back(std::move(q));
    };
    if (format == TopicFormat::Trec) {
        detail::TrecTopicReader reader(file);
        detail::TrecTopic t;
        for (;;) {
            try {
                if (!reader.next(t)) break;
                Query q;
                q.id = t.id;
                q.text = topic_text(t, options.fields);
                add(std::move(q), reader.name(), t.line);
            } catch (const detail::BadRecord& e) {
                bad(reader.name(), e.line, e.message);
            }
        }
    } else {
        LineReader reader(file);
        std::string_view line;
        Query q;
        while (reader.next(line)) {
            if (is_blank(line)) continue;
            try {
                check_utf8(line);
                if (format == TopicFormat::Jsonl) {
                    parse_jsonl_query(line, q);
                } else {
                    parse_tsv(line, false, true, q.id, q.text);
                }
            } catch (const LineError& e) {
                bad(reader.name(), reader.line_number(), e.message);
                continue;
            }
            add(std::move(q), reader.name(), reader.line_number());
            q = Query{};
        }
    }
    if (options.skip_bad) {
        share.check(file, expected_topics(format), options.max_bad_share, true);
    }
    if (skipped) *skipped = share.bad + duplicates;
    return topics;
}

std::vector<Query> read_topics(const fs::path& path, bool skip_bad, std::uint64_t* skipped) {
    TopicReadOptions o;
    o.skip_bad = skip_bad;
    return read_topics(path, o, skipped);
}

}  // namespace plumb::index
