// Lucene's English filters for the "anserini" analyzer: EnglishPossessiveFilter,
// LowerCaseFilter, the English stop set and PorterStemmer (see detail/english_filters.hpp).
#include "index/detail/english_filters.hpp"

#include <unicode/uchar.h>

#include <algorithm>
#include <array>
#include <string_view>

namespace plumb::index::detail {

// Porter stemmer. The algorithm of Porter (1980), "An algorithm for suffix stripping", Program
// 14(3), with the departures of Lucene's PorterStemmer (from Porter's own Release 3 code):
// step 2 maps "bli" -> "ble" (instead of "abli" -> "able") and adds "logi" -> "log"; words of
// one or two characters are left alone. Among a step's suffixes the longest matching one is
// chosen, and only it (if its condition fails, nothing happens).

namespace {

class Porter {
public:
    Porter(wchar_t* b, std::size_t len) : m_b(b), m_k(static_cast<long>(len) - 1) {}

    std::size_t stem() {
        if (m_k <= 1) return static_cast<std::size_t>(m_k + 1);
        step1ab();
        step1c();
        step2();
        step3();
        step4();
        step5();
        return static_cast<std::size_t>(m_k + 1);
    }

private:
    bool cons(long i) const {
        switch (m_b[i]) {
            case L'a':
            case L'e':
            case L'i':
            case L'o':
            case L'u':
                return false;
            case L'y':
                return i == 0 ? true : !cons(i - 1);
            default:
                return true;
        }
    }
    /// Number of vowel-consonant sequences in b[0..j].
    int m() const {
        int n = 0;
        long i = 0;
        while (true) {
            if (i > m_j) return n;
            if (!cons(i)) break;
            ++i;
        }
        ++i;
        while (true) {
            while (true) {
                if (i > m_j) return n;
                if (cons(i)) break;
                ++i;
            }
            ++i;
            ++n;
            while (true) {
                if (i > m_j) return n;
                if (!cons(i)) break;
                ++i;
            }
            ++i;
        }
    }
    bool vowel_in_stem() const {
        for (long i = 0; i <= m_j; ++i) {
            if (!cons(i)) return true;
        }
        return false;
    }
    bool double_consonant(long i) const { return i >= 1 && m_b[i] == m_b[i - 1] && cons(i); }
    /// consonant-vowel-consonant ending at i, the last consonant not w, x or y.
    bool cvc(long i) const {
        if (i < 2 || !cons(i) || cons(i - 1) || !cons(i - 2)) return false;
        const wchar_t ch = m_b[i];
        return ch != L'w' && ch != L'x' && ch != L'y';
    }
    bool ends(std::wstring_view s) {
        const auto l = static_cast<long>(s.size());
        if (l > m_k + 1) return false;
        if (std::wstring_view(m_b + m_k - l + 1, static_cast<std::size_t>(l)) != s) return false;
        m_j = m_k - l;
        return true;
    }
    void set_to(std::wstring_view s) {
        std::copy(s.begin(), s.end(), m_b + m_j + 1);
        m_k = m_j + static_cast<long>(s.size());
    }
    void replace_if_m_positive(std::wstring_view s) {
        if (m() > 0) set_to(s);
    }

    struct Rule {
        std::wstring_view suffix;
        std::wstring_view replacement;
    };
    /// The first (= longest, by the order of the tables) matching suffix decides.
    template <std::size_t N>
    void apply_first(const std::array<Rule, N>& rules) {
        for (const auto& r : rules) {
            if (ends(r.suffix)) {
                replace_if_m_positive(r.replacement);
                return;
            }
        }
    }

    // Step 1a (plurals) and 1b (-ed, -ing).
    void step1ab() {
        if (m_b[m_k] == L's') {
            if (ends(L"sses")) {
                m_k -= 2;
            } else if (ends(L"ies")) {
                set_to(L"i");
            } else if (m_b[m_k - 1] != L's') {
                --m_k;
            }
        }
        if (ends(L"eed")) {
            if (m() > 0) --m_k;
        } else if ((ends(L"ed") || ends(L"ing")) && vowel_in_stem()) {
            m_k = m_j;
            if (ends(L"at")) {
                set_to(L"ate");
            } else if (ends(L"bl")) {
                set_to(L"ble");
            } else if (ends(L"iz")) {
                set_to(L"ize");
            } else if (double_consonant(m_k)) {
                const wchar_t ch = m_b[m_k];
                if (ch != L'l' && ch != L's' && ch != L'z') --m_k;
            } else {
                m_j = m_k;
                if (m() == 1 && cvc(m_k)) set_to(L"e");
            }
        }
    }
    // Step 1c: terminal y -> i when the stem has a vowel.
    void step1c() {
        if (ends(L"y") && vowel_in_stem()) m_b[m_k] = L'i';
    }
    // Step 2: double suffixes to single ones (m > 0).
    void step2() {
        static constexpr std::array<Rule, 21> kRules = {{
            {L"ational", L"ate"}, {L"tional", L"tion"}, {L"enci", L"ence"},   {L"anci", L"ance"},
            {L"izer", L"ize"},    {L"bli", L"ble"},     {L"alli", L"al"},     {L"entli", L"ent"},
            {L"eli", L"e"},       {L"ousli", L"ous"},   {L"ization", L"ize"}, {L"ation", L"ate"},
            {L"ator", L"ate"},    {L"alism", L"al"},    {L"iveness", L"ive"}, {L"fulness", L"ful"},
            {L"ousness", L"ous"}, {L"aliti", L"al"},    {L"iviti", L"ive"},   {L"biliti", L"ble"},
            {L"logi", L"log"},
        }};
        if (m_k == 0) return;
        apply_first(kRules);
    }
    // Step 3: -ic-, -full, -ness etc. (m > 0).
    void step3() {
        static constexpr std::array<Rule, 7> kRules = {{
            {L"icate", L"ic"},
            {L"ative", L""},
            {L"alize", L"al"},
            {L"iciti", L"ic"},
            {L"ical", L"ic"},
            {L"ful", L""},
            {L"ness", L""},
        }};
        apply_first(kRules);
    }
    // Step 4: remove -ant, -ence etc. when m > 1.
    void step4() {
        static constexpr std::array<std::wstring_view, 18> kSuffixes = {{
            L"al",
            L"ance",
            L"ence",
            L"er",
            L"ic",
            L"able",
            L"ible",
            L"ant",
            L"ement",
            L"ment",
            L"ent",
            L"ou",
            L"ism",
            L"ate",
            L"iti",
            L"ous",
            L"ive",
            L"ize",
        }};
        if (m_k == 0) return;
        bool found = false;
        if (ends(L"ion")) {
            found = m_j >= 0 && (m_b[m_j] == L's' || m_b[m_j] == L't');
        } else {
            for (auto s : kSuffixes) {
                if (ends(s)) {
                    found = true;
                    break;
                }
            }
        }
        if (found && m() > 1) m_k = m_j;
    }
    // Step 5: remove a final -e (m > 1, or m = 1 and not *o); -ll -> -l when m > 1.
    void step5() {
        m_j = m_k;
        if (m_b[m_k] == L'e') {
            const int a = m();
            if (a > 1 || (a == 1 && !cvc(m_k - 1))) --m_k;
        }
        if (m_b[m_k] == L'l' && double_consonant(m_k) && m() > 1) --m_k;
    }

    wchar_t* m_b;
    long m_k;      // index of the last character
    long m_j = 0;  // end of the stem before the suffix under test
};

}  // namespace

std::size_t porter_stem(wchar_t* word, std::size_t len) noexcept {
    if (len < 3) return len;
    return Porter(word, len).stem();
}

bool is_english_stop_word(const wchar_t* term, std::size_t len) noexcept {
    static constexpr std::array<std::wstring_view, 33> kStopWords = {{
        L"a",    L"an",   L"and",  L"are",  L"as",   L"at",    L"be",   L"but",   L"by",
        L"for",  L"if",   L"in",   L"into", L"is",   L"it",    L"no",   L"not",   L"of",
        L"on",   L"or",   L"such", L"that", L"the",  L"their", L"then", L"there", L"these",
        L"they", L"this", L"to",   L"was",  L"will", L"with",
    }};
    if (len > 5) return false;
    const std::wstring_view t(term, len);
    return std::find(kStopWords.begin(), kStopWords.end(), t) != kStopWords.end();
}

std::size_t english_filter(wchar_t* term, std::size_t len, bool stop, bool stem) noexcept {
    // EnglishPossessiveFilter (before lower-casing: both 's and 'S).
    if (len >= 2 && (term[len - 1] == L's' || term[len - 1] == L'S') &&
        (term[len - 2] == L'\'' || term[len - 2] == 0x2019 || term[len - 2] == 0xFF07)) {
        len -= 2;
    }
    for (std::size_t i = 0; i < len; ++i) {
        term[i] = static_cast<wchar_t>(u_tolower(static_cast<UChar32>(term[i])));
    }
    if (len == 0 || (stop && is_english_stop_word(term, len))) return 0;
    if (stem) len = porter_stem(term, len);
    return len;
}

}  // namespace plumb::index::detail
