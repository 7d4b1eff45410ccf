#pragma once
/// \file index_builder.hpp
/// Building a passage index: a Lucene++ 3.0.8 inverted index (field "body", analysed terms with
/// frequencies) plus plumb's side files: exact document lengths, external ids, the passage text
/// store and the term dictionary with per-term BM25 upper bounds.
///
/// On-disk layout of an index directory (format "plumb-passage-index", version 1):
///  - lucene/            the Lucene++ index (one segment after optimize; SimpleFSDirectory, no
///                       32-bit mmap offsets)
///  - doclen.u32         exact analysed length of each document (little-endian uint32)
///  - ids.dat, ids.off   external ids (concatenated bytes, uint64 offsets n+1)
///  - idrank.u32         rank of each document's id in byte-wise ascending id order (tie-break)
///  - text.dat, text.off passage text as indexed (title + " " + text for JSONL), uint64 offsets:
///                       a plain store read with pread, 64-bit offsets, no 2 GiB cliff
///  - terms.bin          term dictionary: term, df, Lucene postings pointers, max tf, min length,
///                       BM25 upper bound at the default k1/b
///  - postings.bin       plumb's own copy of every term's postings (doc deltas and tfs as varints,
///                       64-bit term offsets, read through a private mmap; layout in
///                       detail/postings.hpp), so bulk scoring avoids Lucene++'s per-byte
///                       virtual VInt decoding. Recorded as "postings" {file, version} in the
///                       metadata; indexes without it (built before it existed) are searched
///                       through Lucene++ TermDocs with identical results.
///  - plumb-index.json   metadata (analysis name, analyzer "lucene3"/"anserini" (absent in
///                       older indexes: lucene3), counts, format version); written LAST: it is
///                       the commit marker. An index without it never opens.
///
/// Crash safety: the index is built in a sibling directory "<dir>.tmp-<pid>-<n>", every file is
/// fsynced, the metadata written last, then the directory is swapped into place atomically
/// (renameat2 RENAME_EXCHANGE when a previous index exists, rename otherwise) and the old one
/// removed. An interrupted or failed build leaves the previous index (or none) and removes its
/// temporary directory when it can.

#include <cstdint>
#include <filesystem>
#include <limits>

#include "index/analysis.hpp"
#include "index/corpus.hpp"
#include "plugin/progress.hpp"

namespace plumb::index {

struct IndexBuildOptions {
    CorpusFormat format = CorpusFormat::Tsv;
    AnalysisOptions analysis;
    bool skip_bad = false;        ///< skip malformed corpus lines (counted) instead of failing
    double max_bad_share = 0.1;   ///< with skip_bad: see CorpusReaderOptions::max_bad_share
    bool title = true;            ///< JSONL: index and store "title text" (false: text only)
                                  ///< (BEIR's and Pyserini's BEIR indexes join them the same way)
    unsigned threads = 1;         ///< analysis threads (plus one writer thread)
    double ram_buffer_mb = 256;   ///< Lucene++ IndexWriter RAM buffer
    /// A corpus without a single document is a ParseError unless this is set (an empty file
    /// usually means a wrong path or a failed download, not an empty collection).
    bool allow_empty = false;
    /// Index only the records [first_document, first_document + max_documents) of the corpus
    /// (positions in reading order, bad records skipped with skip_bad not counted): one
    /// contiguous shard of it (shard_builder.hpp). The defaults index everything.
    std::uint64_t first_document = 0;
    std::uint64_t max_documents = std::numeric_limits<std::uint64_t>::max();
    /// Index only the lines of a TSV / JSONL file that start in [first_byte, end_byte)
    /// (CorpusReaderOptions::first_byte: the reader seeks there instead of reading what comes
    /// before): a shard by byte range (shard_builder.hpp). Errors still name the file's line.
    std::uint64_t first_byte = 0;
    std::uint64_t end_byte = std::numeric_limits<std::uint64_t>::max();
};

struct IndexBuildStats {
    std::uint64_t documents = 0;     ///< documents indexed
    std::uint64_t skipped = 0;       ///< bad lines skipped (skip_bad)
    std::uint64_t terms = 0;         ///< distinct terms
    std::uint64_t total_length = 0;  ///< sum of document lengths (analysed tokens)
    double seconds = 0;
};

/// Indexes the corpus file `corpus` into `index_dir` (replacing a previous index there only once
/// the new one is complete). Duplicate document ids throw ParseError naming file and line;
/// empty passages are documents of length 0; a corpus without any document is an error unless
/// options.allow_empty. Progress is reported in bytes of the corpus file
/// read (total = file size). Cancellation throws plumb::Error("cancelled") after cleaning up.
/// Throws ParseError, IoError, IndexError.
IndexBuildStats build_index(const std::filesystem::path& corpus,
                            const std::filesystem::path& index_dir,
                            const IndexBuildOptions& options = {},
                            const ProgressCallback& progress = {},
                            const CancelToken* cancel = nullptr);

}  // namespace plumb::index
