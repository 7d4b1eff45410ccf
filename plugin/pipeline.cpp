#include "plugin/pipeline.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <mutex>
#include <set>

#include "plugin/error.hpp"
#include "plugin/hash.hpp"
#include "plugin/parallel.hpp"

namespace plumb {

namespace {
using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}
}  // namespace

struct Pipeline::Impl {
    PipelineSpec spec;
    std::size_t candidates = 0;
    std::size_t text_depth = 0;        ///< candidates fetched before the first text stage
    std::size_t first_text_stage = 0;  ///< index of the first re-ranker needing text
    bool fetch_text = false;
    std::vector<std::string> names;  ///< stats slots, pipeline order

    mutable std::mutex stats_mutex;
    /// Latency samples per slot, bounded: a uniform reservoir of at most kMaxSamples (Vitter's
    /// algorithm R with a deterministic generator), so that a long-running host's memory does
    /// not grow with the number of searches; count and mean are exact.
    static constexpr std::size_t kMaxSamples = 1 << 16;
    struct Slot {
        std::vector<double> samples;
        std::uint64_t count = 0;
        double sum = 0.0;
        std::uint64_t rng = 0;
        void add(double ms) {
            ++count;
            sum += ms;
            if (samples.size() < kMaxSamples) {
                samples.push_back(ms);
                return;
            }
            rng += 0x9E3779B97F4A7C15ull;  // splitmix64's sequence
            const std::uint64_t j = splitmix64(rng) % count;
            if (j < kMaxSamples) samples[static_cast<std::size_t>(j)] = ms;
        }
    };
    mutable std::vector<Slot> samples;  ///< per slot

    void fetch(RankedList& list, std::size_t n) const {
        n = std::min(n, list.candidates.size());
        for (std::size_t i = 0; i < n; ++i) {
            auto& c = list.candidates[i];
            if (!c.text.empty()) continue;
            auto t = spec.documents->text(c.docid);
            if (!t) {
                // Scoring an absent passage as an empty one would be silent data loss.
                throw ConfigError("pipeline: document '" + c.docid + "' (query " + list.qid +
                                  ") is not in the document source");
            }
            c.text = std::move(*t);
        }
    }
    std::vector<SearchResult> search_group(std::span<const Query> queries) const;
};

Pipeline::Pipeline(PipelineSpec spec) : m_impl(std::make_unique<Impl>()) {
    auto& s = m_impl->spec;
    s = std::move(spec);
    if (!s.first_stage) throw InvalidArgument("pipeline: no first stage");
    if (s.k == 0) throw InvalidArgument("pipeline: k must be positive");
    std::size_t deepest = 0;
    std::set<std::string> seen;
    auto add_name = [&](const std::string& n) {
        if (!seen.insert(n).second) {
            throw InvalidArgument("pipeline: two stages are named \"" + n +
                                  "\" (names key the score trace; give one another name)");
        }
        m_impl->names.push_back(n);
    };
    add_name(s.first_stage->name());
    bool first_text = true;
    for (std::size_t i = 0; i < s.rerankers.size(); ++i) {
        const auto& r = s.rerankers[i];
        if (!r) throw InvalidArgument("pipeline: null re-rank stage");
        if (r->depth() == 0) throw InvalidArgument("pipeline: stage " + r->name() + " has depth 0");
        deepest = std::max(deepest, r->depth());
        if (r->needs().text) {
            m_impl->fetch_text = true;
            m_impl->text_depth = std::max(m_impl->text_depth, r->depth());
            if (first_text) m_impl->first_text_stage = i;
            first_text = false;
        }
    }
    if ((m_impl->fetch_text || s.return_text) && !s.documents) {
        throw InvalidArgument("pipeline: a stage needs passage text but no document source is set");
    }
    // Statistics slots in execution order: the text fetch runs just before the first stage
    // that needs text.
    for (std::size_t i = 0; i < s.rerankers.size(); ++i) {
        if (m_impl->fetch_text && i == m_impl->first_text_stage) add_name("text");
        add_name(s.rerankers[i]->name());
    }
    for (const auto& f : s.post_filters) {
        if (!f) throw InvalidArgument("pipeline: null post-filter");
        add_name(f->name());
    }
    m_impl->candidates = s.candidates ? s.candidates : std::max(s.k, deepest);
    m_impl->samples.resize(m_impl->names.size());
}

Pipeline::~Pipeline() = default;
Pipeline::Pipeline(Pipeline&&) noexcept = default;
Pipeline& Pipeline::operator=(Pipeline&&) noexcept = default;

const PipelineSpec& Pipeline::spec() const noexcept { return m_impl->spec; }
std::vector<std::string> Pipeline::stage_names() const { return m_impl->names; }
std::size_t Pipeline::candidates() const noexcept { return m_impl->candidates; }

SearchResult Pipeline::search(const Query& query) const {
    return std::move(m_impl->search_group(std::span<const Query>(&query, 1)).front());
}

/// One pass of the pipeline over a group of queries: the first stage and every re-ranker see
/// the whole group (cross-query batching), post-filters each list. A stage's time is shared
/// equally among the group's queries.
std::vector<SearchResult> Pipeline::Impl::search_group(std::span<const Query> queries) const {
    const std::size_t n = queries.size();
    std::vector<SearchResult> out(n);
    std::vector<double> ms;
    ms.reserve(names.size());
    auto record = [&](const std::string& stage, Clock::time_point t0) {
        const double d = ms_since(t0) / static_cast<double>(n);
        for (auto& r : out) r.timings.push_back({stage, d});
        ms.push_back(d);
    };

    auto t0 = Clock::now();
    auto lists = spec.first_stage->retrieve(queries, candidates);
    lists.resize(n);
    for (std::size_t q = 0; q < n; ++q) {
        auto& list = lists[q];
        list.qid = queries[q].id;
        if (list.candidates.size() > candidates) list.candidates.resize(candidates);
        for (auto& c : list.candidates) {
            if (c.trace.empty()) c.trace.push_back({names[0], c.score});
        }
    }
    record(names[0], t0);

    for (std::size_t i = 0; i < spec.rerankers.size(); ++i) {
        const auto& stage = *spec.rerankers[i];
        if (fetch_text && i == first_text_stage) {
            t0 = Clock::now();
            for (auto& list : lists) fetch(list, text_depth);
            record("text", t0);
        }
        t0 = Clock::now();
        stage.rerank(queries, std::span<RankedList>(lists));
        record(stage.name(), t0);
    }
    for (const auto& f : spec.post_filters) {
        t0 = Clock::now();
        for (std::size_t q = 0; q < n; ++q) {
            StageMeasures measures = f->apply_measured(queries[q], lists[q]);
            if (!measures.empty()) out[q].reports.push_back({f->name(), std::move(measures)});
        }
        record(f->name(), t0);
    }
    for (std::size_t q = 0; q < n; ++q) {
        auto& list = lists[q];
        if (list.candidates.size() > spec.k) list.candidates.resize(spec.k);
        if (spec.return_text) {
            fetch(list, list.candidates.size());
        } else {
            for (auto& c : list.candidates) std::string().swap(c.text);
        }
        out[q].list = std::move(list);
    }
    {
        std::lock_guard lock(stats_mutex);
        for (std::size_t i = 0; i < ms.size() && i < samples.size(); ++i) {
            for (std::size_t q = 0; q < n; ++q) samples[i].add(ms[i]);
        }
    }
    return out;
}

std::vector<SearchResult> Pipeline::search_batch(std::span<const Query> queries,
                                                 const BatchOptions& options) const {
    std::vector<SearchResult> results(queries.size());
    const std::size_t group = std::max<std::size_t>(1, options.group);
    std::mutex progress_mutex;
    std::uint64_t done = 0;
    // One item per group of queries (threads: 0 = hardware concurrency, as parallel_for's).
    const std::size_t groups = (queries.size() + group - 1) / group;
    parallel_for(
        groups, options.threads,
        [&](std::size_t g, unsigned) {
            const std::size_t i = g * group;
            const std::size_t m = std::min(group, queries.size() - i);
            auto part = m_impl->search_group(queries.subspan(i, m));
            for (std::size_t j = 0; j < m; ++j) results[i + j] = std::move(part[j]);
            std::lock_guard lock(progress_mutex);
            done += m;
            if (options.progress) options.progress(done, queries.size());
        },
        options.cancel);
    if (options.cancel && options.cancel->requested())
        throw Error("pipeline: batch search cancelled");
    return results;
}

std::vector<StageStats> Pipeline::stats() const {
    std::vector<StageStats> out;
    std::lock_guard lock(m_impl->stats_mutex);
    for (std::size_t i = 0; i < m_impl->names.size(); ++i) {
        StageStats s;
        s.stage = m_impl->names[i];
        const auto& slot = m_impl->samples[i];
        std::vector<double> v = slot.samples;
        s.count = slot.count;
        if (!v.empty()) {
            std::sort(v.begin(), v.end());
            s.mean_ms = slot.sum / static_cast<double>(slot.count);
            // Nearest rank: the ceil(p * n)-th smallest value.
            auto rank = [&](double p) {
                auto r = static_cast<std::size_t>(std::ceil(p * static_cast<double>(v.size())));
                return v[std::clamp<std::size_t>(r, 1, v.size()) - 1];
            };
            s.p50_ms = rank(0.50);
            s.p99_ms = rank(0.99);
        }
        out.push_back(std::move(s));
    }
    return out;
}

void Pipeline::reset_stats() const {
    std::lock_guard lock(m_impl->stats_mutex);
    for (auto& v : m_impl->samples) v = Impl::Slot{};
}

Pipeline::Builder& Pipeline::Builder::first_stage(std::shared_ptr<const Retriever> retriever) {
    m_spec.first_stage = std::move(retriever);
    return *this;
}
Pipeline::Builder& Pipeline::Builder::rerank(std::shared_ptr<const RerankStage> stage) {
    m_spec.rerankers.push_back(std::move(stage));
    return *this;
}
Pipeline::Builder& Pipeline::Builder::post_filter(std::shared_ptr<const PostFilter> filter) {
    m_spec.post_filters.push_back(std::move(filter));
    return *this;
}
Pipeline::Builder& Pipeline::Builder::documents(std::shared_ptr<const DocumentSource> documents) {
    m_spec.documents = std::move(documents);
    return *this;
}
Pipeline::Builder& Pipeline::Builder::k(std::size_t k) {
    m_spec.k = k;
    return *this;
}
Pipeline::Builder& Pipeline::Builder::candidates(std::size_t n) {
    m_spec.candidates = n;
    return *this;
}
Pipeline::Builder& Pipeline::Builder::return_text(bool on) {
    m_spec.return_text = on;
    return *this;
}
Pipeline Pipeline::Builder::build() const { return Pipeline(m_spec); }

}  // namespace plumb
