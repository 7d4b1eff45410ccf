#include "mpi/sharded_build.hpp"

#include <algorithm>
#include <chrono>
#include <limits>
#include <map>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "index/corpus.hpp"
#include "index/passage_index.hpp"
#include "mpi/detail_bytes.hpp"
#include "plugin/hash.hpp"
#include "plugin/text_io.hpp"

namespace plumb::mpi {
namespace fs = std::filesystem;
using index::shard_dir_name;

namespace {

/// Step 1's count of a single TSV or JSONL file without skip_bad: its non-blank lines, which is
/// what CorpusReader returns when every line is a valid record (a bad line fails the build of
/// the shard holding it, naming file and line), at the cost of splitting lines only (no UTF-8
/// check, field parsing or copies). Gzip-compressed files are read through LineReader too.
std::uint64_t count_records(const fs::path& corpus, const ProgressCallback& progress,
                            const CancelToken* cancel) {
    LineReader reader(corpus);
    std::uint64_t n = 0, lines = 0;
    std::string_view line;
    while (reader.next(line)) {
        if ((++lines & 65535) == 0) {
            if (cancel && cancel->requested()) throw Error("cancelled");
            if (progress) progress(reader.bytes_read(), reader.size());
        }
        if (!trim(line).empty()) ++n;
    }
    return n;
}

/// Step 3: every id goes to rank fnv1a64(id) mod R; each rank reports duplicates it receives.
void check_unique_ids(const Comm& comm,
                      const std::vector<std::pair<std::size_t, fs::path>>& mine,
                      const CancelToken* cancel) {
    std::vector<detail::ByteWriter> out(static_cast<std::size_t>(comm.size()));
    comm.collective([&] {
        for (const auto& [shard, path] : mine) {
            auto ix = index::PassageIndex::open(path);
            const auto n = ix->size();
            for (std::uint64_t d = 0; d < n; ++d) {
                if ((d & 65535) == 0 && cancel && cancel->requested()) throw Error("cancelled");
                const auto id = ix->docid(static_cast<std::uint32_t>(d));
                auto& w = out[fnv1a64(id) % out.size()];
                w.put<std::uint32_t>(static_cast<std::uint32_t>(shard));
                w.put_string(id);
            }
        }
    });
    std::vector<std::string> payload;
    payload.reserve(out.size());
    for (auto& w : out) payload.push_back(std::move(w.bytes()));
    auto in = comm.alltoall(payload);
    payload.clear();
    comm.collective([&] {
        std::vector<std::pair<std::string, std::uint32_t>> ids;
        for (const auto& bytes : in) {
            detail::ByteReader r(bytes);
            while (!r.done()) {
                const auto shard = r.get<std::uint32_t>();
                ids.emplace_back(r.get_string(), shard);
            }
        }
        in.clear();
        std::sort(ids.begin(), ids.end());
        for (std::size_t i = 1; i < ids.size(); ++i) {
            if (ids[i].first == ids[i - 1].first) {
                throw IndexError("duplicate document id '" + ids[i].first + "' in " +
                                 shard_dir_name(ids[i - 1].second) + " and " +
                                 shard_dir_name(ids[i].second));
            }
        }
    });
}

}  // namespace

index::ShardBuildStats build_shards(const Comm& comm, const fs::path& corpus, const fs::path& dir,
                                    std::size_t shards, const index::IndexBuildOptions& options,
                                    const ProgressCallback& progress, const CancelToken* cancel,
                                    BuildTimings* timings) {
    const auto t0 = std::chrono::steady_clock::now();
    BuildTimings local_timings;
    BuildTimings& tm = timings ? *timings : local_timings;
    auto lap = [last = t0]() mutable {
        const auto now = std::chrono::steady_clock::now();
        const double s = std::chrono::duration<double>(now - last).count();
        last = now;
        return s;
    };
    const auto ranks = static_cast<std::size_t>(comm.size());
    // documents, skipped (split by documents); 1 and the file's size (split by bytes)
    std::uint64_t counts[4] = {0, 0, 0, 0};
    // Step 1 (rank 0): checks, the previous manifest removed, the corpus counted.
    comm.collective([&] {
        if (shards < ranks) {
            throw InvalidArgument("index: " + std::to_string(ranks) + " MPI ranks for " +
                                  std::to_string(shards) +
                                  " shards; give --shards at least the number of ranks");
        }
        if (corpus == "-") {
            throw InvalidArgument(
                "index: with MPI every rank reads the corpus, so it cannot be standard input");
        }
        if (options.first_document != 0 ||
            options.max_documents != std::numeric_limits<std::uint64_t>::max() ||
            options.first_byte != 0 ||
            options.end_byte != std::numeric_limits<std::uint64_t>::max()) {
            throw InvalidArgument(
                "build_shards: first_document / max_documents / first_byte / end_byte are set "
                "per shard");
        }
        if (comm.rank() != 0) return;
        if (fs::exists(dir / "plumb-index.json")) {
            throw InvalidArgument("build_shards: " + dir.string() +
                                  " holds a single (unsharded) index; choose another directory");
        }
        std::error_code ec;
        const bool lines = (options.format == index::CorpusFormat::Tsv ||
                            options.format == index::CorpusFormat::Jsonl) &&
                           !options.skip_bad && fs::is_regular_file(corpus, ec);
        if (index::split_by_bytes(corpus, options)) {
            counts[2] = 1;
            counts[3] = fs::file_size(corpus);
        } else if (lines) {
            counts[0] = count_records(corpus, progress, cancel);
        } else {
            index::CorpusReaderOptions ro;
            ro.format = options.format;
            ro.skip_bad = options.skip_bad;
            ro.max_bad_share = options.max_bad_share;
            index::CorpusReader reader(corpus, ro);
            index::Document d;
            while (reader.next(d)) {
                if ((++counts[0] & 4095) == 0) {
                    if (cancel && cancel->requested()) throw Error("cancelled");
                    if (progress) progress(reader.bytes_read(), reader.size_bytes());
                }
            }
            counts[1] = reader.skipped();
        }
        if (counts[2] == 0 && counts[0] < shards) {
            throw InvalidArgument("build_shards: cannot split " + std::to_string(counts[0]) +
                                  " documents into " + std::to_string(shards) +
                                  " non-empty shards");
        }
        fs::create_directories(dir);
        fs::remove(dir / index::ShardManifest::file_name());
    });
    // (rank 0's counts to every rank: a sum with zeros elsewhere)
    comm.allreduce_sum(std::span<std::uint64_t>(counts, 4));
    const std::uint64_t total = counts[0];
    const bool by_bytes = counts[2] != 0;
    const std::uint64_t size = counts[3];
    tm.count = lap();

    // Step 2: this rank's shards.
    index::ShardBuildStats out;
    std::vector<std::pair<std::size_t, fs::path>> mine;
    std::vector<std::uint64_t> local(shards * 3, 0);  // documents, total length, terms per shard
    comm.collective([&] {
        for (std::size_t i = static_cast<std::size_t>(comm.rank()); i < shards; i += ranks) {
            index::IndexBuildOptions o = options;
            index::ShardRange range;
            if (by_bytes) {
                const auto bytes = index::shard_bytes(size, shards, i);
                o.first_byte = bytes.first;
                o.end_byte = bytes.end;
                o.allow_empty = true;  // (checked below, naming the range)
            } else {
                range = index::shard_range(total, shards, i);
                o.first_document = range.first;
                o.max_documents = range.count;
            }
            const auto name = shard_dir_name(i);
            auto s = index::build_index(corpus, dir / name, o, progress, cancel);
            if (by_bytes) index::check_shard_bytes(corpus, shards, i, size, s.documents);
            if (!by_bytes && s.documents != range.count) {
                throw IndexError("build_shards: " + name + " received " +
                                 std::to_string(s.documents) + " documents, expected " +
                                 std::to_string(range.count) +
                                 " (the corpus changed while indexing?)");
            }
            local[3 * i] = s.documents;
            local[3 * i + 1] = s.total_length;
            local[3 * i + 2] = s.terms;
            mine.emplace_back(i, dir / name);
        }
    });
    tm.build = lap();
    // Step 3.
    check_unique_ids(comm, mine, cancel);
    tm.ids = lap();
    // Step 4: every shard's figures on every rank (each slot is filled by one rank only).
    comm.allreduce_sum(local);
    for (std::size_t i = 0; i < shards; ++i) {
        const bool own = comm.rank() == 0 || i % ranks == static_cast<std::size_t>(comm.rank());
        if (!own) continue;
        out.manifest.shards.push_back({shard_dir_name(i), local[3 * i], local[3 * i + 1]});
        out.total.documents += local[3 * i];
        out.total.total_length += local[3 * i + 1];
        out.total.terms += local[3 * i + 2];
    }
    out.total.skipped = counts[1];
    comm.collective([&] {
        if (comm.rank() != 0) return;
        if (!by_bytes && out.total.documents != total) {
            throw IndexError("build_shards: the shards hold " +
                             std::to_string(out.total.documents) + " documents, the corpus " +
                             std::to_string(total));
        }
        out.manifest.write(dir);
        index::remove_stale_shards(dir, out.manifest);
    });
    tm.manifest = lap();
    out.total.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return out;
}

}  // namespace plumb::mpi
