#include "plugin/trec_run.hpp"

#include <fmt/format.h>

namespace plumb {

std::string format_trec_run(const RankedList& list, std::string_view tag) {
    fmt::memory_buffer buf;
    std::size_t rank = 1;
    for (const auto& c : list.candidates) {
        fmt::format_to(std::back_inserter(buf), "{} Q0 {} {} {:.9g} {}\n", list.qid, c.docid,
                       rank++, c.score, tag);
    }
    return fmt::to_string(buf);
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
