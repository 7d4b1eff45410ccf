#pragma once
/// \file trec_run.hpp
/// Writing TREC run files: `qid Q0 docid rank score tag`, one line per candidate, ranks from 1.

#include <cstddef>
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

/// Appends format_trec_run(list, tag) to `out`.
void append_trec_run(std::string& out, const RankedList& list, std::string_view tag);

/// Appends one run line, `qid Q0 docid rank score tag\n`, the score as "%.9g" prints the float
/// (std::to_chars; the bytes fmt's "{:.9g}" wrote before, see tests/plugin/test_trec_run.cpp).
void append_trec_line(std::string& out, std::string_view qid, std::string_view docid,
                      std::size_t rank, float score, std::string_view tag);

/// Writes all lists to `path` atomically (temp file, then rename).
void write_trec_run(const std::string& path, const std::vector<RankedList>& lists,
                    std::string_view tag);

}  // namespace plumb
