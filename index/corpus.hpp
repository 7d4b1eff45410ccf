#pragma once
/// \file corpus.hpp
/// Streaming readers for passage corpora and topics.
///
/// Formats (see index/README.md, "Corpus formats"):
///  - MS MARCO-style TSV: `id<TAB>text`, exactly two fields. A line with more than one TAB is an
///    error by default (a TAB inside the text is ambiguous: it may as well be a forgotten title
///    column); with CorpusReaderOptions::tabs_in_text the text is everything after the first TAB,
///    kept verbatim. A line without any TAB is an error (`id<TAB>` is a valid empty passage).
///  - BEIR JSONL: one object per line with `_id`, `title` (optional), `text`; Pyserini's `id` /
///    `contents` are accepted as synonyms. `_id` may be a JSON string or integer (integers are
///    converted to their decimal string). `title`/`text` may be null (read as empty). Other keys
///    (e.g. `metadata`) are ignored. A missing id or text key is an error.
///  - Topics: TSV `qid<TAB>query`, or BEIR `queries.jsonl` (`_id`, `text`).
/// Ids are trimmed of surrounding ASCII whitespace; an empty id, or an id containing whitespace
/// (it could not be written to a TREC run), is an error.
/// Every line is UTF-8 validated ("<file>:<line>: invalid UTF-8 at byte N", N 1-based within the
/// line). A bad line throws ParseError naming file and line, or with skip_bad is skipped and
/// counted. Blank (empty or whitespace-only) lines are skipped silently and are not counted as
/// bad. Empty passages, CRLF line ends, a BOM, runs of whitespace in text and non-numeric ids are
/// valid input. Gzip-compressed files (recognised by their magic bytes, whatever their name) are
/// decompressed on the fly with zlib; standard input ("-") must be uncompressed. Corrupt or
/// truncated gzip data throws IoError. Duplicate document ids are detected by the indexer
/// (not here, to stay streaming); duplicate query ids are detected by read_topics().

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
/// "tsv" / "jsonl".
const char* corpus_format_name(CorpusFormat format) noexcept;
/// By extension: .jsonl/.json(.gz) -> Jsonl, otherwise Tsv.
CorpusFormat detect_corpus_format(const std::filesystem::path& path);

struct CorpusReaderOptions {
    CorpusFormat format = CorpusFormat::Tsv;
    bool skip_bad = false;  ///< skip and count malformed lines instead of throwing
    bool tabs_in_text =
        false;  ///< TSV: text = everything after the first TAB (else >2 fields = error)
};

/// Streams documents from one file ("-" = standard input). Not thread-safe.
class CorpusReader {
public:
    /// Throws IoError when the file cannot be opened.
    CorpusReader(const std::filesystem::path& path, CorpusReaderOptions options);
    ~CorpusReader();
    CorpusReader(CorpusReader&&) noexcept;
    CorpusReader& operator=(CorpusReader&&) noexcept;

    /// Reads the next document; false at end of file. Throws ParseError on a bad line unless
    /// skip_bad is set.
    bool next(Document& doc);
    std::uint64_t skipped() const noexcept;      ///< bad lines skipped so far
    std::uint64_t line_number() const noexcept;  ///< line of the last document returned
    std::uint64_t bytes_read() const noexcept;   ///< file bytes consumed (compressed for gzip)
    std::uint64_t size_bytes() const noexcept;   ///< file size, 0 when unknown
    const std::string& name() const noexcept;

private:
    struct Impl;
    std::unique_ptr<Impl> m_impl;
};

/// Reads a whole topics file (format by extension: .jsonl/.json -> BEIR queries, else TSV).
/// Empty query text is valid. A duplicate qid is an error naming both lines (with skip_bad the
/// later duplicate is skipped and counted). `skipped`, when given, receives the number of bad
/// lines skipped. Throws IoError, ParseError.
std::vector<Query> read_topics(const std::filesystem::path& path, bool skip_bad = false,
                               std::uint64_t* skipped = nullptr);

}  // namespace plumb::index
