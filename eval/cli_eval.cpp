// `plumb eval`: trec_eval's command line over plumb::eval::Evaluator.
//
// The arguments are parsed here, getopt_long style like trec_eval (trec_eval.c), so that
// scripts written for trec_eval work unchanged: short options may be bundled or take attached
// values (-q -c -mmap -l2 -M100 -qc), long options may be abbreviated to a unique prefix and
// take `=value`, options and the two files may come in any order, `--` ends options.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "eval/detail_parse.hpp"
#include "eval/evaluator.hpp"
#include "eval/format.hpp"
#include "eval/run.hpp"
#include "plugin/cli/command.hpp"
#include "plugin/cli/output.hpp"
#include "plugin/cli/progress_bar.hpp"
#include "plugin/error.hpp"
#include "plugin/text_io.hpp"

namespace plumb::eval {
namespace {

constexpr const char* kUsage =
    "Usage: plumb eval [trec_eval options] [--format text|json|csv] [--output FILE] QRELS RUN\n"
    "       plumb eval [options] QRELS PART1 PART2 ...\n"
    "\n"
    "Evaluates RUN (TREC run: qid Q0 docid rank score tag, or MS MARCO's qid docid rank;\n"
    "lines in any order; '-' = stdin) against QRELS (qid iter docid rel) with trec_eval's\n"
    "semantics and output format. Several run files are the parts of one run (e.g. written by\n"
    "MPI ranks or separate jobs): evaluated as their concatenation; a (qid, docid) pair in two\n"
    "places is an error.\n"
    "\n"
    "trec_eval options:\n"
    "  -q, --query_eval_wanted           per-query values as well as the summary\n"
    "  -m, --measure NAME[.PARAMS]       measure to compute (repeatable); cutoff lists as in\n"
    "                                    -m P.5,10, gains as in -m ndcg.1=3,2=9; 'official' =\n"
    "                                    trec_eval's default set, 'all_trec' and 'set' as in\n"
    "                                    trec_eval; ir_measures names (nDCG@10, RR@10, R@1000,\n"
    "                                    AP, AP@100, P@5, Judged@10, ...) print as given\n"
    "  -c, --complete_rel_info_wanted    average over all qrels queries (missing = 0)\n"
    "  -l, --level_for_rel NUM           minimum grade that is relevant (default 1)\n"
    "  -n, --nosummary                   no summary ('all') lines\n"
    "  -M, --Max_retrieved_per_topic NUM evaluate only the top NUM documents per query\n"
    "  -J, --Judged_docs_only            drop unjudged documents before evaluating\n"
    "  -N, --Number_docs_in_coll NUM     documents in the collection (for utility)\n"
    "  -R, --Rel_info_format qrels       only 'qrels' is supported\n"
    "  -T, --Results_format trec_results only 'trec_results' is supported\n"
    "  -h, --help                        this help;  -v, --version\n"
    "plumb options:\n"
    "  --format text|json|csv            output format (default text = trec_eval's)\n"
    "  --output FILE                     write to FILE atomically instead of stdout\n"
    "  --bias-file FILE                  passage gender bias (plumb debias gender) for the\n"
    "                                    bias measures rab_V_cut.k, arab_V_cut.k,\n"
    "                                    abs_rab_V_cut.k (V = tc, tf, bool; male - female)\n"
    "  --trec-eval-9                     iprec_at_recall recall levels rounded as trec_eval 9\n"
    "                                    ((long)(x*R + 0.9)); default trec_eval 10 (lround)\n"
    "\n"
    "Measures: trec_eval's (runid num_q num_ret num_rel num_rel_ret map gm_map Rprec bpref\n"
    "recip_rank iprec_at_recall P relstring recall infAP gm_bpref Rprec_mult utility\n"
    "11pt_avg binG G dcg ideal_dcg ndcg ndcg_rel Rndcg ndcg_cut map_cut relative_P success\n"
    "set_P set_relative_P set_recall set_map set_F num_nonrel_judged_ret rbp rbp_resid unj;\n"
    "all_trec as trec_eval 10 selects them), and\n"
    "plumb's rab/arab/abs_rab_V_cut (gender bias of the top k, with --bias-file),\n"
    "plumb's mrr_cut (MRR@k, default k=10) and judged (share of the top k in the qrels,\n"
    "default k=10).\n";

struct EvalArgs {
    std::vector<std::string> measures;
    FormatOptions format_options;
    EvalOptions options;
    std::string format = "text";
    std::string output;
    std::string bias_file;
    std::vector<std::string> files;
    bool help = false;
    bool version = false;
};

struct LongOpt {
    const char* name;
    bool has_arg;
    char short_name;  // 0 for plumb-only options
};

const LongOpt kLongOpts[] = {
    {"help", false, 'h'},
    {"version", false, 'v'},
    {"query_eval_wanted", false, 'q'},
    {"measure", true, 'm'},
    {"complete_rel_info_wanted", false, 'c'},
    {"level_for_rel", true, 'l'},
    {"nosummary", false, 'n'},
    {"Debug_level", true, 'D'},
    {"Judged_docs_only", false, 'J'},
    {"Number_docs_in_coll", true, 'N'},
    {"Max_retrieved_per_topic", true, 'M'},
    {"Rel_info_format", true, 'R'},
    {"Results_format", true, 'T'},
    {"Output_old_results_format", false, 'o'},
    {"Zscore", true, 'Z'},
    {"format", true, 'f'},
    {"output", true, 'O'},
    {"trec-eval-9", false, '9'},
    {"bias-file", true, 'B'},
};

/// trec_eval's getopt string "hvqm:cl:nD:JN:M:R:T:oZ:".
bool short_takes_arg(char c, bool& known) {
    static const std::string with = "mlDNMRTZ";
    static const std::string without = "hvqcnJo";
    known = with.find(c) != std::string::npos || without.find(c) != std::string::npos;
    return with.find(c) != std::string::npos;
}

long parse_number(const std::string& opt, const std::string& value) {
    long v = 0;
    if (!detail::parse_long(value, v)) {
        throw UsageError("option " + opt + ": '" + value + "' is not an integer");
    }
    return v;
}

void apply(EvalArgs& a, char opt, const std::string& value) {
    switch (opt) {
        case 'h':
            a.help = true;
            break;
        case 'v':
            a.version = true;
            break;
        case 'q':
            a.format_options.per_query = true;
            break;
        case 'm':
            a.measures.push_back(value);
            break;
        case 'c':
            a.options.complete = true;
            break;
        case 'l':
            a.options.relevance_level = parse_number("-l", value);
            break;
        case 'n':
            a.format_options.summary = false;
            break;
        case 'J':
            a.options.judged_docs_only = true;
            break;
        case 'N':
            a.options.num_docs_in_coll = parse_number("-N", value);
            break;
        case 'M': {
            long m = parse_number("-M", value);
            if (m < 0) throw UsageError("option -M: must not be negative");
            a.options.max_docs_per_query = static_cast<std::size_t>(m);
            break;
        }
        case 'R':
            if (value != "qrels") {
                throw ConfigError("-R " + value + ": only the 'qrels' format is supported");
            }
            break;
        case 'T':
            if (value != "trec_results") {
                throw ConfigError("-T " + value + ": only the 'trec_results' format is supported");
            }
            break;
        case 'o':
            break;  // obsolete in trec_eval 9 too
        case 'D':
            throw ConfigError("-D (trec_eval debug output) is not supported");
        case 'Z':
            throw ConfigError("-Z (z-scores) is not supported");
        case 'f':
            a.format = value;
            break;
        case 'O':
            a.output = value;
            break;
        case '9':
            a.options.trec_eval_9_iprec = true;
            break;
        case 'B':
            a.bias_file = value;
            break;
        default:
            throw UsageError(std::string("unknown option -") + opt);
    }
}

EvalArgs parse_args(const std::vector<std::string>& args) {
    EvalArgs a;
    for (std::size_t i = 0; i < args.size(); ++i) {
        const std::string& s = args[i];
        if (s == "--") {
            for (++i; i < args.size(); ++i) a.files.push_back(args[i]);
            break;
        }
        if (s.size() > 2 && s[0] == '-' && s[1] == '-') {
            std::string name = s.substr(2), value;
            bool has_value = false;
            if (auto eq = name.find('='); eq != std::string::npos) {
                value = name.substr(eq + 1);
                name = name.substr(0, eq);
                has_value = true;
            }
            const LongOpt* match = nullptr;
            int matches = 0;
            for (const auto& o : kLongOpts) {
                if (name == o.name) {
                    match = &o;
                    matches = 1;
                    break;
                }
                if (std::string(o.name).rfind(name, 0) == 0) {
                    match = &o;
                    ++matches;
                }
            }
            if (matches == 0) throw UsageError("unknown option --" + name + " (plumb eval --help)");
            if (matches > 1) throw UsageError("ambiguous option --" + name);
            if (match->has_arg && !has_value) {
                if (i + 1 >= args.size()) {
                    throw UsageError(std::string("option --") + match->name + " requires a value");
                }
                value = args[++i];
            } else if (!match->has_arg && has_value) {
                throw UsageError(std::string("option --") + match->name + " takes no value");
            }
            apply(a, match->short_name, value);
            continue;
        }
        if (s.size() > 1 && s[0] == '-') {
            for (std::size_t k = 1; k < s.size(); ++k) {
                bool known = false;
                bool takes = short_takes_arg(s[k], known);
                if (!known) {
                    throw UsageError(std::string("unknown option -") + s[k] +
                                     " (plumb eval --help)");
                }
                if (!takes) {
                    apply(a, s[k], {});
                    continue;
                }
                std::string value;
                if (k + 1 < s.size()) {
                    value = s.substr(k + 1);
                } else {
                    if (i + 1 >= args.size()) {
                        throw UsageError(std::string("option -") + s[k] + " requires a value");
                    }
                    value = args[++i];
                }
                apply(a, s[k], value);
                break;
            }
            continue;
        }
        a.files.push_back(s);
    }
    return a;
}

void run_eval(const std::vector<std::string>& raw) {
    EvalArgs a = parse_args(raw);
    if (a.help) {
        std::fputs(kUsage, stdout);
        return;
    }
    if (a.version) {
        std::fputs("plumb eval 0.1.0 (trec_eval 9/10 compatible measures)\n", stdout);
        return;
    }
    if (a.files.size() < 2) {
        throw UsageError("expected QRELS and RUN, got " + std::to_string(a.files.size()) +
                         " file argument(s) (plumb eval --help)");
    }
    OutputFormat format;
    try {
        format = parse_output_format(a.format);
    } catch (const ConfigError& e) {
        throw UsageError(e.what());
    }
    MeasureSet measures;
    try {
        measures = a.measures.empty() ? MeasureSet::official() : MeasureSet::parse(a.measures);
    } catch (const ConfigError& e) {
        throw UsageError(e.what());  // a -m the command line got wrong
    }

    load_bias_tables(a.options, measures, a.bias_file);
    auto qrels = std::make_shared<const Qrels>(Qrels::load(a.files[0]));
    Evaluator evaluator(qrels, std::move(measures), a.options);

    // A progress bar only for big runs on a terminal: trec_eval prints nothing on stderr.
    std::error_code ec;
    auto size = a.files[1] == "-" ? 0 : std::filesystem::file_size(a.files[1], ec);
    const bool show = ::isatty(2) && !ec && size > (256u << 20);
    cli::ProgressBar bar("eval", "bytes", show);
    // QRELS RUN, or QRELS PART1 PART2 ...: a run written in parts (e.g. by MPI ranks or
    // separate jobs) evaluated as their concatenation.
    EvalResult result =
        a.files.size() == 2
            ? evaluator.evaluate_run(a.files[1], show ? bar.callback() : ProgressCallback{})
            : evaluator.evaluate_run(read_run_parts(
                  std::vector<std::filesystem::path>(a.files.begin() + 1, a.files.end())));
    bar.finish();
    if (!result.qrels_queries_without_results.empty()) {
        const auto& missing = result.qrels_queries_without_results;
        std::fprintf(stderr,
                     "plumb: warning: %zu qrels quer%s no results in %s (first: '%s') and %s "
                     "skipped, as trec_eval 9.0.x does (trec_eval 10.0 stops with an error); "
                     "-c scores them 0\n",
                     missing.size(), missing.size() == 1 ? "y has" : "ies have", a.files[1].c_str(),
                     missing.front().c_str(), missing.size() == 1 ? "is" : "are");
    }
    if (result.queries.empty()) {
        throw Error("no queries with both results and relevance info (qrels " + a.files[0] +
                    ", run " + a.files[1] + ")");
    }
    cli::write_output(format_result(result, format, a.format_options), a.output);
}

const cli::CommandRegistrar kEvalCommand("eval", [](CLI::App& app) {
    auto* sub = app.add_subcommand(
        "eval", "Evaluate a TREC run against qrels (trec_eval-compatible: -q -m -c -l -n -M)");
    sub->prefix_command();
    sub->allow_extras();
    sub->set_help_flag();  // -h/--help are trec_eval options, handled below
    sub->footer(kUsage);
    sub->callback([sub]() { run_eval(sub->remaining()); });
});

}  // namespace
}  // namespace plumb::eval
