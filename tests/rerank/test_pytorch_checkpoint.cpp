// PyTorch zip checkpoints (pytorch_model.bin): files written by python3-torch at test time
// (Debian's python3-torch, installed by scripts/setup) from the tensors of the numpy reference
// model tests/rerank/reference/tiny_bert_cat1; loaded models must equal the safetensors path's
// exactly and the numpy reference's outputs; forbidden globals, legacy files, truncated archives
// and misnamed formats are clear errors.

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

#include "plugin/error.hpp"
#include "plugin/text_io.hpp"
#include "rerank/bert_checkpoint.hpp"
#include "rerank/checkpoint_format.hpp"
#include "rerank/pytorch_checkpoint.hpp"
#include "rerank/safetensors.hpp"
#include "rerank/torchscript_stage.hpp"
#include "tests/support/cli.hpp"
#include "tests/test_tmp.hpp"

namespace fs = std::filesystem;
using namespace plumb::rerank;

namespace {

const fs::path kRef = fs::path(PLUMB_SOURCE_DIR) / "tests/rerank/reference";

// Writes, from the reference model's tensors: bin32 (float32 pytorch_model.bin with a
// transposed view, a slice at a storage offset, an nn.Parameter, tied weights sharing a storage,
// an expanded int64 buffer and the _metadata attribute Module.state_dict() adds), st16 / bin16
// (the same tensors as float16 in both formats), bf16 (bfloat16 bin), legacy (non-zip
// torch.save), ts (a TorchScript archive), evil2 / evil4 (torch zips whose pickle calls
// os.system / builtins.eval through __reduce__, protocols 2 and 4), wrapped ({'state_dict': sd}).
const char* kWriter = R"PY(
import collections, json, os, pickle, struct, sys, zipfile
import numpy as np
import torch

ref, out = sys.argv[1], sys.argv[2]

def read_st(path):
    raw = open(path, 'rb').read()
    n = struct.unpack('<Q', raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    buf = raw[8 + n:]
    d = collections.OrderedDict()
    for k, v in header.items():
        if k == '__metadata__':
            continue
        b, e = v['data_offsets']
        a = np.frombuffer(buf[b:e], dtype='<f4').reshape(v['shape']).copy()
        d[k] = torch.from_numpy(a)
    return d

def write_st(path, tensors):
    header, blobs, off = {}, [], 0
    for k, t in tensors.items():
        a = t.contiguous().numpy()
        data = a.tobytes()
        header[k] = {'dtype': {np.dtype('float16'): 'F16', np.dtype('float32'): 'F32'}[a.dtype],
                     'shape': list(a.shape), 'data_offsets': [off, off + len(data)]}
        off += len(data)
        blobs.append(data)
    h = json.dumps(header).encode()
    h += b' ' * ((8 - len(h) % 8) % 8)
    with open(path, 'wb') as f:
        f.write(struct.pack('<Q', len(h)) + h + b''.join(blobs))

def folder(name):
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    for f in ('config.json', 'vocab.txt'):
        with open(os.path.join(ref, f), 'rb') as src, open(os.path.join(d, f), 'wb') as dst:
            dst.write(src.read())
    return d

def torch_zip(path, pkl):
    with zipfile.ZipFile(path, 'w', zipfile.ZIP_STORED) as z:
        z.writestr('archive/data.pkl', pkl)
        z.writestr('archive/version', '3\n')

sd = read_st(os.path.join(ref, 'model.safetensors'))
b = collections.OrderedDict()
for k, t in sd.items():
    if k.endswith('intermediate.dense.weight'):
        t = t.t().contiguous().t()  # same values, column-major strides
        assert not t.is_contiguous()
    elif k.endswith('attention.self.query.bias'):
        big = torch.zeros(t.numel() + 13)
        big[5:5 + t.numel()] = t
        t = big[5:5 + t.numel()]  # storage offset 5 in a larger storage
    elif k == 'classifier.weight':
        t = torch.nn.Parameter(t.clone())
    b[k] = t
b['cls.predictions.decoder.weight'] = b['bert.embeddings.word_embeddings.weight']
b['bert.embeddings.position_ids'] = torch.arange(32).expand((1, -1))
b._metadata = collections.OrderedDict([('', {'version': 1})])
torch.save(b, os.path.join(folder('bin32'), 'pytorch_model.bin'))

half = collections.OrderedDict((k, t.half()) for k, t in sd.items())
write_st(os.path.join(folder('st16'), 'model.safetensors'), half)
torch.save(half, os.path.join(folder('bin16'), 'pytorch_model.bin'))
bf = collections.OrderedDict((k, t.bfloat16()) for k, t in sd.items())
torch.save(bf, os.path.join(folder('bf16'), 'pytorch_model.bin'))
# the bfloat16 values as float32, for comparison
write_st(os.path.join(folder('bf16_as_f32'), 'model.safetensors'),
         collections.OrderedDict((k, t.float()) for k, t in bf.items()))

torch.save(sd, os.path.join(folder('legacy'), 'pytorch_model.bin'),
           _use_new_zipfile_serialization=False)
torch.save({'state_dict': sd, 'epoch': 3}, os.path.join(folder('wrapped'), 'pytorch_model.bin'))
torch.jit.save(torch.jit.script(torch.nn.Linear(2, 2)), os.path.join(folder('ts'), 'pytorch_model.bin'))

marker = os.path.join(out, 'PWNED')
class Evil:
    def __reduce__(self):
        return (os.system, ('touch ' + marker,))
class Evil4:
    def __reduce__(self):
        return (eval, ("__import__('os').system('touch " + marker + "')",))
torch_zip(os.path.join(folder('evil2'), 'pytorch_model.bin'),
          pickle.dumps(collections.OrderedDict([('x', Evil())]), protocol=2))
torch_zip(os.path.join(folder('evil4'), 'pytorch_model.bin'),
          pickle.dumps({'x': Evil4()}, protocol=4))
)PY";

class PytorchCheckpoint : public ::testing::Test {
protected:
    static fs::path dir() { return plumb::test::process_dir("plumb_test_pt_ckpt_"); }

    static void SetUpTestSuite() {
        fs::create_directories(dir());
        const auto script = dir() / "writer.py";
        std::ofstream(script) << kWriter;
        const std::string cmd = "/usr/bin/python3 " + script.string() + " " +
                                (kRef / "tiny_bert_cat1").string() + " " + dir().string() + " > " +
                                (dir() / "writer.log").string() + " 2>&1";
        const int rc = std::system(cmd.c_str());
        s_ok = WIFEXITED(rc) && WEXITSTATUS(rc) == 0;
    }
    void SetUp() override {
        ASSERT_TRUE(s_ok) << "python3-torch could not write the fixtures: "
                          << plumb::read_file(dir() / "writer.log");
    }
    static std::string error_of(const std::function<void()>& f) {
        try {
            f();
        } catch (const plumb::CheckpointError& e) {
            return e.what();
        }
        return "<no CheckpointError>";
    }
    static inline bool s_ok = false;
};

std::vector<Encoding> reference_inputs() {
    const auto expected = nlohmann::json::parse(plumb::read_file(kRef / "expected.json"));
    std::vector<Encoding> out;
    for (const auto& c : expected.at("models").at("tiny_bert_cat1")) {
        Encoding e;
        e.input_ids = c.at("input_ids").get<std::vector<std::int64_t>>();
        e.token_type_ids = c.at("token_type_ids").get<std::vector<std::int64_t>>();
        e.attention_mask.assign(e.input_ids.size(), 1);
        out.push_back(std::move(e));
    }
    return out;
}

std::vector<float> reference_logits() {
    const auto expected = nlohmann::json::parse(plumb::read_file(kRef / "expected.json"));
    std::vector<float> out;
    for (const auto& c : expected.at("models").at("tiny_bert_cat1")) {
        for (const auto& v : c.at("logits")) out.push_back(v.get<float>());
    }
    return out;
}

void expect_same_tensors(const SafetensorsFile& a, const SafetensorsFile& b) {
    for (const auto& t : a.tensors()) {
        const TensorView* u = b.find(t.name);
        ASSERT_NE(u, nullptr) << t.name;
        EXPECT_EQ(u->dtype, t.dtype) << t.name;
        EXPECT_EQ(u->shape, t.shape) << t.name;
        ASSERT_EQ(u->bytes.size(), t.bytes.size()) << t.name;
        EXPECT_EQ(std::memcmp(u->bytes.data(), t.bytes.data(), t.bytes.size()), 0) << t.name;
    }
}

}  // namespace

TEST_F(PytorchCheckpoint, Float32EqualsSafetensorsAndReference) {
    const auto bin = load_weights_file(dir() / "bin32/pytorch_model.bin");
    const SafetensorsFile st(kRef / "tiny_bert_cat1/model.safetensors");
    expect_same_tensors(st, bin);  // views, offsets and parameters come out as plain tensors
    // tied weights share a storage; the expanded int64 buffer has stride 0
    EXPECT_EQ(to_float32(bin.tensor("cls.predictions.decoder.weight")),
              to_float32(bin.tensor("bert.embeddings.word_embeddings.weight")));
    const auto& ids = bin.tensor("bert.embeddings.position_ids");
    EXPECT_EQ(ids.dtype, DType::I64);
    EXPECT_EQ(ids.shape, (std::vector<std::int64_t>{1, 32}));
    for (std::int64_t i = 0; i < 32; ++i) {
        std::int64_t v;
        std::memcpy(&v, ids.bytes.data() + 8 * i, 8);
        EXPECT_EQ(v, i);
    }

    BertCheckpointInfo info;
    const BertModel from_bin = load_bert_checkpoint(dir() / "bin32", {}, &info);
    const BertModel from_st = load_bert_checkpoint(kRef / "tiny_bert_cat1");
    EXPECT_EQ(info.prefix, "bert.");
    const auto inputs = reference_inputs();
    EXPECT_EQ(from_bin.logits(inputs), from_st.logits(inputs));
    EXPECT_EQ(from_bin.last_hidden_states(inputs), from_st.last_hidden_states(inputs));
    const auto expected = reference_logits();
    const auto logits = from_bin.logits(inputs);
    ASSERT_EQ(logits.size(), expected.size());
    for (std::size_t i = 0; i < logits.size(); ++i) EXPECT_NEAR(logits[i], expected[i], 1e-5);
}

TEST_F(PytorchCheckpoint, HalfAndBfloat16) {
    const auto bin16 = load_weights_file(dir() / "bin16/pytorch_model.bin");
    const SafetensorsFile st16(dir() / "st16/model.safetensors");
    expect_same_tensors(st16, bin16);
    for (const auto& t : bin16.tensors()) EXPECT_EQ(t.dtype, DType::F16) << t.name;
    const auto inputs = reference_inputs();
    EXPECT_EQ(load_bert_checkpoint(dir() / "bin16").logits(inputs),
              load_bert_checkpoint(dir() / "st16").logits(inputs));

    const auto bf = load_weights_file(dir() / "bf16/pytorch_model.bin");
    const SafetensorsFile as_f32(dir() / "bf16_as_f32/model.safetensors");
    for (const auto& t : as_f32.tensors()) {
        const TensorView* u = bf.find(t.name);
        ASSERT_NE(u, nullptr);
        EXPECT_EQ(u->dtype, DType::BF16);
        EXPECT_EQ(to_float32(*u), to_float32(t)) << t.name;
    }
}

TEST_F(PytorchCheckpoint, WrappedStateDict) {
    const auto w = load_weights_file(dir() / "wrapped/pytorch_model.bin");
    const SafetensorsFile st(kRef / "tiny_bert_cat1/model.safetensors");
    EXPECT_EQ(w.size(), st.size());
    expect_same_tensors(st, w);
}

TEST_F(PytorchCheckpoint, ForbiddenGlobalsAreRejectedWithoutRunning) {
    for (const char* name : {"evil2", "evil4"}) {
        const auto path = dir() / name / "pytorch_model.bin";
        const std::string msg = error_of([&] { read_pytorch_state_dict(path); });
        EXPECT_NE(msg.find(path.string()), std::string::npos) << msg;
        EXPECT_NE(msg.find(std::string(name) == "evil2" ? "'posix.system'" : "'builtins.eval'"),
                  std::string::npos)
            << msg;
        EXPECT_NE(msg.find("does not run code"), std::string::npos) << msg;
        EXPECT_THROW(load_bert_checkpoint(dir() / name), plumb::CheckpointError);
    }
    EXPECT_FALSE(fs::exists(dir() / "PWNED"));
}

TEST_F(PytorchCheckpoint, LegacyTorchScriptAndMisnamedFilesNameTheirFormat) {
    const auto legacy = dir() / "legacy/pytorch_model.bin";
    EXPECT_EQ(sniff_checkpoint_format(legacy), CheckpointFormat::PytorchLegacy);
    std::string msg = error_of([&] { load_bert_checkpoint(dir() / "legacy"); });
    EXPECT_NE(msg.find(legacy.string() + ": this is a legacy PyTorch checkpoint"),
              std::string::npos)
        << msg;

    const auto ts = dir() / "ts/pytorch_model.bin";
    EXPECT_EQ(sniff_checkpoint_format(ts), CheckpointFormat::TorchScript);
    msg = error_of([&] { load_bert_checkpoint(dir() / "ts"); });
    EXPECT_NE(msg.find("this is a TorchScript archive (torch.jit.save)"), std::string::npos) << msg;

    // A PyTorch file named model.safetensors, and a safetensors file named pytorch_model.bin.
    fs::create_directories(dir() / "misnamed");
    fs::copy_file(dir() / "bin32/pytorch_model.bin", dir() / "misnamed/model.safetensors",
                  fs::copy_options::overwrite_existing);
    msg = error_of([&] { SafetensorsFile f(dir() / "misnamed/model.safetensors"); });
    EXPECT_EQ(msg, (dir() / "misnamed/model.safetensors").string() +
                       ": this is a PyTorch zip checkpoint (torch.save), not safetensors");
    fs::copy_file(kRef / "tiny_bert_cat1/model.safetensors", dir() / "misnamed/pytorch_model.bin",
                  fs::copy_options::overwrite_existing);
    msg = error_of([&] { read_pytorch_state_dict(dir() / "misnamed/pytorch_model.bin"); });
    EXPECT_NE(msg.find("this is a safetensors file, not a PyTorch zip checkpoint"),
              std::string::npos)
        << msg;
    EXPECT_EQ(sniff_checkpoint_format(dir() / "bin32/pytorch_model.bin"),
              CheckpointFormat::PytorchZip);
}

TEST_F(PytorchCheckpoint, TruncatedArchives) {
    const std::string raw = plumb::read_file(dir() / "bin32/pytorch_model.bin");
    fs::create_directories(dir() / "trunc");
    for (std::size_t keep : {raw.size() / 2, raw.size() - 10, std::size_t{30}}) {
        const auto p = dir() / "trunc/pytorch_model.bin";
        std::ofstream(p, std::ios::binary | std::ios::trunc) << raw.substr(0, keep);
        const std::string msg = error_of([&] { read_pytorch_state_dict(p); });
        EXPECT_NE(msg.find(p.string() + ": this is a zip archive"), std::string::npos) << msg;
        EXPECT_NE(msg.find("truncated"), std::string::npos) << msg;
    }
}

TEST(CheckpointFormat, MagicBytes) {
    const auto d = plumb::test::process_dir("plumb_test_ckpt_magic_");
    fs::create_directories(d);
    auto write = [&](const std::string& name, const std::string& bytes) {
        std::ofstream(d / name, std::ios::binary) << bytes;
        return d / name;
    };
    EXPECT_EQ(sniff_checkpoint_format(write("a.gguf", std::string("GGUF\x03\0\0\0", 8))),
              CheckpointFormat::Gguf);
    EXPECT_EQ(sniff_checkpoint_format(write("a.h5", std::string("\x89HDF\r\n\x1a\n\0\0", 10))),
              CheckpointFormat::Hdf5);
    EXPECT_EQ(sniff_checkpoint_format(write("a.npy", std::string("\x93NUMPY\x01\0", 8))),
              CheckpointFormat::Numpy);
    EXPECT_EQ(sniff_checkpoint_format(write("empty", "")), CheckpointFormat::Empty);
    EXPECT_EQ(sniff_checkpoint_format(
                  write("lfs", "version https://git-lfs.github.com/spec/v1\noid sha256:ab\n")),
              CheckpointFormat::GitLfsPointer);
    const auto h5 = write("model.safetensors", std::string("\x89HDF\r\n\x1a\n\0\0", 10));
    try {
        SafetensorsFile f(h5);
        ADD_FAILURE() << "no error";
    } catch (const plumb::CheckpointError& e) {
        EXPECT_EQ(std::string(e.what()),
                  h5.string() + ": this is an HDF5 file (Keras / TensorFlow .h5), not safetensors");
    }
}

namespace {
/// `plumb <args>` with its output in `out` (tests/support/cli.hpp).
constexpr auto& run_cli = plumb::test::run_plumb_to;
}  // namespace

TEST_F(PytorchCheckpoint, CheckpointInfoCli) {
    const auto out = dir() / "info.out";
    ASSERT_EQ(run_cli("checkpoint-info " + (dir() / "bin16").string(), out), 0)
        << plumb::read_file(out);
    const std::string text = plumb::read_file(out);
    EXPECT_NE(text.find("# format: a PyTorch zip checkpoint (torch.save)\n"), std::string::npos)
        << text;
    EXPECT_NE(text.find("# 41 tensors, "), std::string::npos) << text;
    EXPECT_NE(text.find("\nbert.embeddings.word_embeddings.weight\tF16\t[30, 8]\n"),
              std::string::npos)
        << text;
    // The legacy file is named as such, with exit status 1.
    EXPECT_EQ(run_cli("checkpoint-info " + (dir() / "legacy/pytorch_model.bin").string(), out), 1);
    EXPECT_NE(plumb::read_file(out).find("this is a legacy PyTorch checkpoint"), std::string::npos)
        << plumb::read_file(out);
}

TEST_F(PytorchCheckpoint, CorruptedPickleIsAnErrorNeverACrash) {
    // Every byte of data.pkl (stored uncompressed; the zip reader does not check its CRC) is
    // replaced in turn: the result loads or is a CheckpointError, never another failure.
    const std::string raw = plumb::read_file(dir() / "bin32/pytorch_model.bin");
    const std::string member = "pytorch_model/data.pkl";
    const std::size_t header = raw.find(member) - 30;
    ASSERT_EQ(raw.substr(header, 4), std::string("PK\x03\x04", 4));
    auto le = [&](std::size_t at, int bytes) {
        std::size_t v = 0;
        for (int k = bytes - 1; k >= 0; --k) v = (v << 8) | static_cast<unsigned char>(raw[at + k]);
        return v;
    };
    const std::size_t begin = header + 30 + member.size() + le(header + 28, 2);
    const std::size_t central = raw.rfind(member) - 46;  // sizes: in the central directory
    ASSERT_EQ(raw.substr(central, 4), std::string("PK\x01\x02", 4));
    const std::size_t size = le(central + 24, 4);
    ASSERT_GT(size, 1000u);
    const auto path = dir() / "corrupt.bin";
    std::size_t loaded = 0, rejected = 0;
    for (std::size_t i = begin; i < begin + size; ++i) {
        for (const unsigned char mask : {0xFFu, 0x01u}) {
            std::string bytes = raw;
            bytes[i] = static_cast<char>(static_cast<unsigned char>(bytes[i]) ^ mask);
            std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
            try {
                read_pytorch_state_dict(path);
                ++loaded;
            } catch (const plumb::CheckpointError&) {
                ++rejected;
            } catch (const std::exception& e) {
                ADD_FAILURE() << "byte " << i - begin << " ^ " << int(mask) << ": " << e.what();
            }
        }
    }
    EXPECT_GT(rejected, size);  // most single-byte changes break the pickle
    std::cout << "corrupted pickles: " << loaded << " loaded, " << rejected << " rejected\n";
}

TEST_F(PytorchCheckpoint, TorchScriptStageNamesAStateDict) {
    TorchScriptStageOptions o;
    o.model = dir() / "bin32/pytorch_model.bin";
    o.tokenizer = dir() / "bin32";
    const std::string msg = error_of([&] { TorchScriptStage stage(o); });
    EXPECT_EQ(msg, o.model.string() +
                       ": this is a PyTorch zip checkpoint (torch.save), not a TorchScript "
                       "archive (torch.jit.save)");
    o.model = dir() / "ts/pytorch_model.bin";  // the real TorchScript archive loads
    EXPECT_EQ(error_of([&] { TorchScriptStage stage(o); }), "<no CheckpointError>");
}
