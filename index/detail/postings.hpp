#pragma once
/// \file detail/postings.hpp
/// INTERNAL: plumb's own postings file (postings.bin), written beside the Lucene index at build
/// time and read through a private mmap, so exhaustive BM25 scoring decodes postings with a
/// tight non-virtual loop instead of Lucene++'s per-byte virtual readVInt.
///
/// Layout (little-endian), version 1:
///
///     offset 0   char[8]  magic "PLPOST01"
///     offset 8   u64      term count T (equals the terms of terms.bin, same order)
///     offset 16  u64      table offset O
///     offset 24  ...      per term, its postings in ascending document order:
///                           varint(delta << 1 | (tf == 1)), then varint(tf) if tf != 1
///                         (delta = doc - previous doc, the first delta is the doc itself;
///                          varint = 7 bits per byte, low group first, high bit = more)
///     offset O   u64[T+1] absolute start offset of each term's postings; [T] = O
///     O+8(T+1)   16 zero bytes (padding: a decoder may read a few bytes past a term's end)
///
/// The file may exceed 2 GiB (64-bit offsets; mapped whole with mmap). Its presence is recorded
/// in plumb-index.json ("postings": {"file", "version"}); indexes without it are searched
/// through Lucene++ TermDocs. Structure is checked at open; each term's data is checked while it
/// is decoded (document numbers in range, exactly df postings, ending exactly at the next
/// term's start): any violation is an IndexError.

#include <sys/mman.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>

#include "plugin/error.hpp"

namespace plumb::index::detail {

inline constexpr const char* kPostingsFile = "postings.bin";
inline constexpr int kPostingsVersion = 1;
inline constexpr char kPostingsMagic[8] = {'P', 'L', 'P', 'O', 'S', 'T', '0', '1'};
inline constexpr std::uint64_t kPostingsHeader = 24;
inline constexpr std::uint64_t kPostingsPadding = 16;

/// Appends one varint.
inline void put_varint(std::string& out, std::uint64_t v) {
    while (v >= 0x80) {
        out.push_back(static_cast<char>((v & 0x7F) | 0x80));
        v >>= 7;
    }
    out.push_back(static_cast<char>(v));
}

/// Encodes a term's postings incrementally (see the layout above).
struct PostingsEncoder {
    std::string buf;
    std::uint32_t prev = 0;
    void clear() {
        buf.clear();
        prev = 0;
    }
    void add(std::uint32_t doc, std::uint32_t tf) {
        std::uint64_t delta = doc - prev;
        prev = doc;
        put_varint(buf, (delta << 1) | (tf == 1 ? 1u : 0u));
        if (tf != 1) put_varint(buf, tf);
    }
};

/// Sequential decoder of one term's postings. Decodes in blocks into caller buffers.
class PostingsReader {
public:
    PostingsReader() = default;
    PostingsReader(const std::uint8_t* begin, const std::uint8_t* end, std::uint32_t df,
                   std::uint32_t n_docs, const std::filesystem::path* file)
        : m_p(begin), m_end(end), m_left(df), m_n(n_docs), m_file(file) {}

    /// Decodes up to `max` postings; returns how many (0 at the end).
    std::int32_t read(std::int32_t* docs, std::int32_t* freqs, std::int32_t max) {
        const std::uint8_t* p = m_p;
        std::uint64_t doc = m_doc;
        std::int32_t n = 0;
        const std::int32_t want =
            static_cast<std::int32_t>(m_left < static_cast<std::uint32_t>(max) ? m_left : max);
        for (; n < want; ++n) {
            if (p >= m_end) corrupt();
            std::uint64_t v = *p++;
            if (v & 0x80) v = slow(v, p);
            std::uint32_t tf = 1;
            if (!(v & 1)) {
                std::uint64_t t = *p++;
                if (t & 0x80) t = slow(t, p);
                if (t == 0 || t > 0x7FFFFFFFu) corrupt();
                tf = static_cast<std::uint32_t>(t);
            }
            doc += v >> 1;
            if (doc >= m_n) corrupt();
            docs[n] = static_cast<std::int32_t>(doc);
            freqs[n] = static_cast<std::int32_t>(tf);
        }
        m_left -= static_cast<std::uint32_t>(n);
        m_p = p;
        m_doc = doc;
        if (m_left == 0 && m_p != m_end) corrupt();
        return n;
    }

private:
    /// Rest of a multi-byte varint whose first byte was `first`.
    std::uint64_t slow(std::uint64_t first, const std::uint8_t*& p) const {
        std::uint64_t v = first & 0x7F;
        for (unsigned shift = 7;; shift += 7) {
            if (shift > 35) corrupt();
            std::uint64_t b = *p++;
            v |= (b & 0x7F) << shift;
            if (!(b & 0x80)) return v;
        }
    }
    [[noreturn]] void corrupt() const {
        throw IndexError("corrupt postings in " + (m_file ? m_file->string() : kPostingsFile));
    }

    const std::uint8_t* m_p = nullptr;
    const std::uint8_t* m_end = nullptr;
    std::uint32_t m_left = 0;
    std::uint64_t m_doc = 0;
    std::uint32_t m_n = 0;
    const std::filesystem::path* m_file = nullptr;
};

/// The mapped postings file.
class PostingsFile {
public:
    PostingsFile() = default;
    PostingsFile(const PostingsFile&) = delete;
    PostingsFile& operator=(const PostingsFile&) = delete;
    ~PostingsFile() {
        if (m_map) ::munmap(m_map, m_size);
    }

    bool loaded() const noexcept { return m_map != nullptr; }

    /// Maps `p` and checks its structure against the expected term count.
    void open(const std::filesystem::path& p, std::uint64_t terms, std::uint32_t n_docs) {
        m_path = p;
        m_docs = n_docs;
        int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
            throw IndexError("index file missing: " + p.string() + ": " + std::strerror(errno));
        }
        off_t size = ::lseek(fd, 0, SEEK_END);
        if (size < 0) {
            ::close(fd);
            throw IoError("cannot read " + p.string());
        }
        m_size = static_cast<std::size_t>(size);
        if (m_size < kPostingsHeader + 8 + kPostingsPadding) {
            ::close(fd);
            throw IndexError("truncated postings file " + p.string());
        }
        void* m = ::mmap(nullptr, m_size, PROT_READ, MAP_SHARED, fd, 0);
        ::close(fd);
        if (m == MAP_FAILED) throw IoError("cannot map " + p.string() + ": " + std::strerror(errno));
        m_map = m;
        m_base = static_cast<const std::uint8_t*>(m);
        ::madvise(m, m_size, MADV_WILLNEED);
        std::uint64_t count = 0, table = 0;
        std::memcpy(&count, m_base + 8, 8);
        std::memcpy(&table, m_base + 16, 8);
        if (std::memcmp(m_base, kPostingsMagic, 8) != 0) {
            throw IndexError("bad postings file " + p.string());
        }
        if (count != terms) throw IndexError("term count mismatch in " + p.string());
        if (table < kPostingsHeader || table > m_size ||
            (m_size - table) / 8 < count + 1 ||
            m_size - table != 8 * (count + 1) + kPostingsPadding) {
            throw IndexError("truncated or corrupt postings file " + p.string());
        }
        m_count = count;
        m_table = table;
        std::uint64_t prev = kPostingsHeader;
        for (std::uint64_t i = 0; i <= count; ++i) {
            std::uint64_t off = offset(i);
            if (off < prev || off > table || (i == 0 && off != kPostingsHeader) ||
                (i == count && off != table)) {
                throw IndexError("corrupt postings table in " + p.string());
            }
            prev = off;
        }
    }

    /// Reader over term `ordinal` (terms.bin order) with `df` postings.
    PostingsReader reader(std::uint64_t ordinal, std::int32_t df) const {
        return PostingsReader(m_base + offset(ordinal), m_base + offset(ordinal + 1),
                              static_cast<std::uint32_t>(df), m_docs, &m_path);
    }

    std::uint64_t size_bytes() const noexcept { return m_size; }

private:
    std::uint64_t offset(std::uint64_t i) const {
        std::uint64_t v;
        std::memcpy(&v, m_base + m_table + 8 * i, 8);
        return v;
    }

    std::filesystem::path m_path;
    void* m_map = nullptr;
    std::size_t m_size = 0;
    const std::uint8_t* m_base = nullptr;
    std::uint64_t m_count = 0;
    std::uint64_t m_table = 0;
    std::uint32_t m_docs = 0;
};

}  // namespace plumb::index::detail
