#include "mpi/sharded_search.hpp"

#include <fcntl.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <limits>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_set>
#include <utility>

#include "index/rm3.hpp"
#include "index/shard_manifest.hpp"
#include "index/shard_merge.hpp"
#include "index/sharded_searcher.hpp"
#include "mpi/detail_bytes.hpp"
#include "plugin/parallel.hpp"
#include "plugin/trec_run.hpp"

namespace plumb::mpi {
namespace ix = plumb::index;

namespace {

/// search_run's writer writes the run text in slices of this many bytes.
constexpr std::size_t kWriteSlice = std::size_t{1} << 20;

/// Starts the disk write of what `out` holds so far, without waiting for it (Linux:
/// sync_file_range), so that the commit's fsync after the last batch waits for that batch's
/// pages, not for the whole run's. Durability is still the commit's fsync; a failure here is
/// left for that fsync to report.
void start_writeback(AtomicFile& out) {
#ifdef __linux__
    if (std::fflush(out.stream()) == 0) {
        ::sync_file_range(::fileno(out.stream()), 0, 0, SYNC_FILE_RANGE_WRITE);
    }
#else
    (void)out;
#endif
}

void check_cancel(const CancelToken* cancel) {
    if (cancel && cancel->requested()) throw Error("cancelled");
}

/// Adds the seconds since the last call to `*into`.
class Clock {
public:
    void to(double& into) {
        const auto now = std::chrono::steady_clock::now();
        into += std::chrono::duration<double>(now - m_last).count();
        m_last = now;
    }

private:
    std::chrono::steady_clock::time_point m_last = std::chrono::steady_clock::now();
};

std::vector<std::string> unique_names(std::span<const ix::WeightedTerm> terms) {
    std::vector<std::string> names;
    names.reserve(terms.size());
    for (const auto& t : terms) names.push_back(t.term);
    std::sort(names.begin(), names.end());
    names.erase(std::unique(names.begin(), names.end()), names.end());
    return names;
}

}  // namespace

ShardedSearch::ShardedSearch(const Comm& comm, const std::filesystem::path& dir,
                             const ix::IndexOpenOptions& options)
    : m_comm(comm) {
    std::string analysis;
    m_comm.collective([&] {
        const auto manifest = ix::ShardManifest::read(dir);
        const auto shards = manifest.shards.size();
        if (static_cast<std::size_t>(m_comm.size()) > shards) {
            throw InvalidArgument("search: " + std::to_string(m_comm.size()) + " MPI ranks for " +
                                  std::to_string(shards) + " shards in " + dir.string() +
                                  "; run at most one rank per shard");
        }
        for (std::size_t i = static_cast<std::size_t>(m_comm.rank()); i < shards;
             i += static_cast<std::size_t>(m_comm.size())) {
            m_shards.emplace_back(static_cast<std::uint32_t>(i),
                                  ix::ShardedSearcher::open_shard(dir, manifest, i, options));
        }
        // Every shard a rank holds must share its analysis (the ranks are compared below).
        const auto& a0 = m_shards.front().second->index().info().analysis;
        analysis = a0.name() + "/" + std::to_string(static_cast<int>(a0.analyzer));
        for (const auto& [i, s] : m_shards) {
            const auto& a = s->index().info().analysis;
            if (a.name() != a0.name() || a.analyzer != a0.analyzer) {
                throw IndexError("sharded index: shard " + s->index().directory().string() +
                                 " was built with analysis " + a.name() + ", shard " +
                                 std::to_string(m_shards.front().first) + " with " + a0.name());
            }
        }
    });
    const auto all = m_comm.allgather(analysis);
    m_comm.collective([&] {
        for (int r = 1; r < m_comm.size(); ++r) {
            if (all[r] != all[0]) {
                throw IndexError("sharded index " + dir.string() +
                                 ": the shards were built with different analysis (" + all[0] +
                                 " on rank 0, " + all[r] + " on rank " + std::to_string(r) + ")");
            }
        }
    });
    std::uint64_t c[2] = {0, 0};
    for (const auto& [i, s] : m_shards) {
        const auto cs = ix::collection_stats(s->index());
        c[0] += cs.documents;
        c[1] += cs.total_length;
    }
    m_comm.allreduce_sum(std::span<std::uint64_t>(c, 2));
    m_collection.documents = c[0];
    m_collection.total_length = c[1];
}

std::vector<ShardedSearch::Timings> ShardedSearch::all_timings() const {
    detail::ByteWriter w;
    for (double v : {m_timings.local, m_timings.exchange, m_timings.merge, m_timings.format,
                     m_timings.write}) {
        w.put<double>(v);
    }
    const auto all = m_comm.allgather(w.bytes());
    std::vector<Timings> out;
    for (const auto& bytes : all) {
        detail::ByteReader r(bytes);
        Timings t;
        for (double* v : {&t.local, &t.exchange, &t.merge, &t.format, &t.write}) {
            *v = r.get<double>();
        }
        out.push_back(t);
    }
    return out;
}

namespace {

using detail::MergedHit;

/// The collection's ranking order (shard_hit_before) on views.
bool hit_before(const MergedHit& a, const MergedHit& b) noexcept {
    return a.score > b.score || (a.score == b.score && a.id < b.id);
}

/// Appends one hit to a packed list: score, (shard, doc) when `located`, the id.
void put_hit(detail::ByteWriter& w, float score, std::uint32_t shard, std::uint32_t doc,
             std::string_view id, bool located) {
    w.put<float>(score);
    if (located) {
        w.put<std::uint32_t>(shard);
        w.put<std::uint32_t>(doc);
    }
    w.put_string(id);
}

/// Reads one packed list of `rank` into `list` (views into the reader's bytes), checking that
/// it is strictly in ranking order.
void read_list(detail::ByteReader& rd, bool located, int rank, std::vector<MergedHit>& list) {
    const auto hits = rd.get<std::uint32_t>();
    list.clear();
    list.reserve(hits);
    for (std::uint32_t h = 0; h < hits; ++h) {
        MergedHit hit;
        hit.score = rd.get<float>();
        if (located) {
            hit.shard = rd.get<std::uint32_t>();
            hit.doc = rd.get<std::uint32_t>();
        }
        hit.id = rd.get_view();
        if (!list.empty() && !hit_before(list.back(), hit)) {
            throw Error("MPI: rank " + std::to_string(rank) +
                        "'s hits are not in ranking order at '" + std::string(hit.id) + "'");
        }
        list.push_back(hit);
    }
}

}  // namespace

/// Ids are unique over the shards (both builders check it): an id on two ranks shows as two
/// equal neighbours in the output (same document, same score) and is an error.
void detail::merge_hits(std::span<const std::vector<MergedHit>> lists, std::size_t k,
                        std::vector<MergedHit>& out) {
    const std::size_t start = out.size();
    std::vector<std::size_t> pos(lists.size(), 0);
    if (lists.size() <= 8) {
        while (out.size() - start < k) {
            std::size_t best = lists.size();
            for (std::size_t l = 0; l < lists.size(); ++l) {
                if (pos[l] == lists[l].size()) continue;
                if (best == lists.size() || hit_before(lists[l][pos[l]], lists[best][pos[best]])) {
                    best = l;
                }
            }
            if (best == lists.size()) break;
            out.push_back(lists[best][pos[best]++]);
        }
    } else {
        using Head = std::pair<std::size_t, std::size_t>;  // list, position
        auto worse = [&](const Head& a, const Head& b) {
            return hit_before(lists[b.first][b.second], lists[a.first][a.second]);
        };
        std::vector<Head> heap;
        for (std::size_t l = 0; l < lists.size(); ++l) {
            if (!lists[l].empty()) heap.emplace_back(l, 0);
        }
        std::make_heap(heap.begin(), heap.end(), worse);
        while (!heap.empty() && out.size() - start < k) {
            std::pop_heap(heap.begin(), heap.end(), worse);
            const auto [l, p] = heap.back();
            heap.pop_back();
            out.push_back(lists[l][p]);
            if (p + 1 < lists[l].size()) {
                heap.emplace_back(l, p + 1);
                std::push_heap(heap.begin(), heap.end(), worse);
            }
        }
    }
    for (std::size_t i = start + 1; i < out.size(); ++i) {
        if (!hit_before(out[i - 1], out[i])) {
            throw Error("document id '" + std::string(out[i].id) +
                        "' comes from two ranks (a document in two shards)");
        }
    }
}

void ShardedSearch::recycle(Merged&& used) const { m_scratch.spare = std::move(used); }

ShardedSearch::Merged ShardedSearch::round(
    std::span<const Query> queries, std::size_t first,
    const std::vector<std::vector<ix::WeightedTerm>>& terms, std::size_t k,
    const ix::SearchOptions& options, unsigned threads, bool everywhere,
    const CancelToken* cancel) const {
    const std::size_t n = terms.size();
    Clock clock;
    auto& tm = m_timings;
    // Step 1: this rank's statistics of every query's terms, in flat arrays (query, term).
    std::vector<std::vector<std::string>> names(n);
    std::vector<std::size_t> offset(n + 1, 0);
    for (std::size_t q = 0; q < n; ++q) {
        if (k > 0) names[q] = unique_names(terms[q]);
        offset[q + 1] = offset[q] + names[q].size();
    }
    const std::size_t slots = offset[n];
    std::vector<std::uint64_t> df(slots, 0);
    std::vector<std::uint32_t> max_tf(slots, 0);
    std::vector<std::uint32_t> min_dl(slots, std::numeric_limits<std::uint32_t>::max());
    std::vector<float> max_frac(slots, 0.0f);
    m_comm.collective([&] {
        parallel_for(n, threads, [&](std::size_t q, unsigned) {
            check_cancel(cancel);
            if (names[q].empty()) return;
            std::vector<ix::ShardStats> per;
            for (const auto& [i, s] : m_shards) {
                per.push_back(s->term_stats(names[q], m_collection, options.bm25));
            }
            const auto local = ix::combine(std::span<const ix::ShardStats>(per));
            for (std::size_t j = 0; j < names[q].size(); ++j) {
                const auto* t = local.find(names[q][j]);
                if (!t) continue;
                const auto slot = offset[q] + j;
                df[slot] = t->df;
                max_tf[slot] = t->max_tf;
                min_dl[slot] = t->min_dl;
                max_frac[slot] = t->max_frac_default;
            }
        });
    });
    clock.to(tm.local);
    m_comm.allreduce_sum(df);
    m_comm.allreduce_max(max_tf);
    m_comm.allreduce_min(min_dl);
    m_comm.allreduce_max(max_frac);
    clock.to(tm.exchange);

    // Step 2: this rank's top k per query, with the global statistics, packed: a count, then
    // per hit the score, (shard, doc) in the feedback round (`everywhere`), and the id.
    const bool located = everywhere;
    auto& packed = m_scratch.packed;  // (each string keeps its capacity from the last batch)
    if (packed.size() < n) packed.resize(n);
    m_comm.collective([&] {
        parallel_for(n, threads, [&](std::size_t q, unsigned) {
            check_cancel(cancel);
            detail::ByteWriter w(std::move(packed[q]));
            if (names[q].empty()) {
                w.put<std::uint32_t>(0);
                packed[q] = std::move(w.bytes());
                return;
            }
            ix::ShardStats global;
            global.collection = m_collection;
            for (std::size_t j = 0; j < names[q].size(); ++j) {
                const auto slot = offset[q] + j;
                global.terms[names[q][j]] = {df[slot], max_tf[slot], min_dl[slot],
                                             max_frac[slot]};
            }
            if (m_shards.size() == 1) {
                // One shard: its hits are already in the collection's ranking order (ties by
                // id), packed with their ids as views of the shard's id table.
                const auto& [i, s] = m_shards.front();
                const auto hits = s->search_terms(terms[q], k, options, global);
                w.put<std::uint32_t>(static_cast<std::uint32_t>(hits.size()));
                for (const auto& h : hits) {
                    put_hit(w, h.score, i, h.doc, s->index().docid(h.doc), located);
                }
            } else {
                std::vector<std::vector<ix::ShardHit>> per;
                for (const auto& [i, s] : m_shards) {
                    per.push_back(ix::search_shard(*s, i, terms[q], k, options, global));
                }
                const auto top = ix::merge_sorted_topk(per, k);
                w.put<std::uint32_t>(static_cast<std::uint32_t>(top.size()));
                for (const auto& h : top) put_hit(w, h.score, h.shard, h.doc, h.docid, located);
            }
            packed[q] = std::move(w.bytes());
        });
    });
    // Every rank's lists of query q go to q's owner (all ranks with `everywhere`), which
    // merges them: the merge is spread over the ranks, 1/R of the queries each. The lists are
    // in query order, so the parts for ranks 0, 1, ... follow each other in one buffer.
    const auto part = partition(n, m_comm.rank(), m_comm.size());
    auto& send = m_scratch.send;
    send.clear();
    std::vector<std::size_t> send_offsets{0};
    for (int r = 0; r < m_comm.size(); ++r) {
        const auto pr = partition(n, r, m_comm.size());
        for (std::size_t q = pr.first; q < pr.first + pr.count; ++q) send += packed[q];
        send_offsets.push_back(send.size());
    }
    Merged out = std::move(m_scratch.spare);
    clock.to(tm.local);
    if (everywhere) {
        m_comm.allgather(send, out.bytes, out.parts);
    } else {
        m_comm.alltoall(send, send_offsets, out.bytes, out.parts);
    }
    clock.to(tm.exchange);
    const std::size_t count = everywhere ? n : part.count;
    const std::size_t first_merged = everywhere ? 0 : part.first;
    // (out.bytes stays in place from here: the views point into it)
    m_comm.collective([&] {
        std::vector<detail::ByteReader> readers;
        for (std::size_t r = 0; r + 1 < out.parts.size(); ++r) {
            readers.emplace_back(std::string_view(out.bytes).substr(
                out.parts[r], out.parts[r + 1] - out.parts[r]));
        }
        std::vector<std::vector<MergedHit>> per(readers.size());
        out.hits.clear();
        out.offsets.clear();
        out.offsets.reserve(count + 1);
        out.offsets.push_back(0);
        // (a guess, not a bound: short lists would make k per query a large over-reservation)
        out.hits.reserve(count * std::min<std::size_t>(k, 1000));
        for (std::size_t q = 0; q < count; ++q) {
            for (std::size_t r = 0; r < readers.size(); ++r) {
                read_list(readers[r], located, static_cast<int>(r), per[r]);
            }
            try {
                detail::merge_hits(per, k, out.hits);
            } catch (const Error& e) {
                const auto i = first_merged + q;
                throw Error("MPI: query '" + queries[i].id + "' (query " +
                            std::to_string(first + i + 1) + " of the topics): " + e.what());
            }
            out.offsets.push_back(out.hits.size());
        }
        for (std::size_t r = 0; r < readers.size(); ++r) {
            if (!readers[r].done())
                throw Error("MPI: excess bytes in rank " + std::to_string(r) + "'s hits");
        }
    });
    clock.to(tm.merge);
    return out;
}

ShardedSearch::Merged ShardedSearch::part_hits(std::span<const Query> queries, std::size_t first,
                                               std::size_t k, const ix::SearchOptions& options,
                                               unsigned threads,
                                               const CancelToken* cancel) const {
    threads = std::max(1u, threads);
    const std::size_t n = queries.size();
    Clock clock;
    auto& tm = m_timings;
    std::vector<std::vector<ix::WeightedTerm>> terms(n);
    const auto& analyser = *m_shards.front().second;
    m_comm.collective([&] {
        parallel_for(n, threads, [&](std::size_t q, unsigned) {
            terms[q] = analyser.query_terms(queries[q].text);
        });
    });
    clock.to(tm.local);
    Merged hits;
    if (!options.rm3 || k == 0) {
        hits = round(queries, first, terms, k, options, threads, false, cancel);
    } else {
        const auto& rp = options.rm3_params;
        // Queries without terms are not expanded (their result is empty, as on one index).
        auto feedback = round(queries, first, terms, rp.fb_docs, options, threads, true, cancel);
        clock = Clock();
        // The feedback documents this rank holds, analysed by it, then shared with all ranks.
        std::vector<std::string> packed(n);
        m_comm.collective([&] {
            parallel_for(n, threads, [&](std::size_t q, unsigned) {
                check_cancel(cancel);
                detail::ByteWriter w;
                const auto fb = feedback.list(q);
                for (std::size_t p = 0; p < fb.size(); ++p) {
                    const auto& h = fb[p];
                    for (const auto& [i, s] : m_shards) {
                        if (i != h.shard) continue;
                        const auto doc = ix::rm3_feedback_doc(s->index(), h.doc, h.score);
                        w.put<std::uint32_t>(static_cast<std::uint32_t>(q));
                        w.put<std::uint32_t>(static_cast<std::uint32_t>(p));
                        w.put<float>(doc.score);
                        w.put<std::uint32_t>(static_cast<std::uint32_t>(doc.counts.size()));
                        for (const auto& c : doc.counts) {
                            w.put_string(c.term);
                            w.put<std::uint32_t>(c.count);
                        }
                    }
                }
                packed[q] = std::move(w.bytes());
            });
        });
        std::string mine;
        for (auto& p : packed) mine += p;
        packed.clear();
        clock.to(tm.local);
        const auto all = m_comm.allgather(mine);
        clock.to(tm.exchange);
        std::vector<std::vector<ix::Rm3FeedbackDoc>> docs(n);
        std::vector<std::vector<std::string>> df_terms(n);
        std::vector<std::size_t> offset(n + 1, 0);
        m_comm.collective([&] {
            for (std::size_t q = 0; q < n; ++q) docs[q].resize(feedback.list(q).size());
            for (const auto& bytes : all) {
                detail::ByteReader rd(bytes);
                while (!rd.done()) {
                    const auto q = rd.get<std::uint32_t>();
                    const auto p = rd.get<std::uint32_t>();
                    if (q >= n || p >= docs[q].size()) {
                        throw Error("MPI: a feedback document of an unknown query");
                    }
                    auto& d = docs[q][p];
                    d.score = rd.get<float>();
                    const auto m = rd.get<std::uint32_t>();
                    d.counts.reserve(m);
                    for (std::uint32_t j = 0; j < m; ++j) {
                        ix::Rm3TermCount c;
                        c.term = rd.get_string();
                        c.count = rd.get<std::uint32_t>();
                        d.counts.push_back(std::move(c));
                    }
                }
            }
            for (std::size_t q = 0; q < n; ++q) {
                if (!terms[q].empty()) df_terms[q] = ix::rm3_df_terms(docs[q]);
                offset[q + 1] = offset[q] + df_terms[q].size();
            }
        });
        // Collection df of the candidate expansion terms.
        std::vector<std::uint64_t> df(offset[n], 0);
        m_comm.collective([&] {
            parallel_for(n, threads, [&](std::size_t q, unsigned) {
                check_cancel(cancel);
                if (df_terms[q].empty()) return;
                for (const auto& [i, s] : m_shards) {
                    const auto st = ix::doc_freq_stats(s->index(), df_terms[q]);
                    for (std::size_t j = 0; j < df_terms[q].size(); ++j) {
                        if (const auto* t = st.find(df_terms[q][j])) df[offset[q] + j] += t->df;
                    }
                }
            });
        });
        clock.to(tm.local);
        m_comm.allreduce_sum(df);
        clock.to(tm.exchange);
        std::vector<std::vector<ix::WeightedTerm>> expanded(n);
        m_comm.collective([&] {
            parallel_for(n, threads, [&](std::size_t q, unsigned) {
                if (terms[q].empty()) return;
                expanded[q] = ix::rm3_expand(
                    terms[q], docs[q],
                    [&](std::string_view t) -> std::uint64_t {
                        const auto& names = df_terms[q];
                        auto it = std::lower_bound(names.begin(), names.end(), t);
                        if (it == names.end() || *it != t) return 0;
                        return df[offset[q] + static_cast<std::size_t>(it - names.begin())];
                    },
                    m_collection.documents, rp);
            });
        });
        clock.to(tm.local);
        recycle(std::move(feedback));
        hits = round(queries, first, expanded, k, options, threads, false, cancel);
    }
    return hits;
}

std::vector<RankedList> ShardedSearch::search_part(std::span<const Query> queries, std::size_t k,
                                                   const ix::SearchOptions& options,
                                                   unsigned threads,
                                                   const CancelToken* cancel) const {
    auto hits = part_hits(queries, 0, k, options, threads, cancel);
    const auto part = partition(queries.size(), m_comm.rank(), m_comm.size());
    std::vector<RankedList> out(hits.size());
    for (std::size_t q = 0; q < hits.size(); ++q) {
        out[q].qid = queries[part.first + q].id;
        const auto list = hits.list(q);
        out[q].candidates.resize(list.size());
        for (std::size_t i = 0; i < list.size(); ++i) {
            out[q].candidates[i].docid = std::string(list[i].id);
            out[q].candidates[i].score = list[i].score;
        }
    }
    recycle(std::move(hits));
    return out;
}

std::vector<RankedList> ShardedSearch::search_batch(std::span<const Query> queries, std::size_t k,
                                                    const ix::SearchOptions& options,
                                                    unsigned threads,
                                                    const ProgressCallback& progress,
                                                    const CancelToken* cancel) const {
    const auto mine = search_part(queries, k, options, threads, cancel);
    Clock clock;
    std::string packed;
    {
        detail::ByteWriter w;
        for (const auto& l : mine) {
            w.put<std::uint32_t>(static_cast<std::uint32_t>(l.candidates.size()));
            for (const auto& c : l.candidates) {
                w.put_string(c.docid);
                w.put<float>(c.score);
            }
        }
        packed = std::move(w.bytes());
    }
    const auto parts = m_comm.gather(packed, 0);
    clock.to(m_timings.exchange);
    std::vector<RankedList> out;
    m_comm.collective([&] {
        if (m_comm.rank() != 0) return;
        out.resize(queries.size());
        for (int r = 0; r < m_comm.size(); ++r) {
            const auto part = partition(queries.size(), r, m_comm.size());
            detail::ByteReader rd(parts[static_cast<std::size_t>(r)]);
            for (std::size_t q = part.first; q < part.first + part.count; ++q) {
                out[q].qid = queries[q].id;
                const auto hits = rd.get<std::uint32_t>();
                out[q].candidates.resize(hits);
                for (auto& c : out[q].candidates) {
                    c.docid = rd.get_string();
                    c.score = rd.get<float>();
                }
            }
            if (!rd.done())
                throw Error("MPI: excess bytes in rank " + std::to_string(r) + "'s lists");
        }
    });
    clock.to(m_timings.merge);
    if (progress && m_comm.rank() == 0) progress(queries.size(), queries.size());
    return out;
}

std::uint64_t ShardedSearch::search_run(std::span<const Query> queries, std::size_t k,
                                        const ix::SearchOptions& options, std::string_view tag,
                                        AtomicFile* out, unsigned threads, std::size_t batch,
                                        const ProgressCallback& progress,
                                        const CancelToken* cancel) const {
    batch = std::max<std::size_t>(batch, 1);
    const bool root = m_comm.rank() == 0;
    m_comm.collective([&] {
        if (root && out == nullptr) throw InvalidArgument("search_run: rank 0 needs an output");
    });
    // Rank 0 writes batch b on this thread while every rank searches batch b + 1. The buffers
    // live across batches (their pages are reused): `text` (this rank's lines), and on rank 0
    // `receiving` (every rank's lines of the batch) and `writing` (the batch being written),
    // swapped once the writer is done with the previous batch.
    std::thread writer;
    std::string text, receiving, writing;
    std::vector<std::string> formatted;
    std::exception_ptr write_error;
    auto finish_write = [&] {
        if (writer.joinable()) writer.join();
        if (write_error) std::rethrow_exception(std::exchange(write_error, nullptr));
    };
    std::uint64_t lines = 0;
    std::size_t done = 0;
    try {
        for (std::size_t start = 0; start < queries.size(); start += batch) {
            const auto n = std::min(batch, queries.size() - start);
            const auto part = queries.subspan(start, n);
            auto mine = part_hits(part, start, k, options, threads, cancel);
            const auto owned = queries.subspan(
                start + partition(n, m_comm.rank(), m_comm.size()).first, mine.size());
            Clock clock;
            // The lines of this rank's part, straight from the merged views.
            text.clear();
            if (threads <= 1) {
                for (std::size_t q = 0; q < mine.size(); ++q) {
                    const auto list = mine.list(q);
                    for (std::size_t i = 0; i < list.size(); ++i) {
                        append_trec_line(text, owned[q].id, list[i].id, i + 1, list[i].score, tag);
                    }
                }
            } else {
                if (formatted.size() < mine.size()) formatted.resize(mine.size());
                parallel_for(mine.size(), threads, [&](std::size_t q, unsigned) {
                    const auto list = mine.list(q);
                    formatted[q].clear();
                    for (std::size_t i = 0; i < list.size(); ++i) {
                        append_trec_line(formatted[q], owned[q].id, list[i].id, i + 1,
                                         list[i].score, tag);
                    }
                });
                for (std::size_t q = 0; q < mine.size(); ++q) text += formatted[q];
            }
            lines += mine.hits.size();
            recycle(std::move(mine));
            clock.to(m_timings.format);
            m_comm.gather_concat(text, receiving, 0);
            clock.to(m_timings.exchange);
            m_comm.collective([&] {
                if (!root) return;
                finish_write();
                std::swap(writing, receiving);
                writer = std::thread([&] {
                    try {
                        // In slices: one write(2) of a whole batch's text (tens of MB) costs
                        // this machine's kernel several times the system time of the same
                        // bytes in 1 MiB writes (200 MB: 0.37-0.54 s in 40 MB writes, 0.05-0.07 s
                        // in 1 MiB ones), time taken from the cores the ranks search on.
                        const std::string_view all(writing);
                        for (std::size_t at = 0; at < all.size(); at += kWriteSlice) {
                            out->write(all.substr(at, kWriteSlice));
                        }
                        start_writeback(*out);
                    } catch (...) {
                        write_error = std::current_exception();
                    }
                });
            });
            clock.to(m_timings.write);
            done += n;
            if (progress && root) progress(done, queries.size());
        }
        m_comm.collective([&] {
            if (root) finish_write();
        });
    } catch (...) {
        if (writer.joinable()) writer.join();
        throw;
    }
    std::uint64_t total[1] = {lines};
    m_comm.allreduce_sum(std::span<std::uint64_t>(total, 1));
    return total[0];
}

}  // namespace plumb::mpi
