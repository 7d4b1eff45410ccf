#pragma once
/// \file constituency.hpp
/// Constituency parses of English sentences from Link Grammar (Debian's liblink-grammar-dev with
/// link-grammar-dictionaries-en): the linkage's phrase-structure tree (S, SBAR, NP, VP, PP, ADJP,
/// ADVP, WHNP, ...), as linkage_print_constituent_tree() derives it.

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace plumb::debias {

/// A node of a constituency tree: a phrase (label set, children) or a word (word set).
struct ParseNode {
    std::string label;  ///< "S", "NP", ... for phrases; empty for words
    std::string word;   ///< the word, lower-cased, without Link Grammar's subscript (".n", ".v")
    std::string tag;    ///< Link Grammar's subscript of the word ("n", "v", "a", "e", ...) or ""
    std::vector<ParseNode> children;
    bool is_word() const noexcept { return label.empty(); }
};

/// Parses Link Grammar's single-line constituent tree text, e.g.
/// "(S (NP the capital.s) (VP is.v ...))". Words in braces or brackets (null-linked words) are
/// kept as words. Throws InvalidArgument on unbalanced parentheses.
ParseNode parse_constituent_tree(std::string_view text);

class ConstituencyParser {
public:
    /// Opens the English dictionary. `max_seconds` bounds each sentence's parse. Throws
    /// ConfigError when the dictionary cannot be opened.
    explicit ConstituencyParser(double max_seconds = 2.0);
    ~ConstituencyParser();
    ConstituencyParser(const ConstituencyParser&) = delete;
    ConstituencyParser& operator=(const ConstituencyParser&) = delete;

    /// The best linkage's tree, allowing null links when no complete linkage exists. Returns
    /// false when Link Grammar finds no linkage at all (the tree is then a flat S of the words).
    /// Thread-safe (calls are serialised).
    bool parse(std::string_view sentence, ParseNode& tree) const;

private:
    struct Impl;
    std::unique_ptr<Impl> m_impl;
};

}  // namespace plumb::debias
