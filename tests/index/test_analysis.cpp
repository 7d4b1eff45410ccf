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

TEST(Analysis, ConcurrentCallsGiveIdenticalResults) {
    Analyzer a;
    const std::string text = "Running dogs chased the quick brown foxes over lazy hills";
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
