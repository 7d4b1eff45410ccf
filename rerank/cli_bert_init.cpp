// `plumb bert-init`: an untrained small BERT (random initialisation) with a WordPiece vocabulary
// built from a corpus and its topics, as a Hugging Face folder for `plumb train --model cat|dot
// --init`.
#include <fmt/format.h>

#include <cstdio>
#include <string>
#include <vector>

#include "index/corpus.hpp"
#include "plugin/cli/command.hpp"
#include "plugin/cli/options.hpp"
#include "plugin/cli/progress_bar.hpp"
#include "plugin/error.hpp"
#include "rerank/bert_init.hpp"

namespace {

using namespace plumb::rerank;

struct BertInitArgs {
    std::vector<std::string> corpora, topics;
    std::string output, format;
    std::size_t max_vocab = 30000, min_count = 1;
    BertInitOptions model;
    bool quiet = false;
};

void run_bert_init(const BertInitArgs& a) {
    WordPieceVocabOptions vo;
    vo.max_size = a.max_vocab;
    vo.min_count = a.min_count;
    WordPieceVocabBuilder builder(vo);
    std::size_t passages = 0, queries = 0;
    {
        plumb::cli::ProgressBar bar("bert-init", "passages", !a.quiet);
        for (const auto& path : a.corpora) {
            plumb::index::CorpusReaderOptions ro;
            ro.format = plumb::index::resolve_corpus_format(a.format, path);
            plumb::index::CorpusReader reader(path, ro);
            plumb::index::Document doc;
            while (reader.next(doc)) {
                try {
                    builder.add_text(plumb::index::indexed_text(doc));
                } catch (const plumb::InvalidArgument& e) {  // invalid UTF-8
                    throw plumb::ParseError(reader.name(), reader.line_number(), e.what());
                }
                if (++passages % 4096 == 0) bar.update(passages, 0);
            }
        }
        bar.update(passages, passages);
    }
    for (const auto& path : a.topics) {
        for (const auto& q : plumb::index::read_topics(path)) {
            try {
                builder.add_text(q.text);
            } catch (const plumb::InvalidArgument& e) {
                throw plumb::ParseError(path, 0, "query " + q.id + ": " + e.what());
            }
            ++queries;
        }
    }
    const auto vocab = builder.build();
    const auto s = write_bert_init(a.output, vocab, a.model, vo.tokenizer);
    std::printf("%s\n",
                fmt::format("bert-init: {} passages, {} queries, {} distinct words -> vocabulary "
                            "of {}; {} layers x {} hidden, {} heads, intermediate {}, {} "
                            "positions, {} parameters -> {}",
                            passages, queries, builder.distinct_words(), s.vocab_size,
                            s.config.num_hidden_layers, s.config.hidden_size,
                            s.config.num_attention_heads, s.config.intermediate_size,
                            s.config.max_position_embeddings, s.parameters, a.output)
                    .c_str());
}

const plumb::cli::CommandRegistrar kRegistrar{"bert-init", [](CLI::App& app) {
    auto args = std::make_shared<BertInitArgs>();
    auto* c = app.add_subcommand(
        "bert-init",
        "Create an untrained small BERT (random initialisation) with a WordPiece vocabulary of "
        "a corpus's words, as a Hugging Face folder for plumb train --model cat|dot --init");
    c->add_option("--corpus", args->corpora, "passages (TSV id<TAB>text or JSONL); repeatable")
        ->required()
        ->check(CLI::ExistingPath);
    c->add_option("--topics", args->topics,
                  "topics whose words join the vocabulary (TSV, TREC or BEIR); repeatable")
        ->check(CLI::ExistingPath);
    c->add_option("--output", args->output, "model folder to write")->required();
    plumb::cli::add_input_format_option(c, args->format, "tsv | jsonl | trec | html (default: detected)");
    c->add_option("--max-vocab", args->max_vocab,
                  "most tokens in vocab.txt (specials and character pieces included)")
        ->capture_default_str()
        ->check(plumb::cli::positive_count());
    c->add_option("--min-count", args->min_count, "words seen fewer times are split into pieces")
        ->capture_default_str()
        ->check(plumb::cli::positive_count());
    c->add_option("--layers", args->model.layers, "Transformer layers")
        ->capture_default_str()
        ->check(CLI::Range(1, 48));
    c->add_option("--hidden", args->model.hidden, "hidden size")
        ->capture_default_str()
        ->check(CLI::Range(1, 8192));
    c->add_option("--heads", args->model.heads, "attention heads (must divide --hidden)")
        ->capture_default_str()
        ->check(CLI::Range(1, 256));
    c->add_option("--intermediate", args->model.intermediate, "feed-forward size")
        ->capture_default_str()
        ->check(CLI::Range(1, 65536));
    c->add_option("--max-positions", args->model.max_positions,
                  "position embeddings (longest input in tokens)")
        ->capture_default_str()
        ->check(CLI::Range(3, 8192));
    c->add_option("--seed", args->model.seed, "initialisation seed")->capture_default_str();
    c->add_option("--word-std", args->model.word_std,
                  "standard deviation of the random word embeddings (transformers: 0.02)")
        ->capture_default_str()
        ->check(CLI::PositiveNumber);
    plumb::cli::add_quiet_flag(c, args->quiet, "no progress bar");
    c->callback([args] { run_bert_init(*args); });
}};

}  // namespace
