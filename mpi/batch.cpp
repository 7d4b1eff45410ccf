#include "mpi/batch.hpp"

#include <algorithm>
#include <exception>
#include <thread>
#include <utility>

#include "mpi/detail_bytes.hpp"

namespace plumb::mpi {

std::string gather_concat(const Comm& comm, const std::string& part) {
    return comm.gather_concat(part, 0);
}

EncodeChunksResult encode_chunks(const Comm& comm, std::uint64_t stored,
                                 const ChunkDocuments& docs, const ChunkEncoder& encoder,
                                 const ChunkSink& sink, std::size_t chunk_size,
                                 std::uint64_t total, const ProgressCallback& progress,
                                 const CancelToken* cancel) {
    chunk_size = std::max<std::size_t>(chunk_size, 1);
    const auto ranks = static_cast<std::uint64_t>(comm.size());
    const auto me = static_cast<std::uint64_t>(comm.rank());
    std::uint64_t s = comm.rank() == 0 ? stored : 0;
    comm.allreduce_sum(std::span<std::uint64_t>(&s, 1));
    stored = s;
    DocId id;
    std::string text;
    bool more = true;
    comm.collective([&] {
        for (std::uint64_t i = 0; i < stored && more; ++i) more = docs(id, text);
    });
    EncodeChunksResult result;
    std::uint64_t done = stored;
    if (progress && comm.rank() == 0) progress(done, total);
    // Rank 0 stores round j's chunks on this thread (sink: vector files written and fsynced)
    // while every rank encodes round j + 1; joined before the next round's chunks are handed
    // over and at the end, so the sink is called one chunk at a time, in collection order.
    std::thread storer;
    std::vector<std::string> storing;
    std::uint64_t stored_by_storer = 0;
    std::exception_ptr store_error;
    auto finish_store = [&] {
        if (storer.joinable()) storer.join();
        done += std::exchange(stored_by_storer, 0);
        if (store_error) std::rethrow_exception(std::exchange(store_error, nullptr));
        if (progress) progress(done, total);
    };
    std::vector<DocId> ids;
    std::vector<std::string> texts;
    bool cancelled = false;
    try {
        while (true) {
            // Round: every rank reads the next R chunks, keeping (and encoding) its own.
            std::string packed;
            std::uint32_t flags[2] = {0, 0};  // [0]: this rank read a document; [1]: cancelled
            comm.collective([&] {
                ids.clear();
                texts.clear();
                for (std::uint64_t c = 0; c < ranks && more; ++c) {
                    for (std::size_t i = 0; i < chunk_size && (more = docs(id, text)); ++i) {
                        flags[0] = 1;
                        if (c != me) continue;
                        ids.push_back(id);
                        texts.push_back(text);
                    }
                }
                if (cancel && cancel->requested()) flags[1] = 1;
                if (ids.empty() || flags[1]) return;
                std::vector<std::string_view> views(texts.begin(), texts.end());
                const auto vectors = encoder(views);
                if (vectors.size() % ids.size() != 0) {
                    throw Error("encode: the encoder returned " + std::to_string(vectors.size()) +
                                " values for " + std::to_string(ids.size()) + " texts");
                }
                detail::ByteWriter w;
                w.put<std::uint64_t>(ids.size());
                w.put<std::uint64_t>(vectors.size());
                for (const auto& d : ids) w.put_string(d);
                w.bytes().append(reinterpret_cast<const char*>(vectors.data()),
                                 vectors.size() * sizeof(float));
                packed = std::move(w.bytes());
            });
            comm.allreduce_max(std::span<std::uint32_t>(flags, 2));
            if (flags[1]) {  // cancelled: nothing of this round is stored
                cancelled = true;
                break;
            }
            if (!flags[0]) break;  // every rank is at the end of the collection
            auto parts = comm.gather(packed, 0);
            comm.collective([&] {
                if (comm.rank() != 0) return;  // (others received nothing)
                finish_store();
                storing = std::move(parts);
                storer = std::thread([&] {
                    try {
                        for (const auto& p : storing) {
                            if (p.empty()) continue;
                            detail::ByteReader r(p);
                            const auto n = r.get<std::uint64_t>();
                            const auto values = r.get<std::uint64_t>();
                            std::vector<DocId> chunk_ids;
                            chunk_ids.reserve(n);
                            for (std::uint64_t i = 0; i < n; ++i) chunk_ids.push_back(r.get_string());
                            std::vector<float> vectors(values);
                            for (auto& v : vectors) v = r.get<float>();
                            sink(chunk_ids, vectors);
                            stored_by_storer += n;
                        }
                    } catch (...) {
                        store_error = std::current_exception();
                    }
                });
            });
        }
        comm.collective([&] {
            if (comm.rank() == 0) finish_store();
        });
    } catch (...) {
        if (storer.joinable()) storer.join();
        throw;
    }
    result.encoded = done - stored;  // (rank 0's count; 0 on the others)
    result.complete = !cancelled;
    return result;
}

}  // namespace plumb::mpi
