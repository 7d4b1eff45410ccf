#pragma once
/// \file detail_passages.hpp
/// The passage scan the debias audits share (gender scores, LIWC φ files): every passage of a
/// corpus file or of a plumb passage index. Internal, not installed.

#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>

#include "index/corpus.hpp"
#include "index/passage_index.hpp"
#include "plugin/progress.hpp"

namespace plumb::debias::detail {

/// Calls `fn(docid, text)` for every passage, in file order of the corpus `corpus` (read as
/// `format`, empty = by extension; with `skip_bad`, bad lines are skipped and counted; the text
/// as the index stores it, index::indexed_text) or, when `corpus` is empty, in document order of
/// the index at `index_dir`. `progress` (bytes of a corpus, passages of an index) is called
/// every 4096 passages and at the end. Returns the number of bad corpus lines skipped. Throws
/// what the readers and `fn` throw.
template <typename Fn>
std::uint64_t for_each_passage(const std::filesystem::path& corpus, const std::string& format,
                               bool skip_bad, const std::filesystem::path& index_dir, Fn&& fn,
                               const ProgressCallback& progress) {
    if (!corpus.empty()) {
        index::CorpusReaderOptions options;
        options.format = index::resolve_corpus_format(format, corpus);
        options.skip_bad = skip_bad;
        index::CorpusReader reader(corpus, options);
        index::Document doc;
        for (std::uint64_t k = 1; reader.next(doc); ++k) {
            // indexed_text(Document&&) moves the text only: doc.id stays valid.
            fn(doc.id, index::indexed_text(std::move(doc)));
            if (progress && (k & 4095) == 0) progress(reader.bytes_read(), reader.size_bytes());
        }
        if (progress) progress(reader.bytes_read(), reader.size_bytes());
        return reader.skipped();
    }
    auto index = index::PassageIndex::open(index_dir);
    const std::uint64_t n = index->size();
    for (std::uint64_t d = 0; d < n; ++d) {
        const auto doc = static_cast<std::uint32_t>(d);
        fn(std::string(index->docid(doc)), index->text_at(doc));
        if (progress && ((d + 1) & 4095) == 0) progress(d + 1, n);
    }
    if (progress) progress(n, n);
    return 0;
}

}  // namespace plumb::debias::detail
