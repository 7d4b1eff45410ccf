#include "plugin/json.hpp"

#include <nlohmann/json.hpp>
#include <string>
#include <unordered_set>
#include <vector>

#include "plugin/error.hpp"
#include "plugin/text_io.hpp"

namespace plumb {

namespace {

bool is_json_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

/// The keys of one open object; a hash set once the object grows past a few keys.
struct ObjectKeys {
    std::vector<std::string_view> few;
    std::unordered_set<std::string_view> many;

    /// False when `key` was seen before in this object.
    bool insert(std::string_view key) {
        if (many.empty()) {
            for (auto k : few) {
                if (k == key) return false;
            }
            few.push_back(key);
            if (few.size() > 16) {
                many.insert(few.begin(), few.end());
                few.clear();
            }
            return true;
        }
        return many.insert(key).second;
    }
};

/// One structural pass before nlohmann builds anything: nesting depth and duplicate keys, with
/// the line of the offence. Malformed text is left to nlohmann's parser, which reports it.
void prescan(std::string_view t, const std::string& source, std::uint64_t fixed_line,
             const JsonLimits& limits) {
    struct Level {
        bool object;
        ObjectKeys keys;
    };
    std::vector<Level> stack;
    std::vector<std::unique_ptr<std::string>> decoded;  // keys written with escapes
    std::uint64_t line = 1;
    auto where = [&](std::uint64_t l) { return fixed_line > 0 ? fixed_line : l; };
    const std::size_t n = t.size();
    std::size_t i = 0;
    while (i < n) {
        const char c = t[i];
        if (c == '"') {
            const std::uint64_t key_line = line;
            const std::size_t start = ++i;
            bool escaped = false;
            while (i < n && t[i] != '"') {
                if (t[i] == '\\') {
                    escaped = true;
                    ++i;
                }
                if (i < n && t[i] == '\n') ++line;
                ++i;
            }
            if (i >= n) return;  // unterminated string: the parser reports it
            std::string_view s = t.substr(start, i - start);
            ++i;
            if (!limits.reject_duplicate_keys || stack.empty() || !stack.back().object) continue;
            std::size_t j = i;
            while (j < n && is_json_ws(t[j])) ++j;
            if (j >= n || t[j] != ':') continue;
            if (escaped) {
                try {
                    auto k = nlohmann::json::parse(t.substr(start - 1, s.size() + 2));
                    decoded.push_back(std::make_unique<std::string>(k.get<std::string>()));
                    s = *decoded.back();
                } catch (const nlohmann::json::exception&) {
                    return;  // a bad escape: the parser reports it
                }
            }
            if (!stack.back().keys.insert(s)) {
                std::string shown(s.substr(0, 80));
                throw ParseError(source, where(key_line),
                                 "invalid JSON: duplicate key \"" + shown + "\" in one object");
            }
            continue;
        }
        if (c == '\n') {
            ++line;
        } else if (c == '{' || c == '[') {
            if (stack.size() >= limits.max_depth) {
                throw ParseError(source, where(line),
                                 "invalid JSON: nested deeper than " +
                                     std::to_string(limits.max_depth) + " levels");
            }
            stack.push_back(Level{c == '{', {}});
        } else if (c == '}' || c == ']') {
            if (stack.empty()) return;  // unbalanced: the parser reports it
            stack.pop_back();
        }
        ++i;
    }
}

/// nlohmann's what() without its "[json.exception.x.n] " tag and "parse error at line L, " part.
std::string clean_message(const nlohmann::json::exception& e) {
    std::string m = e.what();
    if (auto p = m.find("] "); m.rfind("[json.exception", 0) == 0 && p != std::string::npos) {
        m.erase(0, p + 2);
    }
    if (m.rfind("parse error at line ", 0) == 0) {
        if (auto p = m.find(", column "); p != std::string::npos) m.erase(0, p + 2);
    }
    return m;
}

std::uint64_t line_of(std::string_view text, std::size_t byte) {
    std::uint64_t line = 1;
    for (std::size_t i = 0; i < byte && i < text.size(); ++i) {
        if (text[i] == '\n') ++line;
    }
    return line;
}

}  // namespace

nlohmann::json parse_json(std::string_view text, const std::string& source, std::uint64_t line,
                          const JsonLimits& limits) {
    prescan(text, source, line, limits);
    try {
        return nlohmann::json::parse(text);
    } catch (const nlohmann::json::parse_error& e) {
        std::uint64_t l = line > 0 ? line : line_of(text, e.byte ? e.byte - 1 : 0);
        throw ParseError(source, l, "invalid JSON: " + clean_message(e));
    } catch (const nlohmann::json::exception& e) {
        // e.g. out_of_range 406: a number that does not fit a double ("number overflow parsing
        // '1e400'"): find the literal for the line.
        std::string m = clean_message(e);
        std::uint64_t l = line;
        if (l == 0) {
            auto a = m.find('\''), b = m.rfind('\'');
            if (a != std::string::npos && b > a + 1) {
                auto at = text.find(std::string_view(m).substr(a + 1, b - a - 1));
                if (at != std::string_view::npos) l = line_of(text, at);
            }
        }
        throw ParseError(source, l, "invalid JSON: " + m);
    }
}

nlohmann::json read_json_file(const std::filesystem::path& path, const JsonLimits& limits) {
    return parse_json(read_file(path), path.string(), 0, limits);
}

}  // namespace plumb
