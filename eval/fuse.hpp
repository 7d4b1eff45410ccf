#pragma once
/// \file fuse.hpp
/// Fusion of ranked lists and of whole runs (plumb's one implementation: rerank/fusion.hpp and
/// the pipeline's hybrid first stage call these). Methods and normalisations follow ranx
/// (ranx.fuse: Bassani & Romelli, CIKM 2022; modules ranx.fusion, ranx.normalization). For one
/// query, list i holds documents d with score s_i(d) (after normalisation) at 1-based rank
/// r_i(d); P(d) is the set of lists retrieving d, n(d) = |P(d)|, w_i the weight of list i:
///
///  | method    | fused score                                    | weights |
///  |-----------|------------------------------------------------|---------|
///  | `rrf`     | Σ_{i∈P(d)} w_i / (k + r_i(d)), k = 60          | optional (default 1) |
///  | `combsum` | Σ_{i∈P(d)} s_i(d)                              | no |
///  | `combmnz` | n(d) · Σ_{i∈P(d)} s_i(d)                       | no |
///  | `combanz` | Σ_{i∈P(d)} s_i(d) / n(d)                       | no |
///  | `combmax` | max_{i∈P(d)} s_i(d)                            | no |
///  | `combmin` | min_{i∈P(d)} s_i(d)                            | no |
///  | `combmed` | median_{i∈P(d)} s_i(d) (mean of the middle two for even n(d)) | no |
///  | `wsum`    | Σ_{i∈P(d)} w_i · s_i(d)                        | required |
///  | `wmnz`    | (Σ_{i∈P(d)} s_i(d)) · (Σ_{i∈P(d)} w_i) (ranx's definition) | required |
///
/// RRF (Cormack, Clarke & Büttcher, SIGIR 2009) uses ranks only: normalisation does not apply.
/// A document a list does not retrieve contributes nothing (0 to the sums, not counted in n).
///
/// Normalisations, per query per list, over the scores of that list (ranx's, including its
/// guard of every denominator by max(·, 1e-9)):
///  - `none`: s
///  - `min-max`: (s − min) / max(max − min, 1e-9): a list whose scores are all equal (also a
///    one-document list) normalises to 0 (FusionOptions::min_max_constant changes that value)
///  - `z-score` (ranx "zmuv"): (s − mean) / max(σ, 1e-9), σ the population standard deviation;
///    constant lists normalise to 0
///  - `max`: s / max(max, 1e-9) (meant for positive scores: a list whose maximum is <= 0 is
///    divided by 1e-9, as in ranx)
///  - `sum`: (s − min) / max(Σ(s − min), 1e-9); constant lists normalise to 0
/// An empty list contributes nothing.
///
/// Ordering. An input RankedList is ranked in its candidates' order (best first, as the stage
/// contracts produce them). An input run (eval::Run) is ranked as trec_eval ranks it: score
/// descending, ties by docid descending byte-wise; the rank column is ignored. The fused list is
/// sorted by the fused score as stored in Candidate::score (a float: what a run file holds)
/// descending, ties by docid ascending byte-wise (plumb's convention for every run it writes,
/// plugin/stage.hpp), then cut to `depth`.

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "eval/run.hpp"
#include "plugin/types.hpp"

namespace plumb::eval {

enum class FusionMethod { Rrf, CombSum, CombMnz, CombAnz, CombMax, CombMin, CombMed, WSum, WMnz };

enum class ScoreNorm { None, MinMax, ZScore, Max, Sum };

/// "rrf", "combsum", "combmnz", "combanz", "combmax", "combmin", "combmed", "wsum", "wmnz"
/// (ranx's short names "sum", "mnz", "anz", "max", "min", "med" are accepted too). Throws
/// ConfigError naming the known methods.
FusionMethod parse_fusion_method(std::string_view name);
/// "none", "min-max", "z-score" (also "zmuv"), "max", "sum". Throws ConfigError.
ScoreNorm parse_score_norm(std::string_view name);
std::string_view fusion_method_name(FusionMethod method) noexcept;
std::string_view score_norm_name(ScoreNorm norm) noexcept;
/// True for the methods that take weights (rrf, wsum, wmnz).
bool fusion_takes_weights(FusionMethod method) noexcept;
/// True for the methods that need weights (wsum, wmnz).
bool fusion_needs_weights(FusionMethod method) noexcept;
/// False for rrf, which fuses ranks.
bool fusion_uses_scores(FusionMethod method) noexcept;

struct FusionOptions {
    FusionMethod method = FusionMethod::Rrf;
    /// Applied to every list before fusing (ignored by rrf).
    ScoreNorm norm = ScoreNorm::None;
    /// RRF's k (Cormack et al. 2009: 60); must be >= 0.
    double rrf_k = 60.0;
    /// One weight per list (finite), for rrf (empty: all 1), wsum and wmnz (required).
    std::vector<double> weights;
    /// Documents kept per query (0 = all).
    std::size_t depth = 0;
    /// What min-max gives every score of a list whose scores are all equal: 0 as in ranx;
    /// rerank::interpolate_scores uses 1 (a one-document list keeps its full weight).
    double min_max_constant = 0.0;
    /// Name of the fused score in each candidate's trace.
    std::string stage = "fuse";
};

/// Fuses the lists of one query (each in rank order, best first). Text and earlier trace entries
/// of a candidate come from the first list holding it; the fused score is appended to its trace
/// under `options.stage`. The result's qid is the first non-empty qid of `lists`.
/// Throws InvalidArgument for a weight count that does not match `lists`, missing weights,
/// weights given to a method that takes none, a negative k, or a non-finite score or weight.
RankedList fuse(std::span<const RankedList> lists, const FusionOptions& options);

/// Fuses runs held in memory query by query (lists matched by qid; a run without the query
/// contributes an empty list). Output: every qid of any run (the union), in order of first
/// appearance (the first run's order, then qids new in the second run, ...). Throws like fuse().
std::vector<RankedList> fuse_runs(std::span<const std::vector<RankedList>> runs,
                                  const FusionOptions& options);

/// Fuses run files read with read_run(): each query's lines ranked as trec_eval ranks them;
/// scores used in double precision. Output order as above. Throws like fuse(); a non-finite
/// score fused by a score-based method is a ParseError naming the run's file and line.
std::vector<RankedList> fuse_runs(std::span<const Run> runs, const FusionOptions& options);

}  // namespace plumb::eval
