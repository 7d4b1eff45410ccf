// `plumb audit`: every run on the four bias axes (position, gender, linguistic complexity,
// survivorship) from the files given; axes whose inputs are missing are listed as skipped.
// The audit is debias/audit.hpp; this file only parses options.
#include <limits>
#include <cstdio>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include "debias/audit.hpp"
#include "eval/detail_cli.hpp"
#include "eval/run_retriever.hpp"
#include "index/document_sources.hpp"
#include "plugin/cli/command.hpp"
#include "plugin/cli/options.hpp"
#include "plugin/cli/progress_bar.hpp"
#include "plugin/error.hpp"
#include "plugin/text_io.hpp"

namespace {

namespace eval_cli = plumb::eval::detail;

struct AuditArgs {
    eval_cli::RunArgs runs;
    eval_cli::QrelsArgs qrels;
    std::vector<std::string> mats, mats_models, rotated;
    plumb::cli::MatsRequest mats_request;  // --mats-corpus and the options of debias mats
    std::string rotated_qrels, bias_file, words, corpus, index, input_format, labels;
    std::string query_labels, neutral = "n", variant = "tc";
    std::string topics, topic_field = "title", complexity, wordnet = "/usr/share/wordnet";
    std::string shown_ranks, query_types, output_dir;
    std::size_t cutoff = 10, buckets = 3;
    unsigned max_k = 0;
    bool quiet = false;
};

/// NAME,PATH specs (the path may contain commas) as name -> path; ConfigError for a bad spec, a
/// repeated name or a name that is not a --run's.
std::map<std::string, std::string> per_run(const std::vector<std::string>& specs,
                                           const std::string& option,
                                           const std::vector<std::string>& names) {
    std::map<std::string, std::string> out;
    for (const auto& spec : specs) {
        const auto comma = spec.find(',');
        if (comma == std::string::npos || comma == 0 || comma + 1 == spec.size())
            throw plumb::ConfigError(option + " '" + spec + "': expected RUN_NAME,FILE");
        const std::string name(plumb::trim(std::string_view(spec).substr(0, comma)));
        if (std::find(names.begin(), names.end(), name) == names.end())
            throw plumb::ConfigError(option + " '" + spec + "': no --run named '" + name + "'");
        if (!out.emplace(name, std::string(plumb::trim(std::string_view(spec).substr(comma + 1))))
                 .second)
            throw plumb::ConfigError(option + ": run '" + name + "' given twice");
    }
    return out;
}

void run_audit_command(const AuditArgs& a) {
    const auto names = a.runs.display_names();
    const auto mats = per_run(a.mats, "--mats", names);
    const auto rotated = per_run(a.rotated, "--rotated-run", names);
    const auto models = per_run(a.mats_models, "--mats-model", names);
    for (const auto& [name, model] : models) {
        if (mats.count(name))
            throw plumb::ConfigError("run '" + name + "' has both --mats and --mats-model");
        if (a.mats_request.corpus.empty())
            throw plumb::ConfigError(
                "--mats-model needs --mats-corpus (the passages to "
                "contextualize)");
    }
    plumb::debias::AuditInputs in;
    for (std::size_t i = 0; i < names.size(); ++i) {
        plumb::debias::AuditRun r;
        r.name = names[i];
        r.run = a.runs.runs[i];
        if (auto it = mats.find(names[i]); it != mats.end()) {
            if (it->second == "n/a") {  // no passage-term vectors (BM25, a cross-encoder)
                r.mats_value = std::numeric_limits<double>::quiet_NaN();
            } else {
                r.mats = it->second;
            }
        }
        if (auto it = rotated.find(names[i]); it != rotated.end()) r.rotated_run = it->second;
        if (auto it = models.find(names[i]); it != models.end()) {
            // MATS runs the model: computed in the LibTorch CLI module (plumb debias mats).
            plumb::cli::load_torch_module();
            const auto& hook = plumb::cli::mats_hook();
            if (!hook)
                throw plumb::Error(
                    "audit --mats-model: the LibTorch CLI module registered no "
                    "MATS computation");
            auto request = a.mats_request;
            request.model = it->second;
            request.quiet = a.quiet;
            r.mats_value = hook(request);
        }
        in.runs.push_back(std::move(r));
    }
    in.qrels = a.qrels.path;
    in.rotated_qrels = a.rotated_qrels;
    in.bias_file = a.bias_file;
    in.words = a.words;
    in.passage_labels = a.labels;
    in.query_labels = a.query_labels;
    in.topics = a.topics;
    in.topic_field = a.topic_field;
    in.complexity = a.complexity;
    in.wordnet = a.wordnet;
    in.shown_ranks = a.shown_ranks;
    in.query_types = a.query_types;
    if (!a.words.empty() && (!a.corpus.empty() || !a.index.empty())) {
        // Only the runs' passages are loaded from a corpus file.
        std::unordered_set<std::string> wanted;
        if (!a.corpus.empty())
            for (const auto& run : a.runs.runs) {
                const auto ids = plumb::eval::RunRetriever::open(run);
                const auto d = ids->docids(ids->max_depth());
                wanted.insert(d.begin(), d.end());
            }
        in.documents =
            plumb::index::open_document_source(a.index, a.corpus, &wanted, a.input_format);
        in.documents_name = a.corpus.empty() ? a.index : a.corpus;
    }
    plumb::debias::AuditOptions o;
    o.cutoff = a.cutoff;
    o.variant = plumb::eval::parse_bias_variant(a.variant);
    o.relevance_level = a.qrels.level;
    o.neutral_label = a.neutral;
    o.buckets = a.buckets;
    o.max_k = a.max_k;

    plumb::cli::ProgressBar bar("audit", "steps", !a.quiet);
    const auto report = plumb::debias::run_audit(in, o, bar.callback());
    bar.finish();
    plumb::debias::write_audit(report, a.output_dir);
    std::fputs(plumb::debias::audit_markdown(report).c_str(), stdout);
}

const plumb::cli::CommandRegistrar kRegistrar{
    "audit", [](CLI::App& app) {
        auto [c, a] = plumb::cli::add_command<AuditArgs>(
            app, "audit",
            "Bias audit of runs on four axes (position, gender, linguistic complexity, "
            "survivorship) from the files given; axes without their inputs are listed as skipped",
            run_audit_command);
        a->runs.add(c, "run on the test set (repeatable; one audit column per run)");
        a->qrels.add(c, "qrels of the test set (effectiveness, Δ, |ΔA-PRF|, complexity, S_k)",
                     false);
        c->add_option("--output-dir,-o", a->output_dir,
                      "folder written atomically: audit.md, audit.json, <axis>.png/.svg")
            ->required();
        c->add_option("-k,--cutoff", a->cutoff, "cutoff t of nDCG@t, MRR@t, RaB@t, ARaB@t")
            ->check(plumb::cli::positive_count())
            ->capture_default_str();
        // position
        c->add_option(
            "--mats", a->mats,
            "position: RUN_NAME,FILE.json, the plumb debias mats report of the run's model, or "
            "RUN_NAME,n/a for a run whose model has no query-independent passage-term vectors "
            "(BM25, a cross-encoder: shown as -, not missing) (repeatable)");
        c->add_option("--mats-model", a->mats_models,
                      "position: RUN_NAME,MODEL_DIR, the run's TK or BERT-DOT model: MATS computed "
                      "as plumb debias mats does (needs --mats-corpus and the LibTorch module; "
                      "repeatable)");
        c->add_option("--mats-corpus", a->mats_request.corpus,
                      "position: passages contextualized for --mats-model (TSV or BEIR JSONL)");
        plumb::cli::add_mats_model_options(c, a->mats_request, "mats-",
                                           "position, --mats-model: ");
        c->add_option("--rotated-run", a->rotated,
                      "position: RUN_NAME,RUN, the same model's run on the rotated test set "
                      "(repeatable)");
        c->add_option("--rotated-qrels", a->rotated_qrels,
                      "position: qrels of the rotated test set (default: --qrels)");
        // gender
        c->add_option("--bias-file", a->bias_file,
                      "gender: per-passage bias (plumb debias gender; per-variant or combined)");
        c->add_option("--words", a->words,
                      "gender: word list (word,f|m) counted in the passages (--corpus or --index): "
                      "bias and IBBR labels");
        auto* corpus = c->add_option("--corpus", a->corpus, "passages (TSV or BEIR JSONL)");
        c->add_option("--index", a->index, "passages: a plumb index directory")->excludes(corpus);
        plumb::cli::add_input_format_option(c, a->input_format,
                                            "corpus format tsv | jsonl (default: by extension)");
        c->add_option("--labels", a->labels,
                      "gender: passage labels docid<TAB>d, d in {-1,0,1}, for |ΔA-PRF| (default: "
                      "from --words)");
        c->add_option(
            "--query-labels", a->query_labels,
            "gender: query labels qid<TAB>f|m|n (plumb debias query-gender); RaB over the "
            "neutral ones");
        c->add_option("--neutral-label", a->neutral, "gender: the neutral query label")
            ->capture_default_str();
        c->add_option("--variant", a->variant, "gender: passage bias variant tc | tf | bool")
            ->capture_default_str();
        // complexity
        c->add_option("--topics", a->topics,
                      "complexity: the queries (TSV, BEIR queries.jsonl or TREC topics)");
        c->add_option("--topic-field", a->topic_field, "complexity: TREC topic fields")
            ->capture_default_str();
        c->add_option("--complexity", a->complexity,
                      "complexity: per-query TSV of plumb debias complexity (instead of --topics)");
        c->add_option("--wordnet", a->wordnet, "complexity: WordNet dictionary folder")
            ->capture_default_str();
        c->add_option("--buckets", a->buckets, "complexity: quantile buckets (3 = terciles)")
            ->check(plumb::cli::positive_count())
            ->capture_default_str();
        // survivorship
        c->add_option("--shown-ranks", a->shown_ranks,
                      "survivorship: shown rankings qid<TAB>rank<TAB>docid<TAB>is_selected");
        c->add_option("--query-types", a->query_types,
                      "survivorship: query types qid<TAB>type, for the unanswered share per type");
        c->add_option("--max-k", a->max_k, "survivorship: largest k of S_k (0 = largest rank)")
            ->capture_default_str();
        plumb::cli::add_quiet_flag(c, a->quiet, "No progress bar");
    }};

}  // namespace
