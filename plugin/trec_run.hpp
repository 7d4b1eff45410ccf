#pragma once
/// \file trec_run.hpp
/// Writing TREC run files: `qid Q0 docid rank score tag`, one line per candidate, ranks from 1.

#include <string>
#include <string_view>
#include <vector>

#include "plugin/text_io.hpp"
#include "plugin/types.hpp"

namespace plumb {

/// Appends `list` to `out` in TREC format. Scores printed with enough digits to round-trip
/// the float ordering ("%.6g" is not enough; "%.9g" is).
void write_trec_run(AtomicFile& out, const RankedList& list, std::string_view tag);

/// The lines write_trec_run(out, list, tag) writes (for a host that gathers run parts, e.g.
/// from MPI ranks, before writing them).
std::string format_trec_run(const RankedList& list, std::string_view tag);

/// Writes all lists to `path` atomically (temp file, then rename).
void write_trec_run(const std::string& path, const std::vector<RankedList>& lists,
                    std::string_view tag);

}  // namespace plumb
