#include "debias/liwc.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "debias/detail_passages.hpp"
#include "index/corpus.hpp"
#include "index/passage_index.hpp"
#include "plugin/error.hpp"
#include "plugin/text_io.hpp"

namespace plumb::debias {
namespace {

std::string lower_ascii(std::string_view s) {
    std::string out(s);
    for (auto& c : out)
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    return out;
}

bool is_ascii_punct(char c) {
    auto u = static_cast<unsigned char>(c);
    return u < 128 && std::ispunct(u);
}

std::optional<int> parse_int(std::string_view s) {
    int v = 0;
    auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    // Category ids are non-negative: "-3" is as malformed as "x".
    if (ec != std::errc() || ptr != s.data() + s.size() || s.empty() || v < 0) return std::nullopt;
    return v;
}

/// Iterates the lines of `text`, 1-based numbers; strips a leading BOM. A line ends at LF, CRLF
/// or a lone CR (classic Mac OS line ends, used by public LIWC-format dictionaries).
template <typename F>
void for_each_line(std::string_view text, F&& f) {
    if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);
    std::uint64_t no = 0;
    while (!text.empty()) {
        const auto end = text.find_first_of("\r\n");
        f(++no, text.substr(0, end));
        if (end == std::string_view::npos) break;
        const bool crlf = text[end] == '\r' && end + 1 < text.size() && text[end + 1] == '\n';
        text.remove_prefix(end + (crlf ? 2 : 1));
    }
}

}  // namespace

LiwcDictionary LiwcDictionary::load(const std::filesystem::path& path, bool skip_bad) {
    return parse(read_file(path), path.string(), skip_bad);
}

LiwcDictionary LiwcDictionary::parse(std::string_view text, const std::string& name,
                                     bool skip_bad) {
    LiwcDictionary dic;
    enum class State { Start, Categories, Words } state = State::Start;
    std::set<int> ids;
    std::set<std::string> names;
    std::vector<std::string_view> fields, id_fields;
    auto bad = [&](std::uint64_t line_no, const std::string& msg) {
        if (!skip_bad) throw ParseError(name, line_no, msg);
        dic.m_skipped.push_back(line_no);
    };
    std::uint64_t last_line = 0;
    for_each_line(text, [&](std::uint64_t no, std::string_view raw) {
        last_line = no;
        auto line = trim(raw);
        if (line.empty()) return;
        if (!is_valid_utf8(line)) return bad(no, "invalid UTF-8");
        if (state == State::Start) {
            if (line != "%")
                throw ParseError(name, no, "expected '%' opening the categories block");
            state = State::Categories;
            return;
        }
        if (state == State::Categories) {
            if (line == "%") {
                state = State::Words;
                return;
            }
            split_ws(line, fields);
            if (fields.size() < 2) return bad(no, "expected 'id<TAB>name' in the categories block");
            auto id = parse_int(fields[0]);
            if (!id)
                return bad(no, "category id is not a non-negative integer: '" +
                                   std::string(fields[0]) + "'");
            // A name may contain spaces in some dictionaries: everything after the id.
            std::string cname(trim(line.substr(fields[1].data() - line.data())));
            if (ids.count(*id)) return bad(no, "duplicate category id " + std::to_string(*id));
            if (names.count(cname)) return bad(no, "duplicate category name '" + cname + "'");
            ids.insert(*id);
            names.insert(cname);
            dic.m_categories.push_back({*id, cname});
            return;
        }
        // Word line: word field up to the first TAB (or whitespace when there is no TAB).
        std::string_view word, rest;
        auto tab = line.find('\t');
        if (tab != std::string_view::npos) {
            word = trim(line.substr(0, tab));
            rest = line.substr(tab + 1);
        } else {
            auto sp = line.find_first_of(" \v\f");
            word = line.substr(0, sp);
            rest = sp == std::string_view::npos ? std::string_view{} : line.substr(sp + 1);
        }
        // A multi-word entry (`kind of<TAB>1 2`) is a phrase: its words, lower-cased and joined
        // by one space, are matched against consecutive tokens.
        std::vector<std::string_view> phrase_words;
        split_ws(word, phrase_words);
        const bool phrase = phrase_words.size() > 1;
        if (word.empty() || word == "*") return bad(no, "empty word");
        auto star = word.find('*');
        if (phrase && star != std::string_view::npos)
            return bad(no,
                       "'*' is not supported in a multi-word entry: '" + std::string(word) + "'");
        if (star != std::string_view::npos && star + 1 != word.size())
            return bad(no, "'*' is only allowed at the end of a word: '" + std::string(word) + "'");
        split_ws(rest, id_fields);
        if (id_fields.empty()) return bad(no, "word '" + std::string(word) + "' has no category");
        std::vector<int> cats;
        for (auto f : id_fields) {
            auto id = parse_int(f);
            if (!id)
                return bad(no, "category id is not an integer: '" + std::string(f) +
                                   "' (conditional LIWC entries are not supported)");
            if (!ids.count(*id)) return bad(no, "undeclared category id " + std::to_string(*id));
            cats.push_back(*id);
        }
        if (phrase) {
            std::string key;
            for (auto w : phrase_words) key += (key.empty() ? "" : " ") + lower_ascii(w);
            auto& slot = dic.m_phrases[key];
            slot.insert(slot.end(), cats.begin(), cats.end());
            std::sort(slot.begin(), slot.end());
            slot.erase(std::unique(slot.begin(), slot.end()), slot.end());
            dic.m_max_phrase_words = std::max(dic.m_max_phrase_words, phrase_words.size());
            return;
        }
        bool prefix = star != std::string_view::npos;
        std::string key = lower_ascii(prefix ? word.substr(0, word.size() - 1) : word);
        auto& slot = prefix ? dic.m_prefix[key] : dic.m_exact[key];
        slot.insert(slot.end(), cats.begin(), cats.end());
        std::sort(slot.begin(), slot.end());
        slot.erase(std::unique(slot.begin(), slot.end()), slot.end());
        if (prefix) dic.m_max_prefix = std::max(dic.m_max_prefix, key.size());
    });
    if (state == State::Start)
        throw ParseError(name, last_line, "no '%' categories block (empty dictionary?)");
    if (state == State::Categories)
        throw ParseError(name, last_line, "categories block is not closed by '%'");
    return dic;
}

std::optional<int> LiwcDictionary::find_category(std::string_view name_or_id) const {
    for (const auto& c : m_categories)
        if (c.name == name_or_id) return c.id;
    if (auto id = parse_int(name_or_id))
        for (const auto& c : m_categories)
            if (c.id == *id) return c.id;
    return std::nullopt;
}

const std::vector<int>& LiwcDictionary::lookup(std::string_view token) const {
    static const std::vector<int> kEmpty;
    std::string key(token);
    if (auto it = m_exact.find(key); it != m_exact.end()) return it->second;
    for (std::size_t len = std::min(key.size(), m_max_prefix); len > 0; --len) {
        key.resize(len);
        if (auto it = m_prefix.find(key); it != m_prefix.end()) return it->second;
    }
    return kEmpty;
}

const std::vector<int>* LiwcDictionary::lookup_phrase(const std::string& words) const {
    auto it = m_phrases.find(words);
    return it == m_phrases.end() ? nullptr : &it->second;
}

std::vector<std::string> liwc_tokens(std::string_view text) {
    std::vector<std::string_view> raw;
    split_ws(text, raw);
    std::vector<std::string> out;
    out.reserve(raw.size());
    for (auto t : raw) {
        while (!t.empty() && is_ascii_punct(t.front())) t.remove_prefix(1);
        while (!t.empty() && is_ascii_punct(t.back())) t.remove_suffix(1);
        if (!t.empty()) out.push_back(lower_ascii(t));
    }
    return out;
}

std::vector<double> liwc_phi(std::string_view text, const LiwcDictionary& dic,
                             const std::vector<int>& categories) {
    std::vector<double> phi(categories.size(), 0.0);
    auto tokens = liwc_tokens(text);
    if (tokens.empty()) return phi;
    auto count = [&](const std::vector<int>& cats) {
        for (std::size_t k = 0; k < categories.size(); ++k)
            if (std::binary_search(cats.begin(), cats.end(), categories[k])) phi[k] += 1.0;
    };
    std::string key;
    for (std::size_t i = 0; i < tokens.size();) {
        // The longest phrase starting here wins; its tokens are not matched again one by one.
        std::size_t matched = 0;
        for (std::size_t len = std::min(dic.max_phrase_words(), tokens.size() - i); len > 1;
             --len) {
            key = tokens[i];
            for (std::size_t k = 1; k < len; ++k) key += " " + tokens[i + k];
            if (const auto* cats = dic.lookup_phrase(key)) {
                count(*cats);
                matched = len;
                break;
            }
        }
        if (matched) {
            i += matched;
            continue;
        }
        count(dic.lookup(tokens[i]));
        ++i;
    }
    for (auto& v : phi) v /= static_cast<double>(tokens.size());
    return phi;
}

std::vector<int> resolve_categories(const LiwcDictionary& dic,
                                    const std::vector<std::string>& names) {
    std::vector<int> out;
    if (names.empty()) {
        for (const auto& c : dic.categories()) out.push_back(c.id);
        return out;
    }
    for (const auto& n : names) {
        auto id = dic.find_category(n);
        if (!id) {
            std::string known;
            for (const auto& c : dic.categories()) known += (known.empty() ? "" : ", ") + c.name;
            throw InvalidArgument("unknown LIWC category '" + n + "' (known: " + known + ")");
        }
        out.push_back(*id);
    }
    return out;
}

double cosine_similarity(const std::vector<double>& a, const std::vector<double>& b) {
    if (a.size() != b.size()) throw InvalidArgument("cosine_similarity: size mismatch");
    double dot = 0, na = 0, nb = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
        dot += a[i] * b[i];
        na += a[i] * a[i];
        nb += b[i] * b[i];
    }
    if (na == 0 || nb == 0) return 0.0;
    return dot / (std::sqrt(na) * std::sqrt(nb));
}

PhiFileStats write_phi_file(const PhiFileOptions& o, const LiwcDictionary& dic,
                            const std::vector<int>& categories, const std::filesystem::path& output,
                            const ProgressCallback& progress, const CancelToken* cancel) {
    if (o.corpus.empty() == o.index_dir.empty())
        throw InvalidArgument("give exactly one of a corpus or an index");
    PhiFileStats stats;
    AtomicFile out(output);
    std::string header = "docid";
    for (int id : categories)
        for (const auto& c : dic.categories())
            if (c.id == id) header += '\t' + c.name;
    out.write(header + '\n');
    auto emit = [&](const std::string& docid, std::string_view text) {
        if (cancel && cancel->requested())
            throw Error("phi computation cancelled; nothing written");
        std::string row = docid;
        char buf[32];
        for (double v : liwc_phi(text, dic, categories)) {
            std::snprintf(buf, sizeof buf, "\t%.17g", v);
            row += buf;
        }
        row += '\n';
        out.write(row);
        stats.written++;
    };
    if (o.index_dir.empty() || !o.only_ids) {  // a scan of the corpus or of the whole index
        std::unordered_set<std::string> seen;
        stats.skipped_bad = detail::for_each_passage(
            o.corpus, o.corpus_format, o.skip_bad, o.index_dir,
            [&](const std::string& docid, const std::string& text) {
                if (o.only_ids && (!o.only_ids->count(docid) || !seen.insert(docid).second)) return;
                emit(docid, text);
            },
            progress);
        if (o.only_ids) stats.missing = o.only_ids->size() - seen.size();
    } else {  // only_ids looked up in the index
        auto idx = index::PassageIndex::open(o.index_dir);
        std::vector<std::string> ids(o.only_ids->begin(), o.only_ids->end());
        std::sort(ids.begin(), ids.end());  // deterministic output order
        std::uint64_t done = 0;
        for (const auto& id : ids) {
            auto doc = idx->find(id);
            if (!doc)
                stats.missing++;
            else
                emit(id, idx->text_at(*doc));
            if (progress && (++done & 1023) == 0) progress(done, ids.size());
        }
    }
    out.commit();
    return stats;
}

}  // namespace plumb::debias
