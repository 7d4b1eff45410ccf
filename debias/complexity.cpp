#include "debias/complexity.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <limits>
#include <set>
#include <unordered_set>

#include "debias/constituency.hpp"
#include "debias/wordnet_pos.hpp"
#include "plugin/error.hpp"
#include "plugin/text_io.hpp"

namespace plumb::debias {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

bool word_byte(unsigned char c) { return std::isalnum(c) || c >= 0x80; }

double ratio(double a, double b) { return b == 0 ? 0.0 : a / b; }

bool is_conjunction(const std::string& w) {
    return w == "and" || w == "or" || w == "but" || w == "nor";
}

bool is_preposition(const std::string& w) {
    static const std::unordered_set<std::string> p = {
        "of", "in", "on", "at", "by", "for", "with", "about", "from", "into", "to", "over",
        "under", "between", "through", "during", "after", "before", "without", "within"};
    return p.count(w) > 0;
}

const ParseNode* first_word(const ParseNode& n) {
    if (n.is_word()) return &n;
    for (const auto& c : n.children) {
        if (const ParseNode* w = first_word(c)) return w;
    }
    return nullptr;
}

struct TreeCounter {
    const WordNetLexicon& lex;
    std::size_t clauses = 0, dep_clauses = 0, verb_phrases = 0, coord = 0, nominals = 0;

    bool verb_word(const ParseNode& w) const {
        if (w.tag == "v" || w.tag == "w" || w.tag == "q") return true;
        if (!w.tag.empty()) return false;
        // Null-linked words carry no subscript: auxiliaries and WordNet verbs count.
        return WordNetLexicon::is_auxiliary(w.word) || lex.tag(w.word) == Pos::Verb;
    }

    /// A verb word within `n`'s own scope (not inside a nested S or SBAR).
    bool has_verb_in_scope(const ParseNode& n) const {
        for (const auto& c : n.children) {
            if (c.is_word()) {
                if (verb_word(c)) return true;
            } else if (c.label != "S" && c.label != "SBAR" && has_verb_in_scope(c)) {
                return true;
            }
        }
        return false;
    }

    /// A clause is an S with a finite verb in its own scope; an S opening with infinitival "to"
    /// is non-finite and not counted (Lu 2010 counts finite clauses only).
    bool is_clause(const ParseNode& s) const {
        if (s.label != "S") return false;
        const ParseNode* w = first_word(s);
        if (!w || w->word == "to") return false;
        return has_verb_in_scope(s);
    }

    bool adjective(const ParseNode& w) const {
        return w.tag == "a" || (w.tag.empty() && lex.tag(w.word) == Pos::Adjective);
    }

    void walk(const ParseNode& n, const std::string& parent, bool under_sbar) {
        if (n.is_word()) return;
        if (is_clause(n)) {
            ++clauses;
            if (under_sbar) ++dep_clauses;
        }
        if (n.label == "VP" && parent == "S" && has_verb_in_scope(n)) ++verb_phrases;
        if (n.label == "NP" || n.label == "VP" || n.label == "ADJP" || n.label == "ADVP") {
            for (const auto& c : n.children) {
                if (c.is_word() && is_conjunction(c.word)) {
                    ++coord;
                    break;
                }
            }
        }
        if (n.label == "NP") {
            bool complex = false;
            bool saw_prep = false;
            for (const auto& c : n.children) {
                if (c.is_word()) {
                    if (adjective(c)) complex = true;
                    if (is_preposition(c.word)) saw_prep = true;
                } else if (c.label == "PP" || c.label == "SBAR" || c.label == "ADJP" ||
                           (saw_prep && c.label == "NP")) {
                    complex = true;
                }
            }
            if (complex) ++nominals;
        }
        bool sbar = under_sbar || n.label == "SBAR";
        for (const auto& c : n.children) walk(c, n.label, sbar);
    }
};

/// Independent clauses of a sentence tree: coordinated S children of the root, else the root.
std::vector<const ParseNode*> tunits_of(const ParseNode& root) {
    std::vector<const ParseNode*> out;
    bool conj = false;
    for (const auto& c : root.children) {
        if (c.is_word() && is_conjunction(c.word)) conj = true;
        if (c.label == "S") out.push_back(&c);
    }
    if (conj && out.size() >= 2) return out;
    return {&root};
}

std::vector<std::string> split_sentences(std::string_view text) {
    std::vector<std::string> out;
    std::string cur;
    for (std::size_t i = 0; i < text.size(); ++i) {
        char c = text[i];
        cur.push_back(c);
        bool end = (c == '.' || c == '?' || c == '!') &&
                   (i + 1 == text.size() || std::isspace(static_cast<unsigned char>(text[i + 1])));
        if (end) {
            out.push_back(cur);
            cur.clear();
        }
    }
    out.push_back(cur);
    std::vector<std::string> kept;
    for (auto& s : out) {
        if (!complexity_tokens(s).empty()) kept.push_back(std::string(trim(s)));
    }
    return kept;
}

}  // namespace

std::vector<std::string> complexity_tokens(std::string_view text) {
    std::vector<std::string> out;
    std::string cur;
    auto flush = [&] {
        if (!cur.empty()) out.push_back(cur);
        cur.clear();
    };
    for (std::size_t i = 0; i < text.size(); ++i) {
        auto c = static_cast<unsigned char>(text[i]);
        if (word_byte(c)) {
            cur.push_back(static_cast<char>(std::tolower(c)));
        } else if ((c == '\'' || c == '-') && !cur.empty() && i + 1 < text.size() &&
                   word_byte(static_cast<unsigned char>(text[i + 1]))) {
            cur.push_back(static_cast<char>(c));
        } else {
            flush();
        }
    }
    flush();
    return out;
}

void lexical_indices(const ComplexityCounts& c, const std::vector<std::string>& tokens,
                     std::array<double, kNumComplexityIndices>& x) {
    const double N = static_cast<double>(c.tokens), T = static_cast<double>(c.types);
    if (c.tokens == 0) {
        for (std::size_t i = 0; i < 16; ++i) x[i] = 0.0;
        return;
    }
    const double ttr = T / N;
    x[0] = ttr;
    x[1] = T / std::sqrt(2.0 * N);
    x[2] = T / std::sqrt(N);
    x[3] = c.tokens == 1 ? 1.0 : std::log(T) / std::log(N);
    x[4] = c.types == c.tokens ? kNaN : std::pow(std::log(N), 2) / (std::log(N) - std::log(T));
    // MSTTR-50: mean TTR of consecutive 50-token segments (the remainder is dropped).
    if (tokens.size() < 50) {
        x[5] = ttr;
    } else {
        std::size_t segs = tokens.size() / 50;
        double sum = 0;
        for (std::size_t s = 0; s < segs; ++s) {
            std::set<std::string> types(tokens.begin() + static_cast<long>(s * 50),
                                        tokens.begin() + static_cast<long>(s * 50 + 50));
            sum += static_cast<double>(types.size()) / 50.0;
        }
        x[5] = sum / static_cast<double>(segs);
    }
    x[6] = ttr >= 1.0 ? kNaN : N * ttr * ttr / (2.0 * (1.0 - ttr));
    const double Nl = static_cast<double>(c.lex_tokens), Tl = static_cast<double>(c.lex_types);
    const double Nv = static_cast<double>(c.verb_tokens), Tv = static_cast<double>(c.verb_types);
    x[7] = ratio(Tl, Nl);
    x[8] = ratio(Tv, Nv);
    x[9] = ratio(Tv * Tv, Nv);
    x[10] = Nv == 0 ? 0.0 : Tv / std::sqrt(2.0 * Nv);
    x[11] = ratio(Tv, Nl);
    x[12] = ratio(static_cast<double>(c.noun_types), Nl);
    x[13] = ratio(static_cast<double>(c.adj_types), Nl);
    x[14] = ratio(static_cast<double>(c.adv_types), Nl);
    x[15] = ratio(static_cast<double>(c.adj_types + c.adv_types), Nl);
}

void syntactic_indices(const ComplexityCounts& c, std::array<double, kNumComplexityIndices>& x) {
    const double W = static_cast<double>(c.tokens), S = static_cast<double>(c.sentences),
                 C = static_cast<double>(c.clauses), T = static_cast<double>(c.tunits),
                 DC = static_cast<double>(c.dep_clauses), CT = static_cast<double>(c.complex_tunits),
                 VP = static_cast<double>(c.verb_phrases), CP = static_cast<double>(c.coord_phrases),
                 CN = static_cast<double>(c.complex_nominals);
    x[16] = ratio(W, S);
    x[17] = ratio(W, T);
    x[18] = ratio(W, C);
    x[19] = ratio(C, S);
    x[20] = ratio(VP, T);
    x[21] = ratio(C, T);
    x[22] = ratio(DC, C);
    x[23] = ratio(DC, T);
    x[24] = ratio(T, S);
    x[25] = ratio(CT, T);
    x[26] = ratio(CP, T);
    x[27] = ratio(CP, C);
    x[28] = ratio(CN, T);
    x[29] = ratio(CN, C);
}

ComplexityAnalyzer::ComplexityAnalyzer(const std::string& wordnet_dir, ComplexityOptions options)
    : m_options(options),
      m_lexicon(std::make_unique<WordNetLexicon>(wordnet_dir)),
      m_parser(std::make_unique<ConstituencyParser>(options.parse_seconds)) {}

ComplexityAnalyzer::~ComplexityAnalyzer() = default;

QueryComplexity ComplexityAnalyzer::analyze(const Query& query) const {
    QueryComplexity q;
    q.qid = query.id;
    auto tokens = complexity_tokens(query.text);
    auto& c = q.counts;
    c.tokens = tokens.size();
    c.types = std::set<std::string>(tokens.begin(), tokens.end()).size();
    std::set<std::string> lex, verbs, nouns, adjs, advs;
    for (const auto& t : tokens) {
        Pos p = m_lexicon->tag(t);
        if (p == Pos::Noun || p == Pos::Adjective || p == Pos::Adverb ||
            (p == Pos::Verb && !WordNetLexicon::is_auxiliary(t))) {
            std::string lemma = m_lexicon->lemma(t, p);
            if (lemma.empty()) lemma = t;
            ++c.lex_tokens;
            lex.insert(std::string(pos_name(p)) + ":" + lemma);
            if (p == Pos::Verb) {
                ++c.verb_tokens;
                verbs.insert(lemma);
            } else if (p == Pos::Noun) {
                nouns.insert(lemma);
            } else if (p == Pos::Adjective) {
                adjs.insert(lemma);
            } else {
                advs.insert(lemma);
            }
        }
    }
    c.lex_types = lex.size();
    c.verb_types = verbs.size();
    c.noun_types = nouns.size();
    c.adj_types = adjs.size();
    c.adv_types = advs.size();

    std::vector<ParseNode> trees;
    for (const auto& sentence : split_sentences(query.text)) {
        ParseNode tree;
        if (!m_parser->parse(sentence, tree)) {
            c.parsed = false;
            tree = ParseNode{};
            tree.label = "S";
            for (auto& w : complexity_tokens(sentence)) {
                ParseNode leaf;
                leaf.word = w;
                tree.children.push_back(std::move(leaf));
            }
        }
        trees.push_back(std::move(tree));
    }
    count_syntax(trees, *m_lexicon, c);
    lexical_indices(c, tokens, q.indices);
    syntactic_indices(c, q.indices);
    return q;
}

void count_syntax(const std::vector<ParseNode>& sentences, const WordNetLexicon& lexicon,
                  ComplexityCounts& c) {
    for (const auto& tree : sentences) {
        ++c.sentences;
        TreeCounter counter{lexicon};
        counter.walk(tree, "ROOT", false);
        c.clauses += counter.clauses;
        c.dep_clauses += counter.dep_clauses;
        c.verb_phrases += counter.verb_phrases;
        c.coord_phrases += counter.coord;
        c.complex_nominals += counter.nominals;
        for (const ParseNode* t : tunits_of(tree)) {
            ++c.tunits;
            TreeCounter sub{lexicon};
            sub.walk(*t, "ROOT", false);
            if (sub.dep_clauses > 0) ++c.complex_tunits;
        }
    }
}

void finalize_complexity(std::vector<QueryComplexity>& rows, std::size_t buckets) {
    if (buckets == 0) throw InvalidArgument("complexity: bucket count must be at least 1");
    const std::size_t n = rows.size();
    if (n == 0) return;
    std::vector<double> score(n, 0.0);
    for (std::size_t j = 0; j < kNumComplexityIndices; ++j) {
        double mx = -std::numeric_limits<double>::infinity();
        for (auto& r : rows) {
            if (!std::isnan(r.indices[j])) mx = std::max(mx, r.indices[j]);
        }
        if (!std::isfinite(mx)) mx = 0.0;
        for (auto& r : rows) {
            if (std::isnan(r.indices[j])) r.indices[j] = mx;  // undefined Uber / D: set maximum
        }
        double lo = rows[0].indices[j], hi = lo;
        for (auto& r : rows) {
            lo = std::min(lo, r.indices[j]);
            hi = std::max(hi, r.indices[j]);
        }
        for (std::size_t i = 0; i < n; ++i) {
            score[i] += hi > lo ? (rows[i].indices[j] - lo) / (hi - lo) : 0.0;
        }
    }
    std::vector<double> sorted;
    for (std::size_t i = 0; i < n; ++i) {
        rows[i].score = score[i] / static_cast<double>(kNumComplexityIndices);
        sorted.push_back(rows[i].score);
    }
    std::sort(sorted.begin(), sorted.end());
    // Quantile edges (linear interpolation between order statistics, "type 7").
    std::vector<double> edges;
    for (std::size_t b = 1; b < buckets; ++b) {
        double h = static_cast<double>(n - 1) * static_cast<double>(b) / static_cast<double>(buckets);
        auto lo = static_cast<std::size_t>(std::floor(h));
        std::size_t hi = std::min(lo + 1, n - 1);
        edges.push_back(sorted[lo] + (h - static_cast<double>(lo)) * (sorted[hi] - sorted[lo]));
    }
    static const char* kNames3[] = {"easy", "medium", "hard"};
    for (auto& r : rows) {
        std::size_t b = 0;
        while (b < edges.size() && r.score > edges[b]) ++b;
        r.bucket = buckets == 3 ? kNames3[b] : "b" + std::to_string(b + 1);
    }
}

std::vector<QueryComplexity> ComplexityAnalyzer::analyze_all(
    const std::vector<Query>& queries) const {
    std::vector<QueryComplexity> rows;
    rows.reserve(queries.size());
    for (const auto& q : queries) rows.push_back(analyze(q));
    finalize_complexity(rows, m_options.buckets);
    return rows;
}

void write_complexity_tsv(const std::string& path, const std::vector<QueryComplexity>& rows) {
    AtomicFile out(path);
    std::string line = "qid";
    for (const char* name : kComplexityIndexNames) line += std::string("\t") + name;
    line += "\tscore\tbucket\tparsed\n";
    out.write(line);
    for (const auto& r : rows) {
        line = r.qid;
        for (double v : r.indices) line += fmt::format("\t{:.6g}", v);
        line += fmt::format("\t{:.6f}\t{}\t{}\n", r.score, r.bucket, r.counts.parsed ? 1 : 0);
        out.write(line);
    }
    out.commit();
}

}  // namespace plumb::debias
