#include "index/bm25_searcher.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <mutex>
#include <unordered_map>

// clang-format off
#include "index/detail/index_data.hpp"  // (LuceneHeaders.h first: Lucene++ needs that order)
#include <lucene++/SegmentTermEnum.h>
// clang-format on
#include "index/rm3.hpp"
#include "plugin/error.hpp"
#include "plugin/parallel.hpp"

namespace plumb::index {
namespace {

using detail::IndexData;
using detail::TermEntry;

constexpr std::uint32_t kEnd = 0xFFFFFFFFu;
constexpr int32_t kBlock = 128;  // MaxScore cursor buffer (postings)
constexpr int32_t kBulk = 2048;  // exhaustive bulk-read buffer (postings)
/// Relative slack on score upper bounds: covers float rounding differences between the
/// pruning estimates (double, any order) and the exact float score (query term order).
constexpr double kBoundSlack = 1e-4;

/// A query term resolved against the dictionary.
struct QTerm {
    const TermEntry* entry;
    float w;    ///< query weight * idf
    double ub;  ///< upper bound of this term's contribution (with slack)
};

/// Result ordering: score descending, then id rank ascending.
struct Entry {
    float score;
    std::uint32_t rank;
    std::uint32_t doc;
};
struct Better {
    bool operator()(const Entry& a, const Entry& b) const noexcept {
        return a.score > b.score || (a.score == b.score && a.rank < b.rank);
    }
};
constexpr Better better{};

/// Bounded top-k heap; top() is the worst kept entry.
class TopK {
public:
    explicit TopK(std::size_t k) : m_k(k) { m_heap.reserve(std::min<std::size_t>(k, 1 << 16)); }
    bool full() const { return m_heap.size() >= m_k; }
    const Entry& worst() const { return m_heap.front(); }
    /// True when `e` would enter the heap.
    bool accepts(const Entry& e) const { return !full() || better(e, m_heap.front()); }
    void push(const Entry& e) {
        if (!full()) {
            m_heap.push_back(e);
            std::push_heap(m_heap.begin(), m_heap.end(), better);
        } else if (better(e, m_heap.front())) {
            std::pop_heap(m_heap.begin(), m_heap.end(), better);
            m_heap.back() = e;
            std::push_heap(m_heap.begin(), m_heap.end(), better);
        }
    }
    std::vector<Hit> finish() {
        std::sort_heap(m_heap.begin(), m_heap.end(), better);
        std::vector<Hit> hits;
        hits.reserve(m_heap.size());
        for (const auto& e : m_heap) hits.push_back({e.doc, e.score});
        return hits;
    }

private:
    std::size_t m_k;
    std::vector<Entry> m_heap;
};

/// Top-k selection for the term-at-a-time paths, which offer many candidates in document order:
/// entries are appended to a buffer of 2k; when it is full, nth_element keeps the k best and
/// the k-th best score becomes the admission threshold (amortised O(1) per offer instead of a
/// heap update). The order (score desc, id rank asc) is total, so the selected top-k and its
/// order are exactly those of TopK.
class TopKBuffer {
public:
    /// `rank`: id rank of every document, read only to break score ties.
    TopKBuffer(std::size_t k, const std::uint32_t* rank)
        : m_rank(rank),
          m_k(k),
          m_cap(k > (std::numeric_limits<std::size_t>::max() >> 2)
                    ? std::numeric_limits<std::size_t>::max()
                    : std::max<std::size_t>(2 * k, 64)) {
        m_buf.reserve(std::min<std::size_t>(m_cap, 1 << 17));
    }
    /// Entries scoring below this can never enter (ties may, through a smaller id rank).
    float threshold() const noexcept { return m_thr; }
    void push(const Entry& e) {
        m_buf.push_back(e);
        if (m_buf.size() >= m_cap) {
            keep_best();
            m_thr = m_buf.back().score;
        }
    }
    std::vector<Hit> finish() {
        if (m_buf.size() > m_k) keep_best();
        std::sort(m_buf.begin(), m_buf.end(), cmp());
        std::vector<Hit> hits;
        hits.reserve(m_buf.size());
        for (const auto& e : m_buf) hits.push_back({e.doc, e.score});
        return hits;
    }

private:
    /// Keeps the k best entries; the worst of them ends up last.
    void keep_best() {
        auto kth = m_buf.begin() + static_cast<std::ptrdiff_t>(m_k - 1);
        std::nth_element(m_buf.begin(), kth, m_buf.end(), cmp());
        m_buf.resize(m_k);
    }
    /// Better(), with the id rank looked up only on score ties (entries carry no rank: loading
    /// it for every offered document would cost a cache miss each).
    struct Cmp {
        const std::uint32_t* rank;
        bool operator()(const Entry& a, const Entry& b) const noexcept {
            return a.score > b.score || (a.score == b.score && rank[a.doc] < rank[b.doc]);
        }
    };
    Cmp cmp() const noexcept { return Cmp{m_rank}; }

    const std::uint32_t* m_rank;
    std::size_t m_k, m_cap;
    std::vector<Entry> m_buf;
    /// Until the first compaction: > 0, i.e. any touched document.
    float m_thr = std::numeric_limits<float>::denorm_min();
};

/// Offers every document with a positive accumulator to `top`, in document order. Blocks of 16
/// are first tested branch-free against the threshold (most fail once it has risen).
[[gnu::noinline]] void scan_dense(const float* acc, std::size_t n, TopKBuffer& top) {
    float thr = top.threshold();
    std::size_t doc = 0;
    auto offer = [&](std::size_t i) {
        float s = acc[i];
        if (s >= thr) {
            auto d32 = static_cast<std::uint32_t>(i);
            top.push(Entry{s, 0, d32});
            thr = top.threshold();
        }
    };
    constexpr std::size_t kScan = 16;
    for (; doc + kScan <= n; doc += kScan) {
        bool any = false;
        for (std::size_t j = 0; j < kScan; ++j) any |= acc[doc + j] >= thr;
        if (!any) continue;
        for (std::size_t j = 0; j < kScan; ++j) offer(doc + j);
    }
    for (; doc < n; ++doc) offer(doc);
}

/// Postings cursor over a Lucene++ SegmentTermDocs with bulk reads.
struct Cursor {
    Lucene::SegmentTermDocsPtr td;
    Lucene::TermInfoPtr ti;
    Lucene::Collection<int32_t> docs = Lucene::Collection<int32_t>::newInstance(kBlock);
    Lucene::Collection<int32_t> freqs = Lucene::Collection<int32_t>::newInstance(kBlock);
    int32_t* dp = &*docs.begin();  // raw views (the collections never reallocate)
    int32_t* fp = &*freqs.begin();
    int32_t pos = 0, len = 0;
    std::uint32_t doc = kEnd;
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
            doc = kEnd;
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
        if (doc >= target) return;  // includes kEnd
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
            doc = kEnd;
        }
    }
};

/// Per-search scratch space, pooled by the searcher (one user at a time).
struct Workspace {
    std::vector<float> acc;  ///< all zero between searches
    std::vector<std::uint32_t> touched;
    std::vector<std::unique_ptr<Cursor>> cursors;
    /// Large bulk-read buffers for the exhaustive path.
    Lucene::Collection<int32_t> docs = Lucene::Collection<int32_t>::newInstance(kBulk);
    Lucene::Collection<int32_t> freqs = Lucene::Collection<int32_t>::newInstance(kBulk);
};

}  // namespace

struct Bm25Searcher::Impl {
    const IndexData& d;
    std::shared_ptr<const std::vector<float>> default_norm;
    mutable std::mutex mu;
    mutable std::map<std::pair<float, float>, std::shared_ptr<const std::vector<float>>> norms;
    mutable std::vector<std::unique_ptr<Workspace>> pool;

    explicit Impl(const IndexData& data) : d(data) {
        Bm25Params p;
        default_norm = make_norm(p);
        norms[{p.k1, p.b}] = default_norm;
    }

    std::shared_ptr<const std::vector<float>> make_norm(const Bm25Params& p) const {
        auto v = std::make_shared<std::vector<float>>(d.doclen.size());
        for (std::size_t i = 0; i < v->size(); ++i) {
            const std::uint32_t dl =
                p.lucene_norms ? detail::lucene_norm_length(d.doclen[i]) : d.doclen[i];
            (*v)[i] = detail::bm25_norm(p.k1, p.b, dl, d.info.avgdl);
        }
        return v;
    }

    std::shared_ptr<const std::vector<float>> norm_for(const Bm25Params& p) const {
        std::lock_guard lock(mu);
        auto it = norms.find({p.k1, p.lucene_norms ? -p.b - 1.0f : p.b});
        if (it != norms.end()) return it->second;
        if (norms.size() > 8) {  // bound memory: keep the default only
            norms.clear();
            norms[{Bm25Params{}.k1, Bm25Params{}.b}] = default_norm;
        }
        auto v = make_norm(p);
        norms[{p.k1, p.lucene_norms ? -p.b - 1.0f : p.b}] = v;  // (b < 0: Lucene lengths)
        return v;
    }

    std::unique_ptr<Workspace> acquire() const {
        {
            std::lock_guard lock(mu);
            if (!pool.empty()) {
                auto w = std::move(pool.back());
                pool.pop_back();
                return w;
            }
        }
        auto w = std::make_unique<Workspace>();
        w->acc.assign(d.doclen.size(), 0.0f);
        return w;
    }
    void release(std::unique_ptr<Workspace> w) const {
        std::lock_guard lock(mu);
        pool.push_back(std::move(w));
    }
    Cursor& cursor(Workspace& ws, std::size_t i) const {
        while (ws.cursors.size() <= i) {
            auto c = std::make_unique<Cursor>();
            Lucene::TermDocsPtr td;
            Lucene::TermEnumPtr te;
            {
                std::lock_guard lock(mu);
                td = d.segment->termDocs();
                te = d.segment->terms();
            }
            c->td = boost::dynamic_pointer_cast<Lucene::SegmentTermDocs>(td);
            auto ste = boost::dynamic_pointer_cast<Lucene::SegmentTermEnum>(te);
            if (!c->td || !ste) throw IndexError("internal: unexpected Lucene++ reader types");
            c->ti = ste->termInfo();
            te->close();
            if (!c->ti) throw IndexError("internal: no Lucene++ TermInfo");
            ws.cursors.push_back(std::move(c));
        }
        return *ws.cursors[i];
    }

    /// Reads the whole postings list of `e` in blocks into ws.docs/ws.freqs and calls
    /// f(n) per block: from postings.bin when the index has it, else through Lucene++ (`c`).
    template <class F>
    void for_blocks(Workspace& ws, Cursor& c, const TermEntry& e, F&& f) const {
        int32_t* docs = &*ws.docs.begin();
        int32_t* freqs = &*ws.freqs.begin();
        if (d.postings.loaded()) {
            auto r = d.postings.reader(static_cast<std::uint64_t>(&e - d.terms.data()), e.df);
            while (true) {
                int32_t n = r.read(docs, freqs, kBulk);
                if (n <= 0) break;
                f(n);
            }
            return;
        }
        c.seek(e, d.body_term);
        while (true) {
            int32_t n = c.td->read(ws.docs, ws.freqs);
            if (n <= 0) break;
            f(n);
        }
    }

    std::vector<Hit> exhaustive(Workspace& ws, const std::vector<QTerm>& q, std::size_t k,
                                const std::vector<float>& norm, float k1p1) const;
    std::vector<Hit> taat_pruned(Workspace& ws, const std::vector<QTerm>& q, std::size_t k,
                                 const std::vector<float>& norm, float k1p1) const;
    std::vector<Hit> maxscore(Workspace& ws, const std::vector<QTerm>& q, std::size_t k,
                              const std::vector<float>& norm, float k1p1) const;
};

std::vector<Hit> Bm25Searcher::Impl::exhaustive(Workspace& ws, const std::vector<QTerm>& q,
                                                std::size_t k, const std::vector<float>& norm,
                                                float k1p1) const {
    float* acc = ws.acc.data();
    const float* nm = norm.data();
    const std::size_t n_docs = ws.acc.size();
    // Dense mode (no touched list; one scan of the accumulator at the end) when the postings
    // cover a good part of the collection; sparse mode (touched-document list) otherwise.
    std::uint64_t postings = 0;
    for (const auto& t : q) postings += static_cast<std::uint64_t>(t.entry->df);
    const bool dense = postings * 8 >= n_docs;
    auto& touched = ws.touched;
    touched.clear();
    Cursor& c = cursor(ws, 0);
    int32_t* docs = &*ws.docs.begin();
    int32_t* freqs = &*ws.freqs.begin();
    for (std::size_t i = 0; i < q.size(); ++i) {
        const float w = q[i].w;
        for_blocks(ws, c, *q[i].entry, [&](int32_t n) {
            if (dense) {
                for (int32_t j = 0; j < n; ++j) {
                    auto doc = static_cast<std::uint32_t>(docs[j]);
                    acc[doc] += w * detail::bm25_frac(static_cast<float>(freqs[j]), k1p1, nm[doc]);
                }
            } else {
                for (int32_t j = 0; j < n; ++j) {
                    auto doc = static_cast<std::uint32_t>(docs[j]);
                    float contribution =
                        w * detail::bm25_frac(static_cast<float>(freqs[j]), k1p1, nm[doc]);
                    float& a = acc[doc];
                    if (a == 0.0f) touched.push_back(doc);
                    a += contribution;
                }
            }
        });
    }
    TopKBuffer top(k, d.idrank.data());
    // Candidates must score >= thr: > 0 (touched) at first, then >= the selection's threshold
    // (equal scores may still enter through a smaller id).
    float thr = std::numeric_limits<float>::denorm_min();
    if (dense) {
        scan_dense(acc, n_docs, top);
        std::fill(ws.acc.begin(), ws.acc.end(), 0.0f);
    } else {
        for (std::uint32_t doc : touched) {
            float s = acc[doc];
            acc[doc] = 0.0f;
            if (s >= thr) {
                top.push(Entry{s, 0, doc});
                thr = top.threshold();
            }
        }
    }
    return top.finish();
}

/// Term-at-a-time with MaxScore-style pruning of the low-bound tail ("continue" strategy).
/// Terms are processed fully in order (highest bound first) until the k-th largest partial score
/// theta (a lower bound of the final k-th score: scores only grow) exceeds the summed bounds of
/// the remaining terms. Then only documents that can still reach theta (partial + remaining
/// bounds >= theta) are completed, by skipping through the remaining posting lists. Every
/// completed score is the same float sum, in the same term order, as the exhaustive path.
std::vector<Hit> Bm25Searcher::Impl::taat_pruned(Workspace& ws, const std::vector<QTerm>& q,
                                                 std::size_t k, const std::vector<float>& norm,
                                                 float k1p1) const {
    const std::size_t m = q.size();
    std::vector<double> suffix(m + 1, 0.0);  // suffix[i] = bound of terms i..m-1
    for (std::size_t i = m; i-- > 0;) suffix[i] = suffix[i + 1] + q[i].ub;
    float* acc = ws.acc.data();
    const float* nm = norm.data();
    auto& touched = ws.touched;  // every touched document (sparse tracking throughout)
    touched.clear();
    Cursor& bulk = cursor(ws, 0);
    int32_t* docs = &*ws.docs.begin();
    int32_t* freqs = &*ws.freqs.begin();
    std::vector<float> sample;
    std::size_t i = 0;
    float theta = 0.0f;
    bool pruned = false;
    for (; i < m; ++i) {
        // Worth checking only when the remaining terms weigh little next to the processed ones.
        if (i > 0 && touched.size() >= k && suffix[i] * 4 < suffix[0] - suffix[i]) {
            sample.resize(touched.size());
            for (std::size_t j = 0; j < touched.size(); ++j) sample[j] = acc[touched[j]];
            std::nth_element(sample.begin(), sample.begin() + static_cast<std::ptrdiff_t>(k - 1),
                             sample.end(), std::greater<float>());
            theta = sample[k - 1];
            if (suffix[i] * (1.0 + kBoundSlack) < theta) {
                pruned = true;
                break;
            }
        }
        const float w = q[i].w;
        for_blocks(ws, bulk, *q[i].entry, [&](int32_t n) {
            for (int32_t j = 0; j < n; ++j) {
                auto doc = static_cast<std::uint32_t>(docs[j]);
                float contribution =
                    w * detail::bm25_frac(static_cast<float>(freqs[j]), k1p1, nm[doc]);
                float& a = acc[doc];
                if (a == 0.0f) touched.push_back(doc);
                a += contribution;
            }
        });
    }
    std::vector<std::uint32_t> cand;
    if (pruned) {
        // Candidates: partial + remaining bounds can reach theta. Others: final < theta.
        for (std::uint32_t doc : touched) {
            if ((static_cast<double>(acc[doc]) + suffix[i]) * (1.0 + kBoundSlack) >= theta) {
                cand.push_back(doc);
            }
        }
        std::sort(cand.begin(), cand.end());
        Cursor& c = cursor(ws, 1);
        for (std::size_t t = i; t < m; ++t) {
            const float w = q[t].w;
            if (cand.size() * 8 < static_cast<std::size_t>(q[t].entry->df)) {
                // Few candidates: skip through the list to each of them.
                c.open(*q[t].entry, d.body_term);
                for (std::uint32_t doc : cand) {
                    c.next_geq(doc);
                    if (c.doc == kEnd) break;
                    if (c.doc == doc) {
                        acc[doc] += w * detail::bm25_frac(static_cast<float>(c.tf), k1p1, nm[doc]);
                    }
                }
            } else {
                // Many candidates: read the list in bulk and update touched documents only
                // (untouched ones cannot reach theta; non-candidates updated here are never
                // offered, and could not enter the top-k anyway).
                for_blocks(ws, bulk, *q[t].entry, [&](int32_t n) {
                    for (int32_t j = 0; j < n; ++j) {
                        auto doc = static_cast<std::uint32_t>(docs[j]);
                        float& a = acc[doc];
                        if (a != 0.0f) {
                            a += w * detail::bm25_frac(static_cast<float>(freqs[j]), k1p1, nm[doc]);
                        }
                    }
                });
            }
        }
    }
    TopKBuffer top(k, d.idrank.data());
    float thr = std::numeric_limits<float>::denorm_min();
    auto offer = [&](std::uint32_t doc) {
        float s = acc[doc];
        if (s >= thr) {
            top.push(Entry{s, 0, doc});
            thr = top.threshold();
        }
    };
    if (pruned) {
        for (std::uint32_t doc : cand) offer(doc);
    } else {
        for (std::uint32_t doc : touched) offer(doc);
    }
    for (std::uint32_t doc : touched) acc[doc] = 0.0f;
    return top.finish();
}

std::vector<Hit> Bm25Searcher::Impl::maxscore(Workspace& ws, const std::vector<QTerm>& q,
                                              std::size_t k, const std::vector<float>& norm,
                                              float k1p1) const {
    const std::size_t m = q.size();
    // Order terms by upper bound ascending; order[j] = query position of the j-th term.
    std::vector<std::size_t> order(m);
    for (std::size_t i = 0; i < m; ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return q[a].ub < q[b].ub; });
    std::vector<double> cum(m);  // cum[j] = sum of bounds of terms 0..j (sorted)
    double s = 0;
    for (std::size_t j = 0; j < m; ++j) cum[j] = (s += q[order[j]].ub);
    std::vector<Cursor*> cur(m);
    for (std::size_t j = 0; j < m; ++j) {
        cur[j] = &cursor(ws, j);
        cur[j]->open(*q[order[j]].entry, d.body_term);
    }
    std::vector<float> contrib(m);  // by query position
    std::vector<char> matched(m);
    const float* nm = norm.data();
    const std::uint32_t* rank = d.idrank.data();
    TopK top(k);
    double theta = -1.0;  // no threshold until the heap is full
    std::size_t p = 0;    // terms [0, p) are non-essential
    while (p < m) {
        std::uint32_t doc = kEnd;
        for (std::size_t j = p; j < m; ++j) doc = std::min(doc, cur[j]->doc);
        if (doc == kEnd) break;
        std::fill(matched.begin(), matched.end(), 0);
        double est = 0;
        for (std::size_t j = p; j < m; ++j) {
            Cursor& c = *cur[j];
            if (c.doc == doc) {
                std::size_t qi = order[j];
                float v = q[qi].w * detail::bm25_frac(static_cast<float>(c.tf), k1p1, nm[doc]);
                contrib[qi] = v;
                matched[qi] = 1;
                est += v;
                c.next();
            }
        }
        bool pruned = false;
        for (std::size_t j = p; j-- > 0;) {
            if ((est + cum[j]) * (1.0 + kBoundSlack) < theta) {
                pruned = true;
                break;
            }
            Cursor& c = *cur[j];
            c.next_geq(doc);
            if (c.doc == doc) {
                std::size_t qi = order[j];
                float v = q[qi].w * detail::bm25_frac(static_cast<float>(c.tf), k1p1, nm[doc]);
                contrib[qi] = v;
                matched[qi] = 1;
                est += v;
            }
        }
        if (pruned) continue;
        // Exact score: contributions summed in query term order, as the exhaustive path does.
        float score = 0.0f;
        for (std::size_t qi = 0; qi < m; ++qi) {
            if (matched[qi]) score += contrib[qi];
        }
        Entry e{score, rank[doc], doc};
        if (top.accepts(e)) {
            top.push(e);
            if (top.full()) {
                theta = top.worst().score;
                while (p < m && cum[p] * (1.0 + kBoundSlack) < theta) ++p;
            }
        }
    }
    return top.finish();
}

Bm25Searcher::Bm25Searcher(std::shared_ptr<const PassageIndex> index) : m_index(std::move(index)) {
    if (!m_index) throw InvalidArgument("Bm25Searcher: null index");
    m_impl = std::make_unique<Impl>(m_index->data());
}

Bm25Searcher::~Bm25Searcher() = default;

std::shared_ptr<const Bm25Searcher> Bm25Searcher::open(const std::filesystem::path& dir,
                                                       const IndexOpenOptions& options) {
    return std::make_shared<const Bm25Searcher>(PassageIndex::open(dir, options));
}

std::vector<WeightedTerm> Bm25Searcher::query_terms(std::string_view query_text) const {
    auto terms = m_index->analyzer().analyze(query_text);
    std::vector<WeightedTerm> out;
    std::unordered_map<std::string, std::size_t> pos;
    for (auto& t : terms) {
        auto [it, inserted] = pos.emplace(t, out.size());
        if (inserted) {
            out.push_back({std::move(t), 1.0f});
        } else {
            out[it->second].weight += 1.0f;
        }
    }
    return out;
}

std::vector<Hit> Bm25Searcher::search(std::string_view query_text, std::size_t k,
                                      const SearchOptions& options) const {
    auto terms = query_terms(query_text);
    if (!options.rm3 || terms.empty() || k == 0) return search_terms(terms, k, options);
    auto feedback = search_terms(terms, options.rm3_params.fb_docs, options);
    auto expanded = rm3_expand(*m_index, terms, feedback, options.rm3_params);
    return search_terms(expanded, k, options);
}

std::vector<Hit> Bm25Searcher::search_terms(std::span<const WeightedTerm> terms, std::size_t k,
                                            const SearchOptions& options) const {
    const auto& p = options.bm25;
    if (!(p.k1 >= 0.0f) || !std::isfinite(p.k1) || !(p.b >= 0.0f && p.b <= 1.0f)) {
        throw InvalidArgument("BM25 parameters out of range: need k1 >= 0 and 0 <= b <= 1");
    }
    const IndexData& d = m_index->data();
    if (k == 0 || !d.segment || terms.empty()) return {};
    const bool default_params = p.k1 == Bm25Params{}.k1 && p.b == Bm25Params{}.b && !p.lucene_norms;
    auto norm = default_params ? m_impl->default_norm : m_impl->norm_for(p);
    const float k1p1 = p.k1 + 1.0f;
    const double n = static_cast<double>(d.info.documents);

    // Merge duplicates (first occurrence order), resolve, drop absent and non-positive terms.
    std::vector<QTerm> q;
    std::vector<std::string_view> seen;
    std::vector<float> weights;
    for (const auto& t : terms) {
        auto it = std::find(seen.begin(), seen.end(), std::string_view(t.term));
        if (it == seen.end()) {
            seen.push_back(t.term);
            weights.push_back(t.weight);
        } else {
            weights[static_cast<std::size_t>(it - seen.begin())] += t.weight;
        }
    }
    for (std::size_t i = 0; i < seen.size(); ++i) {
        if (!(weights[i] > 0.0f) || !std::isfinite(weights[i])) continue;
        const TermEntry* e = d.find_term(seen[i]);
        if (!e || e->df <= 0) continue;
        double df = e->df;
        auto idf = static_cast<float>(std::log(1.0 + (n - df + 0.5) / (df + 0.5)));
        // Lucene 8+ drops BM25's constant (k1 + 1) factor: with Lucene's lengths, scores are
        // scaled like Lucene's too (the ranking does not change).
        float w = p.lucene_norms ? weights[i] * idf / k1p1 : weights[i] * idf;
        float frac_ub =
            default_params
                ? e->max_frac_default
                : detail::bm25_frac(
                      static_cast<float>(e->max_tf), k1p1,
                      detail::bm25_norm(
                          p.k1, p.b,
                          p.lucene_norms ? detail::lucene_norm_length(e->min_dl) : e->min_dl,
                          d.info.avgdl));
        q.push_back({e, w, static_cast<double>(w) * static_cast<double>(frac_ub)});
    }
    if (q.empty()) return {};
    // Canonical term order, shared by every algorithm (scores are float sums in this order):
    // upper bound descending, ties by query position.
    std::stable_sort(q.begin(), q.end(),
                     [](const QTerm& a, const QTerm& b) { return a.ub > b.ub; });

    SearchAlgorithm alg = options.algorithm;
    if (alg == SearchAlgorithm::Auto) {
        alg = k <= options.pruning_max_k ? SearchAlgorithm::TaatMaxScore
                                         : SearchAlgorithm::Exhaustive;
    }
    auto ws = m_impl->acquire();
    try {
        std::vector<Hit> hits;
        switch (alg) {
            case SearchAlgorithm::MaxScore:
                hits = m_impl->maxscore(*ws, q, k, *norm, k1p1);
                break;
            case SearchAlgorithm::TaatMaxScore:
                hits = m_impl->taat_pruned(*ws, q, k, *norm, k1p1);
                break;
            default:
                hits = m_impl->exhaustive(*ws, q, k, *norm, k1p1);
                break;
        }
        m_impl->release(std::move(ws));
        return hits;
    } catch (const Lucene::LuceneException& e) {
        // The workspace may hold stale accumulators: drop it.
        detail::rethrow_lucene(e, "search failed");
    }
}

RankedList Bm25Searcher::to_ranked_list(const std::string& qid, std::span<const Hit> hits) const {
    RankedList list;
    list.qid = qid;
    list.candidates.reserve(hits.size());
    for (const auto& h : hits) {
        Candidate c;
        c.docid = std::string(m_index->docid(h.doc));
        c.score = h.score;
        list.candidates.push_back(std::move(c));
    }
    return list;
}

std::vector<RankedList> Bm25Searcher::search_batch(std::span<const Query> queries, std::size_t k,
                                                   const SearchOptions& options, unsigned threads,
                                                   const ProgressCallback& progress,
                                                   const CancelToken* cancel) const {
    std::vector<RankedList> out(queries.size());
    std::mutex mu;
    std::size_t done = 0;
    // threads: 0 = 1 here (parallel_for's 0 is hardware concurrency).
    parallel_for(queries.size(), std::max(1u, threads), [&](std::size_t i, unsigned) {
        if (cancel && cancel->requested()) throw Error("cancelled");
        auto hits = search(queries[i].text, k, options);
        out[i] = to_ranked_list(queries[i].id, hits);
        if (progress) {
            std::lock_guard lock(mu);
            progress(++done, queries.size());
        }
    });
    return out;
}

}  // namespace plumb::index
