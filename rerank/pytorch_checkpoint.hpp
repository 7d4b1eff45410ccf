#pragma once
/// \file pytorch_checkpoint.hpp
/// Reading the state dict of a PyTorch zip checkpoint (`torch.save` since PyTorch 1.6, e.g. a
/// Hugging Face `pytorch_model.bin`) without Python and without running code from the file.
///
/// The zip archive is read with LibTorch's own reader (caffe2::serialize::PyTorchStreamReader):
/// `<archive>/data.pkl` is the pickle, `<archive>/data/<key>` the raw storages. LibTorch's
/// unpickler (torch::jit::Unpickler) is not used: it turns `collections.OrderedDict`, the type
/// of every state dict, into None, does not know `torch._utils._rebuild_parameter`, and trusts
/// the stack shape of the opcodes it runs (REDUCE on a short stack is undefined behaviour). The
/// pickle is instead interpreted here by a small stack machine that knows only the opcodes and
/// globals a state dict needs:
///  - globals: `collections.OrderedDict`, `torch._utils._rebuild_tensor_v2`,
///    `torch._utils._rebuild_tensor`, `torch._utils._rebuild_parameter`,
///    `torch._utils._rebuild_parameter_with_state`, and the storage types
///    `torch.{Float,Half,BFloat16,Double,Long,Int}Storage`. Any other GLOBAL / STACK_GLOBAL
///    (`os.system`, `builtins.eval`, ...) is a CheckpointError naming it, raised when the
///    opcode is read, before anything could be applied to it; nothing is ever called.
///  - opcodes: protocol 2-5 data opcodes (ints, floats, strings, bytes, tuples, lists, dicts,
///    memo, marks, frames), REDUCE / BUILD on allowed globals only, BINPERSID for storages.
///    INST, OBJ, NEWOBJ, EXT*, text PERSID and the protocol-0 text opcodes are errors.
/// Tensors: any shape, stride and storage offset inside their storage (checked), copied out
/// contiguously; Float, Half and BFloat16 keep their dtype, Double becomes F32, Long / Int stay
/// integers; other dtypes (Bool, Byte, ...) are an error naming the tensor. The top-level object
/// must be a dict of name -> tensor (or hold one under `state_dict`, `model_state_dict` or
/// `model`); `_metadata` and other attribute state is ignored.
///
/// Every failure (not a zip, truncated archive, missing storage record, forbidden global,
/// malformed pickle, out-of-range view) is a CheckpointError naming the file.

#include <filesystem>
#include <map>
#include <string>

#include "rerank/safetensors.hpp"

namespace plumb::rerank {

/// The tensors of the state dict in `path`, by name. Throws CheckpointError (see the file
/// comment), IoError when the file cannot be opened.
std::map<std::string, TensorData> read_pytorch_state_dict(const std::filesystem::path& path);

}  // namespace plumb::rerank
