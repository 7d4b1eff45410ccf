#include "mpi/comm.hpp"

#include <time.h>

#include <algorithm>
#include <cstdlib>
#include <limits>

namespace plumb::mpi {

namespace {

void check(int rc, const char* what) {
    if (rc == MPI_SUCCESS) return;
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, text, &len);
    throw Error(std::string("MPI: ") + what + " failed: " + std::string(text, len));
}

int to_int(std::size_t n, const char* what) {
    if (n > static_cast<std::size_t>(std::numeric_limits<int>::max())) {
        throw Error(std::string("MPI: ") + what + ": " + std::to_string(n) +
                    " bytes exceed MPI's int counts (2 GiB per message); use smaller batches");
    }
    return static_cast<int>(n);
}

/// Displacements of `counts` laid end to end; throws when the total exceeds MPI's int counts.
std::vector<int> displacements(const std::vector<int>& counts, const char* what) {
    std::vector<int> d(counts.size(), 0);
    std::size_t total = 0;
    for (std::size_t i = 0; i < counts.size(); ++i) {
        d[i] = to_int(total, what);
        total += static_cast<std::size_t>(counts[i]);
    }
    to_int(total, what);
    return d;
}

/// Session's duplicate of MPI_COMM_WORLD for agree_on_failure() only.
MPI_Comm g_failure_comm = MPI_COMM_NULL;

}  // namespace

bool launched_by_mpi() noexcept {
    for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "PMI_RANK"}) {
        const char* v = std::getenv(name);
        if (v != nullptr && *v != '\0') return true;
    }
    return false;
}

Session::Session(int* argc, char*** argv) {
    if (!launched_by_mpi() || active()) return;
    int provided = 0;
    check(MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
    m_initialised = true;
    // Errors come back as return codes (turned into exceptions), not as an abort inside MPI.
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    check(MPI_Comm_dup(MPI_COMM_WORLD, &g_failure_comm), "MPI_Comm_dup");
}

Session::~Session() {
    if (!m_initialised || !active()) return;
    if (g_failure_comm != MPI_COMM_NULL) MPI_Comm_free(&g_failure_comm);
    MPI_Finalize();
}

std::optional<WorldFailure> agree_on_failure(const std::string& message, int status,
                                             double timeout_seconds) noexcept {
    if (!active() || g_failure_comm == MPI_COMM_NULL) return std::nullopt;
    try {
        MPI_Request request;
        if (MPI_Ibarrier(g_failure_comm, &request) != MPI_SUCCESS) return std::nullopt;
        const double end = MPI_Wtime() + timeout_seconds;
        int done = 0;
        while (true) {
            if (MPI_Test(&request, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) return std::nullopt;
            if (done) break;
            // (the barrier stays pending: the caller aborts the job)
            if (MPI_Wtime() > end) return std::nullopt;
            struct timespec pause = {0, 1000000};  // 1 ms
            nanosleep(&pause, nullptr);
        }
        // Every rank is here: exchange the messages and the largest status.
        Comm comm(g_failure_comm);
        WorldFailure out;
        std::uint32_t st = static_cast<std::uint32_t>(status);
        comm.allreduce_max(std::span<std::uint32_t>(&st, 1));
        out.status = static_cast<int>(st);
        out.messages = comm.allgather(message);
        return out;
    } catch (...) {
        return std::nullopt;
    }
}

bool active() noexcept {
    int init = 0, fin = 0;
    MPI_Initialized(&init);
    MPI_Finalized(&fin);
    return init && !fin;
}

std::optional<Comm> parallel_world() {
    if (!active()) return std::nullopt;
    Comm w(MPI_COMM_WORLD);
    if (w.size() <= 1) return std::nullopt;
    return w;
}

Comm Comm::world() {
    if (!active()) throw Error("MPI is not initialised (run under mpirun or srun)");
    return Comm(MPI_COMM_WORLD);
}

Comm::Comm(MPI_Comm comm) : m_comm(comm) {
    check(MPI_Comm_rank(comm, &m_rank), "MPI_Comm_rank");
    check(MPI_Comm_size(comm, &m_size), "MPI_Comm_size");
}

void Comm::barrier() const { check(MPI_Barrier(m_comm), "MPI_Barrier"); }

void Comm::allreduce_sum(std::span<std::uint64_t> v) const {
    check(MPI_Allreduce(MPI_IN_PLACE, v.data(), to_int(v.size(), "allreduce"), MPI_UINT64_T,
                        MPI_SUM, m_comm),
          "MPI_Allreduce");
}

void Comm::allreduce_max(std::span<std::uint32_t> v) const {
    check(MPI_Allreduce(MPI_IN_PLACE, v.data(), to_int(v.size(), "allreduce"), MPI_UINT32_T,
                        MPI_MAX, m_comm),
          "MPI_Allreduce");
}

void Comm::allreduce_min(std::span<std::uint32_t> v) const {
    check(MPI_Allreduce(MPI_IN_PLACE, v.data(), to_int(v.size(), "allreduce"), MPI_UINT32_T,
                        MPI_MIN, m_comm),
          "MPI_Allreduce");
}

void Comm::allreduce_max(std::span<float> v) const {
    // max is exact in floating point: the result does not depend on the reduction order.
    check(MPI_Allreduce(MPI_IN_PLACE, v.data(), to_int(v.size(), "allreduce"), MPI_FLOAT,
                        MPI_MAX, m_comm),
          "MPI_Allreduce");
}

namespace {

/// rank r's bytes of a buffer laid end to end: offsets[r] .. offsets[r + 1].
std::vector<std::size_t> ends(const std::vector<int>& counts) {
    std::vector<std::size_t> o(counts.size() + 1, 0);
    for (std::size_t r = 0; r < counts.size(); ++r) {
        o[r + 1] = o[r] + static_cast<std::size_t>(counts[r]);
    }
    return o;
}

/// The parts of `all` by `offsets`, one string each.
std::vector<std::string> split(const std::string& all, const std::vector<std::size_t>& offsets) {
    std::vector<std::string> out;
    out.reserve(offsets.size() - 1);
    for (std::size_t r = 0; r + 1 < offsets.size(); ++r) {
        out.push_back(all.substr(offsets[r], offsets[r + 1] - offsets[r]));
    }
    return out;
}

/// Sizes `buffer` to `n` bytes, keeping its capacity: once a buffer has held a batch, the next
/// one of about its size costs a memset of pages it owns, not fresh pages faulted in.
void size_to(std::string& buffer, std::size_t n) {
    buffer.clear();
    buffer.resize(n);
}

}  // namespace

void Comm::gather_concat(std::string_view bytes, std::string& into, int root) const {
    const int mine = to_int(bytes.size(), "gather");
    std::vector<int> counts(m_rank == root ? static_cast<std::size_t>(m_size) : 0, 0);
    check(MPI_Gather(&mine, 1, MPI_INT, counts.data(), 1, MPI_INT, root, m_comm), "MPI_Gather");
    std::vector<int> displs;
    into.clear();
    if (m_rank == root) {
        displs = displacements(counts, "gather");
        size_to(into, static_cast<std::size_t>(displs.back()) +
                          static_cast<std::size_t>(counts.back()));
    }
    check(MPI_Gatherv(bytes.data(), mine, MPI_BYTE, into.data(), counts.data(), displs.data(),
                      MPI_BYTE, root, m_comm),
          "MPI_Gatherv");
}

std::vector<std::string> Comm::gather(const std::string& bytes, int root) const {
    const int mine = to_int(bytes.size(), "gather");
    std::vector<int> counts(m_rank == root ? static_cast<std::size_t>(m_size) : 0, 0);
    check(MPI_Gather(&mine, 1, MPI_INT, counts.data(), 1, MPI_INT, root, m_comm), "MPI_Gather");
    std::string all;
    std::vector<int> displs;
    if (m_rank == root) {
        displs = displacements(counts, "gather");
        all.resize(static_cast<std::size_t>(displs.back()) +
                   static_cast<std::size_t>(counts.back()));
    }
    check(MPI_Gatherv(bytes.data(), mine, MPI_BYTE, all.data(), counts.data(), displs.data(),
                      MPI_BYTE, root, m_comm),
          "MPI_Gatherv");
    if (m_rank != root) return {};
    return split(all, ends(counts));
}

std::string Comm::gather_concat(const std::string& bytes, int root) const {
    std::string all;
    gather_concat(bytes, all, root);
    return all;
}

void Comm::allgather(std::string_view bytes, std::string& into,
                     std::vector<std::size_t>& offsets) const {
    const int mine = to_int(bytes.size(), "allgather");
    std::vector<int> counts(static_cast<std::size_t>(m_size));
    check(MPI_Allgather(&mine, 1, MPI_INT, counts.data(), 1, MPI_INT, m_comm), "MPI_Allgather");
    const auto displs = displacements(counts, "allgather");
    offsets = ends(counts);
    size_to(into, offsets.back());
    check(MPI_Allgatherv(bytes.data(), mine, MPI_BYTE, into.data(), counts.data(), displs.data(),
                         MPI_BYTE, m_comm),
          "MPI_Allgatherv");
}

std::vector<std::string> Comm::allgather(const std::string& bytes) const {
    std::string all;
    std::vector<std::size_t> offsets;
    allgather(bytes, all, offsets);
    return split(all, offsets);
}

std::string Comm::broadcast(std::string bytes, int root) const {
    std::uint64_t n = bytes.size();
    check(MPI_Bcast(&n, 1, MPI_UINT64_T, root, m_comm), "MPI_Bcast");
    bytes.resize(n);
    check(MPI_Bcast(bytes.data(), to_int(n, "broadcast"), MPI_BYTE, root, m_comm), "MPI_Bcast");
    return bytes;
}

void Comm::alltoall(std::string_view send, std::span<const std::size_t> send_offsets,
                    std::string& into, std::vector<std::size_t>& offsets) const {
    const auto size = static_cast<std::size_t>(m_size);
    if (send_offsets.size() != size + 1 || send_offsets.front() != 0 ||
        send_offsets.back() != send.size() ||
        !std::is_sorted(send_offsets.begin(), send_offsets.end())) {
        throw InvalidArgument("Comm::alltoall: need one part of the buffer per rank");
    }
    std::vector<int> send_counts(size), recv_counts(size);
    for (std::size_t r = 0; r < size; ++r) {
        send_counts[r] = to_int(send_offsets[r + 1] - send_offsets[r], "alltoall");
    }
    check(MPI_Alltoall(send_counts.data(), 1, MPI_INT, recv_counts.data(), 1, MPI_INT, m_comm),
          "MPI_Alltoall");
    const auto sd = displacements(send_counts, "alltoall");
    const auto rd = displacements(recv_counts, "alltoall");
    offsets = ends(recv_counts);
    size_to(into, offsets.back());
    check(MPI_Alltoallv(send.data(), send_counts.data(), sd.data(), MPI_BYTE, into.data(),
                        recv_counts.data(), rd.data(), MPI_BYTE, m_comm),
          "MPI_Alltoallv");
}

std::vector<std::string> Comm::alltoall(const std::vector<std::string>& out) const {
    if (out.size() != static_cast<std::size_t>(m_size)) {
        throw InvalidArgument("Comm::alltoall: need one payload per rank");
    }
    std::string send;
    std::vector<std::size_t> send_offsets{0};
    for (const auto& o : out) {
        send += o;
        send_offsets.push_back(send.size());
    }
    std::string all;
    std::vector<std::size_t> offsets;
    alltoall(send, send_offsets, all, offsets);
    return split(all, offsets);
}

void Comm::collective(const std::function<void()>& fn) const {
    std::string message;
    try {
        fn();
    } catch (const std::bad_alloc&) {
        message = "out of memory";
    } catch (const std::exception& e) {
        message = e.what();
        if (message.empty()) message = "unknown error";
    }
    std::uint32_t failed = message.empty() ? 0 : 1;
    allreduce_max(std::span<std::uint32_t>(&failed, 1));
    if (!failed) return;
    const auto all = allgather(message);
    std::string text;
    for (int r = 0; r < m_size; ++r) {
        if (all[r].empty()) continue;
        if (!text.empty()) text += "; ";
        text += m_size > 1 ? "rank " + std::to_string(r) + ": " + all[r] : all[r];
    }
    throw CollectiveError(text);
}

void Comm::abort(int status) const {
    MPI_Abort(m_comm, status);
    std::abort();  // (MPI_Abort does not return)
}

Part partition(std::size_t n, int rank, int size, std::size_t unit) {
    if (size <= 0 || rank < 0 || rank >= size) throw InvalidArgument("partition: bad rank/size");
    unit = std::max<std::size_t>(unit, 1);
    const std::size_t units = (n + unit - 1) / unit;
    const auto s = static_cast<std::size_t>(size);
    const auto r = static_cast<std::size_t>(rank);
    // units / s each; the last units % s ranks one more (as build_shards splits a corpus).
    const std::size_t base = units / s, extra = units % s;
    const std::size_t first_extra = s - extra;
    const std::size_t before = r * base + (r > first_extra ? r - first_extra : 0);
    const std::size_t mine = base + (r >= first_extra ? 1 : 0);
    Part p;
    p.first = std::min(n, before * unit);
    p.count = std::min(n, (before + mine) * unit) - p.first;
    return p;
}

}  // namespace plumb::mpi
