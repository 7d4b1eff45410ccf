#pragma once
/// \file detail/bm25_cursor.hpp
/// INTERNAL (not installed; includes Lucene++): the postings cursor of the BM25 query
/// algorithms (detail/bm25_*.hpp).

#include <cstdint>

#include "index/detail/index_data.hpp"

namespace plumb::index::detail {

/// A cursor's document past its last posting.
inline constexpr std::uint32_t kEndDoc = 0xFFFFFFFFu;
/// Postings a cursor buffers (MaxScore's and the pruned term-at-a-time completion's skipping).
inline constexpr int32_t kCursorBlock = 128;

/// Postings cursor over a Lucene++ SegmentTermDocs with bulk reads (kCursorBlock postings at a
/// time) and skipping (next_geq, through Lucene++'s skip lists); `doc` is kEndDoc past the last
/// posting. Created by Bm25Workspace::cursor().
struct PostingCursor {
    Lucene::SegmentTermDocsPtr td;
    Lucene::TermInfoPtr ti;
    Lucene::Collection<int32_t> docs = Lucene::Collection<int32_t>::newInstance(kCursorBlock);
    Lucene::Collection<int32_t> freqs = Lucene::Collection<int32_t>::newInstance(kCursorBlock);
    int32_t* dp = &*docs.begin();  // raw views (the collections never reallocate)
    int32_t* fp = &*freqs.begin();
    int32_t pos = 0, len = 0;
    std::uint32_t doc = kEndDoc;
    std::uint32_t tf = 0;

    /// Positions td at the postings of `e`. TermInfo's constructors are not exported by
    /// Lucene++, so each cursor owns one TermInfo obtained from a term enumeration and
    /// overwrites its public fields.
    void seek(const TermEntry& e, const Lucene::TermPtr& field_term) {
        ti->docFreq = e.df;
        ti->freqPointer = e.freq_ptr;
        ti->proxPointer = e.prox_ptr;
        ti->skipOffset = e.skip_offset;
        td->seek(ti, field_term);
    }
    void open(const TermEntry& e, const Lucene::TermPtr& field_term) {
        seek(e, field_term);
        len = 0;
        pos = 0;
        fill();
    }
    void fill() {
        len = td->read(docs, freqs);
        pos = 0;
        if (len <= 0) {
            len = 0;
            doc = kEndDoc;
            return;
        }
        doc = static_cast<std::uint32_t>(dp[0]);
        tf = static_cast<std::uint32_t>(fp[0]);
    }
    void next() {
        if (++pos < len) {
            doc = static_cast<std::uint32_t>(dp[pos]);
            tf = static_cast<std::uint32_t>(fp[pos]);
        } else {
            fill();
        }
    }
    /// Moves to the first posting with doc >= target.
    void next_geq(std::uint32_t target) {
        if (doc >= target) return;  // includes kEndDoc
        if (static_cast<std::uint32_t>(dp[len - 1]) >= target) {
            while (static_cast<std::uint32_t>(dp[pos]) < target) ++pos;
            doc = static_cast<std::uint32_t>(dp[pos]);
            tf = static_cast<std::uint32_t>(fp[pos]);
            return;
        }
        // Lucene's position is the last buffered doc (< target): skipTo advances at least
        // once, which is what we want here.
        if (td->skipTo(static_cast<int32_t>(target))) {
            dp[0] = td->doc();
            fp[0] = td->freq();
            len = 1;
            pos = 0;
            doc = static_cast<std::uint32_t>(dp[0]);
            tf = static_cast<std::uint32_t>(fp[0]);
        } else {
            len = 0;
            doc = kEndDoc;
        }
    }
};

}  // namespace plumb::index::detail
