// `plumb tk-init`: an untrained TK model folder from GloVe / word2vec / fastText embeddings.
// `plumb tk-vectors`: TK's contextualised passage-term vectors of a corpus, as TSV.
// `plumb tk-cache`: TK's passage cache of a collection (rerank/tk_cache.hpp), resumable.
#include <fmt/format.h>

#include <cstdio>
#include <string>
#include <vector>

#include "plugin/cli/options.hpp"
#include "index/corpus.hpp"
#include "index/passage_index.hpp"
#include "plugin/cli/command.hpp"
#include "plugin/cli/progress_bar.hpp"
#include "plugin/error.hpp"
#include "plugin/text_io.hpp"
#include "rerank/detail/cli_options.hpp"
#include "rerank/embeddings_text.hpp"
#include "rerank/tk_cache.hpp"
#include "rerank/tk_model.hpp"
#include "rerank/torch_threads.hpp"

namespace {

using namespace plumb::rerank;

struct InitArgs {
    std::string embeddings, output, format = "auto";
    std::size_t max_words = 0;
    bool no_lowercase = false, oov_mean = false, mean_kernel = false, freeze = false;
    bool quiet = false;
    std::uint64_t seed = 42;
    TkConfig config;
};

void run_init(InitArgs& a) {
    EmbeddingsTextOptions eo;
    if (a.format == "glove") {
        eo.format = EmbeddingsFormat::Glove;
    } else if (a.format == "word2vec") {
        eo.format = EmbeddingsFormat::Word2Vec;
    } else if (a.format == "word2vec-text" || a.format == "fasttext") {
        eo.format = EmbeddingsFormat::Word2VecText;
    } else if (a.format == "word2vec-binary") {
        eo.format = EmbeddingsFormat::Word2VecBinary;
    } else if (a.format != "auto") {
        throw plumb::InvalidArgument(
            "tk-init: --format must be auto, glove, word2vec, word2vec-text, word2vec-binary or "
            "fasttext");
    }
    eo.max_words = a.max_words;
    eo.lowercase = !a.no_lowercase;
    eo.oov_init = a.oov_mean ? OovInit::Mean : OovInit::Zeros;
    WordEmbeddings emb;
    {
        plumb::cli::ProgressBar bar("embeddings", "bytes", !a.quiet);
        eo.progress = bar.callback();
        emb = load_text_embeddings(a.embeddings, eo);
    }
    if (emb.rows() <= 2 || emb.dim == 0) {
        throw plumb::InvalidArgument("tk-init: no word vectors in " + a.embeddings);
    }
    TkConfig c = a.config;
    c.embedding_dim = static_cast<std::int64_t>(emb.dim);
    c.lowercase = !a.no_lowercase;
    c.mean_kernel = a.mean_kernel;
    c.train_embeddings = !a.freeze;
    std::vector<std::string> words(emb.words.begin() + WordEmbeddings::kFirstWordIndex,
                                   emb.words.end());
    auto model = TkModel::create(c, TkVocabulary(std::move(words)), emb.matrix, a.seed);
    model.save(a.output);
    std::printf("%s\n",
                fmt::format("tk-init: {} words ({} duplicates skipped), {}-d, {} layers, {} heads "
                            "x {}, ff {}, {} parameters -> {}",
                            model.vocabulary().size() - 2, emb.duplicates, c.embedding_dim,
                            c.layers, c.heads, model.config().attention_dim() / c.heads, c.ff_dim,
                            model.parameter_count(), a.output)
                    .c_str());
}

struct VectorsArgs {
    std::string model, corpus, output, format;
    std::size_t limit = 0, batch = 64;
    int precision = 6;
    bool quiet = false;
};

void run_vectors(const VectorsArgs& a) {
    auto model = TkModel::load(a.model);
    plumb::index::CorpusReaderOptions ro;
    ro.format = a.format.empty() ? plumb::index::detect_corpus_format(a.corpus)
                                 : plumb::index::parse_corpus_format(a.format);
    plumb::index::CorpusReader reader(a.corpus, ro);
    plumb::AtomicFile out(a.output);
    plumb::cli::ProgressBar bar("tk-vectors", "passages", !a.quiet);
    std::vector<plumb::index::Document> docs;
    std::size_t done = 0;
    std::string line;
    auto flush = [&] {
        std::vector<std::string> texts;
        std::vector<std::string_view> views;
        texts.reserve(docs.size());
        for (const auto& d : docs) texts.push_back(plumb::index::indexed_text(d));
        for (const auto& t : texts) views.push_back(t);
        auto vecs = model.passage_vectors(views, a.batch);
        for (std::size_t i = 0; i < docs.size(); ++i) {
            const auto& tv = vecs[i];
            for (std::size_t k = 0; k < tv.terms.size(); ++k) {
                line.clear();
                line += fmt::format("{}\t{}\t{}\t", docs[i].id, tv.positions[k], tv.terms[k]);
                auto row = tv.row(k);
                for (std::size_t j = 0; j < row.size(); ++j) {
                    if (j) line += ' ';
                    line += fmt::format("{:.{}g}", row[j], a.precision);
                }
                line += '\n';
                out.write(line);
            }
        }
        done += docs.size();
        bar.update(done, a.limit);
        docs.clear();
    };
    plumb::index::Document doc;
    while ((a.limit == 0 || done + docs.size() < a.limit) && reader.next(doc)) {
        docs.push_back(doc);
        if (docs.size() >= a.batch * 16) flush();
    }
    if (!docs.empty()) flush();
    out.commit();
    bar.finish();
    if (!a.quiet) std::fprintf(stderr, "tk-vectors: %zu passages -> %s\n", done, a.output.c_str());
}

struct CacheArgs {
    std::string model, index, corpus, format, output, precision = "fp16";
    std::size_t batch = 64, chunk = 1024;
    int threads = 0;
    bool quiet = false;
};

void run_cache(const CacheArgs& a) {
    if (!a.index.empty() && !a.corpus.empty()) {
        throw plumb::ConfigError("tk-cache: give either --index or --corpus, not both");
    }
    if (a.index.empty() && a.corpus.empty()) {
        throw plumb::ConfigError("tk-cache: a collection is needed: --index DIR or --corpus FILE");
    }
    TorchThreadsScope threads(a.threads);
    auto model = TkModel::load(a.model);
    auto [docs, total] = open_collection_stream(a.index, a.corpus, a.format);
    const std::filesystem::path output =
        a.output.empty() ? tk_cache_default_path(a.model, model.checksum())
                         : std::filesystem::path(a.output);
    TkCacheBuildOptions o;
    o.batch_size = a.batch;
    o.chunk = a.chunk;
    o.precision = parse_tk_cache_precision(a.precision);
    TkCacheBuildReport r;
    {
        plumb::cli::ProgressBar bar("tk-cache", "passages", !a.quiet);
        r = build_tk_cache(model, docs, total, output, o, bar.callback());
    }
    std::fprintf(stderr,
                 "tk-cache: %llu passages (%llu from an earlier run), %llu terms, %.1f MB (%s) -> "
                 "%s\n",
                 static_cast<unsigned long long>(r.passages),
                 static_cast<unsigned long long>(r.resumed),
                 static_cast<unsigned long long>(r.rows), static_cast<double>(r.bytes) / 1e6,
                 tk_cache_precision_name(o.precision),
                 output.string().c_str());
}

const plumb::cli::CommandRegistrar kRegistrar{"tk", [](CLI::App& app) {
    auto init = std::make_shared<InitArgs>();
    auto* i = app.add_subcommand(
        "tk-init",
        "Create an untrained TK model folder from GloVe, word2vec or fastText embeddings");
    i->add_option("--embeddings", init->embeddings,
                  "GloVe, word2vec (text or binary) or fastText .vec file")
        ->required()
        ->check(CLI::ExistingFile);
    i->add_option("--output", init->output, "model folder to write")->required();
    plumb::cli::add_input_format_option(i, init->format,
                  "auto | glove | word2vec (text or binary, detected) | word2vec-text | "
                  "word2vec-binary | fasttext (= word2vec-text)")
        ->capture_default_str();
    i->add_option("--max-words", init->max_words, "keep the first N words of the file (0 = all)")
        ->capture_default_str();
    i->add_flag("--no-lowercase", init->no_lowercase,
                "keep case (default: lower-case words and text, ASCII)");
    i->add_flag("--oov-mean", init->oov_mean, "OOV vector = mean of the file's vectors (else 0)");
    i->add_option("--layers", init->config.layers, "Transformer layers")->capture_default_str();
    i->add_option("--heads", init->config.heads, "attention heads")->capture_default_str();
    i->add_option("--head-dim", init->config.head_dim,
                  "size of one head (0 = embedding dim / heads)")
        ->capture_default_str();
    i->add_option("--ff-dim", init->config.ff_dim, "feed-forward size")->capture_default_str();
    i->add_option("--max-query-length", init->config.max_query_length, "query words kept")
        ->capture_default_str();
    i->add_option("--max-passage-length", init->config.max_passage_length, "passage words kept")
        ->capture_default_str();
    i->add_option("--position-offset", init->config.passage_position_offset,
                  "positional offset of passage terms")
        ->capture_default_str();
    i->add_flag("--mean-kernel", init->mean_kernel,
                "add TK_v1's length-normalised mean-kernel branch and scaler");
    i->add_flag("--freeze-embeddings", init->freeze, "word embeddings are not trained");
    i->add_option("--seed", init->seed, "initialisation seed")->capture_default_str();
    plumb::cli::add_quiet_flag(i, init->quiet, "no progress bar");
    i->callback([init] { run_init(*init); });

    auto vec = std::make_shared<VectorsArgs>();
    auto* v = app.add_subcommand(
        "tk-vectors",
        "Write TK's contextualised passage-term vectors: docid<TAB>position<TAB>term<TAB>values");
    v->add_option("--model", vec->model, "TK model folder")->required();
    v->add_option("--corpus", vec->corpus, "passages (TSV id<TAB>text or JSONL)")
        ->required()
        ->check(CLI::ExistingFile);
    v->add_option("--output", vec->output, "TSV file to write")->required();
    plumb::cli::add_input_format_option(v, vec->format, "tsv | jsonl (default: by extension)");
    v->add_option("--limit", vec->limit, "first N passages (0 = all)")->capture_default_str();
    v->add_option("--batch", vec->batch, "passages per forward call")
        ->capture_default_str()
        ->check(plumb::cli::positive_count());
    v->add_option("--precision", vec->precision, "significant digits")
        ->capture_default_str()
        ->check(CLI::Range(1, 9));
    plumb::cli::add_quiet_flag(v, vec->quiet, "no progress bar");
    v->callback([vec] { run_vectors(*vec); });

    auto cache = std::make_shared<CacheArgs>();
    auto* k = app.add_subcommand(
        "tk-cache",
        "Build TK's passage cache (contextualised passage vectors, fp16 or int8) of a collection; "
        "resumable: rerun after an interruption to continue");
    k->add_option("--model", cache->model, "TK model folder")->required();
    k->add_option("--index,-i", cache->index, "plumb index (its stored passage text)");
    k->add_option("--corpus", cache->corpus, "corpus file (TSV id<TAB>text or JSONL) instead");
    plumb::cli::add_input_format_option(k, cache->format, "corpus: tsv | jsonl (default: by extension)");
    k->add_option("--output,-o", cache->output,
                  "cache file (default: the model folder's passage-cache-<checksum>.plumbtkc, "
                  "which the TK stage finds by itself)");
    k->add_option("--batch", cache->batch, "passages per forward call")
        ->capture_default_str()
        ->check(plumb::cli::positive_count());
    k->add_option("--chunk", cache->chunk, "passages between checkpoints of the partial state")
        ->capture_default_str()
        ->check(plumb::cli::positive_count());
    k->add_option("--precision", cache->precision,
                  "fp16 | int8 (one scale per vector: half the size, scores within about 1e-3)")
        ->capture_default_str()
        ->check(CLI::IsMember({"fp16", "int8"}));
    plumb::rerank::detail::add_torch_threads_option(k, cache->threads);
    plumb::cli::add_quiet_flag(k, cache->quiet, "no progress bar");
    k->callback([cache] { run_cache(*cache); });
}};

}  // namespace
