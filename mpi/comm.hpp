#pragma once
/// \file comm.hpp
/// plumb::mpi — the MPI component (optional: CMake PLUMB_WITH_MPI, target plumb::mpi). Thin,
/// typed wrappers over MPI's C API for the collectives plumb's scale-out uses (all-reduce of
/// statistics, gathers of variable-length byte payloads, all-to-all of document ids), plus the
/// error protocol that keeps every rank in step: a phase that fails on one rank fails on all
/// of them, with that rank's message (collective()).
///
/// Nothing here starts MPI by itself: the host (or `plumb`'s main, through Session) calls
/// MPI_Init; a process started without mpirun / srun needs no MPI at all.

#include <mpi.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "plugin/error.hpp"

namespace plumb::mpi {

/// True when this process was started by an MPI launcher (mpirun / mpiexec of Open MPI, MPICH
/// or Intel MPI, srun with PMI or PMIx): one of OMPI_COMM_WORLD_SIZE, PMI_SIZE, PMIX_RANK,
/// PMI_RANK is set.
bool launched_by_mpi() noexcept;

/// Initialises MPI (MPI_Init_thread, MPI_THREAD_FUNNELED: plumb calls MPI from the main
/// thread only) when launched_by_mpi() and MPI is not yet initialised, and finalises it on
/// destruction when it initialised it. A Session in a process not started by a launcher does
/// nothing: the process runs alone, as without MPI.
class Session {
public:
    Session(int* argc, char*** argv);
    ~Session();
    Session(const Session&) = delete;
    Session& operator=(const Session&) = delete;

private:
    bool m_initialised = false;
};

/// True when MPI is initialised (and not finalised) in this process.
bool active() noexcept;

/// Every rank's failure, when each rank of MPI_COMM_WORLD reported one (agree_on_failure()).
struct WorldFailure {
    std::vector<std::string> messages;  ///< in rank order
    int status = 0;                     ///< the largest status any rank reported
};

/// For an error raised outside collective() (e.g. a command line every rank rejects, or a file
/// one rank cannot read): reports `message` and `status` and waits up to `timeout_seconds` for
/// every rank of MPI_COMM_WORLD to report a failure too, on a communicator of its own (a
/// duplicate of MPI_COMM_WORLD made by Session, so a rank waiting in another collective is not
/// disturbed). Returns every rank's failure when all of them failed, so that each can exit with
/// the same status and rank 0 alone prints; nothing when some rank did not fail in time (it may
/// be waiting in a collective for this one: the caller aborts the job). Nothing either when
/// MPI is not active or no Session made the communicator. Never throws.
std::optional<WorldFailure> agree_on_failure(const std::string& message, int status,
                                             double timeout_seconds) noexcept;

/// Raised on every rank when a collective phase failed on at least one rank (collective()):
/// the message names the failing rank(s) and their errors. Each rank knows the others got it,
/// so they may all return normally (finalise, exit status 1) instead of aborting the job.
class CollectiveError : public Error {
public:
    using Error::Error;
};

class Comm;
/// MPI_COMM_WORLD when MPI is active and the job has more than one rank, else nothing: what
/// `plumb`'s commands ask to choose between their MPI mode and the single-process one (so that
/// `mpirun -n 1 plumb ...` runs exactly as `plumb ...`).
std::optional<Comm> parallel_world();

/// A communicator (by default MPI_COMM_WORLD). All calls are collective unless noted: every rank
/// of the communicator must make them in the same order. Not thread-safe: call from one thread.
class Comm {
public:
    /// MPI_COMM_WORLD. Requires active().
    static Comm world();
    explicit Comm(MPI_Comm comm);

    int rank() const noexcept { return m_rank; }
    int size() const noexcept { return m_size; }
    MPI_Comm handle() const noexcept { return m_comm; }

    void barrier() const;
    /// Element-wise all-reduce in place.
    void allreduce_sum(std::span<std::uint64_t> values) const;
    void allreduce_max(std::span<std::uint32_t> values) const;
    void allreduce_min(std::span<std::uint32_t> values) const;
    void allreduce_max(std::span<float> values) const;
    /// Every rank's `bytes`, in rank order, on `root` (other ranks get an empty vector).
    std::vector<std::string> gather(const std::string& bytes, int root = 0) const;
    /// Every rank's `bytes` concatenated in rank order on `root` ("" on the other ranks): one
    /// MPI_Gatherv straight into the result, no copy per part.
    std::string gather_concat(const std::string& bytes, int root = 0) const;
    /// Every rank's `bytes`, in rank order, on every rank.
    std::vector<std::string> allgather(const std::string& bytes) const;
    /// `bytes` of `root` on every rank.
    std::string broadcast(std::string bytes, int root = 0) const;
    /// All-to-all: out[r] goes to rank r; returns what rank r sent here, in rank order.
    std::vector<std::string> alltoall(const std::vector<std::string>& out) const;

    // The same three exchanges into one caller-owned buffer laid end to end in rank order, for
    // callers that exchange large payloads batch after batch: `into` keeps its capacity from
    // one call to the next (no fresh pages to fault in per batch, no copy per rank), and
    // `offsets` (size() + 1 entries) gets rank r's bytes as into[offsets[r], offsets[r + 1]).
    /// Every rank's `bytes` concatenated in rank order into `into` on `root` (cleared elsewhere).
    void gather_concat(std::string_view bytes, std::string& into, int root = 0) const;
    /// Every rank's `bytes` in rank order into `into` on every rank.
    void allgather(std::string_view bytes, std::string& into,
                   std::vector<std::size_t>& offsets) const;
    /// All-to-all of one buffer: `send` holds the payloads for ranks 0, 1, ... laid end to end,
    /// the one for rank r send[send_offsets[r], send_offsets[r + 1]); what every rank sent here
    /// lands in `into`, in rank order.
    void alltoall(std::string_view send, std::span<const std::size_t> send_offsets,
                  std::string& into, std::vector<std::size_t>& offsets) const;

    /// Runs `fn` on this rank; then, collectively, when it threw on any rank, throws
    /// CollectiveError on every rank ("rank R: message" for each failing rank, lowest first).
    /// An error must never escape between two collective calls on one rank only: the other
    /// ranks would wait forever. Wrap each local phase of a distributed job in collective().
    void collective(const std::function<void()>& fn) const;

    /// Aborts every rank of the job (MPI_Abort) with `status`: for errors that cannot be
    /// reported collectively.
    [[noreturn]] void abort(int status) const;

private:
    MPI_Comm m_comm;
    int m_rank = 0;
    int m_size = 1;
};

/// The contiguous part of [0, n) that rank `rank` of `size` takes: [first, first + count), sizes
/// differing by at most one (the last ranks take the remainder), so that concatenating the
/// parts in rank order gives [0, n). With `unit` > 1 the boundaries fall on multiples of `unit`
/// (whole batches), except the end.
struct Part {
    std::size_t first = 0;
    std::size_t count = 0;
};
Part partition(std::size_t n, int rank, int size, std::size_t unit = 1);

}  // namespace plumb::mpi
