// The run-line formatter (plugin/trec_run.hpp) against two references: the C library's
// printf("%.9g") of the score (what the header promises) and fmt's "{:.9g}", which
// format_trec_run used before it moved to std::to_chars: the same bytes on many random scores,
// ties, negatives, exponents, zeros and float extremes.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "plugin/trec_run.hpp"

namespace {

std::string printf_score(float s) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(s));
    return buf;
}

/// The lines as format_trec_run wrote them with fmt before (its exact format string).
std::string fmt_lines(const plumb::RankedList& list, std::string_view tag) {
    fmt::memory_buffer buf;
    std::size_t rank = 1;
    for (const auto& c : list.candidates) {
        fmt::format_to(std::back_inserter(buf), "{} Q0 {} {} {:.9g} {}\n", list.qid, c.docid,
                       rank++, c.score, tag);
    }
    return fmt::to_string(buf);
}

std::vector<float> scores() {
    std::vector<float> v = {0.0f, -0.0f, 1.0f, -1.0f, 0.1f, 10.0f, 100000.0f, 999999.9f,
                            1e9f, 123456789.0f, 1234567890.0f, 1e-4f, 1e-5f, 9.9999999e-5f,
                            3.4028235e38f, -3.4028235e38f, FLT_MIN, -FLT_MIN,
                            std::numeric_limits<float>::denorm_min(), 1.17549421e-38f,
                            std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(), 16.5f, 16.25f, 2.5e-7f};
    std::mt19937 rng(20261126);
    // Random bit patterns: every exponent, both signs (NaNs skipped: scores are never NaN).
    std::uniform_int_distribution<std::uint32_t> bits;
    for (int i = 0; i < 200000; ++i) {
        const std::uint32_t b = bits(rng);
        float f;
        std::memcpy(&f, &b, sizeof f);
        if (!std::isnan(f)) v.push_back(f);
    }
    // BM25-like scores (0 to 60), with ties: the same values repeated.
    std::uniform_real_distribution<float> bm25(0.0f, 60.0f);
    for (int i = 0; i < 100000; ++i) v.push_back(bm25(rng));
    for (int i = 0; i < 1000; ++i) v.push_back(v[v.size() - 1 - static_cast<std::size_t>(i)]);
    // Neighbours of powers of ten, where the 9-digit rounding carries into a new digit.
    for (int e = -40; e <= 38; ++e) {
        const float p = static_cast<float>(std::pow(10.0, e));
        for (float f : {p, std::nextafter(p, 0.0f), std::nextafter(p, std::numeric_limits<float>::infinity()), -p}) v.push_back(f);
    }
    return v;
}

}  // namespace

TEST(TrecRun, ScoreDigitsEqualPrintfAndFmt) {
    std::size_t checked = 0;
    for (float s : scores()) {
        std::string line;
        plumb::append_trec_line(line, "q", "d", 1, s, "t");
        const auto want = "q Q0 d 1 " + printf_score(s) + " t\n";
        ASSERT_EQ(line, want) << "score bits " << std::hexfloat << s;
        ASSERT_EQ(line, fmt::format("q Q0 d 1 {:.9g} t\n", s));
        ++checked;
    }
    EXPECT_GT(checked, 300000u);
}

TEST(TrecRun, HandWrittenLines) {
    plumb::RankedList list;
    list.qid = "1048585";
    list.candidates.resize(3);
    list.candidates[0].docid = "7187158";
    list.candidates[0].score = 16.25f;
    list.candidates[1].docid = "7187157";
    list.candidates[1].score = 16.25f;  // a tie keeps the list's order
    list.candidates[2].docid = "D-1";
    list.candidates[2].score = -0.5f;
    EXPECT_EQ(plumb::format_trec_run(list, "plumb-bm25"),
              "1048585 Q0 7187158 1 16.25 plumb-bm25\n"
              "1048585 Q0 7187157 2 16.25 plumb-bm25\n"
              "1048585 Q0 D-1 3 -0.5 plumb-bm25\n");
    std::string out = "x\n";
    plumb::append_trec_run(out, list, "t");
    EXPECT_EQ(out.substr(0, 2), "x\n");
    EXPECT_EQ(out.size(), 2 + plumb::format_trec_run(list, "t").size());
    plumb::RankedList empty;
    empty.qid = "9";
    EXPECT_EQ(plumb::format_trec_run(empty, "t"), "");
}

TEST(TrecRun, LongListsEqualTheFmtFormat) {
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> score(-5.0f, 40.0f);
    std::uniform_int_distribution<int> len(1, 40);
    for (int q = 0; q < 50; ++q) {
        plumb::RankedList list;
        list.qid = "query-" + std::to_string(q) + std::string(static_cast<std::size_t>(len(rng)), 'q');
        for (int i = 0; i < 1000; ++i) {
            plumb::Candidate c;
            c.docid = "doc" + std::to_string(rng()) + std::string(static_cast<std::size_t>(len(rng)), 'x');
            c.score = i % 7 == 0 && i > 0 ? list.candidates.back().score : score(rng);
            list.candidates.push_back(c);
        }
        ASSERT_EQ(plumb::format_trec_run(list, "a-long-run-tag-" + std::to_string(q)),
                  fmt_lines(list, "a-long-run-tag-" + std::to_string(q)));
    }
}
