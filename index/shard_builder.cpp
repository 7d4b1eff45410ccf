#include "index/shard_builder.hpp"

#include <chrono>
#include <cstdio>
#include <limits>
#include <queue>
#include <vector>

#include "index/passage_index.hpp"
#include "plugin/error.hpp"

namespace plumb::index {
namespace fs = std::filesystem;

std::string shard_dir_name(std::size_t i) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "shard-%03zu", i);
    return buf;
}

namespace {

/// Throws IndexError when two shards hold the same id (k-way merge of their sorted ids).
void check_unique_ids(const std::vector<std::shared_ptr<const PassageIndex>>& shards,
                      const CancelToken* cancel) {
    // by_id order is not public: sort each shard's ids here (shards are opened one at a time
    // by the caller's build; memory is one id list per shard).
    std::vector<std::vector<std::string_view>> ids(shards.size());
    for (std::size_t s = 0; s < shards.size(); ++s) {
        const auto n = shards[s]->size();
        ids[s].reserve(n);
        for (std::uint64_t d = 0; d < n; ++d) {
            ids[s].push_back(shards[s]->docid(static_cast<std::uint32_t>(d)));
        }
        std::sort(ids[s].begin(), ids[s].end());
    }
    using Head = std::pair<std::string_view, std::size_t>;  // id, shard
    std::priority_queue<Head, std::vector<Head>, std::greater<>> heap;
    std::vector<std::size_t> pos(shards.size(), 0);
    for (std::size_t s = 0; s < shards.size(); ++s) {
        if (!ids[s].empty()) heap.push({ids[s][0], s});
    }
    std::uint64_t steps = 0;
    std::string_view last;
    std::size_t last_shard = 0;
    bool any = false;
    while (!heap.empty()) {
        auto [id, s] = heap.top();
        heap.pop();
        if ((++steps & 65535) == 0 && cancel && cancel->requested()) throw Error("cancelled");
        if (any && id == last) {
            throw IndexError("duplicate document id '" + std::string(id) + "' in " +
                             shard_dir_name(last_shard) + " and " + shard_dir_name(s));
        }
        last = id;
        last_shard = s;
        any = true;
        if (++pos[s] < ids[s].size()) heap.push({ids[s][pos[s]], s});
    }
}

}  // namespace

ShardBuildStats build_shards(const fs::path& corpus, const fs::path& dir, std::size_t shards,
                             const IndexBuildOptions& options, const ProgressCallback& progress,
                             const CancelToken* cancel) {
    const auto t0 = std::chrono::steady_clock::now();
    if (shards == 0) throw InvalidArgument("build_shards: need at least one shard");
    if (corpus == "-") {
        throw InvalidArgument(
            "build_shards: the corpus is read several times, so it cannot be "
            "standard input");
    }
    if (options.first_document != 0 ||
        options.max_documents != std::numeric_limits<std::uint64_t>::max()) {
        throw InvalidArgument("build_shards: first_document / max_documents are set per shard");
    }
    // Pass 1: count the documents (and check the whole corpus reads).
    CorpusReaderOptions ro;
    ro.format = options.format;
    ro.skip_bad = options.skip_bad;
    ro.max_bad_share = options.max_bad_share;
    std::uint64_t total = 0, skipped = 0;
    {
        CorpusReader reader(corpus, ro);
        Document d;
        while (reader.next(d)) {
            if ((++total & 4095) == 0) {
                if (cancel && cancel->requested()) throw Error("cancelled");
                if (progress) progress(reader.bytes_read(), reader.size_bytes());
            }
        }
        skipped = reader.skipped();
    }
    if (total < shards) {
        throw InvalidArgument("build_shards: cannot split " + std::to_string(total) +
                              " documents into " + std::to_string(shards) + " non-empty shards");
    }
    if (fs::exists(dir / "plumb-index.json")) {
        throw InvalidArgument("build_shards: " + dir.string() +
                              " holds a single (unsharded) index; choose another directory");
    }
    fs::create_directories(dir);
    // A previous manifest goes first: a build that fails half-way must not leave a manifest
    // naming shards it has replaced.
    fs::remove(dir / ShardManifest::file_name());
    ShardBuildStats out;
    std::vector<std::shared_ptr<const PassageIndex>> opened;
    std::uint64_t first = 0;
    for (std::size_t i = 0; i < shards; ++i) {
        const std::uint64_t count = total / shards + (i >= shards - total % shards ? 1 : 0);
        IndexBuildOptions o = options;
        o.first_document = first;
        o.max_documents = count;
        const auto name = shard_dir_name(i);
        auto s = build_index(corpus, dir / name, o, progress, cancel);
        if (s.documents != count) {
            throw IndexError("build_shards: " + name + " received " + std::to_string(s.documents) +
                             " documents, expected " + std::to_string(count) +
                             " (the corpus changed while indexing?)");
        }
        out.manifest.shards.push_back({name, s.documents, s.total_length});
        out.total.documents += s.documents;
        out.total.total_length += s.total_length;
        out.total.terms += s.terms;  // (per shard; the collection's distinct terms are fewer)
        opened.push_back(PassageIndex::open(dir / name));
        first += count;
    }
    check_unique_ids(opened, cancel);
    out.total.skipped = skipped;
    out.manifest.write(dir);
    out.total.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return out;
}

}  // namespace plumb::index
