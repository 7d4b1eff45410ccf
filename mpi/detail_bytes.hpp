#pragma once
// Internal: packing the payloads of plumb's MPI collectives (hits, feedback documents, ids)
// into byte strings: fixed-width little/host-endian integers, floats by their bits (exact),
// length-prefixed strings. All ranks of a job run the same binary on the same architecture.
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "plugin/error.hpp"

namespace plumb::mpi::detail {

class ByteWriter {
public:
    ByteWriter() = default;
    /// Writes into `reuse`, emptied first (its capacity kept: bytes() hands it back).
    explicit ByteWriter(std::string&& reuse) : m_bytes(std::move(reuse)) { m_bytes.clear(); }
    template <typename T>
    void put(T v) {
        static_assert(std::is_trivially_copyable_v<T>);
        const auto* p = reinterpret_cast<const char*>(&v);
        m_bytes.append(p, sizeof v);
    }
    void put_string(std::string_view s) {
        put<std::uint32_t>(static_cast<std::uint32_t>(s.size()));
        m_bytes.append(s);
    }
    std::string& bytes() noexcept { return m_bytes; }

private:
    std::string m_bytes;
};

class ByteReader {
public:
    explicit ByteReader(std::string_view bytes) : m_bytes(bytes) {}
    template <typename T>
    T get() {
        T v;
        need(sizeof v);
        std::memcpy(&v, m_bytes.data() + m_pos, sizeof v);
        m_pos += sizeof v;
        return v;
    }
    std::string get_string() {
        const auto n = get<std::uint32_t>();
        need(n);
        std::string s(m_bytes.substr(m_pos, n));
        m_pos += n;
        return s;
    }
    /// A length-prefixed string as a view into the bytes read (valid while they are).
    std::string_view get_view() {
        const auto n = get<std::uint32_t>();
        need(n);
        const auto v = m_bytes.substr(m_pos, n);
        m_pos += n;
        return v;
    }
    bool done() const noexcept { return m_pos == m_bytes.size(); }

private:
    void need(std::size_t n) const {
        if (m_bytes.size() - m_pos < n) throw Error("MPI: truncated message from another rank");
    }
    std::string_view m_bytes;
    std::size_t m_pos = 0;
};

}  // namespace plumb::mpi::detail
