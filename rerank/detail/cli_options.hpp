#pragma once
/// \file detail/cli_options.hpp
/// Options that several rerank commands share, declared once (internal: CLI11, included by the
/// rerank/cli_*.cpp commands only). Options of every plumb command: plugin/cli/options.hpp.

#include <CLI/CLI.hpp>
#include <string>

#include "plugin/cli/options.hpp"
#include "rerank/bert.hpp"
#include "rerank/bi_encoder.hpp"

namespace plumb::rerank::detail {

/// `--threads,-t`: Torch's intra-op threads while the command runs (0 keeps Torch's default;
/// rerank/torch_threads.hpp).
inline CLI::Option* add_torch_threads_option(CLI::App* cmd, int& threads) {
    return plumb::cli::add_threads_option(cmd, "--threads,-t", threads,
                                          "Torch intra-op threads (0 = Torch's default)", 0);
}

/// `--pooling` and `--similarity` of a BERT-DOT encoder (`rerank --type dot`, `encode`,
/// `train --model dot`), spelled as pooling_name() and similarity_name() spell them; any other
/// value is a usage error.
struct DotEncoderArgs {
    std::string pooling = pooling_name(Pooling::Cls);
    std::string similarity = similarity_name(Similarity::Dot);
    CLI::Option* pooling_option = nullptr;
    CLI::Option* similarity_option = nullptr;

    /// Adds both options to `cmd`; the help texts say what the defaults are in that command.
    void add_to(CLI::App* cmd, const std::string& pooling_help,
                const std::string& similarity_help) {
        pooling_option =
            cmd->add_option("--pooling", pooling, pooling_help)
                ->capture_default_str()
                ->check(CLI::IsMember({pooling_name(Pooling::Cls), pooling_name(Pooling::Mean)}));
        similarity_option = cmd->add_option("--similarity", similarity, similarity_help)
                                ->capture_default_str()
                                ->check(CLI::IsMember({similarity_name(Similarity::Dot),
                                                       similarity_name(Similarity::Cosine)}));
    }

    /// Given on the command line: then they win over a sentence-transformers folder's modules.
    bool pooling_given() const { return pooling_option && pooling_option->count() > 0; }
    bool similarity_given() const { return similarity_option && similarity_option->count() > 0; }

    /// Sets pooling and similarity of `o`, marked explicit where given on the command line.
    void apply(BiEncoderOptions& o) const {
        o.pooling = parse_pooling(pooling);
        o.similarity = parse_similarity(similarity);
        o.explicit_pooling = pooling_given();
        o.explicit_similarity = similarity_given();
    }
};

}  // namespace plumb::rerank::detail
