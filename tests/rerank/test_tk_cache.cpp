// TK passage cache: cached scores against the uncached Torch path (both kernel code paths, both
// TK variants, every kind of passage), a hand-computed score from a cache with known vectors
// (proving the stage reads the cache), fallbacks (missing docid, changed text), the automatic
// location, refusal of another model's cache, corrupt/truncated files, resumable building; int8
// caches (format version 2): quantisation by hand and against the model's vectors, exactness on
// representable vectors, resuming, corrupt files.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "plugin/error.hpp"
#include "plugin/log.hpp"
#include "rerank/detail/tk_cache_kernels.hpp"
#include "rerank/safetensors.hpp"
#include "rerank/tk_cache.hpp"
#include "rerank/tk_model.hpp"
#include "rerank/tk_stage.hpp"
#include "tests/support/temp_dir.hpp"

namespace fs = std::filesystem;
using namespace plumb::rerank;
using plumb::test::TempDir;

namespace {

/// A small random model; embedding_dim 10 (not a multiple of 8: the vector code's tails).
TkModel random_model(std::uint64_t seed, bool mean_kernel = false) {
    TkConfig c;
    c.embedding_dim = 10;
    c.layers = 2;
    c.heads = 2;
    c.head_dim = 3;
    c.ff_dim = 5;
    c.max_query_length = 8;
    c.max_passage_length = 40;
    c.mean_kernel = mean_kernel;
    std::vector<std::string> words;
    for (int i = 0; i < 30; ++i) words.push_back("w" + std::to_string(i));
    return TkModel::create(c, TkVocabulary(words), {}, seed);
}

std::string random_text(std::mt19937& rng, int n) {
    std::string s;
    std::uniform_int_distribution<int> w(0, 34);  // w30..w34 are OOV
    for (int i = 0; i < n; ++i) s += "W" + std::to_string(w(rng)) + (i % 4 == 3 ? ". " : " ");
    return s;
}

struct Collection {
    std::vector<std::string> ids, texts;
    DocumentStream stream() const {
        auto next = std::make_shared<std::size_t>(0);
        return [this, next](plumb::DocId& id, std::string& text) {
            if (*next >= ids.size()) return false;
            id = ids[*next];
            text = texts[*next];
            ++*next;
            return true;
        };
    }
};

/// 37 passages: random lengths 1..50 (over the 40-word maximum too), one empty, one all-OOV.
Collection collection() {
    Collection c;
    std::mt19937 rng(9);
    for (int i = 0; i < 35; ++i) {
        c.ids.push_back("d" + std::to_string(i));
        c.texts.push_back(random_text(rng, 1 + (i * 13) % 50));
    }
    c.ids.push_back("empty");
    c.texts.push_back("");
    c.ids.push_back("oov");
    c.texts.push_back("zzz yyy, xxx");
    return c;
}

std::vector<plumb::Candidate> candidates(const Collection& c) {
    std::vector<plumb::Candidate> out;
    for (std::size_t i = 0; i < c.ids.size(); ++i) {
        plumb::Candidate k;
        k.docid = c.ids[i];
        k.text = c.texts[i];
        out.push_back(k);
    }
    return out;
}

/// The hand model of test_tk.cpp: 2-d embeddings a = (1,0), b = (0,1), c = (-1,0), d = (2,0),
/// α = 1 (q̂ = q), kernel weights `w`.
fs::path hand_model(const fs::path& dir, const std::vector<float>& w) {
    TkConfig c;
    c.embedding_dim = 2;
    c.layers = 1;
    c.heads = 1;
    c.head_dim = 0;
    c.ff_dim = 2;
    c.mixer_init = 1.0f;
    c.max_passage_length = 16;
    std::vector<float> emb = {0, 0, 0, 0, 1, 0, 0, 1, -1, 0, 2, 0};
    auto m = TkModel::create(c, TkVocabulary({"a", "b", "c", "d"}), emb, 7);
    m.save(dir);
    const auto path = dir / "model.safetensors";
    std::map<std::string, TensorData> all;
    {
        SafetensorsFile st(path);
        for (const auto& v : st.tensors()) {
            TensorData d;
            d.dtype = v.dtype;
            d.shape = v.shape;
            d.bytes.assign(v.bytes.begin(), v.bytes.end());
            all.emplace(v.name, std::move(d));
        }
    }
    all["kernel_bin_weights.weight"] = TensorData::from_float32({1, 11}, w);
    save_safetensors(path, all);
    return dir;
}

/// Writes a cache whose passages have the given texts' hashes and all-zero vectors.
void write_zero_cache(const fs::path& file, const TkModel& m,
                      const std::vector<std::pair<std::string, std::string>>& docs) {
    const auto dim = static_cast<std::uint32_t>(m.config().embedding_dim);
    TkCacheWriter w(file, dim, m.checksum());
    for (const auto& [id, text] : docs) {
        auto ids = m.passage_ids(text);
        std::vector<std::uint16_t> rows(ids.size() * dim, 0);  // fp16 +0
        w.append(id, tk_text_hash(text), rows);
    }
    w.finish();
}

std::string read_bytes(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), {}};
}

void write_bytes(const fs::path& p, const std::string& s) {
    std::ofstream out(p, std::ios::binary | std::ios::trunc);
    out << s;
}

template <class F>
std::string error_of(F&& f) {
    try {
        f();
    } catch (const std::exception& e) {
        return e.what();
    }
    return "(no error)";
}

}  // namespace

TEST(TkCache, Fp16ConversionRoundsToNearestEven) {
    // Values chosen by hand from the binary16 format: 1 = 0x3C00, -2 = 0xC000, 65504 = 0x7BFF
    // (largest finite), 1 + 2^-11 is halfway between 1 and 1 + 2^-10 -> even (1.0 = 0x3C00),
    // 1 + 3·2^-11 -> 1 + 2^-9 (0x3C02), 2^-24 = 0x0001 (smallest subnormal), 1e6 -> +inf 0x7C00.
    const std::vector<float> in{1.0f, -2.0f, 65504.0f, 1.0f + std::ldexp(1.0f, -11),
                                1.0f + 3 * std::ldexp(1.0f, -11), std::ldexp(1.0f, -24), 1e6f, 0.0f};
    const std::vector<std::uint16_t> want{0x3C00, 0xC000, 0x7BFF, 0x3C00,
                                          0x3C02, 0x0001, 0x7C00, 0x0000};
    for (bool vec : {true, false}) {
        detail::tk_cache_kernels_set_vectorised(vec);
        std::vector<std::uint16_t> h(in.size());
        detail::fp32_to_fp16(in.data(), h.data(), in.size());
        EXPECT_EQ(h, want);
        std::vector<float> back(in.size());
        detail::fp16_to_fp32(h.data(), back.data(), h.size());
        EXPECT_EQ(back[0], 1.0f);
        EXPECT_EQ(back[1], -2.0f);
        EXPECT_EQ(back[4], 1.0f + std::ldexp(1.0f, -9));
        EXPECT_EQ(back[5], std::ldexp(1.0f, -24));
        EXPECT_TRUE(std::isinf(back[6]));
    }
    detail::tk_cache_kernels_set_vectorised(true);
}

TEST(TkCache, CachedScoresMatchTheUncachedPath) {
    TempDir tmp("tk_cache");
    const auto col = collection();
    for (bool mean_kernel : {false, true}) {
        auto model = std::make_shared<const TkModel>(random_model(5, mean_kernel));
        const auto file = tmp / (mean_kernel ? "mean.plumbtkc" : "plain.plumbtkc");
        TkCacheBuildOptions o;
        o.batch_size = 4;
        o.chunk = 10;
        auto r = build_tk_cache(*model, col.stream(), col.ids.size(), file, o);
        EXPECT_TRUE(r.complete);
        EXPECT_EQ(r.passages, col.ids.size());
        EXPECT_FALSE(fs::exists(fs::path(file.string() + ".partial")));
        auto cache = TkPassageCache::open(file);
        EXPECT_EQ(cache->size(), col.ids.size());
        EXPECT_EQ(cache->dim(), 10u);
        EXPECT_EQ(cache->model_checksum(), model->checksum());
        EXPECT_EQ(cache->find("empty")->passage.length, 0u);
        EXPECT_EQ(cache->find("d4")->passage.length, 3u);   // 1 + 52 % 50 words
        EXPECT_EQ(cache->find("d7")->passage.length, 40u);  // 1 + 91 % 50 = 42, truncated
        EXPECT_FALSE(cache->find("d999").has_value());

        auto cands = candidates(col);
        TkStageOptions plain{100, 8, 0, "tk", "none"};
        TkStageOptions cached{100, 8, 0, "tk", file.string()};
        auto s_plain = make_tk_stage(model, plain);
        auto s_cached = make_tk_stage(model, cached);
        for (const std::string q : {"w3 w4 w30 w7", "w1", "w2 w2 w9 w11 w12 w13 w14 w15 w16 w17"}) {
            plumb::Query query{"q", q};
            auto ref = s_plain->score(query, cands);
            for (bool vec : {true, false}) {
                detail::tk_cache_kernels_set_vectorised(vec);
                auto got = s_cached->score(query, cands);
                ASSERT_EQ(got.size(), ref.size());
                for (std::size_t i = 0; i < ref.size(); ++i) {
                    EXPECT_NEAR(got[i], ref[i], 1e-3) << q << " " << col.ids[i] << " vec " << vec;
                }
            }
            detail::tk_cache_kernels_set_vectorised(true);
        }
        // A query without words scores 0 everywhere, as the uncached path.
        auto zero = s_cached->score(plumb::Query{"q", ",,"}, cands);
        for (float v : zero) EXPECT_EQ(v, 0.0f);
    }
}

TEST(TkCache, StageReadsTheCacheAndFallsBack) {
    // Hand model, W: 1 on μ = 1, 0.5 on μ = 0.1. A cache holding zero vectors for "p1" = "a c d":
    // every cosine is 0, so K(μ) = e^{-μ²/0.02} per passage term: μ = 1: 3·e^{-50} < 1e-10 ->
    // ln(1e-10); μ = 0.1: 3·e^{-0.5}. Query "a b" (2 terms): s = 2·ln(1e-10) + 0.5·2·(ln 3 - 0.5).
    // Uncached, "a c d" scores (test_tk.cpp KernelPoolingByHand, μ = -0.9 weight 0 here):
    // ln 2 + ln(1e-10) + 0.5·(ln(1e-10) + ln 3 - 0.5).
    TempDir tmp("tk_cache");
    std::vector<float> w(11, 0.0f);
    w[0] = 1.0f;
    w[5] = 0.5f;
    const auto dir = hand_model(tmp / "model", w);
    auto model = std::make_shared<const TkModel>(TkModel::load(dir));
    const double L = std::log(1e-10);
    const double zero_vectors = 2 * L + 0.5 * 2 * (std::log(3.0) - 0.5);
    const double real = std::log(2.0) + L + 0.5 * (L + std::log(3.0) - 0.5);
    const auto file = tmp / "zero.plumbtkc";
    write_zero_cache(file, *model, {{"p1", "a c d"}, {"p2", "b"}});

    std::vector<plumb::Candidate> cands(3);
    cands[0].docid = "p1";
    cands[0].text = "a c d";
    cands[1].docid = "p3";  // not in the cache
    cands[1].text = "a c d";
    cands[2].docid = "p2";  // in the cache for the text "b": changed text -> uncached
    cands[2].text = "a c d";
    plumb::Query q{"q", "a b"};
    auto s = make_tk_stage(model, TkStageOptions{10, 4, 0, "tk", file.string()})->score(q, cands);
    ASSERT_EQ(s.size(), 3u);
    EXPECT_NEAR(s[0], zero_vectors, 1e-3);
    EXPECT_NEAR(s[1], real, 2e-3);
    EXPECT_NEAR(s[2], real, 2e-3);
    // Without the cache all three are the real score.
    auto u = make_tk_stage(model, TkStageOptions{10, 4, 0, "tk", "none"})->score(q, cands);
    EXPECT_NEAR(u[0], real, 2e-3);

    // Automatic location: the model folder's passage-cache-<checksum>.plumbtkc.
    fs::copy_file(file, tk_cache_default_path(dir, model->checksum()));
    auto a = make_tk_stage(dir, TkStageOptions{10, 4, 0, "tk", ""})->score(q, cands);
    EXPECT_NEAR(a[0], zero_vectors, 1e-3);
    auto off = make_tk_stage(dir, TkStageOptions{10, 4, 0, "tk", "none"})->score(q, cands);
    EXPECT_NEAR(off[0], real, 2e-3);
}

TEST(TkCache, AnotherModelsCacheIsRefused) {
    TempDir tmp("tk_cache");
    const auto col = collection();
    auto a = random_model(5);
    auto b = std::make_shared<const TkModel>(random_model(6));
    ASSERT_NE(a.checksum(), b->checksum());
    // Same weights, same checksum (computed from the values, not the object).
    EXPECT_EQ(a.checksum(), random_model(5).checksum());
    const auto file = tmp / "a.plumbtkc";
    build_tk_cache(a, col.stream(), 0, file);
    auto msg = error_of([&] { make_tk_stage(b, TkStageOptions{10, 4, 0, "tk", file.string()}); });
    EXPECT_NE(msg.find("another model"), std::string::npos) << msg;
    EXPECT_NE(msg.find(file.string()), std::string::npos) << msg;
    EXPECT_THROW(make_tk_stage(b, TkStageOptions{10, 4, 0, "tk", file.string()}),
                 plumb::ConfigError);

    // The automatic location holding another model's file (renamed): ignored with a warning,
    // scores as without a cache.
    const auto bdir = tmp / "b";
    b->save(bdir);
    auto bl = TkModel::load(bdir);
    fs::copy_file(file, tk_cache_default_path(bdir, bl.checksum()));
    std::vector<std::string> warnings;
    plumb::set_log_sink([&](plumb::LogLevel, std::string_view m) { warnings.emplace_back(m); });
    auto stage = make_tk_stage(bdir, TkStageOptions{100, 4, 0, "tk", ""});
    plumb::set_log_sink(nullptr);
    ASSERT_EQ(warnings.size(), 1u);
    EXPECT_NE(warnings[0].find("another model"), std::string::npos);
    auto cands = candidates(col);
    auto got = stage->score(plumb::Query{"q", "w1 w2"}, cands);
    auto ref = make_tk_stage(bdir, TkStageOptions{100, 4, 0, "tk", "none"})
                   ->score(plumb::Query{"q", "w1 w2"}, cands);
    for (std::size_t i = 0; i < ref.size(); ++i) EXPECT_FLOAT_EQ(got[i], ref[i]);
}

TEST(TkCache, CorruptFilesAreErrorsNamingTheFile) {
    TempDir tmp("tk_cache");
    const auto col = collection();
    auto m = random_model(5);
    const auto file = tmp / "c.plumbtkc";
    build_tk_cache(m, col.stream(), 0, file);
    const auto good = read_bytes(file);
    auto expect_error = [&](const std::string& bytes, const std::string& what) {
        const auto bad = tmp / "bad.plumbtkc";
        write_bytes(bad, bytes);
        auto msg = error_of([&] { TkPassageCache::open(bad); });
        EXPECT_NE(msg.find(bad.string()), std::string::npos) << msg;
        EXPECT_NE(msg.find(what), std::string::npos) << msg;
        EXPECT_THROW(TkPassageCache::open(bad), plumb::IndexError);
    };
    expect_error(good.substr(0, good.size() - 1), "truncated");
    expect_error(good.substr(0, 100), "truncated");
    expect_error(good.substr(0, good.size() / 2), "truncated");
    expect_error(good + "x", "trailing");
    auto magic = good;
    magic[0] = 'X';
    expect_error(magic, "not a TK passage cache");
    auto version = good;
    version[8] = 3;  // version 2 exists since int8 caches (TkCachePrecision::Int8)
    expect_error(version, "version 3");
    auto type = good;  // int8 values need version 2
    type[12] = 2;
    expect_error(type, "unknown value type 2 for version 1");
    auto entry = good;  // first entry's first row far outside
    entry[128 + 16 + 7] = 0x7f;
    expect_error(entry, "outside");
    EXPECT_THROW(TkPassageCache::open(tmp / "missing.plumbtkc"), plumb::IoError);
}

TEST(TkCache, BuildResumesAfterAnInterruption) {
    TempDir tmp("tk_cache");
    const auto col = collection();
    auto m = random_model(5);
    TkCacheBuildOptions o;
    o.chunk = 8;
    const auto whole = tmp / "whole.plumbtkc";
    build_tk_cache(m, col.stream(), 0, whole, o);

    // Cancelled after the second chunk: no final file, the partial state holds 16 passages.
    const auto file = tmp / "resumed.plumbtkc";
    const fs::path partial = file.string() + ".partial";
    plumb::CancelToken cancel;
    auto r1 = build_tk_cache(m, col.stream(), 0, file, o,
                             [&](std::uint64_t done, std::uint64_t) {
                                 if (done >= 16) cancel.request();
                             },
                             &cancel);
    EXPECT_FALSE(r1.complete);
    EXPECT_EQ(r1.passages, 16u);
    EXPECT_FALSE(fs::exists(file));
    ASSERT_TRUE(fs::exists(partial));
    // A torn record at the end (a kill in the middle of a write) is dropped on resume.
    {
        std::ofstream out(partial, std::ios::binary | std::ios::app);
        out << std::string("\x05\x00\x00\x00\x03\x00\x00\x00garbage", 15);
    }
    // Another collection order: refused.
    Collection other = col;
    std::swap(other.ids[3], other.ids[4]);
    auto msg = error_of([&] { build_tk_cache(m, other.stream(), 0, file, o); });
    EXPECT_NE(msg.find("collection changed"), std::string::npos) << msg;
    // Another model: refused, naming the partial file.
    msg = error_of([&] { build_tk_cache(random_model(6), col.stream(), 0, file, o); });
    EXPECT_NE(msg.find("another model"), std::string::npos) << msg;
    EXPECT_NE(msg.find(partial.string()), std::string::npos) << msg;

    auto r2 = build_tk_cache(m, col.stream(), 0, file, o);
    EXPECT_TRUE(r2.complete);
    EXPECT_EQ(r2.resumed, 16u);
    EXPECT_EQ(r2.passages, col.ids.size());
    EXPECT_FALSE(fs::exists(partial));
    // The same bytes as a build without interruption.
    EXPECT_EQ(read_bytes(file), read_bytes(whole));
}

TEST(TkCache, OneWriterPerOutputAndTornHeaders) {
    TempDir tmp("tk_cache");
    const auto file = tmp / "w.plumbtkc";
    {
        TkCacheWriter first(file, 4, 7);
        auto msg = error_of([&] { TkCacheWriter second(file, 4, 7); });
        EXPECT_NE(msg.find("another run is writing"), std::string::npos) << msg;
    }
    // The first writer is gone (its lock with it): a third one resumes its empty state.
    TkCacheWriter third(file, 4, 7);
    EXPECT_EQ(third.count(), 0u);
    // A header torn right after creation (a prefix of the magic) starts over; anything else is
    // not ours and is refused.
    const fs::path torn = tmp / "t.plumbtkc.partial";
    write_bytes(torn, "PLTK");
    TkCacheWriter restarted(tmp / "t.plumbtkc", 4, 7);
    std::vector<std::uint16_t> row(4, 0x3C00);
    restarted.append("a", 1, row);
    restarted.finish();
    EXPECT_EQ(TkPassageCache::open(tmp / "t.plumbtkc")->size(), 1u);
    write_bytes(tmp / "u.plumbtkc.partial", "hello, world");
    auto msg = error_of([&] { TkCacheWriter w(tmp / "u.plumbtkc", 4, 7); });
    EXPECT_NE(msg.find("not a partial TK passage cache"), std::string::npos) << msg;
}

TEST(TkCache, DuplicateDocidsAreAnError) {
    TempDir tmp("tk_cache");
    Collection col;
    col.ids = {"x", "y", "x"};
    col.texts = {"w1", "w2", "w3"};
    auto m = random_model(5);
    auto msg = error_of([&] { build_tk_cache(m, col.stream(), 0, tmp / "dup.plumbtkc"); });
    EXPECT_NE(msg.find("'x' occurs twice"), std::string::npos) << msg;
    EXPECT_FALSE(fs::exists(tmp / "dup.plumbtkc"));
}

// ---------------------------------------------------------------------------------------------
// int8 caches (format version 2): one f32 scale per vector.

TEST(TkCacheInt8, QuantisationByHand) {
    // Row 1: max |x| = 2.54 -> scale 2.54 / 127 = 0.02; 2.54, -1.0, 0.3, 0 -> 127, -50, 15, 0.
    // Row 2: all zero -> scale 0, values 0. Row 3: -0.5 is the largest magnitude -> -127.
    const std::vector<float> rows{2.54f, -1.0f, 0.3f, 0.0f, 0, 0, 0, 0, 0.25f, -0.5f, 0.1f, 0.0f};
    std::vector<std::int8_t> q(12);
    std::vector<float> scales(3);
    tk_quantize_rows(rows, 4, q.data(), scales.data());
    EXPECT_FLOAT_EQ(scales[0], 0.02f);
    EXPECT_EQ(scales[1], 0.0f);
    EXPECT_FLOAT_EQ(scales[2], 0.5f / 127);
    const std::vector<std::int8_t> want{127, -50, 15, 0, 0, 0, 0, 0, 64, -127, 25, 0};
    EXPECT_EQ(q, want);  // 0.25 / (0.5/127) = 63.5 exactly in float -> 64 (to even)
}

TEST(TkCacheInt8, RowsAreTheQuantisedVectorsAtHalfTheSize) {
    // Every stored row against the model's own contextualised vectors (the Torch path),
    // normalised as the cosine match does: scale = max |x| / 127 and |scale · q - x| <= scale / 2
    // (rounding to the nearest level). The scores are printed, not bounded: int8 does not keep
    // the 1e-3 tolerance (TK's log of kernel sums amplifies cosine errors; see rerank/README.md).
    TempDir tmp("tk_cache");
    const auto col = collection();
    for (bool mean_kernel : {false, true}) {
        auto model = std::make_shared<const TkModel>(random_model(5, mean_kernel));
        const auto f16 = tmp / "f16.plumbtkc", i8 = tmp / "i8.plumbtkc";
        TkCacheBuildOptions o;
        o.batch_size = 4;
        o.chunk = 10;
        build_tk_cache(*model, col.stream(), 0, f16, o);
        o.precision = TkCachePrecision::Int8;
        auto r = build_tk_cache(*model, col.stream(), col.ids.size(), i8, o);
        EXPECT_TRUE(r.complete);
        auto a = TkPassageCache::open(f16);
        auto b = TkPassageCache::open(i8);
        EXPECT_EQ(a->precision(), TkCachePrecision::Fp16);
        EXPECT_EQ(a->version(), 1u);  // fp16 files keep version 1
        EXPECT_EQ(b->precision(), TkCachePrecision::Int8);
        EXPECT_EQ(b->version(), 2u);
        EXPECT_EQ(b->rows(), a->rows());
        // D + 4 bytes a row instead of 2D (D = 10: 14 vs 20), up to two 64-byte alignments.
        const auto header_etc = a->file_size() - a->rows() * 20;
        EXPECT_LE(b->file_size(), header_etc + b->rows() * 14 + 64);
        EXPECT_GE(b->file_size(), header_etc + b->rows() * 14);

        const std::size_t dim = 10;
        std::vector<std::string_view> texts(col.texts.begin(), col.texts.end());
        auto vecs = model->passage_vectors(texts);
        std::size_t checked = 0;
        for (std::size_t p = 0; p < col.ids.size(); ++p) {
            const auto e = b->find(col.ids[p]);
            ASSERT_TRUE(e.has_value());
            ASSERT_EQ(e->passage.length, vecs[p].terms.size()) << col.ids[p];
            EXPECT_EQ(e->passage.rows, nullptr);
            for (std::size_t j = 0; j < e->passage.length; ++j) {
                std::vector<double> x(dim);
                double norm = 0, top = 0;
                for (std::size_t d = 0; d < dim; ++d) norm += std::pow(vecs[p].row(j)[d], 2.0);
                for (std::size_t d = 0; d < dim; ++d) {
                    x[d] = vecs[p].row(j)[d] / (std::sqrt(norm) + 1e-13);
                    top = std::max(top, std::abs(x[d]));
                }
                const double scale = e->passage.scales[j];
                EXPECT_NEAR(scale, top / 127, 1e-6 * top) << col.ids[p] << " row " << j;
                for (std::size_t d = 0; d < dim; ++d) {
                    const double v = scale * e->passage.rows_int8[j * dim + d];
                    EXPECT_LE(std::abs(v - x[d]), scale / 2 + 1e-6) << col.ids[p] << " " << j;
                    ++checked;
                }
            }
        }
        EXPECT_EQ(checked, b->rows() * dim);

        // Both kernel code paths read int8 rows alike; the difference to the uncached path is
        // printed for the record.
        auto cands = candidates(col);
        auto s_plain = make_tk_stage(model, TkStageOptions{100, 8, 0, "tk", "none"});
        auto s_int8 = make_tk_stage(model, TkStageOptions{100, 8, 0, "tk", i8.string()});
        double worst = 0;
        for (const std::string q : {"w3 w4 w30 w7", "w1", "w2 w2 w9 w11 w12 w13 w14 w15 w16 w17"}) {
            plumb::Query query{"q", q};
            auto ref = s_plain->score(query, cands);
            detail::tk_cache_kernels_set_vectorised(true);
            auto vec = s_int8->score(query, cands);
            detail::tk_cache_kernels_set_vectorised(false);
            auto scalar = s_int8->score(query, cands);
            detail::tk_cache_kernels_set_vectorised(true);
            for (std::size_t i = 0; i < ref.size(); ++i) {
                EXPECT_NEAR(vec[i], scalar[i], 1e-4 * (1 + std::abs(scalar[i]))) << q << " " << i;
                worst = std::max(worst, static_cast<double>(std::abs(vec[i] - ref[i])));
            }
        }
        std::printf("int8 cache, D = 10, mean_kernel %d: largest |int8 - uncached| %.2e\n",
                    mean_kernel, worst);
    }
}

TEST(TkCacheInt8, ExactlyRepresentableVectorsGiveTheUncachedScores) {
    // The hand model (α = 1: p̂ = the embeddings a = (1,0), b = (0,1), c = (-1,0), d = (2,0)):
    // normalised rows are ±1 / 0, stored exactly (scale 1/127, q = ±127), so the int8 cache must
    // reproduce the uncached scores.
    TempDir tmp("tk_cache");
    std::vector<float> w(11, 0.0f);
    w[0] = 1.0f;
    w[5] = 0.5f;
    w[10] = -0.3f;
    const auto dir = hand_model(tmp / "model", w);
    auto model = std::make_shared<const TkModel>(TkModel::load(dir));
    Collection col;
    col.ids = {"p1", "p2", "p3"};
    col.texts = {"a c d", "b", "d d b a c"};
    TkCacheBuildOptions o;
    o.precision = TkCachePrecision::Int8;
    const auto file = tmp / "hand.plumbtkc";
    build_tk_cache(*model, col.stream(), 0, file, o);
    auto cands = candidates(col);
    for (const std::string q : {"a b", "c", "d a"}) {
        auto ref = make_tk_stage(model, TkStageOptions{10, 4, 0, "tk", "none"})
                       ->score(plumb::Query{"q", q}, cands);
        auto got = make_tk_stage(model, TkStageOptions{10, 4, 0, "tk", file.string()})
                       ->score(plumb::Query{"q", q}, cands);
        for (std::size_t i = 0; i < ref.size(); ++i) {
            EXPECT_NEAR(got[i], ref[i], 1e-5 * (1 + std::abs(ref[i]))) << q << " " << i;
        }
    }
}

TEST(TkCacheInt8, ResumesAndRefusesAnotherPrecision) {
    TempDir tmp("tk_cache");
    const auto col = collection();
    auto m = random_model(5);
    TkCacheBuildOptions o;
    o.chunk = 8;
    o.precision = TkCachePrecision::Int8;
    const auto whole = tmp / "whole.plumbtkc";
    build_tk_cache(m, col.stream(), 0, whole, o);
    const auto file = tmp / "resumed.plumbtkc";
    plumb::CancelToken cancel;
    auto r1 = build_tk_cache(m, col.stream(), 0, file, o,
                             [&](std::uint64_t done, std::uint64_t) {
                                 if (done >= 16) cancel.request();
                             },
                             &cancel);
    EXPECT_FALSE(r1.complete);
    // An fp16 run cannot continue an int8 partial state (nor the other way round).
    TkCacheBuildOptions f16 = o;
    f16.precision = TkCachePrecision::Fp16;
    auto msg = error_of([&] { build_tk_cache(m, col.stream(), 0, file, f16); });
    EXPECT_NE(msg.find("another precision (int8; this run: fp16)"), std::string::npos) << msg;
    auto r2 = build_tk_cache(m, col.stream(), 0, file, o);
    EXPECT_TRUE(r2.complete);
    EXPECT_EQ(r2.resumed, 16u);
    EXPECT_EQ(read_bytes(file), read_bytes(whole));
    // fp16 rows cannot be appended to an int8 writer.
    TkCacheWriter w(tmp / "x.plumbtkc", 4, 7, TkCachePrecision::Int8);
    std::vector<std::uint16_t> row(4, 0x3C00);
    EXPECT_THROW(w.append("a", 1, row), plumb::InvalidArgument);
}

TEST(TkCacheInt8, CorruptFilesAreErrorsNamingTheFile) {
    TempDir tmp("tk_cache");
    const auto col = collection();
    auto m = random_model(5);
    const auto file = tmp / "c.plumbtkc";
    TkCacheBuildOptions o;
    o.precision = TkCachePrecision::Int8;
    build_tk_cache(m, col.stream(), 0, file, o);
    const auto good = read_bytes(file);
    auto expect_error = [&](const std::string& bytes, const std::string& what) {
        const auto bad = tmp / "bad.plumbtkc";
        write_bytes(bad, bytes);
        auto msg = error_of([&] { TkPassageCache::open(bad); });
        EXPECT_NE(msg.find(bad.string()), std::string::npos) << msg;
        EXPECT_NE(msg.find(what), std::string::npos) << msg;
    };
    expect_error(good.substr(0, good.size() - 1), "truncated");
    expect_error(good + "x", "trailing");
    auto scales = good;  // scale offset past the vectors
    scales[88 + 6] = 0x10;
    expect_error(scales, "inconsistent layout");
    auto version = good;  // int8 values in a version-1 file
    version[8] = 1;
    expect_error(version, "unknown value type 2 for version 1");
}
