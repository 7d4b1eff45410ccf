#include "rerank/wordpiece.hpp"

#include <algorithm>

#include <unicode/locid.h>
#include <unicode/normalizer2.h>
#include <unicode/uchar.h>
#include <unicode/unistr.h>

#include "plugin/error.hpp"
#include "plugin/text_io.hpp"
#include "rerank/hf_config.hpp"

namespace plumb::rerank {

namespace fs = std::filesystem;

// ---------------------------------------------------------------------------------------------
// Vocab
// ---------------------------------------------------------------------------------------------

Vocab::Vocab(std::vector<std::string> tokens) : m_tokens(std::move(tokens)) {
    m_ids.reserve(m_tokens.size());
    for (std::size_t i = 0; i < m_tokens.size(); ++i) {
        m_ids[m_tokens[i]] = static_cast<std::int64_t>(i);  // later duplicates win (load_vocab)
    }
}

Vocab Vocab::load(const fs::path& path) {
    LineReader reader(path);
    std::vector<std::string> tokens;
    std::string_view line;
    while (reader.next(line)) {
        if (auto bad = find_invalid_utf8(line); bad != std::string_view::npos) {
            reader.fail("invalid UTF-8 at byte " + std::to_string(bad + 1));
        }
        tokens.emplace_back(line);
    }
    return Vocab(std::move(tokens));
}

void Vocab::save(const fs::path& path) const {
    for (const auto& t : m_tokens) {
        if (t.find_first_of("\r\n") != std::string::npos) {
            throw InvalidArgument("Vocab::save: token contains a line break");
        }
    }
    AtomicFile out(path);
    for (const auto& t : m_tokens) {
        out.write(t);
        out.write("\n");
    }
    out.commit();
}

std::int64_t Vocab::id(std::string_view token) const noexcept {
    auto it = m_ids.find(token);
    return it == m_ids.end() ? -1 : it->second;
}

const std::string& Vocab::token(std::int64_t id) const {
    if (id < 0 || static_cast<std::size_t>(id) >= m_tokens.size()) {
        throw InvalidArgument("Vocab::token: id " + std::to_string(id) + " out of range [0, " +
                              std::to_string(m_tokens.size()) + ")");
    }
    return m_tokens[static_cast<std::size_t>(id)];
}

// ---------------------------------------------------------------------------------------------
// Character classes (transformers' tokenization_bert.py / tokenization_utils.py)
// ---------------------------------------------------------------------------------------------

namespace {

bool is_whitespace(UChar32 c) {
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') return true;
    return u_charType(c) == U_SPACE_SEPARATOR;
}

bool is_control(UChar32 c) {
    if (c == '\t' || c == '\n' || c == '\r') return false;
    return (U_GET_GC_MASK(c) & U_GC_C_MASK) != 0;
}

bool is_punctuation(UChar32 c) {
    if ((c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) ||
        (c >= 123 && c <= 126)) {
        return true;
    }
    return (U_GET_GC_MASK(c) & U_GC_P_MASK) != 0;
}

bool is_chinese_char(UChar32 c) {
    return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) ||
           (c >= 0x20000 && c <= 0x2A6DF) || (c >= 0x2A700 && c <= 0x2B73F) ||
           (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B820 && c <= 0x2CEAF) ||
           (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

/// Separators of Python's str.split() that can survive clean_text (which maps TAB/LF/CR and Zs
/// to a space and drops Cc): the line and paragraph separators.
bool is_split_space(UChar32 c) { return c == ' ' || c == 0x2028 || c == 0x2029; }

bool is_ascii(std::string_view s) {
    for (unsigned char ch : s) {
        if (ch >= 0x80) return false;
    }
    return true;
}

/// Decodes one code point of valid UTF-8 at s[i], advancing i.
char32_t decode_utf8(std::string_view s, std::size_t& i) {
    const auto b0 = static_cast<unsigned char>(s[i]);
    if (b0 < 0x80) {
        ++i;
        return b0;
    }
    int n = b0 >= 0xF0 ? 3 : b0 >= 0xE0 ? 2 : 1;
    char32_t c = b0 & (0x3F >> n);
    for (int k = 1; k <= n; ++k) c = (c << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
    i += static_cast<std::size_t>(n) + 1;
    return c;
}

std::string to_utf8(const icu::UnicodeString& u) {
    std::string out;
    u.toUTF8String(out);
    return out;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// BasicTokenizer
// ---------------------------------------------------------------------------------------------

struct BasicTokenizer::Impl {
    WordPieceOptions options;
    bool strip_when_lower = true;   // strip_accents is not False
    bool strip_without_lower = false;  // strip_accents is True
    std::vector<std::string> specials;     // split out of the text as whole tokens
    std::vector<std::string> never_split;  // specials + options.never_split
    bool special_first[256] = {};          // first bytes of the special tokens
    const icu::Normalizer2* nfc = nullptr;
    const icu::Normalizer2* nfd = nullptr;

    explicit Impl(WordPieceOptions o) : options(std::move(o)) {
        strip_when_lower = options.strip_accents.value_or(true);
        strip_without_lower = options.strip_accents.value_or(false);
        for (const auto* t : {&options.unk_token, &options.sep_token, &options.pad_token,
                              &options.cls_token, &options.mask_token}) {
            if (!t->empty()) specials.push_back(*t);
        }
        for (const auto& s : specials) special_first[static_cast<unsigned char>(s[0])] = true;
        never_split = specials;
        for (const auto& t : options.never_split) never_split.push_back(t);
        UErrorCode status = U_ZERO_ERROR;
        nfc = icu::Normalizer2::getNFCInstance(status);
        nfd = icu::Normalizer2::getNFDInstance(status);
        if (U_FAILURE(status)) {
            throw Error(std::string("ICU normaliser unavailable: ") + u_errorName(status));
        }
    }

    bool is_never_split(std::string_view w) const {
        return std::find(never_split.begin(), never_split.end(), w) != never_split.end();
    }

    /// Calls emit(word, is_special) for the words of `text` in order. When `stop` is given,
    /// processing ends at the next whitespace chunk after *stop becomes true.
    template <class Emit>
    void run(std::string_view text, Emit&& emit, const bool* stop = nullptr) const {
        if (auto bad = find_invalid_utf8(text); bad != std::string_view::npos) {
            throw InvalidArgument("tokenizer input is not valid UTF-8 (byte " +
                                  std::to_string(bad + 1) + ")");
        }
        if (!options.split_special_tokens_in_text || specials.empty()) {
            run_piece(text, emit, stop);
            return;
        }
        // Split out special tokens written in the text (leftmost, longest at a position).
        std::size_t start = 0, pos = 0;
        while (pos < text.size()) {
            if (stop && *stop) return;
            if (special_first[static_cast<unsigned char>(text[pos])]) {
                const std::string* hit = nullptr;
                for (const auto& s : specials) {
                    if (text.compare(pos, s.size(), s) == 0 && (!hit || s.size() > hit->size())) {
                        hit = &s;
                    }
                }
                if (hit) {
                    run_piece(text.substr(start, pos - start), emit, stop);
                    if (stop && *stop) return;
                    emit(std::string(*hit), true);
                    pos += hit->size();
                    start = pos;
                    continue;
                }
            }
            ++pos;
        }
        run_piece(text.substr(start), emit, stop);
    }

    /// Processes `text` chunk by chunk between ASCII whitespace: words never span such a
    /// separator, and NFC never composes across it (spaces, TAB, LF, CR are starters that
    /// compose with nothing), so each chunk can take the ASCII fast path on its own.
    template <class Emit>
    void run_piece(std::string_view text, Emit& emit, const bool* stop) const {
        auto is_sep = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
        std::size_t i = 0;
        while (i < text.size()) {
            if (stop && *stop) return;
            while (i < text.size() && is_sep(text[i])) ++i;
            const std::size_t b = i;
            while (i < text.size() && !is_sep(text[i])) ++i;
            if (b == i) break;
            const std::string_view chunk = text.substr(b, i - b);
            if (is_ascii(chunk)) {
                run_ascii(chunk, emit);
            } else {
                run_unicode(chunk, emit);
            }
        }
    }

    /// ASCII fast path: identical results (NFC and accent stripping are identities on ASCII,
    /// there are no CJK characters, and Python's lower() maps only A-Z here).
    template <class Emit>
    void run_ascii(std::string_view text, Emit& emit) const {
        std::string word;
        auto flush = [&] {
            if (word.empty()) return;
            if (is_never_split(word)) {
                emit(std::move(word), false);
                word.clear();
                return;
            }
            if (options.lowercase) {
                for (auto& ch : word) {
                    if (ch >= 'A' && ch <= 'Z') ch = static_cast<char>(ch - 'A' + 'a');
                }
                if (is_never_split(word)) {
                    emit(std::move(word), false);
                    word.clear();
                    return;
                }
            }
            std::string cur;
            for (char ch : word) {
                if (is_punctuation(static_cast<unsigned char>(ch))) {
                    if (!cur.empty()) emit(std::move(cur), false);
                    cur.clear();
                    emit(std::string(1, ch), false);
                } else {
                    cur.push_back(ch);
                }
            }
            if (!cur.empty()) emit(std::move(cur), false);
            word.clear();
        };
        for (char ch : text) {
            const auto c = static_cast<unsigned char>(ch);
            if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
                flush();
            } else if (c == 0 || c < 32 || c == 127) {
                continue;  // control characters are dropped (not separators)
            } else {
                word.push_back(ch);
            }
        }
        flush();
    }

    void strip_accents(icu::UnicodeString& w) const {
        UErrorCode status = U_ZERO_ERROR;
        icu::UnicodeString d = nfd->normalize(w, status);
        if (U_FAILURE(status)) throw Error(std::string("ICU NFD failed: ") + u_errorName(status));
        icu::UnicodeString out;
        for (int32_t i = 0; i < d.length();) {
            const UChar32 c = d.char32At(i);
            if (u_charType(c) != U_NON_SPACING_MARK) out.append(c);
            i += U16_LENGTH(c);
        }
        w = std::move(out);
    }

    template <class Emit>
    void run_unicode(std::string_view text, Emit& emit) const {
        // 1. clean text and space CJK ideographs
        icu::UnicodeString cleaned;
        for (std::size_t i = 0; i < text.size();) {
            const auto c = static_cast<UChar32>(decode_utf8(text, i));
            if (c == 0 || c == 0xFFFD || is_control(c)) continue;
            if (is_whitespace(c)) {
                cleaned.append(static_cast<UChar32>(' '));
            } else if (options.tokenize_chinese_chars && is_chinese_char(c)) {
                cleaned.append(static_cast<UChar32>(' '));
                cleaned.append(c);
                cleaned.append(static_cast<UChar32>(' '));
            } else {
                cleaned.append(c);
            }
        }
        // 2. NFC (options.nfc only: the fast tokenizer does not normalise)
        icu::UnicodeString norm;
        if (options.nfc) {
            UErrorCode status = U_ZERO_ERROR;
            norm = nfc->normalize(cleaned, status);
            if (U_FAILURE(status)) {
                throw Error(std::string("ICU NFC failed: ") + u_errorName(status));
            }
        } else {
            norm = std::move(cleaned);
        }
        // 3. whitespace split, then per word: case, accents, punctuation
        const icu::Locale& root = icu::Locale::getRoot();
        int32_t i = 0;
        const int32_t n = norm.length();
        while (i < n) {
            while (i < n && is_split_space(norm.char32At(i))) i += U16_LENGTH(norm.char32At(i));
            const int32_t b = i;
            while (i < n && !is_split_space(norm.char32At(i))) i += U16_LENGTH(norm.char32At(i));
            if (b == i) break;
            icu::UnicodeString w(norm, b, i - b);
            std::string w8 = to_utf8(w);
            if (is_never_split(w8)) {
                emit(std::move(w8), false);
                continue;
            }
            if (options.lowercase) {
                w.toLower(root);
                if (strip_when_lower) strip_accents(w);
            } else if (strip_without_lower) {
                strip_accents(w);
            }
            w8 = to_utf8(w);
            if (is_never_split(w8)) {
                emit(std::move(w8), false);
                continue;
            }
            icu::UnicodeString cur;
            for (int32_t k = 0; k < w.length();) {
                const UChar32 c = w.char32At(k);
                k += U16_LENGTH(c);
                if (is_split_space(c)) {  // cannot normally happen; keeps the final split exact
                    if (!cur.isEmpty()) emit(to_utf8(cur), false);
                    cur.remove();
                } else if (is_punctuation(c)) {
                    if (!cur.isEmpty()) emit(to_utf8(cur), false);
                    cur.remove();
                    emit(to_utf8(icu::UnicodeString(c)), false);
                } else {
                    cur.append(c);
                }
            }
            if (!cur.isEmpty()) emit(to_utf8(cur), false);
        }
    }
};

BasicTokenizer::BasicTokenizer(WordPieceOptions options)
    : m_impl(std::make_unique<Impl>(std::move(options))) {}
BasicTokenizer::~BasicTokenizer() = default;
BasicTokenizer::BasicTokenizer(BasicTokenizer&&) noexcept = default;
BasicTokenizer& BasicTokenizer::operator=(BasicTokenizer&&) noexcept = default;

std::vector<std::string> BasicTokenizer::tokenize(std::string_view text) const {
    std::vector<std::string> out;
    m_impl->run(text, [&](std::string&& w, bool) { out.push_back(std::move(w)); });
    return out;
}

const WordPieceOptions& BasicTokenizer::options() const noexcept { return m_impl->options; }

// ---------------------------------------------------------------------------------------------
// Padding
// ---------------------------------------------------------------------------------------------

BatchEncoding pad_batch(std::span<const Encoding> encodings, std::int64_t pad_id) {
    BatchEncoding b;
    b.batch = encodings.size();
    for (const auto& e : encodings) b.length = std::max(b.length, e.size());
    const std::size_t total = b.batch * b.length;
    b.input_ids.assign(total, pad_id);
    b.token_type_ids.assign(total, 0);
    b.attention_mask.assign(total, 0);
    b.lengths.reserve(b.batch);
    for (std::size_t r = 0; r < b.batch; ++r) {
        const auto& e = encodings[r];
        std::copy(e.input_ids.begin(), e.input_ids.end(), b.input_ids.begin() + r * b.length);
        std::copy(e.token_type_ids.begin(), e.token_type_ids.end(),
                  b.token_type_ids.begin() + r * b.length);
        std::copy(e.attention_mask.begin(), e.attention_mask.end(),
                  b.attention_mask.begin() + r * b.length);
        b.lengths.push_back(e.size());
    }
    return b;
}

// ---------------------------------------------------------------------------------------------
// WordPieceTokenizer
// ---------------------------------------------------------------------------------------------

struct WordPieceTokenizer::Impl {
    std::shared_ptr<const Vocab> vocab;
    BasicTokenizer basic;
    std::int64_t unk = -1, cls = -1, sep = -1, pad = -1, mask = -1;
    std::size_t max_piece_bytes = 0;  // longest vocabulary entry (without "##"), in bytes

    Impl(std::shared_ptr<const Vocab> v, WordPieceOptions o)
        : vocab(std::move(v)), basic(std::move(o)) {
        if (!vocab) throw InvalidArgument("WordPieceTokenizer: null vocabulary");
        const auto& opt = basic.options();
        auto need = [&](const std::string& t, const char* what) {
            const auto id = vocab->id(t);
            if (id < 0) {
                throw InvalidArgument(std::string("WordPieceTokenizer: the vocabulary has no ") +
                                      what + " token '" + t + "'");
            }
            return id;
        };
        unk = need(opt.unk_token, "unknown");
        cls = need(opt.cls_token, "classifier");
        sep = need(opt.sep_token, "separator");
        pad = need(opt.pad_token, "padding");
        mask = vocab->id(opt.mask_token);
        for (const auto& t : vocab->tokens()) {
            const std::size_t len = t.rfind("##", 0) == 0 ? t.size() - 2 : t.size();
            max_piece_bytes = std::max(max_piece_bytes, len);
        }
    }

    /// Greedy longest-match-first WordPiece of one word; calls out(id, piece).
    template <class Out>
    void wordpiece(const std::string& word, Out&& out) const {
        // code point boundaries
        std::vector<std::size_t> bounds;
        bounds.reserve(word.size() + 1);
        for (std::size_t i = 0; i < word.size();) {
            bounds.push_back(i);
            decode_utf8(word, i);
        }
        const std::size_t chars = bounds.size();
        bounds.push_back(word.size());
        if (chars > basic.options().max_input_chars_per_word) {
            out(unk, basic.options().unk_token);
            return;
        }
        struct Piece {
            std::int64_t id;
            std::size_t b, e;
        };
        std::vector<Piece> pieces;
        std::string key;
        std::size_t start = 0;
        while (start < chars) {
            std::size_t end = chars;
            while (end > start && bounds[end] - bounds[start] > max_piece_bytes) --end;
            std::int64_t found = -1;
            while (end > start) {
                key.clear();
                if (start > 0) key = "##";
                key.append(word, bounds[start], bounds[end] - bounds[start]);
                found = vocab->id(key);
                if (found >= 0) break;
                --end;
            }
            if (found < 0) {
                out(unk, basic.options().unk_token);
                return;
            }
            pieces.push_back({found, start, end});
            start = end;
        }
        for (const auto& p : pieces) {
            if (p.b == 0) {
                out(p.id, word.substr(bounds[p.b], bounds[p.e] - bounds[p.b]));
            } else {
                out(p.id, "##" + word.substr(bounds[p.b], bounds[p.e] - bounds[p.b]));
            }
        }
    }

    /// Calls out(id, token) for each WordPiece token of `text`.
    template <class Out>
    void tokens(std::string_view text, Out&& out) const {
        basic.m_impl->run(text, [&](std::string&& w, bool special) {
            if (special || basic.m_impl->is_never_split(w)) {
                const auto id = vocab->id(w);
                out(id >= 0 ? id : unk, std::move(w));
            } else {
                wordpiece(w, out);
            }
        });
    }

    std::vector<std::int64_t> ids(std::string_view text, std::size_t max_tokens) const {
        std::vector<std::int64_t> out;
        // Stop early: once max_tokens ids exist, the rest of the text cannot change them.
        bool full = false;
        basic.m_impl->run(text, [&](std::string&& w, bool special) {
            if (full) return;
            if (special || basic.m_impl->is_never_split(w)) {
                const auto id = vocab->id(w);
                out.push_back(id >= 0 ? id : unk);
            } else {
                wordpiece(w, [&](std::int64_t id, const std::string&) { out.push_back(id); });
            }
            if (max_tokens && out.size() >= max_tokens) full = true;
        }, &full);
        if (max_tokens && out.size() > max_tokens) out.resize(max_tokens);
        return out;
    }
};

WordPieceTokenizer::WordPieceTokenizer(std::shared_ptr<const Vocab> vocab, WordPieceOptions options)
    : m_impl(std::make_unique<Impl>(std::move(vocab), std::move(options))) {}
WordPieceTokenizer::~WordPieceTokenizer() = default;
WordPieceTokenizer::WordPieceTokenizer(WordPieceTokenizer&&) noexcept = default;
WordPieceTokenizer& WordPieceTokenizer::operator=(WordPieceTokenizer&&) noexcept = default;

WordPieceTokenizer WordPieceTokenizer::from_folder(const fs::path& dir, WordPieceOptions options) {
    std::error_code ec;
    fs::path vocab_path = dir, folder = dir;
    if (fs::is_directory(dir, ec)) {
        vocab_path = dir / "vocab.txt";
    } else {
        folder = dir.parent_path();
    }
    if (!fs::exists(vocab_path, ec)) {
        throw CheckpointError(dir.string() + ": missing vocab.txt");
    }
    const HfTokenizerSettings s = load_hf_tokenizer_settings(folder.empty() ? "." : folder);
    if (s.do_lower_case) options.lowercase = *s.do_lower_case;
    if (s.strip_accents) options.strip_accents = s.strip_accents;
    if (s.tokenize_chinese_chars) options.tokenize_chinese_chars = *s.tokenize_chinese_chars;
    auto vocab = std::make_shared<const Vocab>(Vocab::load(vocab_path));
    return WordPieceTokenizer(std::move(vocab), std::move(options));
}

std::vector<std::string> WordPieceTokenizer::tokenize(std::string_view text) const {
    std::vector<std::string> out;
    m_impl->tokens(text, [&](std::int64_t, std::string tok) { out.push_back(std::move(tok)); });
    return out;
}

std::vector<std::int64_t> WordPieceTokenizer::encode_ids(std::string_view text,
                                                         std::size_t max_tokens) const {
    return m_impl->ids(text, max_tokens);
}

Encoding WordPieceTokenizer::encode(std::string_view text, std::size_t max_length) const {
    if (max_length < 2) throw InvalidArgument("encode: max_length must be at least 2");
    auto ids = m_impl->ids(text, max_length - 2);
    Encoding e;
    e.input_ids.reserve(ids.size() + 2);
    e.input_ids.push_back(m_impl->cls);
    e.input_ids.insert(e.input_ids.end(), ids.begin(), ids.end());
    e.input_ids.push_back(m_impl->sep);
    e.token_type_ids.assign(e.input_ids.size(), 0);
    e.attention_mask.assign(e.input_ids.size(), 1);
    return e;
}

Encoding WordPieceTokenizer::encode_pair_ids(std::span<const std::int64_t> q,
                                             std::span<const std::int64_t> p,
                                             std::size_t max_length, Truncation truncation) const {
    if (max_length < 3) throw InvalidArgument("encode_pair: max_length must be at least 3");
    const std::size_t budget = max_length - 3;
    std::size_t nq = q.size(), np = p.size();
    if (nq + np > budget) {
        if (truncation == Truncation::PassageFirst) {
            nq = std::min(nq, budget);
            np = std::min(np, budget - nq);
        } else {
            // transformers' longest_first: trim the longer to the shorter, then alternate
            // (an odd remainder comes off the passage).
            const std::size_t remove = nq + np - budget;
            const std::size_t diff = nq > np ? nq - np : np - nq;
            const std::size_t first = std::min(diff, remove);
            const std::size_t second = remove - first;
            std::size_t rq, rp;
            if (nq > np) {
                rq = first + second / 2;
                rp = second - second / 2;
            } else {
                rq = second / 2;
                rp = first + second - second / 2;
            }
            nq -= rq;
            np -= rp;
        }
    }
    Encoding e;
    const std::size_t n = nq + np + 3;
    e.input_ids.reserve(n);
    e.input_ids.push_back(m_impl->cls);
    e.input_ids.insert(e.input_ids.end(), q.begin(), q.begin() + static_cast<std::ptrdiff_t>(nq));
    e.input_ids.push_back(m_impl->sep);
    e.input_ids.insert(e.input_ids.end(), p.begin(), p.begin() + static_cast<std::ptrdiff_t>(np));
    e.input_ids.push_back(m_impl->sep);
    e.token_type_ids.assign(n, 0);
    std::fill(e.token_type_ids.begin() + static_cast<std::ptrdiff_t>(nq + 2),
              e.token_type_ids.end(), 1);
    e.attention_mask.assign(n, 1);
    return e;
}

Encoding WordPieceTokenizer::encode_pair(std::string_view query, std::string_view passage,
                                         std::size_t max_length, Truncation truncation) const {
    if (max_length < 3) throw InvalidArgument("encode_pair: max_length must be at least 3");
    // Either strategy keeps at most max_length - 3 tokens of each side, and the result depends
    // on a longer side only through that cap, so tokenization can stop there.
    const auto q = m_impl->ids(query, max_length - 3 + 1);
    const auto p = m_impl->ids(passage, max_length - 3 + 1);
    return encode_pair_ids(q, p, max_length, truncation);
}

BatchEncoding WordPieceTokenizer::encode_pairs(std::string_view query,
                                               std::span<const std::string_view> passages,
                                               std::size_t max_length,
                                               Truncation truncation) const {
    if (max_length < 3) throw InvalidArgument("encode_pairs: max_length must be at least 3");
    const auto q = m_impl->ids(query, max_length - 3 + 1);
    std::vector<Encoding> encs;
    encs.reserve(passages.size());
    for (auto p : passages) {
        encs.push_back(encode_pair_ids(q, m_impl->ids(p, max_length - 3 + 1), max_length,
                                       truncation));
    }
    return pad_batch(encs, m_impl->pad);
}

const Vocab& WordPieceTokenizer::vocab() const noexcept { return *m_impl->vocab; }
const WordPieceOptions& WordPieceTokenizer::options() const noexcept {
    return m_impl->basic.options();
}
std::int64_t WordPieceTokenizer::cls_id() const noexcept { return m_impl->cls; }
std::int64_t WordPieceTokenizer::sep_id() const noexcept { return m_impl->sep; }
std::int64_t WordPieceTokenizer::pad_id() const noexcept { return m_impl->pad; }
std::int64_t WordPieceTokenizer::unk_id() const noexcept { return m_impl->unk; }
std::int64_t WordPieceTokenizer::mask_id() const noexcept { return m_impl->mask; }

}  // namespace plumb::rerank
