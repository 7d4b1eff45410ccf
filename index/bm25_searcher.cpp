#include "index/bm25_searcher.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <mutex>
#include <thread>
#include <tuple>
#include <unordered_map>

#include "index/detail/batch_search.hpp"
#include "index/detail/bm25_block_max_maxscore.hpp"
#include "index/detail/bm25_exhaustive.hpp"
#include "index/detail/bm25_intra_query.hpp"
#include "index/detail/bm25_maxscore.hpp"
#include "index/detail/bm25_query.hpp"
#include "index/detail/bm25_taat_maxscore.hpp"
#include "index/detail/bm25_topk.hpp"
#include "index/detail/bm25_workspace.hpp"
#include "index/detail/index_data.hpp"
#include "index/rm3.hpp"
#include "plugin/error.hpp"

namespace plumb::index {

using detail::Bm25Query;
using detail::Bm25Term;
using detail::Bm25Workspace;
using detail::IndexData;
using detail::TermEntry;

struct Bm25Searcher::Impl {
    const IndexData& d;
    std::shared_ptr<const std::vector<float>> default_norm;
    mutable std::mutex mu;
    /// Key: k1, b (-b - 1 for Lucene lengths), avgdl (the index's own, or a sharded collection's).
    using NormKey = std::tuple<float, float, double>;
    mutable std::map<NormKey, std::shared_ptr<const std::vector<float>>> norms;
    /// Idle workspaces, each with the thread that last used it (guarded by pool_mu).
    mutable detail::SpinMutex pool_mu;
    mutable std::vector<std::pair<std::thread::id, std::unique_ptr<Bm25Workspace>>> pool;
    /// Sharded search: max_frac_default per term at the avgdl `bounds_avgdl` (term_stats).
    mutable double bounds_avgdl = -1;
    mutable std::unordered_map<std::string, float> bounds;

    explicit Impl(const IndexData& data) : d(data) {
        Bm25Params p;
        default_norm = make_norm(p, d.info.avgdl);
        norms[key(p, d.info.avgdl)] = default_norm;
    }

    static NormKey key(const Bm25Params& p, double avgdl) {
        return {p.k1, p.lucene_norms ? -p.b - 1.0f : p.b, avgdl};  // (b < 0: Lucene lengths)
    }

    std::shared_ptr<const std::vector<float>> make_norm(const Bm25Params& p, double avgdl) const {
        auto v = std::make_shared<std::vector<float>>(d.doclen.size());
        for (std::size_t i = 0; i < v->size(); ++i) {
            const std::uint32_t dl =
                p.lucene_norms ? detail::lucene_norm_length(d.doclen[i]) : d.doclen[i];
            (*v)[i] = detail::bm25_norm(p.k1, p.b, dl, avgdl);
        }
        return v;
    }

    std::shared_ptr<const std::vector<float>> norm_for(const Bm25Params& p, double avgdl) const {
        std::lock_guard lock(mu);
        auto it = norms.find(key(p, avgdl));
        if (it != norms.end()) return it->second;
        if (norms.size() > 8) {  // bound memory: keep the default only
            norms.clear();
            norms[key(Bm25Params{}, d.info.avgdl)] = default_norm;
        }
        auto v = make_norm(p, avgdl);
        norms[key(p, avgdl)] = v;
        return v;
    }

    /// A workspace this thread used last if there is one idle (its accumulator and buffers
    /// are likely in this core's caches; another thread's would be fetched line by line, often
    /// modified lines from the other core's cache: with exhaustive splits, whose helpers take a
    /// second workspace, helping cost about twice the time it saved before this), else the
    /// most recently used one, else a new one.
    std::unique_ptr<Bm25Workspace> acquire() const {
        const auto self = std::this_thread::get_id();
        {
            std::lock_guard lock(pool_mu);
            if (!pool.empty()) {
                auto it = pool.end();
                for (auto i = pool.begin(); i != pool.end(); ++i)
                    if (i->first == self) it = i;  // (the last one this thread released)
                if (it == pool.end()) it = pool.end() - 1;
                auto w = std::move(it->second);
                pool.erase(it);
                return w;
            }
        }
        return std::make_unique<Bm25Workspace>(d, mu);
    }
    void release(std::unique_ptr<Bm25Workspace> w) const {
        std::lock_guard lock(pool_mu);
        pool.emplace_back(std::this_thread::get_id(), std::move(w));
    }

    /// Intra-query parallelism (SearchOptions::intra_query): the open split queries.
    mutable detail::IntraQueryScheduler scheduler;

    /// Scans chunks of other threads' split queries while any has one left that this thread
    /// may take (the helping thread's own query waits meanwhile): block-max chunks only before
    /// `until`; exhaustive chunks only when `exhaustive` (before the helper's own query starts,
    /// never from the middle of its block-max scan) and while their predicted postings fit in
    /// `budget` (detail::LendBudget).
    void help(std::chrono::steady_clock::time_point until, detail::LendBudget& budget,
              bool exhaustive) const {
        unsigned chunk = 0;
        while (true) {
            const bool block_max = std::chrono::steady_clock::now() < until;
            detail::SplitTask* t = scheduler.join(chunk, block_max, exhaustive, budget);
            if (!t) break;
            std::unique_ptr<Bm25Workspace> ws;
            if (t->exhaustive) {
                detail::TopKBuffer top(t->k, d.idrank.data());
                try {
                    ws = acquire();
                    do {
                        detail::Bm25Exhaustive::scan_range(*t->query, *ws, top, t->chunk_lo(chunk),
                                                           t->chunk_hi(chunk), t);
                    } while (scheduler.claim(*t, chunk, &budget));
                } catch (...) {
                    // (The workspace may hold a half-filled accumulator: dropped.)
                    scheduler.leave(*t, {}, std::current_exception());
                    continue;
                }
                scheduler.leave(*t, top.best());
                release(std::move(ws));
                continue;
            }
            detail::TopKHeap top(t->k);
            detail::IntraQueryRun run;
            run.scheduler = &scheduler;
            run.task = t;
            run.helper = true;
            run.chunk = chunk;
            run.help_until = until;
            try {
                ws = acquire();
                detail::Bm25BlockMaxMaxScore{}.scan(*t->query, *ws, top, &run);
            } catch (...) {
                // (The workspace may hold a half-scored window: dropped.)
                scheduler.leave(*t, {}, std::current_exception());
                continue;
            }
            scheduler.leave(*t, top.entries());
            release(std::move(ws));
        }
    }

    /// The exhaustive path as the owner of a query split at its start (predicted long: at
    /// least IntraQueryOptions::exhaustive_min_postings postings): chunks of the document range
    /// scanned by this thread and any helper, then the helpers' top k merged into this one's.
    std::vector<Hit> search_exhaustive_split(const Bm25Query& query, Bm25Workspace& ws,
                                             std::size_t k, unsigned parts,
                                             std::uint64_t postings) const {
        detail::TopKBuffer top(k, d.idrank.data());
        detail::SplitTask task;
        task.exhaustive = true;
        task.query = &query;
        task.k = k;
        task.lo = 0;
        task.n_docs = static_cast<std::uint32_t>(d.doclen.size());
        task.parts = parts;
        task.postings = postings;
        scheduler.publish(task);
        try {
            unsigned c = 0;
            do {
                detail::Bm25Exhaustive::scan_range(query, ws, top, task.chunk_lo(c),
                                                   task.chunk_hi(c), &task);
            } while (scheduler.claim(task, c));
        } catch (...) {
            scheduler.close(task);  // (helpers must finish with the task before it goes away)
            throw;
        }
        scheduler.close(task);
        if (task.error) std::rethrow_exception(task.error);
        for (const detail::TopKEntry& e : task.results)
            if (e.score >= top.threshold()) top.push(e);
        return top.finish();
    }

    /// Block-max MaxScore as the owner of a query that may split (intra-query parallelism).
    std::vector<Hit> search_split(const Bm25Query& query, Bm25Workspace& ws, std::size_t k,
                                  const IntraQueryOptions& intra,
                                  std::chrono::steady_clock::time_point start,
                                  std::chrono::steady_clock::time_point lend_until,
                                  detail::LendBudget& budget) const {
        detail::TopKHeap top(k);
        detail::SplitTask task;
        detail::IntraQueryRun run;
        run.scheduler = &scheduler;
        run.parts = intra.parts;
        run.start = start;
        run.after = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
            std::chrono::duration<double, std::milli>(intra.after_ms));
        run.help_until = lend_until;
        run.k = k;
        run.n_docs = static_cast<std::uint32_t>(d.doclen.size());
        // (No split into chunks narrower than the first window: nothing to gain.)
        run.min_docs = intra.parts * detail::kFirstScoreWindow;
        run.own = &task;
        // (Time spent on other queries' chunks does not count towards this query's split
        // clock: a short query that lent its thread must not look long and split.)
        run.help = [this, &run, &budget] {
            const auto h0 = std::chrono::steady_clock::now();
            help(run.help_until, budget, false);
            run.start += std::chrono::steady_clock::now() - h0;
        };
        try {
            detail::Bm25BlockMaxMaxScore{}.scan(query, ws, top, &run);
        } catch (...) {
            // Published and not closed (the scan failed before its end): helpers must finish
            // with the task before it goes away.
            if (run.task && !task.closed) scheduler.close(task);
            throw;
        }
        return top.finish();
    }
};

namespace {

/// Runs `Algorithm` (detail/bm25_*.hpp) on the top-k queue `top` and takes its hits.
template <class Algorithm, class Queue>
std::vector<Hit> run(const Bm25Query& query, Bm25Workspace& ws, Queue top) {
    Algorithm{}(query, ws, top);
    return top.finish();
}

}  // namespace

std::span<const std::string_view> search_algorithm_names() {
    static constexpr std::string_view kNames[] = {"auto", "exhaustive", "maxscore", "taat-maxscore",
                                                  "block-max-maxscore"};
    return kNames;
}

SearchAlgorithm search_algorithm_from_name(std::string_view name) {
    const auto names = search_algorithm_names();
    std::string known;
    for (std::size_t i = 0; i < names.size(); ++i) {
        if (names[i] == name) return static_cast<SearchAlgorithm>(i);
        known += (i ? ", " : "") + std::string(names[i]);
    }
    throw InvalidArgument("unknown BM25 algorithm '" + std::string(name) + "' (known: " + known +
                          ")");
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

Bm25Searcher::IntraQueryCounts Bm25Searcher::intra_query_counts() const {
    const auto s = m_impl->scheduler.stats();
    return {s.splits, s.joins, s.waits, s.sleeps, s.wait_ns, s.contended, s.blocked,
            m_impl->pool_mu.contended(), m_impl->pool_mu.blocked()};
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
    return search_impl(terms, k, options, nullptr);
}

std::vector<Hit> Bm25Searcher::search_terms(std::span<const WeightedTerm> terms, std::size_t k,
                                            const SearchOptions& options,
                                            const ShardStats& global) const {
    return search_impl(terms, k, options, &global);
}

std::vector<Hit> Bm25Searcher::search_impl(std::span<const WeightedTerm> terms, std::size_t k,
                                           const SearchOptions& options,
                                           const ShardStats* global) const {
    const auto& p = options.bm25;
    if (!(p.k1 >= 0.0f) || !std::isfinite(p.k1) || !(p.b >= 0.0f && p.b <= 1.0f)) {
        throw InvalidArgument("BM25 parameters out of range: need k1 >= 0 and 0 <= b <= 1");
    }
    const auto start = std::chrono::steady_clock::now();  // (intra-query parallelism's clock)
    const IndexData& d = m_index->data();
    if (k == 0 || !d.segment || terms.empty()) return {};
    const bool default_params = p.k1 == Bm25Params{}.k1 && p.b == Bm25Params{}.b && !p.lucene_norms;
    // Sharded search: the whole collection's N, avgdl, df and bounds replace this index's own.
    const double avgdl = global ? global->collection.avgdl() : d.info.avgdl;
    auto norm =
        default_params && avgdl == d.info.avgdl ? m_impl->default_norm : m_impl->norm_for(p, avgdl);
    const float k1p1 = p.k1 + 1.0f;
    const double n = static_cast<double>(global ? global->collection.documents : d.info.documents);

    Bm25Query query;
    query.norm = norm->data();  // (`norm` keeps it alive until the search ends)
    query.k1p1 = k1p1;
    // Block bounds: the stored ones were computed by the builder for the default k1/b, exact
    // lengths and this index's own avgdl; they are valid only when the norms use exactly those
    // (a search with another avgdl, e.g. a collection's over shards, must recompute them).
    const double norm_avgdl = avgdl;  // the avgdl `norm` was computed with
    query.block_bound.stored = default_params && norm_avgdl == d.info.avgdl;
    query.block_bound.k1 = p.k1;
    query.block_bound.b = p.b;
    query.block_bound.k1p1 = k1p1;
    query.block_bound.lucene_norms = p.lucene_norms;
    query.block_bound.avgdl = norm_avgdl;
    // Merge duplicates (first occurrence order), resolve, drop absent and non-positive terms.
    auto& q = query.terms;
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
        const TermStats* g = global ? global->find(seen[i]) : nullptr;
        if (global && !g) {
            throw InvalidArgument("sharded search: the global statistics lack the query term '" +
                                  std::string(seen[i]) + "'");
        }
        // (A term absent here but present elsewhere is dropped like an absent one: the stable
        // sort below keeps the other terms in the order the whole collection gives them.)
        const double df = g ? static_cast<double>(g->df) : static_cast<double>(e->df);
        const std::uint32_t max_tf = g ? g->max_tf : e->max_tf;
        const std::uint32_t min_dl = g ? g->min_dl : e->min_dl;
        auto idf = static_cast<float>(std::log(1.0 + (n - df + 0.5) / (df + 0.5)));
        // Lucene 8+ drops BM25's constant (k1 + 1) factor: with Lucene's lengths, scores are
        // scaled like Lucene's too (the ranking does not change).
        float w = p.lucene_norms ? weights[i] * idf / k1p1 : weights[i] * idf;
        float frac_ub =
            default_params
                ? (g ? g->max_frac_default : e->max_frac_default)
                : detail::bm25_frac(
                      static_cast<float>(max_tf), k1p1,
                      detail::bm25_norm(
                          p.k1, p.b, p.lucene_norms ? detail::lucene_norm_length(min_dl) : min_dl,
                          avgdl));
        q.push_back({e, w, static_cast<double>(w) * static_cast<double>(frac_ub)});
    }
    if (q.empty()) return {};
    // Canonical term order, shared by every algorithm (scores are float sums in this order):
    // upper bound descending, ties by query position.
    std::stable_sort(q.begin(), q.end(),
                     [](const Bm25Term& a, const Bm25Term& b) { return a.ub > b.ub; });

    SearchAlgorithm alg = options.algorithm;
    const bool blocks = d.postings.has_blocks();
    if (alg == SearchAlgorithm::Auto) {
        alg = k > options.pruning_max_k ? SearchAlgorithm::Exhaustive
              : blocks                  ? SearchAlgorithm::BlockMaxMaxScore
                                        : SearchAlgorithm::TaatMaxScore;
    }
    if (alg == SearchAlgorithm::BlockMaxMaxScore && !blocks) {
        throw InvalidArgument(
            "BM25 algorithm block-max-maxscore needs block-max metadata (postings.bin version "
            "2); this index has " +
            (d.postings.loaded() ? "version " + std::to_string(d.postings.version())
                                 : std::string("no postings.bin")) +
            ": rebuild it or choose another algorithm");
    }
    const auto& intra = options.intra_query;
    const bool split = intra.parts >= 2;
    if (split && !(intra.after_ms >= 0.0 && std::isfinite(intra.after_ms) &&
                   intra.lend_ms >= 0.0 && std::isfinite(intra.lend_ms)))
        throw InvalidArgument("intra-query parallelism: after_ms and lend_ms must be finite and >= 0");
    if (intra.parts > kMaxIntraQueryParts)
        throw InvalidArgument("intra-query parallelism: parts must be at most " +
                              std::to_string(kMaxIntraQueryParts) + ", not " +
                              std::to_string(intra.parts));
    // Other threads' split queries first: their chunks are waiting.
    // (A thread lends at most lend_ms per query of its own, plus the chunk it is scanning then.)
    const auto lend_until =
        start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                    std::chrono::duration<double, std::milli>(split ? intra.lend_ms : 0.0));
    // Exhaustive scoring's predicted cost: the postings it decodes. A query with at least
    // exhaustive_min_postings splits at its start; a thread lends to exhaustive splits while
    // its own query's postings plus the chunks it takes stay below that, or below the owner's
    // remaining share (detail::LendBudget).
    std::uint64_t postings = 0;
    for (const auto& t : q) postings += static_cast<std::uint64_t>(t.entry->df);
    const std::uint64_t min_postings = split ? intra.exhaustive_min_postings : 0;
    detail::LendBudget budget{postings, min_postings};
    // The split clock of a block-max query starts after this help (intra-query parallelism
    // splits queries long by their own work, not by the time their thread lent to others).
    auto scan_start = start;
    if (split && m_impl->scheduler.pending()) {
        m_impl->help(lend_until, budget, true);
        scan_start = std::chrono::steady_clock::now();
    }
    auto ws = m_impl->acquire();
    try {
        // One case per algorithm (detail/bm25_*.hpp), each with the top-k queue it fills.
        std::vector<Hit> hits;
        switch (alg) {
            case SearchAlgorithm::MaxScore:
                hits = run<detail::Bm25MaxScore>(query, *ws, detail::TopKHeap(k));
                break;
            case SearchAlgorithm::BlockMaxMaxScore:
                if (split) {
                    hits = m_impl->search_split(query, *ws, k, intra, scan_start, lend_until, budget);
                } else {
                    hits = run<detail::Bm25BlockMaxMaxScore>(query, *ws, detail::TopKHeap(k));
                }
                break;
            case SearchAlgorithm::TaatMaxScore:
                hits = run<detail::Bm25TaatMaxScore>(query, *ws,
                                                     detail::TopKBuffer(k, d.idrank.data()));
                break;
            default:
                if (min_postings > 0 && postings >= min_postings && blocks) {
                    hits = m_impl->search_exhaustive_split(query, *ws, k, intra.parts, postings);
                } else {
                    hits = run<detail::Bm25Exhaustive>(query, *ws,
                                                       detail::TopKBuffer(k, d.idrank.data()));
                }
                break;
        }
        m_impl->release(std::move(ws));
        return hits;
    } catch (const Lucene::LuceneException& e) {
        // The workspace may hold stale accumulators: drop it.
        detail::rethrow_lucene(e, "search failed");
    }
}

ShardStats Bm25Searcher::term_stats(std::span<const std::string> terms,
                                    const CollectionStats& collection,
                                    const Bm25Params& params) const {
    const IndexData& d = m_index->data();
    ShardStats out;
    out.collection = collection_stats(*m_index);
    const Bm25Params defaults;
    const bool default_params =
        params.k1 == defaults.k1 && params.b == defaults.b && !params.lucene_norms;
    const double avgdl = collection.avgdl();
    std::shared_ptr<const std::vector<float>> norm;  // (default k1, b at the collection's avgdl)
    std::unique_ptr<Bm25Workspace> ws;
    for (const auto& term : terms) {
        TermStats& t = out.terms[term];
        const TermEntry* e = d.find_term(term);
        if (!e || e->df <= 0) continue;
        t.df = static_cast<std::uint64_t>(e->df);
        t.max_tf = e->max_tf;
        t.min_dl = e->min_dl;
        if (!default_params) continue;
        if (avgdl == d.info.avgdl) {  // the bound stored at index time is the one wanted
            t.max_frac_default = e->max_frac_default;
            continue;
        }
        {
            std::lock_guard lock(m_impl->mu);
            if (m_impl->bounds_avgdl != avgdl) {
                m_impl->bounds.clear();
                m_impl->bounds_avgdl = avgdl;
            }
            auto it = m_impl->bounds.find(term);
            if (it != m_impl->bounds.end()) {
                t.max_frac_default = it->second;
                continue;
            }
        }
        // Exactly the index builder's computation (index_builder.cpp), at the collection's avgdl.
        if (!norm) norm = m_impl->norm_for(defaults, avgdl);
        if (!ws) ws = m_impl->acquire();
        const float k1p1 = defaults.k1 + 1.0f;
        const float* nm = norm->data();
        const int32_t* docs = &*ws->docs.begin();
        const int32_t* freqs = &*ws->freqs.begin();
        float max_frac = 0;
        try {
            ws->for_blocks(ws->cursor(0), *e, [&](int32_t n) {
                for (int32_t j = 0; j < n; ++j) {
                    max_frac = std::max(max_frac,
                                        detail::bm25_frac(static_cast<float>(freqs[j]), k1p1,
                                                          nm[static_cast<std::uint32_t>(docs[j])]));
                }
            });
        } catch (const Lucene::LuceneException& ex) {
            detail::rethrow_lucene(ex, "reading postings failed");
        }
        t.max_frac_default = max_frac;
        std::lock_guard lock(m_impl->mu);
        if (m_impl->bounds_avgdl == avgdl) m_impl->bounds.emplace(term, max_frac);
    }
    if (ws) m_impl->release(std::move(ws));
    return out;
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
    return detail::search_batch(queries, threads, progress, cancel, [&](const Query& q) {
        return to_ranked_list(q.id, search(q.text, k, options));
    });
}

}  // namespace plumb::index
