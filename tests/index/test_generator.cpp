// Synthetic corpus generator: determinism, counts, Zipf shape, qrels consistency, formats, CLI.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include "index/corpus.hpp"
#include "index/generator.hpp"
#include "plugin/error.hpp"
#include "plugin/text_io.hpp"
#include "tests/support/scratch_dir.hpp"
#include "tests/support/text_lines.hpp"

namespace fs = std::filesystem;
using plumb::index::CorpusGenerator;
using plumb::index::GeneratorConfig;
using plumb::test::lines_of;
using plumb::test::words_of;

namespace {

const plumb::test::ScratchDir kScratch("plumb_test_gen_");

fs::path temp_dir(const std::string& name) { return kScratch.fresh(name); }

GeneratorConfig small_config(std::uint64_t seed = 7) {
    GeneratorConfig c;
    c.passages = 2000;
    c.queries = 40;
    c.vocab = 5000;
    c.seed = seed;
    return c;
}

}  // namespace

TEST(GeneratorUniform, RangesAndErrors) {
    std::mt19937_64 rng(1);
    for (int i = 0; i < 10000; ++i) {
        double u = plumb::index::uniform01(rng);
        ASSERT_GE(u, 0.0);
        ASSERT_LT(u, 1.0);
        ASSERT_LT(plumb::index::uniform_below(rng, 7), 7u);
    }
    EXPECT_THROW(plumb::index::uniform_below(rng, 0), plumb::InvalidArgument);
    // Roughly uniform: each of 4 values gets 25% +- 2% of 40,000 draws (sd ~0.2%).
    std::vector<int> counts(4, 0);
    for (int i = 0; i < 40000; ++i) ++counts[plumb::index::uniform_below(rng, 4)];
    for (int c : counts) EXPECT_NEAR(c / 40000.0, 0.25, 0.02);
}

TEST(GeneratorZipf, ProbabilitiesMatchTheDefinition) {
    // n = 3, s = 1: P(r) = (1/r) / (1 + 1/2 + 1/3) = (6/11) / r.
    plumb::index::ZipfSampler z(3, 1.0);
    EXPECT_NEAR(z.probability(1), 6.0 / 11.0, 1e-12);
    EXPECT_NEAR(z.probability(2), 3.0 / 11.0, 1e-12);
    EXPECT_NEAR(z.probability(3), 2.0 / 11.0, 1e-12);
    // n = 2, s = 2: P(1) = 1 / (1 + 1/4) = 0.8.
    plumb::index::ZipfSampler z2(2, 2.0);
    EXPECT_NEAR(z2.probability(1), 0.8, 1e-12);
    EXPECT_THROW(z.probability(4), plumb::InvalidArgument);
    EXPECT_THROW(plumb::index::ZipfSampler(0, 1.0), plumb::InvalidArgument);
    EXPECT_THROW(plumb::index::ZipfSampler(10, 0.0), plumb::InvalidArgument);
}

TEST(GeneratorZipf, SampledFrequenciesFollowRankShape) {
    // s = 1: f(1)/f(2) = 2 and f(1)/f(3) = 3. With 300,000 draws over 1,000 ranks,
    // P(1) = 1/H(1000) ~ 0.134, so f(1) ~ 40,000 and the ratios have sd ~1%.
    plumb::index::ZipfSampler z(1000, 1.0);
    std::mt19937_64 rng(123);
    std::vector<double> f(1001, 0);
    for (int i = 0; i < 300000; ++i) {
        auto r = z(rng);
        ASSERT_GE(r, 1u);
        ASSERT_LE(r, 1000u);
        ++f[r];
    }
    EXPECT_NEAR(f[1] / f[2], 2.0, 0.1);
    EXPECT_NEAR(f[1] / f[3], 3.0, 0.15);
    EXPECT_NEAR(f[1] / 300000.0, 1.0 / 7.4854708606, 0.005);  // H(1000) = 7.48547...
}

TEST(CorpusGenerator, ConfigValidation) {
    auto c = small_config();
    c.passages = 0;
    EXPECT_THROW(CorpusGenerator{c}, plumb::InvalidArgument);
    c = small_config();
    c.vocab = 5;
    EXPECT_THROW(CorpusGenerator{c}, plumb::InvalidArgument);
    c = small_config();
    c.min_words = 10;
    c.max_words = 5;
    EXPECT_THROW(CorpusGenerator{c}, plumb::InvalidArgument);
    c = small_config();
    c.query_noise = 1.5;
    EXPECT_THROW(CorpusGenerator{c}, plumb::InvalidArgument);
}

TEST(CorpusGenerator, TinyCollectionsTerminate) {
    // More queries than passages, and a vocabulary barely larger than the topic words.
    GeneratorConfig c;
    c.passages = 1;
    c.queries = 3;
    c.vocab = 10;
    CorpusGenerator g(c);
    auto qrels = g.qrels();
    ASSERT_EQ(qrels.size(), 3u);  // one judged passage (the only one) per query
    for (const auto& j : qrels) {
        EXPECT_EQ(j.docid, "0");
        EXPECT_EQ(j.grade, 3);
    }
    EXPECT_EQ(g.topics().size(), 3u);
    EXPECT_FALSE(g.passage(0).text.empty());
}

TEST(CorpusGenerator, VocabularyIsDistinctAndStemmerSafe) {
    auto c = small_config();
    c.vocab = 20000;
    CorpusGenerator g(c);
    std::set<std::string> seen;
    const std::string vowels = "aiou";
    for (std::uint32_t r = 1; r <= c.vocab; ++r) {
        const std::string& w = g.word(r);
        ASSERT_TRUE(seen.insert(w).second) << "duplicate word " << w;
        ASSERT_GE(w.size(), 5u);
        // (consonant vowel)+ final consonant: no letter a stemmer rule or stop word needs.
        for (std::size_t k = 0; k < w.size(); ++k) {
            bool vowel = vowels.find(w[k]) != std::string::npos;
            ASSERT_EQ(vowel, k % 2 == 1) << w;
            ASSERT_EQ(std::string("escyxq").find(w[k]), std::string::npos) << w;
        }
        ASSERT_EQ(std::string("lrn").find(w.back()), std::string::npos) << w;
    }
    // Frequent words are short.
    EXPECT_EQ(g.word(1).size(), 5u);
    EXPECT_EQ(g.word(20000).size(), 7u);
    EXPECT_THROW(g.word(0), plumb::InvalidArgument);
    EXPECT_THROW(g.word(20001), plumb::InvalidArgument);
}

TEST(CorpusGenerator, SameSeedSameBytesDifferentSeedDifferent) {
    auto a = temp_dir("a"), b = temp_dir("b"), c = temp_dir("c");
    CorpusGenerator(small_config(7)).write(a);
    CorpusGenerator(small_config(7)).write(b);
    CorpusGenerator(small_config(8)).write(c);
    for (const char* f : {"corpus.tsv", "topics.tsv", "qrels.txt"}) {
        EXPECT_EQ(plumb::read_file(a / f), plumb::read_file(b / f)) << f;
        EXPECT_NE(plumb::read_file(a / f), plumb::read_file(c / f)) << f;
    }
    // Passages are random-access: passage(i) equals line i of the file.
    CorpusGenerator g(small_config(7));
    auto lines = lines_of(a / "corpus.tsv");
    for (std::uint64_t i : {0ull, 1ull, 999ull, 1999ull}) {
        auto d = g.passage(i);
        EXPECT_EQ(lines[i], d.id + "\t" + d.text);
    }
    EXPECT_THROW(g.passage(2000), plumb::InvalidArgument);
}

TEST(CorpusGenerator, CountsAndQrelsReferenceExistingIds) {
    auto dir = temp_dir("counts");
    auto config = small_config();
    std::uint64_t last_done = 0, last_total = 0;
    auto result = CorpusGenerator(config).write(dir, [&](std::uint64_t d, std::uint64_t t) {
        EXPECT_GE(d, last_done);
        last_done = d;
        last_total = t;
    });
    EXPECT_EQ(last_done, 2000u);
    EXPECT_EQ(last_total, 2000u);
    EXPECT_EQ(result.passages, 2000u);
    EXPECT_EQ(result.queries, 40u);
    EXPECT_EQ(result.corpus, dir / "corpus.tsv");
    EXPECT_EQ(result.corpus_bytes, fs::file_size(dir / "corpus.tsv"));

    // Read everything back through the readers.
    plumb::index::CorpusReader reader(dir / "corpus.tsv", {});
    plumb::index::Document d;
    std::unordered_map<std::string, std::string> text;
    std::uint64_t n = 0;
    while (reader.next(d)) {
        EXPECT_EQ(d.id, std::to_string(n));
        auto words = words_of(d.text);
        EXPECT_GE(words.size(), config.min_words);
        text[d.id] = d.text;
        ++n;
    }
    EXPECT_EQ(n, 2000u);
    auto topics = plumb::index::read_topics(dir / "topics.tsv");
    ASSERT_EQ(topics.size(), 40u);
    std::map<std::string, std::string> query;
    for (const auto& q : topics) query[q.id] = q.text;

    auto qrels = lines_of(dir / "qrels.txt");
    EXPECT_EQ(qrels.size(), result.judgments);
    std::map<std::string, int> grade3;
    std::set<std::pair<std::string, std::string>> pairs;
    for (const auto& line : qrels) {
        auto f = words_of(line);
        ASSERT_EQ(f.size(), 4u) << line;
        EXPECT_TRUE(query.count(f[0])) << line;
        EXPECT_EQ(f[1], "0");
        EXPECT_TRUE(text.count(f[2])) << line;
        int g = std::stoi(f[3]);
        EXPECT_GE(g, 1);
        EXPECT_LE(g, 3);
        EXPECT_TRUE(pairs.emplace(f[0], f[2]).second) << "duplicate judgment " << line;
        if (g == 3) {
            ++grade3[f[0]];
            // Every query word except at most one noise word occurs in the grade-3 passage.
            auto qw = words_of(query[f[0]]);
            auto pw = words_of(text[f[2]]);
            std::size_t found = 0;
            for (const auto& w : qw) found += std::find(pw.begin(), pw.end(), w) != pw.end();
            EXPECT_GE(found + 1, qw.size()) << "query " << f[0];
            EXPECT_GE(found, config.min_query_terms) << "query " << f[0];
        }
    }
    EXPECT_EQ(grade3.size(), 40u);  // every query has exactly one grade-3 passage
    for (const auto& [q, count] : grade3) EXPECT_EQ(count, 1) << q;
}

TEST(CorpusGenerator, CorpusWordFrequenciesAreZipfian) {
    auto config = small_config();
    config.passages = 20000;  // ~1.1 M tokens
    config.queries = 10;
    CorpusGenerator g(config);
    std::unordered_map<std::string, double> freq;
    for (std::uint64_t i = 0; i < config.passages; ++i)
        for (const auto& w : words_of(g.passage(i).text)) ++freq[w];
    std::vector<std::pair<double, std::string>> by_freq;
    for (const auto& [w, f] : freq) by_freq.emplace_back(f, w);
    std::sort(by_freq.rbegin(), by_freq.rend());
    EXPECT_EQ(by_freq[0].second, g.word(1));
    EXPECT_EQ(by_freq[1].second, g.word(2));
    EXPECT_NEAR(by_freq[0].first / by_freq[1].first, 2.0, 0.1);
    EXPECT_NEAR(by_freq[0].first / freq[g.word(10)], 10.0, 1.0);
}

TEST(CorpusGenerator, JsonlCorpusReadsBackLikeTsv) {
    auto config = small_config();
    config.format = plumb::index::CorpusFormat::Jsonl;
    auto dir = temp_dir("jsonl");
    auto result = CorpusGenerator(config).write(dir);
    EXPECT_EQ(result.corpus, dir / "corpus.jsonl");
    CorpusGenerator g(small_config());
    plumb::index::CorpusReaderOptions opt;
    opt.format = plumb::index::CorpusFormat::Jsonl;
    plumb::index::CorpusReader reader(result.corpus, opt);
    plumb::index::Document d;
    std::uint64_t n = 0;
    while (reader.next(d)) {
        auto expected = g.passage(n);
        ASSERT_EQ(d.id, expected.id);
        ASSERT_EQ(d.text, expected.text);
        ++n;
    }
    EXPECT_EQ(n, config.passages);
}

TEST(CorpusGenerator, CancelledWriteLeavesNothing) {
    auto dir = temp_dir("cancel");
    plumb::CancelToken cancel;
    cancel.request();
    auto result = CorpusGenerator(small_config()).write(dir, {}, &cancel);
    EXPECT_LT(result.passages, 2000u);
    EXPECT_FALSE(fs::exists(dir / "corpus.tsv"));
    EXPECT_FALSE(fs::exists(dir / "topics.tsv"));
    EXPECT_FALSE(fs::exists(dir / "qrels.txt"));
    EXPECT_TRUE(fs::is_empty(dir));  // no temporary files left behind
}

namespace {
/// An extension in the way the planted-bias generators use the hooks.
class TaggedQueries : public CorpusGenerator {
public:
    using CorpusGenerator::CorpusGenerator;

protected:
    std::string query_text(const QueryPlan& q, std::mt19937_64& rng) const override {
        return "tag " + CorpusGenerator::query_text(q, rng);
    }
    std::vector<std::uint32_t> passage_words(std::uint64_t i, std::mt19937_64& rng) const override {
        auto words = CorpusGenerator::passage_words(i, rng);
        words.insert(words.begin(), 1);  // one more rank-1 word in every passage
        return words;
    }
};
}  // namespace

TEST(CorpusGenerator, HooksCanBeOverridden) {
    TaggedQueries g(small_config());
    CorpusGenerator base(small_config());
    auto topics = g.topics();
    auto base_topics = base.topics();
    ASSERT_EQ(topics.size(), base_topics.size());
    for (std::size_t q = 0; q < topics.size(); ++q)
        EXPECT_EQ(topics[q].text, "tag " + base_topics[q].text);
    for (std::uint64_t i = 0; i < 20; ++i) {  // same words plus one rank-1 word
        auto a = words_of(g.passage(i).text), b = words_of(base.passage(i).text);
        b.push_back(g.word(1));
        std::sort(a.begin(), a.end());
        std::sort(b.begin(), b.end());
        EXPECT_EQ(a, b) << "passage " << i;
    }
    EXPECT_EQ(g.qrels().size(), base.qrels().size());
}

TEST(GenerateCli, WritesTheThreeFiles) {
    auto dir = temp_dir("cli");
    std::string cmd = std::string(PLUMB_CLI_PATH) + " generate --output " + dir.string() +
                      " --passages 300 --queries 7 --seed 3 --vocab 2000 --quiet 2>/dev/null";
    ASSERT_EQ(std::system(cmd.c_str()), 0);
    EXPECT_EQ(lines_of(dir / "corpus.tsv").size(), 300u);
    EXPECT_EQ(lines_of(dir / "topics.tsv").size(), 7u);
    EXPECT_GE(lines_of(dir / "qrels.txt").size(), 7u);
    // Same as the library with the same configuration.
    GeneratorConfig c;
    c.passages = 300;
    c.queries = 7;
    c.seed = 3;
    c.vocab = 2000;
    auto lib = temp_dir("cli_lib");
    CorpusGenerator(c).write(lib);
    EXPECT_EQ(plumb::read_file(dir / "corpus.tsv"), plumb::read_file(lib / "corpus.tsv"));

    auto jdir = temp_dir("cli_jsonl");
    std::string jcmd = std::string(PLUMB_CLI_PATH) + " generate -o " + jdir.string() +
                       " --passages 10 --queries 2 --format jsonl --quiet 2>/dev/null";
    ASSERT_EQ(std::system(jcmd.c_str()), 0);
    EXPECT_TRUE(fs::exists(jdir / "corpus.jsonl"));

    std::string bad = std::string(PLUMB_CLI_PATH) + " generate -o " + temp_dir("bad").string() +
                      " --passages 0 --quiet 2>/dev/null";
    EXPECT_NE(std::system(bad.c_str()), 0);
}
