// plumb::mpi's communicator layer, run by ctest under `mpirun -n 2 --oversubscribe` (every rank
// runs every test; the collectives need both). Expected values follow from the ranks' inputs
// by hand.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "mpi/batch.hpp"
#include "mpi/comm.hpp"

using plumb::mpi::Comm;

TEST(MpiPartition, ContiguousPartsLastRanksTakeTheRemainder) {
    // 10 items over 4 ranks: 2, 2, 3, 3 (as build_shards splits a corpus).
    const std::size_t first[4] = {0, 2, 4, 7}, count[4] = {2, 2, 3, 3};
    for (int r = 0; r < 4; ++r) {
        const auto p = plumb::mpi::partition(10, r, 4);
        EXPECT_EQ(p.first, first[r]) << r;
        EXPECT_EQ(p.count, count[r]) << r;
    }
    // In whole batches of 4: 10 items = 3 batches (4, 4, 2) over 2 ranks: batch 0 | batches 1-2.
    EXPECT_EQ(plumb::mpi::partition(10, 0, 2, 4).first, 0u);
    EXPECT_EQ(plumb::mpi::partition(10, 0, 2, 4).count, 4u);
    EXPECT_EQ(plumb::mpi::partition(10, 1, 2, 4).first, 4u);
    EXPECT_EQ(plumb::mpi::partition(10, 1, 2, 4).count, 6u);
    // Fewer items than ranks: the first ranks get nothing.
    EXPECT_EQ(plumb::mpi::partition(1, 0, 2).count, 0u);
    EXPECT_EQ(plumb::mpi::partition(1, 1, 2).count, 1u);
    EXPECT_THROW(plumb::mpi::partition(1, 2, 2), plumb::InvalidArgument);
}

TEST(MpiComm, RunsWithTwoRanks) {
    const auto w = Comm::world();
    ASSERT_EQ(w.size(), 2) << "run this test with mpirun -n 2";
    ASSERT_TRUE(plumb::mpi::parallel_world().has_value());
}

TEST(MpiComm, AllReduce) {
    const auto w = Comm::world();
    const auto r = static_cast<std::uint32_t>(w.rank());
    std::vector<std::uint64_t> sum = {1, 10u + r, (1ull << 40) * (r + 1)};
    w.allreduce_sum(sum);
    EXPECT_EQ(sum, (std::vector<std::uint64_t>{2, 21, 3ull << 40}));
    std::vector<std::uint32_t> mx = {r, 5 - r}, mn = {r, 5 - r};
    w.allreduce_max(mx);
    w.allreduce_min(mn);
    EXPECT_EQ(mx, (std::vector<std::uint32_t>{1, 5}));
    EXPECT_EQ(mn, (std::vector<std::uint32_t>{0, 4}));
    std::vector<float> f = {r ? 0.25f : 0.5f, r ? -1.0f : -2.0f};
    w.allreduce_max(f);
    EXPECT_EQ(f, (std::vector<float>{0.5f, -1.0f}));
}

TEST(MpiComm, GatherAllgatherBroadcastAlltoall) {
    const auto w = Comm::world();
    // Rank 0 sends nothing, rank 1 bytes with a NUL in them.
    const std::string mine = w.rank() == 0 ? std::string() : std::string("a\0b", 3);
    const auto g = w.gather(mine, 0);
    if (w.rank() == 0) {
        ASSERT_EQ(g.size(), 2u);
        EXPECT_EQ(g[0], "");
        EXPECT_EQ(g[1], std::string("a\0b", 3));
    } else {
        EXPECT_TRUE(g.empty());
    }
    // Concatenated in rank order on the root only (here rank 1).
    const auto cat =
        w.gather_concat(w.rank() == 0 ? std::string("zero|") : std::string("a\0b", 3), 1);
    EXPECT_EQ(cat, w.rank() == 1 ? std::string("zero|a\0b", 8) : std::string());
    const auto ag = w.allgather("r" + std::to_string(w.rank()));
    EXPECT_EQ(ag, (std::vector<std::string>{"r0", "r1"}));
    EXPECT_EQ(w.broadcast(w.rank() == 1 ? "from one" : "", 1), "from one");
    const std::string me = std::to_string(w.rank());
    const auto in = w.alltoall({me + "->0", me + "->1"});
    const std::string to = std::to_string(w.rank());
    EXPECT_EQ(in, (std::vector<std::string>{"0->" + to, "1->" + to}));
}

// The buffer forms: one caller-owned buffer in rank order, reused from call to call (a second,
// shorter exchange into the same buffer must not leave the first one's bytes behind).
TEST(MpiComm, ExchangesIntoReusedBuffers) {
    const auto w = Comm::world();
    const std::string me = std::to_string(w.rank());
    std::string into = "stale bytes from an earlier batch";
    std::vector<std::size_t> offsets;
    // Rank 0 sends "0>0" to itself and "0>>1" to rank 1; rank 1 "1>0" and "" to itself.
    const std::string send = w.rank() == 0 ? "0>00>>1" : "1>0";
    const std::vector<std::size_t> parts =
        w.rank() == 0 ? std::vector<std::size_t>{0, 3, 7} : std::vector<std::size_t>{0, 3, 3};
    w.alltoall(send, parts, into, offsets);
    if (w.rank() == 0) {
        EXPECT_EQ(into, "0>01>0");
        EXPECT_EQ(offsets, (std::vector<std::size_t>{0, 3, 6}));
    } else {
        EXPECT_EQ(into, "0>>1");
        EXPECT_EQ(offsets, (std::vector<std::size_t>{0, 4, 4}));
    }
    EXPECT_THROW(w.alltoall(send, std::vector<std::size_t>{0, 1}, into, offsets),
                 plumb::InvalidArgument);
    w.allgather("r" + me, into, offsets);
    EXPECT_EQ(into, "r0r1");
    EXPECT_EQ(offsets, (std::vector<std::size_t>{0, 2, 4}));
    w.gather_concat(w.rank() == 0 ? "a" : "", into, 0);
    EXPECT_EQ(into, w.rank() == 0 ? "a" : "");
}

TEST(MpiComm, CollectiveErrorReachesEveryRank) {
    const auto w = Comm::world();
    // Nothing thrown: nothing raised.
    EXPECT_NO_THROW(w.collective([] {}));
    // Rank 1 fails: both ranks raise CollectiveError with rank 1's message.
    try {
        w.collective([&] {
            if (w.rank() == 1) throw plumb::IoError("cannot read x.tsv");
        });
        ADD_FAILURE() << "no error on rank " << w.rank();
    } catch (const plumb::mpi::CollectiveError& e) {
        EXPECT_EQ(std::string(e.what()), "rank 1: cannot read x.tsv");
    }
    // Both fail: both messages, lowest rank first.
    try {
        w.collective([&] { throw plumb::Error("e" + std::to_string(w.rank())); });
        ADD_FAILURE();
    } catch (const plumb::mpi::CollectiveError& e) {
        EXPECT_EQ(std::string(e.what()), "rank 0: e0; rank 1: e1");
    }
}

// encode_chunks over 7 documents d0..d6 in chunks of 2 on 2 ranks: chunks {d0,d1} {d2,d3} on
// ranks 0/1 in round 0, {d4,d5} {d6} in round 1. The "vector" of a text is its length (1
// value). Rank 0's sink, called on its storing thread, sees the chunks whole and in order; a
// sink that fails on the third chunk fails every rank, after the chunks before it were stored.
TEST(MpiEncodeChunks, SinkSeesChunksInOrderAndItsErrorReachesEveryRank) {
    const auto w = Comm::world();
    const auto source = [] {
        return [i = 0](plumb::DocId& id, std::string& text) mutable {
            if (i == 7) return false;
            id = "d" + std::to_string(i);
            text = std::string(static_cast<std::size_t>(i + 1), 'x');
            ++i;
            return true;
        };
    };
    const plumb::mpi::ChunkEncoder encoder = [](std::span<const std::string_view> texts) {
        std::vector<float> v;
        for (auto t : texts) v.push_back(static_cast<float>(t.size()));
        return v;
    };
    std::string seen;
    const plumb::mpi::ChunkSink sink = [&](std::span<const plumb::DocId> ids,
                                           std::span<const float> v) {
        seen += "[";
        for (std::size_t i = 0; i < ids.size(); ++i) {
            seen += ids[i] + "=" + std::to_string(static_cast<int>(v[i])) + " ";
        }
        seen += "]";
    };
    const auto r = plumb::mpi::encode_chunks(w, 0, source(), encoder, sink, 2);
    EXPECT_TRUE(r.complete);
    if (w.rank() == 0) {
        EXPECT_EQ(r.encoded, 7u);
        EXPECT_EQ(seen, "[d0=1 d1=2 ][d2=3 d3=4 ][d4=5 d5=6 ][d6=7 ]");
    } else {
        EXPECT_EQ(seen, "");
    }
    seen.clear();
    int calls = 0;
    const plumb::mpi::ChunkSink failing = [&](std::span<const plumb::DocId> ids,
                                              std::span<const float> v) {
        if (++calls == 3) throw plumb::IoError("disk full at " + ids.front());
        sink(ids, v);
    };
    try {
        plumb::mpi::encode_chunks(w, 0, source(), encoder, failing, 2);
        ADD_FAILURE() << "no error on rank " << w.rank();
    } catch (const plumb::mpi::CollectiveError& e) {
        EXPECT_EQ(std::string(e.what()), "rank 0: disk full at d4");
    }
    EXPECT_EQ(seen, w.rank() == 0 ? "[d0=1 d1=2 ][d2=3 d3=4 ]" : "");
}

int main(int argc, char** argv) {
    plumb::mpi::Session session(&argc, &argv);
    ::testing::InitGoogleTest(&argc, argv);
    return RUN_ALL_TESTS();
}
