// TREC topics files (<top> ... </top>), read like Anserini's TrecTopicReader (see corpus.hpp).
#include <algorithm>
#include <array>

#include "index/detail/sources.hpp"

namespace plumb::index::detail {

namespace {

bool is_ws(char c) noexcept {
    return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f';
}

std::string collapse(std::string_view s) {
    std::string out;
    bool space = false;
    for (char c : s) {
        if (is_ws(c)) {
            space = !out.empty();
        } else {
            if (space) out += ' ';
            space = false;
            out += c;
        }
    }
    return out;
}

/// "<top>" or "<top ...>" (FIRE: <top lang='bn'>) at the start of `s`: its length, else 0.
std::size_t top_open_at(std::string_view s) {
    if (!istarts_with(s, "<top")) return 0;
    if (s.size() < 5) return 0;
    if (s[4] == '>') return 5;
    if (!is_ws(s[4])) return 0;
    std::size_t gt = s.find('>');
    return gt == std::string_view::npos ? s.size() : gt + 1;
}

struct FieldTag {
    std::string_view tag;    // "<num>"
    std::string_view label;  // "Number:"
};
constexpr std::array<FieldTag, 4> kFields = {{{"<num>", "Number:"},
                                              {"<title>", "Topic:"},
                                              {"<desc>", "Description:"},
                                              {"<narr>", "Narrative:"}}};

}  // namespace

bool TrecTopicReader::next(TrecTopic& topic) {
    std::string raw;
    std::vector<std::pair<std::size_t, std::uint64_t>> offsets;  // raw offset -> line
    bool in_topic = false;
    std::uint64_t top_line = 0;
    std::string_view line;
    std::string holder;
    for (;;) {
        std::uint64_t line_no;
        if (m_has_pending) {
            holder = std::move(m_pending);
            m_has_pending = false;
            line = holder;
            line_no = m_lines.line_number();
        } else {
            if (!m_lines.next(line)) {
                if (in_topic)
                    throw BadRecord{"unterminated <top> (end of file before </top>)", top_line};
                return false;
            }
            line_no = m_lines.line_number();
            std::size_t bad = find_invalid_utf8(line);
            if (bad != std::string_view::npos) {
                if (in_topic) {
                    // Skip the rest of this topic.
                    std::string_view l;
                    while (m_lines.next(l)) {
                        if (ifind(l, "</top>") != std::string_view::npos) break;
                    }
                }
                throw BadRecord{"invalid UTF-8 at byte " + std::to_string(bad + 1), line_no};
            }
        }
        std::string_view rest = line;
        if (!in_topic) {
            while (!rest.empty() && is_ws(rest.front())) rest.remove_prefix(1);
            if (rest.empty()) continue;
            std::size_t open = top_open_at(rest);
            if (open == 0) {
                throw BadRecord{"expected <top>, found '" + std::string(rest.substr(0, 40)) +
                                    "' (text outside <top>...</top>)",
                                line_no};
            }
            in_topic = true;
            top_line = line_no;
            rest.remove_prefix(open);
            offsets.emplace_back(0, line_no);
        } else {
            offsets.emplace_back(raw.size(), line_no);
        }
        std::size_t end = ifind(rest, "</top>");
        std::size_t search_to = end == std::string_view::npos ? rest.size() : end;
        for (std::size_t p = ifind(rest, "<top"); p != std::string_view::npos && p < search_to;
             p = ifind(rest, "<top", p + 1)) {
            if (top_open_at(rest.substr(p)) != 0) {
                m_pending = std::string(rest.substr(p));
                m_has_pending = true;
                throw BadRecord{"unterminated <top>: a new <top> begins on line " +
                                    std::to_string(line_no) + " before </top>",
                                top_line};
            }
        }
        if (end == std::string_view::npos) {
            raw.append(rest);
            raw += '\n';
            continue;
        }
        raw.append(rest.substr(0, end));
        std::string_view after = rest.substr(end + 6);
        if (!trim(after).empty()) {
            m_pending = std::string(after);
            m_has_pending = true;
        }
        break;
    }
    auto line_of = [&](std::size_t off) {
        auto it = std::upper_bound(offsets.begin(), offsets.end(), off,
                                   [](std::size_t o, const auto& e) { return o < e.first; });
        return it == offsets.begin() ? top_line : std::prev(it)->second;
    };
    // Field starts, in order of appearance.
    struct Found {
        std::size_t pos;
        std::size_t field;
    };
    std::vector<Found> found;
    for (std::size_t f = 0; f < kFields.size(); ++f) {
        std::size_t first = ifind(raw, kFields[f].tag);
        if (first == std::string_view::npos) continue;
        std::size_t again = ifind(raw, kFields[f].tag, first + 1);
        if (again != std::string_view::npos) {
            throw BadRecord{"second " + std::string(kFields[f].tag) +
                                " in one topic (first on line " + std::to_string(line_of(first)) +
                                ")",
                            line_of(again)};
        }
        found.push_back({first, f});
    }
    std::sort(found.begin(), found.end(),
              [](const Found& a, const Found& b) { return a.pos < b.pos; });
    topic = TrecTopic{};
    topic.line = top_line;
    bool has_num = false;
    for (std::size_t i = 0; i < found.size(); ++i) {
        const FieldTag& ft = kFields[found[i].field];
        std::size_t from = found[i].pos + ft.tag.size();
        std::size_t to = i + 1 < found.size() ? found[i + 1].pos : raw.size();
        std::string_view value = std::string_view(raw).substr(from, to - from);
        // A closing tag (</num>, </title>: TREC 2018 Core style) ends the field.
        std::string close = "</" + std::string(ft.tag.substr(1));
        if (std::size_t c = ifind(value, close); c != std::string_view::npos) {
            value = value.substr(0, c);
        }
        value = trim(value);
        if (istarts_with(value, ft.label)) value = trim(value.substr(ft.label.size()));
        std::string text = collapse(value);
        switch (found[i].field) {
            case 0:
                has_num = true;
                topic.id = std::move(text);
                if (topic.id.empty()) throw BadRecord{"empty <num>", line_of(found[i].pos)};
                if (std::any_of(topic.id.begin(), topic.id.end(), is_ws)) {
                    throw BadRecord{"query id '" + topic.id + "' contains whitespace",
                                    line_of(found[i].pos)};
                }
                break;
            case 1:
                topic.title = std::move(text);
                topic.has_title = true;
                break;
            case 2:
                topic.description = std::move(text);
                topic.has_description = true;
                break;
            default:
                topic.narrative = std::move(text);
                topic.has_narrative = true;
                break;
        }
    }
    if (!has_num) throw BadRecord{"<top> without <num>", top_line};
    return true;
}

}  // namespace plumb::index::detail
