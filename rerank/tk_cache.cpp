#include "rerank/tk_cache.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <numeric>

#include "plugin/error.hpp"
#include "plugin/hash.hpp"
#include "plugin/text_io.hpp"
#include "rerank/detail/tk_cache_kernels.hpp"

namespace plumb::rerank {

namespace {

constexpr char kMagic[8] = {'P', 'L', 'U', 'M', 'B', 'T', 'K', 'C'};
constexpr char kPartialMagic[8] = {'P', 'L', 'T', 'K', 'P', 'A', 'R', 'T'};
constexpr std::uint32_t kPartialVersion = 1;
constexpr std::uint32_t kFp16 = 1;
constexpr std::uint32_t kInt8 = 2;
constexpr std::uint64_t kHeaderSize = 128;
constexpr std::uint64_t kEntrySize = 32;
constexpr std::uint64_t kPartialHeaderSize = 32;
constexpr std::uint64_t kRecordHeaderSize = 16;

template <class T>
T load(const unsigned char* p) {
    T v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

template <class T>
void put(std::string& s, T v) {
    s.append(reinterpret_cast<const char*>(&v), sizeof v);
}

std::string hex16(std::uint64_t v) { return fmt::format("{:016x}", v); }

void write_all(std::FILE* f, const void* data, std::size_t n, const std::filesystem::path& p) {
    if (n && std::fwrite(data, 1, n, f) != n) {
        throw IoError(p.string() + ": write failed: " + std::strerror(errno));
    }
}

}  // namespace

const char* tk_cache_precision_name(TkCachePrecision p) noexcept {
    return p == TkCachePrecision::Int8 ? "int8" : "fp16";
}

TkCachePrecision parse_tk_cache_precision(std::string_view name) {
    if (name == "fp16") return TkCachePrecision::Fp16;
    if (name == "int8") return TkCachePrecision::Int8;
    throw ConfigError("unknown TK cache precision '" + std::string(name) +
                      "' (known: fp16, int8)");
}

void tk_quantize_rows(std::span<const float> rows, std::size_t dim, std::int8_t* values,
                      float* scales) {
    const std::size_t n = dim ? rows.size() / dim : 0;
    for (std::size_t r = 0; r < n; ++r) {
        const float* x = rows.data() + r * dim;
        float m = 0.0f;
        for (std::size_t d = 0; d < dim; ++d) m = std::max(m, std::abs(x[d]));
        const float scale = m / 127.0f;
        scales[r] = scale;
        std::int8_t* q = values + r * dim;
        if (scale == 0.0f || !std::isfinite(scale)) {
            std::fill_n(q, dim, std::int8_t{0});
            scales[r] = std::isfinite(scale) ? scale : 0.0f;
            continue;
        }
        for (std::size_t d = 0; d < dim; ++d) {
            const float v = std::nearbyint(x[d] / scale);
            q[d] = static_cast<std::int8_t>(std::clamp(v, -127.0f, 127.0f));
        }
    }
}

std::filesystem::path tk_cache_default_path(const std::filesystem::path& model_dir,
                                            std::uint64_t model_checksum) {
    return model_dir / ("passage-cache-" + hex16(model_checksum) + ".plumbtkc");
}

std::uint64_t tk_text_hash(std::string_view text) noexcept {
    std::uint64_t h = splitmix64(text.size());
    std::size_t i = 0;
    for (; i + 8 <= text.size(); i += 8) {
        std::uint64_t w;
        std::memcpy(&w, text.data() + i, 8);
        h = splitmix64(h ^ w);
    }
    if (i < text.size()) {
        std::uint64_t w = 0;
        std::memcpy(&w, text.data() + i, text.size() - i);
        h = splitmix64(h ^ w);
    }
    return h;
}

// ---------------------------------------------------------------------------------------------
// Reader

std::shared_ptr<const TkPassageCache> TkPassageCache::open(const std::filesystem::path& file) {
    const std::string name = file.string();
    const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw IoError("cannot open TK passage cache " + name + ": " + std::strerror(errno));
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
        const int e = errno;
        ::close(fd);
        throw IoError("cannot stat " + name + ": " + std::strerror(e));
    }
    const auto size = static_cast<std::uint64_t>(st.st_size);
    if (size < kHeaderSize) {
        ::close(fd);
        throw IndexError("truncated TK passage cache " + name + ": " + std::to_string(size) +
                         " bytes, less than its 128-byte header");
    }
    void* m = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
    ::close(fd);
    if (m == MAP_FAILED) throw IoError("cannot map " + name + ": " + std::strerror(errno));
    std::shared_ptr<TkPassageCache> c(new TkPassageCache());
    c->m_path = file;
    c->m_map = m;
    c->m_size = size;
    const auto* b = static_cast<const unsigned char*>(m);
    auto bad = [&](const std::string& what) { throw IndexError(name + ": " + what); };
    if (std::memcmp(b, kMagic, 8) != 0) bad("not a TK passage cache (bad magic)");
    const auto version = load<std::uint32_t>(b + 8);
    if (version < 1 || version > kTkCacheVersion) {
        bad("unsupported TK passage cache version " + std::to_string(version) +
            " (this build reads versions 1 to " + std::to_string(kTkCacheVersion) + ")");
    }
    c->m_version = version;
    const auto type = load<std::uint32_t>(b + 12);
    if (type == kInt8 && version >= 2) {
        c->m_precision = TkCachePrecision::Int8;
    } else if (type != kFp16) {
        bad("unknown value type " + std::to_string(type) + " for version " +
            std::to_string(version) + " (1 = fp16; 2 = int8 from version 2)");
    }
    const bool int8 = c->m_precision == TkCachePrecision::Int8;
    c->m_dim = load<std::uint32_t>(b + 16);
    if (c->m_dim == 0) bad("dimension 0");
    if (load<std::uint32_t>(b + 20) != kHeaderSize) bad("header size is not 128");
    c->m_count = load<std::uint64_t>(b + 24);
    c->m_rows = load<std::uint64_t>(b + 32);
    c->m_checksum = load<std::uint64_t>(b + 40);
    const auto table = load<std::uint64_t>(b + 48);
    const auto ids = load<std::uint64_t>(b + 56);
    const auto ids_size = load<std::uint64_t>(b + 64);
    const auto vectors = load<std::uint64_t>(b + 72);
    const auto file_size = load<std::uint64_t>(b + 80);
    const auto scales = load<std::uint64_t>(b + 88);
    if (file_size != size) {
        bad(size < file_size ? "truncated: the header says " + std::to_string(file_size) +
                                   " bytes, the file has " + std::to_string(size)
                             : "the header says " + std::to_string(file_size) +
                                   " bytes, the file has " + std::to_string(size) +
                                   " (trailing data)");
    }
    // Layout: T = 128 <= T + 32N <= I <= I + ids_size <= V, V + bDR = size (no overflow), b = 2
    // (fp16) or 1 (int8, with I + ids_size <= S, S + 4R <= V).
    const auto limit = size;
    const std::uint64_t value_bytes = int8 ? 1 : 2;
    const std::uint64_t before_vectors = int8 ? scales : ids + ids_size;
    if (table != kHeaderSize || c->m_count > limit / kEntrySize ||
        table + c->m_count * kEntrySize > ids || ids > limit || ids_size > limit - ids ||
        ids + ids_size > before_vectors || vectors % 64 != 0 || vectors > limit ||
        c->m_rows > (limit - vectors) / (value_bytes * c->m_dim) ||
        vectors + c->m_rows * value_bytes * c->m_dim != size ||
        (int8 && (scales % 64 != 0 || scales > vectors || c->m_rows > (vectors - scales) / 4)) ||
        (!int8 && scales != 0)) {
        bad("inconsistent layout (table, docid, scale or vector offsets do not fit the file)");
    }
    c->m_table = b + table;
    c->m_ids = reinterpret_cast<const char*>(b + ids);
    if (int8) {
        c->m_vectors_int8 = reinterpret_cast<const std::int8_t*>(b + vectors);
        c->m_scales = reinterpret_cast<const float*>(b + scales);
    } else {
        c->m_vectors = reinterpret_cast<const std::uint16_t*>(b + vectors);
    }
    std::string_view previous;
    for (std::uint64_t i = 0; i < c->m_count; ++i) {
        const unsigned char* e = c->m_table + i * kEntrySize;
        const auto off = load<std::uint64_t>(e);
        const auto len = load<std::uint32_t>(e + 8);
        const auto length = load<std::uint32_t>(e + 12);
        const auto first = load<std::uint64_t>(e + 16);
        if (off > ids_size || len > ids_size - off || first > c->m_rows ||
            length > c->m_rows - first) {
            bad("table entry " + std::to_string(i) + " points outside the file");
        }
        std::string_view id(c->m_ids + off, len);
        if (i > 0 && !(previous < id)) {
            bad("docids not strictly sorted at table entry " + std::to_string(i) + " ('" +
                std::string(id) + "')");
        }
        previous = id;
    }
    // No MADV_RANDOM: a passage's rows are read in order, and the kernel's fault-around maps
    // neighbouring cached pages with each fault.
    return c;
}

TkPassageCache::~TkPassageCache() {
    if (m_map) ::munmap(m_map, m_size);
}

std::optional<TkPassageCache::Entry> TkPassageCache::find(std::string_view docid) const {
    std::uint64_t lo = 0, hi = m_count;
    while (lo < hi) {
        const std::uint64_t mid = lo + (hi - lo) / 2;
        const unsigned char* e = m_table + mid * kEntrySize;
        std::string_view id(m_ids + load<std::uint64_t>(e), load<std::uint32_t>(e + 8));
        const int c = id.compare(docid);
        if (c == 0) {
            Entry out;
            out.passage.length = load<std::uint32_t>(e + 12);
            const auto first = load<std::uint64_t>(e + 16);
            if (m_precision == TkCachePrecision::Int8) {
                out.passage.rows_int8 = m_vectors_int8 + first * m_dim;
                out.passage.scales = m_scales + first;
            } else {
                out.passage.rows = m_vectors + first * m_dim;
            }
            out.text_hash = load<std::uint64_t>(e + 24);
            return out;
        }
        if (c < 0) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return std::nullopt;
}

// ---------------------------------------------------------------------------------------------
// Writer

std::filesystem::path TkCacheWriter::partial_path() const {
    auto p = m_output;
    p += ".partial";
    return p;
}

std::uint64_t TkCacheWriter::row_bytes() const noexcept {
    return m_precision == TkCachePrecision::Int8 ? m_dim + 4ull : 2ull * m_dim;
}

TkCacheWriter::TkCacheWriter(std::filesystem::path output, std::uint32_t dim,
                             std::uint64_t model_checksum, TkCachePrecision precision)
    : m_output(std::move(output)), m_dim(dim), m_checksum(model_checksum),
      m_precision(precision) {
    if (dim == 0) throw InvalidArgument("TK cache: dimension 0");
    remove_stale_temporaries(m_output);
    const auto part = partial_path();
    const std::string name = part.string();
    // Opened without truncation and locked before anything is read or written.
    const int fd = ::open(part.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) throw IoError("cannot open " + name + ": " + std::strerror(errno));
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
        const int e = errno;
        ::close(fd);
        throw IoError(name + ": " +
                      (e == EWOULDBLOCK ? std::string("another run is writing this cache")
                                        : std::string("cannot lock: ") + std::strerror(e)));
    }
    m_file = ::fdopen(fd, "r+b");
    if (!m_file) {
        const int e = errno;
        ::close(fd);
        throw IoError("cannot open " + name + ": " + std::strerror(e));
    }
    // A constructor that throws runs no destructor: close (and unlock) here then.
    struct CloseOnThrow {
        std::FILE*& f;
        bool armed = true;
        ~CloseOnThrow() {
            if (armed && f) {
                std::fclose(f);
                f = nullptr;
            }
        }
    } guard{m_file};
    std::setvbuf(m_file, nullptr, _IOFBF, 1 << 20);
    struct stat st {};
    if (::fstat(fd, &st) != 0) throw IoError("cannot stat " + name + ": " + std::strerror(errno));
    const auto size = static_cast<std::uint64_t>(st.st_size);
    unsigned char h[kPartialHeaderSize] = {};
    const std::size_t got = std::fread(h, 1, kPartialHeaderSize, m_file);
    if (std::memcmp(h, kPartialMagic, std::min<std::size_t>(got, 8)) != 0) {
        throw IndexError(name + ": not a partial TK passage cache (remove it to start over)");
    }
    if (size < kPartialHeaderSize) {
        // New, or its header was torn by a kill right after creation: start over.
        if (::ftruncate(fd, 0) != 0 || std::fseek(m_file, 0, SEEK_SET) != 0) {
            throw IoError("cannot truncate " + name + ": " + std::strerror(errno));
        }
        std::string head(kPartialMagic, 8);
        put<std::uint32_t>(head, kPartialVersion);
        put<std::uint32_t>(head, dim);
        put<std::uint64_t>(head, model_checksum);
        put<std::uint32_t>(head, precision == TkCachePrecision::Int8 ? kInt8 : 0);
        put<std::uint32_t>(head, 0);
        write_all(m_file, head.data(), head.size(), part);
        m_end = kPartialHeaderSize;
        checkpoint();
        guard.armed = false;
        return;
    }
    {
        const auto version = load<std::uint32_t>(h + 8);
        if (version != kPartialVersion) {
            throw IndexError(name + ": unsupported partial cache version " +
                             std::to_string(version));
        }
        if (load<std::uint32_t>(h + 12) != dim || load<std::uint64_t>(h + 16) != model_checksum) {
            throw IndexError(name + ": partial cache of another model (dimension " +
                             std::to_string(load<std::uint32_t>(h + 12)) + ", checksum " +
                             hex16(load<std::uint64_t>(h + 16)) + "; this model: " +
                             std::to_string(dim) + ", " + hex16(model_checksum) +
                             "): remove it to start over");
        }
        const auto type = load<std::uint32_t>(h + 24);
        const std::uint32_t want = precision == TkCachePrecision::Int8 ? kInt8 : 0;
        if (type != want) {
            throw IndexError(name + ": partial cache of another precision (" +
                             std::string(type == kInt8 ? "int8" : type == 0 ? "fp16" : "unknown") +
                             "; this run: " + tk_cache_precision_name(precision) +
                             "): remove it to start over");
        }
        // Whole records; an incomplete last one (an interrupted run) is cut off.
        std::uint64_t pos = kPartialHeaderSize;
        const std::uint64_t row_bytes = this->row_bytes();
        while (pos + kRecordHeaderSize <= size) {
            unsigned char r[kRecordHeaderSize];
            if (std::fseek(m_file, static_cast<long>(pos), SEEK_SET) != 0 ||
                std::fread(r, 1, kRecordHeaderSize, m_file) != kRecordHeaderSize) {
                break;
            }
            const auto id_len = load<std::uint32_t>(r);
            const auto length = load<std::uint32_t>(r + 4);
            const std::uint64_t end = pos + kRecordHeaderSize + id_len + length * row_bytes;
            if (end > size) break;
            std::string id(id_len, '\0');
            if (id_len && std::fread(id.data(), 1, id_len, m_file) != id_len) break;
            m_recs.push_back({length, load<std::uint64_t>(r + 8), pos + kRecordHeaderSize + id_len});
            m_ids.push_back(std::move(id));
            pos = end;
        }
        m_end = pos;
        if (pos != size) {
            std::fflush(m_file);
            if (::ftruncate(::fileno(m_file), static_cast<off_t>(pos)) != 0) {
                throw IoError("cannot truncate " + name + ": " + std::strerror(errno));
            }
        }
        if (std::fseek(m_file, static_cast<long>(pos), SEEK_SET) != 0) {
            throw IoError("cannot seek in " + name + ": " + std::strerror(errno));
        }
    }
    guard.armed = false;
}

TkCacheWriter::~TkCacheWriter() {
    if (m_file) std::fclose(m_file);
}

void TkCacheWriter::append(std::string_view docid, std::uint64_t text_hash,
                           std::span<const std::uint16_t> rows) {
    if (m_precision != TkCachePrecision::Fp16) {
        throw InvalidArgument("TK cache: fp16 rows appended to an int8 cache");
    }
    if (rows.size() % m_dim != 0) {
        throw InvalidArgument("TK cache: " + std::to_string(rows.size()) +
                              " values are not whole rows of " + std::to_string(m_dim));
    }
    append_record(docid, text_hash, rows.size() / m_dim, rows.data(), rows.size() * 2);
}

void TkCacheWriter::append_rows(std::string_view docid, std::uint64_t text_hash,
                                std::span<const float> rows) {
    if (rows.size() % m_dim != 0) {
        throw InvalidArgument("TK cache: " + std::to_string(rows.size()) +
                              " values are not whole rows of " + std::to_string(m_dim));
    }
    const std::size_t n = rows.size() / m_dim;
    if (m_precision == TkCachePrecision::Fp16) {
        std::vector<std::uint16_t> half(rows.size());
        detail::fp32_to_fp16(rows.data(), half.data(), rows.size());
        append(docid, text_hash, half);
        return;
    }
    // Record data: n f32 scales, then n x D int8 values.
    std::vector<unsigned char> data(n * 4 + rows.size());
    std::vector<float> scales(n);
    tk_quantize_rows(rows, m_dim, reinterpret_cast<std::int8_t*>(data.data() + n * 4),
                     scales.data());
    if (n) std::memcpy(data.data(), scales.data(), n * 4);
    append_record(docid, text_hash, n, data.data(), data.size());
}

void TkCacheWriter::append_record(std::string_view docid, std::uint64_t text_hash,
                                  std::size_t length, const void* data, std::size_t bytes) {
    if (!m_file) throw InvalidArgument("TK cache writer: append after finish");
    if (docid.size() > 0xFFFFFFFFull || length > 0xFFFFFFFFull) {
        throw InvalidArgument("TK cache: docid or passage too long");
    }
    std::string h;
    put<std::uint32_t>(h, static_cast<std::uint32_t>(docid.size()));
    put<std::uint32_t>(h, static_cast<std::uint32_t>(length));
    put<std::uint64_t>(h, text_hash);
    h.append(docid);
    const auto part = partial_path();
    write_all(m_file, h.data(), h.size(), part);
    write_all(m_file, data, bytes, part);
    m_recs.push_back({static_cast<std::uint32_t>(length), text_hash, m_end + h.size()});
    m_ids.emplace_back(docid);
    m_end += h.size() + bytes;
}

void TkCacheWriter::checkpoint() {
    if (!m_file) return;
    if (std::fflush(m_file) != 0 || ::fsync(::fileno(m_file)) != 0) {
        throw IoError(partial_path().string() + ": flush failed: " + std::strerror(errno));
    }
}

void TkCacheWriter::finish() {
    if (!m_file) throw InvalidArgument("TK cache writer: finished twice");
    checkpoint();
    const std::size_t n = m_recs.size();
    std::vector<std::size_t> order(n);
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::sort(order.begin(), order.end(),
              [&](std::size_t a, std::size_t b) { return m_ids[a] < m_ids[b]; });
    for (std::size_t i = 1; i < n; ++i) {
        if (m_ids[order[i]] == m_ids[order[i - 1]]) {
            throw IndexError("TK cache " + m_output.string() + ": docid '" + m_ids[order[i]] +
                             "' occurs twice in the collection");
        }
    }
    // Rows in collection order; the table in docid order.
    std::vector<std::uint64_t> first_row(n), id_offset(n);
    std::uint64_t rows = 0, ids_size = 0;
    for (std::size_t i = 0; i < n; ++i) {
        first_row[i] = rows;
        rows += m_recs[i].length;
        id_offset[i] = ids_size;
        ids_size += m_ids[i].size();
    }
    const bool int8 = m_precision == TkCachePrecision::Int8;
    auto round64 = [](std::uint64_t v) { return (v + 63) / 64 * 64; };
    const std::uint64_t ids = kHeaderSize + n * kEntrySize;
    const std::uint64_t scales = int8 ? round64(ids + ids_size) : 0;
    const std::uint64_t vectors = int8 ? round64(scales + rows * 4) : round64(ids + ids_size);
    const std::uint64_t file_size = vectors + rows * (int8 ? 1ull : 2ull) * m_dim;
    std::string head(kMagic, 8);
    put<std::uint32_t>(head, int8 ? 2u : 1u);  // fp16 stays version 1 (earlier readers)
    put<std::uint32_t>(head, int8 ? kInt8 : kFp16);
    put<std::uint32_t>(head, m_dim);
    put<std::uint32_t>(head, static_cast<std::uint32_t>(kHeaderSize));
    put<std::uint64_t>(head, n);
    put<std::uint64_t>(head, rows);
    put<std::uint64_t>(head, m_checksum);
    put<std::uint64_t>(head, kHeaderSize);
    put<std::uint64_t>(head, ids);
    put<std::uint64_t>(head, ids_size);
    put<std::uint64_t>(head, vectors);
    put<std::uint64_t>(head, file_size);
    put<std::uint64_t>(head, scales);
    head.resize(kHeaderSize, '\0');

    AtomicFile out(m_output);
    out.write(head);
    std::string table;
    table.reserve(std::min<std::uint64_t>(n, 1u << 16) * kEntrySize);
    for (std::size_t k = 0; k < n; ++k) {
        const std::size_t i = order[k];
        put<std::uint64_t>(table, id_offset[i]);
        put<std::uint32_t>(table, static_cast<std::uint32_t>(m_ids[i].size()));
        put<std::uint32_t>(table, m_recs[i].length);
        put<std::uint64_t>(table, first_row[i]);
        put<std::uint64_t>(table, m_recs[i].text_hash);
        if (table.size() >= (1u << 20)) {
            out.write(table);
            table.clear();
        }
    }
    out.write(table);
    for (const auto& id : m_ids) out.write(id);
    // The rows, copied from the partial file record by record: fp16 rows; int8: all scales
    // (S), then all values (V).
    std::vector<char> buf(1 << 20);
    const auto part = partial_path();
    auto copy = [&](std::uint64_t offset, std::uint64_t left) {
        if (std::fseek(m_file, static_cast<long>(offset), SEEK_SET) != 0) {
            throw IoError("cannot seek in " + part.string() + ": " + std::strerror(errno));
        }
        while (left > 0) {
            const auto take = static_cast<std::size_t>(std::min<std::uint64_t>(left, buf.size()));
            if (std::fread(buf.data(), 1, take, m_file) != take) {
                throw IoError("cannot read " + part.string() + ": short read");
            }
            out.write(std::string_view(buf.data(), take));
            left -= take;
        }
    };
    if (!int8) {
        out.write(std::string(vectors - ids - ids_size, '\0'));
        for (std::size_t i = 0; i < n; ++i) copy(m_recs[i].data_offset, m_recs[i].length * 2ull * m_dim);
    } else {
        out.write(std::string(scales - ids - ids_size, '\0'));
        for (std::size_t i = 0; i < n; ++i) copy(m_recs[i].data_offset, m_recs[i].length * 4ull);
        out.write(std::string(vectors - scales - rows * 4, '\0'));
        for (std::size_t i = 0; i < n; ++i) {
            copy(m_recs[i].data_offset + m_recs[i].length * 4ull,
                 static_cast<std::uint64_t>(m_recs[i].length) * m_dim);
        }
    }
    out.commit();
    std::fclose(m_file);
    m_file = nullptr;
    std::error_code ec;
    std::filesystem::remove(part, ec);
}

// ---------------------------------------------------------------------------------------------
// Building

TkCacheBuildReport build_tk_cache(const TkModel& model, const DocumentStream& docs,
                                  std::uint64_t total, const std::filesystem::path& output,
                                  const TkCacheBuildOptions& options,
                                  const ProgressCallback& progress, const CancelToken* cancel) {
    if (options.batch_size == 0) throw InvalidArgument("TK cache: batch size must be > 0");
    const auto dim = static_cast<std::uint32_t>(model.config().embedding_dim);
    TkCacheWriter writer(output, dim, model.checksum(), options.precision);
    TkCacheBuildReport report;
    report.resumed = writer.count();
    DocId id;
    std::string text;
    std::uint64_t done = 0;
    const auto& stored = writer.ids();
    while (done < stored.size()) {
        if (!docs(id, text)) {
            throw IndexError("the collection has " + std::to_string(done) + " documents but " +
                             writer.partial_path().string() + " already holds " +
                             std::to_string(stored.size()));
        }
        if (id != stored[done]) {
            throw IndexError("the collection changed: document " + std::to_string(done + 1) +
                             " is '" + id + "' but " + writer.partial_path().string() + " has '" +
                             stored[done] + "' (remove it to start over)");
        }
        ++done;
    }
    if (progress) progress(done, total);
    const std::size_t chunk = std::max<std::size_t>(options.chunk, 1);
    std::vector<DocId> ids;
    std::vector<std::string> texts;
    std::vector<float> normalised;
    bool more = true;
    while (more) {
        if (cancel && cancel->requested()) {
            writer.checkpoint();
            report.passages = writer.count();
            report.rows = writer.rows();
            return report;
        }
        ids.clear();
        texts.clear();
        while (ids.size() < chunk && (more = docs(id, text))) {
            ids.push_back(id);
            texts.push_back(text);
        }
        if (ids.empty()) break;
        std::vector<std::string_view> views(texts.begin(), texts.end());
        auto vecs = model.passage_vectors(views, options.batch_size);
        for (std::size_t i = 0; i < ids.size(); ++i) {
            const auto& tv = vecs[i];
            const std::size_t n = tv.terms.size();
            normalised.assign(tv.values.begin(), tv.values.end());
            for (std::size_t r = 0; r < n; ++r) {
                float* row = normalised.data() + r * dim;
                double sq = 0.0;
                for (std::size_t d = 0; d < dim; ++d) sq += static_cast<double>(row[d]) * row[d];
                // allennlp CosineMatrixAttention: x / (‖x‖ + 1e-13), as score() does.
                const float norm = static_cast<float>(std::sqrt(sq));
                for (std::size_t d = 0; d < dim; ++d) row[d] = row[d] / (norm + 1e-13f);
            }
            writer.append_rows(ids[i], tk_text_hash(texts[i]), normalised);
        }
        writer.checkpoint();
        done += ids.size();
        if (progress) progress(done, total);
    }
    report.passages = writer.count();
    report.rows = writer.rows();
    writer.finish();
    report.complete = true;
    std::error_code ec;
    report.bytes = std::filesystem::file_size(output, ec);
    return report;
}

}  // namespace plumb::rerank
