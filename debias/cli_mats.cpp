// `plumb debias mats`: ATS curve and MATS of a model's contextualized passage-term vectors (paper
// 000, Eq. 8-9): TK's, or a BERT-DOT encoder's. Part of the LibTorch CLI module (it runs the
// model).
#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <memory>
#include <optional>
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
#include "rerank/bi_encoder.hpp"
#include "rerank/tk_model.hpp"

namespace {

using nlohmann::json;

struct MatsArgs {
    plumb::cli::MatsRequest request;  // model, corpus and the computation's options
    std::string output;
};

/// "tk" or "dot": an explicit --model-type, else a bi-encoder when the folder is a
/// sentence-transformers one (modules.json), TK when its config.json says plumb-tk, else a
/// BERT-DOT / Hugging Face folder. A cross-encoder (config.json's architectures name a
/// sequence classifier) is refused for "dot": its passage vectors depend on the query.
std::string model_kind(const plumb::cli::MatsRequest& a) {
    const std::filesystem::path dir(a.model);
    const auto cfg = dir / "config.json";
    std::error_code ec;
    const bool has_cfg = std::filesystem::exists(cfg, ec);
    json j;
    if (has_cfg) {
        j = json::parse(plumb::read_file(cfg), nullptr, /*allow_exceptions=*/false);
        if (j.is_discarded() || !j.is_object()) {
            throw plumb::ConfigError(cfg.string() + ": not a JSON object");
        }
    }
    std::string kind = a.model_type;
    if (kind == "auto") {
        if (std::filesystem::exists(dir / "modules.json", ec)) {
            kind = "dot";
        } else if (!has_cfg) {
            kind = "tk";  // TkModel::load names what is missing
        } else {
            kind = j.value("format", std::string()) == plumb::rerank::kTkFormat ? "tk" : "dot";
        }
    }
    if (kind == "dot" && has_cfg && j.contains("architectures") && j["architectures"].is_array()) {
        for (const auto& arch : j["architectures"]) {
            if (arch.is_string() &&
                arch.get<std::string>().find("ForSequenceClassification") != std::string::npos) {
                throw plumb::InvalidArgument(
                    cfg.string() + ": a cross-encoder (" + arch.get<std::string>() +
                    "): its passage vectors depend on the query, so MATS does not apply (plumb "
                    "audit: --mats NAME,n/a)");
            }
        }
    }
    return kind;
}

/// The contextualized passage-term vectors of the first `sample` passages and their ATS curve
/// (shared by `plumb debias mats` and `plumb audit --mats-model`, through the hook below): TK's
/// contextualization output per word, or a BERT-DOT encoder's last hidden state per WordPiece
/// token (the passage is encoded without the query, as for retrieval).
plumb::debias::AtsCurve model_ats(const plumb::cli::MatsRequest& a, std::size_t& n_passages) {
    if (a.batch == 0) throw plumb::InvalidArgument("debias mats: the batch size must be positive");
    const std::string kind = model_kind(a);
    std::optional<plumb::rerank::TkModel> tk;
    std::shared_ptr<plumb::rerank::BiEncoder> dot;
    if (kind == "tk") {
        tk.emplace(plumb::rerank::TkModel::load(a.model));
    } else {
        plumb::rerank::BiEncoderOptions bo;
        bo.batch_size = a.batch;
        bo.passage_max_length = a.passage_max_length;
        dot = plumb::rerank::BiEncoder::from_folder(a.model, bo);
    }
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
    auto add = [&](std::vector<std::string>&& terms, const std::vector<std::int64_t>& positions,
                   std::vector<float>&& values, std::int64_t d) {
        dim = static_cast<std::size_t>(d);
        plumb::debias::PassageTermVectors p;
        p.terms = std::move(terms);
        for (auto pos : positions) p.positions.push_back(static_cast<std::uint32_t>(pos));
        p.vectors = std::move(values);
        passages.push_back(std::move(p));
    };
    {
        plumb::cli::ProgressBar bar("contextualize", "passages", !a.quiet);
        for (std::size_t start = 0; start < texts.size(); start += a.batch) {
            std::vector<std::string_view> views;
            for (std::size_t i = start; i < std::min(texts.size(), start + a.batch); ++i) {
                views.push_back(texts[i]);
            }
            if (tk) {
                for (auto& tv : tk->passage_vectors(views, a.batch)) {
                    add(std::move(tv.terms), tv.positions, std::move(tv.values), tv.dim);
                }
            } else {
                for (auto& tv : dot->passage_token_vectors(views)) {
                    add(std::move(tv.terms), tv.positions, std::move(tv.values), tv.dim);
                }
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
        "ATS per positional distance and MATS of a TK or BERT-DOT model's contextualized "
        "passage-term vectors (position bias, paper 000)",
        run_mats);
    t->add_option("--model", m->request.model,
                  "TK model folder (plumb tk-init / plumb train), or a BERT-DOT / bi-encoder "
                  "folder (Hugging Face or sentence-transformers)")
        ->required();
    t->add_option("--corpus", m->request.corpus, "Passages (TSV or BEIR JSONL)")->required();
    plumb::cli::add_input_format_option(t, m->request.input_format,
                                        "tsv | jsonl (default: by extension)");
    t->add_option("--output,-o", m->output, "Output prefix: PREFIX.tsv, .json, .png, .svg")
        ->required();
    t->add_option("--max-delta", m->request.max_delta, "Largest delta a (0: largest with a pair)")
        ->capture_default_str();
    t->add_option("--max-pairs", m->request.max_pairs, "Sampled pairs per term and delta")
        ->capture_default_str();
    t->add_option("--batch", m->request.batch, "Contextualization batch size")
        ->check(CLI::Range(1, 1 << 20))
        ->capture_default_str();
    plumb::cli::add_mats_model_options(t, m->request, "");
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
