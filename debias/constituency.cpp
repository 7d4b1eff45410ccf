#include "debias/constituency.hpp"

#include <link-grammar/link-includes.h>

#include <cctype>
#include <mutex>

#include "plugin/error.hpp"
#include "plugin/log.hpp"

namespace plumb::debias {

namespace {

std::string lower(std::string_view s) {
    std::string out(s);
    for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

/// Splits a Link Grammar word such as "capital.s", "{is}", "[of]", "france[!<X>].n" into its
/// surface form and subscript.
void clean_word(std::string_view raw, std::string& word, std::string& tag) {
    std::string w;
    int depth = 0;
    for (char c : raw) {
        if (c == '[' || c == '{') {
            // A leading bracket marks a null-linked word: keep what is inside. A bracket after
            // text opens an annotation such as "[!<NOUN-TO-WORDS>]": drop it.
            if (w.empty() && depth == 0) {
                ++depth;
                continue;
            }
            depth += 2;
            continue;
        }
        if (c == ']' || c == '}') {
            depth = depth >= 2 ? depth - 2 : 0;
            continue;
        }
        if (depth >= 2) continue;
        w.push_back(c);
    }
    tag.clear();
    // Subscript: the part after the last '.' when it is not the whole word ("U.S." keeps dots).
    auto dot = w.rfind('.');
    if (dot != std::string::npos && dot > 0 && dot + 1 < w.size()) {
        std::string_view sub(w.data() + dot + 1, w.size() - dot - 1);
        bool alpha = true;
        for (char c : sub) alpha = alpha && (std::isalpha(static_cast<unsigned char>(c)) || c == '-');
        if (alpha && sub.size() <= 6) {
            tag = std::string(sub.substr(0, sub.find('-')));
            w.resize(dot);
        }
    }
    word = lower(w);
}

}  // namespace

ParseNode parse_constituent_tree(std::string_view text) {
    std::vector<ParseNode> stack;
    ParseNode root;
    root.label = "ROOT";
    stack.push_back(std::move(root));
    std::size_t i = 0, n = text.size();
    while (i < n) {
        char c = text[i];
        if (std::isspace(static_cast<unsigned char>(c))) {
            ++i;
        } else if (c == '(') {
            ++i;
            std::size_t j = i;
            while (j < n && !std::isspace(static_cast<unsigned char>(text[j])) && text[j] != '(' &&
                   text[j] != ')') {
                ++j;
            }
            ParseNode node;
            node.label = std::string(text.substr(i, j - i));
            if (node.label.empty()) throw InvalidArgument("constituent tree: phrase without label");
            stack.push_back(std::move(node));
            i = j;
        } else if (c == ')') {
            if (stack.size() < 2) throw InvalidArgument("constituent tree: unbalanced ')'");
            ParseNode node = std::move(stack.back());
            stack.pop_back();
            stack.back().children.push_back(std::move(node));
            ++i;
        } else {
            std::size_t j = i;
            int brackets = 0;
            while (j < n) {
                char d = text[j];
                if (d == '[' || d == '{') ++brackets;
                if (d == ']' || d == '}') --brackets;
                if (brackets <= 0 && (std::isspace(static_cast<unsigned char>(d)) || d == '(' ||
                                      d == ')')) {
                    break;
                }
                ++j;
            }
            ParseNode w;
            clean_word(text.substr(i, j - i), w.word, w.tag);
            if (!w.word.empty()) stack.back().children.push_back(std::move(w));
            i = j;
        }
    }
    if (stack.size() != 1) throw InvalidArgument("constituent tree: unbalanced '('");
    ParseNode out = std::move(stack.back());
    if (out.children.size() == 1 && !out.children[0].is_word()) return std::move(out.children[0]);
    out.label = "S";
    return out;
}

struct ConstituencyParser::Impl {
    Dictionary dict = nullptr;
    Parse_Options opts = nullptr;
    std::mutex mutex;
};

namespace {
// Link Grammar reports through a global handler; route it to plumb's log (debug level), since
// library code must not print.
void lg_handler(lg_errinfo* ei, void*) {
    if (ei && ei->text) plumb::log(LogLevel::Debug, std::string("link-grammar: ") + ei->text);
}
}  // namespace

ConstituencyParser::ConstituencyParser(double max_seconds) : m_impl(std::make_unique<Impl>()) {
    lg_error_set_handler(lg_handler, nullptr);
    m_impl->dict = dictionary_create_lang("en");
    if (!m_impl->dict) {
        throw ConfigError(
            "cannot open Link Grammar's English dictionary (install link-grammar-dictionaries-en)");
    }
    m_impl->opts = parse_options_create();
    parse_options_set_verbosity(m_impl->opts, 0);
    parse_options_set_linkage_limit(m_impl->opts, 100);
    parse_options_set_max_parse_time(m_impl->opts, static_cast<int>(max_seconds < 1 ? 1 : max_seconds));
}

ConstituencyParser::~ConstituencyParser() {
    if (m_impl->opts) parse_options_delete(m_impl->opts);
    if (m_impl->dict) dictionary_delete(m_impl->dict);
}

bool ConstituencyParser::parse(std::string_view sentence, ParseNode& tree) const {
    std::lock_guard lock(m_impl->mutex);
    std::string text(sentence);
    Sentence s = sentence_create(text.c_str(), m_impl->dict);
    if (!s) return false;
    Parse_Options o = m_impl->opts;
    parse_options_set_min_null_count(o, 0);
    parse_options_set_max_null_count(o, 0);
    int found = sentence_parse(s, o);
    if (found <= 0) {
        parse_options_set_min_null_count(o, 1);
        parse_options_set_max_null_count(o, sentence_length(s));
        found = sentence_parse(s, o);
    }
    bool ok = false;
    if (found > 0) {
        Linkage l = linkage_create(0, s, o);
        if (l) {
            char* t = linkage_print_constituent_tree(l, SINGLE_LINE);
            if (t) {
                try {
                    tree = parse_constituent_tree(t);
                    ok = true;
                } catch (const InvalidArgument&) {
                    ok = false;
                }
                linkage_free_constituent_tree_str(t);
            }
            linkage_delete(l);
        }
    }
    sentence_delete(s);
    return ok;
}

}  // namespace plumb::debias
