// The "anserini" analyzer's parts: Lucene 9 StandardTokenizer (UAX#29 word breaks), Lucene's
// Porter stemmer and the English filters. Expected values come from the Unicode UAX#29 rules and
// Lucene's StandardTokenizerImpl.jflex grammar (worked out by hand, rule cited), from Porter's
// paper and his published vocabulary/output, and from ICU's own UAX#29 BreakIterator.
#include <gtest/gtest.h>
#include <unicode/brkiter.h>
#include <unicode/unistr.h>

#include <cstdio>
#include <memory>
#include <random>
#include <regex>
#include <string>
#include <utility>
#include <vector>

#include "index/detail/english_filters.hpp"
#include "index/detail/standard_tokenizer.hpp"

namespace d = plumb::index::detail;
using d::TokenType;

namespace {

using Tok = std::pair<std::wstring, TokenType>;
using Toks = std::vector<Tok>;

Toks tokenize(const std::wstring& text, std::size_t max_len = d::kMaxTokenLength) {
    std::vector<d::StdToken> out;
    d::standard_tokenize(text.data(), text.size(), out, max_len);
    Toks r;
    for (const auto& t : out) r.emplace_back(text.substr(t.begin, t.end - t.begin), t.type);
    return r;
}

std::vector<std::wstring> texts(const Toks& toks) {
    std::vector<std::wstring> r;
    for (const auto& t : toks) r.push_back(t.first);
    return r;
}

using W = std::vector<std::wstring>;
constexpr auto A = TokenType::AlphaNum;
constexpr auto N = TokenType::Num;

std::wstring stem(std::wstring w) {
    w.resize(d::porter_stem(w.data(), w.size()));
    return w;
}

}  // namespace

TEST(StandardTokenizer, NumbersWithHyphensAndDots) {
    // '-' (U+002D) is Word_Break=Other: a break on both sides (WB999). '.' is MidNumLet, so
    // digits around it stay together (WB11/WB12); ',' is MidNum (same rules).
    EXPECT_EQ(tokenize(L"11-fold 1.5-fold 3.14"),
              (Toks{{L"11", N}, {L"fold", A}, {L"1.5", N}, {L"fold", A}, {L"3.14", N}}));
    EXPECT_EQ(tokenize(L"1,000,000 192.168.0.1 $3.50."),
              (Toks{{L"1,000,000", N}, {L"192.168.0.1", N}, {L"3.50", N}}));
    // A MidNum needs a digit on both sides; ':' is MidLetter, not MidNum.
    EXPECT_EQ(texts(tokenize(L"2019-2020 10:30 3.")), (W{L"2019", L"2020", L"10", L"30", L"3"}));
    // Letters and digits join (WB9/WB10): one ALPHANUM token.
    EXPECT_EQ(tokenize(L"abc123def x2.5y covid-19"),
              (Toks{{L"abc123def", A}, {L"x2.5y", A}, {L"covid", A}, {L"19", N}}));
}

TEST(StandardTokenizer, UrlsAndEmailAddresses) {
    // ':' is MidLetter but needs a letter after it (WB6/7); '/' and '@' are Other; '.' between
    // letters is MidNumLet (WB6/7).
    EXPECT_EQ(texts(tokenize(L"http://example.com/a-b")), (W{L"http", L"example.com", L"a", L"b"}));
    EXPECT_EQ(texts(tokenize(L"mail john.doe@example.org!")),
              (W{L"mail", L"john.doe", L"example.org"}));
    // ... so a colon between letters does not break (UAX#29's MidLetter, e.g. Swedish "S:t").
    EXPECT_EQ(texts(tokenize(L"a:b S:t")), (W{L"a:b", L"S:t"}));
    // Dotted acronyms keep their inner dots; the final dot has no letter after it.
    EXPECT_EQ(texts(tokenize(L"U.S.A. e.g.")), (W{L"U.S.A", L"e.g"}));
}

TEST(StandardTokenizer, ApostrophesHyphensUnderscores) {
    // ' (Single_Quote) and U+2019 (MidNumLet) between letters: no break (WB6/WB7).
    EXPECT_EQ(texts(tokenize(L"don't John's O'Neil John\u2019s dogs' 'quoted'")),
              (W{L"don't", L"John's", L"O'Neil", L"John\u2019s", L"dogs", L"quoted"}));
    EXPECT_EQ(texts(tokenize(L"well-known e-mail")), (W{L"well", L"known", L"e", L"mail"}));
    // '_' is ExtendNumLet: joins on both sides (WB13a/b), leading and trailing included; a run
    // of underscores alone is no token.
    EXPECT_EQ(texts(tokenize(L"snake_case __init__ a_1 _ ___")),
              (W{L"snake_case", L"__init__", L"a_1"}));
}

TEST(StandardTokenizer, PunctuationAndSpaceOnlyGiveNothing) {
    EXPECT_TRUE(tokenize(L"").empty());
    EXPECT_TRUE(tokenize(L"?!... --- /// \t\r\n \u00A0 \u3000 ()[]{}").empty());
    EXPECT_EQ(texts(tokenize(L"  (word)  ")), (W{L"word"}));
}

TEST(StandardTokenizer, CjkAndOtherScripts) {
    // Han and Hiragana are Word_Break=Other: every character is its own token (WB999), typed
    // IDEOGRAPHIC / HIRAGANA; Katakana runs stay together (WB13); Hangul letters are ALetter.
    EXPECT_EQ(tokenize(L"\u6771\u4EAC\u5927\u5B66"), (Toks{{L"\u6771", TokenType::Ideographic},
                                                           {L"\u4EAC", TokenType::Ideographic},
                                                           {L"\u5927", TokenType::Ideographic},
                                                           {L"\u5B66", TokenType::Ideographic}}));
    EXPECT_EQ(tokenize(L"\u3072\u3089"),
              (Toks{{L"\u3072", TokenType::Hiragana}, {L"\u3089", TokenType::Hiragana}}));
    EXPECT_EQ(tokenize(L"\u30AB\u30BF\u30AB\u30CA"),
              (Toks{{L"\u30AB\u30BF\u30AB\u30CA", TokenType::Katakana}}));
    EXPECT_EQ(tokenize(L"\uD55C\uAD6D\uC5B4"), (Toks{{L"\uD55C\uAD6D\uC5B4", TokenType::Hangul}}));
    // Thai (Line_Break=Complex_Context) is kept as one SOUTHEAST_ASIAN run.
    EXPECT_EQ(tokenize(L"Thai \u0E20\u0E32\u0E29\u0E32\u0E44\u0E17\u0E22"),
              (Toks{{L"Thai", A},
                    {L"\u0E20\u0E32\u0E29\u0E32\u0E44\u0E17\u0E22", TokenType::SoutheastAsian}}));
    // Mixed scripts: Latin with accents, Greek, Cyrillic are ALetter and join; Han splits.
    EXPECT_EQ(texts(tokenize(L"caf\u00E9\u65E5\u672Cabc \u03B1\u03B2\u0436x")),
              (W{L"caf\u00E9", L"\u65E5", L"\u672C", L"abc", L"\u03B1\u03B2\u0436x"}));
    // Hebrew: Hebrew_Letter Double_Quote Hebrew_Letter stays together (WB7b/c), a final
    // Single_Quote after a Hebrew letter too (WB7a).
    EXPECT_EQ(texts(tokenize(L"\u05E6\u05D4\"\u05DC \u05D2' x\"y")),
              (W{L"\u05E6\u05D4\"\u05DC", L"\u05D2'", L"x", L"y"}));
    // Lucene's grammar (not plain UAX#29) closes the group after Hebrew " Hebrew: a second
    // '"' breaks, while a letter or digit may follow directly. A Hebrew letter reached through
    // a Mid* character belongs to a letter group and cannot take a final quote (WB7a).
    EXPECT_EQ(texts(tokenize(L"\u05D0\"\u05D1\"\u05D2 \u05D0\"\u05D1\u05D2\"\u05D3")),
              (W{L"\u05D0\"\u05D1", L"\u05D2", L"\u05D0\"\u05D1\u05D2\"\u05D3"}));
    EXPECT_EQ(texts(tokenize(L"a'\u05D0' a'\u05D0\u05D1'")), (W{L"a'\u05D0", L"a'\u05D0\u05D1'"}));
    // A combining mark extends its base (WB4).
    EXPECT_EQ(texts(tokenize(L"cafe\u0301s")), (W{L"cafe\u0301s"}));
}

TEST(StandardTokenizer, EmojiSequencesAreTokens) {
    // Lucene 9's grammar emits emoji sequences (UTS #51) as <EMOJI> tokens.
    EXPECT_EQ(tokenize(L"I \u2764\uFE0F NY"),
              (Toks{{L"I", A}, {L"\u2764\uFE0F", TokenType::Emoji}, {L"NY", A}}));
    // Modifier sequence, flag (two regional indicators), keycap, ZWJ sequence: one token each.
    EXPECT_EQ(texts(tokenize(L"\U0001F44D\U0001F3FD \U0001F1E9\U0001F1EA 1\uFE0F\u20E3 "
                             L"\U0001F468\u200D\U0001F469\u200D\U0001F467")),
              (W{L"\U0001F44D\U0001F3FD", L"\U0001F1E9\U0001F1EA", L"1\uFE0F\u20E3",
                 L"\U0001F468\u200D\U0001F469\u200D\U0001F467"}));
    // A lone regional indicator is no emoji sequence and no word: dropped.
    EXPECT_TRUE(tokenize(L"\U0001F1E9").empty());
}

TEST(StandardTokenizer, LongTokensAreChoppedAtMaxLength) {
    // Lucene: tokens longer than maxTokenLength (255) are chopped into pieces of that length.
    std::wstring a300(300, L'a');
    EXPECT_EQ(texts(tokenize(a300 + L" b")),
              (W{std::wstring(255, L'a'), std::wstring(45, L'a'), L"b"}));
    // The length counts UTF-16 code units, as in Java: U+1D400 (a letter outside the BMP)
    // takes two, so 255 units hold 127 of them.
    std::wstring bold;
    for (int i = 0; i < 200; ++i) bold.push_back(static_cast<wchar_t>(0x1D400));
    auto t = tokenize(bold);
    ASSERT_EQ(t.size(), 2u);
    EXPECT_EQ(t[0].first.size(), 127u);
    EXPECT_EQ(t[1].first.size(), 73u);
    EXPECT_EQ(texts(tokenize(L"abcdef", 4)), (W{L"abcd", L"ef"}));
}

// ICU's RuleBasedBreakIterator implements UAX#29 independently. On text without the scripts and
// emoji where Lucene's grammar adds its own rules (CJK, Thai, emoji, Hebrew quote quirks), the
// letter/number segments it reports must be exactly our tokens. Not in the alphabet: '@' and
// ':', which ICU's root rules (CLDR) tailor ('@' a letter, ':' not MidLetter; Lucene follows
// plain UAX#29).
TEST(StandardTokenizer, AgreesWithIcuWordBreaksOnRandomText) {
    const std::wstring alphabet = L"abZ\u00E9\u00DF19 .,'\u2019;-_/\u03B1\u0436\u0301!?\"$";
    std::mt19937 rng(7);
    UErrorCode status = U_ZERO_ERROR;
    std::unique_ptr<icu::BreakIterator> bi(
        icu::BreakIterator::createWordInstance(icu::Locale::getRoot(), status));
    ASSERT_TRUE(U_SUCCESS(status));
    int checked = 0;
    for (int round = 0; round < 20000; ++round) {
        std::wstring text;
        const int len = 1 + static_cast<int>(rng() % 40);
        for (int i = 0; i < len; ++i) text.push_back(alphabet[rng() % alphabet.size()]);
        // ICU works on UTF-16; everything here is in the BMP, so offsets agree.
        icu::UnicodeString u;
        for (wchar_t c : text) u.append(static_cast<UChar>(c));
        bi->setText(u);
        std::vector<std::pair<std::size_t, std::size_t>> icu_words;
        for (int32_t start = bi->first(), end = bi->next(); end != icu::BreakIterator::DONE;
             start = end, end = bi->next()) {
            // Segments holding a letter or digit are words. (Not the rule status: ICU tags a run
            // of underscores "__" as a letter word, and "9_" followed by a combining mark as
            // none; Lucene's grammar wants a letter or digit in every token.)
            const std::wstring seg =
                text.substr(static_cast<std::size_t>(start), static_cast<std::size_t>(end - start));
            if (seg.find_first_of(L"abZ\u00E9\u00DF19\u03B1\u0436") != std::wstring::npos) {
                icu_words.emplace_back(start, end);
            }
        }
        std::vector<d::StdToken> ours;
        d::standard_tokenize(text.data(), text.size(), ours);
        std::vector<std::pair<std::size_t, std::size_t>> our_words;
        for (const auto& t : ours) our_words.emplace_back(t.begin, t.end);
        std::string shown;
        for (wchar_t c : text) shown += "U+" + std::to_string(static_cast<unsigned>(c)) + " ";
        ASSERT_EQ(our_words, icu_words) << shown;
        ++checked;
    }
    EXPECT_EQ(checked, 20000);
}

// Lucene's WORD and NUM rules transliterated into std::regex over one symbol per Word_Break
// class (A ALetter, H Hebrew_Letter, N Numeric, K Katakana, E ExtendNumLet, M MidLetter,
// U MidNum, B MidNumLet, S Single_Quote, D Double_Quote, X Extend, O anything else); a token is
// the longest prefix the WORD regex matches in full. This reference shares no code with the
// scanner, and it includes the Hebrew quote rules and the Katakana group.
TEST(StandardTokenizer, AgreesWithLucenesGrammarAsARegex) {
    const std::string x = "X*";
    const std::string ext_num = "(E[EX]*)?";  // {ExtendNumLetEx}*
    const std::string k_group = "KX*(" + ext_num + "KX*)*";
    const std::string h_group = "HX*(SX*|DX*HX*)";
    const std::string n_group = "NX*((" + ext_num + "|[UBS]X*)NX*)*";
    const std::string a_group = "[AH]X*((" + ext_num + "|[MBS]X*)[AH]X*)*";
    const std::string core = "(" + k_group + "|(" + h_group + "|" + n_group + "|" + a_group + ")+)";
    const std::regex word(ext_num + core + "(E[EX]*" + core + ")*" + ext_num);
    const std::regex num(ext_num + n_group + ext_num);
    const std::regex katakana("(KX*)+");
    // One character per class.
    const std::wstring chars = L"a\u05D01\u30AB_:,.'\"\u0301 -";
    const std::string syms = "AHNKEMUBSDXOO";
    std::mt19937 rng(11);
    std::size_t tokens = 0, hebrew_quote = 0;
    for (int round = 0; round < 1500; ++round) {
        const std::size_t len = 1 + rng() % 14;
        std::wstring text;
        std::string sym;
        for (std::size_t i = 0; i < len; ++i) {
            const std::size_t c = rng() % chars.size();
            text.push_back(chars[c]);
            sym.push_back(syms[c]);
        }
        Toks want;
        for (std::size_t p = 0; p < len;) {
            std::size_t best = 0;
            for (std::size_t l = len - p; l > 0 && best == 0; --l) {
                if (std::regex_match(sym.substr(p, l), word)) best = l;
            }
            if (best == 0) {
                ++p;
                continue;
            }
            const std::string t = sym.substr(p, best);
            const TokenType type = std::regex_match(t, num)        ? TokenType::Num
                                   : std::regex_match(t, katakana) ? TokenType::Katakana
                                                                   : TokenType::AlphaNum;
            want.emplace_back(text.substr(p, best), type);
            if (t.find_first_of("SD") != std::string::npos && t.find('H') != std::string::npos) {
                ++hebrew_quote;
            }
            p += best;
        }
        ASSERT_EQ(tokenize(text), want) << sym;
        tokens += want.size();
    }
    EXPECT_GT(tokens, 2000u);  // the comparison is not vacuous
    EXPECT_GT(hebrew_quote, 50u);
    std::printf("%zu tokens, %zu with Hebrew and quotes\n", tokens, hebrew_quote);
}

TEST(PorterStemmer, PaperAndReferenceVocabulary) {
    // Porter (1980), step 1 examples, run through all steps (Porter's published voc/output).
    const std::vector<std::pair<std::wstring, std::wstring>> cases = {
        {L"caresses", L"caress"},
        {L"ponies", L"poni"},
        {L"ties", L"ti"},
        {L"caress", L"caress"},
        {L"cats", L"cat"},
        {L"feed", L"feed"},
        {L"agreed", L"agre"},
        {L"plastered", L"plaster"},
        {L"bled", L"bled"},
        {L"motoring", L"motor"},
        {L"sing", L"sing"},
        {L"conflated", L"conflat"},
        {L"troubled", L"troubl"},
        {L"sized", L"size"},
        {L"hopping", L"hop"},
        {L"tanned", L"tan"},
        {L"falling", L"fall"},
        {L"hissing", L"hiss"},
        {L"fizzed", L"fizz"},
        {L"failing", L"fail"},
        {L"filing", L"file"},
        {L"happy", L"happi"},
        {L"sky", L"sky"},
        {L"running", L"run"},
        {L"mating", L"mate"},
        {L"relational", L"relat"},
        {L"conditional", L"condit"},
        {L"rational", L"ration"},
        {L"generalization", L"gener"},
        {L"oscillators", L"oscil"},
        {L"sensitivity", L"sensit"},
        {L"hopefulness", L"hope"},
        {L"effective", L"effect"},
        {L"adoption", L"adopt"},
        {L"generous", L"gener"},
        {L"triplicate", L"triplic"},
        {L"increase", L"increas"},
        {L"controlling", L"control"},
    };
    for (const auto& [word, want] : cases) EXPECT_EQ(stem(word), want) << "stem of " << word.size();
    // Lucene's departure: "logi" -> "log" (archeology -> archeologi -> archeolog).
    EXPECT_EQ(stem(L"archeology"), L"archeolog");
    // One- and two-letter words are left alone; so is what no rule matches.
    EXPECT_EQ(stem(L"is"), L"is");
    EXPECT_EQ(stem(L"ed"), L"ed");
    EXPECT_EQ(stem(L"don't"), L"don't");
}

TEST(EnglishFilters, PossessiveLowercaseStop) {
    auto run = [](std::wstring t, bool stop, bool stem) {
        t.resize(d::english_filter(t.data(), t.size(), stop, stem));
        return t;
    };
    // EnglishPossessiveFilter: ' U+2019 U+FF07 followed by s or S, before lower-casing.
    EXPECT_EQ(run(L"John's", false, false), L"john");
    EXPECT_EQ(run(L"JOHN'S", false, false), L"john");
    EXPECT_EQ(run(L"John\u2019s", false, false), L"john");
    EXPECT_EQ(run(L"John\uFF07s", false, false), L"john");
    EXPECT_EQ(run(L"O'Neil", false, false), L"o'neil");
    EXPECT_EQ(run(L"\u00C9COLE", false, false), L"\u00E9cole");
    // Stop words (Lucene's 33): removed only when asked.
    EXPECT_EQ(run(L"The", true, false), L"");
    EXPECT_EQ(run(L"The", false, false), L"the");
    EXPECT_TRUE(d::is_english_stop_word(L"their", 5));
    EXPECT_FALSE(d::is_english_stop_word(L"thei", 4));
    EXPECT_FALSE(d::is_english_stop_word(L"we", 2));
    EXPECT_EQ(run(L"Running", true, true), L"run");
}

// Inputs and token streams from Lucene's own TestStandardAnalyzer (Lucene 9: the behaviour
// Anserini's regressions rely on).
TEST(StandardTokenizer, LucenesOwnExpectations) {
    // testMid: consecutive Mid* characters split; '_' (ExtendNumLet) joins.
    const std::vector<std::pair<std::wstring, W>> mid = {
        {L"A:B", {L"A:B"}},
        {L"A::B", {L"A", L"B"}},
        {L"1.2", {L"1.2"}},
        {L"A.B", {L"A.B"}},
        {L"1..2", {L"1", L"2"}},
        {L"A..B", {L"A", L"B"}},
        {L"1,2", {L"1,2"}},
        {L"1,,2", {L"1", L"2"}},
        {L"A.:B", {L"A", L"B"}},
        {L"A:.B", {L"A", L"B"}},
        {L"1,.2", {L"1", L"2"}},
        {L"1.,2", {L"1", L"2"}},
        {L"A:B_A:B", {L"A:B_A:B"}},
        {L"A:B_A::B", {L"A:B_A", L"B"}},
        {L"1.2_1.2", {L"1.2_1.2"}},
        {L"A.B_A.B", {L"A.B_A.B"}},
        {L"1.2_1..2", {L"1.2_1", L"2"}},
        {L"A.B_A..B", {L"A.B_A", L"B"}},
        {L"1,2_1,2", {L"1,2_1,2"}},
        {L"1,2_1,,2", {L"1,2_1", L"2"}},
        {L"C_A.:B", {L"C_A", L"B"}},
        {L"C_A:.B", {L"C_A", L"B"}},
        {L"3_1,.2", {L"3_1", L"2"}},
        {L"3_1.,2", {L"3_1", L"2"}},
        // *SA tests
        {L"B2B 2B", {L"B2B", L"2B"}},
        {L"some-dashed-phrase", {L"some", L"dashed", L"phrase"}},
        {L"dogs,chase,cats", {L"dogs", L"chase", L"cats"}},
        {L"ac/dc", {L"ac", L"dc"}},
        {L"O'Reilly you're she's O'Reilly's", {L"O'Reilly", L"you're", L"she's", L"O'Reilly's"}},
        {L"21.35 R2D2 C3PO 216.239.63.104", {L"21.35", L"R2D2", L"C3PO", L"216.239.63.104"}},
        {L"foo      bar .  FOO <> BAR", {L"foo", L"bar", L"FOO", L"BAR"}},
        {L"\"QUOTED\" word", {L"QUOTED", L"word"}},
        // testLUCENE1545: a combining mark stays in its word
        {L"mo\u0364chte", {L"mo\u0364chte"}},
        // testChinese: one token per ideograph, fullwidth digits and letters are words
        {L"\u6211\u662F\u4E2D\u56FD\u4EBA\u3002 \uFF11\uFF12\uFF13\uFF14 "
         L"\uFF34\uFF45\uFF53\uFF54\uFF53 ",
         {L"\u6211", L"\u662F", L"\u4E2D", L"\u56FD", L"\u4EBA", L"\uFF11\uFF12\uFF13\uFF14",
          L"\uFF34\uFF45\uFF53\uFF54\uFF53"}},
        // testThai: runs of Thai kept whole, Thai digits a number
        {L"\u0E01\u0E32\u0E23\u0E17\u0E35\u0E48\u0E44\u0E14\u0E49. \u0E41\u0E25\u0E49\u0E27? "
         L"\u0E51\u0E52\u0E53\u0E54",
         {L"\u0E01\u0E32\u0E23\u0E17\u0E35\u0E48\u0E44\u0E14\u0E49", L"\u0E41\u0E25\u0E49\u0E27",
          L"\u0E51\u0E52\u0E53\u0E54"}},
        // testCombiningMarks: a voiced-sound mark (U+3099) extends kana, Han and Hangul
        {L"\u3055\u3099", {L"\u3055\u3099"}},
        {L"\u58F9\u3099", {L"\u58F9\u3099"}},
        {L"\uC544\u3099", {L"\uC544\u3099"}},
        // testEmpty
        {L".", {}},
        {L" ", {}},
    };
    for (const auto& [text, want] : mid) EXPECT_EQ(texts(tokenize(text)), want) << text.size();

    // testTypes, testJapanese, testKorean, testSupplementary
    EXPECT_EQ(tokenize(L"David has 5000 bones"),
              (Toks{{L"David", A}, {L"has", A}, {L"5000", N}, {L"bones", A}}));
    EXPECT_EQ(tokenize(L"\u4EEE\u540D\u9063\u3044 \u30AB\u30BF\u30AB\u30CA"),
              (Toks{{L"\u4EEE", TokenType::Ideographic},
                    {L"\u540D", TokenType::Ideographic},
                    {L"\u9063", TokenType::Ideographic},
                    {L"\u3044", TokenType::Hiragana},
                    {L"\u30AB\u30BF\u30AB\u30CA", TokenType::Katakana}}));
    EXPECT_EQ(tokenize(L"\uD6C8\uBBFC\uC815\uC74C"),
              (Toks{{L"\uD6C8\uBBFC\uC815\uC74C", TokenType::Hangul}}));
    EXPECT_EQ(tokenize(L"\U00029B05\u8271"),
              (Toks{{L"\U00029B05", TokenType::Ideographic}, {L"\u8271", TokenType::Ideographic}}));

    // Emoji: simple, ZWJ sequence, ZWJ sequence with a skin-tone modifier, flags, keycaps,
    // text presentation selectors, tag sequences, emoji next to Latin and Han.
    const auto E = TokenType::Emoji;
    EXPECT_EQ(tokenize(L"\U0001F4A9 \U0001F4A9\U0001F4A9"),
              (Toks{{L"\U0001F4A9", E}, {L"\U0001F4A9", E}, {L"\U0001F4A9", E}}));
    EXPECT_EQ(tokenize(L"\U0001F469\u200D\u2764\uFE0F\u200D\U0001F469"),
              (Toks{{L"\U0001F469\u200D\u2764\uFE0F\u200D\U0001F469", E}}));
    EXPECT_EQ(tokenize(L"\U0001F468\U0001F3FC\u200D\u2695\uFE0F"),
              (Toks{{L"\U0001F468\U0001F3FC\u200D\u2695\uFE0F", E}}));
    EXPECT_EQ(tokenize(L"\U0001F1FA\U0001F1F8\U0001F1FA\U0001F1F8"),
              (Toks{{L"\U0001F1FA\U0001F1F8", E}, {L"\U0001F1FA\U0001F1F8", E}}));
    EXPECT_EQ(tokenize(L"#\uFE0F\u20E3"), (Toks{{L"#\uFE0F\u20E3", E}}));
    EXPECT_EQ(tokenize(L"3\uFE0F\u20E3"), (Toks{{L"3\uFE0F\u20E3", E}}));
    EXPECT_TRUE(tokenize(L"#\uFE0E").empty());
    EXPECT_EQ(tokenize(L"3\uFE0E"), (Toks{{L"3\uFE0E", N}}));
    EXPECT_EQ(tokenize(L"\u2B55\uFE0E"), (Toks{{L"\u2B55", E}}));
    EXPECT_EQ(tokenize(L"\u2B55\uFE0E\u200D\u2B55\uFE0E"),
              (Toks{{L"\u2B55", E}, {L"\u200D\u2B55", E}}));
    const std::wstring england =
        L"\U0001F3F4\U000E0067\U000E0062\U000E0065\U000E006E"
        L"\U000E0067\U000E007F";
    EXPECT_EQ(tokenize(england), (Toks{{england, E}}));
    EXPECT_EQ(tokenize(L"poo\U0001F4A9poo"), (Toks{{L"poo", A}, {L"\U0001F4A9", E}, {L"poo", A}}));
    EXPECT_EQ(tokenize(L"\U0001F4A9\u4E2D\u570B\U0001F4A9"),
              (Toks{{L"\U0001F4A9", E},
                    {L"\u4E2D", TokenType::Ideographic},
                    {L"\u570B", TokenType::Ideographic},
                    {L"\U0001F4A9", E}}));
}
