#pragma once
/// \file pipeline_config.hpp
/// Building a Pipeline from a JSON or YAML configuration through a Registry.
///
/// Format (one JSON object, or the same structure in YAML; unknown keys anywhere are a
/// ConfigError):
///   {
///     "description": "free text (optional)",
///     "plugins": ["libmy_scorer.so"],          // loaded with Registry::load_library (optional)
///     "first_stage": {"type": "bm25", "index": "idx"},
///     "rerank": [{"type": "tk", "model": "tk_model", "depth": 100}],   // optional
///     "post_filters": [{"type": "near_duplicates", "threshold": 0.9}], // optional
///     "k": 10,              // results per query (default 100)
///     "candidates": 1000,   // first-stage depth (default max(k, deepest re-rank depth))
///     "return_text": false  // results carry passage text (default false)
///   }
/// Paths inside stage configurations are relative to the configuration file's directory. Each
/// stage object is given to the registry's factory of its "type" (unknown type: ConfigError
/// listing the known ones). The document source is the one a first stage offers (e.g. the BM25
/// index) unless the caller's StageContext already has one.
///
/// YAML (files named *.yaml / *.yml): the document is converted to the JSON value above and
/// then handled exactly like JSON (same keys, same ConfigErrors). Plain scalars follow the YAML
/// 1.2 core schema (null / ~, true / false, integers, floats such as 0.5 or 1e-3, everything else
/// a string); quoted scalars are always strings. Syntax errors and duplicate keys are
/// ParseErrors naming the file and line.

#include <filesystem>
#include <string>
#include <string_view>

#include "plugin/pipeline.hpp"
#include "plugin/registry.hpp"

namespace plumb {

/// Reads and builds the pipeline of `file` (YAML when its extension is .yaml or .yml, else JSON).
/// IoError when unreadable, ParseError (file, line) for invalid JSON / YAML, ConfigError (naming
/// the file) for a bad configuration. `ctx` (optional) supplies shared resources / a document
/// source; its base directory is set to the file's directory.
Pipeline load_pipeline(const std::filesystem::path& file, Registry& registry,
                       StageContext* ctx = nullptr);

/// Same from JSON text; relative paths resolve against ctx.base_dir(); `source` names the text in
/// errors.
Pipeline pipeline_from_json(std::string_view json_text, Registry& registry, StageContext& ctx,
                            const std::string& source = "<pipeline config>");

/// Same from YAML text.
Pipeline pipeline_from_yaml(std::string_view yaml_text, Registry& registry, StageContext& ctx,
                            const std::string& source = "<pipeline config>");

}  // namespace plumb
