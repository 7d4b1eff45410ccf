#include "debias/wordnet_pos.hpp"

#include <array>
#include <charconv>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "plugin/error.hpp"
#include "plugin/text_io.hpp"

namespace plumb::debias {

const char* pos_name(Pos p) noexcept {
    switch (p) {
        case Pos::Unknown: return "unknown";
        case Pos::Function: return "function";
        case Pos::Noun: return "noun";
        case Pos::Verb: return "verb";
        case Pos::Adjective: return "adj";
        case Pos::Adverb: return "adv";
    }
    return "?";
}

namespace {

constexpr std::array<Pos, 4> kOpenClasses = {Pos::Noun, Pos::Verb, Pos::Adjective, Pos::Adverb};
constexpr std::array<const char*, 4> kFileSuffix = {"noun", "verb", "adj", "adv"};

struct Counts {
    int sense_cnt = 0;
    int tagsense_cnt = 0;
};

// Closed-class English words: determiners, pronouns, prepositions, conjunctions, auxiliaries,
// modals, wh-words, negation and infinitival "to".
const std::unordered_set<std::string_view>& function_words() {
    static const std::unordered_set<std::string_view> words = {
        "a", "an", "the", "this", "that", "these", "those", "some", "any", "no", "every", "each",
        "either", "neither", "all", "both", "few", "many", "much", "several", "such", "another",
        "other", "my", "your", "his", "her", "its", "our", "their", "i", "me", "you", "he", "him",
        "she", "it", "we", "us", "they", "them", "mine", "yours", "hers", "ours", "theirs",
        "myself", "yourself", "himself", "herself", "itself", "ourselves", "themselves",
        "what", "which", "who", "whom", "whose", "when", "where", "why", "how", "whether",
        "of", "in", "on", "at", "by", "for", "with", "about", "against", "between", "into",
        "through", "during", "before", "after", "above", "below", "to", "from", "up", "down",
        "out", "off", "over", "under", "again", "further", "then", "once", "than", "as", "per",
        "via", "without", "within", "upon", "onto", "toward", "towards", "among", "across",
        "along", "around", "behind", "beside", "besides", "beyond", "despite", "except",
        "inside", "outside", "since", "until", "till", "unless", "although", "though", "because",
        "while", "whereas", "if", "so", "and", "or", "but", "nor", "yet", "not", "n't",
        "be", "am", "is", "are", "was", "were", "been", "being", "have", "has", "had", "having",
        "do", "does", "did", "doing", "can", "could", "may", "might", "must", "shall", "should",
        "will", "would", "ought", "there", "here"};
    return words;
}

const std::unordered_set<std::string_view>& auxiliaries() {
    static const std::unordered_set<std::string_view> words = {
        "be", "am", "is", "are", "was", "were", "been", "being", "have", "has", "had", "having",
        "do", "does", "did", "doing", "can", "could", "may", "might", "must", "shall", "should",
        "will", "would", "ought"};
    return words;
}

// WordNet's morphy detachment rules (wn morph.c): suffix -> replacement, per part of speech.
struct Rule {
    std::string_view suffix, ending;
};
const std::vector<Rule>& rules(Pos p) {
    static const std::vector<Rule> noun = {{"s", ""},     {"ses", "s"}, {"xes", "x"},
                                           {"zes", "z"},  {"ches", "ch"}, {"shes", "sh"},
                                           {"men", "man"}, {"ies", "y"}};
    static const std::vector<Rule> verb = {{"s", ""},   {"ies", "y"}, {"es", "e"}, {"es", ""},
                                           {"ed", "e"}, {"ed", ""},   {"ing", "e"}, {"ing", ""}};
    static const std::vector<Rule> adj = {{"er", ""}, {"est", ""}, {"er", "e"}, {"est", "e"}};
    static const std::vector<Rule> none;
    switch (p) {
        case Pos::Noun: return noun;
        case Pos::Verb: return verb;
        case Pos::Adjective: return adj;
        default: return none;
    }
}

int parse_int(const LineReader& r, std::string_view s, const char* what) {
    int v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || p != s.data() + s.size()) {
        r.fail(std::string("expected an integer ") + what + ", got '" + std::string(s) + "'");
    }
    return v;
}

}  // namespace

struct WordNetLexicon::Impl {
    std::array<std::unordered_map<std::string, Counts>, 4> index;
    std::array<std::unordered_map<std::string, std::string>, 4> exceptions;

    static std::size_t slot(Pos p) { return static_cast<std::size_t>(p) - 2; }

    void load_index(const std::filesystem::path& file, std::size_t s) {
        LineReader r(file);
        std::string_view line;
        std::vector<std::string_view> f;
        while (r.next(line)) {
            if (line.empty() || line[0] == ' ') continue;  // license header lines start with ' '
            split_ws(line, f);
            // lemma pos synset_cnt p_cnt [ptr_symbol...] sense_cnt tagsense_cnt offsets...
            if (f.size() < 6) r.fail("malformed WordNet index line");
            int synset_cnt = parse_int(r, f[2], "synset_cnt");
            int p_cnt = parse_int(r, f[3], "p_cnt");
            std::size_t at = 4 + static_cast<std::size_t>(p_cnt);
            if (p_cnt < 0 || at + 2 > f.size()) r.fail("malformed WordNet index line");
            Counts c;
            c.sense_cnt = parse_int(r, f[at], "sense_cnt");
            c.tagsense_cnt = parse_int(r, f[at + 1], "tagsense_cnt");
            (void)synset_cnt;
            index[s].emplace(std::string(f[0]), c);
        }
    }

    void load_exceptions(const std::filesystem::path& file, std::size_t s) {
        LineReader r(file);
        std::string_view line;
        std::vector<std::string_view> f;
        while (r.next(line)) {
            split_ws(line, f);
            if (f.empty()) continue;
            if (f.size() < 2) r.fail("malformed WordNet exception line");
            exceptions[s].emplace(std::string(f[0]), std::string(f[1]));
        }
    }

    const Counts* lookup(std::string_view w, std::size_t s) const {
        auto it = index[s].find(std::string(w));
        return it == index[s].end() ? nullptr : &it->second;
    }

    /// morphy: the word itself, an exception-list base, or a detachment-rule base.
    std::string base(std::string_view word, Pos p) const {
        std::size_t s = slot(p);
        auto ex = exceptions[s].find(std::string(word));
        if (ex != exceptions[s].end() && lookup(ex->second, s)) return ex->second;
        if (lookup(word, s)) return std::string(word);
        for (const auto& rule : rules(p)) {
            if (word.size() > rule.suffix.size() && word.ends_with(rule.suffix)) {
                std::string cand(word.substr(0, word.size() - rule.suffix.size()));
                cand += rule.ending;
                if (lookup(cand, s)) return cand;
            }
        }
        return {};
    }
};

WordNetLexicon::WordNetLexicon(const std::filesystem::path& dir) : m_impl(std::make_unique<Impl>()) {
    for (std::size_t s = 0; s < 4; ++s) {
        m_impl->load_index(dir / (std::string("index.") + kFileSuffix[s]), s);
        auto exc = dir / (std::string(kFileSuffix[s]) + ".exc");
        if (std::filesystem::exists(exc)) m_impl->load_exceptions(exc, s);
    }
}

WordNetLexicon::~WordNetLexicon() = default;
WordNetLexicon::WordNetLexicon(WordNetLexicon&&) noexcept = default;
WordNetLexicon& WordNetLexicon::operator=(WordNetLexicon&&) noexcept = default;

bool WordNetLexicon::is_auxiliary(std::string_view word) noexcept {
    return auxiliaries().count(word) > 0;
}

std::string WordNetLexicon::lemma(std::string_view word, Pos pos) const {
    if (pos == Pos::Unknown || pos == Pos::Function) return {};
    return m_impl->base(word, pos);
}

Pos WordNetLexicon::tag(std::string_view word) const {
    if (word.empty()) return Pos::Unknown;
    if (function_words().count(word)) return Pos::Function;
    Pos best = Pos::Unknown;
    Counts best_c{-1, -1};
    for (Pos p : kOpenClasses) {
        std::string b = m_impl->base(word, p);
        if (b.empty()) continue;
        const Counts* c = m_impl->lookup(b, Impl::slot(p));
        if (c->tagsense_cnt > best_c.tagsense_cnt ||
            (c->tagsense_cnt == best_c.tagsense_cnt && c->sense_cnt > best_c.sense_cnt)) {
            best = p;
            best_c = *c;
        }
    }
    return best;
}

}  // namespace plumb::debias
