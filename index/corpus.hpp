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
///    (e.g. `metadata`) are ignored. A missing id or text key is an error. A BEIR folder (one
///    holding `corpus.jsonl` or `corpus.jsonl.gz`) reads that file.
///  - TREC SGML (Anserini's TrecCollection): `<DOC>` ... `</DOC>` blocks, many per file, in one
///    file or a folder of files (recursively, in byte order of the paths; files whose name
///    starts with "readme", hidden files and folders named cr, dtd, dtds skipped, as Anserini
///    does). The id is the trimmed content of `<DOCNO>` (or the `id="..."` attribute of
///    `<DOC id="...">`). The text is the content of the elements TEXT, HEADLINE, TITLE, HL,
///    HEAD, TTL, DD, DATE, LP and LEADPARA (tags included, in document order; an element
///    nested in a kept one belongs to it), passed through html_to_text (markup removed,
///    entities decoded, whitespace collapsed); everything else (DOCID, BYLINE, DATELINE, ...)
///    is dropped. Tags are matched in any case. Errors: text outside `<DOC>`, an unterminated
///    `<DOC>` or kept element, `<DOC>` without `<DOCNO>`, a second `<DOCNO>`, an empty id or
///    one with whitespace, invalid UTF-8; Unix compress (.Z) files are an IoError.
///  - HTML (Anserini's HtmlCollection): one document per file, in a folder (recursively, byte
///    order, hidden files skipped) or a tar archive (`.tar`, `.tar.gz`, `.tgz`; also inside a
///    folder). The id is the file name without a final ".html" (other extensions are kept, as
///    in Anserini); the text is html_to_text of the whole file.
///  - Topics: TSV `qid<TAB>query`, BEIR `queries.jsonl` (`_id`, `text`), or TREC topics
///    (`<top> <num> Number: 301 <title> ... <desc> Description: ... <narr> Narrative: ...
///    </top>`, recognised by a first non-blank line starting with `<top`), whose query text is
///    the chosen fields (TopicReadOptions::fields, default title) joined by a space.
/// Ids are trimmed of surrounding ASCII whitespace; an empty id, or an id containing whitespace
/// (it could not be written to a TREC run), is an error.
/// Every line is UTF-8 validated ("<file>:<line>: invalid UTF-8 at byte N", N 1-based within the
/// line). A bad line (or SGML/HTML document) throws ParseError naming file and line, or with
/// skip_bad is skipped and counted; but a file in which no record parses, or more than
/// max_bad_share of them fail, is an error naming the format expected and the one the file
/// seems to have. Blank (empty or whitespace-only) lines are skipped silently and are not
/// counted as bad. Empty passages, CRLF line ends (for SGML and topics also CR-only ones), a
/// BOM, runs of whitespace in text and non-numeric ids are valid input. Gzip-compressed files
/// (recognised by their magic bytes, whatever their name) are decompressed on the fly with
/// zlib; standard input ("-") must be uncompressed. Corrupt or truncated gzip data throws
/// IoError. Duplicate document ids are detected by the indexer (not here, to stay
/// streaming); duplicate query ids are detected by read_topics().

#include <cstdint>
#include <filesystem>
#include <limits>
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

/// The text of `doc` as a plumb index stores it (with titles, the default): the title and the
/// text joined by a space, or the text alone when the title is empty. What every reader of a
/// corpus that stands in for an index (gender scores, LIWC, post-filter passage text) uses.
std::string indexed_text(const Document& doc);
/// As above, moving the text out of `doc` when there is no title.
std::string indexed_text(Document&& doc);

enum class CorpusFormat { Tsv, Jsonl, Trec, Html };

/// "tsv" / "jsonl" (or "json") / "trec" / "html"; throws InvalidArgument otherwise.
CorpusFormat parse_corpus_format(const std::string& name);
/// "tsv" / "jsonl" / "trec" / "html".
const char* corpus_format_name(CorpusFormat format) noexcept;
/// The format of a corpus path: a folder holding corpus.jsonl(.gz) -> Jsonl (BEIR), another
/// folder -> Trec when its first file (in reading order) starts with `<DOC`, else Html;
/// .tar/.tar.gz/.tgz -> Html; .jsonl/.json(.gz) -> Jsonl; .html/.htm -> Html; any other file
/// -> Trec when its first non-blank line starts with `<DOC`, else Tsv. "-" -> Tsv. Reads at
/// most the first line of one file; a path that cannot be read gives Tsv (the reader then
/// reports the error).
CorpusFormat detect_corpus_format(const std::filesystem::path& path);
/// The format `name` names (parse_corpus_format), or when `name` is empty the format of `path`
/// (detect_corpus_format): a command's optional corpus format option. Throws InvalidArgument.
CorpusFormat resolve_corpus_format(const std::string& name, const std::filesystem::path& path);

struct CorpusReaderOptions {
    CorpusFormat format = CorpusFormat::Tsv;
    bool skip_bad = false;  ///< skip and count malformed lines instead of throwing
    bool tabs_in_text =
        false;  ///< TSV: text = everything after the first TAB (else >2 fields = error)
    /// With skip_bad: a file in which more than this share of the records (lines, SGML or HTML
    /// documents) is bad, or in which none parses, is a ParseError naming the expected format
    /// and the one the file seems to have (a file of the wrong format must not become an
    /// empty index). 1 disables the share test; "none parses" always applies.
    double max_bad_share = 0.1;
    /// A byte range of a single, uncompressed TSV or JSONL file (not standard input): only the
    /// lines that start in [first_byte, end_byte) are read (a line starts at byte 0 or after a
    /// line end; the file's line ends are decided by its first one, as LineReader does), so
    /// ranges [b0, b1), [b1, b2), ... read every line exactly once, each by the range its
    /// first byte falls in, without reading what lies before b_i (a reader seeks to b_i - 1 and
    /// starts after the next line end). The BOM is removed only in a range starting at 0. Line
    /// numbers: see CorpusReader::file_line(). The defaults read the whole file.
    std::uint64_t first_byte = 0;
    std::uint64_t end_byte = std::numeric_limits<std::uint64_t>::max();
};

/// Streams documents from a corpus file, folder or archive ("-" = standard input). Not
/// thread-safe.
class CorpusReader {
public:
    /// Throws IoError when the file cannot be opened (or a folder holds no file).
    CorpusReader(const std::filesystem::path& path, CorpusReaderOptions options);
    ~CorpusReader();
    CorpusReader(CorpusReader&&) noexcept;
    CorpusReader& operator=(CorpusReader&&) noexcept;

    /// Reads the next document; false at end of file. Throws ParseError on a bad line unless
    /// skip_bad is set.
    bool next(Document& doc);
    std::uint64_t skipped() const noexcept;  ///< bad records skipped so far
    /// Line of the last document returned (its first line; 0 for HTML documents). In a byte
    /// range that does not start at byte 0 (first_byte), counted from the range's first line:
    /// file_line() turns it into the file's line number.
    std::uint64_t line_number() const noexcept;
    /// The file's line number of `line` (a line_number() of the current file): `line` itself
    /// unless the reader reads a byte range not starting at 0; then the line ends before the
    /// range are counted once, on the first call (an error message's cost, not every read's).
    /// Throws IoError.
    std::uint64_t file_line(std::uint64_t line) const;
    /// Bytes consumed over all files (compressed bytes for gzip).
    std::uint64_t bytes_read() const noexcept;
    std::uint64_t size_bytes() const noexcept;  ///< total size of the files, 0 when unknown
    /// File of the last document returned ("archive/member" for an archive member).
    const std::string& name() const noexcept;

private:
    struct Impl;
    std::unique_ptr<Impl> m_impl;
};

/// Fields of a TREC topic that make the query text (bit set).
enum TopicField : unsigned { kTopicTitle = 1, kTopicDescription = 2, kTopicNarrative = 4 };

/// "title", "description" (or "desc"), "narrative" (or "narr"), or several joined by '+'
/// ("title+description", Anserini's -topicField); the fields are joined in the order title,
/// description, narrative. Throws InvalidArgument.
unsigned parse_topic_fields(const std::string& spec);

struct TopicReadOptions {
    bool skip_bad = false;              ///< skip and count malformed lines / topics
    unsigned fields = kTopicTitle;      ///< TREC topics: the fields making the query text
    double max_bad_share = 0.1;         ///< as CorpusReaderOptions::max_bad_share
};

/// Reads a whole topics file. Format: .jsonl/.json -> BEIR queries (a BEIR folder reads its
/// queries.jsonl), a first non-blank line starting with `<top` -> TREC topics, else TSV.
/// Empty query text is valid; a TREC topic lacking a requested field is an error (a field
/// present but empty gives empty text). A duplicate qid is an error naming both lines (with
/// skip_bad the later duplicate is skipped and counted). `skipped`, when given, receives the
/// number of bad lines (topics) skipped. Throws IoError, ParseError.
std::vector<Query> read_topics(const std::filesystem::path& path, const TopicReadOptions& options,
                               std::uint64_t* skipped = nullptr);
/// read_topics with default options but skip_bad.
std::vector<Query> read_topics(const std::filesystem::path& path, bool skip_bad = false,
                               std::uint64_t* skipped = nullptr);

}  // namespace plumb::index
