// ATS / MATS (position-bias paper Eq. 8-9) on hand-built contextualized vectors.
#include <gtest/gtest.h>

#include <cmath>

#include "debias/mats.hpp"
#include "plugin/error.hpp"

using plumb::debias::AtsOptions;
using plumb::debias::PassageTermVectors;

namespace {
// Two passages, 2-d vectors.
//  passage 0: x@0 (1,0)  y@1 (1,1)  x@2 (0,1)  z@3 (1,0)
//  passage 1: x@0 (1,0)  y@2 (1,0)  z@3 (-1,0)
// Cross-passage pairs: x: (p0@0,p1@0) Δ0 cos 1; (p0@2,p1@0) Δ2 cos 0.
//                      y: (p0@1,p1@2) Δ1 cos 1/sqrt2.   z: (p0@3,p1@3) Δ0 cos -1.
// Same-passage pair x(p0@0,p0@2) must be ignored.
// ATS(0) = mean(x: 1, z: -1) = 0, sd = 1; ATS(1) = 1/sqrt2; ATS(2) = 0.
// MATS = 1/(2-1) * [(0 - 1/sqrt2) + (0 - 0)] = -1/sqrt2.
std::vector<PassageTermVectors> fixture() {
    std::vector<PassageTermVectors> p(2);
    p[0] = {{"x", "y", "x", "z"}, {0, 1, 2, 3}, {1, 0, 1, 1, 0, 1, 1, 0}};
    p[1] = {{"x", "y", "z"}, {0, 2, 3}, {1, 0, 1, 0, -1, 0}};
    return p;
}
}  // namespace

TEST(Ats, HandComputedCurveAndMats) {
    auto p = fixture();
    auto c = plumb::debias::compute_ats(p, 2);
    ASSERT_EQ(c.ats.size(), 3u);  // largest Δa with a pair is 2 (Δa 3 has none)
    EXPECT_NEAR(c.ats[0], 0.0, 1e-12);
    EXPECT_NEAR(c.sd[0], 1.0, 1e-12);
    EXPECT_NEAR(c.ats[1], 1.0 / std::sqrt(2.0), 1e-12);
    EXPECT_NEAR(c.sd[1], 0.0, 1e-12);
    EXPECT_NEAR(c.ats[2], 0.0, 1e-12);
    EXPECT_EQ(c.terms[0], 2u);
    EXPECT_EQ(c.terms[1], 1u);
    EXPECT_EQ(c.terms[2], 1u);
    EXPECT_NEAR(c.mats, -1.0 / std::sqrt(2.0), 1e-12);
}

TEST(Ats, MatsFromCurveDefinition) {
    // ATS = [0.9, 0.8, 0.6, 0.7]: maxΔa = 3, MATS = (0.1 + 0.3 + 0.2) / (3 - 1) = 0.3.
    EXPECT_NEAR(plumb::debias::mats_from_curve({0.9, 0.8, 0.6, 0.7}), 0.3, 1e-12);
    EXPECT_TRUE(std::isnan(plumb::debias::mats_from_curve({0.9, 0.8})));
}

TEST(Ats, SamplingIsDeterministicAndCloseToExact) {
    // One term at positions 0 and 1 in 40 passages; vectors depend only on the position, so
    // every Δa=1 pair has cosine cos(angle between (1,0) and (0.6,0.8)) = 0.6 and Δa=0 pairs 1.
    std::vector<PassageTermVectors> p(40);
    for (auto& x : p) x = {{"t", "t"}, {0, 1}, {1, 0, 0.6f, 0.8f}};
    AtsOptions o;
    o.max_pairs = 50;  // 40*39 = 1560 pairs at Δa = 1: sampled
    auto a = plumb::debias::compute_ats(p, 2, o);
    auto b = plumb::debias::compute_ats(p, 2, o);
    EXPECT_EQ(a.ats, b.ats);
    EXPECT_NEAR(a.ats[0], 1.0, 1e-6);
    EXPECT_NEAR(a.ats[1], 0.6, 1e-6);
}

TEST(Ats, InconsistentInputThrows) {
    std::vector<PassageTermVectors> p(1);
    p[0] = {{"x"}, {0, 1}, {1, 0}};
    EXPECT_THROW(plumb::debias::compute_ats(p, 2), plumb::InvalidArgument);
    EXPECT_THROW(plumb::debias::compute_ats(fixture(), 0), plumb::InvalidArgument);
}
