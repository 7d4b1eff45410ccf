// `plumb rerank`, `plumb encode`, `plumb dense-search`: neural re-ranking of a TREC run, BERT-DOT
// passage vectors with a FAISS index, and dense first-stage retrieval with optional fusion.

#include <algorithm>
#include <functional>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "eval/run_retriever.hpp"
#include "index/corpus.hpp"
#include "index/document_sources.hpp"
#include "index/passage_index.hpp"
#include "plugin/builtins/builtins.hpp"
#include "plugin/cli/command.hpp"
#include "plugin/cli/options.hpp"
#include "plugin/cli/progress_bar.hpp"
#include "plugin/document_source.hpp"
#include "plugin/error.hpp"
#include "plugin/pipeline.hpp"
#include "plugin/registry.hpp"
#include "plugin/trec_run.hpp"
#include "rerank/bi_encoder.hpp"
#include "rerank/cross_encoder.hpp"
#include "rerank/dense_index.hpp"
#include "rerank/dense_retriever.hpp"
#include "rerank/detail/cli_options.hpp"
#include "rerank/fusion.hpp"
#include "rerank/tk_stage.hpp"
#include "rerank/torchscript_stage.hpp"
#include "rerank/vector_store.hpp"
#ifdef PLUMB_WITH_MPI
#include "mpi/batch.hpp"
#include "plugin/text_io.hpp"
#endif

namespace {

namespace pr = plumb::rerank;
namespace pi = plumb::index;

/// A run's lists as trec_eval ranks them (score descending, ties by docid descending), each
/// candidate's run score in its trace (RunRetriever writes it).
std::vector<plumb::RankedList> load_run(const std::string& path) {
    const auto run = plumb::eval::RunRetriever::open(path);
    return run->retrieve(run->queries(), run->max_depth());
}

// ------------------------------------------------------------------------------------------
// plumb rerank

struct RerankArgs {
    std::string index, corpus, topics, run, model, type, output, tag;
    std::string topic_field = "title";
    std::string tk_cache;  // tk: passage cache file or "none" (default: automatic)
    std::string quantize;  // cat: "fp32" / "int8"; empty = the stage default (fp32)
    std::size_t depth = 100;
    std::size_t batch = 32;
    std::size_t max_length = 512;
    int threads = 0;
    pr::detail::DotEncoderArgs dot;
    bool no_token_types = false;  // torchscript: forward(input_ids, attention_mask) only
    bool quiet = false;
};

/// The stage's pipeline configuration from the command line: `plumb rerank` builds its stage
/// with the same factory as a configured pipeline.
nlohmann::json stage_config(const RerankArgs& a) {
    nlohmann::json c = {{"type", a.type},
                        {"model", a.model},
                        {"depth", a.depth},
                        {"batch_size", a.batch},
                        {"threads", static_cast<std::size_t>(a.threads)}};
    if (a.type != "tk") c["max_length"] = a.max_length;
    if (a.type == "dot") {
        // Given on the command line: they win over a sentence-transformers folder's modules.
        if (a.dot.pooling_given()) c["pooling"] = a.dot.pooling;
        if (a.dot.similarity_given()) c["similarity"] = a.dot.similarity;
    }
    if (a.type == "torchscript") c["token_type_ids"] = !a.no_token_types;
    if (a.type == "tk" && !a.tk_cache.empty()) c["cache"] = a.tk_cache;
    if (a.type != "tk" && !a.tk_cache.empty()) {
        throw plumb::ConfigError("--tk-cache needs --type tk");
    }
    if (!a.quantize.empty()) {
        if (a.type != "cat") throw plumb::ConfigError("--quantize applies to --type cat only");
        c["quantize"] = a.quantize;
    }
    return c;
}

#ifdef PLUMB_WITH_MPI
using World = std::optional<plumb::mpi::Comm>;
/// fn() on this rank; under MPI as one collective phase (an error on any rank fails all).
void phase(const World& world, const std::function<void()>& fn) {
    if (world) {
        world->collective(fn);
    } else {
        fn();
    }
}
#endif

void run_rerank(const RerankArgs& a) {
    if (a.depth == 0 || a.batch == 0) throw plumb::ConfigError("--depth and --batch must be > 0");
#ifdef PLUMB_WITH_MPI
    // Under mpirun -n R: rank r re-ranks a contiguous part of the queries (in whole groups of
    // `group` queries, the stage's cross-query batches, so that every forward pass sees what it
    // sees in one process); rank 0 writes the parts in order.
    const World world = plumb::mpi::parallel_world();
#endif
    const bool rank0 =
#ifdef PLUMB_WITH_MPI
        !world || world->rank() == 0;
#else
        true;
#endif
    // Queries per pass: a stage's batches span queries. An int8 cross-encoder quantises its
    // activations with one scale per forward batch, so a pair's score would depend on the other
    // queries of its pass; there each query goes through on its own (cross-query groups gave
    // int8 no speed: bench/README.md, pipeline latency), and its run lines do not depend on
    // which other queries the topics file holds.
    const std::size_t group = a.quantize == "int8" ? 1 : 8;
    std::vector<plumb::Query> queries;
    std::optional<plumb::Pipeline> pipeline;
    std::string stage_name;
    auto setup = [&] {
        const auto run = plumb::eval::RunRetriever::open(a.run);
        std::unordered_set<std::string> wanted;
        if (!a.corpus.empty()) wanted = run->docids(a.depth);
        pi::TopicReadOptions topic_options;
        topic_options.fields = pi::parse_topic_fields(a.topic_field);
        const auto topics = pi::read_topics(a.topics, topic_options);
        std::unordered_map<std::string, const plumb::Query*> by_qid;
        for (const auto& q : topics) by_qid.emplace(q.id, &q);
        queries.reserve(run->queries().size());
        for (const auto& q : run->queries()) {
            auto it = by_qid.find(q.id);
            if (it == by_qid.end()) {
                throw plumb::ConfigError(a.run + ": query '" + q.id + "' is not in " + a.topics);
            }
            queries.push_back(*it->second);
        }

        // The run is the first stage; the model is built by its registered factory.
        plumb::Registry registry;
        plumb::register_builtins(registry);
        plumb::StageContext ctx;
        plumb::PipelineSpec spec;
        spec.first_stage = run;
        spec.rerankers.push_back(registry.make_rerank(stage_config(a), ctx));
        spec.documents =
            pi::open_document_source(a.index, a.corpus, a.corpus.empty() ? nullptr : &wanted);
        spec.k = std::max<std::size_t>(1, run->max_depth());
        spec.candidates = spec.k;
        pipeline.emplace(std::move(spec));
        stage_name = pipeline->spec().rerankers.front()->name();
    };
    std::span<const plumb::Query> part;
#ifdef PLUMB_WITH_MPI
    phase(world, setup);
    part = queries;
    if (world) {
        const auto p = plumb::mpi::partition(queries.size(), world->rank(), world->size(), group);
        part = part.subspan(p.first, p.count);
    }
#else
    setup();
    part = queries;
#endif
    std::vector<plumb::RankedList> lists;
    std::size_t pairs = 0;
    const std::string tag = a.tag.empty() ? "plumb-" + stage_name : a.tag;
    std::string text;  // (under MPI: this rank's part of the run)
    bool rank_parts = false;
#ifdef PLUMB_WITH_MPI
    rank_parts = world.has_value();
#endif
    auto work = [&] {
        plumb::cli::ProgressBar bar("rerank", "queries", !a.quiet && rank0);
        plumb::BatchOptions batch;
        batch.group = group;
        batch.progress = bar.callback();
        auto results = pipeline->search_batch(part, batch);
        bar.finish();
        lists.reserve(results.size());
        for (auto& r : results) {
            pairs += std::min(a.depth, r.list.candidates.size());
            if (rank_parts) text += plumb::format_trec_run(r.list, tag);
            lists.push_back(std::move(r.list));
        }
    };
#ifdef PLUMB_WITH_MPI
    phase(world, work);
    if (world) {
        std::uint64_t count[2] = {lists.size(), pairs};
        world->allreduce_sum(std::span<std::uint64_t>(count, 2));
        const auto all = plumb::mpi::gather_concat(*world, text);
        world->collective([&] {
            if (!rank0) return;
            plumb::AtomicFile out(a.output);
            out.write(all);
            out.commit();
        });
        if (rank0) {
            std::fprintf(stderr,
                         "re-ranked %llu queries (%llu pairs, depth %zu) with %s on %d MPI ranks "
                         "-> %s\n",
                         static_cast<unsigned long long>(count[0]),
                         static_cast<unsigned long long>(count[1]), a.depth, stage_name.c_str(),
                         world->size(), a.output.c_str());
        }
        return;
    }
#else
    work();
#endif
    plumb::write_trec_run(a.output, lists, tag);
    std::fprintf(stderr, "re-ranked %zu queries (%zu pairs, depth %zu) with %s -> %s\n",
                 lists.size(), pairs, a.depth, stage_name.c_str(), a.output.c_str());
}

const plumb::cli::CommandRegistrar kRerank{
    "rerank", [](CLI::App& app) {
        auto args = std::make_shared<RerankArgs>();
        auto* cmd = app.add_subcommand(
            "rerank",
            "Re-rank the top --depth candidates of each query of a TREC run with a neural "
            "model (the tail is kept below, in its order) and write a new run");
        cmd->add_option("--index,-i", args->index, "Index directory (passage text source)");
        cmd->add_option("--corpus", args->corpus,
                        "Corpus file (TSV id<TAB>text or BEIR JSONL) as the text source instead");
        cmd->add_option("--topics", args->topics,
                        "Topics file (TSV, BEIR queries.jsonl or TREC <top> topics)")
            ->required();
        cmd->add_option("--topic-field", args->topic_field,
                        "TREC topics: the fields making the query, title, description, narrative "
                        "or several joined by '+' (e.g. title+description)")
            ->capture_default_str();
        cmd->add_option("--run", args->run, "Input TREC run")->required();
        cmd->add_option("--model,-m", args->model,
                        "Model folder (Hugging Face config.json, vocab.txt, model.safetensors; TK: "
                        "its model folder)")
            ->required();
        cmd->add_option("--type", args->type,
                        "Model type: cat (BERT-CAT cross-encoder), dot (BERT-DOT bi-encoder), tk, "
                        "torchscript (a TorchScript cross-encoder: --model FILE or a folder with "
                        "model.pt and vocab.txt; input contract in rerank/torchscript_stage.hpp)")
            ->required()
            ->check(CLI::IsMember({"cat", "dot", "tk", "torchscript"}));
        cmd->add_option("--depth", args->depth, "Candidates re-ranked per query")
            ->capture_default_str()
            ->check(plumb::cli::positive_count());
        cmd->add_option("--output,-o", args->output, "Output run (written atomically)")->required();
        cmd->add_option("--batch", args->batch, "Pairs/passages per forward pass")
            ->capture_default_str()
            ->check(plumb::cli::positive_count());
        pr::detail::add_torch_threads_option(cmd, args->threads);
        cmd->add_option(
               "--max-length", args->max_length,
               "Max tokens per pair (cat) or passage (dot), capped at the model's positions")
            ->capture_default_str();
        args->dot.add_to(cmd,
                         "dot: cls or mean (default: a sentence-transformers folder's Pooling "
                         "module, else cls)",
                         "dot: dot or cosine (default: cosine when a sentence-transformers "
                         "folder normalises, else dot)");
        cmd->add_option("--tk-cache", args->tk_cache,
                        "tk: passage cache file (plumb tk-cache), or none (default: the model "
                        "folder's passage-cache-<checksum>.plumbtkc when present)");
        cmd->add_option("--quantize", args->quantize,
                        "cat: fp32 (default) or int8 (dynamic int8 quantisation of the "
                        "Transformer blocks' linear layers, built from the fp32 checkpoint at "
                        "load; faster, scores approximate: see rerank/README.md)")
            ->check(CLI::IsMember({"fp32", "int8"}));
        cmd->add_flag("--no-token-types", args->no_token_types,
                      "torchscript: call forward(input_ids, attention_mask) without token types");
        cmd->add_option("--tag", args->tag, "Run tag (default plumb-<stage>)");
        plumb::cli::add_quiet_flag(cmd, args->quiet, "No progress bar");
        cmd->callback([args] { run_rerank(*args); });
    }};

// ------------------------------------------------------------------------------------------
// plumb encode

struct EncodeArgs {
    std::string index, corpus, model, output, factory = "Flat", metric = "ip";
    pr::detail::DotEncoderArgs dot;
    std::size_t batch = 32, chunk = 8192, max_length = 256;
    int threads = 0;
    bool no_index = false, quiet = false;
};

std::shared_ptr<pr::BiEncoder> open_encoder(const EncodeArgs& a) {
    pr::BiEncoderOptions o;
    a.dot.apply(o);
    o.batch_size = a.batch;
    o.passage_max_length = a.max_length;
    o.threads = a.threads;
    return pr::BiEncoder::from_folder(a.model, o);
}

void build_dense_index(const EncodeArgs& a) {
    pr::DenseIndexOptions io;
    io.factory = a.factory;
    io.metric = pr::parse_dense_metric(a.metric);
    {
        plumb::cli::ProgressBar bar("index", "vectors", !a.quiet);
        pr::DenseIndex::build(a.output, io, bar.callback());
    }
    std::fprintf(stderr, "built FAISS index '%s' (%s) -> %s/index.faiss\n", a.factory.c_str(),
                 a.metric.c_str(), a.output.c_str());
}

#ifdef PLUMB_WITH_MPI
/// `mpirun -n R plumb encode`: chunk c encoded by rank c mod R, appended in order by rank 0,
/// which writes the vector folder (resumable as in one process) and builds the FAISS index.
void run_encode_mpi(const plumb::mpi::Comm& world, const EncodeArgs& a) {
    const bool rank0 = world.rank() == 0;
    std::shared_ptr<pr::BiEncoder> encoder;
    pr::CollectionStream in;
    std::optional<pr::VectorStoreWriter> writer;
    std::uint64_t resumed = 0;
    std::uint32_t complete = 0;
    world.collective([&] {
        encoder = open_encoder(a);
        in = pr::open_collection_stream(a.index, a.corpus);
        if (!rank0) return;
        writer.emplace(a.output, encoder->store_meta(a.model));
        resumed = writer->count();
        complete = writer->complete() ? 1 : 0;
        // Rank 0 checks that the collection still starts with the stored ids (as one process
        // does when resuming).
        auto stored = writer->ids();
        in.docs = [docs = in.docs, stored = std::move(stored), n = std::uint64_t{0}](
                      plumb::DocId& id, std::string& text) mutable {
            if (!docs(id, text)) {
                if (n < stored.size()) {
                    throw plumb::IndexError("the collection has " + std::to_string(n) +
                                            " documents but the vector folder already holds " +
                                            std::to_string(stored.size()));
                }
                return false;
            }
            if (n < stored.size() && id != stored[n]) {
                throw plumb::IndexError("the collection changed: document " +
                                        std::to_string(n + 1) + " is '" + id +
                                        "' but the vector folder has '" + stored[n] + "'");
            }
            ++n;
            return true;
        };
    });
    world.allreduce_max(std::span<std::uint32_t>(&complete, 1));
    if (complete) {
        world.collective([&] {
            if (!rank0) return;
            plumb::DocId id;
            std::string text;
            for (std::uint64_t i = 0; i < resumed; ++i) in.docs(id, text);
            if (in.docs(id, text)) {
                throw plumb::IndexError(
                    "the vector folder is complete but the collection has more documents "
                    "than its " +
                    std::to_string(resumed));
            }
        });
    } else {
        plumb::cli::ProgressBar bar("encode", "passages", !a.quiet && rank0);
        const auto r = plumb::mpi::encode_chunks(
            world, resumed, in.docs,
            [&](std::span<const std::string_view> t) { return encoder->encode_passages(t); },
            [&](std::span<const plumb::DocId> ids, std::span<const float> v) {
                writer->append(ids, v);
            },
            a.chunk, in.total, bar.callback());
        world.collective([&] {
            if (rank0 && r.complete) writer->finish();
        });
    }
    world.collective([&] {
        if (!rank0) return;
        std::fprintf(stderr,
                     "encoded %llu passages (%llu from an earlier run) of dimension %zu with %d "
                     "MPI ranks -> %s\n",
                     static_cast<unsigned long long>(writer->count()),
                     static_cast<unsigned long long>(resumed), encoder->dim(), world.size(),
                     a.output.c_str());
        if (!a.no_index) build_dense_index(a);
    });
}
#endif

void run_encode(const EncodeArgs& a) {
#ifdef PLUMB_WITH_MPI
    if (const auto world = plumb::mpi::parallel_world()) {
        run_encode_mpi(*world, a);
        return;
    }
#endif
    auto encoder = open_encoder(a);
    auto in = pr::open_collection_stream(a.index, a.corpus);
    pr::VectorStoreWriter writer(a.output, encoder->store_meta(a.model));
    const auto resumed = writer.count();
    pr::EncodeCollectionOptions eo;
    eo.chunk_size = a.chunk;
    pr::TextEncoder encode = [&](std::span<const std::string_view> t) {
        return encoder->encode_passages(t);
    };
    {
        plumb::cli::ProgressBar bar("encode", "passages", !a.quiet);
        pr::encode_collection(writer, in.docs, encode, in.total, eo, bar.callback());
    }
    std::fprintf(stderr,
                 "encoded %llu passages (%llu from an earlier run) of dimension %zu -> %s\n",
                 static_cast<unsigned long long>(writer.count()),
                 static_cast<unsigned long long>(resumed), encoder->dim(), a.output.c_str());
    if (a.no_index) return;
    build_dense_index(a);
}

const plumb::cli::CommandRegistrar kEncode{
    "encode", [](CLI::App& app) {
        auto args = std::make_shared<EncodeArgs>();
        auto* cmd = app.add_subcommand(
            "encode",
            "Encode every passage with a BERT-DOT model into a vector folder (resumable: "
            "run again to continue) and build a FAISS index over it");
        cmd->add_option("--index,-i", args->index, "Index directory (passages in index order)");
        cmd->add_option("--corpus", args->corpus, "Corpus file instead (TSV or BEIR JSONL)");
        cmd->add_option("--model,-m", args->model, "Model folder (Hugging Face BERT/DistilBERT)")
            ->required();
        cmd->add_option("--output,-o", args->output, "Vector folder")->required();
        cmd->add_option("--batch", args->batch, "Passages per forward pass")->capture_default_str();
        cmd->add_option("--chunk", args->chunk, "Passages per chunk file (resume granularity)")
            ->capture_default_str();
        cmd->add_option("--factory", args->factory,
                        "FAISS index_factory string, e.g. Flat, HNSW32,Flat, IVF1024,Flat")
            ->capture_default_str();
        cmd->add_option("--metric", args->metric, "ip (inner product) or l2")
            ->capture_default_str()
            ->check(CLI::IsMember({"ip", "l2"}));
        args->dot.add_to(cmd,
                         "cls or mean (default: a sentence-transformers folder's Pooling module, "
                         "else cls)",
                         "dot or cosine (normalised vectors; default: cosine when a "
                         "sentence-transformers folder normalises, else dot)");
        cmd->add_option("--max-length", args->max_length, "Max tokens per passage")
            ->capture_default_str();
        pr::detail::add_torch_threads_option(cmd, args->threads);
        cmd->add_flag("--no-index", args->no_index, "Only encode, do not build the FAISS index");
        plumb::cli::add_quiet_flag(cmd, args->quiet, "No progress bar");
        cmd->callback([args] { run_encode(*args); });
    }};

// ------------------------------------------------------------------------------------------
// plumb dense-search

struct DenseSearchArgs {
    std::string vectors, model, topics, output, fuse_run, fusion = "rrf", tag;
    std::string topic_field = "title";
    std::size_t k = 1000, max_length = 64;
    double alpha = 0.5;
    int ef_search = 0, threads = 0;
    bool quiet = false;
};

void run_dense_search(const DenseSearchArgs& a) {
    auto index =
        std::make_shared<const pr::DenseIndex>(pr::DenseIndex::load(a.vectors, 0, a.ef_search));
    const auto& meta = index->meta().meta;
    pr::BiEncoderOptions o;
    // Queries must be encoded as the stored passages were.
    if (auto it = meta.find("pooling"); it != meta.end()) {
        o.pooling = pr::parse_pooling(it->second);
        o.explicit_pooling = true;
    }
    if (auto it = meta.find("similarity"); it != meta.end()) {
        o.similarity = pr::parse_similarity(it->second);
        o.explicit_similarity = true;
    }
    o.query_max_length = a.max_length;
    o.threads = a.threads;
    auto encoder = pr::BiEncoder::from_folder(a.model, o);
    pr::DenseRetriever retriever(encoder, index, "dense");
    pi::TopicReadOptions topic_options;
    topic_options.fields = pi::parse_topic_fields(a.topic_field);
    auto queries = pi::read_topics(a.topics, topic_options);

    std::vector<plumb::RankedList> lists;
    {
        plumb::cli::ProgressBar bar("dense-search", "queries", !a.quiet);
        constexpr std::size_t kGroup = 64;
        for (std::size_t start = 0; start < queries.size(); start += kGroup) {
            const auto n = std::min(kGroup, queries.size() - start);
            auto part =
                retriever.retrieve(std::span<const plumb::Query>(queries.data() + start, n), a.k);
            for (auto& l : part) lists.push_back(std::move(l));
            bar.update(start + n, queries.size());
        }
    }
    std::string tag = a.tag.empty() ? "plumb-dense" : a.tag;
    if (!a.fuse_run.empty()) {
        auto other = load_run(a.fuse_run);
        lists = pr::fuse_runs(lists, other, a.fusion, a.alpha, a.k);
        if (a.tag.empty()) tag = "plumb-dense-" + a.fusion;
    }
    plumb::write_trec_run(a.output, lists, tag);
    std::fprintf(stderr, "searched %zu queries in %zu vectors (%s)%s -> %s\n", queries.size(),
                 index->size(), index->options().factory.c_str(),
                 a.fuse_run.empty() ? "" : (", fused with " + a.fuse_run).c_str(),
                 a.output.c_str());
}

const plumb::cli::CommandRegistrar kDenseSearch{
    "dense-search", [](CLI::App& app) {
        auto args = std::make_shared<DenseSearchArgs>();
        auto* cmd = app.add_subcommand(
            "dense-search",
            "BERT-DOT first stage: encode the topics and search a vector folder's "
            "FAISS index; optionally fuse with a BM25 run");
        cmd->add_option("--vectors", args->vectors, "Vector folder (plumb encode)")->required();
        cmd->add_option("--model,-m", args->model, "The model folder used to encode")->required();
        cmd->add_option("--topics", args->topics,
                        "Topics file (TSV, BEIR queries.jsonl or TREC <top> topics)")
            ->required();
        cmd->add_option("--topic-field", args->topic_field,
                        "TREC topics: title, description, narrative or several joined by '+'")
            ->capture_default_str();
        cmd->add_option("--output,-o", args->output, "Output run (written atomically)")->required();
        cmd->add_option("--k", args->k, "Results per query")
            ->capture_default_str()
            ->check(plumb::cli::positive_count());
        cmd->add_option("--fuse-bm25", args->fuse_run, "A run (e.g. BM25) to fuse with");
        cmd->add_option("--fusion", args->fusion,
                        "rrf (reciprocal rank fusion, k=60) or interp (min-max normalised "
                        "alpha*dense + (1-alpha)*other)")
            ->capture_default_str()
            ->check(CLI::IsMember({"rrf", "interp"}));
        cmd->add_option("--alpha", args->alpha, "Weight of the dense run for interp")
            ->capture_default_str()
            ->check(CLI::Range(0.0, 1.0));
        cmd->add_option("--ef-search", args->ef_search, "HNSW efSearch (0 = index default)")
            ->capture_default_str();
        cmd->add_option("--max-length", args->max_length, "Max tokens per query")
            ->capture_default_str();
        pr::detail::add_torch_threads_option(cmd, args->threads);
        cmd->add_option("--tag", args->tag, "Run tag (default plumb-dense[-<fusion>])");
        plumb::cli::add_quiet_flag(cmd, args->quiet, "No progress bar");
        cmd->callback([args] { run_dense_search(*args); });
    }};

}  // namespace
