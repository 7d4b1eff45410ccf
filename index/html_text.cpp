#include "index/html_text.hpp"

#include <algorithm>
#include <array>
#include <cstdint>

namespace plumb::index {

namespace {

struct Entity {
    std::string_view name;
    std::uint32_t code;
};

/// The 252 named character entities of HTML 4 (Python's html.entities.name2codepoint), sorted
/// byte-wise by name for binary search.
constexpr Entity kEntities[] = {
    {"AElig", 0xC6},     {"Aacute", 0xC1},    {"Acirc", 0xC2},    {"Agrave", 0xC0},
    {"Alpha", 0x391},    {"Aring", 0xC5},     {"Atilde", 0xC3},   {"Auml", 0xC4},
    {"Beta", 0x392},     {"Ccedil", 0xC7},    {"Chi", 0x3A7},     {"Dagger", 0x2021},
    {"Delta", 0x394},    {"ETH", 0xD0},       {"Eacute", 0xC9},   {"Ecirc", 0xCA},
    {"Egrave", 0xC8},    {"Epsilon", 0x395},  {"Eta", 0x397},     {"Euml", 0xCB},
    {"Gamma", 0x393},    {"Iacute", 0xCD},    {"Icirc", 0xCE},    {"Igrave", 0xCC},
    {"Iota", 0x399},     {"Iuml", 0xCF},      {"Kappa", 0x39A},   {"Lambda", 0x39B},
    {"Mu", 0x39C},       {"Ntilde", 0xD1},    {"Nu", 0x39D},      {"OElig", 0x152},
    {"Oacute", 0xD3},    {"Ocirc", 0xD4},     {"Ograve", 0xD2},   {"Omega", 0x3A9},
    {"Omicron", 0x39F},  {"Oslash", 0xD8},    {"Otilde", 0xD5},   {"Ouml", 0xD6},
    {"Phi", 0x3A6},      {"Pi", 0x3A0},       {"Prime", 0x2033},  {"Psi", 0x3A8},
    {"Rho", 0x3A1},      {"Scaron", 0x160},   {"Sigma", 0x3A3},   {"THORN", 0xDE},
    {"Tau", 0x3A4},      {"Theta", 0x398},    {"Uacute", 0xDA},   {"Ucirc", 0xDB},
    {"Ugrave", 0xD9},    {"Upsilon", 0x3A5},  {"Uuml", 0xDC},     {"Xi", 0x39E},
    {"Yacute", 0xDD},    {"Yuml", 0x178},     {"Zeta", 0x396},    {"aacute", 0xE1},
    {"acirc", 0xE2},     {"acute", 0xB4},     {"aelig", 0xE6},    {"agrave", 0xE0},
    {"alefsym", 0x2135}, {"alpha", 0x3B1},    {"amp", 0x26},      {"and", 0x2227},
    {"ang", 0x2220},     {"aring", 0xE5},     {"asymp", 0x2248},  {"atilde", 0xE3},
    {"auml", 0xE4},      {"bdquo", 0x201E},   {"beta", 0x3B2},    {"brvbar", 0xA6},
    {"bull", 0x2022},    {"cap", 0x2229},     {"ccedil", 0xE7},   {"cedil", 0xB8},
    {"cent", 0xA2},      {"chi", 0x3C7},      {"circ", 0x2C6},    {"clubs", 0x2663},
    {"cong", 0x2245},    {"copy", 0xA9},      {"crarr", 0x21B5},  {"cup", 0x222A},
    {"curren", 0xA4},    {"dArr", 0x21D3},    {"dagger", 0x2020}, {"darr", 0x2193},
    {"deg", 0xB0},       {"delta", 0x3B4},    {"diams", 0x2666},  {"divide", 0xF7},
    {"eacute", 0xE9},    {"ecirc", 0xEA},     {"egrave", 0xE8},   {"empty", 0x2205},
    {"emsp", 0x2003},    {"ensp", 0x2002},    {"epsilon", 0x3B5}, {"equiv", 0x2261},
    {"eta", 0x3B7},      {"eth", 0xF0},       {"euml", 0xEB},     {"euro", 0x20AC},
    {"exist", 0x2203},   {"fnof", 0x192},     {"forall", 0x2200}, {"frac12", 0xBD},
    {"frac14", 0xBC},    {"frac34", 0xBE},    {"frasl", 0x2044},  {"gamma", 0x3B3},
    {"ge", 0x2265},      {"gt", 0x3E},        {"hArr", 0x21D4},   {"harr", 0x2194},
    {"hearts", 0x2665},  {"hellip", 0x2026},  {"iacute", 0xED},   {"icirc", 0xEE},
    {"iexcl", 0xA1},     {"igrave", 0xEC},    {"image", 0x2111},  {"infin", 0x221E},
    {"int", 0x222B},     {"iota", 0x3B9},     {"iquest", 0xBF},   {"isin", 0x2208},
    {"iuml", 0xEF},      {"kappa", 0x3BA},    {"lArr", 0x21D0},   {"lambda", 0x3BB},
    {"lang", 0x2329},    {"laquo", 0xAB},     {"larr", 0x2190},   {"lceil", 0x2308},
    {"ldquo", 0x201C},   {"le", 0x2264},      {"lfloor", 0x230A}, {"lowast", 0x2217},
    {"loz", 0x25CA},     {"lrm", 0x200E},     {"lsaquo", 0x2039}, {"lsquo", 0x2018},
    {"lt", 0x3C},        {"macr", 0xAF},      {"mdash", 0x2014},  {"micro", 0xB5},
    {"middot", 0xB7},    {"minus", 0x2212},   {"mu", 0x3BC},      {"nabla", 0x2207},
    {"nbsp", 0xA0},      {"ndash", 0x2013},   {"ne", 0x2260},     {"ni", 0x220B},
    {"not", 0xAC},       {"notin", 0x2209},   {"nsub", 0x2284},   {"ntilde", 0xF1},
    {"nu", 0x3BD},       {"oacute", 0xF3},    {"ocirc", 0xF4},    {"oelig", 0x153},
    {"ograve", 0xF2},    {"oline", 0x203E},   {"omega", 0x3C9},   {"omicron", 0x3BF},
    {"oplus", 0x2295},   {"or", 0x2228},      {"ordf", 0xAA},     {"ordm", 0xBA},
    {"oslash", 0xF8},    {"otilde", 0xF5},    {"otimes", 0x2297}, {"ouml", 0xF6},
    {"para", 0xB6},      {"part", 0x2202},    {"permil", 0x2030}, {"perp", 0x22A5},
    {"phi", 0x3C6},      {"pi", 0x3C0},       {"piv", 0x3D6},     {"plusmn", 0xB1},
    {"pound", 0xA3},     {"prime", 0x2032},   {"prod", 0x220F},   {"prop", 0x221D},
    {"psi", 0x3C8},      {"quot", 0x22},      {"rArr", 0x21D2},   {"radic", 0x221A},
    {"rang", 0x232A},    {"raquo", 0xBB},     {"rarr", 0x2192},   {"rceil", 0x2309},
    {"rdquo", 0x201D},   {"real", 0x211C},    {"reg", 0xAE},      {"rfloor", 0x230B},
    {"rho", 0x3C1},      {"rlm", 0x200F},     {"rsaquo", 0x203A}, {"rsquo", 0x2019},
    {"sbquo", 0x201A},   {"scaron", 0x161},   {"sdot", 0x22C5},   {"sect", 0xA7},
    {"shy", 0xAD},       {"sigma", 0x3C3},    {"sigmaf", 0x3C2},  {"sim", 0x223C},
    {"spades", 0x2660},  {"sub", 0x2282},     {"sube", 0x2286},   {"sum", 0x2211},
    {"sup", 0x2283},     {"sup1", 0xB9},      {"sup2", 0xB2},     {"sup3", 0xB3},
    {"supe", 0x2287},    {"szlig", 0xDF},     {"tau", 0x3C4},     {"there4", 0x2234},
    {"theta", 0x3B8},    {"thetasym", 0x3D1}, {"thinsp", 0x2009}, {"thorn", 0xFE},
    {"tilde", 0x2DC},    {"times", 0xD7},     {"trade", 0x2122},  {"uArr", 0x21D1},
    {"uacute", 0xFA},    {"uarr", 0x2191},    {"ucirc", 0xFB},    {"ugrave", 0xF9},
    {"uml", 0xA8},       {"upsih", 0x3D2},    {"upsilon", 0x3C5}, {"uuml", 0xFC},
    {"weierp", 0x2118},  {"xi", 0x3BE},       {"yacute", 0xFD},   {"yen", 0xA5},
    {"yuml", 0xFF},      {"zeta", 0x3B6},     {"zwj", 0x200D},    {"zwnj", 0x200C},
};

bool is_ascii_alpha(char c) noexcept { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool is_ascii_alnum(char c) noexcept { return is_ascii_alpha(c) || (c >= '0' && c <= '9'); }
bool is_space(char c) noexcept {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}
char lower(char c) noexcept { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c; }

bool iequals(std::string_view a, std::string_view b) noexcept {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i) {
        if (lower(a[i]) != lower(b[i])) return false;
    }
    return true;
}

/// Case-insensitive search for `needle` (ASCII) in `hay` from `from`.
std::size_t ifind(std::string_view hay, std::string_view needle, std::size_t from) noexcept {
    if (needle.size() > hay.size()) return std::string_view::npos;
    for (std::size_t i = from; i + needle.size() <= hay.size(); ++i) {
        if (iequals(hay.substr(i, needle.size()), needle)) return i;
    }
    return std::string_view::npos;
}

constexpr std::array<std::string_view, 26> kInlineTags = {
    "a",    "abbr",   "acronym", "b",     "big",  "cite", "code", "dfn",  "em",
    "font", "i",      "kbd",     "label", "mark", "q",    "s",    "samp", "small",
    "span", "strike", "strong",  "sub",   "sup",  "tt",   "u",    "var"};

bool is_inline_tag(std::string_view name) noexcept {
    for (auto t : kInlineTags) {
        if (iequals(name, t)) return true;
    }
    return false;
}

void append_utf8(std::string& out, std::uint32_t cp) {
    if (cp == 0 || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) cp = 0xFFFD;
    if (cp < 0x80) {
        out += static_cast<char>(cp);
    } else if (cp < 0x800) {
        out += static_cast<char>(0xC0 | (cp >> 6));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out += static_cast<char>(0xE0 | (cp >> 12));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
        out += static_cast<char>(0xF0 | (cp >> 18));
        out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    }
}

/// Collects text, collapsing whitespace runs into one space (none at the start).
class TextSink {
public:
    explicit TextSink(std::size_t reserve) { m_out.reserve(reserve); }
    void space() noexcept { m_pending_space = !m_out.empty(); }
    void text(std::string_view s) {
        for (char c : s) {
            if (is_space(c)) {
                space();
            } else {
                flush_space();
                m_out += c;
            }
        }
    }
    void code_point(std::uint32_t cp) {
        if (cp == 0xA0 || (cp < 0x80 && is_space(static_cast<char>(cp)))) {
            space();
            return;
        }
        flush_space();
        append_utf8(m_out, cp);
    }
    std::string take() { return std::move(m_out); }

private:
    void flush_space() {
        if (m_pending_space) m_out += ' ';
        m_pending_space = false;
    }
    std::string m_out;
    bool m_pending_space = false;
};

/// Decodes the entity at html[i] == '&'; returns the position after it, or i when it is not a
/// known, terminated entity (the '&' is then text).
std::size_t decode_entity(std::string_view html, std::size_t i, TextSink& sink) {
    std::size_t j = i + 1;
    if (j < html.size() && html[j] == '#') {
        ++j;
        bool hex = j < html.size() && (html[j] == 'x' || html[j] == 'X');
        if (hex) ++j;
        std::uint64_t cp = 0;
        std::size_t digits = 0;
        while (j < html.size() && digits < 8) {
            char c = html[j];
            int d = -1;
            if (c >= '0' && c <= '9')
                d = c - '0';
            else if (hex && c >= 'a' && c <= 'f')
                d = c - 'a' + 10;
            else if (hex && c >= 'A' && c <= 'F')
                d = c - 'A' + 10;
            if (d < 0) break;
            cp = cp * (hex ? 16 : 10) + static_cast<std::uint64_t>(d);
            ++j;
            ++digits;
        }
        if (digits == 0 || j >= html.size() || html[j] != ';') return i;
        sink.code_point(cp > 0x10FFFF ? 0xFFFD : static_cast<std::uint32_t>(cp));
        return j + 1;
    }
    std::size_t k = j;
    while (k < html.size() && k - j < 10 && is_ascii_alnum(html[k])) ++k;
    if (k == j || k >= html.size() || html[k] != ';') return i;
    std::string_view name = html.substr(j, k - j);
    auto it = std::lower_bound(std::begin(kEntities), std::end(kEntities), name,
                               [](const Entity& e, std::string_view n) { return e.name < n; });
    if (it == std::end(kEntities) || it->name != name) return i;
    sink.code_point(it->code);
    return k + 1;
}

}  // namespace

std::string html_to_text(std::string_view html) {
    TextSink sink(html.size());
    const std::size_t n = html.size();
    std::size_t i = 0;
    std::size_t text_start = 0;
    auto flush = [&](std::size_t end) {
        if (end > text_start) sink.text(html.substr(text_start, end - text_start));
    };
    while (i < n) {
        const char c = html[i];
        if (c == '&') {
            flush(i);
            std::size_t after = decode_entity(html, i, sink);
            if (after == i) {
                sink.text("&");
                after = i + 1;
            }
            i = text_start = after;
            continue;
        }
        if (c != '<' || i + 1 >= n) {
            ++i;
            continue;
        }
        const char d = html[i + 1];
        if (d == '!') {
            flush(i);
            std::size_t end;
            if (html.substr(i, 4) == "<!--") {
                end = html.find("-->", i + 4);
                end = end == std::string_view::npos ? n : end + 3;
            } else if (html.substr(i, 9) == "<![CDATA[") {
                end = html.find("]]>", i + 9);
                std::size_t stop = end == std::string_view::npos ? n : end;
                sink.text(html.substr(i + 9, stop - (i + 9)));
                end = end == std::string_view::npos ? n : end + 3;
            } else {
                end = html.find('>', i + 2);
                end = end == std::string_view::npos ? n : end + 1;
            }
            i = text_start = end;
            continue;
        }
        if (d == '?') {
            flush(i);
            std::size_t end = html.find('>', i + 2);
            i = text_start = end == std::string_view::npos ? n : end + 1;
            continue;
        }
        const bool closing = d == '/';
        std::size_t name_start = i + (closing ? 2 : 1);
        if (name_start >= n || !is_ascii_alpha(html[name_start])) {
            ++i;  // "<" as text ("a < b", "</ ")
            continue;
        }
        flush(i);
        std::size_t name_end = name_start;
        while (name_end < n && (is_ascii_alnum(html[name_end]) || html[name_end] == '-' ||
                                html[name_end] == ':' || html[name_end] == '_')) {
            ++name_end;
        }
        std::string_view name = html.substr(name_start, name_end - name_start);
        // End of the tag: the next '>' outside quoted attribute values.
        std::size_t end = name_end;
        char quote = 0;
        while (end < n) {
            char e = html[end];
            if (quote) {
                if (e == quote) quote = 0;
            } else if (e == '"' || e == '\'') {
                if (end > 0 && html[end - 1] == '=')
                    quote = e;
                else if (end > 0 && is_space(html[end - 1])) {
                    std::size_t b = end;
                    while (b > name_end && is_space(html[b - 1])) --b;
                    if (b > name_end && html[b - 1] == '=') quote = e;
                }
            } else if (e == '>') {
                break;
            }
            ++end;
        }
        end = end < n ? end + 1 : n;
        if (!is_inline_tag(name)) sink.space();
        if (!closing && (iequals(name, "script") || iequals(name, "style"))) {
            std::string close = "</" + std::string(name);
            std::size_t stop = ifind(html, close, end);
            if (stop == std::string_view::npos) {
                end = n;
            } else {
                std::size_t gt = html.find('>', stop);
                end = gt == std::string_view::npos ? n : gt + 1;
            }
            sink.space();
        }
        i = text_start = end;
    }
    flush(n);
    return sink.take();
}

}  // namespace plumb::index
