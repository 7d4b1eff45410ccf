// `plumb generate`: a deterministic synthetic collection (corpus, topics, qrels).
#include <cstdio>
#include <memory>

#include "index/generator.hpp"
#include "plugin/cli/command.hpp"
#include "plugin/cli/progress_bar.hpp"

namespace {

struct GenerateArgs {
    std::string output;
    std::string format = "tsv";
    plumb::index::GeneratorConfig config;
    bool quiet = false;
};

void run_generate(const GenerateArgs& a) {
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
        auto args = std::make_shared<GenerateArgs>();
        auto* cmd = app.add_subcommand(
            "generate",
            "Generate a deterministic synthetic collection: DIR/corpus.tsv (or corpus.jsonl), "
            "DIR/topics.tsv and DIR/qrels.txt (Zipf-distributed pseudo-words; queries built from "
            "the words planted in their graded relevant passages)");
        auto& c = args->config;
        cmd->add_option("--output,-o", args->output, "Output directory (created if missing)")
            ->required();
        cmd->add_option("--passages", c.passages, "Number of passages")->capture_default_str();
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
        cmd->add_option("--distractors", c.distractors,
                        "Unjudged passages per query planted with 1-2 of its topic words")
            ->capture_default_str();
        cmd->add_option("--topic-rank-min", c.topic_rank_min,
                        "Topic words: lowest Zipf rank, as a fraction of --vocab")
            ->capture_default_str();
        cmd->add_option("--topic-rank-max", c.topic_rank_max,
                        "Topic words: highest Zipf rank, as a fraction of --vocab")
            ->capture_default_str();
        cmd->add_flag("--quiet,-q", args->quiet, "No progress bar");
        cmd->callback([args] { run_generate(*args); });
    }};

}  // namespace
