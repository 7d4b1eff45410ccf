#pragma once
/// \file post_filters.hpp
/// Factory of the bias-aware post-filters from a small JSON configuration (no JSON types in this
/// header). The filters themselves: debias/fair_topk.hpp, debias/bias_balance.hpp,
/// debias/near_duplicates.hpp (common definitions in debias/post_filter.hpp).
///
/// Configuration: one JSON object; "type" selects the filter, the other keys are optional:
///   common       "k" (cutoff, default 10), "bias_file" (docid<TAB>bias<TAB>female<TAB>male),
///                "words" (gender word list `word,f|m`, for magnitudes computed from the text),
///                "variant" ("tc" default, "tf", "bool": expected variant of the bias file and
///                variant computed from text); "name" and "description" (strings) are accepted and
///                ignored
///   "fair_topk"  "p" (0.5), "alpha" (0.1), "adjust_alpha" (true), "protected" ("female",
///                "male", "neutral"; default "female")
///   "bias_balance" (alias "balance")  "budget" (number >= 0 or the string "inf"; default 0),
///                "depth" (0 = whole list)
///   "near_duplicates" (alias "dedup")  "shingle" (3), "threshold" (0.9), "demote" (false),
///                "depth" (1000)
/// e.g. {"type": "fair_topk", "p": 0.5, "alpha": 0.1, "k": 10, "protected": "female",
///       "bias_file": "bias.tsv"}.
/// Relative paths are resolved against PostFilterResources::base_dir. A file named in the
/// configuration replaces the corresponding default of the resources. Invalid JSON, a missing or
/// unknown "type", unknown keys and wrong value types throw ConfigError; out-of-range values throw
/// InvalidArgument (from the filter constructors); unreadable or malformed files throw IoError /
/// ParseError.

#include <filesystem>
#include <memory>
#include <string_view>

#include "debias/post_filter.hpp"

namespace plumb::debias {

/// Defaults and shared resources for the factory.
struct PostFilterResources {
    std::filesystem::path base_dir;  ///< for relative paths in the configuration
    PassageBias bias;                ///< default bias source (table, words, documents)
};

/// Builds the filter described by `json_config` (see above).
std::unique_ptr<BiasPostFilter> make_bias_post_filter(std::string_view json_config,
                                                      const PostFilterResources& resources = {});

/// Same, as a plain pipeline stage.
std::unique_ptr<PostFilter> make_post_filter(std::string_view json_config,
                                             const PostFilterResources& resources = {});

}  // namespace plumb::debias
