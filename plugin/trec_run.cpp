#include "plugin/trec_run.hpp"

#include <algorithm>
#include <charconv>
#include <system_error>

#include "plugin/error.hpp"

namespace plumb {

namespace {

/// Longest "%.9g" of a float: sign, 9 digits, point, "e-45" (denormals) fits in 16 bytes;
/// the rank is a size_t (at most 20 digits).
constexpr std::size_t kMaxNumbers = 32 + 24;

}  // namespace

void append_trec_line(std::string& out, std::string_view qid, std::string_view docid,
                      std::size_t rank, float score, std::string_view tag) {
    const std::size_t at = out.size();
    out.resize(at + qid.size() + docid.size() + tag.size() + 4 + 3 + 1 + kMaxNumbers);
    char* p = out.data() + at;
    char* const end = out.data() + out.size();
    p = std::copy(qid.begin(), qid.end(), p);
    p = std::copy_n(" Q0 ", 4, p);
    p = std::copy(docid.begin(), docid.end(), p);
    *p++ = ' ';
    auto r = std::to_chars(p, end, rank);
    p = r.ptr;
    *p++ = ' ';
    // The float widened to double, as fmt's "{:.9g}" and printf's "%.9g" print it: both are
    // the exact binary value rounded to 9 significant digits, printf's %g layout.
    r = std::to_chars(p, end, static_cast<double>(score), std::chars_format::general, 9);
    if (r.ec != std::errc()) throw Error("format_trec_run: cannot format a score");
    p = r.ptr;
    *p++ = ' ';
    p = std::copy(tag.begin(), tag.end(), p);
    *p++ = '\n';
    out.resize(static_cast<std::size_t>(p - out.data()));
}

void append_trec_run(std::string& out, const RankedList& list, std::string_view tag) {
    std::size_t rank = 1;
    for (const auto& c : list.candidates) append_trec_line(out, list.qid, c.docid, rank++, c.score, tag);
}

std::string format_trec_run(const RankedList& list, std::string_view tag) {
    std::string out;
    append_trec_run(out, list, tag);
    return out;
}

void write_trec_run(AtomicFile& out, const RankedList& list, std::string_view tag) {
    out.write(format_trec_run(list, tag));
}

void write_trec_run(const std::string& path, const std::vector<RankedList>& lists,
                    std::string_view tag) {
    AtomicFile out(path);
    for (const auto& l : lists) write_trec_run(out, l, tag);
    out.commit();
}

}  // namespace plumb
