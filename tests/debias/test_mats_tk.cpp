// ATS/MATS over a real TK model's contextualized vectors, and the `plumb debias mats` CLI.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "debias/mats.hpp"
#include "plugin/text_io.hpp"
#include "rerank/tk_model.hpp"
#include "tests/test_tmp.hpp"

namespace fs = std::filesystem;

namespace {
plumb::rerank::TkConfig tiny_config(float mixer) {
    plumb::rerank::TkConfig c;
    c.embedding_dim = 4;
    c.layers = 1;
    c.heads = 2;
    c.head_dim = 2;
    c.ff_dim = 8;
    c.mixer_init = mixer;
    return c;
}

std::vector<plumb::debias::PassageTermVectors> vectors_of(const plumb::rerank::TkModel& m,
                                                          const std::vector<std::string>& texts) {
    std::vector<std::string_view> views(texts.begin(), texts.end());
    std::vector<plumb::debias::PassageTermVectors> out;
    for (auto& tv : m.passage_vectors(views)) {
        plumb::debias::PassageTermVectors p;
        p.terms = tv.terms;
        for (auto x : tv.positions) p.positions.push_back(static_cast<std::uint32_t>(x));
        p.vectors = tv.values;
        out.push_back(std::move(p));
    }
    return out;
}

// Occurrences share positions across passages (e.g. "alpha" at 0 in the first two), so that
// ATS(0) is defined.
const std::vector<std::string> kTexts = {"alpha beta gamma delta alpha",
                                         "alpha gamma beta delta gamma",
                                         "beta alpha delta gamma alpha beta"};
}  // namespace

TEST(MatsWithTk, MixerOneMeansNoPositionBias) {
    // With α = 1, TK's p̂ = the word embedding itself (FORMULAS.md: q̂ = α·q + (1-α)·TF(q)):
    // every occurrence of a term has the same vector wherever it stands, so ATS(Δa) = 1 for all
    // Δa and MATS = 0.
    plumb::rerank::TkVocabulary vocab({"alpha", "beta", "gamma", "delta"});
    auto model = plumb::rerank::TkModel::create(tiny_config(1.0f), vocab, {}, 7);
    auto passages = vectors_of(model, kTexts);
    auto curve = plumb::debias::compute_ats(passages, 4);
    ASSERT_GE(curve.ats.size(), 3u);
    for (double a : curve.ats) {
        if (!std::isnan(a)) {
            EXPECT_NEAR(a, 1.0, 1e-5);
        }
    }
    EXPECT_NEAR(curve.mats, 0.0, 1e-5);

    // With α = 0.5 the Transformer output (which sees positions) enters p̂: ATS falls below 1.
    auto mixed = plumb::rerank::TkModel::create(tiny_config(0.5f), vocab, {}, 7);
    auto curve2 = plumb::debias::compute_ats(vectors_of(mixed, kTexts), 4);
    bool below = false;
    for (double a : curve2.ats) below = below || (!std::isnan(a) && a < 0.999);
    EXPECT_TRUE(below);
}

TEST(MatsWithTk, CliWritesCurveReportAndPlot) {
    fs::path dir = plumb::test::process_dir("plumb_mats_cli_");
    fs::create_directories(dir);
    plumb::rerank::TkVocabulary vocab({"alpha", "beta", "gamma", "delta"});
    plumb::rerank::TkModel::create(tiny_config(0.5f), vocab, {}, 7).save(dir / "tk");
    {
        std::ofstream c(dir / "corpus.tsv");
        for (std::size_t i = 0; i < kTexts.size(); ++i) c << "p" << i << "\t" << kTexts[i] << "\n";
    }
    std::string cmd = std::string(PLUMB_CLI_PATH) + " debias mats --quiet --model " +
                      (dir / "tk").string() + " --corpus " + (dir / "corpus.tsv").string() +
                      " --output " + (dir / "ats").string() + " > /dev/null";
    ASSERT_EQ(std::system(cmd.c_str()), 0);
    auto report = nlohmann::json::parse(plumb::read_file(dir / "ats.json"));
    EXPECT_EQ(report["passages"].get<int>(), 3);
    // The longest passage has 6 words (positions 0..5), so max Δa <= 5.
    EXPECT_LE(report["max_delta"].get<int>(), 5);
    EXPECT_TRUE(report["mats"].is_number());
    EXPECT_GT(fs::file_size(dir / "ats.png"), 100u);
    EXPECT_GT(fs::file_size(dir / "ats.svg"), 100u);
    auto tsv = plumb::read_file(dir / "ats.tsv");
    EXPECT_EQ(tsv.substr(0, 19), "delta\tats\tsd\tterms\n");
    fs::remove_all(dir);
}
