#pragma once
/// \file post_filters.hpp
/// The bias-aware post-filters as pipeline stages: each filter's own factory (from_config in
/// debias/fair_topk.hpp, debias/bias_balance.hpp, debias/near_duplicates.hpp) registered by type
/// name. plumb::register_builtins() calls register_post_filters(); `plumb debias post-filter`
/// uses a registry with only these.
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
/// Relative paths are resolved against StageContext::base_dir(); passage text comes from
/// StageContext::documents(). A missing or unknown "type", unknown keys and wrong value types
/// throw ConfigError; out-of-range values throw InvalidArgument (from the filter constructors);
/// unreadable or malformed files throw IoError / ParseError.
///
/// Adding a filter: a class deriving from BiasPostFilter with a static from_config() in its own
/// file, and one line in register_post_filters().

#include <memory>
#include <nlohmann/json_fwd.hpp>

#include "debias/post_filter.hpp"
#include "plugin/registry.hpp"

namespace plumb::debias {

/// Registers fair_topk, bias_balance (alias balance) and near_duplicates (alias dedup).
void register_post_filters(Registry& registry);

/// The filter described by `config`, for hosts that apply one filter without a pipeline
/// (a registry with register_post_filters()).
std::shared_ptr<const PostFilter> make_post_filter(const nlohmann::json& config, StageContext& ctx);

}  // namespace plumb::debias
