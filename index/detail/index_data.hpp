#pragma once
/// \file detail/index_data.hpp
/// INTERNAL (not installed; includes Lucene++): the in-memory state of an opened passage index,
/// shared by PassageIndex, Bm25Searcher and the builder, and the side-file formats.

#include <lucene++/LuceneHeaders.h>
#include <lucene++/SegmentReader.h>
#include <lucene++/SegmentTermDocs.h>
#include <lucene++/TermInfo.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "index/analysis.hpp"
#include "index/detail/postings.hpp"
#include "index/passage_index.hpp"

namespace plumb::index::detail {

inline constexpr const char* kFormatName = "plumb-passage-index";
inline constexpr int kFormatVersion = 1;
inline constexpr const char* kMetaFile = "plumb-index.json";  ///< the commit marker
inline constexpr const char* kLuceneDir = "lucene";
inline constexpr const wchar_t* kBodyField = L"body";
inline constexpr const wchar_t* kIdField = L"id";
inline constexpr char kTermsMagic[8] = {'P', 'L', 'T', 'E', 'R', 'M', 'S', '1'};

/// One term of the dictionary (terms.bin), preloaded at open.
struct TermEntry {
    std::int32_t df = 0;
    std::int64_t freq_ptr = 0;  ///< Lucene TermInfo::freqPointer
    std::int64_t prox_ptr = 0;  ///< Lucene TermInfo::proxPointer
    std::int32_t skip_offset = 0;
    std::uint32_t max_tf = 0;    ///< largest tf in the postings
    std::uint32_t min_dl = 0;    ///< smallest document length in the postings
    float max_frac_default = 0;  ///< max over postings of tf(k1+1)/(tf+norm(d)), default k1/b
};

struct StringHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const noexcept {
        return std::hash<std::string_view>{}(s);
    }
};

/// BM25 length normalisation of every document for one (k1, b): k1 * (1 - b + b * dl / avgdl).
/// Computed in float exactly the same way at index time (upper bounds) and query time.
inline float bm25_norm(float k1, float b, std::uint32_t dl, double avgdl) {
    float ratio = avgdl > 0 ? static_cast<float>(static_cast<double>(dl) / avgdl) : 0.0f;
    return k1 * (1.0f - b + b * ratio);
}
/// A document length as Lucene 9 keeps it in its one-byte norm (SmallFloat.intToByte4, then
/// byte4ToInt): exact below 24, above that 24 plus the length - 24 cut to its 4 most
/// significant bits (100 -> 96, 41 -> 40). Anserini's BM25 scores documents with these lengths.
inline std::uint32_t lucene_norm_length(std::uint32_t dl) {
    constexpr std::uint32_t kFree = 24;  // 255 - longToInt4(Integer.MAX_VALUE)
    if (dl < kFree) return dl;
    const std::uint32_t v = std::min<std::uint32_t>(dl, 0x7fffffffu) - kFree;
    int bits = 0;
    while (bits < 32 && (v >> bits) != 0) ++bits;
    if (bits < 4) return dl;  // subnormal: kept exactly
    const int shift = bits - 4;
    return kFree + ((((v >> shift) & 0x07u) | 0x08u) << shift);
}

/// tf * (k1 + 1) / (tf + norm): the tf part of a BM25 contribution.
inline float bm25_frac(float tf, float k1p1, float norm) { return tf * k1p1 / (tf + norm); }

struct IndexData {
    std::filesystem::path dir;
    IndexInfo info;
    Analyzer analyzer;

    std::vector<std::uint32_t> doclen;
    std::vector<std::uint32_t> idrank;  ///< rank of the id in ascending id order
    std::vector<std::uint32_t> by_id;   ///< documents in ascending id order
    std::string ids;
    std::vector<std::uint64_t> id_off;  ///< n + 1 offsets into ids

    int text_fd = -1;
    std::vector<std::uint64_t> text_off;  ///< n + 1 offsets into text.dat

    std::unordered_map<std::string, std::uint32_t, StringHash, std::equal_to<>> term_index;
    std::vector<TermEntry> terms;
    /// plumb's own postings (postings.bin); not loaded for indexes built without it, which are
    /// searched through Lucene++ TermDocs.
    PostingsFile postings;

    Lucene::DirectoryPtr directory;
    Lucene::IndexReaderPtr reader;
    Lucene::IndexReaderPtr segment;  ///< the single segment (null for an empty index)
    Lucene::TermPtr body_term;

    std::string_view id_of(std::uint32_t doc) const {
        return std::string_view(ids).substr(id_off[doc], id_off[doc + 1] - id_off[doc]);
    }
    const TermEntry* find_term(std::string_view t) const {
        auto it = term_index.find(t);
        return it == term_index.end() ? nullptr : &terms[it->second];
    }

    IndexData() = default;
    IndexData(const IndexData&) = delete;
    IndexData& operator=(const IndexData&) = delete;
    ~IndexData();
};

/// Small binary file helpers (little-endian host assumed: x86-64/aarch64).
void write_all(std::FILE* f, const void* data, std::size_t n, const std::filesystem::path& p);
void fsync_file(std::FILE* f, const std::filesystem::path& p);
void fsync_path(const std::filesystem::path& p);  ///< file or directory
template <class T>
void write_vector_file(const std::filesystem::path& p, const std::vector<T>& v);
template <class T>
std::vector<T> read_vector_file(const std::filesystem::path& p, std::size_t expected_count);
std::string read_blob(const std::filesystem::path& p, std::uint64_t expected_size);

/// Wraps a Lucene++ exception into plumb::IndexError with context.
[[noreturn]] void rethrow_lucene(const Lucene::LuceneException& e, const std::string& context);

}  // namespace plumb::index::detail
