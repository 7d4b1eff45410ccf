// TREC SGML document files, read the way Anserini's TrecCollection reads them (see corpus.hpp).
#include <algorithm>
#include <array>

#include "index/detail/sources.hpp"
#include "index/html_text.hpp"
#include "plugin/error.hpp"

namespace plumb::index::detail {

namespace {

char lower(char c) noexcept { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c; }

bool is_ws(char c) noexcept {
    return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f';
}

/// The elements whose content Anserini's TrecCollection keeps (TrecCollection.Document's
/// startTags); everything else inside <DOC> (DOCID, BYLINE, DATELINE, ...) is dropped.
constexpr std::array<std::string_view, 10> kContentTags = {
    "TEXT", "HEADLINE", "TITLE", "HL", "HEAD", "TTL", "DD", "DATE", "LP", "LEADPARA"};

/// Position of `<name>` or `<name ...>` (any case) at or after `from`; npos when absent.
std::size_t find_open_tag(std::string_view s, std::string_view name, std::size_t from) {
    for (;;) {
        std::size_t p = s.find('<', from);
        if (p == std::string_view::npos) return p;
        std::string_view rest = s.substr(p + 1);
        if (istarts_with(rest, name) && rest.size() > name.size() &&
            (rest[name.size()] == '>' || is_ws(rest[name.size()]))) {
            return p;
        }
        from = p + 1;
    }
}

/// Position of `</name>` (any case) at or after `from`.
std::size_t find_close_tag(std::string_view s, std::string_view name, std::size_t from) {
    std::string close = "</" + std::string(name) + ">";
    return ifind(s, close, from);
}

/// A `<DOC ...>` opening at the start of `s` (after whitespace): its length, or 0.
std::size_t doc_open_at(std::string_view s) {
    if (!istarts_with(s, "<DOC")) return 0;
    if (s.size() < 5) return 0;
    if (s[4] == '>') return 5;
    if (!is_ws(s[4])) return 0;  // <DOCNO>, <DOCID>, ...
    std::size_t gt = s.find('>');
    return gt == std::string_view::npos ? s.size() : gt + 1;
}

/// `id="..."` (or id='...') inside a `<DOC id="x">` tag (the NTCIR / LDC variant Anserini
/// accepts); empty when absent.
std::string doc_id_attribute(std::string_view tag) {
    std::size_t p = ifind(tag, "id=");
    while (p != std::string_view::npos && p > 0 && !is_ws(tag[p - 1])) p = ifind(tag, "id=", p + 1);
    if (p == std::string_view::npos || p + 3 >= tag.size()) return {};
    char q = tag[p + 3];
    if (q != '"' && q != '\'') return {};
    std::size_t end = tag.find(q, p + 4);
    if (end == std::string_view::npos) return {};
    return std::string(tag.substr(p + 4, end - (p + 4)));
}

class TrecSource final : public DocSource {
public:
    explicit TrecSource(const std::filesystem::path& path) : m_lines(path) {
        // Unix compress (.Z, magic 1f 9d): TREC disks ship it; zlib cannot read it.
        unsigned char magic[2] = {0, 0};
        if (std::FILE* f = std::fopen(path.string().c_str(), "rb")) {
            bool z = std::fread(magic, 1, 2, f) == 2 && magic[0] == 0x1f && magic[1] == 0x9d;
            std::fclose(f);
            if (z) {
                throw IoError(path.string() +
                              ": Unix compress (.Z) data is not supported; decompress it first "
                              "(gzip -d or uncompress)");
            }
        }
    }

    bool next(Document& doc) override {
        for (;;) {
            if (!load_line()) {
                if (m_in_doc) {
                    m_in_doc = false;
                    throw BadRecord{"unterminated <DOC> (end of file before </DOC>)", m_doc_line};
                }
                return false;
            }
            if (!m_in_doc) {
                std::size_t skip = 0;
                while (skip < m_cur.size() && is_ws(m_cur[skip])) ++skip;
                std::string_view rest = std::string_view(m_cur).substr(skip);
                if (rest.empty()) {
                    m_cur_used = true;
                    continue;
                }
                std::size_t open = doc_open_at(rest);
                if (open == 0) {
                    m_cur_used = true;
                    if (rest.starts_with("<!") || rest.starts_with("<?")) continue;  // DOCTYPE
                    std::string shown(rest.substr(0, 40));
                    throw BadRecord{"expected <DOC>, found '" + shown +
                                        (rest.size() > 40 ? "...'" : "'") +
                                        " (text outside <DOC>...</DOC>)",
                                    m_line};
                }
                m_in_doc = true;
                m_doc_line = m_line;
                m_raw.clear();
                m_offsets.clear();
                m_attr_id = doc_id_attribute(rest.substr(0, open));
                m_offsets.emplace_back(0, m_line);
                m_cur.erase(0, skip + open);
                continue;
            }
            // Inside a document: look for its end (and for a new <DOC> that shows this one
            // was never closed).
            std::string_view rest = m_cur;
            std::size_t end = ifind(rest, "</DOC>");
            std::size_t nested = std::string_view::npos;
            for (std::size_t p = rest.find('<'); p != std::string_view::npos && p < end;
                 p = rest.find('<', p + 1)) {
                if (doc_open_at(rest.substr(p)) != 0) {
                    nested = p;
                    break;
                }
            }
            if (nested != std::string_view::npos) {
                // Keep the new <DOC> for the next call; this document is bad.
                m_cur.erase(0, nested);
                m_in_doc = false;
                throw BadRecord{"unterminated <DOC>: a new <DOC> begins on line " +
                                    std::to_string(m_line) + " before </DOC>",
                                m_doc_line};
            }
            if (end == std::string_view::npos) {
                m_raw.append(rest);
                m_raw += '\n';
                m_offsets.emplace_back(m_raw.size(), m_line + 1);
                m_cur_used = true;
                continue;
            }
            m_raw.append(rest.substr(0, end));
            m_cur.erase(0, end + 6);
            m_in_doc = false;
            parse_document(doc);
            return true;
        }
    }

    const std::string& name() const noexcept override { return m_lines.name(); }
    std::uint64_t line() const noexcept override { return m_doc_line; }
    std::uint64_t bytes_read() const noexcept override { return m_lines.bytes_read(); }

private:
    /// Makes m_cur hold unconsumed text of the current line, reading (and UTF-8 checking) a
    /// new line when needed. False at end of file.
    bool load_line() {
        if (m_have_cur && !m_cur_used) return true;
        std::string_view line;
        if (!m_lines.next(line)) return false;
        m_line = m_lines.line_number();
        m_cur.assign(line);
        m_have_cur = true;
        m_cur_used = false;
        std::size_t bad = find_invalid_utf8(line);
        if (bad != std::string_view::npos) {
            // The document is bad: skip to its end (or to the next <DOC>).
            const std::uint64_t bad_line = m_line;
            m_cur_used = true;
            if (m_in_doc) skip_to_doc_end();
            throw BadRecord{"invalid UTF-8 at byte " + std::to_string(bad + 1), bad_line};
        }
        return true;
    }

    /// After an error inside a document: drops lines up to and including its </DOC>.
    void skip_to_doc_end() {
        m_in_doc = false;
        std::string_view line;
        while (m_lines.next(line)) {
            std::size_t end = ifind(line, "</DOC>");
            if (end != std::string_view::npos) {
                m_cur.assign(line.substr(end + 6));
                m_cur_used = find_invalid_utf8(m_cur) != std::string_view::npos;
                m_line = m_lines.line_number();
                return;
            }
            std::string_view t = line;
            while (!t.empty() && is_ws(t.front())) t.remove_prefix(1);
            if (doc_open_at(t) != 0) {
                m_cur.assign(line);
                m_cur_used = find_invalid_utf8(m_cur) != std::string_view::npos;
                m_line = m_lines.line_number();
                return;
            }
        }
        m_cur.clear();
        m_cur_used = true;
    }

    /// Line of byte `offset` of m_raw.
    std::uint64_t line_of(std::size_t offset) const {
        auto it =
            std::upper_bound(m_offsets.begin(), m_offsets.end(), offset,
                             [](std::size_t o, const std::pair<std::size_t, std::uint64_t>& e) {
                                 return o < e.first;
                             });
        return it == m_offsets.begin() ? m_doc_line : std::prev(it)->second;
    }

    void parse_document(Document& doc) {
        std::string_view raw = m_raw;
        std::size_t docno = find_open_tag(raw, "DOCNO", 0);
        std::string id;
        std::size_t body_from = 0;
        if (docno == std::string_view::npos) {
            if (m_attr_id.empty()) throw BadRecord{"<DOC> without <DOCNO>", m_doc_line};
            id = m_attr_id;
        } else {
            std::size_t gt = raw.find('>', docno);
            std::size_t close = find_close_tag(raw, "DOCNO", gt);
            if (close == std::string_view::npos) {
                throw BadRecord{"<DOCNO> without </DOCNO>", line_of(docno)};
            }
            std::size_t again = find_open_tag(raw, "DOCNO", close);
            if (again != std::string_view::npos) {
                throw BadRecord{"second <DOCNO> in one <DOC> (first on line " +
                                    std::to_string(line_of(docno)) + ")",
                                line_of(again)};
            }
            id = trim(raw.substr(gt + 1, close - gt - 1));
            body_from = close + 8;
            if (id.empty()) throw BadRecord{"empty <DOCNO>", line_of(docno)};
            if (std::any_of(id.begin(), id.end(), is_ws)) {
                throw BadRecord{"document id '" + id + "' contains whitespace", line_of(docno)};
            }
        }
        // Content: each kept element from its start tag through its end tag, in order; an
        // element nested in a kept one belongs to it (Anserini's line scanner does the same).
        m_kept.clear();
        std::size_t pos = body_from;
        // Next start of each kept element at or after pos (searched again only once passed).
        std::array<std::size_t, kContentTags.size()> next{};
        for (std::size_t k = 0; k < kContentTags.size(); ++k) {
            next[k] = find_open_tag(raw, kContentTags[k], pos);
        }
        for (;;) {
            std::size_t best = std::string_view::npos;
            std::string_view best_tag;
            for (std::size_t k = 0; k < kContentTags.size(); ++k) {
                if (next[k] != std::string_view::npos && next[k] < pos) {
                    next[k] = find_open_tag(raw, kContentTags[k], pos);
                }
                if (next[k] < best) {
                    best = next[k];
                    best_tag = kContentTags[k];
                }
            }
            if (best == std::string_view::npos) break;
            std::size_t close = find_close_tag(raw, best_tag, best);
            if (close == std::string_view::npos) {
                throw BadRecord{"<" + std::string(best_tag) + "> without </" +
                                    std::string(best_tag) + "> before </DOC>",
                                line_of(best)};
            }
            std::size_t end = close + best_tag.size() + 3;
            m_kept.append(raw.substr(best, end - best));
            m_kept += '\n';
            pos = end;
        }
        doc.id = std::move(id);
        doc.title.clear();
        doc.text = html_to_text(m_kept);
    }

    PhysicalLines m_lines;
    std::string m_cur;  // unconsumed rest of the current line
    bool m_have_cur = false;
    bool m_cur_used = true;
    std::uint64_t m_line = 0;
    bool m_in_doc = false;
    std::uint64_t m_doc_line = 0;
    std::string m_raw;  // inside <DOC> ... </DOC>, lines joined with '\n'
    std::vector<std::pair<std::size_t, std::uint64_t>> m_offsets;  // raw offset -> line
    std::string m_attr_id;
    std::string m_kept;
};

}  // namespace

bool istarts_with(std::string_view s, std::string_view prefix) noexcept {
    if (s.size() < prefix.size()) return false;
    for (std::size_t i = 0; i < prefix.size(); ++i) {
        if (lower(s[i]) != lower(prefix[i])) return false;
    }
    return true;
}

std::size_t ifind(std::string_view hay, std::string_view needle, std::size_t from) noexcept {
    if (needle.empty()) return from <= hay.size() ? from : std::string_view::npos;
    const char first = lower(needle[0]);
    for (std::size_t i = from; i + needle.size() <= hay.size(); ++i) {
        if (lower(hay[i]) == first && istarts_with(hay.substr(i), needle)) return i;
    }
    return std::string_view::npos;
}

std::unique_ptr<DocSource> open_trec_file(const std::filesystem::path& path) {
    return std::make_unique<TrecSource>(path);
}

}  // namespace plumb::index::detail
