#include "rerank/tk_tokenizer.hpp"

#include <utility>

#include "plugin/error.hpp"
#include "plugin/text_io.hpp"

namespace plumb::rerank {

namespace {

bool is_word_byte(unsigned char c) noexcept {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           c >= 0x80;
}

void check_token(const std::string& w) {
    if (w.empty()) throw InvalidArgument("TK vocabulary: empty token");
    if (w.find_first_of("\r\n") != std::string::npos) {
        throw InvalidArgument("TK vocabulary: token contains a line break");
    }
}

}  // namespace

TkVocabulary::TkVocabulary() {
    m_tokens = {std::string(kPaddingToken), std::string(kOovToken)};
    index_tokens();
}

TkVocabulary::TkVocabulary(std::vector<std::string> words) {
    m_tokens.reserve(words.size() + 2);
    m_tokens.emplace_back(kPaddingToken);
    m_tokens.emplace_back(kOovToken);
    for (auto& w : words) {
        check_token(w);
        m_tokens.push_back(std::move(w));
    }
    index_tokens();
}

void TkVocabulary::index_tokens() {
    m_ids.clear();
    m_ids.reserve(m_tokens.size());
    // Reserved tokens are not looked up as words: "@@unknown@@" in text is just OOV.
    for (std::size_t i = 2; i < m_tokens.size(); ++i) {
        m_ids.emplace(m_tokens[i], static_cast<std::int64_t>(i));  // first occurrence wins
    }
}

TkVocabulary TkVocabulary::load(const std::filesystem::path& path) {
    LineReader reader(path);
    std::string_view line;
    std::vector<std::string> words;
    while (reader.next(line)) {
        const auto n = reader.line_number();
        if (n == 1 && line != kPaddingToken) {
            reader.fail("expected the padding token '" + std::string(kPaddingToken) + "'");
        }
        if (n == 2 && line != kOovToken) {
            reader.fail("expected the OOV token '" + std::string(kOovToken) + "'");
        }
        if (n <= 2) continue;
        if (line.empty()) reader.fail("empty token");
        words.emplace_back(line);
    }
    if (reader.line_number() < 2) {
        throw ParseError(path.string(), reader.line_number(),
                         "vocabulary must start with the padding and OOV tokens");
    }
    return TkVocabulary(std::move(words));
}

void TkVocabulary::save(const std::filesystem::path& path) const {
    AtomicFile out(path);
    for (const auto& t : m_tokens) {
        out.write(t);
        out.write("\n");
    }
    out.commit();
}

std::int64_t TkVocabulary::id(std::string_view word) const {
    auto it = m_ids.find(word);
    return it == m_ids.end() ? kOovId : it->second;
}

const std::string& TkVocabulary::token(std::int64_t id) const {
    if (id < 0 || id >= size()) {
        throw InvalidArgument("TK vocabulary: id " + std::to_string(id) + " out of range [0, " +
                              std::to_string(size()) + ")");
    }
    return m_tokens[static_cast<std::size_t>(id)];
}

std::vector<std::string> tk_split_words(std::string_view text, bool lowercase) {
    std::vector<std::string> out;
    std::size_t i = 0;
    const std::size_t n = text.size();
    while (i < n) {
        while (i < n && !is_word_byte(static_cast<unsigned char>(text[i]))) ++i;
        std::size_t b = i;
        while (i < n && is_word_byte(static_cast<unsigned char>(text[i]))) ++i;
        if (i > b) {
            std::string w(text.substr(b, i - b));
            if (lowercase) {
                for (auto& c : w) {
                    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
                }
            }
            out.push_back(std::move(w));
        }
    }
    return out;
}

TkTokenizer::TkTokenizer(std::shared_ptr<const TkVocabulary> vocabulary, bool lowercase)
    : m_vocab(std::move(vocabulary)), m_lowercase(lowercase) {
    if (!m_vocab) throw InvalidArgument("TkTokenizer: null vocabulary");
}

std::vector<std::string> TkTokenizer::words(std::string_view text, std::size_t max_length) const {
    auto w = tk_split_words(text, m_lowercase);
    if (max_length > 0 && w.size() > max_length) w.resize(max_length);
    return w;
}

std::vector<std::int64_t> TkTokenizer::encode(std::string_view text,
                                              std::size_t max_length) const {
    auto w = words(text, max_length);
    std::vector<std::int64_t> ids;
    ids.reserve(w.size());
    for (const auto& s : w) ids.push_back(m_vocab->id(s));
    return ids;
}

}  // namespace plumb::rerank
