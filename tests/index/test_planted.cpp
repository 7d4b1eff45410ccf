// Planted-bias corpus: determinism, consumers' readers accept every file, realised answer
// positions, hard negatives, gender skew, neutral queries, splits, survivorship rows, CLI; the
// opt-in causes (gendered queries, gendered candidates, complexity levels): off = unchanged
// files, shares and skews realised, labels readable, each cause measured with plumb's tools.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <initializer_list>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <unordered_set>
#include <vector>

#include "debias/answer_positions.hpp"
#include "debias/balance.hpp"
#include "debias/complexity.hpp"
#include "debias/liwc.hpp"
#include "debias/rotation.hpp"
#include "eval/bias_metrics.hpp"
#include "eval/distribution.hpp"
#include "eval/gender.hpp"
#include "eval/qrels.hpp"
#include "eval/subsets.hpp"
#include "index/corpus.hpp"
#include "index/document_sources.hpp"
#include "index/planted.hpp"
#include "plugin/error.hpp"
#include "plugin/text_io.hpp"
#include "rerank/train_data.hpp"
#include "tests/support/scratch_dir.hpp"
#include "tests/support/text_lines.hpp"
#include "tests/support/tiny_index.hpp"

namespace fs = std::filesystem;
using plumb::index::PassageRole;
using plumb::index::PlantedConfig;
using plumb::index::PlantedGenerator;
using plumb::test::lines_of;
using plumb::test::words_of;

namespace {

const plumb::test::ScratchDir kScratch("plumb_test_planted_");

fs::path temp_dir(const std::string& name) { return kScratch.fresh(name); }

std::vector<std::string> fields_of(const std::string& line, char sep = '\t') {
    std::vector<std::string> out;
    std::string cur;
    for (char ch : line) {
        if (ch == sep) {
            out.push_back(cur);
            cur.clear();
        } else {
            cur += ch;
        }
    }
    out.push_back(cur);
    return out;
}

// First index of `needle` in `hay` as contiguous tokens, or -1.
long find_tokens(const std::vector<std::string>& hay, const std::vector<std::string>& needle) {
    if (needle.empty() || needle.size() > hay.size()) return -1;
    auto it = std::search(hay.begin(), hay.end(), needle.begin(), needle.end());
    return it == hay.end() ? -1 : static_cast<long>(it - hay.begin());
}

/// The tiny preset with a smaller vocabulary (faster), written once for the whole suite.
PlantedConfig tiny_config(std::uint64_t seed = 7) {
    PlantedConfig c = plumb::index::planted_preset("tiny");
    c.base.vocab = 5000;
    c.base.seed = seed;
    return c;
}

/// `plumb generate --planted --size tiny --vocab 5000 --seed 7 ARGS` writes `files` byte-identical
/// to the library's write() with `config` (tiny_config(7) plus the same options).
void expect_cli_writes_as_library(const std::string& name, const std::string& args,
                                  const PlantedConfig& config,
                                  std::initializer_list<const char*> files) {
    auto dir = temp_dir(name);
    std::string cmd = std::string(PLUMB_CLI_PATH) + " generate --planted --size tiny -o " +
                      dir.string() + " --vocab 5000 --seed 7 " + args + " --quiet 2>/dev/null";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    auto lib = temp_dir(name + "_lib");
    PlantedGenerator(config).write(lib);
    for (const char* f : files)
        EXPECT_EQ(plumb::read_file(dir / f), plumb::read_file(lib / f)) << name << ": " << f;
}

/// Many relevant passages and no hard negatives, for the distribution tests.
PlantedConfig stats_config(plumb::index::AnswerPositions positions) {
    PlantedConfig c;
    c.base.passages = 8000;
    c.base.vocab = 5000;
    c.train_queries = 2000;
    c.dev_queries = 0;
    c.test_queries = 0;
    c.hard_negatives = 1;
    c.max_partial = 1;
    c.answer_positions = positions;
    c.triples_per_query = 0;
    return c;
}

class Planted : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        s_dir = new fs::path(temp_dir("tiny"));
        s_gen = new PlantedGenerator(tiny_config());
        auto r = s_gen->write(*s_dir);
        ASSERT_TRUE(r.complete);
    }
    static void TearDownTestSuite() {
        delete s_gen;
        delete s_dir;
    }
    static fs::path* s_dir;
    static PlantedGenerator* s_gen;
};
fs::path* Planted::s_dir = nullptr;
PlantedGenerator* Planted::s_gen = nullptr;

const char* const kFiles[] = {"corpus.tsv",        "topics.tsv",
                              "topics.train.tsv",  "topics.dev.tsv",
                              "topics.test.tsv",   "answers.tsv",
                              "query_gender.tsv",  "query_types.tsv",
                              "qrels.txt",         "qrels.train.txt",
                              "qrels.dev.txt",     "qrels.test.txt",
                              "triples.train.tsv", "triples.train.ids.tsv",
                              "gender_words.txt",  "shown_ranks.tsv",
                              "manifest.json"};

}  // namespace

TEST(PlantedConfig, ValidationAndPresets) {
    EXPECT_NO_THROW(PlantedConfig{}.validate());
    for (const char* size : {"tiny", "small", "medium", "large"})
        EXPECT_NO_THROW(plumb::index::planted_preset(size).validate()) << size;
    EXPECT_EQ(plumb::index::planted_preset("tiny").base.passages, 2000u);
    EXPECT_EQ(plumb::index::planted_preset("small").test_queries, 200u);
    EXPECT_THROW(plumb::index::planted_preset("huge"), plumb::InvalidArgument);

    auto bad = [](auto edit) {
        PlantedConfig c = plumb::index::planted_preset("tiny");
        edit(c);
        EXPECT_THROW(PlantedGenerator{c}, plumb::InvalidArgument);
    };
    // 90 queries x (1 + 1 + 4) = 540 planted passages need more than 540 passages.
    bad([](PlantedConfig& c) { c.base.passages = 540; });
    bad([](PlantedConfig& c) { c.gender_skew = 1.5; });
    bad([](PlantedConfig& c) { c.hard_negative_share = -0.1; });
    bad([](PlantedConfig& c) { c.min_query_terms = 1; });
    bad([](PlantedConfig& c) { c.answer_words = 0; });
    bad([](PlantedConfig& c) { c.train_queries = c.dev_queries = c.test_queries = 0; });
    bad([](PlantedConfig& c) { c.early_scale = 0.0; });
    PlantedConfig ok = plumb::index::planted_preset("tiny");
    ok.base.passages = 541;
    EXPECT_NO_THROW(PlantedGenerator{ok});

    EXPECT_EQ(plumb::index::parse_answer_positions("uniform"),
              plumb::index::AnswerPositions::Uniform);
    EXPECT_THROW(plumb::index::parse_answer_positions("late"), plumb::InvalidArgument);
    EXPECT_EQ(plumb::index::parse_distractor_positions("late"),
              plumb::index::DistractorPositions::Late);
    EXPECT_THROW(plumb::index::parse_distractor_positions("x"), plumb::InvalidArgument);
}

TEST(PlantedGenderWords, NeverPseudoWordsAndBalanced) {
    // generator.cpp's pseudo-words: (consonant vowel){2,} final consonant over these letters.
    const std::regex pseudo("^([bdfghjklmnprtvwz][aiou]){2,}[bdgkmptz]$");
    std::size_t f = 0, m = 0;
    std::set<std::string> seen;
    for (const auto& [w, g] : PlantedGenerator::gender_words()) {
        EXPECT_FALSE(std::regex_match(w, pseudo)) << w;
        EXPECT_TRUE(seen.insert(w).second) << "duplicate " << w;
        (g == 'f' ? f : m) += 1;
    }
    EXPECT_EQ(f, m);
    EXPECT_GE(f, 20u);
}

TEST_F(Planted, WritesEveryFileAndTheManifestListsThem) {
    for (const char* f : kFiles) EXPECT_TRUE(fs::exists(*s_dir / f)) << f;
    auto m = nlohmann::json::parse(plumb::read_file(*s_dir / "manifest.json"));
    std::set<std::string> listed(m["files"].begin(), m["files"].end());
    EXPECT_EQ(listed, std::set<std::string>(std::begin(kFiles), std::end(kFiles)));
    EXPECT_EQ(m["counts"]["passages"], 2000);
    EXPECT_EQ(m["counts"]["queries"], 90);
    EXPECT_EQ(m["parameters"]["answer_positions"], "early");
    EXPECT_EQ(m["realised"]["answer_start_relative"]["counts"].size(), 10u);
}

TEST(PlantedDeterminism, SameSeedSameBytesOtherSeedDiffers) {
    auto a = temp_dir("det_a"), b = temp_dir("det_b"), c = temp_dir("det_c");
    PlantedGenerator(tiny_config(11)).write(a);
    PlantedGenerator(tiny_config(11)).write(b);
    PlantedGenerator(tiny_config(12)).write(c);
    for (const char* f : kFiles) EXPECT_EQ(plumb::read_file(a / f), plumb::read_file(b / f)) << f;
    for (const char* f : {"corpus.tsv", "topics.tsv", "qrels.txt", "triples.train.tsv"})
        EXPECT_NE(plumb::read_file(a / f), plumb::read_file(c / f)) << f;
    // Passages on demand equal the written corpus, in any order.
    PlantedGenerator g(tiny_config(11));
    auto lines = lines_of(a / "corpus.tsv");
    for (std::uint64_t i : {1999u, 0u, 777u})
        EXPECT_EQ(lines[i], std::to_string(i) + "\t" + g.passage(i).doc.text);
}

TEST_F(Planted, TopicsQrelsAndSplitsParseAndAreDisjoint) {
    auto all = plumb::index::read_topics(*s_dir / "topics.tsv");
    ASSERT_EQ(all.size(), 90u);
    std::map<std::string, std::set<std::string>> split;
    for (const char* s : {"train", "dev", "test"})
        for (const auto& q :
             plumb::index::read_topics(*s_dir / ("topics." + std::string(s) + ".tsv")))
            split[s].insert(q.id);
    EXPECT_EQ(split["train"].size(), 60u);
    EXPECT_EQ(split["dev"].size(), 10u);
    EXPECT_EQ(split["test"].size(), 20u);
    std::set<std::string> uni;
    for (auto& [s, ids] : split) uni.insert(ids.begin(), ids.end());
    EXPECT_EQ(uni.size(), 90u);  // disjoint: 60 + 10 + 20

    auto qrels = plumb::eval::Qrels::load(*s_dir / "qrels.txt");
    EXPECT_EQ(qrels.num_queries(), 90u);  // every query has its answer passage
    std::size_t per_split = 0;
    for (const char* s : {"train", "dev", "test"}) {
        auto q = plumb::eval::Qrels::load(*s_dir / ("qrels." + std::string(s) + ".txt"));
        for (const auto& qid : q.qids()) EXPECT_TRUE(split[s].count(qid)) << s << " " << qid;
        per_split += q.num_judgements();
    }
    EXPECT_EQ(per_split, qrels.num_judgements());
    // Grades: exactly one grade-2 passage per query, the rest grade 1.
    std::map<std::string, int> twos;
    for (const auto& line : lines_of(*s_dir / "qrels.txt")) {
        auto f = words_of(line);
        ASSERT_EQ(f.size(), 4u);
        EXPECT_TRUE(f[3] == "1" || f[3] == "2");
        twos[f[0]] += f[3] == "2";
    }
    for (auto& [q, n] : twos) EXPECT_EQ(n, 1) << q;
}

TEST_F(Planted, QueriesAreGenderNeutralAndVaried) {
    auto words = plumb::eval::GenderWordList::load(*s_dir / "gender_words.txt");
    EXPECT_EQ(words.size(), PlantedGenerator::gender_words().size());
    EXPECT_EQ(words.female_count(), words.male_count());
    auto topics = plumb::index::read_topics(*s_dir / "topics.tsv");
    std::size_t shortest = 100, longest = 0;
    for (const auto& q : topics) {
        auto c = plumb::eval::count_gender_words(q.text, words);
        EXPECT_EQ(c.female + c.male, 0u) << q.text;
        auto n = words_of(q.text).size();
        shortest = std::min(shortest, n);
        longest = std::max(longest, n);
    }
    EXPECT_LE(shortest, 3u);  // keyword queries: 2-5 words
    EXPECT_GE(longest, 7u);   // questions: prefix + terms + connectors
    auto labels = plumb::eval::read_query_attributes(*s_dir / "query_gender.tsv");
    ASSERT_EQ(labels.rows.size(), 90u);
    for (auto& [q, l] : labels.rows) EXPECT_EQ(l, "n");
    auto types = plumb::eval::read_query_attributes(*s_dir / "query_types.tsv");
    std::set<std::string> kinds;
    for (auto& [q, t] : types.rows) kinds.insert(t);
    EXPECT_TRUE(kinds.count("keyword"));
    EXPECT_GE(kinds.size(), 4u);
}

TEST_F(Planted, RelevantPassagesCarryAnswersAndHardNegativesNever) {
    std::size_t hard = 0;
    for (std::uint32_t q = 0; q < 90; ++q) {
        auto answer = s_gen->answer_span(q);
        auto terms = s_gen->query_terms(q);
        ASSERT_EQ(answer.size(), 3u);
        const auto& rel = s_gen->relevant_passages(q);
        for (std::size_t k = 0; k < rel.size(); ++k) {
            auto p = s_gen->passage(rel[k]);
            auto toks = words_of(p.doc.text);
            EXPECT_EQ(find_tokens(toks, answer), p.answer_start) << p.doc.id;
            std::size_t matched = 0;
            for (const auto& t : terms) matched += std::count(toks.begin(), toks.end(), t) > 0;
            if (k == 0) {
                EXPECT_EQ(p.role, PassageRole::Answer);
                EXPECT_EQ(matched, terms.size());
            } else {
                EXPECT_EQ(p.role, PassageRole::Partial);
                EXPECT_GE(matched, 1u);
            }
        }
        for (auto h : s_gen->hard_negative_passages(q)) {
            auto p = s_gen->passage(h);
            EXPECT_EQ(p.role, PassageRole::HardNegative);
            auto toks = words_of(p.doc.text);
            EXPECT_EQ(find_tokens(toks, answer), -1) << "hard negative " << h;
            std::size_t matched = 0, answer_words = 0;
            for (const auto& t : terms) matched += std::count(toks.begin(), toks.end(), t) > 0;
            for (const auto& a : answer)
                answer_words += std::count(toks.begin(), toks.end(), a) > 0;
            EXPECT_GE(matched, 1u);       // query-like words ...
            EXPECT_GE(answer_words, 1u);  // ... answer-like words ...
            ++hard;
        }
    }
    EXPECT_EQ(hard, 90u * 4u);
}

TEST_F(Planted, TriplesParseWithTheTrainDataReaders) {
    auto text_lines = lines_of(*s_dir / "triples.train.tsv");
    auto id_lines = lines_of(*s_dir / "triples.train.ids.tsv");
    ASSERT_EQ(text_lines.size(), 600u);  // 60 train queries x 10
    ASSERT_EQ(id_lines.size(), 600u);

    auto src = plumb::rerank::open_text_triples(*s_dir / "triples.train.tsv");
    std::size_t n = 0;
    while (auto ex = src->next()) {
        EXPECT_EQ(ex->negatives.size(), 1u);
        ++n;
    }
    EXPECT_EQ(n, 600u);

    auto docs = plumb::index::open_document_source({}, (*s_dir / "corpus.tsv").string());
    auto ids = plumb::rerank::open_id_triples(*s_dir / "triples.train.ids.tsv",
                                              *s_dir / "topics.train.tsv", docs);
    auto qrels = plumb::eval::Qrels::load(*s_dir / "qrels.train.txt");
    n = 0;
    std::size_t hard = 0;
    while (auto ex = ids->next()) {
        auto f = fields_of(text_lines[n]);
        ASSERT_EQ(f.size(), 3u);
        EXPECT_EQ(ex->query, f[0]);  // text and id triples match line by line
        EXPECT_EQ(ex->positive, f[1]);
        EXPECT_EQ(ex->negatives[0], f[2]);
        const auto* judged = qrels.find(ex->qid);
        ASSERT_NE(judged, nullptr) << ex->qid;
        EXPECT_NE(judged->find(ex->positive_id), nullptr) << ex->qid << " " << ex->positive_id;
        EXPECT_EQ(judged->find(ex->negative_ids[0]), nullptr);
        auto p = s_gen->passage(std::stoull(ex->negative_ids[0]));
        hard += p.role == PassageRole::HardNegative && std::to_string(p.query + 1) == ex->qid;
        ++n;
    }
    EXPECT_EQ(n, 600u);
    // hard_negative_share 0.5 (binomial, n = 600: sd 0.02).
    EXPECT_NEAR(static_cast<double>(hard) / 600.0, 0.5, 0.1);
}

TEST_F(Planted, ShownRankingsParseAndFollowThePlan) {
    auto shown = plumb::eval::read_shown_ranks(*s_dir / "shown_ranks.tsv");
    ASSERT_EQ(shown.queries.size(), 90u);
    EXPECT_EQ(shown.max_rank, 10u);
    auto qrels = plumb::eval::Qrels::load(*s_dir / "qrels.txt");
    std::size_t unanswered = 0;
    for (const auto& q : shown.queries) {
        ASSERT_EQ(q.passages.size(), 10u);
        std::size_t selected = 0;
        for (std::size_t r = 0; r < q.passages.size(); ++r) {
            EXPECT_EQ(q.passages[r].rank, r + 1);
            if (q.passages[r].selected) {
                ++selected;
                const long* grade = qrels.find(q.qid)->find(q.passages[r].docid);
                ASSERT_NE(grade, nullptr);
                EXPECT_EQ(*grade, 2);  // the answer passage
            }
        }
        EXPECT_LE(selected, 1u);
        if (!q.first_selected) {
            ++unanswered;
            // Unanswered: no relevant passage was shown.
            for (const auto& p : q.passages) EXPECT_EQ(qrels.find(q.qid)->find(p.docid), nullptr);
        }
    }
    // unanswered = 0.3 (binomial, n = 90: sd 0.048).
    EXPECT_NEAR(static_cast<double>(unanswered) / 90.0, 0.3, 0.15);
}

TEST_F(Planted, AnswerPositionAuditAndRotationAcceptTheOutput) {
    plumb::debias::AnswerPositionOptions o;
    o.answers = *s_dir / "answers.tsv";
    o.qrels = *s_dir / "qrels.txt";
    o.corpus = *s_dir / "corpus.tsv";
    auto qrels = plumb::eval::Qrels::load(o.qrels);
    auto before = plumb::debias::audit_answer_positions(o);
    EXPECT_EQ(before.answers, 90u);
    EXPECT_EQ(before.before.found, qrels.num_judgements());  // every relevant passage
    EXPECT_EQ(before.before.not_found, 0u);
    auto props = before.before.proportions();
    EXPECT_GT(props[0] + props[1] + props[2], 0.75);  // early-skewed

    // Rotate the judged passages, then map the spans with the offsets.
    std::unordered_set<std::string> judged;
    for (const auto& line : lines_of(o.qrels)) judged.insert(words_of(line)[2]);
    plumb::debias::RotateCorpusOptions ro;
    ro.seed = 5;
    ro.only_ids = judged;
    ro.offsets = *s_dir / "offsets.tsv";
    auto rotated = *s_dir / "rotated.tsv";
    auto st = plumb::debias::rotate_corpus(o.corpus, rotated, ro);
    EXPECT_EQ(st.rotated, judged.size());
    o.offsets = ro.offsets;
    auto after = plumb::debias::audit_answer_positions(o);
    ASSERT_TRUE(after.after.has_value());
    EXPECT_EQ(after.after->found, qrels.num_judgements());
    auto pa = after.after->proportions();
    EXPECT_LT(pa[0] + pa[1] + pa[2], 0.6);  // spread out (uniform: ~0.3)

    // Triples rotate too (exactly three fields per line).
    auto rs = plumb::debias::rotate_triples(*s_dir / "triples.train.tsv",
                                            *s_dir / "triples.rotated.tsv", 5);
    EXPECT_EQ(rs.passages, 1200u);
}

TEST(PlantedEdge, TinyVocabularyKeepsTheInvariants) {
    // 20 words: background words often equal answer words, so chance completions of a span in
    // a hard negative happen and must be broken; term and answer ranges must be widened.
    PlantedConfig c;
    c.base.passages = 600;
    c.base.vocab = 20;
    c.train_queries = 40;
    c.dev_queries = 5;
    c.test_queries = 5;
    c.answer_words = 2;
    PlantedGenerator g(c);
    for (std::uint32_t q = 0; q < 50; ++q) {
        auto answer = g.answer_span(q);
        auto terms = g.query_terms(q);
        std::set<std::string> distinct(answer.begin(), answer.end());
        distinct.insert(terms.begin(), terms.end());
        EXPECT_EQ(distinct.size(), answer.size() + terms.size());  // answer and terms disjoint
        for (auto p : g.relevant_passages(q)) {
            auto pp = g.passage(p);
            auto toks = words_of(pp.doc.text);
            ASSERT_GE(pp.answer_start, 0);
            EXPECT_TRUE(std::equal(answer.begin(), answer.end(), toks.begin() + pp.answer_start));
        }
        for (auto h : g.hard_negative_passages(q))
            EXPECT_EQ(find_tokens(words_of(g.passage(h).doc.text), answer), -1);
    }
}

TEST(PlantedDistribution, EarlyAndUniformAnswerStarts) {
    // Hand-derived: truncated exponential with scale 0.15 has mean ≈ 0.15 and ~86 % of its mass
    // below 0.3; the relative start start/n ≈ x minus the block offset (a few tokens of ~60).
    // Uniform: mean ≈ 0.5 minus the same offset (≈ 0.02); ≈ 0.3 + 0.02 below 0.3.
    for (auto mode :
         {plumb::index::AnswerPositions::Early, plumb::index::AnswerPositions::Uniform}) {
        PlantedGenerator g(stats_config(mode));
        double sum = 0.0, hard_sum = 0.0;
        std::size_t n = 0, below = 0, hard_n = 0;
        for (std::uint32_t q = 0; q < 2000; ++q) {
            for (auto p : g.relevant_passages(q)) {
                auto pp = g.passage(p);
                double x = static_cast<double>(pp.answer_start) / pp.tokens;
                sum += x;
                below += x < 0.3;
                ++n;
            }
            auto h = g.passage(g.hard_negative_passages(q)[0]);
            hard_sum += static_cast<double>(h.block_start) / h.tokens;
            ++hard_n;
        }
        ASSERT_GE(n, 2000u);
        const double mean = sum / n, share = static_cast<double>(below) / n;
        const double hard_mean = hard_sum / hard_n;
        if (mode == plumb::index::AnswerPositions::Early) {
            EXPECT_LT(mean, 0.25);
            EXPECT_GT(share, 0.75);
            EXPECT_GT(hard_mean, 0.65);  // opposite placement: late
        } else {
            EXPECT_NEAR(mean, 0.48, 0.05);
            EXPECT_NEAR(share, 0.32, 0.05);
            EXPECT_NEAR(hard_mean, 0.5, 0.06);  // opposite of uniform: uniform
        }
    }
}

TEST(PlantedDistribution, GenderSkewRealised) {
    for (double skew : {0.8, 0.2}) {
        PlantedConfig c = stats_config(plumb::index::AnswerPositions::Early);
        c.gender_share = 0.5;
        c.gender_skew = skew;
        PlantedGenerator g(c);
        plumb::eval::GenderWordList words;
        for (const auto& [w, l] : PlantedGenerator::gender_words())
            words.add(w, l == 'f' ? plumb::eval::Gender::Female : plumb::eval::Gender::Male);
        std::unordered_set<std::uint64_t> relevant;
        for (std::uint32_t q = 0; q < 2000; ++q)
            for (auto p : g.relevant_passages(q)) relevant.insert(p);
        std::size_t rel_m = 0, rel_g = 0, oth_m = 0, oth_g = 0, gendered = 0, mixed = 0;
        for (std::uint64_t i = 0; i < c.base.passages; ++i) {
            auto p = g.passage(i);
            auto cnt = plumb::eval::count_gender_words(p.doc.text, words);
            if (cnt.female && cnt.male) ++mixed;
            if (!cnt.female && !cnt.male) continue;
            ++gendered;
            const bool male = cnt.male > 0;
            if (relevant.count(i))
                ++rel_g, rel_m += male;
            else
                ++oth_g, oth_m += male;
        }
        EXPECT_EQ(mixed, 0u);  // one gender per passage
        // ~1500 gendered relevant passages: sd of the share ≈ 0.01.
        EXPECT_NEAR(static_cast<double>(rel_m) / rel_g, skew, 0.05);
        EXPECT_NEAR(static_cast<double>(oth_m) / oth_g, 0.5, 0.05);
        EXPECT_NEAR(static_cast<double>(gendered) / c.base.passages, 0.5, 0.03);
    }
}

TEST(PlantedWrite, TinyIsFastJsonlReadsAndCancelLeavesNothing) {
    // CPU time of this process (wall time depends on the machine's load).
    const std::clock_t t0 = std::clock();
    auto dir = temp_dir("timed");
    PlantedGenerator(plumb::index::planted_preset("tiny")).write(dir);
    const double secs = static_cast<double>(std::clock() - t0) / CLOCKS_PER_SEC;
    EXPECT_LT(secs, 2.0);

    PlantedConfig c = tiny_config();
    c.base.format = plumb::index::CorpusFormat::Jsonl;
    auto jdir = temp_dir("jsonl");
    PlantedGenerator(c).write(jdir);
    plumb::index::CorpusReader reader(jdir / "corpus.jsonl", {plumb::index::CorpusFormat::Jsonl});
    plumb::index::Document d;
    std::size_t n = 0;
    while (reader.next(d)) ++n;
    EXPECT_EQ(n, 2000u);

    auto cdir = temp_dir("cancelled");
    plumb::CancelToken token;
    token.request();
    auto r = PlantedGenerator(tiny_config()).write(cdir, {}, &token);
    EXPECT_FALSE(r.complete);
    EXPECT_FALSE(fs::exists(cdir / "corpus.tsv"));
    EXPECT_FALSE(fs::exists(cdir / "manifest.json"));
}

TEST(PlantedCli, GenerateDashDashPlanted) {
    auto dir = temp_dir("cli");
    std::string cmd = std::string(PLUMB_CLI_PATH) + " generate --planted --size tiny -o " +
                      dir.string() + " --vocab 5000 --seed 7 --quiet 2>/dev/null";
    ASSERT_EQ(std::system(cmd.c_str()), 0);
    auto lib = temp_dir("cli_lib");
    PlantedGenerator(tiny_config(7)).write(lib);
    for (const char* f : kFiles)
        EXPECT_EQ(plumb::read_file(dir / f), plumb::read_file(lib / f)) << f;

    auto udir = temp_dir("cli_uniform");
    std::string ucmd = std::string(PLUMB_CLI_PATH) + " generate --planted --size tiny -o " +
                       udir.string() +
                       " --passages 1000 --train-queries 20 --dev-queries 5 --test-queries 5"
                       " --answer-positions uniform --gender-skew 0.5 --quiet 2>/dev/null";
    ASSERT_EQ(std::system(ucmd.c_str()), 0);
    EXPECT_EQ(lines_of(udir / "corpus.tsv").size(), 1000u);
    EXPECT_EQ(lines_of(udir / "topics.train.tsv").size(), 20u);
    auto m = nlohmann::json::parse(plumb::read_file(udir / "manifest.json"));
    EXPECT_EQ(m["parameters"]["answer_positions"], "uniform");

    auto fails = [](const std::string& args) {
        std::string c = std::string(PLUMB_CLI_PATH) + " generate -o " +
                        temp_dir("cli_bad").string() + " " + args + " --quiet 2>/dev/null";
        return std::system(c.c_str()) != 0;
    };
    EXPECT_TRUE(fails("--answer-positions early"));              // needs --planted
    EXPECT_TRUE(fails("--planted --queries 5"));                 // base-only option
    EXPECT_TRUE(fails("--planted --gender-skew 2"));             // out of range
    EXPECT_TRUE(fails("--planted --size tiny --passages 100"));  // fewer than planted
}

// ---------------------------------------------------------------------------------------------
// Opt-in causes: gendered queries (001), gendered candidates (004), complexity levels (003)
// ---------------------------------------------------------------------------------------------

namespace {

const char* const kDataFiles[] = {
    "corpus.tsv",      "topics.tsv", "answers.tsv",       "query_gender.tsv",
    "query_types.tsv", "qrels.txt",  "triples.train.tsv", "triples.train.ids.tsv",
    "shown_ranks.tsv"};

plumb::eval::GenderWordList planted_word_list() {
    plumb::eval::GenderWordList words;
    for (const auto& [w, l] : PlantedGenerator::gender_words())
        words.add(w, l == 'f' ? plumb::eval::Gender::Female : plumb::eval::Gender::Male);
    return words;
}

}  // namespace

TEST(PlantedCauses, OffByDefaultAndTheirParametersAloneChangeNoDataFile) {
    // The causes' own parameters (skew, clause words) do nothing while the causes are off.
    auto a = temp_dir("causes_off_a"), b = temp_dir("causes_off_b");
    PlantedGenerator(tiny_config(5)).write(a);
    PlantedConfig c = tiny_config(5);
    c.query_gender_skew = 0.1;
    c.clause_terms = 4;
    c.complexity_cue = plumb::index::ComplexityCue::Position;
    c.clause_words = plumb::index::ClauseWords::Unseen;
    c.liwc_words = 7;
    c.liwc_skew = 0.1;
    PlantedGenerator(c).write(b);
    for (const char* f : kDataFiles)
        EXPECT_EQ(plumb::read_file(a / f), plumb::read_file(b / f)) << f;
    for (const char* f : {"query_complexity.tsv", "liwc.dic", "generated_pairs.tsv"})
        EXPECT_FALSE(fs::exists(a / f)) << f;
    for (const auto& line : lines_of(a / "query_gender.tsv")) EXPECT_EQ(fields_of(line)[1], "n");

    // Gendered queries on: neutral queries keep their text, and every passage that is not a
    // planted passage of a gendered query is unchanged.
    PlantedConfig g = tiny_config(5);
    g.female_query_share = 0.3;
    g.male_query_share = 0.3;
    PlantedGenerator off(tiny_config(5)), on(g);
    const auto t_off = off.topics(), t_on = on.topics();
    std::size_t gendered = 0;
    std::unordered_set<std::uint64_t> changed;
    for (std::uint32_t q = 0; q < t_on.size(); ++q) {
        if (t_on[q].gender == 'n') {
            EXPECT_EQ(t_on[q].text, t_off[q].text);
            continue;
        }
        ++gendered;
        EXPECT_NE(t_on[q].text, t_off[q].text);
        for (auto p : on.relevant_passages(q)) changed.insert(p);
        for (auto p : on.hard_negative_passages(q)) changed.insert(p);  // category words
    }
    EXPECT_GT(gendered, 20u);
    for (std::uint64_t i = 0; i < 2000; i += 3)
        if (!changed.count(i)) {
            EXPECT_EQ(on.passage(i).doc.text, off.passage(i).doc.text) << i;
        }
}

TEST(PlantedCauses, GenderedQueriesSharesLabelsAndSkew) {
    PlantedConfig c = stats_config(plumb::index::AnswerPositions::Early);
    c.female_query_share = 0.2;
    c.male_query_share = 0.3;
    c.query_gender_skew = 0.85;
    c.dev_queries = 100;  // labels in every split
    PlantedGenerator g(c);
    auto dir = temp_dir("gendered_queries");
    ASSERT_TRUE(g.write(dir).complete);
    const auto words = planted_word_list();

    // Label file: qid<TAB>f|m|n, one line per query in qid order; the readers of the bias
    // commands accept it (debias balance, --queries/--label subsets, eval-groups).
    const auto lines = lines_of(dir / "query_gender.tsv");
    ASSERT_EQ(lines.size(), 2100u);
    const auto topics = plumb::index::read_topics(dir / "topics.tsv");
    std::map<char, std::size_t> count;
    for (std::size_t q = 0; q < lines.size(); ++q) {
        const auto f = fields_of(lines[q]);
        ASSERT_EQ(f.size(), 2u) << lines[q];
        EXPECT_EQ(f[0], std::to_string(q + 1));
        ASSERT_EQ(f[1].size(), 1u);
        const char label = f[1][0];
        ASSERT_TRUE(label == 'f' || label == 'm' || label == 'n') << lines[q];
        ++count[label];
        // The lexicon labeller (`plumb debias query-gender`) finds the planted label: one
        // gender word of the query's gender, none of the other.
        const auto cnt = plumb::eval::count_gender_words(topics[q].text, words);
        EXPECT_EQ(plumb::eval::query_gender_label(cnt), label) << topics[q].text;
        EXPECT_EQ(cnt.female + cnt.male, label == 'n' ? 0u : 1u) << topics[q].text;
    }
    // 2100 queries: sd of a share <= 0.011.
    EXPECT_NEAR(count['f'] / 2100.0, 0.2, 0.04);
    EXPECT_NEAR(count['m'] / 2100.0, 0.3, 0.04);
    const auto gendered = plumb::debias::read_gendered_queries(dir / "query_gender.tsv");
    EXPECT_EQ(gendered.size(), count['f'] + count['m']);
    EXPECT_EQ(plumb::eval::read_query_subset(dir / "query_gender.tsv", "n").size(), count['n']);
    EXPECT_EQ(plumb::eval::read_query_subset(dir / "query_gender.tsv", "f").size(), count['f']);
    EXPECT_EQ(plumb::eval::read_query_attributes(dir / "query_gender.tsv").rows.size(), 2100u);

    // Relevant passages of gendered queries: always gendered (one gender), of the query's
    // gender with p = 0.85 (~1500 passages: sd 0.009); neutral queries keep gender_share 0.3.
    std::size_t same = 0, other = 0, neutral_rel = 0, neutral_gendered = 0;
    for (std::uint32_t q = 0; q < 2100; ++q) {
        const char qg = g.query_gender(q);
        for (auto p : g.relevant_passages(q)) {
            const auto cnt = plumb::eval::count_gender_words(g.passage(p).doc.text, words);
            ASSERT_FALSE(cnt.female && cnt.male);
            const char pg = cnt.female ? 'f' : cnt.male ? 'm' : 'n';
            if (qg == 'n') {
                ++neutral_rel, neutral_gendered += pg != 'n';
                continue;
            }
            ASSERT_NE(pg, 'n') << "relevant passage " << p << " of gendered query " << q + 1;
            (pg == qg ? same : other) += 1;
        }
    }
    EXPECT_NEAR(static_cast<double>(same) / (same + other), 0.85, 0.03);
    EXPECT_NEAR(static_cast<double>(neutral_gendered) / neutral_rel, 0.3, 0.04);
    const auto m = nlohmann::json::parse(plumb::read_file(dir / "manifest.json"));
    EXPECT_EQ(m["counts"]["query_genders"]["f"], count['f']);
    EXPECT_EQ(m["realised"]["gendered_queries"]["relevant_same_gender"], same);
}

TEST(PlantedCauses, CandidateGenderShareDefinesPrfForMostQueries) {
    // PRF_m (PRF_f) of a query is defined when it has a male- (female-) labelled relevant
    // passage and a non-relevant candidate (FORMULAS.md). Candidates = relevant passages and
    // hard negatives, labels d(p) from plumb's IBBR labeller. With share s and relevant
    // P(male) = g, a query with r relevant passages has PRF_m with probability 1 - (1 - s·g)^r.
    for (double s : {0.3, 0.8}) {
        PlantedConfig c = stats_config(plumb::index::AnswerPositions::Early);
        c.train_queries = 1000;
        c.hard_negatives = 4;
        c.base.passages = 8000;
        c.candidate_gender_share = s;
        PlantedGenerator g(c);
        const auto words = planted_word_list();
        auto dir = temp_dir("candidates");
        fs::create_directories(dir);
        std::string qrels;
        std::unordered_map<std::string, int> labels;
        std::vector<plumb::eval::ScoredRanking> rankings;
        double expect_m = 0, expect_f = 0;
        std::size_t hn = 0, hn_gendered = 0, hn_male = 0;
        for (std::uint32_t q = 0; q < 1000; ++q) {
            plumb::eval::ScoredRanking r;
            r.qid = std::to_string(q + 1);
            const auto& rel = g.relevant_passages(q);
            for (auto p : rel) {
                qrels += r.qid + " 0 " + std::to_string(p) + " 1\n";
                r.docs.emplace_back(std::to_string(p), 1.0);
            }
            for (auto p : g.hard_negative_passages(q)) {
                r.docs.emplace_back(std::to_string(p), 0.0);
                const auto cnt = plumb::eval::count_gender_words(g.passage(p).doc.text, words);
                ++hn, hn_gendered += cnt.female + cnt.male > 0, hn_male += cnt.male > 0;
            }
            for (const auto& [id, score] : r.docs)
                labels[id] = plumb::eval::ibbr_label(
                    plumb::eval::count_gender_words(g.passage(std::stoull(id)).doc.text, words));
            const double n = static_cast<double>(rel.size());
            expect_m += 1 - std::pow(1 - s * c.gender_skew, n);
            expect_f += 1 - std::pow(1 - s * (1 - c.gender_skew), n);
            rankings.push_back(std::move(r));
        }
        plumb::test::write_file(dir / "qrels.txt", qrels);
        const auto sum =
            plumb::eval::prf(rankings, plumb::eval::Qrels::load(dir / "qrels.txt"), labels);
        EXPECT_NEAR(static_cast<double>(sum.queries_male), expect_m, 50.0) << s;
        EXPECT_NEAR(static_cast<double>(sum.queries_female), expect_f, 40.0) << s;
        EXPECT_NEAR(static_cast<double>(hn_gendered) / hn, s, 0.03) << s;
        EXPECT_NEAR(static_cast<double>(hn_male) / hn_gendered, 0.5, 0.04) << s;
        if (s > 0.5) {
            EXPECT_GT(sum.queries_male + sum.queries_female, 1000u);
        }
    }
}

// Paper 004's learnable cause: with candidate_gender_train_skew s the TRAIN queries' gendered
// relevant passages are male with probability s and their gendered hard negatives female with
// probability s; dev / test queries keep gender_skew and 0.5, and every passage that is not a
// train query's planted passage is byte-identical to the collection without the option.
TEST(PlantedCauses, CandidateGenderTrainSkewMarksOnlyTheTrainingQueries) {
    PlantedConfig c = stats_config(plumb::index::AnswerPositions::Early);
    c.train_queries = 800;
    c.dev_queries = 0;
    c.test_queries = 800;
    c.hard_negatives = 2;
    c.base.passages = 8000;
    c.candidate_gender_share = 0.9;
    c.gender_skew = 0.5;
    PlantedConfig on_c = c;
    on_c.candidate_gender_train_skew = 0.85;
    PlantedGenerator off(c), on(on_c);
    const auto words = planted_word_list();
    // Per split: gendered relevant passages and how many are male; gendered hard negatives and
    // how many are female.
    struct Tally {
        double rel = 0, rel_male = 0, hn = 0, hn_female = 0;
    } train, test;
    std::unordered_set<std::uint64_t> train_planted;
    for (std::uint32_t q = 0; q < 1600; ++q) {
        Tally& t = q < 800 ? train : test;
        auto gender = [&](std::uint64_t p) {
            const auto n = plumb::eval::count_gender_words(on.passage(p).doc.text, words);
            return n.male > 0 ? 'm' : n.female > 0 ? 'f' : 'n';
        };
        for (auto p : on.relevant_passages(q)) {
            if (q < 800) train_planted.insert(p);
            const char g = gender(p);
            if (g != 'n') ++t.rel, t.rel_male += g == 'm';
        }
        for (auto p : on.hard_negative_passages(q)) {
            if (q < 800) train_planted.insert(p);
            const char g = gender(p);
            if (g != 'n') ++t.hn, t.hn_female += g == 'f';
        }
    }
    // ~1,200 gendered relevant passages and ~1,440 gendered hard negatives per split: binomial
    // SE <= 0.015, tolerance ~3 SE.
    ASSERT_GT(train.rel, 1000);
    ASSERT_GT(test.hn, 1000);
    EXPECT_NEAR(train.rel_male / train.rel, 0.85, 0.04);
    EXPECT_NEAR(train.hn_female / train.hn, 0.85, 0.04);
    EXPECT_NEAR(test.rel_male / test.rel, 0.5, 0.045);
    EXPECT_NEAR(test.hn_female / test.hn, 0.5, 0.045);
    for (std::uint64_t i = 0; i < 8000; i += 3)
        if (!train_planted.count(i)) {
            EXPECT_EQ(on.passage(i).doc.text, off.passage(i).doc.text) << i;
        }
    // The topics, qrels and triple ids do not change; the manifest records s only when set.
    auto a = temp_dir("train_skew_off"), b = temp_dir("train_skew_on");
    PlantedGenerator(tiny_config(3)).write(a);
    PlantedConfig t = tiny_config(3);
    t.candidate_gender_share = 0.9;
    PlantedConfig u = t;
    u.candidate_gender_train_skew = 0.85;
    auto a2 = temp_dir("train_skew_share"), b2 = temp_dir("train_skew_share_on");
    PlantedGenerator(t).write(a2);
    PlantedGenerator(u).write(b2);
    for (const char* f : {"topics.tsv", "qrels.txt", "triples.train.ids.tsv", "query_gender.tsv"})
        EXPECT_EQ(plumb::read_file(a2 / f), plumb::read_file(b2 / f)) << f;
    EXPECT_NE(plumb::read_file(a2 / "triples.train.tsv"),
              plumb::read_file(b2 / "triples.train.tsv"));
    const auto m_off = nlohmann::json::parse(plumb::read_file(a / "manifest.json"));
    const auto m_on = nlohmann::json::parse(plumb::read_file(b2 / "manifest.json"));
    EXPECT_FALSE(m_off["parameters"].contains("candidate_gender_train_skew"));
    EXPECT_FALSE(
        nlohmann::json::parse(plumb::read_file(a2 / "manifest.json"))["parameters"].contains(
            "candidate_gender_train_skew"));
    EXPECT_DOUBLE_EQ(m_on["parameters"]["candidate_gender_train_skew"].get<double>(), 0.85);

    auto bad = [](auto edit) {
        PlantedConfig x = plumb::index::planted_preset("tiny");
        edit(x);
        EXPECT_THROW(PlantedGenerator{x}, plumb::InvalidArgument);
    };
    bad([](PlantedConfig& x) { x.candidate_gender_train_skew = 0.8; });  // needs the share
    bad([](PlantedConfig& x) {
        x.candidate_gender_share = 0.6, x.candidate_gender_train_skew = 1.2;
    });
}

TEST(PlantedCauses, ComplexityLevelsAreWhatTheAnalyserSeesAndBm25TakesTheShortcut) {
    PlantedConfig c = plumb::index::planted_preset("tiny");  // the preset's vocabulary
    c.base.seed = 9;
    c.base.passages = 4000;
    c.train_queries = 240;
    c.dev_queries = 30;
    c.test_queries = 30;
    c.complexity_levels = true;
    c.clause_terms = 2;
    PlantedGenerator g(c);
    auto dir = temp_dir("complexity");
    ASSERT_TRUE(g.write(dir).complete);
    const auto topics = plumb::index::read_topics(dir / "topics.tsv");
    ASSERT_EQ(topics.size(), 300u);

    // Labels: qid<TAB>simple|medium|complex, readable as eval-groups' categorical groups.
    const auto attrs = plumb::eval::read_query_attributes(dir / "query_complexity.tsv");
    ASSERT_EQ(attrs.rows.size(), 300u);
    EXPECT_FALSE(attrs.numeric());
    std::map<std::string, int> level_of;
    std::map<int, std::size_t> per_level;
    for (std::uint32_t q = 0; q < 300; ++q) {
        const int level = g.complexity_level(q);
        EXPECT_EQ(attrs.rows[q].first, std::to_string(q + 1));
        EXPECT_EQ(attrs.rows[q].second, plumb::index::complexity_level_name(level));
        level_of[attrs.rows[q].first] = level;
        ++per_level[level];
    }
    for (int l = 0; l < 3; ++l) EXPECT_NEAR(per_level[l] / 300.0, 1.0 / 3, 0.08) << l;

    // Planted structure: simple = keyword queries, complex = a clause with 2 more words that
    // its relevant passages lack and its hard negatives all carry.
    std::size_t rel_pairs = 0, rel_with = 0;
    for (std::uint32_t q = 0; q < 300; ++q) {
        const auto clause = g.clause_terms(q);
        const auto qtoks = words_of(topics[q].text);
        if (g.complexity_level(q) == 0) {
            EXPECT_EQ(qtoks.size(), g.query_terms(q).size());
        }
        if (g.complexity_level(q) != 2) {
            EXPECT_TRUE(clause.empty());
            continue;
        }
        ASSERT_EQ(clause.size(), 2u);
        for (const auto& w : clause)
            EXPECT_NE(std::find(qtoks.begin(), qtoks.end(), w), qtoks.end()) << topics[q].text;
        // Clause words are mid-frequency words: background text holds them now and then.
        for (auto p : g.relevant_passages(q)) {
            const auto toks = words_of(g.passage(p).doc.text);
            for (const auto& w : clause)
                ++rel_pairs, rel_with += std::find(toks.begin(), toks.end(), w) != toks.end();
        }
        for (auto p : g.hard_negative_passages(q)) {
            const auto toks = words_of(g.passage(p).doc.text);
            for (const auto& w : clause)
                EXPECT_NE(std::find(toks.begin(), toks.end(), w), toks.end());
        }
    }
    EXPECT_LT(static_cast<double>(rel_with) / static_cast<double>(rel_pairs), 0.1);

    // plumb's complexity analyser: the planted level orders the score, and the terciles follow
    // the levels (each level's modal bucket is its own).
    plumb::debias::ComplexityAnalyzer analyzer;
    std::vector<plumb::Query> queries;
    for (const auto& t : topics) queries.push_back(plumb::Query{t.id, t.text});
    const auto rows = analyzer.analyze_all(queries);
    std::map<int, std::map<std::string, std::size_t>> table;
    std::array<double, 3> score_sum{};
    for (const auto& r : rows) {
        ++table[level_of[r.qid]][r.bucket];
        score_sum[level_of[r.qid]] += r.score;
    }
    std::array<double, 3> mean{};
    for (int l = 0; l < 3; ++l) mean[l] = score_sum[l] / per_level[l];
    EXPECT_LT(mean[0], mean[1]);
    EXPECT_LT(mean[1], mean[2]);
    EXPECT_GT(table[0]["easy"], per_level[0] / 2);
    EXPECT_GT(table[2]["hard"], per_level[2] * 7 / 10);
    EXPECT_LT(table[0]["hard"] + table[2]["easy"], 10u);

    // plumb's BM25 (lexical overlap, the shortcut): complex queries' relevant passages rank far
    // lower than those of simple and medium queries.
    auto tiny = plumb::test::build_tiny_index(dir / "bm25", plumb::read_file(dir / "corpus.tsv"));
    std::array<double, 3> rr{};
    for (std::uint32_t q = 0; q < 300; ++q) {
        const auto hits = tiny.searcher->search(topics[q].text, 10);
        const auto& rel = g.relevant_passages(q);
        for (std::size_t k = 0; k < hits.size(); ++k)
            if (std::find(rel.begin(), rel.end(),
                          std::stoull(std::string(tiny.index->docid(hits[k].doc)))) != rel.end()) {
                rr[g.complexity_level(q)] += 1.0 / static_cast<double>(k + 1);
                break;
            }
    }
    for (int l = 0; l < 3; ++l) rr[l] /= static_cast<double>(per_level[l]);
    EXPECT_GT(rr[0], rr[2] + 0.25) << rr[0] << " " << rr[2];
    EXPECT_GT(rr[1], rr[2] + 0.25) << rr[1] << " " << rr[2];
}

TEST(PlantedCauses, ComplexityCuePositionSwapsThePlacementsOfComplexQueriesOnly) {
    // Same collection with cue Overlap (default) and Position (paper 003's experiment).
    PlantedConfig c = plumb::index::planted_preset("tiny");
    c.base.seed = 9;
    c.base.passages = 4000;
    c.train_queries = 240;
    c.dev_queries = 30;
    c.test_queries = 30;
    c.complexity_levels = true;
    PlantedConfig cp = c;
    cp.complexity_cue = plumb::index::ComplexityCue::Position;
    PlantedGenerator go(c), gp(cp);
    // Expected placements (file comment; early_scale 0.15, Opposite distractors): the answer of
    // a relevant passage starts at x ~ truncated exponential (mean ~0.15) of simple and medium
    // queries, at 1 - x (mean ~0.85) of complex ones; hard negatives' blocks the other way round.
    std::array<double, 3> rel_sum{}, neg_sum{};
    std::array<std::size_t, 3> rel_n{}, neg_n{};
    std::size_t clause_pairs = 0, clause_in = 0;
    for (std::uint32_t q = 0; q < 300; ++q) {
        const int level = gp.complexity_level(q);
        ASSERT_EQ(level, go.complexity_level(q));
        for (auto p : gp.relevant_passages(q)) {
            const auto a = gp.passage(p), b = go.passage(p);
            rel_sum[level] += static_cast<double>(a.answer_start) / a.tokens;
            ++rel_n[level];
            if (level != 2) {
                EXPECT_EQ(a.doc.text, b.doc.text) << p;  // simple, medium: unchanged
            } else {                                     // complex: the same words, moved
                auto wa = words_of(a.doc.text), wb = words_of(b.doc.text);
                std::sort(wa.begin(), wa.end());
                std::sort(wb.begin(), wb.end());
                EXPECT_EQ(wa, wb) << p;
            }
        }
        const auto clause = gp.clause_terms(q);
        for (auto p : gp.hard_negative_passages(q)) {
            const auto a = gp.passage(p);
            neg_sum[level] += static_cast<double>(a.block_start) / a.tokens;
            ++neg_n[level];
            if (level != 2) {
                EXPECT_EQ(a.doc.text, go.passage(p).doc.text) << p;
                continue;
            }
            // No clause words planted (background text may hold one now and then).
            const auto toks = words_of(a.doc.text);
            for (const auto& w : clause)
                ++clause_pairs, clause_in += std::find(toks.begin(), toks.end(), w) != toks.end();
        }
    }
    for (int l = 0; l < 3; ++l) {
        ASSERT_GT(rel_n[l], 50u);
        const double rel = rel_sum[l] / rel_n[l], neg = neg_sum[l] / neg_n[l];
        if (l < 2) {
            EXPECT_LT(rel, 0.3) << l;
            EXPECT_GT(neg, 0.6) << l;
        } else {
            EXPECT_GT(rel, 0.6);
            EXPECT_LT(neg, 0.3);
        }
    }
    ASSERT_GT(clause_pairs, 100u);
    EXPECT_LT(static_cast<double>(clause_in) / static_cast<double>(clause_pairs), 0.1);

    // Topics, qrels and triples are the cue's business only through the passages.
    auto a = temp_dir("cue_overlap"), b = temp_dir("cue_position");
    ASSERT_TRUE(go.write(a).complete);
    ASSERT_TRUE(gp.write(b).complete);
    for (const char* f : {"topics.tsv", "qrels.txt", "triples.train.ids.tsv", "answers.tsv",
                          "query_complexity.tsv"})
        EXPECT_EQ(plumb::read_file(a / f), plumb::read_file(b / f)) << f;
    EXPECT_NE(plumb::read_file(a / "corpus.tsv"), plumb::read_file(b / "corpus.tsv"));
    const auto m = nlohmann::json::parse(plumb::read_file(b / "manifest.json"));
    EXPECT_EQ(m["parameters"]["complexity_cue"], "position");
    EXPECT_EQ(nlohmann::json::parse(
                  plumb::read_file(a / "manifest.json"))["parameters"]["complexity_cue"],
              "overlap");
    EXPECT_EQ(plumb::index::parse_complexity_cue("position"),
              plumb::index::ComplexityCue::Position);
    EXPECT_THROW(plumb::index::parse_complexity_cue("late"), plumb::InvalidArgument);
}

TEST(PlantedCauses, UnseenClauseWordsOccurInNoBackgroundPassage) {
    // Paper 003's experiment: cue Position with clause words Unseen. Same plan as clause words
    // Corpus: only complex queries' texts differ (their clause words); the passages are the
    // same, since cue Position plants no clause word anywhere.
    PlantedConfig c = plumb::index::planted_preset("tiny");
    c.base.seed = 11;
    c.complexity_levels = true;
    c.complexity_cue = plumb::index::ComplexityCue::Position;
    PlantedConfig cu = c;
    cu.clause_words = plumb::index::ClauseWords::Unseen;
    PlantedGenerator gc(c), gu(cu);
    auto a = temp_dir("clause_corpus"), b = temp_dir("clause_unseen");
    ASSERT_TRUE(gc.write(a).complete);
    ASSERT_TRUE(gu.write(b).complete);
    for (const char* f : {"corpus.tsv", "qrels.txt", "triples.train.ids.tsv", "answers.tsv",
                          "query_complexity.tsv", "shown_ranks.tsv"})
        EXPECT_EQ(plumb::read_file(a / f), plumb::read_file(b / f)) << f;
    std::unordered_set<std::string> passage_words;
    for (const auto& line : lines_of(b / "corpus.tsv"))
        for (const auto& w : words_of(fields_of(line)[1])) passage_words.insert(w);
    const auto tc = gc.topics(), tu = gu.topics();
    std::size_t complex = 0;
    std::unordered_set<std::string> pool;
    for (std::uint32_t q = 0; q < tu.size(); ++q) {
        if (gu.complexity_level(q) != 2) {
            EXPECT_EQ(tu[q].text, tc[q].text) << q;
            EXPECT_TRUE(gu.clause_terms(q).empty());
            continue;
        }
        ++complex;
        const auto clause = gu.clause_terms(q);
        ASSERT_EQ(clause.size(), 2u);  // clause_terms' default
        EXPECT_NE(clause[0], clause[1]);
        EXPECT_NE(tu[q].text, tc[q].text);
        const auto qw = words_of(tu[q].text);
        for (const auto& w : clause) {
            pool.insert(w);
            // CVCVCV ending in a vowel (every vocabulary word ends in a consonant) ...
            ASSERT_EQ(w.size(), 6u) << w;
            EXPECT_NE(std::string("aiou").find(w.back()), std::string::npos) << w;
            // ... in the query, and in no passage (document frequency 0).
            EXPECT_NE(std::find(qw.begin(), qw.end(), w), qw.end()) << w;
            EXPECT_FALSE(passage_words.count(w)) << w;
        }
        // The main clause is the Corpus variant's: its terms are the same words.
        EXPECT_EQ(gu.query_terms(q), gc.query_terms(q));
    }
    EXPECT_GT(complex, 20u);
    EXPECT_GT(pool.size(), complex);  // drawn from a pool, mostly distinct (1,000 words)
    const auto m = nlohmann::json::parse(plumb::read_file(b / "manifest.json"));
    EXPECT_EQ(m["parameters"]["clause_words"], "unseen");
    const auto mc = nlohmann::json::parse(plumb::read_file(a / "manifest.json"));
    EXPECT_FALSE(mc["parameters"].contains("clause_words"));
    EXPECT_EQ(plumb::index::parse_clause_words("unseen"), plumb::index::ClauseWords::Unseen);
    EXPECT_EQ(plumb::index::parse_clause_words("corpus"), plumb::index::ClauseWords::Corpus);
    EXPECT_THROW(plumb::index::parse_clause_words("rare"), plumb::InvalidArgument);

    // Cue Overlap plants the clause words into the hard negatives: there, and only there.
    PlantedConfig co = cu;
    co.complexity_cue = plumb::index::ComplexityCue::Overlap;
    PlantedGenerator go(co);
    for (std::uint32_t q = 0; q < 90; ++q) {
        if (go.complexity_level(q) != 2) continue;
        const auto clause = go.clause_terms(q);
        for (auto p : go.hard_negative_passages(q)) {
            const auto toks = words_of(go.passage(p).doc.text);
            for (const auto& w : clause)
                EXPECT_NE(std::find(toks.begin(), toks.end(), w), toks.end()) << q << ' ' << w;
        }
        for (auto p : go.relevant_passages(q)) {
            const auto toks = words_of(go.passage(p).doc.text);
            for (const auto& w : clause)
                EXPECT_EQ(std::find(toks.begin(), toks.end(), w), toks.end()) << q << ' ' << w;
        }
    }
}

TEST(PlantedCauses, HardNegativeTermsOneMeansEveryTerm) {
    // Default 0.75: a strict subset (at most |terms| - 1); 1: every term (no coverage difference).
    for (double share : {0.75, 1.0}) {
        PlantedConfig c = tiny_config(13);
        c.hard_negative_terms = share;
        PlantedGenerator g(c);
        std::size_t full = 0, total = 0;
        for (std::uint32_t q = 0; q < 40; ++q) {
            const auto terms = g.query_terms(q);
            for (auto p : g.hard_negative_passages(q)) {
                const auto toks = words_of(g.passage(p).doc.text);
                bool all = true;
                for (const auto& t : terms)
                    all = all && std::find(toks.begin(), toks.end(), t) != toks.end();
                full += all;
                ++total;
            }
        }
        ASSERT_GT(total, 100u);
        if (share < 1.0)  // background words complete the set now and then (tiny vocabulary)
            EXPECT_LT(static_cast<double>(full) / static_cast<double>(total), 0.5);
        else
            EXPECT_EQ(full, total);
    }
}

TEST(PlantedCauses, DeterministicPerSeedWithEveryCauseOn) {
    PlantedConfig c = tiny_config(21);
    c.female_query_share = 0.2;
    c.male_query_share = 0.2;
    c.candidate_gender_share = 0.6;
    c.complexity_levels = true;
    auto a = temp_dir("all_a"), b = temp_dir("all_b");
    PlantedGenerator(c).write(a);
    PlantedGenerator(c).write(b);
    for (const char* f : kFiles) EXPECT_EQ(plumb::read_file(a / f), plumb::read_file(b / f)) << f;
    EXPECT_EQ(plumb::read_file(a / "query_complexity.tsv"),
              plumb::read_file(b / "query_complexity.tsv"));
    auto m = nlohmann::json::parse(plumb::read_file(a / "manifest.json"));
    std::set<std::string> listed(m["files"].begin(), m["files"].end());
    EXPECT_TRUE(listed.count("query_complexity.tsv"));

    auto bad = [](auto edit) {
        PlantedConfig x = plumb::index::planted_preset("tiny");
        edit(x);
        EXPECT_THROW(PlantedGenerator{x}, plumb::InvalidArgument);
    };
    bad([](PlantedConfig& x) { x.female_query_share = 0.6, x.male_query_share = 0.5; });
    bad([](PlantedConfig& x) { x.query_gender_skew = 1.1; });
    bad([](PlantedConfig& x) { x.candidate_gender_share = -0.2; });
    bad([](PlantedConfig& x) { x.complexity_levels = true, x.clause_terms = 0; });
    for (const char* size : {"tiny", "small", "medium", "large"}) {
        PlantedConfig x = plumb::index::planted_preset(size);
        x.female_query_share = x.male_query_share = 0.2;
        x.candidate_gender_share = 0.6;
        x.complexity_levels = true;
        EXPECT_NO_THROW(x.validate()) << size;
    }
}

TEST(PlantedCli, CauseOptions) {
    auto dir = temp_dir("cli_causes");
    std::string cmd = std::string(PLUMB_CLI_PATH) + " generate --planted --size tiny -o " +
                      dir.string() +
                      " --vocab 5000 --seed 7 --female-queries 0.2 --male-queries 0.3"
                      " --query-gender-skew 0.8 --candidate-gender-share 0.6"
                      " --candidate-gender-train-skew 0.7"
                      " --complexity-levels --clause-terms 3 --liwc-words 2 --liwc-skew 0.7"
                      " --generated-pairs 50 --quiet 2>/dev/null";
    ASSERT_EQ(std::system(cmd.c_str()), 0);
    PlantedConfig c = tiny_config(7);
    c.female_query_share = 0.2;
    c.male_query_share = 0.3;
    c.query_gender_skew = 0.8;
    c.candidate_gender_share = 0.6;
    c.candidate_gender_train_skew = 0.7;
    c.complexity_levels = true;
    c.clause_terms = 3;
    c.liwc_words = 2;
    c.liwc_skew = 0.7;
    c.generated_pairs = 50;
    auto lib = temp_dir("cli_causes_lib");
    PlantedGenerator(c).write(lib);
    for (const char* f : kFiles)
        EXPECT_EQ(plumb::read_file(dir / f), plumb::read_file(lib / f)) << f;
    for (const char* f :
         {"query_complexity.tsv", "liwc.dic", "generated_pairs.tsv", "generated_gender.tsv"})
        EXPECT_EQ(plumb::read_file(dir / f), plumb::read_file(lib / f)) << f;
    EXPECT_EQ(lines_of(dir / "generated_pairs.tsv").size(), 50u);
    auto fails = [](const std::string& args) {
        std::string c = std::string(PLUMB_CLI_PATH) + " generate -o " +
                        temp_dir("cli_causes_bad").string() + " " + args + " --quiet 2>/dev/null";
        return std::system(c.c_str()) != 0;
    };
    EXPECT_TRUE(fails("--planted --size tiny --clause-terms 3"));  // needs --complexity-levels
    EXPECT_TRUE(fails("--planted --size tiny --complexity-cue position"));  // the same
    EXPECT_TRUE(fails("--planted --size tiny --complexity-levels --complexity-cue late"));
    EXPECT_TRUE(fails("--planted --size tiny --clause-words unseen"));  // needs the levels
    EXPECT_TRUE(fails("--planted --size tiny --complexity-levels --clause-words rare"));
    EXPECT_TRUE(fails("--planted --size tiny --female-queries 0.6 --male-queries 0.6"));
    EXPECT_TRUE(fails("--female-queries 0.1"));  // needs --planted
    EXPECT_TRUE(fails("--planted --size tiny --candidate-gender-share 1.5"));
    // --candidate-gender-train-skew needs --candidate-gender-share and a probability.
    EXPECT_TRUE(fails("--planted --size tiny --candidate-gender-train-skew 0.8"));
    EXPECT_TRUE(fails(
        "--planted --size tiny --candidate-gender-share 0.6 --candidate-gender-train-skew 1.5"));
    EXPECT_TRUE(fails("--planted --size tiny --generated-pairs 5"));  // needs gendered queries
}

TEST(PlantedCauses, CategoryWordsAndGeneratedPairsFeedPaper001sTools) {
    PlantedConfig c = stats_config(plumb::index::AnswerPositions::Early);
    c.female_query_share = 0.25;
    c.male_query_share = 0.25;
    c.liwc_words = 3;
    c.liwc_skew = 0.8;
    c.generated_pairs = 600;
    c.triples_per_query = 2;  // the training set that balancing augments
    PlantedGenerator g(c);
    auto dir = temp_dir("liwc");
    ASSERT_TRUE(g.write(dir).complete);

    // The dictionary: LIWC format as plumb reads it, 9 categories, 70 words, none a gender word
    // or a pseudo-word.
    const auto dic = plumb::debias::LiwcDictionary::load(dir / "liwc.dic");
    EXPECT_EQ(dic.categories().size(), 9u);
    EXPECT_EQ(dic.exact_entries(), 70u);
    const auto words = planted_word_list();
    const std::regex pseudo("^([bdfghjklmnprtvwz][aiou]){2,}[bdgkmptz]$");
    std::set<std::string> female_leaf_words, male_leaf_words;
    for (const auto& line : lines_of(dir / "liwc.dic")) {
        const auto f = fields_of(line);
        if (f.size() != 2 || f[0] == "%" || std::isdigit(static_cast<unsigned char>(f[0][0])))
            continue;
        EXPECT_FALSE(std::regex_match(f[0], pseudo)) << f[0];
        const auto cnt = plumb::eval::count_gender_words(f[0], words);
        EXPECT_EQ(cnt.female + cnt.male, 0u) << f[0];
        // Stereotyped leaves (planted.hpp): female posemo (2), negemo (3), home (8); male
        // achieve (6), work (7), leisure (9).
        const auto& ids = dic.lookup(f[0]);
        ASSERT_FALSE(ids.empty()) << f[0];
        const int leaf = ids.back();
        if (leaf == 2 || leaf == 3 || leaf == 8) female_leaf_words.insert(f[0]);
        if (leaf == 6 || leaf == 7 || leaf == 9) male_leaf_words.insert(f[0]);
    }
    EXPECT_EQ(female_leaf_words.size(), 30u);
    EXPECT_EQ(male_leaf_words.size(), 30u);

    // Category words per planted passage of a gendered query: exactly liwc_words; in relevant
    // passages from the query's gender's leaves with p = 0.8 + 0.2 · 3/7 = 0.886, in hard
    // negatives with 3/7 (uniform).
    std::size_t rel_words = 0, rel_own = 0, hn_words = 0, hn_female = 0;
    std::vector<plumb::eval::QueryRanking> female, male;
    plumb::eval::CategoryVectors vectors;
    vectors.categories = {"home", "work"};
    const std::vector<int> home_work = {8, 7};
    for (std::uint32_t q = 0; q < 2000; ++q) {
        const char qg = g.query_gender(q);
        if (qg == 'n') continue;
        const auto& own = qg == 'f' ? female_leaf_words : male_leaf_words;
        plumb::eval::QueryRanking r{std::to_string(q + 1), {}};
        for (auto p : g.relevant_passages(q)) {
            const auto text = g.passage(p).doc.text;
            std::size_t n = 0;
            for (const auto& t : words_of(text))
                if (!dic.lookup(t).empty()) ++n, rel_own += own.count(t);
            EXPECT_EQ(n, 3u) << text;
            rel_words += n;
            r.docids.push_back(std::to_string(p));
            vectors.vectors[std::to_string(p)] = plumb::debias::liwc_phi(text, dic, home_work);
        }
        (qg == 'f' ? female : male).push_back(r);
        for (auto p : g.hard_negative_passages(q))
            for (const auto& t : words_of(g.passage(p).doc.text))
                if (!dic.lookup(t).empty()) ++hn_words, hn_female += female_leaf_words.count(t);
    }
    EXPECT_NEAR(static_cast<double>(rel_own) / rel_words, 0.8 + 0.2 * 3 / 7, 0.03);
    EXPECT_NEAR(static_cast<double>(hn_female) / hn_words, 3.0 / 7, 0.03);
    // paper 001's measure (plumb's eval::category_difference, female - male): home words
    // (P = 0.8/3 + 0.2/7 per word for female queries, 0.2/7 for male ones: ratio ~10) and work
    // words (the reverse).
    const auto d = plumb::eval::category_difference(female, male, vectors, 10);
    EXPECT_GT(d.difference[0], 0.0);
    EXPECT_LT(d.difference[1], 0.0);
    const double ratio = (0.8 / 3 + 0.2 / 7) / (0.2 / 7);
    EXPECT_NEAR(d.mean_a[0] / d.mean_b[0], ratio, ratio * 0.35);
    EXPECT_NEAR(d.mean_b[1] / d.mean_a[1], ratio, ratio * 0.35);

    // Generated pairs: 4 fields as debias balance reads them, labels recovered by the lexicon,
    // and one-to-one balancing adds as many female as male examples.
    const auto pairs = plumb::debias::read_generated_pairs(dir / "generated_pairs.tsv");
    ASSERT_EQ(pairs.size(), 600u);
    const auto labels = plumb::debias::read_gendered_queries(dir / "generated_gender.tsv");
    std::size_t gf = 0, gm = 0;
    for (const auto& p : pairs) {
        const auto it = labels.find(p.qid);
        const char label = it == labels.end() ? 'n' : it->second;
        EXPECT_EQ(plumb::eval::query_gender_label(plumb::eval::count_gender_words(p.query, words)),
                  label)
            << p.query;
        EXPECT_EQ(p.docid, p.qid);
        gf += label == 'f', gm += label == 'm';
    }
    EXPECT_NEAR(gf / 600.0, 0.25, 0.06);
    EXPECT_NEAR(gm / 600.0, 0.25, 0.06);
    plumb::debias::BalanceOptions o;
    o.pairs = dir / "generated_pairs.tsv";
    o.query_gender = dir / "generated_gender.tsv";
    o.dictionary = dir / "liwc.dic";
    o.train = dir / "triples.train.tsv";
    o.ratios = {0.5};
    o.one_to_one = true;
    o.output_dir = dir / "balanced";
    const auto rep = plumb::debias::run_balance(o);
    EXPECT_EQ(rep.match.female_queries, gf);
    EXPECT_EQ(rep.match.male_queries, gm);
    EXPECT_EQ(rep.match.unmatchable, 0u);  // every gendered passage has category words
    ASSERT_EQ(rep.outputs.size(), 1u);
    EXPECT_EQ(rep.outputs[0].added_female, std::min(gf, gm));
    EXPECT_EQ(rep.outputs[0].added_male, std::min(gf, gm));

    // Off without gendered queries: no dictionary, no pairs; pairs need gendered queries.
    PlantedConfig bad = stats_config(plumb::index::AnswerPositions::Early);
    bad.generated_pairs = 10;
    EXPECT_THROW(PlantedGenerator{bad}, plumb::InvalidArgument);
}

// Paper 001's learnable cause (near_duplicate_negatives): the hard negatives of the gendered TRAIN
// queries are near-duplicates of a relevant passage — every query term, never the complete
// answer span, placed like the answers (early) — whose gender words mirror the relevant
// passages' (always gendered, the other gender with P = query_gender_skew), so the gender of the
// words tells their triples' positive from the negative. Every other passage (dev / test, the
// neutral queries', the relevant ones) is byte-identical to the collection without it.
TEST(PlantedCauses, NearDuplicateNegativesMirrorTheGenderOfTrainGenderedQueries) {
    PlantedConfig c = stats_config(plumb::index::AnswerPositions::Early);
    c.train_queries = 600;
    c.test_queries = 200;
    c.hard_negatives = 3;
    c.female_query_share = 0.3;
    c.male_query_share = 0.3;
    c.gender_share = 0.6;  // hard negatives without the option: gendered 60 % of the time
    PlantedConfig on_c = c;
    on_c.near_duplicate_negatives = plumb::index::NearDuplicateNegatives::Gendered;
    PlantedGenerator off(c), on(on_c);
    const auto words = planted_word_list();
    std::unordered_set<std::uint64_t> plain;
    double n = 0, start = 0, off_start = 0, other = 0;
    for (std::uint32_t q = 0; q < 600; ++q) {
        if (on.query_gender(q) == 'n') continue;
        const auto terms = on.query_terms(q), answer = on.answer_span(q);
        for (auto p : on.hard_negative_passages(q)) {
            plain.insert(p);
            const auto pp = on.passage(p);
            const auto w = words_of(pp.doc.text);
            const auto g = plumb::eval::count_gender_words(pp.doc.text, words);
            ASSERT_GT(g.female + g.male, 0u) << pp.doc.text;  // always gendered
            EXPECT_TRUE(g.female == 0 || g.male == 0) << pp.doc.text;  // one gender
            other += (g.male > 0) != (on.query_gender(q) == 'm');
            for (const auto& t : terms)
                EXPECT_NE(std::find(w.begin(), w.end(), t), w.end()) << t << ": " << pp.doc.text;
            EXPECT_EQ(find_tokens(w, answer), -1) << pp.doc.text;
            ++n;
            start += static_cast<double>(pp.block_start) / pp.tokens;
            const auto po = off.passage(p);
            off_start += static_cast<double>(po.block_start) / po.tokens;
        }
    }
    ASSERT_GT(n, 900);  // ~360 gendered train queries x 3
    // The other gender with P = query_gender_skew = 0.9 (binomial sd <= 0.01 at n > 900).
    EXPECT_NEAR(other / n, 0.9, 0.04);
    // Early placement (truncated exponential, mean ~0.15; the block start is the answer-like
    // x less nothing: mean < 0.25) against the default opposite placement (mean ~0.85).
    EXPECT_LT(start / n, 0.25);
    EXPECT_GT(off_start / n, 0.7);
    for (std::uint64_t i = 0; i < 8000; ++i)
        if (!plain.count(i)) {
            EXPECT_EQ(on.passage(i).doc.text, off.passage(i).doc.text) << i;
        }
    // The topics, qrels and triple ids are unchanged; the manifest records the option when set.
    auto a = temp_dir("plain_off"), b = temp_dir("plain_on");
    PlantedConfig t = tiny_config(3);
    t.female_query_share = 0.2, t.male_query_share = 0.3;
    PlantedConfig u = t;
    u.near_duplicate_negatives = plumb::index::NearDuplicateNegatives::All;
    PlantedGenerator(t).write(a);
    PlantedGenerator(u).write(b);
    for (const char* f : {"topics.tsv", "qrels.txt", "triples.train.ids.tsv", "query_gender.tsv"})
        EXPECT_EQ(plumb::read_file(a / f), plumb::read_file(b / f)) << f;
    EXPECT_FALSE(nlohmann::json::parse(plumb::read_file(a / "manifest.json"))["parameters"].contains(
        "near_duplicate_negatives"));
    EXPECT_EQ(nlohmann::json::parse(plumb::read_file(b / "manifest.json"))["parameters"]
                  ["near_duplicate_negatives"],
              "all");
    // All: the neutral train queries' hard negatives too (every term); never dev / test ones.
    PlantedGenerator all(u), none(t);
    std::size_t neutral = 0;
    for (std::uint32_t q = 0; q < 90; ++q)
        for (auto p : all.hard_negative_passages(q)) {
            const auto w = words_of(all.passage(p).doc.text);
            if (q < 60) {
                for (const auto& term : all.query_terms(q))
                    EXPECT_NE(std::find(w.begin(), w.end(), term), w.end()) << term;
                neutral += all.query_gender(q) == 'n';
            } else {
                EXPECT_EQ(all.passage(p).doc.text, none.passage(p).doc.text);
            }
        }
    EXPECT_GT(neutral, 0u);
    EXPECT_THROW(plumb::index::parse_near_duplicate_negatives("some"), plumb::InvalidArgument);
    PlantedConfig x = plumb::index::planted_preset("tiny");
    x.near_duplicate_negatives = plumb::index::NearDuplicateNegatives::Gendered;  // needs gendered queries
    EXPECT_THROW(PlantedGenerator{x}, plumb::InvalidArgument);
}

// Generated negatives: one per generated pair, made as the triples' negatives are — a hard
// negative of the pair's own query with probability hard_negative_share (with near-duplicate
// negatives: every term of the pair, gender words mirrored), else a random corpus passage.
TEST(PlantedCauses, GeneratedNegativesAreTheTriplesKindOfNegativeOfTheirOwnQuery) {
    PlantedConfig c = tiny_config(11);
    c.female_query_share = 0.3;
    c.male_query_share = 0.3;
    c.generated_pairs = 400;
    c.generated_negatives = true;
    c.near_duplicate_negatives = plumb::index::NearDuplicateNegatives::Gendered;
    PlantedGenerator g(c);
    auto dir = temp_dir("generated_negatives");
    ASSERT_TRUE(g.write(dir).complete);
    const auto rows = lines_of(dir / "generated_negatives.tsv");
    const auto pairs = lines_of(dir / "generated_pairs.tsv");
    ASSERT_EQ(rows.size(), 400u);
    const auto words = planted_word_list();
    std::set<std::string> gender_word_set;
    for (const auto& [w, gg] : PlantedGenerator::gender_words()) gender_word_set.insert(w);
    std::size_t hard = 0, gendered_hard = 0, other = 0;
    for (std::size_t k = 0; k < rows.size(); ++k) {
        const auto f = fields_of(rows[k]), p = fields_of(pairs[k]);
        ASSERT_EQ(f.size(), 3u) << rows[k];
        EXPECT_EQ(f[0], p[0]);
        const auto pair = g.generated_pair(k);
        if (f[1] == f[0] + "n") {
            ++hard;
            // The pair's terms: its query's words that its passage holds, less gender words
            // (question and connector words are English, never background pseudo-words).
            const auto pw = words_of(pair.passage), nw = words_of(f[2]);
            std::size_t terms = 0, held = 0;
            for (const auto& w : words_of(pair.query)) {
                if (gender_word_set.count(w) ||
                    std::find(pw.begin(), pw.end(), w) == pw.end())
                    continue;
                ++terms;
                held += std::find(nw.begin(), nw.end(), w) != nw.end();
            }
            EXPECT_GE(terms, 2u);
            // Plain (gendered pairs): every term; otherwise a strict subset (0.75 of them).
            if (pair.gender != 'n')
                EXPECT_EQ(held, terms) << f[2];
            else
                EXPECT_GE(held, 1u) << f[2];
            if (pair.gender != 'n') {  // mirrored: gendered, mostly the other gender
                const auto n = plumb::eval::count_gender_words(f[2], words);
                EXPECT_GT(n.female + n.male, 0u) << f[2];
                ++gendered_hard;
                other += (n.male > 0) != (pair.gender == 'm');
            }
        } else {
            const auto i = std::stoull(f[1]);  // a corpus passage, as a random negative
            EXPECT_EQ(f[2], g.passage(i).doc.text);
        }
    }
    // hard_negative_share 0.5: binomial sd 0.025 at n = 400; the other gender w.p. 0.9 (~120
    // gendered hard negatives: sd 0.03).
    EXPECT_NEAR(hard / 400.0, 0.5, 0.1);
    ASSERT_GT(gendered_hard, 60u);
    EXPECT_GT(static_cast<double>(other) / gendered_hard, 0.78);
    auto m = nlohmann::json::parse(plumb::read_file(dir / "manifest.json"));
    EXPECT_EQ(m["counts"]["generated_hard_negatives"], hard);
    EXPECT_TRUE(m["parameters"]["generated_negatives"].get<bool>());
    // The pairs themselves do not change with the option; it needs the pairs.
    PlantedConfig d = c;
    d.generated_negatives = false;
    auto dir2 = temp_dir("generated_negatives_off");
    PlantedGenerator(d).write(dir2);
    EXPECT_EQ(plumb::read_file(dir / "generated_pairs.tsv"),
              plumb::read_file(dir2 / "generated_pairs.tsv"));
    EXPECT_FALSE(fs::exists(dir2 / "generated_negatives.tsv"));
    PlantedConfig x = tiny_config(11);
    x.generated_negatives = true;
    EXPECT_THROW(PlantedGenerator{x}, plumb::InvalidArgument);
}

// gender_train_skew: the train queries' gendered relevant passages (neutral queries) are male
// with that probability; dev / test keep gender_skew; nothing else changes.
TEST(PlantedCauses, GenderTrainSkewLeansOnlyTheTrainJudgements) {
    PlantedConfig c = stats_config(plumb::index::AnswerPositions::Early);
    c.train_queries = 1000;
    c.test_queries = 1000;
    c.base.passages = 9000;
    c.gender_share = 0.9;
    c.gender_skew = 0.5;
    PlantedConfig on_c = c;
    on_c.gender_train_skew = 0.85;
    PlantedGenerator off(c), on(on_c);
    const auto words = planted_word_list();
    double n[2] = {0, 0}, male[2] = {0, 0};
    std::unordered_set<std::uint64_t> train_relevant;
    for (std::uint32_t q = 0; q < 2000; ++q)
        for (auto p : on.relevant_passages(q)) {
            if (q < 1000) train_relevant.insert(p);
            const auto g = plumb::eval::count_gender_words(on.passage(p).doc.text, words);
            if (g.female + g.male == 0) continue;
            ++n[q >= 1000];
            male[q >= 1000] += g.male > 0;
        }
    // ~1,350 gendered relevant passages per split: binomial sd <= 0.014.
    ASSERT_GT(n[0], 1000);
    ASSERT_GT(n[1], 1000);
    EXPECT_NEAR(male[0] / n[0], 0.85, 0.045);
    EXPECT_NEAR(male[1] / n[1], 0.5, 0.045);
    for (std::uint64_t i = 0; i < 9000; i += 2)
        if (!train_relevant.count(i)) {
            EXPECT_EQ(on.passage(i).doc.text, off.passage(i).doc.text) << i;
        }
    PlantedConfig x = c;
    x.gender_train_skew = 1.5;
    EXPECT_THROW(PlantedGenerator{x}, plumb::InvalidArgument);
}

// balanced_eval_gender: the dev and test queries' planted passages (neutral queries' answer
// passages, their partial passages, every query's hard negatives) are exactly half male, half
// female per split and class, with equal gender-word totals, and round(share * n) of them
// gendered; the train queries' passages and every other passage are byte-identical to the
// collection without it (random negatives in the triples may be dev / test planted passages,
// so triples.train.tsv's text may differ: not compared).
TEST(PlantedCauses, BalancedEvalGenderIsExactOnDevAndTestOnly) {
    PlantedConfig c = stats_config(plumb::index::AnswerPositions::Early);
    c.train_queries = 300;
    c.dev_queries = 101;
    c.test_queries = 203;
    c.base.passages = 9000;
    c.female_query_share = 0.15;
    c.male_query_share = 0.25;
    c.candidate_gender_share = 0.6;
    c.gender_skew = 0.5;
    c.gender_train_skew = 0.75;
    c.max_gender_words = 3;
    PlantedConfig on_c = c;
    on_c.balanced_eval_gender = true;
    PlantedGenerator off(c), on(on_c);
    const auto words = planted_word_list();
    // [split dev/test][class answer/partial/hard]: passages, gendered, male and female ones, their
    // words.
    struct Tally {
        double n = 0, gendered = 0, male = 0, female = 0, male_words = 0, female_words = 0;
    } t[2][3];
    std::unordered_set<std::uint64_t> eval_planted;
    for (std::uint32_t q = 300; q < 604; ++q) {
        const int split = q < 401 ? 0 : 1;
        auto add = [&](Tally& x, std::uint64_t p) {
            eval_planted.insert(p);
            const auto g = plumb::eval::count_gender_words(on.passage(p).doc.text, words);
            ASSERT_FALSE(g.male > 0 && g.female > 0) << p;
            ASSERT_LE(g.male + g.female, 3u) << p;
            ++x.n;
            x.gendered += g.male + g.female > 0;
            x.male += g.male > 0;
            x.female += g.female > 0;
            x.male_words += g.male;
            x.female_words += g.female;
        };
        if (on.query_gender(q) == 'n') {
            const auto& rel = on.relevant_passages(q);
            add(t[split][0], rel.front());
            for (std::size_t k = 1; k < rel.size(); ++k) add(t[split][1], rel[k]);
        }
        for (auto p : on.hard_negative_passages(q)) add(t[split][2], p);
    }
    for (int split = 0; split < 2; ++split)
        for (int cls = 0; cls < 3; ++cls) {
            const Tally& x = t[split][cls];
            SCOPED_TRACE(testing::Message() << "split " << split << " class " << cls);
            ASSERT_GT(x.n, 20);
            EXPECT_EQ(x.gendered, std::round(0.6 * x.n));
            // An odd gendered count leaves one passage (1..3 words) without a partner.
            EXPECT_LE(std::abs(x.male - x.female), 1.0);
            if (static_cast<long>(x.gendered) % 2 == 0) {
                EXPECT_EQ(x.male, x.female);
                EXPECT_EQ(x.male_words, x.female_words);
            } else {
                EXPECT_LE(std::abs(x.male_words - x.female_words), 3.0);
            }
        }
    // Without the option the genders are drawn: the same tallies are not all equal (here the
    // test's passages are the same ones, only their gender words differ), so the checks above
    // can fail.
    int unequal = 0;
    for (int split = 0; split < 2; ++split)
        for (int cls = 0; cls < 3; ++cls) {
            double male = 0, female = 0;
            auto tally = [&](std::uint64_t p) {
                const auto g = plumb::eval::count_gender_words(off.passage(p).doc.text, words);
                male += g.male > 0, female += g.female > 0;
            };
            for (std::uint32_t q = split ? 401 : 300; q < (split ? 604u : 401u); ++q) {
                const auto& rel = off.relevant_passages(q);
                if (cls == 0 && off.query_gender(q) == 'n') tally(rel.front());
                if (cls == 1 && off.query_gender(q) == 'n')
                    for (std::size_t k = 1; k < rel.size(); ++k) tally(rel[k]);
                if (cls == 2)
                    for (auto p : off.hard_negative_passages(q)) tally(p);
            }
            unequal += std::abs(male - female) > 1.0;
        }
    EXPECT_GE(unequal, 1);
    for (std::uint64_t i = 0; i < 9000; ++i)
        if (!eval_planted.count(i)) {
            EXPECT_EQ(on.passage(i).doc.text, off.passage(i).doc.text) << i;
        }
    auto a = temp_dir("balanced_eval_on");
    on.write(a);
    auto m = nlohmann::json::parse(plumb::read_file(a / "manifest.json"));
    EXPECT_TRUE(m["parameters"]["balanced_eval_gender"].get<bool>());
    PlantedConfig x = on_c;
    x.gender_skew = 0.75;  // dev / test relevant passages would have to lean male
    EXPECT_THROW(PlantedGenerator{x}, plumb::InvalidArgument);
}

TEST(PlantedCli, Paper001CauseOptions) {
    PlantedConfig c = tiny_config(7);
    c.female_query_share = 0.2;
    c.male_query_share = 0.3;
    c.gender_skew = 0.5;
    c.gender_train_skew = 0.8;
    c.near_duplicate_negatives = plumb::index::NearDuplicateNegatives::Gendered;
    c.generated_pairs = 40;
    c.generated_negatives = true;
    expect_cli_writes_as_library("cli_001",
                                 "--female-queries 0.2 --male-queries 0.3 --gender-skew 0.5"
                                 " --gender-train-skew 0.8 --near-duplicate-negatives gendered"
                                 " --generated-pairs 40 --generated-negatives",
                                 c,
                                 {"corpus.tsv", "triples.train.tsv", "generated_pairs.tsv",
                                  "generated_negatives.tsv", "manifest.json"});
    auto fails = [](const std::string& args) {
        std::string c = std::string(PLUMB_CLI_PATH) + " generate -o " +
                        temp_dir("cli_001_bad").string() + " " + args + " --quiet 2>/dev/null";
        return std::system(c.c_str()) != 0;
    };
    // --generated-negatives needs the pairs; gendered near-duplicates need gendered queries.
    EXPECT_TRUE(fails("--planted --size tiny --female-queries 0.2 --generated-negatives"));
    EXPECT_TRUE(fails("--planted --size tiny --near-duplicate-negatives gendered"));
    EXPECT_TRUE(fails("--planted --size tiny --near-duplicate-negatives some"));
    EXPECT_TRUE(fails("--planted --size tiny --gender-train-skew 1.2"));
    EXPECT_TRUE(fails("--gender-train-skew 0.8"));  // needs --planted
    EXPECT_TRUE(fails("--planted --size tiny --balanced-eval-gender"));  // gender skew 0.75
    PlantedConfig b = tiny_config(7);
    b.female_query_share = 0.2;
    b.male_query_share = 0.3;
    b.gender_skew = 0.5;
    b.balanced_eval_gender = true;
    expect_cli_writes_as_library(
        "cli_001_balanced",
        "--female-queries 0.2 --male-queries 0.3 --gender-skew 0.5 --balanced-eval-gender", b,
        {"corpus.tsv", "manifest.json"});
}
