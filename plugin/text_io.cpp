#include "plugin/text_io.hpp"

#include <signal.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "plugin/error.hpp"
#include "plugin/log.hpp"

namespace plumb {

std::size_t find_invalid_utf8(std::string_view s) noexcept {
    const auto* p = reinterpret_cast<const unsigned char*>(s.data());
    const std::size_t n = s.size();
    std::size_t i = 0;
    while (i < n) {
        unsigned char c = p[i];
        if (c < 0x80) {
            ++i;
            continue;
        }
        std::size_t len;
        std::uint32_t cp;
        if ((c & 0xE0) == 0xC0) {
            len = 2;
            cp = c & 0x1F;
        } else if ((c & 0xF0) == 0xE0) {
            len = 3;
            cp = c & 0x0F;
        } else if ((c & 0xF8) == 0xF0) {
            len = 4;
            cp = c & 0x07;
        } else {
            return i;
        }
        if (i + len > n) return i;
        for (std::size_t k = 1; k < len; ++k) {
            unsigned char cc = p[i + k];
            if ((cc & 0xC0) != 0x80) return i;
            cp = (cp << 6) | (cc & 0x3F);
        }
        if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
            cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
            return i;
        }
        i += len;
    }
    return std::string_view::npos;
}

bool is_valid_utf8(std::string_view s) noexcept {
    return find_invalid_utf8(s) == std::string_view::npos;
}

namespace {
constexpr std::size_t kBufferSize = 1 << 20;
}

LineReader::LineReader(const std::filesystem::path& path) : m_name(path.string()) {
    if (m_name == "-") {
        m_file = stdin;
        m_name = "<stdin>";
    } else {
        std::error_code ec;
        if (std::filesystem::is_directory(path, ec)) {
            throw IoError(m_name + ": is a directory, expected a file");
        }
        m_file = std::fopen(m_name.c_str(), "rb");
        if (!m_file) {
            throw IoError(m_name + ": cannot open: " + std::strerror(errno));
        }
        m_owns = true;
        auto sz = std::filesystem::file_size(path, ec);
        if (!ec) m_size = sz;
        // gzip magic bytes: read through zlib instead (the FILE is kept only for its fd).
        unsigned char magic[2] = {0, 0};
        const bool gz =
            std::fread(magic, 1, 2, m_file) == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
        std::rewind(m_file);
        if (gz) {
            const int fd = dup(fileno(m_file));
            gzFile g = fd >= 0 ? gzdopen(fd, "rb") : nullptr;
            if (g == nullptr) {
                if (fd >= 0) close(fd);
                std::fclose(m_file);
                throw IoError(m_name + ": cannot open gzip stream");
            }
            gzbuffer(g, 1 << 18);
            m_gz = g;
        }
    }
    m_buf.resize(kBufferSize);
}

LineReader::~LineReader() {
    if (m_gz) gzclose(static_cast<gzFile>(m_gz));
    if (m_owns && m_file) std::fclose(m_file);
}

std::uint64_t LineReader::bytes_read() const noexcept {
    if (m_gz) {
        const auto off = gzoffset(static_cast<gzFile>(m_gz));
        return off > 0 ? static_cast<std::uint64_t>(off) : 0;
    }
    return m_bytes;
}

bool LineReader::fill() {
    if (m_eof) return false;
    if (m_gz) {
        auto g = static_cast<gzFile>(m_gz);
        const int n = gzread(g, m_buf.data(), static_cast<unsigned>(m_buf.size()));
        int err = Z_OK;
        const char* msg = gzerror(g, &err);
        if (n < 0 || (err != Z_OK && err != Z_STREAM_END)) {
            throw IoError(m_name + ": corrupt or truncated gzip data (" +
                          (msg != nullptr ? msg : "?") + ")");
        }
        m_pos = 0;
        m_end = static_cast<std::size_t>(n);
        if (n == 0) {
            m_eof = true;
            return false;
        }
        return true;
    }
    m_end = std::fread(m_buf.data(), 1, m_buf.size(), m_file);
    m_pos = 0;
    if (m_end == 0) {
        if (std::ferror(m_file)) throw IoError(m_name + ": read error");
        m_eof = true;
        return false;
    }
    return true;
}

bool LineReader::next(std::string_view& line) {
    if (m_bytes >= m_limit) return false;
    m_carry.clear();
    bool have_carry = false;
    for (;;) {
        if (m_pos >= m_end && !fill()) {
            if (!have_carry) return false;
            line = m_carry;
            break;
        }
        const char* start = m_buf.data() + m_pos;
        if (!m_eol_known) {
            detect_line_end(start, m_end - m_pos);
            if (m_eol == '\r' && have_carry && !m_carry.empty() && m_carry.back() == '\r') {
                // The undecided CR that ended the previous buffer was the first line end, and
                // a CR-only one: the carried data is the line (the new buffer is not touched).
                m_carry.pop_back();
                line = m_carry;
                break;
            }
        }
        const void* nl = std::memchr(start, m_eol, m_end - m_pos);
        if (nl) {
            std::size_t len = static_cast<const char*>(nl) - start;
            m_pos += len + 1;
            m_bytes += len + 1;
            if (have_carry) {
                if (m_carry.size() + len > m_max_line + 1) too_long(m_line_no + 1);
                m_carry.append(start, len);
                line = m_carry;
            } else {
                line = std::string_view(start, len);
            }
            break;
        }
        if (m_carry.size() + (m_end - m_pos) > m_max_line + 1) too_long(m_line_no + 1);
        m_carry.append(start, m_end - m_pos);
        m_bytes += m_end - m_pos;
        have_carry = true;
        m_pos = m_end;
    }
    ++m_line_no;
    if (m_eol == '\n' && !line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (m_line_no == 1 && m_origin == 0 && line.size() >= 3 &&
        static_cast<unsigned char>(line[0]) == 0xEF &&
        static_cast<unsigned char>(line[1]) == 0xBB &&
        static_cast<unsigned char>(line[2]) == 0xBF) {
        line.remove_prefix(3);
    }
    if (line.size() > m_max_line) too_long(m_line_no);
    if (!m_allow_nul) {
        if (const void* z = std::memchr(line.data(), 0, line.size())) {
            fail("NUL byte in text at byte " +
                 std::to_string(static_cast<const char*>(z) - line.data() + 1) +
                 " of the line (a binary file, or a corrupt one?)");
        }
    }
    return true;
}

void LineReader::too_long(std::uint64_t line) const {
    throw ParseError(m_name, file_line(line),
                     "line longer than " + std::to_string(m_max_line) +
                         " bytes (a binary file? raise the limit with --max-line-bytes or "
                         "PLUMB_MAX_LINE_BYTES)");
}

namespace {
std::atomic<std::size_t> g_default_max_line{0};
}

std::optional<std::size_t> parse_byte_size(std::string_view s) noexcept {
    s = trim(s);
    if (s.empty()) return std::nullopt;
    std::size_t mult = 1;
    switch (s.back()) {
        case 'k':
        case 'K':
            mult = std::size_t{1} << 10;
            break;
        case 'm':
        case 'M':
            mult = std::size_t{1} << 20;
            break;
        case 'g':
        case 'G':
            mult = std::size_t{1} << 30;
            break;
        default:
            break;
    }
    if (mult != 1) s.remove_suffix(1);
    std::size_t v = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || end != s.data() + s.size() || v == 0) return std::nullopt;
    if (v > std::numeric_limits<std::size_t>::max() / mult) return std::nullopt;
    return v * mult;
}

std::size_t LineReader::default_max_line_bytes() noexcept {
    std::size_t v = g_default_max_line.load(std::memory_order_relaxed);
    if (v != 0) return v;
    v = std::size_t{64} << 20;
    if (const char* env = std::getenv("PLUMB_MAX_LINE_BYTES")) {
        if (auto parsed = parse_byte_size(env)) v = *parsed;
    }
    g_default_max_line.store(v, std::memory_order_relaxed);
    return v;
}

void LineReader::set_default_max_line_bytes(std::size_t n) noexcept {
    g_default_max_line.store(n == 0 ? std::size_t{64} << 20 : n, std::memory_order_relaxed);
}

void LineReader::detect_line_end(const char* p, std::size_t n) {
    // The first line end decides: a CR not followed by LF means CR-only line ends. A CR at the
    // very end of the buffer is undecided until the next byte arrives (LF is assumed meanwhile).
    if (m_pending_cr && n > 0) {
        m_pending_cr = false;
        m_eol_known = true;
        if (p[0] != '\n') m_eol = '\r';
        return;
    }
    for (std::size_t i = 0; i < n; ++i) {
        if (p[i] == '\n') {
            m_eol_known = true;
            return;
        }
        if (p[i] == '\r') {
            if (i + 1 < n) {
                m_eol_known = true;
                if (p[i + 1] != '\n') m_eol = '\r';
            } else {
                m_pending_cr = true;
            }
            return;
        }
    }
}

std::size_t LineReader::read_bytes(char* dst, std::size_t n) {
    std::size_t done = 0;
    while (done < n) {
        if (m_pos >= m_end && !fill()) break;
        const std::size_t k = std::min(n - done, m_end - m_pos);
        std::memcpy(dst + done, m_buf.data() + m_pos, k);
        m_pos += k;
        m_bytes += k;
        done += k;
    }
    return done;
}

void LineReader::fail(const std::string& message) const {
    throw ParseError(m_name, file_line(m_line_no), message);
}

void LineReader::seek(std::uint64_t offset) {
    if (fseeko(m_file, static_cast<off_t>(offset), SEEK_SET) != 0) {
        throw IoError(m_name + ": cannot seek to byte " + std::to_string(offset) + ": " +
                      std::strerror(errno));
    }
    m_pos = m_end = 0;
    m_eof = false;
}

void LineReader::restrict_to_bytes(std::uint64_t begin, std::uint64_t end) {
    if (!m_owns) {
        throw InvalidArgument(m_name + ": a byte range needs a file (not standard input)");
    }
    if (m_gz != nullptr) {
        throw InvalidArgument(m_name + ": a gzip-compressed file cannot be read by byte ranges");
    }
    if (m_line_no != 0 || m_bytes != 0) {
        throw InvalidArgument(m_name + ": restrict_to_bytes() after reading began");
    }
    {
        std::error_code ec;
        const auto sz = std::filesystem::file_size(m_name, ec);
        if (ec) throw IoError(m_name + ": cannot read its size: " + ec.message());
        m_size = sz;
    }
    // The file's line end, from its first line end (next()'s rule), read from byte 0.
    seek(0);
    while (!m_eol_known && (m_pos < m_end || fill())) {
        detect_line_end(m_buf.data() + m_pos, m_end - m_pos);
        m_pos = m_end;
    }
    const std::uint64_t last = std::min(end, m_size);
    // The first line start at or after `begin`: byte 0, or the byte after the first line end
    // at or after begin - 1 (the end of the file when there is none).
    std::uint64_t start = begin;
    bool positioned = false;  // the buffer already stands at `start`
    if (begin > 0 && begin < last) {
        seek(begin - 1);
        positioned = true;
        start = m_size;
        std::uint64_t at = begin - 1;
        while (m_pos < m_end || fill()) {
            const char* p = m_buf.data() + m_pos;
            if (const void* e = std::memchr(p, m_eol, m_end - m_pos)) {
                const auto n = static_cast<std::size_t>(static_cast<const char*>(e) - p) + 1;
                m_pos += n;
                start = at + n;
                break;
            }
            at += m_end - m_pos;
            m_pos = m_end;
        }
    } else if (begin > 0) {
        start = std::max(begin, last);
    }
    if (!positioned) seek(start);
    m_origin = start;
    m_limit = last > start ? last - start : 0;
    m_bytes = 0;
    m_line_no = 0;
}

std::uint64_t LineReader::file_line(std::uint64_t line) const {
    if (m_origin == 0) return line;
    if (!m_lines_before) {
        std::FILE* f = std::fopen(m_name.c_str(), "rb");
        if (!f) throw IoError(m_name + ": cannot open: " + std::strerror(errno));
        std::vector<char> buf(1 << 20);
        std::uint64_t left = m_origin, count = 0;
        while (left > 0) {
            const auto want = static_cast<std::size_t>(std::min<std::uint64_t>(left, buf.size()));
            const auto got = std::fread(buf.data(), 1, want, f);
            if (got == 0) break;
            count += static_cast<std::uint64_t>(std::count(buf.data(), buf.data() + got, m_eol));
            left -= got;
        }
        std::fclose(f);
        m_lines_before = count;
    }
    return *m_lines_before + line;
}

void split(std::string_view line, char sep, std::vector<std::string_view>& out) {
    out.clear();
    std::size_t start = 0;
    for (;;) {
        std::size_t p = line.find(sep, start);
        if (p == std::string_view::npos) {
            out.push_back(line.substr(start));
            return;
        }
        out.push_back(line.substr(start, p - start));
        start = p + 1;
    }
}

namespace {
inline bool is_ws(char c) noexcept {
    return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f';
}
}  // namespace

void split_ws(std::string_view line, std::vector<std::string_view>& out) {
    out.clear();
    std::size_t i = 0, n = line.size();
    while (i < n) {
        while (i < n && is_ws(line[i])) ++i;
        if (i >= n) break;
        std::size_t j = i;
        while (j < n && !is_ws(line[j])) ++j;
        out.push_back(line.substr(i, j - i));
        i = j;
    }
}

std::string_view trim(std::string_view s) noexcept {
    while (!s.empty() && is_ws(s.front())) s.remove_prefix(1);
    while (!s.empty() && is_ws(s.back())) s.remove_suffix(1);
    return s;
}

namespace {
std::atomic<unsigned> g_tmp_counter{0};
}

AtomicFile::AtomicFile(std::filesystem::path path) : m_path(std::move(path)) {
    m_tmp = m_path;
    m_tmp += ".tmp." + std::to_string(::getpid()) + "." + std::to_string(g_tmp_counter++);
    m_file = std::fopen(m_tmp.c_str(), "wb");
    if (!m_file) {
        throw IoError(m_path.string() + ": cannot create output: " + std::strerror(errno));
    }
    std::setvbuf(m_file, nullptr, _IOFBF, 1 << 20);
}

AtomicFile::~AtomicFile() {
    if (!m_done) {
        if (m_file) std::fclose(m_file);
        std::error_code ec;
        std::filesystem::remove(m_tmp, ec);
    }
}

void AtomicFile::write(std::string_view data) {
    if (!m_file) throw IoError(m_path.string() + ": write after commit");
    // stdio hands a request larger than its buffer to one write(2) of the whole size; a
    // multi-GiB buffer (an encoded corpus, a run file) then goes to the kernel in one call,
    // which is slow here and cannot be interrupted between slices. 8 MiB slices keep every
    // system call bounded.
    constexpr std::size_t slice = std::size_t{8} << 20;
    while (!data.empty()) {
        const std::size_t n = std::min(slice, data.size());
        if (std::fwrite(data.data(), 1, n, m_file) != n) {
            throw IoError(m_path.string() + ": write failed: " + std::strerror(errno));
        }
        data.remove_prefix(n);
    }
}

void AtomicFile::commit() {
    if (m_done) return;
    if (std::fflush(m_file) != 0 || ::fsync(::fileno(m_file)) != 0) {
        throw IoError(m_path.string() + ": flush failed: " + std::strerror(errno));
    }
    if (std::fclose(m_file) != 0) {
        m_file = nullptr;
        throw IoError(m_path.string() + ": close failed: " + std::strerror(errno));
    }
    m_file = nullptr;
    std::error_code ec;
    std::filesystem::rename(m_tmp, m_path, ec);
    if (ec) {
        std::filesystem::remove(m_tmp, ec);
        throw IoError(m_path.string() + ": cannot rename temporary file: " + ec.message());
    }
    m_done = true;
}

namespace {

/// The <pid> of "<name>.tmp-<pid>-<n>" / "<name>.tmp.<pid>.<n>", or -1.
long temp_owner(std::string_view entry, std::string_view name) {
    if (entry.size() <= name.size() + 5 || entry.substr(0, name.size()) != name) return -1;
    entry.remove_prefix(name.size());
    if (entry.substr(0, 4) != ".tmp") return -1;
    entry.remove_prefix(4);
    const char sep = entry.front();
    if (sep != '-' && sep != '.') return -1;
    entry.remove_prefix(1);
    long pid = 0;
    auto [end, ec] = std::from_chars(entry.data(), entry.data() + entry.size(), pid);
    if (ec != std::errc() || pid <= 0 || end == entry.data() + entry.size() || *end != sep) {
        return -1;
    }
    for (const char* p = end + 1; p < entry.data() + entry.size(); ++p) {
        if (*p < '0' || *p > '9') return -1;
    }
    return pid;
}

}  // namespace

std::vector<std::filesystem::path> remove_stale_temporaries(const std::filesystem::path& target) {
    std::vector<std::filesystem::path> removed;
    std::error_code ec;
    const auto abs = std::filesystem::absolute(target, ec).lexically_normal();
    if (ec) return removed;
    auto dir = abs.parent_path();
    std::string name = abs.filename().string();
    if (name.empty()) {  // "dir/" -> its name
        name = dir.filename().string();
        dir = dir.parent_path();
    }
    std::filesystem::directory_iterator it(dir, ec);
    if (ec) return removed;
    for (; it != std::filesystem::directory_iterator(); it.increment(ec)) {
        if (ec) break;
        const std::string entry = it->path().filename().string();
        const long pid = temp_owner(entry, name);
        if (pid <= 0 || pid == static_cast<long>(::getpid())) continue;
        if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;  // alive
        std::error_code rm;
        std::filesystem::remove_all(it->path(), rm);
        if (!rm) {
            removed.push_back(it->path());
            log(LogLevel::Warning, "removed " + it->path().string() + ", left behind by process " +
                                       std::to_string(pid) + " that no longer runs");
        }
    }
    return removed;
}

std::string read_file(const std::filesystem::path& path, std::size_t max_bytes) {
    std::error_code dir_ec;
    if (std::filesystem::is_directory(path, dir_ec)) {
        throw IoError(path.string() + ": is a directory, expected a file");
    }
    std::FILE* f = std::fopen(path.c_str(), "rb");
    if (!f) throw IoError(path.string() + ": cannot open: " + std::strerror(errno));
    std::string out;
    char buf[1 << 16];
    std::size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) {
        if (out.size() + n > max_bytes) {
            std::fclose(f);
            throw IoError(path.string() + ": larger than " + std::to_string(max_bytes) +
                          " bytes, too large for this kind of file");
        }
        out.append(buf, n);
    }
    bool err = std::ferror(f);
    std::fclose(f);
    if (err) throw IoError(path.string() + ": read error");
    return out;
}

}  // namespace plumb
