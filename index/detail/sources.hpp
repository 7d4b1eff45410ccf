#pragma once
/// \file sources.hpp
/// Internal: the document sources behind CorpusReader (one file or archive each), and a line
/// splitter that also honours CR-only line ends. Not installed as public API.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

#include "index/corpus.hpp"
#include "plugin/text_io.hpp"

namespace plumb::index::detail {

/// A malformed record. The source has already moved past it: next() may be called again (the
/// record is then skipped), or the caller turns it into a ParseError(name(), line, message).
struct BadRecord {
    std::string message;
    std::uint64_t line = 0;  ///< 0 when the record is not tied to a line
};

/// Documents of one file or archive. Not thread-safe.
class DocSource {
public:
    virtual ~DocSource() = default;
    /// The next document; false at the end. Throws BadRecord (recoverable), IoError, ParseError.
    virtual bool next(Document& doc) = 0;
    /// File (for archives "archive/member") of the record last returned or thrown.
    virtual const std::string& name() const noexcept = 0;
    /// Line of the record last returned (its first line), 0 when not line-based.
    virtual std::uint64_t line() const noexcept = 0;
    /// Bytes of the file consumed (compressed bytes when compressed).
    virtual std::uint64_t bytes_read() const noexcept = 0;
    /// The file's line number of a line() value (differs only for a byte range of a file).
    virtual std::uint64_t file_line(std::uint64_t line) const { return line; }
};

/// TREC SGML documents (`<DOC><DOCNO>..</DOCNO>..</DOC>`, many per file; plain or gzip).
std::unique_ptr<DocSource> open_trec_file(const std::filesystem::path& path);
/// One HTML document: id = file name without a final ".html", text = html_to_text.
std::unique_ptr<DocSource> open_html_file(const std::filesystem::path& path);
/// A tar archive (plain or gzip) of HTML documents, one per regular member.
std::unique_ptr<DocSource> open_html_archive(const std::filesystem::path& path);

/// True for names ending in .tar, .tar.gz or .tgz (any case).
bool is_tar_name(const std::filesystem::path& path);
/// "CACM-0001.html" -> "CACM-0001"; other names unchanged (Anserini's HtmlCollection rule).
std::string html_doc_id(std::string_view file_name);

/// Lines of a text file (LineReader: gzip, BOM, CRLF) further split at lone CRs (classic Mac
/// line ends), with line numbers counting both.
class PhysicalLines {
public:
    explicit PhysicalLines(const std::filesystem::path& path) : m_reader(path) {}
    /// The next line; the view stays valid until the next call.
    bool next(std::string_view& line) {
        if (!m_has_rest) {
            if (!m_reader.next(m_rest)) return false;
            m_has_rest = true;
        }
        std::size_t cr = m_rest.find('\r');
        if (cr == std::string_view::npos) {
            line = m_rest;
            m_has_rest = false;
        } else {
            line = m_rest.substr(0, cr);
            m_rest.remove_prefix(cr + 1);
        }
        ++m_line;
        return true;
    }
    std::uint64_t line_number() const noexcept { return m_line; }
    const std::string& name() const noexcept { return m_reader.name(); }
    std::uint64_t bytes_read() const noexcept { return m_reader.bytes_read(); }
    std::uint64_t size() const noexcept { return m_reader.size(); }

private:
    LineReader m_reader;
    std::string_view m_rest;
    bool m_has_rest = false;
    std::uint64_t m_line = 0;
};

/// ASCII case-insensitive prefix test.
bool istarts_with(std::string_view s, std::string_view prefix) noexcept;
/// ASCII case-insensitive search; npos when absent.
std::size_t ifind(std::string_view hay, std::string_view needle, std::size_t from = 0) noexcept;

}  // namespace plumb::index::detail

namespace plumb::index::detail {

/// One topic of a TREC topics file (`<top> <num> <title> <desc> <narr> </top>`): fields with
/// their labels ("Number:", "Topic:", "Description:", "Narrative:") removed and whitespace
/// collapsed; `has_*` tell whether the tag was present.
struct TrecTopic {
    std::string id;
    std::uint64_t line = 0;  ///< line of <top>
    std::string title, description, narrative;
    bool has_title = false, has_description = false, has_narrative = false;
};

/// Streams the topics of a TREC topics file. Throws BadRecord for a malformed topic (next()
/// continues after it), IoError.
class TrecTopicReader {
public:
    explicit TrecTopicReader(const std::filesystem::path& path) : m_lines(path) {}
    bool next(TrecTopic& topic);
    const std::string& name() const noexcept { return m_lines.name(); }

private:
    PhysicalLines m_lines;
    std::string m_pending;  // the rest of a line after </top>
    bool m_has_pending = false;
};

}  // namespace plumb::index::detail
