#pragma once
/// \file format.hpp
/// Output of evaluation results: trec_eval's text format, JSON and CSV.
///
/// Text is byte-identical to trec_eval's: one line `name<TAB>qid<TAB>value` per value with the
/// name left-aligned in 22 columns ("%-22s\t%s\t%6.4f" for real values, "%ld" for counts,
/// the tag for runid); per-query lines (with -q) first, query by query in qid order, measures
/// in registry order; then the summary lines with qid "all" (unless -n).
/// JSON: {"run_id", "measures": [names], "queries": {qid: {name: value}}, "all": {...}}
/// with full double precision. CSV: header `measure,qid,value`, the same rows as the text.

#include <string>

#include "eval/evaluator.hpp"

namespace plumb::eval {

enum class OutputFormat { Text, Json, Csv };

/// Parses "text", "json" or "csv". Throws ConfigError.
OutputFormat parse_output_format(const std::string& name);

struct FormatOptions {
    bool per_query = false;  ///< -q
    bool summary = true;     ///< false with -n
};

/// Renders `result` in `format`.
std::string format_result(const EvalResult& result, OutputFormat format,
                          const FormatOptions& options = {});

}  // namespace plumb::eval
