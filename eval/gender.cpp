#include "eval/gender.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <map>

#include "eval/detail_parse.hpp"
#include "plugin/error.hpp"
#include "plugin/text_io.hpp"

namespace plumb::eval {

namespace {

bool is_ws(char c) {
    return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f';
}

char lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

std::string to_lower(std::string_view s) {
    std::string out(s);
    for (char& c : out) c = lower(c);
    return out;
}

bool has_ws(std::string_view s) {
    for (char c : s)
        if (is_ws(c)) return true;
    return false;
}

/// Calls f(token) for each lower-cased whitespace token; `buf` is reused.
template <class F>
void for_each_token(std::string_view text, std::string& buf, F&& f) {
    std::size_t i = 0;
    const std::size_t n = text.size();
    while (i < n) {
        while (i < n && is_ws(text[i])) ++i;
        if (i >= n) break;
        std::size_t j = i;
        buf.clear();
        while (j < n && !is_ws(text[j])) buf.push_back(lower(text[j++]));
        f(std::string_view(buf));
        i = j;
    }
}

double sgn(double x) { return x > 0 ? 1.0 : (x < 0 ? -1.0 : 0.0); }

}  // namespace

GenderWordList GenderWordList::load(const std::filesystem::path& path) {
    GenderWordList list;
    LineReader reader(path);
    std::string_view line;
    while (reader.next(line)) {
        const auto t = trim(line);
        if (t.empty() || t.front() == '#') continue;
        const auto comma = t.find(',');
        if (comma == std::string_view::npos || t.find(',', comma + 1) != std::string_view::npos)
            reader.fail("expected 'word,f' or 'word,m'");
        const auto word = trim(t.substr(0, comma));
        const auto label = to_lower(trim(t.substr(comma + 1)));
        if (word.empty()) reader.fail("empty word");
        if (has_ws(word)) reader.fail("word '" + std::string(word) + "' contains whitespace");
        Gender g;
        if (label == "f") {
            g = Gender::Female;
        } else if (label == "m") {
            g = Gender::Male;
        } else {
            reader.fail("gender label must be 'f' or 'm', got '" + label + "'");
        }
        const auto key = to_lower(word);
        const auto found = list.lookup(key);
        if (found && *found != g)
            reader.fail("word '" + key + "' is listed as both female and male");
        if (!found) list.add(key, g);
    }
    return list;
}

void GenderWordList::add(std::string_view word, Gender gender) {
    if (word.empty()) throw InvalidArgument("gender word list: empty word");
    if (has_ws(word))
        throw InvalidArgument("gender word list: word '" + std::string(word) +
                              "' contains whitespace");
    auto key = to_lower(word);
    auto it = m_words.find(key);
    if (it != m_words.end()) {
        if (it->second != gender)
            throw InvalidArgument("gender word list: '" + key + "' listed as both genders");
        return;
    }
    m_words.emplace(std::move(key), gender);
    ++(gender == Gender::Female ? m_female : m_male);
}

std::optional<Gender> GenderWordList::lookup(std::string_view token) const {
    auto it = m_words.find(token);
    if (it == m_words.end()) return std::nullopt;
    return it->second;
}

std::vector<std::string> gender_tokens(std::string_view text) {
    std::vector<std::string> out;
    std::string buf;
    for_each_token(text, buf, [&](std::string_view tok) { out.emplace_back(tok); });
    return out;
}

GenderCounts count_gender_words(std::string_view text, const GenderWordList& words) {
    GenderCounts c;
    // Per-word counts for the IBBR magnitude (ordered map: deterministic summation order).
    std::map<std::string, std::uint32_t, std::less<>> per_word;
    std::string buf;
    for_each_token(text, buf, [&](std::string_view tok) {
        const auto g = words.lookup(tok);
        if (!g) return;
        ++(*g == Gender::Female ? c.female : c.male);
        auto it = per_word.find(tok);
        if (it == per_word.end()) it = per_word.emplace(std::string(tok), 0).first;
        ++it->second;
    });
    for (const auto& [w, n] : per_word) {
        const double term = std::log1p(static_cast<double>(n));
        c.ibbr_magnitude += (*words.lookup(w) == Gender::Male) ? term : -term;
    }
    return c;
}

BiasVariant parse_bias_variant(std::string_view name) {
    if (name == "tc") return BiasVariant::Tc;
    if (name == "tf") return BiasVariant::Tf;
    if (name == "bool") return BiasVariant::Bool;
    throw InvalidArgument("unknown bias variant '" + std::string(name) + "' (known: tc, tf, bool)");
}

const char* bias_variant_name(BiasVariant variant) noexcept {
    switch (variant) {
        case BiasVariant::Tc:
            return "tc";
        case BiasVariant::Tf:
            return "tf";
        case BiasVariant::Bool:
            return "bool";
    }
    return "?";
}

BiasTriple passage_magnitude(const GenderCounts& counts, BiasVariant variant) noexcept {
    const double f = counts.female;
    const double m = counts.male;
    BiasTriple t;
    switch (variant) {
        case BiasVariant::Tc:
            t.female = f;
            t.male = m;
            break;
        case BiasVariant::Tf:
            t.female = std::log(f + 1.0);
            t.male = std::log(m + 1.0);
            break;
        case BiasVariant::Bool:
            t.female = sgn(f);
            t.male = sgn(m);
            break;
    }
    t.bias = t.female - t.male;
    return t;
}

int ibbr_label(const GenderCounts& counts) noexcept {
    // The magnitude is a difference of sums of logs; treat float noise around 0 as 0.
    if (std::fabs(counts.ibbr_magnitude) < 1e-12) return 0;
    return counts.ibbr_magnitude > 0 ? 1 : -1;
}

char query_gender_label(const GenderCounts& counts, BothPolicy both) noexcept {
    if (counts.female > 0 && counts.male == 0) return 'f';
    if (counts.male > 0 && counts.female == 0) return 'm';
    if (counts.female == 0 && counts.male == 0) return 'n';
    if (both == BothPolicy::Majority) {
        if (counts.female > counts.male) return 'f';
        if (counts.male > counts.female) return 'm';
    }
    return 'n';
}

bool is_combined_bias_file(const std::filesystem::path& path) {
    LineReader reader(path);
    std::string_view line;
    return reader.next(line) && trim(line) == kCombinedBiasHeader;
}

namespace {
/// The `expected` variant of a combined bias file (see kCombinedBiasHeader).
BiasTable read_combined_bias_file(LineReader& reader, std::optional<BiasVariant> expected) {
    if (!expected) reader.fail("a combined bias file holds every variant: name one (tc, tf, bool)");
    static constexpr std::string_view kColumns =
        "docid\ttc\ttc_female\ttc_male\ttf\ttf_female\ttf_male\tbool\tbool_female\tbool_male"
        "\tibbr_magnitude\tibbr_label";
    std::string_view line;
    if (!reader.next(line) || trim(line) != kColumns) {
        reader.fail("expected the column header of a combined bias file");
    }
    const std::size_t first = 1 + 3 * static_cast<std::size_t>(*expected);
    BiasTable table;
    std::vector<std::string_view> fields;
    while (reader.next(line)) {
        if (trim(line).empty()) continue;
        split(line, '\t', fields);
        if (fields.size() != 12)
            reader.fail("expected 12 tab-separated fields, got " + std::to_string(fields.size()));
        const auto docid = trim(fields[0]);
        if (docid.empty()) reader.fail("empty docid");
        BiasTriple t;
        if (!detail::parse_finite(fields[first], t.bias) ||
            !detail::parse_finite(fields[first + 1], t.female) ||
            !detail::parse_finite(fields[first + 2], t.male))
            reader.fail("bias, female and male must be finite numbers");
        if (!table.emplace(std::string(docid), t).second)
            reader.fail("duplicate docid '" + std::string(docid) + "'");
    }
    return table;
}
}  // namespace

BiasTable read_bias_file(const std::filesystem::path& path, std::optional<BiasVariant> expected) {
    BiasTable table;
    LineReader reader(path);
    std::string_view line;
    std::vector<std::string_view> fields;
    if (is_combined_bias_file(path)) {
        reader.next(line);
        return read_combined_bias_file(reader, expected);
    }
    while (reader.next(line)) {
        if (trim(line).empty()) continue;
        if (line.front() == '#') {
            const auto pos = line.find("variant=");
            if (expected && pos != std::string_view::npos) {
                auto v = line.substr(pos + 8);
                v = v.substr(0, v.find_first_of(" \t"));
                BiasVariant file_variant;
                try {
                    file_variant = parse_bias_variant(v);
                } catch (const InvalidArgument& e) {
                    reader.fail(e.what());
                }
                if (file_variant != *expected)
                    reader.fail(std::string("bias file is for variant '") +
                                bias_variant_name(file_variant) + "', expected '" +
                                bias_variant_name(*expected) + "'");
            }
            continue;
        }
        split(line, '\t', fields);
        if (fields.size() != 4)
            reader.fail("expected 4 tab-separated fields (docid, bias, female, male), got " +
                        std::to_string(fields.size()));
        const auto docid = trim(fields[0]);
        if (docid.empty()) reader.fail("empty docid");
        BiasTriple t;
        if (!detail::parse_finite(fields[1], t.bias) ||
            !detail::parse_finite(fields[2], t.female) || !detail::parse_finite(fields[3], t.male))
            reader.fail("bias, female and male must be finite numbers");
        if (!table.emplace(std::string(docid), t).second)
            reader.fail("duplicate docid '" + std::string(docid) + "'");
    }
    return table;
}

std::optional<BiasVariant> bias_file_variant(const std::filesystem::path& path) {
    LineReader reader(path);
    std::string_view line;
    while (reader.next(line)) {
        if (trim(line).empty()) continue;
        if (line.front() != '#') break;
        const auto pos = line.find("variant=");
        if (pos == std::string_view::npos) continue;
        auto v = line.substr(pos + 8);
        v = v.substr(0, v.find_first_of(" \t"));
        try {
            return parse_bias_variant(v);
        } catch (const InvalidArgument& e) {
            reader.fail(e.what());
        }
    }
    return std::nullopt;
}

void write_bias_file(const std::filesystem::path& path, BiasVariant variant,
                     const std::vector<std::pair<std::string, BiasTriple>>& rows) {
    AtomicFile out(path);
    std::fprintf(out.stream(), "# plumb-gender-bias v1 variant=%s\n", bias_variant_name(variant));
    for (const auto& [docid, t] : rows) {
        if (docid.empty() || has_ws(docid))
            throw InvalidArgument("write_bias_file: docid '" + docid +
                                  "' is empty or contains whitespace");
        std::fprintf(out.stream(), "%s\t%.17g\t%.17g\t%.17g\n", docid.c_str(), t.bias, t.female,
                     t.male);
    }
    out.commit();
}

std::unordered_map<std::string, GenderCounts> gender_counts(
    const std::vector<std::string>& docids, const DocumentSource& docs, const GenderWordList& words,
    const ProgressCallback& progress, const CancelToken* cancel, const std::string& docs_name) {
    std::unordered_map<std::string, GenderCounts> out;
    out.reserve(docids.size());
    std::uint64_t done = 0;
    for (const auto& id : docids) {
        if (cancel && cancel->requested()) break;
        if (out.count(id) == 0) {
            const auto text = docs.text(id);
            if (!text) throw InvalidArgument("passage '" + id + "' is not in " + docs_name);
            out.emplace(id, count_gender_words(*text, words));
        }
        ++done;
        if (progress && (done % 1024 == 0 || done == docids.size())) progress(done, docids.size());
    }
    return out;
}

BiasTable compute_bias_table(const std::vector<std::string>& docids, const DocumentSource& docs,
                             const GenderWordList& words, BiasVariant variant,
                             const ProgressCallback& progress, const CancelToken* cancel) {
    BiasTable table;
    table.reserve(docids.size());
    for (const auto& [id, counts] : gender_counts(docids, docs, words, progress, cancel))
        table.emplace(id, passage_magnitude(counts, variant));
    return table;
}

}  // namespace plumb::eval
