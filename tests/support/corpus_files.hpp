#pragma once
/// \file corpus_files.hpp
/// Corpus fixtures for the index tests: reader options, a whole corpus read into memory,
/// gzip-compressed files (written with zlib; link ZLIB::ZLIB).
#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "index/corpus.hpp"

namespace plumb::test {

/// Reader options for `format`; with `skip_bad`, bad records are skipped and counted.
inline index::CorpusReaderOptions corpus_options(index::CorpusFormat format,
                                                 bool skip_bad = false) {
    index::CorpusReaderOptions o;
    o.format = format;
    o.skip_bad = skip_bad;
    return o;
}

/// Every document of the corpus at `path`; `skipped`, when given, receives the number of bad
/// records skipped.
inline std::vector<index::Document> read_all(const std::filesystem::path& path,
                                             const index::CorpusReaderOptions& options,
                                             std::uint64_t* skipped = nullptr) {
    index::CorpusReader reader(path, options);
    std::vector<index::Document> docs;
    index::Document d;
    while (reader.next(d)) docs.push_back(d);
    if (skipped) *skipped = reader.skipped();
    return docs;
}

/// Writes `content` gzip-compressed to `path` (a fatal failure when zlib fails: callers check
/// with ASSERT_NO_FATAL_FAILURE where it matters).
inline void write_gz(const std::filesystem::path& path, const std::string& content) {
    gzFile g = gzopen(path.string().c_str(), "wb");
    ASSERT_NE(g, nullptr) << path;
    ASSERT_EQ(gzwrite(g, content.data(), static_cast<unsigned>(content.size())),
              static_cast<int>(content.size()));
    ASSERT_EQ(gzclose(g), Z_OK);
}

}  // namespace plumb::test
