// Lucene 9's StandardTokenizer grammar (UAX#29 word breaks) over UTF-32 with ICU character
// properties.
//
// The scanner follows StandardTokenizerImpl.jflex rule by rule: at each position every rule's
// longest match is computed, the longest wins and ties go to the earlier rule (JFlex semantics):
//   EMOJI, NUM, HANGUL, KATAKANA, WORD (= ALPHANUM), SOUTHEAST_ASIAN, IDEOGRAPHIC, HIRAGANA,
//   and "any other character" (dropped). The scanner only looks max_token_length UTF-16 units
// ahead of a token's start (JFlex's fixed buffer), which chops longer tokens as Lucene does.
#include "index/detail/standard_tokenizer.hpp"

#include <unicode/uchar.h>
#include <unicode/uscript.h>

#include <algorithm>
#include <array>

namespace plumb::index::detail {

namespace {

/// Word_Break classes the grammar distinguishes.
enum Unit : std::uint8_t {
    kOther,
    kALetter,
    kHebrew,
    kNumeric,
    kKatakana,
    kExtNumLet,
    kMidLetter,
    kMidNum,
    kMidNumLet,
    kSingleQuote,
    kDoubleQuote,
    kRegional,
    kExt,  // WB=Format|Extend|ZWJ (rule WB4; emoji modifiers are Extend since Unicode 11)
};

enum Flag : std::uint16_t {
    kHangulScript = 1u << 0,
    kHanScript = 1u << 1,
    kHiraganaScript = 1u << 2,
    kComplexContext = 1u << 3,  // Line_Break=Complex_Context (SA)
    kEmojiChar = 1u << 4,       // Extended_Pictographic or (Emoji minus RI, keycap bases, ...)
    kEmojiModifier = 1u << 5,
    kEmojiModifierBase = 1u << 6,
    kKeyCapBase = 1u << 7,  // [0-9#*]
    kZwj = 1u << 8,         // U+200D
    kPresSel = 1u << 9,     // U+FE0E, U+FE0F
};

struct CharInfo {
    std::uint8_t unit = kOther;
    std::uint16_t flags = 0;
};

CharInfo compute_info(UChar32 c) {
    CharInfo ci;
    if (c < 0 || c > 0x10FFFF) return ci;
    const bool emoji_modifier = u_hasBinaryProperty(c, UCHAR_EMOJI_MODIFIER);
    const int wb = u_getIntPropertyValue(c, UCHAR_WORD_BREAK);
    switch (wb) {
        case U_WB_ALETTER:
            ci.unit = kALetter;
            break;
        case U_WB_HEBREW_LETTER:
            ci.unit = kHebrew;
            break;
        case U_WB_NUMERIC:
            ci.unit = kNumeric;
            break;
        case U_WB_KATAKANA:
            ci.unit = kKatakana;
            break;
        case U_WB_EXTENDNUMLET:
            ci.unit = kExtNumLet;
            break;
        case U_WB_MIDLETTER:
            ci.unit = kMidLetter;
            break;
        case U_WB_MIDNUM:
            ci.unit = kMidNum;
            break;
        case U_WB_MIDNUMLET:
            ci.unit = kMidNumLet;
            break;
        case U_WB_SINGLE_QUOTE:
            ci.unit = kSingleQuote;
            break;
        case U_WB_DOUBLE_QUOTE:
            ci.unit = kDoubleQuote;
            break;
        case U_WB_REGIONAL_INDICATOR:
            ci.unit = kRegional;
            break;
        case U_WB_FORMAT:
        case U_WB_EXTEND:
        case U_WB_ZWJ:
            ci.unit = kExt;
            break;
        default:
            break;
    }
    UErrorCode err = U_ZERO_ERROR;
    const UScriptCode script = uscript_getScript(c, &err);
    if (U_SUCCESS(err)) {
        if (script == USCRIPT_HANGUL) ci.flags |= kHangulScript;
        if (script == USCRIPT_HAN) ci.flags |= kHanScript;
        if (script == USCRIPT_HIRAGANA) ci.flags |= kHiraganaScript;
    }
    if (u_getIntPropertyValue(c, UCHAR_LINE_BREAK) == U_LB_COMPLEX_CONTEXT) {
        ci.flags |= kComplexContext;
    }
    const bool keycap_base = (c >= '0' && c <= '9') || c == '#' || c == '*';
    const bool accidental = c == 0xA9 || c == 0xAE || c == 0x2122 || c == 0x3030 || c == 0x303D;
    const bool rkam = wb == U_WB_REGIONAL_INDICATOR || keycap_base || accidental || emoji_modifier;
    if (u_hasBinaryProperty(c, UCHAR_EXTENDED_PICTOGRAPHIC) ||
        (u_hasBinaryProperty(c, UCHAR_EMOJI) && !rkam)) {
        ci.flags |= kEmojiChar;
    }
    if (emoji_modifier) ci.flags |= kEmojiModifier;
    if (u_hasBinaryProperty(c, UCHAR_EMOJI_MODIFIER_BASE)) ci.flags |= kEmojiModifierBase;
    if (keycap_base) ci.flags |= kKeyCapBase;
    if (c == 0x200D) ci.flags |= kZwj;
    if (c == 0xFE0E || c == 0xFE0F) ci.flags |= kPresSel;
    return ci;
}

/// The Basic Multilingual Plane, computed once (thread-safe static initialisation).
const std::vector<CharInfo>& bmp_table() {
    static const std::vector<CharInfo> table = [] {
        std::vector<CharInfo> t(0x10000);
        for (UChar32 c = 0; c < 0x10000; ++c) t[static_cast<std::size_t>(c)] = compute_info(c);
        return t;
    }();
    return table;
}

CharInfo info_of(wchar_t ch) {
    const auto c = static_cast<std::uint32_t>(ch);
    if (c < 0x10000) return bmp_table()[c];
    return compute_info(static_cast<UChar32>(c));
}

bool is_ah(std::uint8_t u) { return u == kALetter || u == kHebrew; }

class Scanner {
public:
    Scanner(const wchar_t* s, const std::vector<CharInfo>& ci) : m_s(s), m_ci(ci) {}

    std::uint8_t unit(std::size_t i) const { return m_ci[i].unit; }
    bool has(std::size_t i, std::uint16_t f) const { return (m_ci[i].flags & f) != 0; }

    /// (Extend | Format | ZWJ)*
    std::size_t skip_ext(std::size_t p, std::size_t e) const {
        while (p < e && unit(p) == kExt) ++p;
        return p;
    }
    /// (Extend | Format | ZWJ)* without the presentation selectors U+FE0E/U+FE0F
    std::size_t skip_ext_sans(std::size_t p, std::size_t e) const {
        while (p < e && unit(p) == kExt && !has(p, kPresSel)) ++p;
        return p;
    }

    /// EmojiCharOrPresSeqOrModSeq: (ZWJ* EmojiCharEx FE0F?) | ((ZWJ* ModifierBaseEx)? ModifierEx)
    std::size_t match_emoji_element(std::size_t p, std::size_t e) const {
        std::size_t best = p;
        std::size_t q = p;
        while (q < e && has(q, kZwj)) ++q;
        if (q < e && has(q, kEmojiChar)) {
            std::size_t r = skip_ext_sans(q + 1, e);
            if (r < e && m_s[r] == 0xFE0F) ++r;
            best = std::max(best, r);
        }
        if (q < e && has(q, kEmojiModifierBase)) {
            // The modifier is WB=Extend itself, so it may sit anywhere in the base's tail.
            const std::size_t z = skip_ext_sans(q + 1, e);
            for (std::size_t i = q + 1; i < z; ++i) {
                if (has(i, kEmojiModifier)) best = std::max(best, z);
            }
            if (z < e && has(z, kEmojiModifier)) best = std::max(best, skip_ext_sans(z + 1, e));
        }
        if (p < e && has(p, kEmojiModifier)) best = std::max(best, skip_ext_sans(p + 1, e));
        return best;
    }

    /// The EMOJI rule's longest match at p (p if none).
    std::size_t match_emoji(std::size_t p, std::size_t e) const {
        std::size_t best = p;
        std::size_t q = match_emoji_element(p, e);
        if (q > p) {
            // ( ZWJ element )*: the ZWJ may already have been taken by the previous element's
            // (Extend | Format | ZWJ)* tail.
            while (q < e && (has(q - 1, kZwj) || has(q, kZwj))) {
                std::size_t r = match_emoji_element(q, e);
                if (r <= q) break;
                q = r;
            }
            best = q;
        }
        if (p < e && has(p, kKeyCapBase)) {
            // KeyCapBaseChar ExtSans* FE0F? U+20E3 ExtSans*
            const std::size_t z = skip_ext_sans(p + 1, e);
            for (std::size_t i = p + 1; i < z; ++i) {
                if (m_s[i] == 0x20E3) best = std::max(best, skip_ext_sans(i + 1, e));
            }
            std::size_t r = z;
            if (r < e && m_s[r] == 0xFE0F) ++r;
            if (r < e && m_s[r] == 0x20E3) best = std::max(best, skip_ext_sans(r + 1, e));
        }
        if (p < e && unit(p) == kRegional) {
            const std::size_t r = skip_ext(p + 1, e);
            if (r < e && unit(r) == kRegional) best = std::max(best, skip_ext(r + 1, e));
        }
        return best;
    }

    /// The WORD rule (and its NUM / HANGUL / KATAKANA subsets): longest match at p, type in `type`.
    std::size_t match_word(std::size_t p, std::size_t e, TokenType& type) const {
        // kHsq: a Hebrew group just closed (Hebrew_Letter Single_Quote, or Hebrew_Letter
        // Double_Quote Hebrew_Letter); the grammar continues only with a new group or '_'.
        enum State { kStart, kA, kH, kN, kK, kE, kHsq };
        State st = kStart;
        bool group = false, letters = false, only_hangul = true, only_katakana = true;
        std::size_t q = p, accept = p;
        auto state_of = [](std::uint8_t u) {
            return u == kALetter ? kA : u == kHebrew ? kH : u == kNumeric ? kN : kK;
        };
        while (q < e) {
            const std::uint8_t u = unit(q);
            const std::size_t nq = skip_ext(q + 1, e);
            const std::uint8_t next = nq < e ? unit(nq) : static_cast<std::uint8_t>(kOther);
            std::size_t to = nq;
            std::uint8_t base = u;  // the letter/digit unit the step ends on
            bool mid = false;
            bool ok = true;
            State ns = kStart;
            switch (st) {
                case kStart:
                case kE:
                case kHsq:
                    if (u == kExtNumLet) {
                        ns = kE;
                    } else if (is_ah(u) || u == kNumeric || (u == kKatakana && st != kHsq)) {
                        ns = state_of(u);
                    } else {
                        ok = false;
                    }
                    break;
                case kA:
                case kH:
                    if (is_ah(u) || u == kNumeric) {
                        ns = state_of(u);
                    } else if (u == kExtNumLet) {
                        ns = kE;
                    } else if ((u == kMidLetter || u == kMidNumLet || u == kSingleQuote) &&
                               is_ah(next)) {
                        to = skip_ext(nq + 1, e);
                        base = next;
                        mid = true;
                        // A letter after a Mid* belongs to the same letter group, so even a
                        // Hebrew one cannot start a Hebrew group (no WB7a/b after it).
                        ns = kA;
                    } else if (st == kH && u == kSingleQuote) {
                        ns = kHsq;  // WB7a: Hebrew_Letter x Single_Quote
                        mid = true;
                    } else if (st == kH && u == kDoubleQuote && next == kHebrew) {
                        // WB7b/c. In Lucene's grammar this closes a Hebrew group
                        // (HebrewLetter DoubleQuote HebrewLetter): like after WB7a, only a new
                        // letter/digit group or '_' may follow, so a second '"' breaks.
                        to = skip_ext(nq + 1, e);
                        base = next;
                        mid = true;
                        ns = kHsq;
                    } else {
                        ok = false;
                    }
                    break;
                case kN:
                    if (is_ah(u) || u == kNumeric) {
                        ns = state_of(u);
                    } else if (u == kExtNumLet) {
                        ns = kE;
                    } else if ((u == kMidNum || u == kMidNumLet || u == kSingleQuote) &&
                               next == kNumeric) {
                        to = skip_ext(nq + 1, e);
                        base = next;
                        mid = true;
                        ns = kN;
                    } else {
                        ok = false;
                    }
                    break;
                case kK:
                    if (u == kKatakana) {
                        ns = kK;
                    } else if (u == kExtNumLet) {
                        ns = kE;
                    } else {
                        ok = false;
                    }
                    break;
            }
            if (!ok) break;
            // Composition decides between NUM, HANGUL, KATAKANA and ALPHANUM (equal-length
            // matches go to the earlier JFlex rule).
            if (mid || ns == kE || ns == kHsq) {
                only_hangul = false;
                only_katakana = false;
            }
            if (ns != kE && ns != kHsq) {
                if (base == kKatakana) {
                    letters = true;
                    only_hangul = false;
                } else if (is_ah(base)) {
                    letters = true;
                    only_katakana = false;
                    if (!has(mid ? nq : q, kHangulScript)) only_hangul = false;
                } else {  // numeric
                    only_hangul = false;
                    only_katakana = false;
                }
            } else if (ns == kHsq) {
                letters = true;
            }
            if (ns != kE) group = true;
            st = ns;
            q = to;
            if (group) accept = q;
        }
        if (accept == p) return p;
        type = !letters        ? TokenType::Num
               : only_hangul   ? TokenType::Hangul
               : only_katakana ? TokenType::Katakana
                               : TokenType::AlphaNum;
        return accept;
    }

    std::size_t match_southeast_asian(std::size_t p, std::size_t e) const {
        std::size_t q = p;
        while (q < e && has(q, kComplexContext)) q = skip_ext(q + 1, e);
        return q;
    }

    std::size_t match_single(std::size_t p, std::size_t e, std::uint16_t flag) const {
        return p < e && has(p, flag) ? skip_ext(p + 1, e) : p;
    }

private:
    const wchar_t* m_s;
    const std::vector<CharInfo>& m_ci;
};

}  // namespace

const char* token_type_name(TokenType type) noexcept {
    switch (type) {
        case TokenType::AlphaNum:
            return "<ALPHANUM>";
        case TokenType::Num:
            return "<NUM>";
        case TokenType::SoutheastAsian:
            return "<SOUTHEAST_ASIAN>";
        case TokenType::Ideographic:
            return "<IDEOGRAPHIC>";
        case TokenType::Hiragana:
            return "<HIRAGANA>";
        case TokenType::Katakana:
            return "<KATAKANA>";
        case TokenType::Hangul:
            return "<HANGUL>";
        case TokenType::Emoji:
            return "<EMOJI>";
    }
    return "<UNKNOWN>";
}

void standard_tokenize(const wchar_t* text, std::size_t n, std::vector<StdToken>& out,
                       std::size_t max_token_length) {
    out.clear();
    thread_local std::vector<CharInfo> infos;
    thread_local std::vector<std::size_t> utf16;  // UTF-16 offset of each code point
    infos.resize(n);
    bool supplementary = false;
    for (std::size_t i = 0; i < n; ++i) {
        infos[i] = info_of(text[i]);
        if (static_cast<std::uint32_t>(text[i]) > 0xFFFF) supplementary = true;
    }
    if (supplementary) {
        utf16.resize(n + 1);
        utf16[0] = 0;
        for (std::size_t i = 0; i < n; ++i) {
            utf16[i + 1] = utf16[i] + (static_cast<std::uint32_t>(text[i]) > 0xFFFF ? 2 : 1);
        }
    }
    const std::size_t max_len = std::max<std::size_t>(1, max_token_length);
    Scanner sc(text, infos);
    std::size_t p = 0;
    while (p < n) {
        // JFlex never looks further than its buffer (max_token_length UTF-16 units).
        std::size_t e;
        if (!supplementary) {
            e = std::min(n, p + max_len);
        } else {
            auto it = std::upper_bound(utf16.begin() + static_cast<std::ptrdiff_t>(p), utf16.end(),
                                       utf16[p] + max_len);
            e = static_cast<std::size_t>(it - utf16.begin()) - 1;
            e = std::max(e, p + 1);
        }
        TokenType word_type = TokenType::AlphaNum;
        const std::array<std::pair<std::size_t, TokenType>, 5> candidates = {{
            {sc.match_emoji(p, e), TokenType::Emoji},
            {sc.match_word(p, e, word_type), TokenType::AlphaNum},  // type fixed below
            {sc.match_southeast_asian(p, e), TokenType::SoutheastAsian},
            {sc.match_single(p, e, kHanScript), TokenType::Ideographic},
            {sc.match_single(p, e, kHiraganaScript), TokenType::Hiragana},
        }};
        std::size_t best = p;
        TokenType type = TokenType::AlphaNum;
        for (std::size_t c = 0; c < candidates.size(); ++c) {
            if (candidates[c].first > best) {
                best = candidates[c].first;
                type = c == 1 ? word_type : candidates[c].second;
            }
        }
        if (best == p) {
            ++p;  // not part of any token: dropped
            continue;
        }
        out.push_back({p, best, type});
        p = best;
    }
}

}  // namespace plumb::index::detail
