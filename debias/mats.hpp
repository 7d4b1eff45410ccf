#pragma once
/// \file mats.hpp
/// Average term similarity (ATS) per positional distance and its mean difference to the first
/// point (MATS), the position-bias measure of contextualized passage representations
/// (position-bias paper, Eq. 8-9; FORMULAS.md "ATS / MATS").
///
/// ATS(Δa) = mean over terms t having at least one pair at Δa of [mean over C(t, Δa) of
/// cos(r1, r2)], where C(t, Δa) holds pairs of occurrences of t in *different* passages whose
/// absolute positions differ by Δa. MATS = (1 / (maxΔa - 1)) · Σ_{i=1..maxΔa} (ATS(0) - ATS(i)),
/// the sum over the Δa that have at least one pair. Lower MATS = less position bias.
///
/// Pair enumeration is sampled to stay tractable: when C(t, Δa) holds more than
/// `max_pairs` pairs, `max_pairs` pairs are drawn with replacement (a position pair chosen with
/// probability proportional to its number of occurrence pairs, then one occurrence from each;
/// same-passage draws are rejected), from a generator seeded by `seed`: the result is
/// deterministic for a given input order and seed.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace plumb::debias {

/// Contextualized vectors of one passage: occurrence i is term terms[i] at absolute position
/// positions[i] with vector vectors[i*dim .. (i+1)*dim).
struct PassageTermVectors {
    std::vector<std::string> terms;
    std::vector<std::uint32_t> positions;
    std::vector<float> vectors;
};

struct AtsOptions {
    std::size_t max_delta = 0;      ///< largest Δa considered; 0 = the largest with a pair
    std::size_t max_pairs = 200;    ///< cap on sampled pairs per (term, Δa)
    std::uint64_t seed = 42;
};

struct AtsCurve {
    std::vector<double> ats;         ///< ATS(Δa) for Δa = 0..max_delta; NaN where no pair
    std::vector<double> sd;          ///< population sd over terms of the per-term means
    std::vector<std::size_t> terms;  ///< number of terms contributing at each Δa
    double mats = 0.0;               ///< NaN when max_delta < 2 or ATS(0) is undefined
};

/// Computes the ATS curve and MATS. `dim` is the vector size of every passage. Throws
/// InvalidArgument on inconsistent sizes.
AtsCurve compute_ats(std::span<const PassageTermVectors> passages, std::size_t dim,
                     const AtsOptions& options = {});

/// MATS from an ATS curve (Eq. 9), for curves computed elsewhere.
double mats_from_curve(const std::vector<double>& ats);

}  // namespace plumb::debias
