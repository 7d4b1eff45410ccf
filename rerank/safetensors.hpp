#pragma once
/// \file safetensors.hpp
/// Reading and writing the safetensors checkpoint format (Hugging Face), parsed directly.
///
/// Layout: 8 bytes little-endian unsigned N, then N bytes of UTF-8 JSON header
/// `{"<name>": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}, ...,
///   "__metadata__": {"key": "value", ...}}`, then the raw byte buffer. Offsets are relative to
/// the start of the buffer, tensors are row-major, little-endian.
///
/// Validation on load (any violation throws CheckpointError naming the file and, where it
/// applies, the tensor): N within the file, JSON valid and an object, every entry an object with
/// a known dtype, a shape of non-negative integers and two offsets begin <= end inside the
/// buffer, end - begin == numel * dtype size, no two tensors overlapping. Gaps between tensors
/// are tolerated (the Hugging Face writer never produces them). `__metadata__` must map strings
/// to strings.
///
/// No Torch here: tensors are raw byte views; to_float32() converts F32/F16/BF16 by hand.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace plumb::rerank {

/// Element types plumb reads and writes (safetensors dtype names: F32, F16, BF16, I64, I32).
enum class DType { F32, F16, BF16, I64, I32 };

/// "F32", "F16", "BF16", "I64", "I32".
const char* dtype_name(DType dtype) noexcept;
/// Bytes per element (4, 2, 2, 8, 4).
std::size_t dtype_size(DType dtype) noexcept;
/// Parses a safetensors dtype name; false when unknown (e.g. "F64", "U8", "BOOL").
bool parse_dtype(std::string_view name, DType& out) noexcept;

/// IEEE binary16 -> float (subnormals, infinities and NaN kept).
float half_to_float(std::uint16_t h) noexcept;
/// bfloat16 -> float (exact: the upper 16 bits of a float).
float bfloat16_to_float(std::uint16_t b) noexcept;
/// float -> IEEE binary16, round to nearest even; overflow gives infinity, NaN stays NaN.
std::uint16_t float_to_half(float f) noexcept;
/// float -> bfloat16, round to nearest even; NaN stays NaN.
std::uint16_t float_to_bfloat16(float f) noexcept;

/// Number of elements of a shape (1 for a scalar, shape {}).
std::int64_t shape_numel(std::span<const std::int64_t> shape) noexcept;
/// "[2, 3]" for messages.
std::string shape_string(std::span<const std::int64_t> shape);

/// A borrowed tensor: name, dtype, shape and its raw little-endian bytes. When it comes from a
/// SafetensorsFile, `bytes` points into that file's mapping and lives as long as the file.
struct TensorView {
    std::string name;
    DType dtype = DType::F32;
    std::vector<std::int64_t> shape;
    std::span<const std::byte> bytes;

    std::int64_t numel() const noexcept { return shape_numel(shape); }
};

/// Converts a F32, F16 or BF16 tensor to floats; throws CheckpointError for integer dtypes.
std::vector<float> to_float32(const TensorView& tensor);
/// Same, into `out` (size must equal numel; throws InvalidArgument otherwise).
void to_float32(const TensorView& tensor, std::span<float> out);

/// An owned tensor to write.
struct TensorData {
    DType dtype = DType::F32;
    std::vector<std::int64_t> shape;
    std::vector<std::byte> bytes;  ///< numel * dtype_size bytes, little-endian, row-major

    /// Converts float values to `dtype` (F32, F16 or BF16; InvalidArgument otherwise, or when
    /// values.size() != numel(shape)).
    static TensorData from_float32(std::vector<std::int64_t> shape, std::span<const float> values,
                                   DType dtype = DType::F32);
    /// Integer tensor (I64).
    static TensorData from_int64(std::vector<std::int64_t> shape,
                                 std::span<const std::int64_t> values);
    /// A view of this tensor under `name` (borrows `bytes`).
    TensorView view(std::string name) const;
};

/// A loaded safetensors file (memory-mapped, read-only). Immutable after construction and safe
/// to read from several threads. Movable, not copyable.
class SafetensorsFile {
public:
    /// Maps and validates `path`. Throws IoError when it cannot be opened, CheckpointError when
    /// the content is invalid (see the file comment); when the file is in another format (a
    /// PyTorch zip or legacy checkpoint, GGUF, HDF5, ...) the message names that format.
    explicit SafetensorsFile(const std::filesystem::path& path);
    /// An in-memory tensor set with the same interface, owning `tensors` (e.g. the tensors of a
    /// PyTorch checkpoint, see checkpoint_format.hpp). `name` is used in messages.
    static SafetensorsFile from_tensors(std::string name, std::map<std::string, TensorData> tensors,
                                        std::map<std::string, std::string> metadata = {});
    ~SafetensorsFile();
    SafetensorsFile(SafetensorsFile&&) noexcept;
    SafetensorsFile& operator=(SafetensorsFile&&) noexcept;

    /// Path as given, for messages.
    const std::string& path_name() const noexcept;
    /// All tensors, sorted by name.
    const std::vector<TensorView>& tensors() const noexcept;
    /// Tensor names, sorted.
    std::vector<std::string> names() const;
    std::size_t size() const noexcept;
    bool contains(std::string_view name) const noexcept;
    /// nullptr when absent.
    const TensorView* find(std::string_view name) const noexcept;
    /// Throws CheckpointError "<file>: missing tensor '<name>'" when absent.
    const TensorView& tensor(std::string_view name) const;
    /// The tensor converted to float32, after checking its shape equals `expected_shape`
    /// (CheckpointError naming file, tensor, expected and found shapes otherwise).
    std::vector<float> float32(std::string_view name,
                               std::span<const std::int64_t> expected_shape) const;
    /// The tensor converted to float32, any shape.
    std::vector<float> float32(std::string_view name) const;
    /// The `__metadata__` map (empty when absent).
    const std::map<std::string, std::string>& metadata() const noexcept;

private:
    SafetensorsFile();
    struct Impl;
    std::unique_ptr<Impl> m_impl;
};

/// Writes tensors and metadata as a safetensors file, atomically (plumb::AtomicFile). Tensors
/// are laid out by decreasing dtype size then name (as Hugging Face does), the header is padded
/// with spaces to a multiple of 8 bytes. Names must be unique, non-empty and not "__metadata__";
/// bytes must match dtype and shape. Throws InvalidArgument for bad input, IoError on write
/// failure.
void save_safetensors(const std::filesystem::path& path, std::span<const TensorView> tensors,
                      const std::map<std::string, std::string>& metadata = {});
/// Same, from owned tensors keyed by name.
void save_safetensors(const std::filesystem::path& path,
                      const std::map<std::string, TensorData>& tensors,
                      const std::map<std::string, std::string>& metadata = {});

}  // namespace plumb::rerank
