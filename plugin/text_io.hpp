#pragma once
/// \file text_io.hpp
/// Streaming text input shared by every reader (corpora, topics, qrels, runs, word lists), and
/// atomic output files.
///
/// Real collections hold oddities that are not errors: a UTF-8 byte-order mark on the first line,
/// CRLF or CR-only (classic Mac OS) line ends, empty lines. LineReader strips the BOM and the CR
/// and counts lines so that parse errors can name file and line.

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace plumb {

/// True when `s` is well-formed UTF-8 (no overlong forms, no surrogates, max U+10FFFF).
bool is_valid_utf8(std::string_view s) noexcept;

/// Byte offset of the first invalid UTF-8 sequence in `s`, or npos when valid.
std::size_t find_invalid_utf8(std::string_view s) noexcept;

/// Reads a text file line by line with a large buffer. Not thread-safe; one reader per thread.
/// A gzip-compressed file (recognised by its magic bytes 1f 8b, whatever its name) is
/// decompressed on the fly with zlib: every reader of the project (corpora, topics, qrels,
/// runs, triples) takes `.gz` files; a corrupt or truncated stream is an IoError.
class LineReader {
public:
    /// Opens `path` ("-" reads standard input). Throws IoError when it cannot be opened.
    explicit LineReader(const std::filesystem::path& path);
    ~LineReader();
    LineReader(const LineReader&) = delete;
    LineReader& operator=(const LineReader&) = delete;

    /// Reads the next line without its line end ("\n" or "\r\n"; "\r" when the file's first
    /// line end is a CR not followed by LF: the whole file then has CR-only line ends); the BOM
    /// of line 1 is removed. Returns false at end of file. The view stays valid until the next
    /// call.
    bool next(std::string_view& line);

    /// Reads up to `n` raw bytes following the last line returned (binary records after a text
    /// header, e.g. word2vec's binary format); returns the number read (< n only at the end of
    /// the file). Lines may be read again afterwards.
    std::size_t read_bytes(char* dst, std::size_t n);

    /// Reads only the lines that START in the byte range [begin, end) of the file (a line starts
    /// at byte 0 or after a line end; the last one may run past `end`), for splitting one file
    /// between readers without reading what comes before. Call before the first next(). The
    /// file's line ends are still decided by its first line end, the BOM is removed only when
    /// the range starts at byte 0; line_number() and bytes_read() then count from the range's
    /// first line, and file_line() maps a line number to the file's. Throws InvalidArgument for
    /// standard input or a gzip-compressed file (neither can seek), IoError when seeking fails.
    void restrict_to_bytes(std::uint64_t begin, std::uint64_t end);

    /// The file's 1-based line number of `line` (a line_number() value): `line` itself, or after
    /// restrict_to_bytes() plus the lines before the range (counted once, when first needed:
    /// error messages name the file's line).
    std::uint64_t file_line(std::uint64_t line) const;

    /// 1-based number of the line last returned by next().
    std::uint64_t line_number() const noexcept { return m_line_no; }
    /// Path as given, for error messages.
    const std::string& name() const noexcept { return m_name; }
    /// Bytes of the file consumed so far (compressed bytes for gzip), for progress against
    /// size().
    std::uint64_t bytes_read() const noexcept;
    /// True when the file is gzip-compressed.
    bool compressed() const noexcept { return m_gz != nullptr; }
    /// File size in bytes, 0 when unknown (standard input, pipes).
    std::uint64_t size() const noexcept { return m_size; }

    /// Throws ParseError naming this file and the current line.
    [[noreturn]] void fail(const std::string& message) const;

    /// Longest line accepted, in bytes (line end excluded): a longer line is a ParseError naming
    /// the file and line instead of memory without bound (e.g. a binary file or /dev/zero given
    /// as text). Defaults to default_max_line_bytes().
    void set_max_line_bytes(std::size_t n) noexcept { m_max_line = n; }
    std::size_t max_line_bytes() const noexcept { return m_max_line; }
    /// Whether a NUL byte may appear in a line. Text formats forbid it (default: a ParseError
    /// naming file and line, never a line silently cut at the NUL by later C-string code).
    void set_allow_nul(bool allow) noexcept { m_allow_nul = allow; }

    /// Process-wide default of max_line_bytes() for new readers: 256 MiB, or the environment
    /// variable PLUMB_MAX_LINE_BYTES (bytes; suffixes K, M, G) when set, or the value given to
    /// set_default_max_line_bytes() (the CLI's --max-line-bytes).
    static std::size_t default_max_line_bytes() noexcept;
    static void set_default_max_line_bytes(std::size_t n) noexcept;

private:
    bool fill();
    void detect_line_end(const char* p, std::size_t n);
    void seek(std::uint64_t offset);
    [[noreturn]] void too_long(std::uint64_t line) const;
    std::FILE* m_file = nullptr;
    void* m_gz = nullptr;  // zlib gzFile when compressed
    bool m_owns = false;
    std::string m_name;
    std::vector<char> m_buf;
    std::size_t m_pos = 0;
    std::size_t m_end = 0;
    bool m_eof = false;
    std::string m_carry;
    std::uint64_t m_line_no = 0;
    char m_eol = '\n';
    bool m_eol_known = false;
    bool m_pending_cr = false;  // the data seen so far ends in a CR: its line end is undecided
    std::uint64_t m_bytes = 0;
    // restrict_to_bytes(): the range's first byte, and its size (lines starting at or after
    // m_origin + m_limit are not read); the lines before m_origin, counted when first needed.
    std::uint64_t m_origin = 0;
    std::uint64_t m_limit = std::numeric_limits<std::uint64_t>::max();
    mutable std::optional<std::uint64_t> m_lines_before;
    std::uint64_t m_size = 0;
    std::size_t m_max_line = default_max_line_bytes();
    bool m_allow_nul = false;
};

/// Parses a byte count such as "300", "64K", "256M" or "2G" (binary units); nullopt when
/// malformed or zero.
std::optional<std::size_t> parse_byte_size(std::string_view s) noexcept;

/// Splits `line` on `sep`, appending views into `out` (cleared first).
void split(std::string_view line, char sep, std::vector<std::string_view>& out);

/// Splits on runs of ASCII whitespace (space, tab, CR, LF, VT, FF); no empty fields.
void split_ws(std::string_view line, std::vector<std::string_view>& out);

/// Trims ASCII whitespace at both ends.
std::string_view trim(std::string_view s) noexcept;

/// Writes a file atomically: data goes to "<path>.tmp.<pid>.<n>" and is renamed onto `path` by
/// commit(). Destroying an uncommitted writer removes the temporary file, so an interrupted or
/// failed write never leaves a half-written output behind.
class AtomicFile {
public:
    explicit AtomicFile(std::filesystem::path path);
    ~AtomicFile();
    AtomicFile(const AtomicFile&) = delete;
    AtomicFile& operator=(const AtomicFile&) = delete;

    /// The stream to write to (buffered). Valid until commit().
    std::FILE* stream() noexcept { return m_file; }
    void write(std::string_view data);
    /// Flushes, fsyncs and renames onto the target. Throws IoError on any failure.
    void commit();
    const std::filesystem::path& path() const noexcept { return m_path; }

private:
    std::filesystem::path m_path;
    std::filesystem::path m_tmp;
    std::FILE* m_file = nullptr;
    bool m_done = false;
};

/// Removes the temporary siblings of `target` that a killed process left behind: entries named
/// "<target>.tmp-<pid>-<n>" or "<target>.tmp.<pid>.<n>" (the names plumb's crash-safe writers
/// use) whose process <pid> no longer runs on this machine. Entries of running processes are
/// kept. Each removal is logged as a warning; returns the paths removed. Never throws.
std::vector<std::filesystem::path> remove_stale_temporaries(const std::filesystem::path& target);

/// Reads a whole file into a string. Throws IoError, also when the file is larger than
/// `max_bytes` (a configuration or header read whole; default 1 GiB).
std::string read_file(const std::filesystem::path& path,
                      std::size_t max_bytes = std::size_t{1} << 30);

}  // namespace plumb
