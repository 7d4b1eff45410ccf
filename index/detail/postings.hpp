#pragma once
/// \file detail/postings.hpp
/// INTERNAL: plumb's own postings file (postings.bin), written beside the Lucene index at build
/// time and read through a private mmap, so BM25 scoring decodes postings with a tight
/// non-virtual loop instead of Lucene++'s per-byte virtual readVInt.
///
/// Layout (little-endian), version 2 (written since the block-max metadata; version 1 is the
/// same without the block table, magic "PLPOST01" and no field at offset 24; both are read):
///
///     offset 0   char[8]  magic "PLPOST02"
///     offset 8   u64      term count T (equals the terms of terms.bin, same order)
///     offset 16  u64      table offset O
///     offset 24  u64      block table offset B (version 2 only)
///     offset 32  ...      per term, its postings in ascending document order:
///                           varint(delta << 1 | (tf == 1)), then varint(tf) if tf != 1
///                         (delta = doc - previous doc, the first delta is the doc itself;
///                          varint = 7 bits per byte, low group first, high bit = more)
///     offset O   u64[T+1] absolute start offset of each term's postings; [T] = O
///     O+8(T+1)   0..7 zero bytes, so that B is a multiple of 8
///     offset B   PostingsBlock[N]: per term (in order) one entry per kPostingsBlock postings,
///                ceil(df / kPostingsBlock) of them: the block's start offset, last document,
///                largest tf, smallest document length and BM25 bound (see PostingsBlock)
///     end        16 zero bytes (padding: a decoder may read a few bytes past a term's end)
///
/// A block's first delta is relative to the previous block's last document (the encoding is
/// the same as version 1's; the block table only indexes it), so a cursor can start decoding
/// at any block. The file may exceed 2 GiB (64-bit offsets; mapped whole with mmap). Its
/// presence and version are recorded in plumb-index.json ("postings": {"file", "version"});
/// indexes without it are searched through Lucene++ TermDocs. Structure is checked at open
/// (including every block entry: offsets and last documents strictly increasing within the
/// term, bounds finite and >= 0); each term's data is checked while it is decoded (document
/// numbers in range, exactly df postings, ending exactly at the next term's start; a decoded
/// block must end at the next block's offset on its recorded last document with no tf above
/// its recorded maximum): any violation is an IndexError.

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "plugin/error.hpp"

namespace plumb::index::detail {

inline constexpr const char* kPostingsFile = "postings.bin";
/// The version build_index writes (recorded in plumb-index.json); 1 is still read.
inline constexpr int kPostingsVersion = 2;
inline constexpr char kPostingsMagicV1[8] = {'P', 'L', 'P', 'O', 'S', 'T', '0', '1'};
inline constexpr char kPostingsMagic[8] = {'P', 'L', 'P', 'O', 'S', 'T', '0', '2'};
inline constexpr std::uint64_t kPostingsHeaderV1 = 24;
inline constexpr std::uint64_t kPostingsHeader = 32;
inline constexpr std::uint64_t kPostingsPadding = 16;
/// Postings per block of the block table (the last block of a term may hold fewer).
inline constexpr std::uint32_t kPostingsBlock = 128;

/// One entry of the block table (version 2), 24 bytes. `max_frac` is a true upper bound of
/// bm25_frac(tf, k1 + 1, bm25_norm(k1, b, dl, avgdl)) over the block's postings for the
/// default parameters the builder records ("bm25_bounds": k1 = 0.9, b = 0.4): the builder
/// computes each posting's factor with exactly the float arithmetic the searcher uses, takes
/// the maximum and rounds it up by one ulp. For other parameters, max_tf and min_dl bound the
/// factor (it grows with tf and falls with the length).
struct PostingsBlock {
    std::uint64_t offset = 0;    ///< absolute file offset of the block's first posting
    std::uint32_t last_doc = 0;  ///< document of the block's last posting
    std::uint32_t max_tf = 0;    ///< largest tf in the block
    std::uint32_t min_dl = 0;    ///< smallest document length in the block
    float max_frac = 0;          ///< upper bound of the BM25 tf factor, default k1/b
};
static_assert(sizeof(PostingsBlock) == 24);

/// Decodes the rest of a varint whose first byte `v` had its high bit set, from `p` (advanced)
/// but never at or past `end`. False for a varint that runs past `end` or past 35 bits: the
/// callers report corrupt postings. Shared by the sequential reader and the block cursor.
inline bool varint_tail(std::uint64_t& v, const std::uint8_t*& p, const std::uint8_t* end) {
    v &= 0x7F;
    for (unsigned shift = 7; shift <= 35; shift += 7) {
        if (p >= end) return false;
        const std::uint64_t b = *p++;
        v |= (b & 0x7F) << shift;
        if (!(b & 0x80)) return true;
    }
    return false;
}

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
    /// `df` postings from `begin` to exactly `end`; `start_doc`: the document the first delta
    /// is relative to (0 at a term's start; the previous block's last document when starting
    /// at a block of the block table).
    PostingsReader(const std::uint8_t* begin, const std::uint8_t* end, std::uint32_t df,
                   std::uint32_t n_docs, const std::filesystem::path* file,
                   std::uint32_t start_doc = 0)
        : m_p(begin), m_end(end), m_left(df), m_doc(start_doc), m_n(n_docs), m_file(file) {}

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
            if ((v & 0x80) && !varint_tail(v, p, m_end)) corrupt();
            std::uint32_t tf = 1;
            if (!(v & 1)) {
                if (p >= m_end) corrupt();
                std::uint64_t t = *p++;
                if ((t & 0x80) && !varint_tail(t, p, m_end)) corrupt();
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

/// The mapped postings file (version 1 or 2).
class PostingsFile {
public:
    PostingsFile() = default;
    PostingsFile(const PostingsFile&) = delete;
    PostingsFile& operator=(const PostingsFile&) = delete;
    ~PostingsFile() {
        if (m_map) ::munmap(m_map, m_size);
    }

    bool loaded() const noexcept { return m_map != nullptr; }
    /// 1 or 2; 0 when not loaded.
    int version() const noexcept { return m_version; }
    /// True for version 2 (block-max metadata).
    bool has_blocks() const noexcept { return m_version >= 2; }

    /// Maps `p` as postings file `version` (1 or 2, as recorded in the metadata) and checks its
    /// structure against the terms' document frequencies (terms.bin order).
    void open(const std::filesystem::path& p, int version, std::span<const std::uint32_t> dfs,
              std::uint32_t n_docs) {
        if (version != 1 && version != 2) {
            throw IndexError("unsupported postings version " + std::to_string(version) + " of " +
                             p.string());
        }
        m_path = p;
        m_docs = n_docs;
        const std::uint64_t header = version == 1 ? kPostingsHeaderV1 : kPostingsHeader;
        const std::uint64_t terms = dfs.size();
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
        if (m_size < header + 8 + kPostingsPadding) {
            ::close(fd);
            throw IndexError("truncated postings file " + p.string());
        }
        void* m = ::mmap(nullptr, m_size, PROT_READ, MAP_SHARED, fd, 0);
        ::close(fd);
        if (m == MAP_FAILED)
            throw IoError("cannot map " + p.string() + ": " + std::strerror(errno));
        m_map = m;
        m_base = static_cast<const std::uint8_t*>(m);
        ::madvise(m, m_size, MADV_WILLNEED);
        std::uint64_t count = 0, table = 0, blocks = 0;
        std::memcpy(&count, m_base + 8, 8);
        std::memcpy(&table, m_base + 16, 8);
        if (version == 2) std::memcpy(&blocks, m_base + 24, 8);
        if (std::memcmp(m_base, version == 1 ? kPostingsMagicV1 : kPostingsMagic, 8) != 0) {
            throw IndexError("bad postings file " + p.string() + " (not version " +
                             std::to_string(version) + " as the metadata says)");
        }
        if (count != terms) throw IndexError("term count mismatch in " + p.string());
        // Block table: ceil(df / kPostingsBlock) entries per term.
        std::uint64_t n_blocks = 0;
        if (version == 2) {
            m_block_start.assign(terms + 1, 0);
            for (std::uint64_t i = 0; i < terms; ++i) {
                m_block_start[i] = n_blocks;
                n_blocks += (std::uint64_t{dfs[i]} + kPostingsBlock - 1) / kPostingsBlock;
            }
            m_block_start[terms] = n_blocks;
        }
        const std::uint64_t table_end = table + 8 * (count + 1);  // (checked below)
        bool ok = table >= header && table <= m_size && (m_size - table) / 8 >= count + 1;
        if (ok && version == 1) ok = m_size - table == 8 * (count + 1) + kPostingsPadding;
        if (ok && version == 2) {
            ok = blocks >= table_end && blocks - table_end < 8 && blocks % 8 == 0 &&
                 blocks <= m_size && (m_size - blocks) / sizeof(PostingsBlock) >= n_blocks &&
                 m_size - blocks == n_blocks * sizeof(PostingsBlock) + kPostingsPadding;
        }
        if (!ok) throw IndexError("truncated or corrupt postings file " + p.string());
        m_count = count;
        m_table = table;
        std::uint64_t prev = header;
        for (std::uint64_t i = 0; i <= count; ++i) {
            std::uint64_t off = offset(i);
            if (off < prev || off > table || (i == 0 && off != header) ||
                (i == count && off != table)) {
                throw IndexError("corrupt postings table in " + p.string());
            }
            prev = off;
        }
        if (version == 2) {
            m_blocks = reinterpret_cast<const PostingsBlock*>(m_base + blocks);
            for (std::uint64_t i = 0; i < count; ++i) check_blocks(i);
        }
        m_version = version;
    }

    /// Reader over term `ordinal` (terms.bin order) with `df` postings.
    PostingsReader reader(std::uint64_t ordinal, std::int32_t df) const {
        return PostingsReader(m_base + offset(ordinal), m_base + offset(ordinal + 1),
                              static_cast<std::uint32_t>(df), m_docs, &m_path);
    }

    /// Reader over blocks [first, last] of term `ordinal` (version 2; df postings in all; the
    /// blocks must exist): the postings from block `first`'s start to block `last`'s end.
    PostingsReader block_reader(std::uint64_t ordinal, std::uint32_t df, std::size_t first,
                                std::size_t last) const {
        const auto b = blocks(ordinal);
        const std::uint64_t end = last + 1 < b.size() ? b[last + 1].offset : term_end(ordinal);
        const std::uint64_t to =
            std::min<std::uint64_t>(df, (last + 1) * std::uint64_t{kPostingsBlock});
        return PostingsReader(m_base + b[first].offset, m_base + end,
                              static_cast<std::uint32_t>(to - first * kPostingsBlock), m_docs,
                              &m_path, first ? b[first - 1].last_doc : 0);
    }

    /// The block entries of term `ordinal` (version 2; empty for version 1).
    std::span<const PostingsBlock> blocks(std::uint64_t ordinal) const {
        if (!m_blocks) return {};
        return {m_blocks + m_block_start[ordinal],
                static_cast<std::size_t>(m_block_start[ordinal + 1] - m_block_start[ordinal])};
    }
    const std::uint8_t* base() const noexcept { return m_base; }
    /// Absolute offset of the end of term `ordinal`'s postings.
    std::uint64_t term_end(std::uint64_t ordinal) const { return offset(ordinal + 1); }
    std::uint32_t documents() const noexcept { return m_docs; }
    const std::filesystem::path& path() const noexcept { return m_path; }
    std::uint64_t size_bytes() const noexcept { return m_size; }

private:
    std::uint64_t offset(std::uint64_t i) const {
        std::uint64_t v;
        std::memcpy(&v, m_base + m_table + 8 * i, 8);
        return v;
    }
    /// Structure of term i's block entries (their contents are checked while decoding).
    void check_blocks(std::uint64_t i) const {
        const std::uint64_t begin = offset(i), end = offset(i + 1);
        const PostingsBlock* b = m_blocks + m_block_start[i];
        const std::uint64_t n = m_block_start[i + 1] - m_block_start[i];
        for (std::uint64_t j = 0; j < n; ++j) {
            const PostingsBlock& e = b[j];
            const bool ok =
                (j == 0 ? e.offset == begin
                        : e.offset > b[j - 1].offset && e.last_doc > b[j - 1].last_doc) &&
                e.offset < end && e.last_doc < m_docs && e.max_tf >= 1 && e.max_frac >= 0.0f &&
                std::isfinite(e.max_frac);
            if (!ok) throw IndexError("corrupt postings block table in " + m_path.string());
        }
    }

    std::filesystem::path m_path;
    void* m_map = nullptr;
    std::size_t m_size = 0;
    const std::uint8_t* m_base = nullptr;
    std::uint64_t m_count = 0;
    std::uint64_t m_table = 0;
    std::uint32_t m_docs = 0;
    int m_version = 0;
    const PostingsBlock* m_blocks = nullptr;
    std::vector<std::uint64_t> m_block_start;  ///< T + 1 indexes into m_blocks
};

}  // namespace plumb::index::detail
