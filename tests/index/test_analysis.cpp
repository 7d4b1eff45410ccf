#include <gtest/gtest.h>

#include <thread>

#include "index/analysis.hpp"
#include "plugin/error.hpp"

using plumb::index::AnalysisOptions;
using plumb::index::Analyzer;
using V = std::vector<std::string>;

namespace {
AnalysisOptions opts(bool stem, bool stop) {
    AnalysisOptions o;
    o.stem = stem;
    o.stop = stop;
    return o;
}
}  // namespace

TEST(Analysis, DefaultLowercasesRemovesStopWordsAndStems) {
    Analyzer a;
    // "The", "are" and "and" are Lucene English stop words; Porter: running->run,
    // dogs->dog, cats->cat, jumping->jump, ponies->poni.
    EXPECT_EQ(a.analyze("The running DOGS and Cats are jumping ponies"),
              (V{"run", "dog", "cat", "jump", "poni"}));
}

TEST(Analysis, NoStemKeepsWordForms) {
    Analyzer a(opts(false, true));
    EXPECT_EQ(a.analyze("The running DOGS"), (V{"running", "dogs"}));
}

TEST(Analysis, NoStopKeepsStopWords) {
    Analyzer a(opts(true, false));
    EXPECT_EQ(a.analyze("The running dogs"), (V{"the", "run", "dog"}));
    Analyzer plain(opts(false, false));
    EXPECT_EQ(plain.analyze("To be or not to be"), (V{"to", "be", "or", "not", "to", "be"}));
}

TEST(Analysis, QuerySyntaxCharactersAreJustText) {
    Analyzer a(opts(false, false));
    // No query parser: operators and punctuation are plain text for the tokenizer.
    EXPECT_EQ(a.analyze("c++? AND \"x\" : y"), (V{"c", "and", "x", "y"}));
    EXPECT_EQ(a.analyze("\"unbalanced (quote [ ] { } ~ ^ * ! - +"), (V{"unbalanced", "quote"}));
    EXPECT_TRUE(a.analyze("").empty());
    EXPECT_TRUE(a.analyze("?!:\"()").empty());
    EXPECT_TRUE(Analyzer().analyze("the and of").empty());  // all stop words
}

TEST(Analysis, PossessiveAndPunctuation) {
    Analyzer a(opts(false, false));
    // StandardFilter drops a trailing 's; hyphens and slashes split words.
    EXPECT_EQ(a.analyze("John's well-known e-mail/web"),
              (V{"john", "well", "known", "e", "mail", "web"}));
}

TEST(Analysis, UnicodeTextAndInvalidUtf8) {
    Analyzer a(opts(false, false));
    EXPECT_EQ(a.analyze("Caf\xC3\xA9 NA\xC3\x8FVE"), (V{"caf\xC3\xA9", "na\xC3\xAFve"}));
    // Lucene 3's StandardTokenizer emits one token per CJK ideograph.
    EXPECT_EQ(a.analyze("\xE6\x9D\xB1\xE4\xBA\xAC"), (V{"\xE6\x9D\xB1", "\xE4\xBA\xAC"}));
    // Invalid UTF-8 is decoded leniently, never throws.
    EXPECT_NO_THROW(a.analyze("ab\xFF\xC3 cd"));
    auto t = a.analyze("ok \xFF done");
    ASSERT_GE(t.size(), 2u);
    EXPECT_EQ(t.front(), "ok");
    EXPECT_EQ(t.back(), "done");
}

TEST(Analysis, NumbersAreTokens) {
    Analyzer a;
    EXPECT_EQ(a.analyze("In 2019, 3.5 million"), (V{"2019", "3.5", "million"}));
}

TEST(Analysis, OptionNamesRoundTrip) {
    for (bool stem : {true, false}) {
        for (bool stop : {true, false}) {
            auto o = opts(stem, stop);
            EXPECT_EQ(AnalysisOptions::from_name(o.name()), o);
        }
    }
    EXPECT_EQ(AnalysisOptions{}.name(), "standard+lowercase+stop+porter");
    EXPECT_THROW(AnalysisOptions::from_name("whitespace"), plumb::IndexError);
}

namespace {
/// Four threads analyse `text` 500 times each: every result equals the single-threaded one.
void expect_concurrent_calls_agree(const Analyzer& a, const std::string& text) {
    const auto expected = a.analyze(text);
    std::vector<std::thread> threads;
    std::atomic<int> mismatches{0};
    for (int t = 0; t < 4; ++t) {
        threads.emplace_back([&] {
            for (int i = 0; i < 500; ++i) {
                if (a.analyze(text) != expected) ++mismatches;
            }
        });
    }
    for (auto& th : threads) th.join();
    EXPECT_EQ(mismatches.load(), 0);
}
}  // namespace

TEST(Analysis, ConcurrentCallsGiveIdenticalResults) {
    expect_concurrent_calls_agree(Analyzer{},
                                  "Running dogs chased the quick brown foxes over lazy hills");
}

// ---- The "anserini" analyzer: Anserini's DefaultEnglishAnalyzer on Lucene 9 ----------------
// Expected token streams follow Lucene 9's StandardTokenizer (UAX#29 word breaks),
// EnglishPossessiveFilter, LowerCaseFilter, the 33 English stop words and Porter's algorithm.

namespace {
AnalysisOptions anserini(bool stem = true, bool stop = true) {
    AnalysisOptions o = opts(stem, stop);
    o.analyzer = plumb::index::AnalyzerKind::Anserini;
    return o;
}
}  // namespace

TEST(AnseriniAnalysis, SplitsHyphenatedNumbersLikeLucene9) {
    Analyzer a(anserini());
    // '-' breaks (UAX#29 WB999), '.' between digits does not (WB11/12); "an", "of" and "a" are
    // stop words; Porter: increase -> increas.
    EXPECT_EQ(a.analyze("An 11-fold increase of a 1.5-fold dose, pi = 3.14"),
              (V{"11", "fold", "increas", "1.5", "fold", "dose", "pi", "3.14"}));
    // The lucene3 analyzer keeps them whole (Lucene 3's classic grammar).
    EXPECT_EQ(Analyzer(opts(false, false)).analyze("11-fold"), (V{"11-fold"}));
}

TEST(AnseriniAnalysis, UrlsEmailsApostrophes) {
    Analyzer a(anserini(false, true));
    // ':' '/' '@' '-' break; "a" is a stop word.
    EXPECT_EQ(a.analyze("http://example.com/a-b"), (V{"http", "example.com", "b"}));
    EXPECT_EQ(a.analyze("john.doe@example.org"), (V{"john.doe", "example.org"}));
    // EnglishPossessiveFilter drops 's / \u2019s (either case); other apostrophes stay inside.
    EXPECT_EQ(a.analyze("John's JOHN'S John\xE2\x80\x99s don't O'Neil"),
              (V{"john", "john", "john", "don't", "o'neil"}));
    EXPECT_EQ(a.analyze("well-known e-mail snake_case U.S.A."),
              (V{"well", "known", "e", "mail", "snake_case", "u.s.a"}));
}

TEST(AnseriniAnalysis, StopWordsAndPorterStems) {
    Analyzer a(anserini());
    EXPECT_EQ(a.analyze("The running DOGS and Cats are jumping ponies"),
              (V{"run", "dog", "cat", "jump", "poni"}));
    EXPECT_EQ(a.analyze("this is not a test"), (V{"test"}));
    EXPECT_EQ(a.analyze("caresses relational generalization mating"),
              (V{"caress", "relat", "gener", "mate"}));
    EXPECT_EQ(Analyzer(anserini(false, false)).analyze("To be or NOT"),
              (V{"to", "be", "or", "not"}));
}

TEST(AnseriniAnalysis, CjkMixedScriptsAndOddInput) {
    Analyzer a(anserini(false, false));
    // Each Han ideograph is a token; Latin runs around it are words.
    EXPECT_EQ(a.analyze("caf\xC3\xA9\xE6\x9D\xB1\xE4\xBA\xAC"
                        "ABC"),
              (V{"caf\xC3\xA9", "\xE6\x9D\xB1", "\xE4\xBA\xAC", "abc"}));
    EXPECT_TRUE(a.analyze("").empty());
    EXPECT_TRUE(a.analyze("?!:\"() -- //").empty());
    EXPECT_NO_THROW(a.analyze("ab\xFF\xC3 cd"));  // invalid UTF-8 decodes leniently
    EXPECT_EQ(a.analyze("ok \xFF done"), (V{"ok", "done"}));
}

TEST(AnseriniAnalysis, NamesRoundTripAndDifferFromLucene3) {
    for (bool stem : {true, false}) {
        for (bool stop : {true, false}) {
            auto o = anserini(stem, stop);
            EXPECT_EQ(AnalysisOptions::from_name(o.name()), o);
            EXPECT_NE(o.name(), opts(stem, stop).name());
        }
    }
    EXPECT_EQ(anserini().name(), "uax29+possessive+lowercase+stop+porter");
    EXPECT_EQ(plumb::index::parse_analyzer_kind("anserini"), plumb::index::AnalyzerKind::Anserini);
    EXPECT_EQ(plumb::index::parse_analyzer_kind("lucene3"), plumb::index::AnalyzerKind::Lucene3);
    try {
        plumb::index::parse_analyzer_kind("lucene9");
        FAIL();
    } catch (const plumb::ConfigError& e) {
        EXPECT_NE(std::string(e.what()).find("lucene3, anserini"), std::string::npos);
    }
}

TEST(AnseriniAnalysis, ConcurrentCallsGiveIdenticalResults) {
    expect_concurrent_calls_agree(
        Analyzer(anserini()), "Running dogs' 11-fold \xE6\x9D\xB1\xE4\xBA\xAC chases, 3.5 foxes");
}
