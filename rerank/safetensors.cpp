#include "rerank/safetensors.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "plugin/error.hpp"
#include "plugin/json.hpp"
#include "plugin/text_io.hpp"
#include "rerank/checkpoint_format.hpp"

namespace plumb::rerank {

static_assert(std::endian::native == std::endian::little,
              "safetensors I/O assumes a little-endian host");

// ---------------------------------------------------------------------------------------------
// dtypes and conversions
// ---------------------------------------------------------------------------------------------

const char* dtype_name(DType dtype) noexcept {
    switch (dtype) {
        case DType::F32:
            return "F32";
        case DType::F16:
            return "F16";
        case DType::BF16:
            return "BF16";
        case DType::I64:
            return "I64";
        case DType::I32:
            return "I32";
    }
    return "?";
}

std::size_t dtype_size(DType dtype) noexcept {
    switch (dtype) {
        case DType::F32:
            return 4;
        case DType::F16:
            return 2;
        case DType::BF16:
            return 2;
        case DType::I64:
            return 8;
        case DType::I32:
            return 4;
    }
    return 0;
}

bool parse_dtype(std::string_view name, DType& out) noexcept {
    for (DType d : {DType::F32, DType::F16, DType::BF16, DType::I64, DType::I32}) {
        if (name == dtype_name(d)) {
            out = d;
            return true;
        }
    }
    return false;
}

float half_to_float(std::uint16_t h) noexcept {
    const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
    const std::uint32_t exp = (h >> 10) & 0x1Fu;
    std::uint32_t mant = h & 0x3FFu;
    std::uint32_t bits;
    if (exp == 0) {
        if (mant == 0) {
            bits = sign;  // signed zero
        } else {
            // Subnormal: value = mant * 2^-24; normalise into a float.
            int e = -1;
            do {
                ++e;
                mant <<= 1;
            } while ((mant & 0x400u) == 0);
            mant &= 0x3FFu;
            bits = sign | (static_cast<std::uint32_t>(127 - 15 - e) << 23) | (mant << 13);
        }
    } else if (exp == 0x1F) {
        bits = sign | 0x7F800000u | (mant << 13);  // infinity or NaN (payload kept)
    } else {
        bits = sign | ((exp + (127 - 15)) << 23) | (mant << 13);
    }
    return std::bit_cast<float>(bits);
}

float bfloat16_to_float(std::uint16_t b) noexcept {
    return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16);
}

std::uint16_t float_to_half(float f) noexcept {
    const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
    const std::uint16_t sign = static_cast<std::uint16_t>((x >> 16) & 0x8000u);
    const std::uint32_t exp = (x >> 23) & 0xFFu;
    const std::uint32_t mant = x & 0x7FFFFFu;
    if (exp == 0xFF) {  // inf / NaN
        return static_cast<std::uint16_t>(sign | 0x7C00u | (mant ? 0x200u | (mant >> 13) : 0u));
    }
    const int e = static_cast<int>(exp) - 127 + 15;                    // biased half exponent
    if (e >= 0x1F) return static_cast<std::uint16_t>(sign | 0x7C00u);  // overflow -> inf
    if (e <= 0) {
        // Subnormal half (or zero): shift the full mantissa (with implicit 1) right.
        if (e < -10) return sign;  // below half the smallest subnormal: rounds to zero
        const std::uint32_t m = mant | 0x800000u;
        const int shift = 14 - e;  // 24-bit mantissa to 10-bit subnormal field
        std::uint32_t half_m = m >> shift;
        const std::uint32_t rem = m & ((1u << shift) - 1u);
        const std::uint32_t halfway = 1u << (shift - 1);
        if (rem > halfway || (rem == halfway && (half_m & 1u))) ++half_m;
        return static_cast<std::uint16_t>(sign | half_m);
    }
    std::uint32_t half = (static_cast<std::uint32_t>(e) << 10) | (mant >> 13);
    const std::uint32_t rem = mant & 0x1FFFu;
    if (rem > 0x1000u || (rem == 0x1000u && (half & 1u))) ++half;  // may carry into exponent
    return static_cast<std::uint16_t>(sign | half);
}

std::uint16_t float_to_bfloat16(float f) noexcept {
    std::uint32_t x = std::bit_cast<std::uint32_t>(f);
    if ((x & 0x7F800000u) == 0x7F800000u && (x & 0x7FFFFFu)) {
        return static_cast<std::uint16_t>((x >> 16) | 0x40u);  // quiet NaN
    }
    const std::uint32_t lsb = (x >> 16) & 1u;
    x += 0x7FFFu + lsb;
    return static_cast<std::uint16_t>(x >> 16);
}

std::int64_t shape_numel(std::span<const std::int64_t> shape) noexcept {
    std::int64_t n = 1;
    for (auto d : shape) n *= d;
    return n;
}

std::string shape_string(std::span<const std::int64_t> shape) {
    std::string s = "[";
    for (std::size_t i = 0; i < shape.size(); ++i) {
        if (i) s += ", ";
        s += std::to_string(shape[i]);
    }
    return s + "]";
}

namespace {

/// out.size() 16-bit floats at `p` (little-endian, unaligned), each widened by `widen`.
template <float (*widen)(std::uint16_t) noexcept>
void widen_16bit(const std::byte* p, std::span<float> out) {
    for (std::size_t i = 0; i < out.size(); ++i) {
        std::uint16_t h;
        std::memcpy(&h, p + 2 * i, 2);
        out[i] = widen(h);
    }
}

}  // namespace

void to_float32(const TensorView& tensor, std::span<float> out) {
    const auto n = static_cast<std::size_t>(tensor.numel());
    if (out.size() != n) {
        throw InvalidArgument("to_float32: tensor '" + tensor.name + "' has " + std::to_string(n) +
                              " elements, output has " + std::to_string(out.size()));
    }
    if (tensor.bytes.size() != n * dtype_size(tensor.dtype)) {
        throw CheckpointError("tensor '" + tensor.name + "': byte size does not match shape");
    }
    const std::byte* p = tensor.bytes.data();
    switch (tensor.dtype) {
        case DType::F32:
            if (n) std::memcpy(out.data(), p, n * 4);
            return;
        case DType::F16:
            widen_16bit<half_to_float>(p, out);
            return;
        case DType::BF16:
            widen_16bit<bfloat16_to_float>(p, out);
            return;
        case DType::I64:
        case DType::I32:
            break;
    }
    throw CheckpointError("tensor '" + tensor.name + "' has dtype " + dtype_name(tensor.dtype) +
                          ", expected a floating dtype (F32, F16, BF16)");
}

std::vector<float> to_float32(const TensorView& tensor) {
    std::vector<float> out(static_cast<std::size_t>(tensor.numel()));
    to_float32(tensor, out);
    return out;
}

// ---------------------------------------------------------------------------------------------
// Reading
// ---------------------------------------------------------------------------------------------

struct SafetensorsFile::Impl {
    std::string name;
    void* map = nullptr;
    std::size_t map_size = 0;
    std::vector<TensorView> tensors;  // sorted by name
    std::map<std::string, std::string> metadata;
    std::map<std::string, TensorData> owned;  // from_tensors: the bytes `tensors` point into

    ~Impl() {
        if (map) ::munmap(map, map_size);
    }

    [[noreturn]] void fail(const std::string& what) const {
        throw CheckpointError(name + ": " + what);
    }
    [[noreturn]] void fail_tensor(const std::string& tensor, const std::string& what) const {
        throw CheckpointError(name + ": tensor '" + tensor + "': " + what);
    }

    void parse();
};

void SafetensorsFile::Impl::parse() {
    const auto* base = static_cast<const std::byte*>(map);
    if (map_size < 8) {
        fail("truncated file (" + std::to_string(map_size) +
             " bytes; a safetensors file starts with an 8-byte header length)");
    }
    std::uint64_t n = 0;
    std::memcpy(&n, base, 8);
    if (n > map_size - 8) {
        fail("header length " + std::to_string(n) + " exceeds the file size " +
             std::to_string(map_size) + " (truncated or not a safetensors file)");
    }
    std::string_view header(reinterpret_cast<const char*>(base + 8), static_cast<std::size_t>(n));
    if (!is_valid_utf8(header)) fail("header is not valid UTF-8");
    nlohmann::json j;
    try {
        j = parse_json(header, "header");
    } catch (const ParseError& e) {
        fail(std::string("header is not valid JSON: ") + e.message());
    }
    if (!j.is_object()) fail("header is not a JSON object");

    const std::byte* buffer = base + 8 + n;
    const std::uint64_t buffer_size = map_size - 8 - n;

    struct Range {
        std::uint64_t begin, end;
        const std::string* name;
    };
    std::vector<Range> ranges;
    for (auto it = j.begin(); it != j.end(); ++it) {
        const std::string& key = it.key();
        const auto& v = it.value();
        if (key == "__metadata__") {
            if (!v.is_object()) fail("__metadata__ is not an object");
            for (auto m = v.begin(); m != v.end(); ++m) {
                if (!m.value().is_string()) {
                    fail("__metadata__ value of '" + m.key() + "' is not a string");
                }
                metadata[m.key()] = m.value().get<std::string>();
            }
            continue;
        }
        if (!v.is_object()) fail_tensor(key, "entry is not an object");
        auto dt = v.find("dtype");
        auto sh = v.find("shape");
        auto off = v.find("data_offsets");
        if (dt == v.end() || !dt->is_string()) fail_tensor(key, "missing or non-string 'dtype'");
        if (sh == v.end() || !sh->is_array()) fail_tensor(key, "missing or non-array 'shape'");
        if (off == v.end() || !off->is_array() || off->size() != 2) {
            fail_tensor(key, "'data_offsets' must be an array [begin, end]");
        }
        TensorView t;
        t.name = key;
        const auto dname = dt->get<std::string>();
        if (!parse_dtype(dname, t.dtype)) {
            fail_tensor(key,
                        "unsupported dtype '" + dname + "' (plumb reads F32, F16, BF16, I64, I32)");
        }
        // numel with overflow check (dims are bounded by the buffer anyway)
        // numel saturates at buffer_size + 1 (already too large for any valid entry).
        const std::uint64_t cap = buffer_size + 1;
        std::uint64_t numel = 1;
        for (const auto& d : *sh) {
            if (!d.is_number_unsigned())
                fail_tensor(key, "shape entries must be non-negative integers");
            const auto dim = d.get<std::uint64_t>();
            if (dim > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
                fail_tensor(key, "shape entry too large");
            }
            t.shape.push_back(static_cast<std::int64_t>(dim));
            if (dim != 0 && numel > cap / dim) {
                numel = cap;
            } else {
                numel = std::min(numel * dim, cap);
            }
        }
        for (const auto& o : *off) {
            if (!o.is_number_unsigned())
                fail_tensor(key, "data_offsets must be non-negative integers");
        }
        const auto begin = (*off)[0].get<std::uint64_t>();
        const auto end = (*off)[1].get<std::uint64_t>();
        if (begin > end) {
            fail_tensor(key, "data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) +
                                 "] has begin > end");
        }
        if (end > buffer_size) {
            fail_tensor(key, "data_offsets end " + std::to_string(end) +
                                 " beyond the data buffer of " + std::to_string(buffer_size) +
                                 " bytes (truncated file?)");
        }
        const std::uint64_t expected = numel * dtype_size(t.dtype);
        if (expected != end - begin) {
            fail_tensor(key, "shape " + shape_string(t.shape) + " of " + dname + " needs " +
                                 (numel > buffer_size ? std::string("more than the buffer")
                                                      : std::to_string(expected)) +
                                 " bytes but data_offsets cover " + std::to_string(end - begin));
        }
        t.bytes = std::span<const std::byte>(buffer + begin, static_cast<std::size_t>(end - begin));
        tensors.push_back(std::move(t));
    }
    // Overlaps: sort by begin; a non-empty range must start at or after the previous end.
    ranges.reserve(tensors.size());
    for (const auto& t : tensors) {
        const auto b = static_cast<std::uint64_t>(t.bytes.data() - buffer);
        ranges.push_back({b, b + t.bytes.size(), &t.name});
    }
    std::sort(ranges.begin(), ranges.end(), [](const Range& a, const Range& b) {
        return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
    });
    const Range* prev = nullptr;
    for (const auto& r : ranges) {
        if (r.begin == r.end) continue;  // empty tensors occupy no bytes
        if (prev && r.begin < prev->end) {
            fail("tensors '" + *prev->name + "' and '" + *r.name + "' overlap (data_offsets [" +
                 std::to_string(prev->begin) + ", " + std::to_string(prev->end) + "] and [" +
                 std::to_string(r.begin) + ", " + std::to_string(r.end) + "])");
        }
        prev = &r;
    }
    std::sort(tensors.begin(), tensors.end(),
              [](const TensorView& a, const TensorView& b) { return a.name < b.name; });
}

SafetensorsFile::SafetensorsFile(const std::filesystem::path& path)
    : m_impl(std::make_unique<Impl>()) {
    m_impl->name = path.string();
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        throw IoError(m_impl->name + ": cannot open: " + std::strerror(errno));
    }
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
        const int err = errno;
        ::close(fd);
        throw IoError(m_impl->name + ": cannot stat: " + std::strerror(err));
    }
    if (S_ISDIR(st.st_mode)) {
        ::close(fd);
        throw IoError(m_impl->name + ": is a directory, expected a .safetensors file");
    }
    m_impl->map_size = static_cast<std::size_t>(st.st_size);
    if (m_impl->map_size > 0) {
        void* p = ::mmap(nullptr, m_impl->map_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            const int err = errno;
            ::close(fd);
            throw IoError(m_impl->name + ": cannot map: " + std::strerror(err));
        }
        m_impl->map = p;
    }
    ::close(fd);
    try {
        m_impl->parse();
    } catch (const CheckpointError&) {
        // Name the format the file is in when it is not safetensors at all.
        const auto found = sniff_checkpoint_format(path);
        if (found != CheckpointFormat::Safetensors && found != CheckpointFormat::Unknown) {
            throw CheckpointError(wrong_format_message(path, found, "safetensors"));
        }
        throw;
    }
}

SafetensorsFile::SafetensorsFile() : m_impl(std::make_unique<Impl>()) {}

SafetensorsFile SafetensorsFile::from_tensors(std::string name,
                                              std::map<std::string, TensorData> tensors,
                                              std::map<std::string, std::string> metadata) {
    SafetensorsFile f;
    f.m_impl->name = std::move(name);
    f.m_impl->owned = std::move(tensors);
    f.m_impl->metadata = std::move(metadata);
    for (const auto& [tensor_name, t] : f.m_impl->owned) {
        if (t.bytes.size() !=
            static_cast<std::size_t>(shape_numel(t.shape)) * dtype_size(t.dtype)) {
            throw InvalidArgument("SafetensorsFile::from_tensors: tensor '" + tensor_name +
                                  "': byte size does not match shape " + shape_string(t.shape));
        }
        f.m_impl->tensors.push_back(t.view(tensor_name));  // map order = sorted by name
    }
    return f;
}

SafetensorsFile::~SafetensorsFile() = default;
SafetensorsFile::SafetensorsFile(SafetensorsFile&&) noexcept = default;
SafetensorsFile& SafetensorsFile::operator=(SafetensorsFile&&) noexcept = default;

const std::string& SafetensorsFile::path_name() const noexcept { return m_impl->name; }
const std::vector<TensorView>& SafetensorsFile::tensors() const noexcept { return m_impl->tensors; }
std::size_t SafetensorsFile::size() const noexcept { return m_impl->tensors.size(); }

std::vector<std::string> SafetensorsFile::names() const {
    std::vector<std::string> out;
    out.reserve(m_impl->tensors.size());
    for (const auto& t : m_impl->tensors) out.push_back(t.name);
    return out;
}

const TensorView* SafetensorsFile::find(std::string_view name) const noexcept {
    const auto& ts = m_impl->tensors;
    auto it = std::lower_bound(ts.begin(), ts.end(), name,
                               [](const TensorView& t, std::string_view n) { return t.name < n; });
    if (it == ts.end() || it->name != name) return nullptr;
    return &*it;
}

bool SafetensorsFile::contains(std::string_view name) const noexcept {
    return find(name) != nullptr;
}

const TensorView& SafetensorsFile::tensor(std::string_view name) const {
    const TensorView* t = find(name);
    if (!t) throw CheckpointError(m_impl->name + ": missing tensor '" + std::string(name) + "'");
    return *t;
}

std::vector<float> SafetensorsFile::float32(std::string_view name,
                                            std::span<const std::int64_t> expected_shape) const {
    const TensorView& t = tensor(name);
    if (!std::equal(t.shape.begin(), t.shape.end(), expected_shape.begin(), expected_shape.end())) {
        throw CheckpointError(m_impl->name + ": tensor '" + t.name + "': shape " +
                              shape_string(t.shape) + ", expected " + shape_string(expected_shape));
    }
    return float32(name);
}

std::vector<float> SafetensorsFile::float32(std::string_view name) const {
    const TensorView& t = tensor(name);
    try {
        return to_float32(t);
    } catch (const CheckpointError& e) {
        throw CheckpointError(m_impl->name + ": " + e.what());
    }
}

const std::map<std::string, std::string>& SafetensorsFile::metadata() const noexcept {
    return m_impl->metadata;
}

// ---------------------------------------------------------------------------------------------
// Writing
// ---------------------------------------------------------------------------------------------

TensorData TensorData::from_float32(std::vector<std::int64_t> shape, std::span<const float> values,
                                    DType dtype) {
    for (auto d : shape) {
        if (d < 0)
            throw InvalidArgument("TensorData: negative dimension in " + shape_string(shape));
    }
    const auto n = static_cast<std::size_t>(shape_numel(shape));
    if (values.size() != n) {
        throw InvalidArgument("TensorData: shape " + shape_string(shape) + " has " +
                              std::to_string(n) + " elements, got " +
                              std::to_string(values.size()) + " values");
    }
    TensorData t;
    t.dtype = dtype;
    t.shape = std::move(shape);
    switch (dtype) {
        case DType::F32:
            t.bytes.resize(n * 4);
            if (n) std::memcpy(t.bytes.data(), values.data(), n * 4);
            return t;
        case DType::F16:
        case DType::BF16:
            t.bytes.resize(n * 2);
            for (std::size_t i = 0; i < n; ++i) {
                const std::uint16_t h =
                    dtype == DType::F16 ? float_to_half(values[i]) : float_to_bfloat16(values[i]);
                std::memcpy(t.bytes.data() + 2 * i, &h, 2);
            }
            return t;
        case DType::I64:
        case DType::I32:
            break;
    }
    throw InvalidArgument(std::string("TensorData::from_float32: dtype ") + dtype_name(dtype) +
                          " is not a floating dtype");
}

TensorData TensorData::from_int64(std::vector<std::int64_t> shape,
                                  std::span<const std::int64_t> values) {
    const auto n = static_cast<std::size_t>(shape_numel(shape));
    if (values.size() != n) {
        throw InvalidArgument("TensorData: shape " + shape_string(shape) + " has " +
                              std::to_string(n) + " elements, got " +
                              std::to_string(values.size()) + " values");
    }
    TensorData t;
    t.dtype = DType::I64;
    t.shape = std::move(shape);
    t.bytes.resize(n * 8);
    if (n) std::memcpy(t.bytes.data(), values.data(), n * 8);
    return t;
}

TensorView TensorData::view(std::string name) const {
    return TensorView{std::move(name), dtype, shape, std::span<const std::byte>(bytes)};
}

void save_safetensors(const std::filesystem::path& path, std::span<const TensorView> tensors,
                      const std::map<std::string, std::string>& metadata) {
    std::vector<const TensorView*> order;
    std::set<std::string_view> seen;
    for (const auto& t : tensors) {
        if (t.name.empty() || t.name == "__metadata__") {
            throw InvalidArgument("save_safetensors: invalid tensor name '" + t.name + "'");
        }
        if (!seen.insert(t.name).second) {
            throw InvalidArgument("save_safetensors: duplicate tensor name '" + t.name + "'");
        }
        if (!is_valid_utf8(t.name)) {
            throw InvalidArgument("save_safetensors: tensor name is not valid UTF-8");
        }
        for (auto d : t.shape) {
            if (d < 0) {
                throw InvalidArgument("save_safetensors: tensor '" + t.name +
                                      "': negative dimension in " + shape_string(t.shape));
            }
        }
        const auto need = static_cast<std::size_t>(t.numel()) * dtype_size(t.dtype);
        if (t.bytes.size() != need) {
            throw InvalidArgument("save_safetensors: tensor '" + t.name + "': shape " +
                                  shape_string(t.shape) + " of " + dtype_name(t.dtype) + " needs " +
                                  std::to_string(need) + " bytes, got " +
                                  std::to_string(t.bytes.size()));
        }
        order.push_back(&t);
    }
    // Hugging Face's layout: larger element sizes first (keeps every tensor aligned), then name.
    std::sort(order.begin(), order.end(), [](const TensorView* a, const TensorView* b) {
        const auto sa = dtype_size(a->dtype), sb = dtype_size(b->dtype);
        return sa != sb ? sa > sb : a->name < b->name;
    });
    nlohmann::ordered_json header = nlohmann::ordered_json::object();
    if (!metadata.empty()) {
        nlohmann::ordered_json m = nlohmann::ordered_json::object();
        for (const auto& [k, v] : metadata) {
            if (!is_valid_utf8(k) || !is_valid_utf8(v)) {
                throw InvalidArgument("save_safetensors: metadata is not valid UTF-8");
            }
            m[k] = v;
        }
        header["__metadata__"] = std::move(m);
    }
    std::uint64_t offset = 0;
    for (const TensorView* t : order) {
        nlohmann::ordered_json e = nlohmann::ordered_json::object();
        e["dtype"] = dtype_name(t->dtype);
        e["shape"] = t->shape;
        e["data_offsets"] = {offset, offset + t->bytes.size()};
        offset += t->bytes.size();
        header[t->name] = std::move(e);
    }
    std::string text = header.dump();
    text.append((8 - text.size() % 8) % 8, ' ');
    const std::uint64_t n = text.size();
    char len[8];
    std::memcpy(len, &n, 8);

    AtomicFile out(path);
    out.write(std::string_view(len, 8));
    out.write(text);
    for (const TensorView* t : order) {
        out.write(
            std::string_view(reinterpret_cast<const char*>(t->bytes.data()), t->bytes.size()));
    }
    out.commit();
}

void save_safetensors(const std::filesystem::path& path,
                      const std::map<std::string, TensorData>& tensors,
                      const std::map<std::string, std::string>& metadata) {
    std::vector<TensorView> views;
    views.reserve(tensors.size());
    for (const auto& [name, t] : tensors) views.push_back(t.view(name));
    save_safetensors(path, views, metadata);
}

}  // namespace plumb::rerank
