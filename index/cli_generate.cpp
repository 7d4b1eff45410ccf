// `plumb generate`: a deterministic synthetic collection (corpus, topics, qrels), or with
// --planted the planted-bias collection (index/planted.hpp).
#include <cstdio>
#include <memory>

#include "index/generator.hpp"
#include "index/planted.hpp"
#include "plugin/cli/command.hpp"
#include "plugin/cli/options.hpp"
#include "plugin/cli/progress_bar.hpp"

namespace {

struct GenerateArgs {
    std::string output;
    std::string format = "tsv";
    plumb::index::GeneratorConfig config;
    bool quiet = false;
    // --planted
    bool planted = false;
    std::string size = "small";
    std::string answer_positions = "early";
    std::string distractor_positions = "opposite";
    std::string complexity_cue = "overlap";
    std::string clause_words = "corpus";
    std::string near_duplicate_negatives = "off";
    plumb::index::PlantedConfig p;
    double candidate_gender_share = 0.0;
    double candidate_gender_train_skew = 0.0;
    double gender_train_skew = 0.0;
    CLI::App* cmd = nullptr;  // to tell given options from defaults
};

void run_planted(const GenerateArgs& a) {
    using namespace plumb::index;
    const auto given = [&](const char* name) { return a.cmd->count(name) > 0; };
    PlantedConfig c = planted_preset(a.size);
    const std::uint64_t passages = c.base.passages;
    c.base = a.config;
    c.base.passages = given("--passages") ? a.config.passages : passages;
    c.base.format = parse_corpus_format(a.format);
    if (given("--train-queries")) c.train_queries = a.p.train_queries;
    if (given("--dev-queries")) c.dev_queries = a.p.dev_queries;
    if (given("--test-queries")) c.test_queries = a.p.test_queries;
    c.answer_positions = parse_answer_positions(a.answer_positions);
    c.distractor_positions = parse_distractor_positions(a.distractor_positions);
    c.early_scale = a.p.early_scale;
    c.answer_words = a.p.answer_words;
    c.min_query_terms = a.p.min_query_terms;
    c.max_query_terms = a.p.max_query_terms;
    c.question_share = a.p.question_share;
    c.max_partial = a.p.max_partial;
    c.hard_negatives = a.p.hard_negatives;
    c.hard_negative_terms = a.p.hard_negative_terms;
    c.hard_negative_share = a.p.hard_negative_share;
    c.triples_per_query = a.p.triples_per_query;
    c.gender_share = a.p.gender_share;
    c.gender_skew = a.p.gender_skew;
    if (given("--gender-train-skew")) c.gender_train_skew = a.gender_train_skew;
    c.max_gender_words = a.p.max_gender_words;
    c.female_query_share = a.p.female_query_share;
    c.male_query_share = a.p.male_query_share;
    c.query_gender_skew = a.p.query_gender_skew;
    if (given("--candidate-gender-share")) c.candidate_gender_share = a.candidate_gender_share;
    if (given("--candidate-gender-train-skew"))
        c.candidate_gender_train_skew = a.candidate_gender_train_skew;
    c.liwc_words = a.p.liwc_words;
    c.liwc_skew = a.p.liwc_skew;
    c.generated_pairs = a.p.generated_pairs;
    c.generated_negatives = a.p.generated_negatives;
    c.balanced_eval_gender = a.p.balanced_eval_gender;
    c.near_duplicate_negatives = parse_near_duplicate_negatives(a.near_duplicate_negatives);
    c.complexity_levels = a.p.complexity_levels;
    c.clause_terms = a.p.clause_terms;
    c.complexity_cue = parse_complexity_cue(a.complexity_cue);
    c.clause_words = parse_clause_words(a.clause_words);
    c.shown_k = a.p.shown_k;
    c.unanswered = a.p.unanswered;
    PlantedGenerator generator(c);
    plumb::cli::ProgressBar bar("generate", "passages", !a.quiet);
    auto result = generator.write(a.output, bar.callback());
    bar.finish();
    std::fprintf(stderr,
                 "wrote a planted-bias collection to %s: %llu passages, %llu topics (%llu train, "
                 "%llu dev, %llu test), %llu judgments, %llu training triples (see "
                 "manifest.json)\n",
                 a.output.c_str(), static_cast<unsigned long long>(result.passages),
                 static_cast<unsigned long long>(result.queries),
                 static_cast<unsigned long long>(c.train_queries),
                 static_cast<unsigned long long>(c.dev_queries),
                 static_cast<unsigned long long>(c.test_queries),
                 static_cast<unsigned long long>(result.judgments),
                 static_cast<unsigned long long>(result.triples));
}

void run_generate(const GenerateArgs& a) {
    if (a.planted) return run_planted(a);
    plumb::index::GeneratorConfig config = a.config;
    config.format = plumb::index::parse_corpus_format(a.format);
    plumb::index::CorpusGenerator generator(config);
    plumb::cli::ProgressBar bar("generate", "passages", !a.quiet);
    auto result = generator.write(a.output, bar.callback());
    bar.finish();
    std::fprintf(stderr, "wrote %llu passages to %s, %llu topics to %s, %llu judgments to %s\n",
                 static_cast<unsigned long long>(result.passages), result.corpus.c_str(),
                 static_cast<unsigned long long>(result.queries), result.topics.c_str(),
                 static_cast<unsigned long long>(result.judgments), result.qrels.c_str());
}

const plumb::cli::CommandRegistrar kGenerate{
    "generate", [](CLI::App& app) {
        auto [cmd, args] = plumb::cli::add_command<GenerateArgs>(
            app, "generate",
            "Generate a deterministic synthetic collection: DIR/corpus.tsv (or corpus.jsonl), "
            "DIR/topics.tsv and DIR/qrels.txt (Zipf-distributed pseudo-words; queries built from "
            "the words planted in their graded relevant passages). With --planted: the "
            "planted-bias collection (answer positions, hard negatives, gender skew, "
            "survivorship rankings, train triples, splits; opt-in: gendered queries with "
            "category words and generated pairs, gendered candidates, complexity levels; see "
            "index/README.md)",
            run_generate);
        args->cmd = cmd;
        auto& c = args->config;
        cmd->add_option("--output,-o", args->output, "Output directory (created if missing)")
            ->required();
        cmd->add_option("--passages", c.passages, "Number of passages")->capture_default_str();
        auto* queries =
            cmd->add_option("--queries", c.queries, "Number of topics")->capture_default_str();
        cmd->add_option("--seed", c.seed, "Random seed (same seed: byte-identical output)")
            ->capture_default_str();
        cmd->add_option("--vocab", c.vocab, "Vocabulary size (pseudo-words)")
            ->capture_default_str();
        cmd->add_option("--format", args->format, "Corpus format: tsv or jsonl")
            ->check(CLI::IsMember({"tsv", "jsonl"}))
            ->capture_default_str();
        cmd->add_option("--zipf", c.zipf_s, "Zipf exponent s (P(rank r) ~ 1/r^s)")
            ->capture_default_str();
        cmd->add_option("--min-words", c.min_words, "Minimum passage length (words)")
            ->capture_default_str();
        cmd->add_option("--max-words", c.max_words, "Maximum passage length (words)")
            ->capture_default_str();
        auto* distractors =
            cmd->add_option("--distractors", c.distractors,
                            "Unjudged passages per query planted with 1-2 of its topic words")
                ->capture_default_str();
        cmd->add_option("--topic-rank-min", c.topic_rank_min,
                        "Topic words: lowest Zipf rank, as a fraction of --vocab")
            ->capture_default_str();
        cmd->add_option("--topic-rank-max", c.topic_rank_max,
                        "Topic words: highest Zipf rank, as a fraction of --vocab")
            ->capture_default_str();
        plumb::cli::add_quiet_flag(cmd, args->quiet, "No progress bar");

        // The planted-bias collection.
        const char* g = "Planted-bias corpus (--planted)";
        auto& p = args->p;
        auto* planted =
            cmd->add_flag("--planted", args->planted,
                          "Write the planted-bias collection (--passages overrides the --size "
                          "preset; --queries and --distractors do not apply)")
                ->group(g);
        queries->excludes(planted);
        distractors->excludes(planted);
        auto opt = [&](CLI::Option* o) { o->group(g)->needs(planted)->capture_default_str(); };
        opt(cmd->add_option("--size", args->size,
                            "Preset: tiny (2k passages, 60/10/20 queries), small (20k, "
                            "1000/100/200), medium (200k, 5000/200/500), large (2M, "
                            "20000/500/1000)")
                ->check(CLI::IsMember({"tiny", "small", "medium", "large"})));
        opt(cmd->add_option("--train-queries", p.train_queries, "Train queries (preset if unset)"));
        opt(cmd->add_option("--dev-queries", p.dev_queries, "Dev queries (preset if unset)"));
        opt(cmd->add_option("--test-queries", p.test_queries, "Test queries (preset if unset)"));
        opt(cmd->add_option("--answer-positions", args->answer_positions,
                            "Relative answer start: early (truncated exponential, MS MARCO-like) "
                            "or uniform (SQuAD-like)")
                ->check(CLI::IsMember({"early", "uniform"})));
        opt(cmd->add_option("--early-scale", p.early_scale,
                            "Scale of the truncated exponential of early answer positions"));
        opt(cmd->add_option("--answer-words", p.answer_words, "Answer span length (words)"));
        opt(cmd->add_option("--min-query-terms", p.min_query_terms,
                            "Content words per query: min"));
        opt(cmd->add_option("--max-query-terms", p.max_query_terms,
                            "Content words per query: max"));
        opt(cmd->add_option("--question-share", p.question_share,
                            "Share of question-like queries (else keyword queries)"));
        opt(cmd->add_option("--max-partial", p.max_partial,
                            "Grade-1 (partial) passages per query: uniform in [0, max]"));
        opt(cmd->add_option("--hard-negatives", p.hard_negatives, "Hard negatives per query"));
        opt(cmd->add_option("--hard-negative-terms", p.hard_negative_terms,
                            "Share of the query terms a hard negative contains (< all; 1 = all)"));
        opt(cmd->add_option("--distractor-positions", args->distractor_positions,
                            "Hard-negative block position: opposite (late for early answers), "
                            "late, uniform, early")
                ->check(CLI::IsMember({"opposite", "late", "uniform", "early"})));
        opt(cmd->add_option("--triples-per-query", p.triples_per_query,
                            "Training triples per train query"));
        opt(cmd->add_option("--hard-negative-share", p.hard_negative_share,
                            "Share of triples whose negative is a hard negative (else random)"));
        opt(cmd->add_option("--gender-share", p.gender_share,
                            "Share of passages carrying gender words"));
        opt(cmd->add_option("--gender-skew", p.gender_skew,
                            "Share of gendered relevant passages that are male-leaning"));
        cmd->add_option("--gender-train-skew", args->gender_train_skew,
                        "Train queries only: P(male) of the gendered relevant passages of "
                        "neutral queries (dev and test keep --gender-skew); unset = "
                        "--gender-skew")
            ->group(g)
            ->needs(planted);
        opt(cmd->add_option("--max-gender-words", p.max_gender_words,
                            "Gender words per gendered passage: 1..max"));
        opt(cmd->add_option("--female-queries", p.female_query_share,
                            "Share of female queries (paper 001: one female word in the query; "
                            "labels in query_gender.tsv)"));
        opt(cmd->add_option("--male-queries", p.male_query_share, "Share of male queries"));
        opt(cmd->add_option("--query-gender-skew", p.query_gender_skew,
                            "P(a gendered query's relevant passage carries its own gender's "
                            "words; else the other gender's)"));
        opt(cmd->add_option("--liwc-words", p.liwc_words,
                            "Category words (liwc.dic) per planted passage of a gendered query"));
        opt(cmd->add_option("--liwc-skew", p.liwc_skew,
                            "P(a gendered query's relevant passage draws a category word from "
                            "its gender's stereotyped categories; else uniform)"));
        opt(cmd->add_option("--generated-pairs", p.generated_pairs,
                            "Generated (query, passage) pairs for debias balance "
                            "(generated_pairs.tsv, generated_gender.tsv; needs gendered "
                            "queries)"));
        cmd->add_option("--near-duplicate-negatives", args->near_duplicate_negatives,
                        "Paper 001's learnable cause: the TRAIN hard negatives of the gendered "
                        "(gendered) or of every (all) train query are near-duplicates of a "
                        "relevant passage (every term once, placed like a relevant passage) "
                        "whose gender words mirror the relevant passages' (P(male) = 1 - "
                        "theirs), so that in their triples the gender of the words tells the "
                        "positive from the negative; dev and test unchanged (index/README.md)")
            ->check(CLI::IsMember({"off", "gendered", "all"}))
            ->capture_default_str()
            ->group(g)
            ->needs(planted);
        cmd->add_flag("--generated-negatives", p.generated_negatives,
                      "One negative per generated pair, made as the triples' negatives are "
                      "(--hard-negative-share: a hard negative of the pair's own query, built "
                      "like the train hard negatives; else a random corpus passage): "
                      "generated_negatives.tsv for debias balance --negatives")
            ->group(g)
            ->needs(planted);
        cmd->add_flag("--balanced-eval-gender", p.balanced_eval_gender,
                      "Exactly balanced gender on the DEV and TEST queries' planted passages "
                      "(neutral queries' relevant passages, every query's hard negatives): half "
                      "male, half female, equal word counts, instead of a draw per passage, so "
                      "that no chance lean of the judgements moves ARaB (paper 001; needs "
                      "--gender-skew 0.5; index/README.md)")
            ->group(g)
            ->needs(planted);
        auto* candidate_share =
            cmd->add_option("--candidate-gender-share", args->candidate_gender_share,
                            "Share of every query's planted passages (relevant, partial, hard "
                            "negatives) with gender words, instead of --gender-share (paper 004: "
                            "PRF_m / PRF_f defined for most queries); unset = --gender-share")
                ->group(g)
                ->needs(planted);
        cmd->add_option("--candidate-gender-train-skew", args->candidate_gender_train_skew,
                        "Train queries only: P(male) of gendered relevant passages and "
                        "P(female) of gendered hard negatives (paper 004: a gender preference "
                        "a ranker learns from the triples; dev and test keep --gender-skew / "
                        "0.5); needs --candidate-gender-share")
            ->group(g)
            ->needs(planted)
            ->needs(candidate_share);
        {
            auto* levels = cmd->add_flag("--complexity-levels", p.complexity_levels,
                                         "Simple / medium / complex queries whose relevance "
                                         "cues differ (paper 003; labels in "
                                         "query_complexity.tsv)")
                               ->group(g)
                               ->needs(planted);
            opt(cmd->add_option("--clause-terms", p.clause_terms,
                                "Content words in a complex query's subordinate clause")
                    ->needs(levels));
            cmd->add_option("--complexity-cue", args->complexity_cue,
                            "What complex queries break: overlap (their hard negatives carry "
                            "the clause words; default) or position (simple and medium queries "
                            "match early in relevant passages, complex ones late; paper 003's "
                            "experiment)")
                ->check(CLI::IsMember({"overlap", "position"}))
                ->group(g)
                ->needs(levels);
            cmd->add_option("--clause-words", args->clause_words,
                            "Where a complex query's clause content words come from: corpus "
                            "(corpus words, which background passages contain; default) or "
                            "unseen (pseudo-words no background passage contains: complex "
                            "queries differ by the cue alone; paper 003's experiment)")
                ->check(CLI::IsMember({"corpus", "unseen"}))
                ->group(g)
                ->needs(levels);
        }
        opt(cmd->add_option("--shown-k", p.shown_k,
                            "Passages shown to the annotator per query (survivorship)"));
        opt(cmd->add_option("--unanswered", p.unanswered, "Share of unanswered queries"));
    }};

}  // namespace
