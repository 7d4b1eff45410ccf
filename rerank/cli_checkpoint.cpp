// `plumb tokenize` and `plumb checkpoint-info`: look inside a Hugging Face checkpoint folder —
// how its WordPiece tokenizer encodes a query (and passage), and which tensors its weights file
// (safetensors or PyTorch zip) holds.

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "plugin/cli/command.hpp"
#include "plugin/error.hpp"
#include "rerank/checkpoint_format.hpp"
#include "rerank/hf_config.hpp"
#include "rerank/safetensors.hpp"
#include "rerank/wordpiece.hpp"

namespace {

namespace fs = std::filesystem;
namespace pr = plumb::rerank;

struct TokenizeArgs {
    std::string model;
    std::string text;
    std::string passage;
    bool has_passage = false;
    std::size_t max_length = 512;
    std::string lowercase = "auto";  // auto (tokenizer_config.json / uncased) | yes | no
    std::string truncation = "passage-first";
};

void run_tokenize(const TokenizeArgs& a) {
    pr::WordPieceOptions o;
    if (a.lowercase == "yes") o.lowercase = true;
    if (a.lowercase == "no") o.lowercase = false;
    pr::WordPieceTokenizer tok = pr::WordPieceTokenizer::from_folder(a.model, o);
    if (a.lowercase != "auto") {  // the flag wins over tokenizer_config.json
        o = tok.options();
        o.lowercase = a.lowercase == "yes";
        tok = pr::WordPieceTokenizer(std::make_shared<const pr::Vocab>(tok.vocab()), o);
    }
    const pr::Truncation t = a.truncation == "longest-first" ? pr::Truncation::LongestFirst
                                                              : pr::Truncation::PassageFirst;
    pr::Encoding e = a.has_passage ? tok.encode_pair(a.text, a.passage, a.max_length, t)
                                   : tok.encode(a.text, a.max_length);
    std::printf("# token\tid\ttype\n");
    for (std::size_t i = 0; i < e.size(); ++i) {
        std::printf("%s\t%lld\t%lld\n", tok.vocab().token(e.input_ids[i]).c_str(),
                    static_cast<long long>(e.input_ids[i]),
                    static_cast<long long>(e.token_type_ids[i]));
    }
}

void run_checkpoint_info(const std::string& path) {
    fs::path weights = path;
    std::error_code ec;
    if (fs::is_directory(path, ec)) {
        const pr::HfConfig c = pr::load_hf_config(path);
        std::printf("# config: %s, vocab %lld, hidden %lld, layers %lld, heads %lld, "
                    "intermediate %lld, act %s, labels %lld\n",
                    pr::model_type_name(c.model_type), static_cast<long long>(c.vocab_size),
                    static_cast<long long>(c.hidden_size),
                    static_cast<long long>(c.num_hidden_layers),
                    static_cast<long long>(c.num_attention_heads),
                    static_cast<long long>(c.intermediate_size), c.hidden_act.c_str(),
                    static_cast<long long>(c.num_labels));
        weights = pr::find_weights_file(path);
    }
    pr::SafetensorsFile f = pr::load_weights_file(weights);  // names a wrong format
    const bool pytorch = pr::sniff_checkpoint_format(weights) == pr::CheckpointFormat::PytorchZip;
    std::printf("# format: %s\n",
                pr::checkpoint_format_description(pytorch ? pr::CheckpointFormat::PytorchZip
                                                          : pr::CheckpointFormat::Safetensors));
    long long params = 0;
    for (const auto& t : f.tensors()) params += t.numel();
    std::printf("# %zu tensors, %lld parameters\n", f.size(), params);
    if (!pytorch) {  // a PyTorch file has no metadata of its own
        for (const auto& [k, v] : f.metadata()) {
            std::printf("# metadata %s = %s\n", k.c_str(), v.c_str());
        }
    }
    std::printf("# name\tdtype\tshape\n");
    for (const auto& t : f.tensors()) {
        std::printf("%s\t%s\t%s\n", t.name.c_str(), pr::dtype_name(t.dtype),
                    pr::shape_string(t.shape).c_str());
    }
}

plumb::cli::CommandRegistrar tokenize_registrar("tokenize", [](CLI::App& app) {
    auto args = std::make_shared<TokenizeArgs>();
    auto* cmd = app.add_subcommand(
        "tokenize", "Show how a checkpoint's WordPiece tokenizer encodes a text or a "
                    "query-passage pair (TSV: token, id, token type)");
    cmd->add_option("--model,-m", args->model,
                    "Folder with vocab.txt (and tokenizer_config.json), or a vocab.txt file")
        ->required();
    cmd->add_option("text", args->text, "Text (the query when a passage is given)")->required();
    auto* p = cmd->add_option("passage", args->passage, "Passage of a pair");
    cmd->add_option("--max-length", args->max_length, "Maximum tokens, [CLS]/[SEP] included")
        ->capture_default_str();
    cmd->add_option("--lowercase", args->lowercase,
                    "auto (tokenizer_config.json, else lower-case), yes or no")
        ->check(CLI::IsMember({"auto", "yes", "no"}))
        ->capture_default_str();
    cmd->add_option("--truncation", args->truncation, "passage-first or longest-first")
        ->check(CLI::IsMember({"passage-first", "longest-first"}))
        ->capture_default_str();
    cmd->callback([args, p] {
        args->has_passage = p->count() > 0;
        if (args->max_length < 3) throw plumb::ConfigError("--max-length must be at least 3");
        run_tokenize(*args);
    });
});

plumb::cli::CommandRegistrar checkpoint_info_registrar("checkpoint-info", [](CLI::App& app) {
    auto path = std::make_shared<std::string>();
    auto* cmd = app.add_subcommand("checkpoint-info",
                                   "List the tensors (name, dtype, shape) of a safetensors file, a "
                                   "PyTorch zip checkpoint (pytorch_model.bin) or a Hugging Face "
                                   "checkpoint folder, with its config summary");
    cmd->add_option("path", *path,
                    "model.safetensors or pytorch_model.bin, or a folder with "
                    "config.json and one of them")
        ->required();
    cmd->callback([path] { run_checkpoint_info(*path); });
});

}  // namespace
