#include "rerank/fusion.hpp"

#include "eval/fuse.hpp"
#include "plugin/error.hpp"

namespace plumb::rerank {

namespace {

eval::FusionOptions rrf_options(double k, std::size_t depth, const std::string& stage) {
    if (!(k >= 0)) throw InvalidArgument("reciprocal_rank_fusion: k must be >= 0");
    eval::FusionOptions o;
    o.method = eval::FusionMethod::Rrf;
    o.rrf_k = k;
    o.depth = depth;
    o.stage = stage;
    return o;
}

eval::FusionOptions interp_options(double alpha, std::size_t depth, const std::string& stage) {
    if (!(alpha >= 0 && alpha <= 1)) {
        throw InvalidArgument("interpolate_scores: alpha must be in [0, 1]");
    }
    eval::FusionOptions o;
    o.method = eval::FusionMethod::WSum;
    o.norm = eval::ScoreNorm::MinMax;
    o.weights = {alpha, 1.0 - alpha};
    o.min_max_constant = 1.0;
    o.depth = depth;
    o.stage = stage;
    return o;
}

}  // namespace

RankedList reciprocal_rank_fusion(std::span<const RankedList> lists, double k, std::size_t depth,
                                  const std::string& stage) {
    return eval::fuse(lists, rrf_options(k, depth, stage));
}

RankedList interpolate_scores(const RankedList& a, const RankedList& b, double alpha,
                              std::size_t depth, const std::string& stage) {
    const RankedList both[2] = {a, b};
    return eval::fuse(both, interp_options(alpha, depth, stage));
}

std::vector<RankedList> fuse_runs(const std::vector<RankedList>& a,
                                  const std::vector<RankedList>& b, const std::string& method,
                                  double alpha, std::size_t depth, double rrf_k) {
    if (method != "rrf" && method != "interp") {
        throw InvalidArgument("unknown fusion method '" + method + "' (known: rrf, interp)");
    }
    const std::vector<RankedList> both[2] = {a, b};
    return eval::fuse_runs(std::span<const std::vector<RankedList>>(both),
                           method == "rrf" ? rrf_options(rrf_k, depth, "rrf")
                                           : interp_options(alpha, depth, "interp"));
}

}  // namespace plumb::rerank
