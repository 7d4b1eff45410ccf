// `plumb debias mats`: ATS curve and MATS of a TK model's contextualized passage vectors
// (paper 000, Eq. 8-9). Part of the LibTorch CLI module (it runs a TK model).
#include <fmt/format.h>

#include <cmath>
#include <memory>
#include <nlohmann/json.hpp>

#include "debias/detail_cli.hpp"
#include "debias/mats.hpp"
#include "debias/plot.hpp"
#include "index/corpus.hpp"
#include "plugin/cli/command.hpp"
#include "plugin/cli/options.hpp"
#include "plugin/cli/progress_bar.hpp"
#include "plugin/error.hpp"
#include "plugin/text_io.hpp"
#include "rerank/tk_model.hpp"

namespace {

using nlohmann::json;

struct MatsArgs {
    plumb::cli::MatsRequest request;  // model, corpus and the computation's options
    std::string output;
};

/// The contextualized passage vectors of the first `sample` passages and their ATS curve (shared
/// by `plumb debias mats` and `plumb audit --mats-model`, through the hook below).
plumb::debias::AtsCurve model_ats(const plumb::cli::MatsRequest& a, std::size_t& n_passages) {
    auto model = plumb::rerank::TkModel::load(a.model);
    plumb::index::CorpusReaderOptions ro;
    ro.format = plumb::index::resolve_corpus_format(a.input_format, a.corpus);
    plumb::index::CorpusReader reader(a.corpus, ro);
    std::vector<std::string> texts;
    plumb::index::Document doc;
    while (texts.size() < a.sample && reader.next(doc)) {
        texts.push_back(plumb::index::indexed_text(std::move(doc)));
    }
    std::vector<plumb::debias::PassageTermVectors> passages;
    std::size_t dim = 0;
    {
        plumb::cli::ProgressBar bar("contextualize", "passages", !a.quiet);
        for (std::size_t start = 0; start < texts.size(); start += a.batch) {
            std::vector<std::string_view> views;
            for (std::size_t i = start; i < std::min(texts.size(), start + a.batch); ++i) {
                views.push_back(texts[i]);
            }
            for (auto& tv : model.passage_vectors(views, a.batch)) {
                dim = static_cast<std::size_t>(tv.dim);
                plumb::debias::PassageTermVectors p;
                p.terms = std::move(tv.terms);
                for (auto pos : tv.positions)
                    p.positions.push_back(static_cast<std::uint32_t>(pos));
                p.vectors = std::move(tv.values);
                passages.push_back(std::move(p));
            }
            bar.update(std::min(texts.size(), start + a.batch), texts.size());
        }
    }
    if (passages.empty() || dim == 0) {
        throw plumb::InvalidArgument("debias mats: no passage vectors (empty corpus?)");
    }
    plumb::debias::AtsOptions o;
    o.max_delta = a.max_delta;
    o.max_pairs = a.max_pairs;
    o.seed = a.seed;
    n_passages = passages.size();
    return plumb::debias::compute_ats(passages, dim, o);
}

void run_mats(const MatsArgs& args) {
    std::size_t n_passages = 0;
    const auto curve = model_ats(args.request, n_passages);
    json report = {{"passages", n_passages},
                   {"max_delta", curve.ats.size() - 1},
                   {"mats", std::isnan(curve.mats) ? json(nullptr) : json(curve.mats)}};
    std::string tsv = "delta\tats\tsd\tterms\n";
    plumb::debias::LineChart chart;
    chart.title = "ATS by positional distance (MATS " + fmt::format("{:.4f}", curve.mats) + ")";
    chart.x_label = "positional distance (delta a)";
    chart.y_label = "average term similarity";
    plumb::debias::PlotSeries s;
    s.name = "ATS";
    for (std::size_t d = 0; d < curve.ats.size(); ++d) {
        tsv +=
            fmt::format("{}\t{:.6f}\t{:.6f}\t{}\n", d, curve.ats[d], curve.sd[d], curve.terms[d]);
        if (std::isnan(curve.ats[d])) continue;
        chart.x.push_back(static_cast<double>(d));
        s.values.push_back(curve.ats[d]);
        s.sd.push_back(curve.sd[d]);
    }
    chart.series.push_back(s);
    plumb::AtomicFile tf(args.output + ".tsv");
    tf.write(tsv);
    tf.commit();
    plumb::AtomicFile jf(args.output + ".json");
    jf.write(report.dump(2) + "\n");
    jf.commit();
    plumb::debias::write_line_chart(chart, args.output);
    std::printf("passages %zu  max delta %zu  MATS %.4f\n", n_passages, curve.ats.size() - 1,
                curve.mats);
}

void add_mats(CLI::App& app) {
    auto [t, m] = plumb::cli::add_command<MatsArgs>(
        plumb::debias::detail::debias_command(app), "mats",
        "ATS per positional distance and MATS of a TK model's contextualized passage vectors "
        "(position bias, paper 000)",
        run_mats);
    t->add_option("--model", m->request.model, "TK model folder (plumb tk-init / plumb train)")
        ->required();
    t->add_option("--corpus", m->request.corpus, "Passages (TSV or BEIR JSONL)")->required();
    plumb::cli::add_input_format_option(t, m->request.input_format,
                                        "tsv | jsonl (default: by extension)");
    t->add_option("--output,-o", m->output, "Output prefix: PREFIX.tsv, .json, .png, .svg")
        ->required();
    t->add_option("--sample", m->request.sample, "Passages used (the first N)")
        ->capture_default_str();
    t->add_option("--max-delta", m->request.max_delta, "Largest delta a (0: largest with a pair)")
        ->capture_default_str();
    t->add_option("--max-pairs", m->request.max_pairs, "Sampled pairs per term and delta")
        ->capture_default_str();
    t->add_option("--seed", m->request.seed, "Sampling seed")->capture_default_str();
    t->add_option("--batch", m->request.batch, "Contextualization batch size")
        ->capture_default_str();
    plumb::cli::add_quiet_flag(t, m->request.quiet, "No progress bar");
}

const plumb::cli::CommandRegistrar kRegistrar{"debias.mats", add_mats};

// Sets plumb audit's hook while the module is loaded (static initialisation).
struct SetMatsHook {
    SetMatsHook() {
        plumb::cli::mats_hook() = [](const plumb::cli::MatsRequest& r) {
            std::size_t n = 0;
            return model_ats(r, n).mats;
        };
    }
};
const SetMatsHook kSetMatsHook;

}  // namespace
