#include "rerank/checkpoint_format.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <vector>

#include "plugin/error.hpp"
#include "rerank/pytorch_checkpoint.hpp"

namespace plumb::rerank {

namespace fs = std::filesystem;

namespace {

std::uint16_t le16(const unsigned char* p) {
    return static_cast<std::uint16_t>(p[0] | (p[1] << 8));
}
std::uint32_t le32(const unsigned char* p) {
    return static_cast<std::uint32_t>(p[0]) | (static_cast<std::uint32_t>(p[1]) << 8) |
           (static_cast<std::uint32_t>(p[2]) << 16) | (static_cast<std::uint32_t>(p[3]) << 24);
}
std::uint64_t le64(const unsigned char* p) {
    return static_cast<std::uint64_t>(le32(p)) | (static_cast<std::uint64_t>(le32(p + 4)) << 32);
}

bool read_at(std::ifstream& in, std::uint64_t offset, std::vector<unsigned char>& out,
             std::size_t n) {
    out.resize(n);
    in.clear();
    in.seekg(static_cast<std::streamoff>(offset));
    if (!in) return false;
    in.read(reinterpret_cast<char*>(out.data()), static_cast<std::streamsize>(n));
    return static_cast<std::size_t>(in.gcount()) == n;
}

// Names in a zip's central directory (zip64 too). Empty with `why` set when it cannot be read:
// a truncated download loses the end-of-central-directory record first.
std::vector<std::string> zip_entry_names(const fs::path& path, std::uint64_t size,
                                         std::string& why) {
    std::ifstream in(path, std::ios::binary);
    const std::uint64_t tail = std::min<std::uint64_t>(size, 65535 + 22);
    std::vector<unsigned char> buf;
    if (!read_at(in, size - tail, buf, static_cast<std::size_t>(tail))) {
        why = "cannot read the end of the file";
        return {};
    }
    std::size_t eocd = std::string::npos;
    for (std::size_t i = buf.size() >= 22 ? buf.size() - 22 + 1 : 0; i-- > 0;) {
        if (buf[i] == 'P' && buf[i + 1] == 'K' && buf[i + 2] == 5 && buf[i + 3] == 6) {
            eocd = i;
            break;
        }
    }
    if (eocd == std::string::npos) {
        why = "no end-of-central-directory record: the archive is truncated or corrupt";
        return {};
    }
    std::uint64_t entries = le16(&buf[eocd + 10]);
    std::uint64_t cd_size = le32(&buf[eocd + 12]);
    std::uint64_t cd_offset = le32(&buf[eocd + 16]);
    if (cd_offset == 0xFFFFFFFFu || entries == 0xFFFFu || cd_size == 0xFFFFFFFFu) {
        // zip64: locator (20 bytes) just before the EOCD, pointing at the zip64 EOCD record.
        const std::uint64_t eocd_pos = size - tail + eocd;
        std::vector<unsigned char> loc, rec;
        if (eocd_pos < 20 || !read_at(in, eocd_pos - 20, loc, 20) ||
            le32(loc.data()) != 0x07064b50u || !read_at(in, le64(&loc[8]), rec, 56) ||
            le32(rec.data()) != 0x06064b50u) {
            why = "the zip64 end-of-central-directory record is missing or corrupt";
            return {};
        }
        entries = le64(&rec[32]);
        cd_size = le64(&rec[40]);
        cd_offset = le64(&rec[48]);
    }
    if (cd_offset > size || cd_size > size - cd_offset || cd_size > (1u << 28)) {
        why = "the central directory lies outside the file (truncated or corrupt)";
        return {};
    }
    std::vector<unsigned char> cd;
    if (!read_at(in, cd_offset, cd, static_cast<std::size_t>(cd_size))) {
        why = "cannot read the central directory";
        return {};
    }
    std::vector<std::string> names;
    std::size_t p = 0;
    for (std::uint64_t e = 0; e < entries; ++e) {
        if (p + 46 > cd.size() || le32(&cd[p]) != 0x02014b50u) {
            why = "corrupt central directory entry " + std::to_string(e);
            return {};
        }
        const std::size_t name_len = le16(&cd[p + 28]);
        const std::size_t extra = le16(&cd[p + 30]);
        const std::size_t comment = le16(&cd[p + 32]);
        if (p + 46 + name_len > cd.size()) {
            why = "corrupt central directory entry " + std::to_string(e);
            return {};
        }
        names.emplace_back(reinterpret_cast<const char*>(&cd[p + 46]), name_len);
        p += 46 + name_len + extra + comment;
    }
    return names;
}

// "<archive>/<name>" for any archive folder.
bool has_member(const std::vector<std::string>& names, const std::string& member) {
    for (const auto& n : names) {
        const auto slash = n.find('/');
        if (slash != std::string::npos && n.compare(slash + 1, std::string::npos, member) == 0) {
            return true;
        }
    }
    return false;
}

bool has_folder(const std::vector<std::string>& names, const std::string& folder) {
    for (const auto& n : names) {
        const auto slash = n.find('/');
        if (slash != std::string::npos && n.compare(slash + 1, folder.size(), folder) == 0) {
            return true;
        }
    }
    return false;
}

}  // namespace

const char* checkpoint_format_description(CheckpointFormat format) noexcept {
    switch (format) {
        case CheckpointFormat::Safetensors:
            return "a safetensors file";
        case CheckpointFormat::PytorchZip:
            return "a PyTorch zip checkpoint (torch.save)";
        case CheckpointFormat::TorchScript:
            return "a TorchScript archive (torch.jit.save)";
        case CheckpointFormat::Zip:
            return "a zip archive";
        case CheckpointFormat::PytorchLegacy:
            return "a legacy PyTorch checkpoint (torch.save before PyTorch 1.6 or with "
                   "_use_new_zipfile_serialization=False)";
        case CheckpointFormat::Pickle:
            return "a Python pickle";
        case CheckpointFormat::Gguf:
            return "a GGUF file (llama.cpp)";
        case CheckpointFormat::Hdf5:
            return "an HDF5 file (Keras / TensorFlow .h5)";
        case CheckpointFormat::Numpy:
            return "a NumPy .npy array";
        case CheckpointFormat::Gzip:
            return "a gzip-compressed file";
        case CheckpointFormat::GitLfsPointer:
            return "a Git LFS pointer (the weights were never downloaded: run git lfs pull)";
        case CheckpointFormat::Empty:
            return "an empty file";
        case CheckpointFormat::Unknown:
            return "a file of unknown format";
    }
    return "a file of unknown format";
}

CheckpointFormat sniff_checkpoint_format(const fs::path& path, std::string* detail) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw IoError(path.string() + ": cannot open");
    std::array<unsigned char, 64> h{};
    in.read(reinterpret_cast<char*>(h.data()), static_cast<std::streamsize>(h.size()));
    const auto n = static_cast<std::size_t>(in.gcount());
    std::error_code ec;
    const std::uint64_t size = fs::file_size(path, ec);
    if (ec) throw IoError(path.string() + ": cannot read its size: " + ec.message());
    auto starts = [&](std::string_view magic) {
        return n >= magic.size() && std::memcmp(h.data(), magic.data(), magic.size()) == 0;
    };
    if (n == 0) return CheckpointFormat::Empty;
    if (starts(std::string_view("PK\x03\x04", 4)) || starts(std::string_view("PK\x05\x06", 4))) {
        std::string why;
        const auto names = zip_entry_names(path, size, why);
        if (names.empty()) {
            if (detail) *detail = why.empty() ? "the archive is empty" : why;
            return CheckpointFormat::Zip;
        }
        if (has_member(names, "constants.pkl") || has_folder(names, "code/")) {
            return CheckpointFormat::TorchScript;
        }
        if (has_member(names, "data.pkl")) return CheckpointFormat::PytorchZip;
        if (detail) *detail = "it holds no data.pkl";
        return CheckpointFormat::Zip;
    }
    // torch's legacy magic number 0x1950a86a20f9469cfc6c pickled as LONG1 after PROTO 2.
    if (starts(std::string_view("\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19", 14))) {
        return CheckpointFormat::PytorchLegacy;
    }
    if (n >= 2 && h[0] == 0x80 && h[1] >= 2 && h[1] <= 5) return CheckpointFormat::Pickle;
    if (starts("GGUF") && n >= 8 && h[4] >= 1 && h[4] <= 3 && h[5] == 0 && h[6] == 0 && h[7] == 0) {
        return CheckpointFormat::Gguf;  // magic + version 1-3 (uint32 little-endian)
    }
    if (starts(std::string_view("\x89HDF\r\n\x1a\n", 8))) return CheckpointFormat::Hdf5;
    if (starts(std::string_view("\x93NUMPY", 6))) return CheckpointFormat::Numpy;
    if (starts(std::string_view("\x1f\x8b", 2))) return CheckpointFormat::Gzip;
    if (starts("version https://git-lfs")) return CheckpointFormat::GitLfsPointer;
    if (n > 8 && h[8] == '{') {
        const std::uint64_t header = le64(h.data());
        if (header <= size - 8) return CheckpointFormat::Safetensors;
    }
    return CheckpointFormat::Unknown;
}

std::string wrong_format_message(const fs::path& path, CheckpointFormat found,
                                 const std::string& expected, const std::string& detail) {
    std::string msg = path.string() + ": this is " + checkpoint_format_description(found);
    if (!detail.empty()) msg += " (" + detail + ")";
    msg += ", not " + expected;
    switch (found) {
        case CheckpointFormat::PytorchLegacy:
            msg +=
                "; re-save it with torch.save(torch.load(f), f) under PyTorch >= 1.6, or as "
                "safetensors (safetensors.torch.save_file)";
            break;
        case CheckpointFormat::TorchScript:
            msg +=
                "; TorchScript models run code and load only in the torchscript stage "
                "(--type torchscript)";
            break;
        default:
            break;
    }
    return msg;
}

SafetensorsFile load_weights_file(const fs::path& path) {
    std::error_code ec;
    if (fs::is_directory(path, ec)) {
        throw IoError(path.string() + ": is a folder, expected a weights file");
    }
    const std::string ext = path.extension().string();
    if (ext == ".safetensors") return SafetensorsFile(path);  // names the format it finds
    if (ext == ".bin" || ext == ".pt" || ext == ".pth") {
        return SafetensorsFile::from_tensors(path.string(), read_pytorch_state_dict(path),
                                             {{"format", "pytorch-zip"}});
    }
    std::string detail;
    const auto format = sniff_checkpoint_format(path, &detail);
    switch (format) {
        case CheckpointFormat::Safetensors:
            return SafetensorsFile(path);
        case CheckpointFormat::PytorchZip:
            return SafetensorsFile::from_tensors(path.string(), read_pytorch_state_dict(path),
                                                 {{"format", "pytorch-zip"}});
        default:
            break;
    }
    throw CheckpointError(
        wrong_format_message(path, format, "safetensors or a PyTorch zip checkpoint", detail));
}

fs::path find_weights_file(const fs::path& dir) {
    std::error_code ec;
    for (const char* name : {"model.safetensors", "pytorch_model.bin"}) {
        if (fs::exists(dir / name, ec)) return dir / name;
    }
    for (const char* name : {"model.safetensors.index.json", "pytorch_model.bin.index.json"}) {
        if (fs::exists(dir / name, ec)) {
            throw CheckpointError(dir.string() + ": holds a sharded checkpoint (" + name +
                                  "); plumb reads a single model.safetensors or "
                                  "pytorch_model.bin");
        }
    }
    throw CheckpointError(dir.string() + ": no model.safetensors or pytorch_model.bin");
}

}  // namespace plumb::rerank
