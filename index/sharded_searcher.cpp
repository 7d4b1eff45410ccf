#include "index/sharded_searcher.hpp"

#include <algorithm>

#include "index/detail/batch_search.hpp"
#include "index/rm3.hpp"
#include "index/shard_manifest.hpp"
#include "plugin/error.hpp"

namespace plumb::index {

std::shared_ptr<const Bm25Searcher> ShardedSearcher::open_shard(const std::filesystem::path& dir,
                                                               const ShardManifest& manifest,
                                                               std::size_t i,
                                                               const IndexOpenOptions& options) {
    const auto where = (dir / ShardManifest::file_name()).string();
    const auto& m = manifest.shards.at(i);
    const auto shard_dir = manifest.shard_dir(dir, i);
    const auto name = "shard " + std::to_string(i) + " ('" + m.path + "')";
    std::error_code ec;
    if (!std::filesystem::is_directory(shard_dir, ec)) {
        throw IndexError(where + ": " + name + " is missing: no directory " + shard_dir.string());
    }
    std::shared_ptr<const Bm25Searcher> s;
    try {
        s = Bm25Searcher::open(shard_dir, options);
    } catch (const Error& e) {
        throw IndexError(where + ": " + name + " does not open: " + e.what());
    }
    const auto& info = s->index().info();
    if (info.documents != m.documents || info.total_length != m.total_length) {
        throw IndexError(where + ": " + name + " holds " + std::to_string(info.documents) +
                         " documents of total length " + std::to_string(info.total_length) +
                         ", the manifest says " + std::to_string(m.documents) + " and " +
                         std::to_string(m.total_length) +
                         " (a shard rebuilt or replaced after the manifest was written?)");
    }
    return s;
}

std::shared_ptr<const ShardedSearcher> ShardedSearcher::open(const std::filesystem::path& dir,
                                                             const IndexOpenOptions& options) {
    auto manifest = ShardManifest::read(dir);
    std::vector<std::shared_ptr<const Bm25Searcher>> shards;
    for (std::size_t i = 0; i < manifest.shards.size(); ++i) {
        shards.push_back(open_shard(dir, manifest, i, options));
    }
    return std::make_shared<const ShardedSearcher>(std::move(shards));
}

ShardedSearcher::ShardedSearcher(std::vector<std::shared_ptr<const Bm25Searcher>> shards)
    : m_shards(std::move(shards)) {
    if (m_shards.empty()) throw InvalidArgument("ShardedSearcher: no shards");
    std::vector<CollectionStats> c;
    for (const auto& s : m_shards) {
        if (!s) throw InvalidArgument("ShardedSearcher: null shard");
        const auto& a = s->index().info().analysis;
        const auto& a0 = m_shards.front()->index().info().analysis;
        if (a.name() != a0.name() || a.analyzer != a0.analyzer) {
            throw IndexError("sharded index: shard " + s->index().directory().string() +
                             " was built with analysis " + a.name() + ", the first shard with " +
                             a0.name());
        }
        c.push_back(collection_stats(s->index()));
    }
    m_collection = combine(std::span<const CollectionStats>(c));
}

ShardStats ShardedSearcher::global_stats(std::span<const std::string> terms,
                                         const Bm25Params& params) const {
    std::vector<ShardStats> per;
    per.reserve(m_shards.size());
    for (const auto& s : m_shards) per.push_back(s->term_stats(terms, m_collection, params));
    return combine(std::span<const ShardStats>(per));
}

std::vector<ShardHit> ShardedSearcher::search_terms(std::span<const WeightedTerm> terms,
                                                    std::size_t k,
                                                    const SearchOptions& options) const {
    if (k == 0 || terms.empty()) return {};
    std::vector<std::string> names;
    for (const auto& t : terms) names.push_back(t.term);
    std::sort(names.begin(), names.end());
    names.erase(std::unique(names.begin(), names.end()), names.end());
    const auto global = global_stats(names, options.bm25);
    std::vector<std::vector<ShardHit>> per;
    per.reserve(m_shards.size());
    for (std::size_t i = 0; i < m_shards.size(); ++i) {
        per.push_back(
            search_shard(*m_shards[i], static_cast<std::uint32_t>(i), terms, k, options, global));
    }
    // Each shard's hits come in ranking order: a k-way merge, not a sort of every hit.
    return merge_sorted_topk(per, k);
}

std::vector<ShardHit> ShardedSearcher::search(std::string_view query_text, std::size_t k,
                                              const SearchOptions& options) const {
    auto terms = m_shards.front()->query_terms(query_text);
    if (!options.rm3 || terms.empty() || k == 0) return search_terms(terms, k, options);
    const auto& rp = options.rm3_params;
    auto feedback = search_terms(terms, rp.fb_docs, options);
    std::vector<Rm3FeedbackDoc> docs;
    docs.reserve(feedback.size());
    for (const auto& h : feedback) {
        docs.push_back(rm3_feedback_doc(m_shards.at(h.shard)->index(), h.doc, h.score));
    }
    const auto df_terms = rm3_df_terms(docs);
    std::vector<ShardStats> per;
    for (const auto& s : m_shards) per.push_back(doc_freq_stats(s->index(), df_terms));
    const auto df = combine(std::span<const ShardStats>(per));
    auto expanded = rm3_expand(
        terms, docs,
        [&](std::string_view t) {
            const auto* st = df.find(t);
            return st ? st->df : std::uint64_t{0};
        },
        m_collection.documents, rp);
    return search_terms(expanded, k, options);
}

std::vector<RankedList> ShardedSearcher::search_batch(std::span<const Query> queries, std::size_t k,
                                                      const SearchOptions& options,
                                                      unsigned threads,
                                                      const ProgressCallback& progress,
                                                      const CancelToken* cancel) const {
    return detail::search_batch(queries, threads, progress, cancel, [&](const Query& q) {
        auto hits = search(q.text, k, options);
        RankedList list;
        list.qid = q.id;
        list.candidates.reserve(hits.size());
        for (auto& h : hits) {
            Candidate c;
            c.docid = std::move(h.docid);
            c.score = h.score;
            list.candidates.push_back(std::move(c));
        }
        return list;
    });
}

ShardedDocuments::ShardedDocuments(std::shared_ptr<const ShardedSearcher> searcher)
    : m_searcher(std::move(searcher)) {
    if (!m_searcher) throw InvalidArgument("ShardedDocuments: null searcher");
}

std::optional<std::string> ShardedDocuments::text(std::string_view docid) const {
    for (std::size_t i = 0; i < m_searcher->shard_count(); ++i) {
        if (auto t = m_searcher->shard(i).index().text(docid)) return t;
    }
    return std::nullopt;
}

std::uint64_t ShardedDocuments::size() const { return m_searcher->collection().documents; }

}  // namespace plumb::index
