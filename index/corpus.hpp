#pragma once
/// \file corpus.hpp
/// Streaming readers for passage corpora and topics.
///
/// Formats:
///  - MS MARCO-style TSV: `id<TAB>text` (a third column, if present, is a title: `id<TAB>title<TAB>text`
///    is NOT assumed; extra columns are an error unless documented otherwise in corpus.cpp).
///  - BEIR JSONL: one object per line with `_id`, `title` (optional), `text`.
///  - Topics: TSV `qid<TAB>query`, or BEIR `queries.jsonl` (`_id`, `text`).
/// Every line is UTF-8 validated. A bad line throws ParseError naming file and line, or with
/// skip_bad is skipped and counted. Empty passages, CRLF line ends, a BOM and non-numeric ids are
/// valid input. Duplicate document ids are detected by the indexer (not here, to stay streaming).

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "plugin/types.hpp"

namespace plumb::index {

struct Document {
    std::string id;
    std::string title;  ///< empty for TSV
    std::string text;
};

enum class CorpusFormat { Tsv, Jsonl };

/// "tsv" / "jsonl"; throws InvalidArgument otherwise.
CorpusFormat parse_corpus_format(const std::string& name);
/// By extension: .jsonl/.json(.gz) -> Jsonl, otherwise Tsv.
CorpusFormat detect_corpus_format(const std::filesystem::path& path);

struct CorpusReaderOptions {
    CorpusFormat format = CorpusFormat::Tsv;
    bool skip_bad = false;  ///< skip and count malformed lines instead of throwing
};

/// Streams documents from one file. Not thread-safe.
class CorpusReader {
public:
    CorpusReader(const std::filesystem::path& path, CorpusReaderOptions options);
    ~CorpusReader();
    CorpusReader(CorpusReader&&) noexcept;
    CorpusReader& operator=(CorpusReader&&) noexcept;

    /// Reads the next document; false at end of file. Throws ParseError on a bad line unless
    /// skip_bad is set.
    bool next(Document& doc);
    std::uint64_t skipped() const noexcept;      ///< bad lines skipped so far
    std::uint64_t line_number() const noexcept;  ///< line of the last document returned
    std::uint64_t bytes_read() const noexcept;
    std::uint64_t size_bytes() const noexcept;   ///< 0 when unknown
    const std::string& name() const noexcept;

private:
    struct Impl;
    std::unique_ptr<Impl> m_impl;
};

/// Reads a whole topics file (format by extension: .jsonl -> BEIR queries, else TSV).
/// Empty query text is valid. Duplicate qids are an error.
std::vector<Query> read_topics(const std::filesystem::path& path, bool skip_bad = false);

}  // namespace plumb::index
