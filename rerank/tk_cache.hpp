#pragma once
/// \file tk_cache.hpp
/// TK's passage cache (Torch-free header). TK contextualises a passage without looking at the
/// query, so the passage side of its cosine match — p̂_j / (‖p̂_j‖ + 1e-13) for every passage
/// term j, after the α gate — is computed once per passage and model and stored here; at query
/// time only the query is contextualised (TkModel::score_cached).
///
/// File format (little-endian), versions 1 and 2, memory-mapped read-only. fp16 caches are
/// written as version 1 (unchanged, so earlier builds read them); int8 caches as version 2, which
/// adds value type 2 and the scale offset S at 88. The reader accepts both versions.
///
///     offset 0    char[8]  magic "PLUMBTKC"
///     offset 8    u32      version (1 or 2)
///     offset 12   u32      value type: 1 = IEEE binary16 (fp16); 2 = int8 with one f32 scale per
///                          row (version 2 only)
///     offset 16   u32      dimension D (the model's embedding_dim)
///     offset 20   u32      header size (128)
///     offset 24   u64      passage count N
///     offset 32   u64      total rows R (Σ passage lengths)
///     offset 40   u64      model checksum (TkModel::checksum())
///     offset 48   u64      table offset T (128)
///     offset 56   u64      docid blob offset I
///     offset 64   u64      docid blob size
///     offset 72   u64      vector offset V (a multiple of 64)
///     offset 80   u64      file size
///     offset 88   u64      int8: scale offset S (a multiple of 64); fp16: 0
///     offset 96   zero up to 128
///     T           N entries of 32 bytes, sorted by docid (bytewise, strictly increasing):
///                   u64 docid offset in the blob, u32 docid length, u32 length L (rows, after
///                   truncation to max_passage_length; 0 for a passage without words),
///                   u64 first row, u64 text hash (tk_text_hash of the passage text)
///     I           the docids, concatenated
///     V           fp16: R × D fp16 values, row-major; a passage's rows are contiguous
///                 int8: R × D int8 values q, row-major (S: R f32 scales s, one per row, before
///                 V); value = s_row · q. Quantisation: s = max_d |x_d| / 127 (0 for a zero row),
///                 q = round(x / s) — symmetric, per vector. Half the size of fp16 (D + 4 bytes a
///                 row); scores move by up to about 1e-3 (bench_tk and the test print the largest
///                 difference).
///
/// Everything is checked at open (magic, version, value type, the file size against the
/// header — a truncated file —, every table entry inside the file, docids sorted): violations are
/// IndexError naming the file. Size: 2·D bytes per passage term (600 bytes at D = 300; int8:
/// D + 4 = 304) plus 32 bytes and the docid per passage.
///
/// Where the TK stage looks (rerank/tk_stage.hpp): an explicit file (stage option "cache",
/// `--tk-cache FILE`; it must match the model: another model's cache is an error), else the
/// automatic location tk_cache_default_path(model folder, checksum) — a file named by the
/// model's checksum, so caches of earlier weights in the same folder are never picked up. A
/// cached passage is used only when its text hash equals the hash of the candidate's text (a
/// changed passage text falls back to the uncached path), and docids missing from the cache fall
/// back too. The text is the one a DocumentSource serves (title and text joined by a space).
///
/// Building (build_tk_cache, `plumb tk-cache`) is resumable: passages are appended to
/// "<output>.partial" (a 32-byte header "PLTKPART", u32 version 1, u32 D, u64 model checksum,
/// u32 value type (0 = fp16, as earlier partial files; 2 = int8), u32 0; then per passage u32
/// docid length, u32 L, u64 text hash, the docid, L × D fp16 or L f32 scales then L × D int8),
/// synced after every chunk; a rerun checks the header, drops an incomplete last record, checks
/// the collection still starts with the same docids, and continues. The final file is written to
/// a temporary sibling and renamed onto `output`; then the partial state is removed.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "plugin/progress.hpp"
#include "plugin/types.hpp"
#include "rerank/tk_model.hpp"
#include "rerank/vector_store.hpp"

namespace plumb::rerank {

/// Newest file version this build writes and reads (fp16 files are still written as 1).
inline constexpr std::uint32_t kTkCacheVersion = 2;

/// Value type of a cache's vectors.
enum class TkCachePrecision { Fp16, Int8 };
/// "fp16" / "int8".
const char* tk_cache_precision_name(TkCachePrecision p) noexcept;
/// Parses "fp16" / "int8"; ConfigError naming the value otherwise.
TkCachePrecision parse_tk_cache_precision(std::string_view name);

/// Symmetric per-row int8 quantisation of `rows` (n × dim floats): scales[r] = max |x| / 127
/// (0 for an all-zero row), q = round(x / scale) in [-127, 127].
void tk_quantize_rows(std::span<const float> rows, std::size_t dim, std::int8_t* values,
                      float* scales);

/// The automatic cache location of a model folder: `model_dir`/passage-cache-<checksum as 16
/// hex digits>.plumbtkc.
std::filesystem::path tk_cache_default_path(const std::filesystem::path& model_dir,
                                            std::uint64_t model_checksum);

/// Hash of a passage text: splitmix64 chain over its bytes, 8 at a time (little-endian; the last
/// 1-7 bytes zero-padded), started from the length. Cheap next to tokenisation (the stage checks
/// every candidate).
std::uint64_t tk_text_hash(std::string_view text) noexcept;

/// A cache file, memory-mapped read-only. Immutable; safe to share between threads.
class TkPassageCache {
public:
    /// Opens and checks `file` (see the format above). IndexError for a file that is not a
    /// cache, has another version, is truncated or inconsistent; IoError when unreadable.
    static std::shared_ptr<const TkPassageCache> open(const std::filesystem::path& file);
    ~TkPassageCache();
    TkPassageCache(const TkPassageCache&) = delete;
    TkPassageCache& operator=(const TkPassageCache&) = delete;

    const std::filesystem::path& path() const noexcept { return m_path; }
    std::uint32_t dim() const noexcept { return m_dim; }
    std::uint64_t size() const noexcept { return m_count; }
    std::uint64_t rows() const noexcept { return m_rows; }
    std::uint64_t model_checksum() const noexcept { return m_checksum; }
    std::uint64_t file_size() const noexcept { return m_size; }
    TkCachePrecision precision() const noexcept { return m_precision; }
    std::uint32_t version() const noexcept { return m_version; }

    struct Entry {
        TkCachedPassage passage;
        std::uint64_t text_hash = 0;
    };
    /// The cached passage of `docid`, or nullopt (binary search over the table).
    std::optional<Entry> find(std::string_view docid) const;

private:
    TkPassageCache() = default;
    std::filesystem::path m_path;
    void* m_map = nullptr;
    std::uint64_t m_size = 0, m_count = 0, m_rows = 0, m_checksum = 0;
    std::uint32_t m_dim = 0, m_version = 0;
    TkCachePrecision m_precision = TkCachePrecision::Fp16;
    const unsigned char* m_table = nullptr;
    const char* m_ids = nullptr;
    const std::uint16_t* m_vectors = nullptr;
    const std::int8_t* m_vectors_int8 = nullptr;
    const float* m_scales = nullptr;
};

/// Writes a cache resumably (see the file comment). Not thread-safe.
class TkCacheWriter {
public:
    /// Resumes "<output>.partial" when present (IndexError when it belongs to another model,
    /// dimension or precision, or is not a partial cache), else starts it.
    TkCacheWriter(std::filesystem::path output, std::uint32_t dim, std::uint64_t model_checksum,
                  TkCachePrecision precision = TkCachePrecision::Fp16);
    ~TkCacheWriter();
    TkCacheWriter(const TkCacheWriter&) = delete;
    TkCacheWriter& operator=(const TkCacheWriter&) = delete;

    /// Passages in the partial state (including those of earlier runs).
    std::uint64_t count() const noexcept { return m_recs.size(); }
    /// Their docids, in order.
    const std::vector<DocId>& ids() const noexcept { return m_ids; }
    /// Rows (passage terms) in the partial state.
    std::uint64_t rows() const noexcept {
        std::uint64_t r = 0;
        for (const auto& rec : m_recs) r += rec.length;
        return r;
    }
    /// Appends one passage: rows.size() / dim rows of fp16 values (InvalidArgument otherwise,
    /// and for an int8 writer).
    void append(std::string_view docid, std::uint64_t text_hash,
                std::span<const std::uint16_t> rows);
    /// Appends one passage from float rows (rows.size() / dim of them), stored in the writer's
    /// precision (fp16 rounding, or tk_quantize_rows).
    void append_rows(std::string_view docid, std::uint64_t text_hash,
                     std::span<const float> rows);
    TkCachePrecision precision() const noexcept { return m_precision; }
    /// Flushes and syncs the partial state: everything appended so far survives a kill.
    void checkpoint();
    /// Writes the final file atomically and removes the partial state. IndexError when a docid
    /// occurs twice (naming it).
    void finish();
    /// "<output>.partial".
    std::filesystem::path partial_path() const;

private:
    struct Rec {
        std::uint32_t length;
        std::uint64_t text_hash;
        std::uint64_t data_offset;  ///< of the rows in the partial file
    };
    std::filesystem::path m_output;
    void append_record(std::string_view docid, std::uint64_t text_hash, std::size_t length,
                       const void* data, std::size_t bytes);
    std::uint64_t row_bytes() const noexcept;
    std::uint32_t m_dim;
    std::uint64_t m_checksum;
    TkCachePrecision m_precision;
    std::FILE* m_file = nullptr;
    std::uint64_t m_end = 0;  ///< bytes of the partial file
    std::vector<DocId> m_ids;
    std::vector<Rec> m_recs;
};

struct TkCacheBuildOptions {
    std::size_t batch_size = 64;  ///< passages per forward call
    std::size_t chunk = 1024;     ///< passages between checkpoints (and progress reports)
    TkCachePrecision precision = TkCachePrecision::Fp16;  ///< int8: half the size
};

struct TkCacheBuildReport {
    std::uint64_t passages = 0;  ///< in the cache
    std::uint64_t resumed = 0;   ///< taken over from an earlier run's partial state
    std::uint64_t rows = 0;      ///< passage terms stored
    std::uint64_t bytes = 0;     ///< size of the final file (0 when not complete)
    bool complete = false;       ///< false when cancelled (the partial state is kept)
};

/// Contextualises every document of `docs` with `model` and writes the cache `output`, resuming
/// an interrupted run (the first count() documents are skipped after checking their ids:
/// IndexError when the collection changed). Progress in documents (total may be 0); stops
/// between chunks when `cancel` is requested.
TkCacheBuildReport build_tk_cache(const TkModel& model, const DocumentStream& docs,
                                  std::uint64_t total, const std::filesystem::path& output,
                                  const TkCacheBuildOptions& options = {},
                                  const ProgressCallback& progress = {},
                                  const CancelToken* cancel = nullptr);

}  // namespace plumb::rerank
