// Linguistic complexity (paper 003, FORMULAS.md): lexical indices (Lu 2012), syntactic counts from
// constituency trees (Lu 2010, approximated on Link Grammar trees), normalised score, buckets.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "debias/complexity.hpp"
#include "debias/constituency.hpp"
#include "debias/wordnet_pos.hpp"
#include "plugin/error.hpp"

using namespace plumb::debias;

namespace {
const WordNetLexicon& lexicon() {
    static WordNetLexicon lex;
    return lex;
}
std::size_t idx(const char* name) {
    for (std::size_t i = 0; i < kNumComplexityIndices; ++i) {
        if (std::string(kComplexityIndexNames[i]) == name) return i;
    }
    throw std::runtime_error(name);
}
}  // namespace

TEST(ComplexityTokens, LowercasedWordsWithoutPunctuation) {
    auto t = complexity_tokens("What's the U.S. capital? Well-known, isn't it!");
    std::vector<std::string> want = {"what's", "the", "u", "s", "capital", "well-known", "isn't", "it"};
    EXPECT_EQ(t, want);
    EXPECT_TRUE(complexity_tokens("  ?! ").empty());
}

TEST(LexicalIndices, HandComputed) {
    // "the cat saw the cat": N = 5 tokens, T = 3 types (the, cat, saw).
    std::vector<std::string> tokens = {"the", "cat", "saw", "the", "cat"};
    ComplexityCounts c;
    c.tokens = 5;
    c.types = 3;
    // Lexical words: cat (noun) x2, saw (verb, lemma see) x1 -> N_lex 3, T_lex 2; 1 verb type.
    c.lex_tokens = 3;
    c.lex_types = 2;
    c.verb_tokens = 1;
    c.verb_types = 1;
    c.noun_types = 1;
    std::array<double, kNumComplexityIndices> x{};
    lexical_indices(c, tokens, x);
    EXPECT_NEAR(x[idx("TTR")], 0.6, 1e-12);                    // 3/5
    EXPECT_NEAR(x[idx("CTTR")], 0.9486832980505138, 1e-12);    // 3/sqrt(10)
    EXPECT_NEAR(x[idx("RTTR")], 1.3416407864998738, 1e-12);    // 3/sqrt(5)
    EXPECT_NEAR(x[idx("LogTTR")], 0.6826061944859854, 1e-12);  // ln 3 / ln 5
    EXPECT_NEAR(x[idx("Uber")], 5.070791819101949, 1e-9);      // (ln 5)^2 / (ln 5 - ln 3)
    EXPECT_NEAR(x[idx("MSTTR50")], 0.6, 1e-12);                // N < 50: equals TTR
    EXPECT_NEAR(x[idx("D")], 2.25, 1e-12);                     // 5 * 0.36 / (2 * 0.4)
    EXPECT_NEAR(x[idx("LV")], 2.0 / 3.0, 1e-12);
    EXPECT_NEAR(x[idx("VV1")], 1.0, 1e-12);
    EXPECT_NEAR(x[idx("SVV1")], 1.0, 1e-12);
    EXPECT_NEAR(x[idx("CVV1")], 1.0 / std::sqrt(2.0), 1e-12);
    EXPECT_NEAR(x[idx("VV2")], 1.0 / 3.0, 1e-12);
    EXPECT_NEAR(x[idx("NV")], 1.0 / 3.0, 1e-12);
    EXPECT_EQ(x[idx("AdjV")], 0.0);
    EXPECT_EQ(x[idx("ModV")], 0.0);
}

TEST(LexicalIndices, UndefinedUberAndDAndLongTexts) {
    std::array<double, kNumComplexityIndices> x{};
    ComplexityCounts c;
    c.tokens = 2;
    c.types = 2;
    lexical_indices(c, {"a", "b"}, x);
    EXPECT_TRUE(std::isnan(x[idx("Uber")]));  // T = N
    EXPECT_TRUE(std::isnan(x[idx("D")]));     // TTR = 1
    // MSTTR-50 over 110 tokens: segment 1 = 50 distinct words (TTR 1), segment 2 = "x" x 50
    // (TTR 1/50); the last 10 tokens are dropped: (1 + 0.02) / 2 = 0.51.
    std::vector<std::string> tokens;
    for (int i = 0; i < 50; ++i) tokens.push_back("w" + std::to_string(i));
    for (int i = 0; i < 60; ++i) tokens.push_back("x");
    ComplexityCounts d;
    d.tokens = tokens.size();
    d.types = 51;
    lexical_indices(d, tokens, x);
    EXPECT_NEAR(x[idx("MSTTR50")], 0.51, 1e-12);
}

TEST(SyntacticIndices, RatiosFromCounts) {
    ComplexityCounts c;
    c.tokens = 12;
    c.sentences = 2;
    c.clauses = 3;
    c.tunits = 2;
    c.dep_clauses = 1;
    c.complex_tunits = 1;
    c.verb_phrases = 3;
    c.coord_phrases = 1;
    c.complex_nominals = 2;
    std::array<double, kNumComplexityIndices> x{};
    syntactic_indices(c, x);
    EXPECT_DOUBLE_EQ(x[idx("MLS")], 6.0);
    EXPECT_DOUBLE_EQ(x[idx("MLT")], 6.0);
    EXPECT_DOUBLE_EQ(x[idx("MLC")], 4.0);
    EXPECT_DOUBLE_EQ(x[idx("C/S")], 1.5);
    EXPECT_DOUBLE_EQ(x[idx("VP/T")], 1.5);
    EXPECT_DOUBLE_EQ(x[idx("C/T")], 1.5);
    EXPECT_DOUBLE_EQ(x[idx("DC/C")], 1.0 / 3.0);
    EXPECT_DOUBLE_EQ(x[idx("DC/T")], 0.5);
    EXPECT_DOUBLE_EQ(x[idx("T/S")], 1.0);
    EXPECT_DOUBLE_EQ(x[idx("CT/T")], 0.5);
    EXPECT_DOUBLE_EQ(x[idx("CP/T")], 0.5);
    EXPECT_DOUBLE_EQ(x[idx("CP/C")], 1.0 / 3.0);
    EXPECT_DOUBLE_EQ(x[idx("CN/T")], 1.0);
    EXPECT_DOUBLE_EQ(x[idx("CN/C")], 2.0 / 3.0);
    ComplexityCounts zero;
    syntactic_indices(zero, x);
    EXPECT_EQ(x[idx("MLT")], 0.0);  // zero denominators give 0
}

TEST(ConstituentTree, ParsesLinkGrammarText) {
    auto t = parse_constituent_tree(
        "(S what {is} (NP the capital.s of (NP france[!<NOUN-TO-WORDS>].n)))");
    EXPECT_EQ(t.label, "S");
    ASSERT_EQ(t.children.size(), 3u);
    EXPECT_EQ(t.children[0].word, "what");
    EXPECT_EQ(t.children[1].word, "is");
    EXPECT_EQ(t.children[1].tag, "");
    const auto& np = t.children[2];
    EXPECT_EQ(np.label, "NP");
    EXPECT_EQ(np.children[1].word, "capital");
    EXPECT_EQ(np.children[1].tag, "s");
    EXPECT_EQ(np.children[3].children[0].word, "france");
    EXPECT_EQ(np.children[3].children[0].tag, "n");
    EXPECT_THROW(parse_constituent_tree("(S (NP a)"), plumb::InvalidArgument);
    EXPECT_THROW(parse_constituent_tree("(S a))"), plumb::InvalidArgument);
}

TEST(SyntaxCounts, ClausesTunitsDependentsOnHandBuiltTrees) {
    // Main clause "how long does it take", an infinitival S ("to boil": not a finite clause) and
    // a dependent clause "when you are at high altitude" under SBAR.
    std::vector<ParseNode> one = {parse_constituent_tree(
        "(S (ADVP how long.a does.v (NP it) (VP take.v (S (VP to.r (VP boil.v))) (NP an egg.s)) "
        "(SBAR (WHADVP when) (S (NP you) (VP are.v (PP at high.n altitude.n-u))))))")};
    ComplexityCounts c;
    count_syntax(one, lexicon(), c);
    EXPECT_EQ(c.sentences, 1u);
    EXPECT_EQ(c.clauses, 2u);
    EXPECT_EQ(c.dep_clauses, 1u);
    EXPECT_EQ(c.tunits, 1u);
    EXPECT_EQ(c.complex_tunits, 1u);
    EXPECT_EQ(c.verb_phrases, 2u);  // "to boil" and "are at ..." hang from an S
    EXPECT_EQ(c.coord_phrases, 0u);
    EXPECT_EQ(c.complex_nominals, 0u);

    // Two coordinated independent clauses: two T-units, no dependent clause.
    std::vector<ParseNode> two = {parse_constituent_tree(
        "(S (S (NP the dog.n) (VP barks.v)) and (S (NP the cat.n) (VP sleeps.v)))")};
    ComplexityCounts d;
    count_syntax(two, lexicon(), d);
    EXPECT_EQ(d.clauses, 2u);
    EXPECT_EQ(d.tunits, 2u);
    EXPECT_EQ(d.dep_clauses, 0u);
    EXPECT_EQ(d.complex_tunits, 0u);

    // Coordinated NP of two adjective-modified NPs: one coordinate phrase, two complex nominals.
    std::vector<ParseNode> three = {parse_constituent_tree(
        "(S (NP (NP red.a apples.p) and (NP green.a pears.p)) (VP are.v (ADJP tasty.a)))")};
    ComplexityCounts e;
    count_syntax(three, lexicon(), e);
    EXPECT_EQ(e.coord_phrases, 1u);
    EXPECT_EQ(e.complex_nominals, 2u);
    EXPECT_EQ(e.clauses, 1u);

    // A fragment has no clause but is one T-unit (as L2SCA counts fragments).
    std::vector<ParseNode> frag = {parse_constituent_tree("(S (NP symptoms.n of flu.s))")};
    ComplexityCounts f;
    count_syntax(frag, lexicon(), f);
    EXPECT_EQ(f.clauses, 0u);
    EXPECT_EQ(f.tunits, 1u);
}

TEST(WordNetLexicon, TagsAndLemmas) {
    const auto& lex = lexicon();
    EXPECT_EQ(lex.tag("cat"), Pos::Noun);
    EXPECT_EQ(lex.tag("quickly"), Pos::Adverb);
    EXPECT_EQ(lex.tag("beautiful"), Pos::Adjective);
    EXPECT_EQ(lex.tag("the"), Pos::Function);
    EXPECT_EQ(lex.tag("xqzwv"), Pos::Unknown);
    // verb.exc maps saw -> see, whose verb senses are tagged far more often than noun "saw".
    EXPECT_EQ(lex.tag("saw"), Pos::Verb);
    EXPECT_EQ(lex.lemma("saw", Pos::Verb), "see");
    EXPECT_EQ(lex.lemma("geese", Pos::Noun), "goose");  // noun.exc
    EXPECT_EQ(lex.lemma("cats", Pos::Noun), "cat");     // detachment rule s -> ""
    EXPECT_TRUE(WordNetLexicon::is_auxiliary("would"));
}

TEST(WordNetLexicon, MissingDirectoryIsIoError) {
    EXPECT_THROW(WordNetLexicon("/nonexistent/wordnet"), plumb::IoError);
}

TEST(FinalizeComplexity, NormalisedMeanAndTerciles) {
    // Three queries whose only non-constant index is TTR (0.2, 0.5, 1.0): normalised TTR is
    // 0, 0.375, 1; every other column is constant (contributes 0). Score = normalised / 30.
    std::vector<QueryComplexity> rows(3);
    double ttr[] = {0.2, 0.5, 1.0};
    for (int i = 0; i < 3; ++i) {
        rows[i].qid = "q" + std::to_string(i);
        rows[i].indices.fill(1.0);
        rows[i].indices[idx("TTR")] = ttr[i];
    }
    rows[2].indices[idx("Uber")] = std::nan("");  // undefined -> set maximum (1.0): constant
    finalize_complexity(rows, 3);
    EXPECT_NEAR(rows[0].score, 0.0, 1e-12);
    EXPECT_NEAR(rows[1].score, 0.375 / 30.0, 1e-12);
    EXPECT_NEAR(rows[2].score, 1.0 / 30.0, 1e-12);
    EXPECT_EQ(rows[2].indices[idx("Uber")], 1.0);
    EXPECT_EQ(rows[0].bucket, "easy");
    EXPECT_EQ(rows[1].bucket, "medium");
    EXPECT_EQ(rows[2].bucket, "hard");
    EXPECT_THROW(finalize_complexity(rows, 0), plumb::InvalidArgument);
}

TEST(ComplexityAnalyzer, RealParseOfSimpleQuestion) {
    ComplexityAnalyzer a;
    auto q = a.analyze({"q1", "what is the capital of france"});
    EXPECT_EQ(q.counts.tokens, 6u);
    EXPECT_EQ(q.counts.types, 6u);
    EXPECT_EQ(q.counts.sentences, 1u);
    EXPECT_EQ(q.counts.tunits, 1u);
    EXPECT_EQ(q.counts.clauses, 1u);  // "is" is a finite verb
    EXPECT_EQ(q.counts.dep_clauses, 0u);
    // Lexical words: capital (noun), france (noun): "what", "is", "the", "of" are closed-class.
    EXPECT_EQ(q.counts.lex_tokens, 2u);
    EXPECT_EQ(q.counts.verb_tokens, 0u);
    auto empty = a.analyze({"q2", ""});
    EXPECT_EQ(empty.counts.tokens, 0u);
    EXPECT_EQ(empty.counts.sentences, 0u);
}
