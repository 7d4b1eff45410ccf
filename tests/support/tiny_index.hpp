#pragma once
/// \file tiny_index.hpp
/// A BM25 index of a few passages, for tests of pipelines and stages over a real index.
#include <filesystem>
#include <memory>
#include <string_view>

#include "index/bm25_searcher.hpp"
#include "index/index_builder.hpp"
#include "index/passage_index.hpp"
#include "tests/support/files.hpp"

namespace plumb::test {

/// The corpus `dir`/c.tsv and its index `dir`/idx (configurations written into `dir` name it
/// "idx"). Shared read-only by the tests of one process.
struct TinyIndex {
    std::filesystem::path dir;
    std::shared_ptr<const plumb::index::PassageIndex> index;
    std::shared_ptr<const plumb::index::Bm25Searcher> searcher;
};

/// Writes `corpus` (lines `docid TAB text`) to `dir`/c.tsv (creating `dir`) and indexes it into
/// `dir`/idx without stemming or stop words, so that BM25 scores can be worked out by hand.
inline TinyIndex build_tiny_index(const std::filesystem::path& dir, std::string_view corpus) {
    TinyIndex t;
    t.dir = dir;
    std::filesystem::create_directories(dir);
    write_file(dir / "c.tsv", corpus);
    plumb::index::IndexBuildOptions o;
    o.analysis.stem = false;
    o.analysis.stop = false;
    plumb::index::build_index(dir / "c.tsv", dir / "idx", o);
    t.index = plumb::index::PassageIndex::open(dir / "idx");
    t.searcher = std::make_shared<const plumb::index::Bm25Searcher>(t.index);
    return t;
}

}  // namespace plumb::test
