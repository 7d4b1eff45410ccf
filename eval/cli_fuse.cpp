// `plumb fuse`: fusion of any number of TREC runs into one (RRF, CombSUM/MNZ/ANZ/MAX/MIN/MED,
// weighted sums) as ranx offers. A thin layer over eval/fuse.hpp.
#include <cmath>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "eval/fuse.hpp"
#include "eval/run.hpp"
#include "plugin/cli/command.hpp"
#include "plugin/cli/options.hpp"
#include "plugin/error.hpp"
#include "plugin/text_io.hpp"
#include "plugin/trec_run.hpp"

namespace plumb::eval {
namespace {

struct FuseArgs {
    std::vector<std::string> runs;
    std::string method = "rrf";
    double rrf_k = 60.0;
    std::string norm;
    std::string weights;
    std::size_t k = 1000;
    std::string tag;
    std::string output;
    bool rrf_k_given = false;
    bool quiet = false;
};

std::vector<double> parse_weights(const std::string& spec) {
    std::vector<double> out;
    std::vector<std::string_view> parts;
    split(spec, ',', parts);
    for (auto p : parts) {
        const std::string s(trim(p));
        try {
            std::size_t used = 0;
            const double w = std::stod(s, &used);
            if (used != s.size() || !std::isfinite(w)) throw std::invalid_argument(s);
            out.push_back(w);
        } catch (const std::exception&) {
            throw ConfigError("--weights: '" + s + "' is not a finite number");
        }
    }
    return out;
}

void run_fuse(const FuseArgs& a) {
    if (a.runs.size() < 2) throw ConfigError("fuse: give at least two --run files");
    FusionOptions o;
    o.method = parse_fusion_method(a.method);
    const auto method = std::string(fusion_method_name(o.method));
    if (fusion_uses_scores(o.method)) {
        // ranx's fuse() normalises with min-max unless told otherwise.
        o.norm = parse_score_norm(a.norm.empty() ? "min-max" : a.norm);
        if (a.rrf_k_given) throw ConfigError("fuse: --rrf-k applies to --method rrf only");
    } else if (!a.norm.empty() && parse_score_norm(a.norm) != ScoreNorm::None) {
        throw ConfigError("fuse: --norm does not apply to --method rrf (it fuses ranks)");
    }
    if (!(a.rrf_k >= 0) || !std::isfinite(a.rrf_k)) {
        throw ConfigError("fuse: --rrf-k must be a number >= 0");
    }
    o.rrf_k = a.rrf_k;
    if (!a.weights.empty()) {
        if (!fusion_takes_weights(o.method)) {
            throw ConfigError("fuse: --weights applies to --method rrf, wsum or wmnz, not " +
                              method);
        }
        o.weights = parse_weights(a.weights);
        if (o.weights.size() != a.runs.size()) {
            throw ConfigError("fuse: --weights has " + std::to_string(o.weights.size()) +
                              " values for " + std::to_string(a.runs.size()) +
                              " runs (give one weight per --run, in --run order)");
        }
    } else if (fusion_needs_weights(o.method)) {
        throw ConfigError("fuse: --method " + method +
                          " needs --weights w1,w2,... (one per --run)");
    }
    o.depth = a.k;
    o.stage = method;

    std::vector<Run> runs;
    runs.reserve(a.runs.size());
    for (const auto& path : a.runs) runs.push_back(read_run(path));
    const auto fused = fuse_runs(std::span<const Run>(runs), o);
    const std::string tag = a.tag.empty() ? "plumb-fuse-" + method : a.tag;
    write_trec_run(a.output, fused, tag);
    if (!a.quiet) {
        std::size_t lines = 0;
        for (const auto& l : fused) lines += l.candidates.size();
        std::fprintf(stderr, "fused %zu runs (%s%s): %zu queries, %zu lines -> %s\n", runs.size(),
                     method.c_str(),
                     fusion_uses_scores(o.method)
                         ? (", " + std::string(score_norm_name(o.norm))).c_str()
                         : "",
                     fused.size(), lines, a.output.c_str());
    }
}

const cli::CommandRegistrar kFuseCommand("fuse", [](CLI::App& app) {
    auto a = std::make_shared<FuseArgs>();
    auto* sub = app.add_subcommand(
        "fuse", "Fuse TREC runs into one: RRF, CombSUM/MNZ/ANZ/MAX/MIN/MED, weighted sums (ranx)");
    sub->add_option("--run", a->runs, "run file (repeat for each run; >= 2)")->required();
    sub->add_option("--method", a->method,
                    "rrf | combsum | combmnz | combanz | combmax | combmin | combmed | wsum | "
                    "wmnz (default rrf)");
    auto* k_opt = sub->add_option("--rrf-k", a->rrf_k, "RRF's k (default 60)");
    sub->add_option("--norm", a->norm,
                    "none | min-max | z-score | max | sum, per query per run (score-based "
                    "methods; default min-max)");
    sub->add_option("--weights", a->weights,
                    "w1,w2,... one weight per --run (wsum, wmnz: required; rrf: optional)");
    sub->add_option("--k", a->k, "documents kept per query (default 1000; 0 = all)");
    sub->add_option("--tag", a->tag, "run tag (default plumb-fuse-<method>)");
    sub->add_option("--output,-o", a->output, "fused run, written atomically")->required();
    plumb::cli::add_quiet_flag(sub, a->quiet, "no summary on standard error");
    sub->footer(
        "Each run is ranked as trec_eval ranks it (score descending, ties by docid descending).\n"
        "Queries: the union of the runs' queries; a run without a query or a document adds\n"
        "nothing for it. Output: fused score descending, ties by docid ascending, ranks 1..n.\n"
        "Normalisations (ranx): min-max (s-min)/(max-min), z-score (s-mean)/sd, max s/max,\n"
        "sum (s-min)/sum(s-min); a list of equal scores normalises to 0.");
    sub->callback([a, k_opt]() {
        a->rrf_k_given = k_opt->count() > 0;
        run_fuse(*a);
    });
});

}  // namespace
}  // namespace plumb::eval
