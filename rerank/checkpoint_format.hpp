#pragma once
/// \file checkpoint_format.hpp
/// Which format a weights file is in, told from its first bytes (and, for zip archives, from
/// the names in the zip's central directory), and loading of the two formats plumb reads:
/// safetensors and the PyTorch zip checkpoint `torch.save` writes since PyTorch 1.6.
///
/// Neither reader runs code from the file: safetensors is a JSON header and raw bytes; the
/// PyTorch reader (pytorch_checkpoint.hpp) interprets the pickle with an allow-list of globals.
/// TorchScript archives (torch.jit.save) execute their code by design and are loaded only by
/// the TorchScript stage, never by the BERT loaders.

#include <filesystem>
#include <string>

#include "rerank/safetensors.hpp"

namespace plumb::rerank {

/// What a file's magic bytes say it is.
enum class CheckpointFormat {
    Safetensors,    ///< 8-byte little-endian header length, then '{'
    PytorchZip,     ///< zip with <archive>/data.pkl (torch.save, PyTorch >= 1.6)
    TorchScript,    ///< zip with constants.pkl or code/ (torch.jit.save)
    Zip,            ///< another zip archive, or one whose central directory cannot be read
    PytorchLegacy,  ///< pickle protocol 2 starting with torch's magic number (torch.save,
                    ///< `_use_new_zipfile_serialization=False` or PyTorch < 1.6)
    Pickle,         ///< another Python pickle
    Gguf,           ///< "GGUF" (llama.cpp)
    Hdf5,           ///< "\x89HDF\r\n\x1a\n" (Keras / TensorFlow .h5)
    Numpy,          ///< "\x93NUMPY" (.npy)
    Gzip,           ///< "\x1f\x8b"
    GitLfsPointer,  ///< "version https://git-lfs..." (the weights were never downloaded)
    Empty,          ///< zero bytes
    Unknown,
};

/// A short description for messages, e.g. "a PyTorch zip checkpoint (torch.save)".
const char* checkpoint_format_description(CheckpointFormat format) noexcept;

/// Sniffs `path` (reads at most its first 64 bytes and, for a zip, its central directory).
/// A zip whose end-of-central-directory record is missing (truncated download) is `Zip`;
/// `detail`, when given, then says why. Throws IoError when the file cannot be read.
CheckpointFormat sniff_checkpoint_format(const std::filesystem::path& path,
                                         std::string* detail = nullptr);

/// "<path>: this is <description>, not <expected>" plus a hint where one helps (legacy pickle:
/// re-save with a current torch.save; TorchScript: use the torchscript stage).
std::string wrong_format_message(const std::filesystem::path& path, CheckpointFormat found,
                                 const std::string& expected, const std::string& detail = {});

/// Loads the tensors of a safetensors file or a PyTorch zip checkpoint. The name says which is
/// expected: `*.safetensors` must be safetensors, `*.bin`, `*.pt`, `*.pth` a PyTorch zip
/// checkpoint; any other name is sniffed and may be either. A file whose content is another
/// format throws CheckpointError "<file>: this is <format found>, not <format expected>". The
/// result of a PyTorch file owns its tensors in memory and its metadata() is
/// `{"format": "pytorch-zip"}` (a safetensors file is mapped and keeps its own metadata).
SafetensorsFile load_weights_file(const std::filesystem::path& path);

/// The weights file of a Hugging Face model folder: `model.safetensors` when present, else
/// `pytorch_model.bin`. Throws CheckpointError naming the folder when neither exists (a sharded
/// checkpoint, `*.index.json`, is named as unsupported).
std::filesystem::path find_weights_file(const std::filesystem::path& dir);

}  // namespace plumb::rerank
