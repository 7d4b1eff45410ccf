#include "index/shard_builder.hpp"

#include <chrono>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <queue>
#include <vector>

#include "index/passage_index.hpp"
#include "plugin/error.hpp"
#include "plugin/log.hpp"

namespace plumb::index {
namespace fs = std::filesystem;

std::string shard_dir_name(std::size_t i) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "shard-%03zu", i);
    return buf;
}

ShardRange shard_range(std::uint64_t total, std::size_t shards, std::size_t i) {
    if (shards == 0 || i >= shards) throw InvalidArgument("shard_range: no shard " + std::to_string(i));
    const std::uint64_t n = shards, base = total / n, extra = total % n, first_extra = n - extra;
    ShardRange r;
    r.first = i * base + (i > first_extra ? i - first_extra : 0);
    r.count = base + (i >= first_extra ? 1 : 0);
    return r;
}

bool split_by_bytes(const fs::path& corpus, const IndexBuildOptions& options) {
    if (options.skip_bad || corpus == "-") return false;
    if (options.format != CorpusFormat::Tsv && options.format != CorpusFormat::Jsonl) return false;
    std::error_code ec;
    if (!fs::is_regular_file(corpus, ec)) return false;
    std::FILE* f = std::fopen(corpus.string().c_str(), "rb");
    if (!f) throw IoError(corpus.string() + ": cannot open: " + std::strerror(errno));
    unsigned char magic[2] = {0, 0};
    const bool gz = std::fread(magic, 1, 2, f) == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
    std::fclose(f);
    return !gz;
}

ShardBytes shard_bytes(std::uint64_t size, std::size_t shards, std::size_t i) {
    if (shards == 0 || i >= shards) throw InvalidArgument("shard_bytes: no shard " + std::to_string(i));
    // floor(size * j / shards) without overflow: size = q * shards + r.
    const std::uint64_t n = shards, q = size / n, r = size % n;
    auto at = [&](std::uint64_t j) { return q * j + r * j / n; };
    return {at(i), at(i + 1)};
}

std::vector<fs::path> remove_stale_shards(const fs::path& dir, const ShardManifest& manifest) {
    std::vector<fs::path> removed;
    std::error_code ec;
    fs::directory_iterator it(dir, ec), end;
    std::vector<fs::path> stale;
    for (; !ec && it != end; it.increment(ec)) {
        const auto name = it->path().filename().string();
        if (name.size() < 9 || name.compare(0, 6, "shard-") != 0) continue;
        if (name.find_first_not_of("0123456789", 6) != std::string::npos) continue;
        if (!it->is_directory(ec)) continue;
        bool named = false;
        for (const auto& s : manifest.shards) named = named || s.path == name;
        if (!named) stale.push_back(it->path());
    }
    for (const auto& p : stale) {
        std::error_code rec;
        fs::remove_all(p, rec);
        if (rec) {
            log(LogLevel::Warning, "could not remove the stale shard " + p.string() + ": " +
                                       rec.message());
        } else {
            removed.push_back(p);
        }
    }
    return removed;
}

void check_shard_bytes(const fs::path& corpus, std::size_t shards, std::size_t i,
                       std::uint64_t size, std::uint64_t documents) {
    if (documents > 0) return;
    const auto bytes = shard_bytes(size, shards, i);
    throw InvalidArgument("build_shards: " + shard_dir_name(i) + " (the lines of " +
                          corpus.string() + " starting in bytes [" + std::to_string(bytes.first) +
                          ", " + std::to_string(bytes.end) + ")) holds no document: " +
                          std::to_string(shards) +
                          " shards are too many for this corpus; give fewer");
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
        options.max_documents != std::numeric_limits<std::uint64_t>::max() ||
        options.first_byte != 0 || options.end_byte != std::numeric_limits<std::uint64_t>::max()) {
        throw InvalidArgument(
            "build_shards: first_document / max_documents / first_byte / end_byte are set per "
            "shard");
    }
    const bool by_bytes = split_by_bytes(corpus, options);
    std::uint64_t size = 0;
    // Pass 1 (split by documents): count them (and check the whole corpus reads).
    CorpusReaderOptions ro;
    ro.format = options.format;
    ro.skip_bad = options.skip_bad;
    ro.max_bad_share = options.max_bad_share;
    std::uint64_t total = 0, skipped = 0;
    if (by_bytes) {
        size = fs::file_size(corpus);
    } else {
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
    if (!by_bytes && total < shards) {
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
    for (std::size_t i = 0; i < shards; ++i) {
        IndexBuildOptions o = options;
        std::uint64_t count = 0;
        if (by_bytes) {
            const auto bytes = shard_bytes(size, shards, i);
            o.first_byte = bytes.first;
            o.end_byte = bytes.end;
            o.allow_empty = true;  // (checked below, naming the range)
        } else {
            const auto range = shard_range(total, shards, i);
            count = range.count;
            o.first_document = range.first;
            o.max_documents = count;
        }
        const auto name = shard_dir_name(i);
        auto s = build_index(corpus, dir / name, o, progress, cancel);
        if (by_bytes) check_shard_bytes(corpus, shards, i, size, s.documents);
        if (!by_bytes && s.documents != count) {
            throw IndexError("build_shards: " + name + " received " + std::to_string(s.documents) +
                             " documents, expected " + std::to_string(count) +
                             " (the corpus changed while indexing?)");
        }
        out.manifest.shards.push_back({name, s.documents, s.total_length});
        out.total.documents += s.documents;
        out.total.total_length += s.total_length;
        out.total.terms += s.terms;  // (per shard; the collection's distinct terms are fewer)
        opened.push_back(PassageIndex::open(dir / name));
    }
    check_unique_ids(opened, cancel);
    out.total.skipped = skipped;
    out.manifest.write(dir);
    remove_stale_shards(dir, out.manifest);
    out.total.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return out;
}

}  // namespace plumb::index
