// `plumb debias ...`: position-bias rotation and answer-position audit (paper 000), gender bias
// files and query gender labels (papers 001, 004), balanced relevance judgements (paper 001),
// survivorship audit (paper 002). A thin layer over the debias library.
// Other debias CLI files add their subcommands to the same `debias` command (get-or-create).
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "debias/answer_positions.hpp"
#include "debias/balance.hpp"
#include "debias/detail_cli.hpp"
#include "debias/gender_scores.hpp"
#include "debias/judgements.hpp"
#include "debias/liwc.hpp"
#include "debias/rotation.hpp"
#include "debias/survivorship.hpp"
#include "plugin/cli/command.hpp"
#include "plugin/cli/options.hpp"
#include "plugin/cli/progress_bar.hpp"
#include "plugin/error.hpp"
#include "plugin/text_io.hpp"

namespace {

namespace db = plumb::debias;
using ull = unsigned long long;

void print_file(const std::filesystem::path& path) {
    std::fputs(plumb::read_file(path).c_str(), stdout);
}

// ---- rotate ---------------------------------------------------------------------------------
struct RotateArgs {
    std::string corpus, triples, output, format, qrels, offsets;
    std::uint64_t seed = 0;
    bool skip_bad = false, tabs_in_text = false, quiet = false;
};

void run_rotate(const RotateArgs& a) {
    if (a.corpus.empty() == a.triples.empty())
        throw plumb::InvalidArgument("give exactly one of --corpus or --triples");
    plumb::cli::ProgressBar bar("rotate", "bytes", !a.quiet);
    db::RotateStats s;
    if (!a.corpus.empty()) {
        db::RotateCorpusOptions o;
        o.seed = a.seed;
        o.format = a.format;
        o.offsets = a.offsets;
        o.skip_bad = a.skip_bad;
        o.tabs_in_text = a.tabs_in_text;
        if (!a.qrels.empty()) {
            o.only_ids.emplace();
            for (auto& j : db::read_qrels(a.qrels)) o.only_ids->insert(j.docid);
        }
        s = db::rotate_corpus(a.corpus, a.output, o, bar.callback());
    } else {
        if (!a.qrels.empty()) throw plumb::InvalidArgument("--qrels applies to --corpus only");
        s = db::rotate_triples(a.triples, a.output, a.seed, a.offsets, a.skip_bad, bar.callback());
    }
    bar.finish();
    std::printf(
        "passages: %llu, rotated: %llu (r = 1: %llu), copied unchanged (not judged): "
        "%llu, bad lines skipped: %llu\nwrote %s%s%s\n",
        static_cast<ull>(s.passages), static_cast<ull>(s.rotated), static_cast<ull>(s.unchanged_r1),
        static_cast<ull>(s.not_selected), static_cast<ull>(s.skipped_bad), a.output.c_str(),
        a.offsets.empty() ? "" : " and offsets ", a.offsets.c_str());
}

void add_rotate(CLI::App& debias) {
    auto [c, a] = plumb::cli::add_command<RotateArgs>(
        debias, "rotate",
        "Position-bias debiasing (Hofstaetter et al. 2021, Eq. 7): rotate each passage's "
        "whitespace tokens at a random r in {1..n}; r depends only on --seed and the text",
        run_rotate);
    c->add_option("--corpus", a->corpus, "Corpus to rotate (TSV id<TAB>text or BEIR JSONL)");
    c->add_option("--triples", a->triples,
                  "Text training triples query<TAB>pos<TAB>neg (both passages rotated)");
    c->add_option("--output,-o", a->output, "Output file (same format as the input)")->required();
    c->add_option("--seed", a->seed, "Random seed")->capture_default_str();
    db::detail::add_corpus_format_option(c, a->format);
    c->add_option("--qrels", a->qrels,
                  "Rotate only the passages judged in these qrels (others copied unchanged)");
    c->add_option(
        "--offsets", a->offsets,
        "Side file of offsets: docid<TAB>r<TAB>n (triples: line<TAB>pos|neg<TAB>r<TAB>n)");
    c->add_flag("--skip-bad", a->skip_bad, "Skip and count malformed lines");
    c->add_flag("--tabs-in-text", a->tabs_in_text, "TSV: text is everything after the first TAB");
    plumb::cli::add_quiet_flag(c, a->quiet, "No progress bar");
}

// ---- answer-positions -----------------------------------------------------------------------
struct AnswerArgs {
    db::AnswerPositionOptions o;
    std::string answers, qrels, corpus, rotated, offsets, output;
    std::int64_t seed = -1;
    bool quiet = false;
};

void run_answers(AnswerArgs& a) {
    a.o.answers = a.answers;
    a.o.qrels = a.qrels;
    a.o.corpus = a.corpus;
    a.o.rotated_corpus = a.rotated;
    a.o.offsets = a.offsets;
    if (a.seed >= 0) a.o.rotation_seed = static_cast<std::uint64_t>(a.seed);
    plumb::cli::ProgressBar bar("answer-positions", "bytes", !a.quiet);
    auto rep = db::audit_answer_positions(a.o, bar.callback());
    bar.finish();
    db::write_answer_position_report(rep, a.output);
    print_file(a.output + ".txt");
    std::printf("wrote %s.{txt,json,png,svg}\n", a.output.c_str());
}

void add_answer_positions(CLI::App& debias) {
    auto [c, a] = plumb::cli::add_command<AnswerArgs>(
        debias, "answer-positions",
        "Histogram of relative answer start positions in relevant passages (Fig. 1 of "
        "Hofstaetter et al. 2021), before and after rotation",
        run_answers);
    c->add_option("--answers", a->answers,
                  "Answers: qid<TAB>answer TSV, or SQuAD-style JSON (.json)")
        ->required();
    c->add_option("--qrels", a->qrels, "Qrels (TSV answers)");
    c->add_option("--corpus", a->corpus, "Corpus holding the relevant passages (TSV answers)");
    db::detail::add_corpus_format_option(c, a->o.corpus_format);
    c->add_option("--bins", a->o.bins, "Histogram bins")->capture_default_str();
    c->add_option("--min-relevance", a->o.min_relevance, "Relevant = grade >= this")
        ->capture_default_str();
    c->add_flag("--strip-punctuation", a->o.strip_punctuation,
                "Compare tokens without leading/trailing punctuation (Paris. = paris)");
    c->add_option("--rotated", a->rotated,
                  "Rotated corpus: search the answers again after rotation");
    c->add_option("--offsets", a->offsets,
                  "Offsets from 'plumb debias rotate': map the found spans (preferred)");
    c->add_option("--seed", a->seed,
                  "SQuAD input: rotate each context with this seed for the 'after' histogram");
    c->add_option("--output,-o", a->output, "Output prefix: PREFIX.txt, .json, .png, .svg")
        ->required();
    plumb::cli::add_quiet_flag(c, a->quiet, "No progress bar");
}

// ---- gender ---------------------------------------------------------------------------------
struct GenderArgs {
    std::string wordlist, corpus, index, format, output;
    bool skip_bad = false, quiet = false;
};

void run_gender(const GenderArgs& a) {
    db::GenderScoreOptions o;
    o.wordlist = a.wordlist;
    o.corpus = a.corpus;
    o.index_dir = a.index;
    o.corpus_format = a.format;
    o.skip_bad = a.skip_bad;
    o.output_prefix = a.output;
    plumb::cli::ProgressBar bar("gender", a.index.empty() ? "bytes" : "passages", !a.quiet);
    auto s = db::score_gender(o, bar.callback());
    bar.finish();
    std::printf(
        "passages: %llu (with female words: %llu, with male words: %llu; IBBR labels "
        "+1: %llu, -1: %llu, 0: %llu; bad lines skipped: %llu)\n",
        static_cast<ull>(s.passages), static_cast<ull>(s.with_female),
        static_cast<ull>(s.with_male), static_cast<ull>(s.ibbr_male),
        static_cast<ull>(s.ibbr_female), static_cast<ull>(s.ibbr_neutral),
        static_cast<ull>(s.skipped_bad));
    std::printf("wrote %s (every variant)\n", db::gender_combined_path(a.output).c_str());
    for (const char* suffix : {"tc", "tf", "bool", "ibbr", "ibbr_magnitude"})
        std::printf("wrote %s\n", db::gender_output_path(a.output, suffix).c_str());
}

void add_gender(CLI::App& debias) {
    auto [c, a] = plumb::cli::add_command<GenderArgs>(
        debias, "gender",
        "Per-passage gender magnitudes (tc, tf, bool; Rekabsaz & Schedl 2020) and the IBBR "
        "magnitude/label (Li et al. 2022) for a whole corpus or index",
        run_gender);
    c->add_option("--wordlist", a->wordlist, "Gender word list: word,f / word,m lines")->required();
    db::detail::add_passage_options(c, a->corpus, a->index, a->format);
    c->add_flag("--skip-bad", a->skip_bad, "Skip and count malformed corpus lines");
    c->add_option("--output,-o", a->output,
                  "Bias file BIAS[.tsv] with every variant (docid, tc, tf, bool triples, "
                  "IBBR magnitude and label), plus one file per variant beside it: "
                  "BIAS.{tc,tf,bool,ibbr,ibbr_magnitude}.tsv")
        ->required();
    plumb::cli::add_quiet_flag(c, a->quiet, "No progress bar");
}

// ---- query-gender ---------------------------------------------------------------------------
struct QueryGenderArgs {
    std::string wordlist, topics, output, both_as = "n";
};

void run_query_gender(const QueryGenderArgs& a) {
    auto s = db::label_query_gender(a.wordlist, a.topics, a.output, a.both_as == "majority");
    std::printf("queries: f %llu, m %llu, n %llu (with both genders' words: %llu)\nwrote %s\n",
                static_cast<ull>(s.female), static_cast<ull>(s.male), static_cast<ull>(s.neutral),
                static_cast<ull>(s.both), a.output.c_str());
}

void add_query_gender(CLI::App& debias) {
    auto [c, a] = plumb::cli::add_command<QueryGenderArgs>(
        debias, "query-gender", "Label queries f / m / n from a gender word list",
        run_query_gender);
    c->add_option("--wordlist", a->wordlist, "Gender word list: word,f / word,m lines")->required();
    c->add_option("--topics", a->topics, "Topics: qid<TAB>query or BEIR queries.jsonl")->required();
    c->add_option("--output,-o", a->output, "Output qid<TAB>label")->required();
    c->add_option("--both-as", a->both_as,
                  "Queries with both genders' words: n (neutral) or majority")
        ->check(CLI::IsMember({"n", "majority"}))
        ->capture_default_str();
}

// ---- balance --------------------------------------------------------------------------------
struct BalanceArgs {
    std::string pairs, query_gender, dic, train, output, negatives;
    std::vector<std::string> categories;
    std::vector<double> ratios;
    std::uint64_t seed = 0;
    bool skip_bad = false, quiet = false, one_to_one = false;
};

void run_balance(const BalanceArgs& a) {
    db::BalanceOptions o;
    o.pairs = a.pairs;
    o.query_gender = a.query_gender;
    o.dictionary = a.dic;
    o.categories = a.categories;
    o.train = a.train;
    o.negatives = a.negatives;
    o.ratios = a.ratios;
    o.seed = a.seed;
    o.skip_bad_dictionary_lines = a.skip_bad;
    o.one_to_one = a.one_to_one;
    o.output_dir = a.output;
    plumb::cli::ProgressBar bar("match", "queries", !a.quiet);
    db::run_balance(o, bar.callback());
    bar.finish();
    print_file(o.output_dir / "report.txt");
}

void add_balance(CLI::App& debias) {
    auto [c, a] = plumb::cli::add_command<BalanceArgs>(
        debias, "balance",
        "Balanced relevance judgements (Bigdeli et al.): match female and male queries on "
        "the LIWC profile of their passages and augment a training set at given ratios",
        run_balance);
    c->add_option("--pairs", a->pairs,
                  "Generated pairs: qid<TAB>query<TAB>passage or "
                  "qid<TAB>query<TAB>docid<TAB>passage")
        ->required();
    c->add_option("--query-gender", a->query_gender, "Query labels qid<TAB>f|m|n")->required();
    db::detail::add_liwc_options(c, a->dic, a->categories);
    c->add_option("--train", a->train,
                  "Original training set: query<TAB>passage or query<TAB>pos<TAB>neg")
        ->required();
    c->add_option("--ratios", a->ratios, "Augmentation ratios, e.g. 0.05,0.25")
        ->delimiter(',')
        ->required();
    c->add_option("--negatives", a->negatives,
                  "Negatives of the generated queries, qid<TAB>docid<TAB>passage (e.g. plumb "
                  "generate --planted --generated-negatives: hard or random, as the original "
                  "triples' negatives): each added triple takes a negative of its own query. "
                  "Without it, another generated pair's passage (an easy negative)");
    c->add_option("--seed", a->seed, "Seed (random negatives for triples)")->capture_default_str();
    c->add_flag("--skip-bad-dic-lines", a->skip_bad,
                "Skip and count bad dictionary lines instead of failing");
    c->add_flag("--one-to-one", a->one_to_one,
                "Match each query at most once (greedy by cosine), so equal numbers of "
                "female and male examples are added");
    c->add_option("--output,-o", a->output, "Output directory")->required();
    plumb::cli::add_quiet_flag(c, a->quiet, "No progress bar");
}

// ---- liwc ----------------------------------------------------------------------------------
struct LiwcArgs {
    std::string dic, corpus, index, format, run, output;
    std::vector<std::string> categories;
    std::size_t depth = 10;
    bool skip_bad_dic = false, skip_bad = false, quiet = false;
};

void run_liwc(const LiwcArgs& a) {
    auto dic = db::LiwcDictionary::load(a.dic, a.skip_bad_dic);
    auto cats = db::resolve_categories(dic, a.categories);
    db::PhiFileOptions o;
    o.corpus = a.corpus;
    o.index_dir = a.index;
    o.corpus_format = a.format;
    o.skip_bad = a.skip_bad;
    if (!a.run.empty()) o.only_ids = db::run_top_docids(a.run, a.depth);
    plumb::cli::ProgressBar bar("liwc", a.index.empty() ? "bytes" : "passages", !a.quiet);
    auto s = db::write_phi_file(o, dic, cats, a.output, bar.callback());
    bar.finish();
    std::printf(
        "dictionary: %zu categories, %zu words, %zu prefixes, %zu phrases, %zu bad lines "
        "skipped\n"
        "passages written: %llu, run passages not in the collection: %llu, bad corpus "
        "lines skipped: %llu\nwrote %s\n",
        dic.categories().size(), dic.exact_entries(), dic.prefix_entries(), dic.phrase_entries(),
        dic.skipped_lines().size(), static_cast<ull>(s.written), static_cast<ull>(s.missing),
        static_cast<ull>(s.skipped_bad), a.output.c_str());
}

void add_liwc(CLI::App& debias) {
    auto [c, a] = plumb::cli::add_command<LiwcArgs>(
        debias, "liwc",
        "LIWC category proportions phi(d) per passage (paper 001), in the category-vector "
        "format the evaluator reads",
        run_liwc);
    db::detail::add_liwc_options(c, a->dic, a->categories);
    db::detail::add_passage_options(c, a->corpus, a->index, a->format);
    c->add_option("--run", a->run, "Only the passages in the top --depth of this TREC run");
    c->add_option("--depth", a->depth, "Depth for --run")->capture_default_str();
    c->add_flag("--skip-bad-dic-lines", a->skip_bad_dic,
                "Skip and count bad dictionary lines instead of failing");
    c->add_flag("--skip-bad", a->skip_bad, "Skip and count malformed corpus lines");
    c->add_option("--output,-o", a->output, "Output docid<TAB>phi... with a header")->required();
    plumb::cli::add_quiet_flag(c, a->quiet, "No progress bar");
}

// ---- survivorship ---------------------------------------------------------------------------
struct SurvivorshipArgs {
    std::string input, types, corpus, format, output;
    unsigned max_k = 0;
    bool quiet = false;
};

void run_survivorship(const SurvivorshipArgs& a) {
    db::SurvivorshipOptions o;
    o.input = a.input;
    o.types = a.types;
    o.corpus = a.corpus;
    o.corpus_format = a.format;
    o.max_k = a.max_k;
    o.output_dir = a.output;
    plumb::cli::ProgressBar bar("survivorship", "bytes", !a.quiet && !a.corpus.empty());
    db::run_survivorship(o, bar.callback());
    bar.finish();
    print_file(o.output_dir / "report.txt");
}

void add_survivorship(CLI::App& debias) {
    auto [c, a] = plumb::cli::add_command<SurvivorshipArgs>(
        debias, "survivorship",
        "Survivorship audit (Gupta 2021): unanswered queries overall and per type, first "
        "relevant rank, and the subset files S_1..S_k",
        run_survivorship);
    c->add_option("--input", a->input,
                  "Shown rankings: MS MARCO QnA .json / .jsonl, or "
                  "qid<TAB>rank<TAB>docid<TAB>is_selected")
        ->required();
    c->add_option("--types", a->types, "Query types qid<TAB>type (TSV input)");
    c->add_option("--corpus", a->corpus,
                  "Map QnA passage texts to this corpus' docids (exact text match)");
    db::detail::add_corpus_format_option(c, a->format);
    c->add_option("--max-k", a->max_k, "Subsets S_1..S_k (default: largest shown rank)");
    c->add_option("--output,-o", a->output, "Output directory")->required();
    plumb::cli::add_quiet_flag(c, a->quiet, "No progress bar");
}

const plumb::cli::CommandRegistrar kDebias{
    "debias", [](CLI::App& app) {
        auto& debias = db::detail::debias_command(app);
        for (auto add : {add_rotate, add_answer_positions, add_gender, add_query_gender,
                         add_balance, add_liwc, add_survivorship})
            add(debias);
    }};

}  // namespace
