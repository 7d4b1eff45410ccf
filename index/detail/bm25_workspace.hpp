#pragma once
/// \file detail/bm25_workspace.hpp
/// INTERNAL (not installed; includes Lucene++): the scratch space of one BM25 search, handed to
/// the query algorithms (detail/bm25_*.hpp) with the query and the top-k queue.

// clang-format off
#include "index/detail/index_data.hpp"  // (LuceneHeaders.h first: Lucene++ needs that order)
#include <lucene++/SegmentTermEnum.h>
// clang-format on

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "index/detail/bm25_block_cursor.hpp"
#include "index/detail/bm25_cursor.hpp"
#include "plugin/error.hpp"

namespace plumb::index::detail {

/// Postings per block of a whole-list bulk read (for_blocks).
inline constexpr int32_t kBulkBlock = 2048;

/// Per-search scratch space over one index: a zeroed accumulator per document, the touched
/// documents, postings cursors (created on first use, kept) and bulk-read buffers. Pooled by
/// the searcher and used by one search at a time; the index must outlive it.
class Bm25Workspace {
public:
    /// `lucene_mutex` serialises the creation of Lucene++ readers on `index`'s segment with
    /// the other workspaces of the same searcher.
    Bm25Workspace(const IndexData& index, std::mutex& lucene_mutex)
        : m_index(index), m_lucene_mutex(lucene_mutex) {}
    Bm25Workspace(const Bm25Workspace&) = delete;
    Bm25Workspace& operator=(const Bm25Workspace&) = delete;

    const IndexData& index() const noexcept { return m_index; }

    /// The i-th cursor (created with the ones before it on first use; not positioned).
    PostingCursor& cursor(std::size_t i) {
        while (m_cursors.size() <= i) {
            auto c = std::make_unique<PostingCursor>();
            Lucene::TermDocsPtr td;
            Lucene::TermEnumPtr te;
            {
                std::lock_guard lock(m_lucene_mutex);
                td = m_index.segment->termDocs();
                te = m_index.segment->terms();
            }
            c->td = boost::dynamic_pointer_cast<Lucene::SegmentTermDocs>(td);
            auto ste = boost::dynamic_pointer_cast<Lucene::SegmentTermEnum>(te);
            if (!c->td || !ste) throw IndexError("internal: unexpected Lucene++ reader types");
            c->ti = ste->termInfo();
            te->close();
            if (!c->ti) throw IndexError("internal: no Lucene++ TermInfo");
            m_cursors.push_back(std::move(c));
        }
        return *m_cursors[i];
    }

    /// The i-th block-max cursor over postings.bin (created with the ones before it on first
    /// use; not positioned).
    BlockCursor& block_cursor(std::size_t i) {
        while (m_block_cursors.size() <= i)
            m_block_cursors.push_back(std::make_unique<BlockCursor>());
        return *m_block_cursors[i];
    }

    /// Reads the whole postings list of `e` in blocks into docs/freqs and calls f(n) per
    /// block: from postings.bin when the index has it, else through Lucene++ (`c`).
    template <class F>
    void for_blocks(PostingCursor& c, const TermEntry& e, F&& f) {
        int32_t* d = &*docs.begin();
        int32_t* tf = &*freqs.begin();
        if (m_index.postings.loaded()) {
            auto r = m_index.postings.reader(static_cast<std::uint64_t>(&e - m_index.terms.data()),
                                             e.df);
            while (true) {
                int32_t n = r.read(d, tf, kBulkBlock);
                if (n <= 0) break;
                f(n);
            }
            return;
        }
        c.seek(e, m_index.body_term);
        while (true) {
            int32_t n = c.td->read(docs, freqs);
            if (n <= 0) break;
            f(n);
        }
    }

    /// The per-document accumulator of the term-at-a-time paths, allocated on first use (the
    /// block-max path never needs its 4 bytes per document, nor the page faults of a first
    /// search that touches them). All zero between searches.
    std::vector<float>& accumulator() {
        if (acc.size() != m_index.doclen.size()) acc.assign(m_index.doclen.size(), 0.0f);
        return acc;
    }

    std::vector<float> acc;  ///< see accumulator(); all zero between searches
    std::vector<std::uint32_t> touched;
    /// Bulk-read buffers of for_blocks (kBulkBlock postings).
    Lucene::Collection<int32_t> docs = Lucene::Collection<int32_t>::newInstance(kBulkBlock);
    Lucene::Collection<int32_t> freqs = Lucene::Collection<int32_t>::newInstance(kBulkBlock);
    /// Per-term scratch of the document-at-a-time algorithms (kept to avoid allocations).
    std::vector<std::size_t> order;
    std::vector<double> cum, block_cum;
    std::vector<float> weight, contrib;
    /// Partial scores of one window of documents (block-max MaxScore; all zero between
    /// searches) and its matched documents.
    std::vector<float> window;
    std::vector<std::uint32_t> window_docs;
    std::vector<BlockCursor*> block_cursors;

private:
    const IndexData& m_index;
    std::mutex& m_lucene_mutex;
    std::vector<std::unique_ptr<PostingCursor>> m_cursors;
    std::vector<std::unique_ptr<BlockCursor>> m_block_cursors;
};

}  // namespace plumb::index::detail
