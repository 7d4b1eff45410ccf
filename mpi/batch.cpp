#include "mpi/batch.hpp"

#include <algorithm>

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
    std::vector<DocId> ids;
    std::vector<std::string> texts;
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
        if (flags[1]) return result;  // cancelled: nothing of this round is stored
        if (!flags[0]) break;         // every rank is at the end of the collection
        const auto parts = comm.gather(packed, 0);
        comm.collective([&] {
            for (const auto& p : parts) {  // (rank 0 only: others received nothing)
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
                done += n;
                result.encoded += n;
                if (progress) progress(done, total);
            }
        });
    }
    result.complete = true;
    return result;
}

}  // namespace plumb::mpi
