#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include "plugin/error.hpp"
#include "rerank/safetensors.hpp"
#include "tests/test_tmp.hpp"

namespace fs = std::filesystem;
using namespace plumb::rerank;

namespace {

fs::path temp_dir() {
    auto dir = plumb::test::process_dir("plumb_test_st_");
    fs::create_directories(dir);
    return dir;
}

std::string le64(std::uint64_t n) {
    std::string s(8, '\0');
    for (int i = 0; i < 8; ++i) s[i] = static_cast<char>((n >> (8 * i)) & 0xFF);
    return s;
}

std::string f32_bytes(std::initializer_list<float> v) {
    std::string s;
    for (float f : v) {
        char b[4];
        std::memcpy(b, &f, 4);
        s.append(b, 4);
    }
    return s;
}

std::string u16_bytes(std::initializer_list<std::uint16_t> v) {
    std::string s;
    for (auto h : v) {
        s.push_back(static_cast<char>(h & 0xFF));
        s.push_back(static_cast<char>(h >> 8));
    }
    return s;
}

/// A safetensors file written by hand: 8-byte length, header, data.
fs::path raw_file(const std::string& name, const std::string& header, const std::string& data) {
    auto p = temp_dir() / name;
    std::ofstream(p, std::ios::binary) << le64(header.size()) << header << data;
    return p;
}

std::string slurp(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

template <class F>
std::string error_of(F&& f) {
    try {
        f();
    } catch (const plumb::CheckpointError& e) {
        return e.what();
    }
    return "<no CheckpointError>";
}

}  // namespace

TEST(HalfFloat, KnownBitPatterns) {
    EXPECT_EQ(half_to_float(0x3C00), 1.0f);
    EXPECT_EQ(half_to_float(0xC000), -2.0f);
    EXPECT_EQ(half_to_float(0x7BFF), 65504.0f);             // largest finite half
    EXPECT_EQ(half_to_float(0x0001), std::ldexp(1.0f, -24));  // smallest subnormal
    EXPECT_EQ(half_to_float(0x0200), std::ldexp(1.0f, -15));  // a subnormal
    EXPECT_EQ(half_to_float(0x0400), std::ldexp(1.0f, -14));  // smallest normal
    EXPECT_TRUE(std::isinf(half_to_float(0x7C00)));
    EXPECT_TRUE(std::isnan(half_to_float(0x7E00)));
    EXPECT_TRUE(std::signbit(half_to_float(0x8000)));
    // 0x3555 = 1.0101010101b * 2^-2 = 1365/4096
    EXPECT_EQ(half_to_float(0x3555), 1365.0f / 4096.0f);

    EXPECT_EQ(float_to_half(1.0f), 0x3C00);
    EXPECT_EQ(float_to_half(-2.0f), 0xC000);
    EXPECT_EQ(float_to_half(1.0f / 3.0f), 0x3555);
    EXPECT_EQ(float_to_half(65504.0f), 0x7BFF);
    EXPECT_EQ(float_to_half(65519.0f), 0x7BFF);  // below the halfway point to 65536
    EXPECT_EQ(float_to_half(65520.0f), 0x7C00);  // halfway: ties to even -> infinity
    EXPECT_EQ(float_to_half(std::ldexp(1.0f, -24)), 0x0001);
    EXPECT_EQ(float_to_half(std::ldexp(1.0f, -26)), 0x0000);  // rounds to zero
    EXPECT_EQ(float_to_half(std::ldexp(3.0f, -26)), 0x0001);  // 0.75 ulp rounds up
    // 1 + 2^-11 is halfway between 1 and 1 + 2^-10: ties to even keeps 1.0
    EXPECT_EQ(float_to_half(1.0f + std::ldexp(1.0f, -11)), 0x3C00);
    EXPECT_EQ(float_to_half(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3C02);
    EXPECT_EQ(float_to_half(std::numeric_limits<float>::infinity()), 0x7C00);
    EXPECT_EQ(float_to_half(std::numeric_limits<float>::quiet_NaN()) & 0x7C00, 0x7C00);
    EXPECT_NE(float_to_half(std::numeric_limits<float>::quiet_NaN()) & 0x03FF, 0);
}

TEST(BFloat16, KnownBitPatterns) {
    EXPECT_EQ(bfloat16_to_float(0x3F80), 1.0f);
    EXPECT_EQ(bfloat16_to_float(0x4049), 3.140625f);
    EXPECT_EQ(bfloat16_to_float(0xC000), -2.0f);
    EXPECT_EQ(float_to_bfloat16(3.14159265f), 0x4049);
    EXPECT_EQ(float_to_bfloat16(1.0f + std::ldexp(1.0f, -8)), 0x3F80);      // tie -> even
    EXPECT_EQ(float_to_bfloat16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3F82);  // tie -> even
    EXPECT_TRUE(std::isnan(bfloat16_to_float(float_to_bfloat16(std::nanf("")))));
}

TEST(Safetensors, DuplicateTensorNamesAreAnError) {
    // Two entries named "a" (issue 15: the second silently replaced the first).
    const std::string header = R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                               R"("a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})";
    auto p = raw_file("dup.safetensors", header, f32_bytes({1.0f, 2.0f}));
    try {
        SafetensorsFile f(p);
        ADD_FAILURE() << "duplicate tensor names accepted";
    } catch (const plumb::CheckpointError& e) {
        const std::string m = e.what();
        EXPECT_NE(m.find("dup.safetensors"), std::string::npos) << m;
        EXPECT_NE(m.find("duplicate key \"a\""), std::string::npos) << m;
    }
}

TEST(Safetensors, ReadsHandWrittenFile) {
    // a: F32 [2,2] at [0,16); h: F16 [3] at [16,22); b: BF16 [1] at [22,24); i: I64 [2] at [24,40)
    const std::string header =
        R"({"__metadata__":{"format":"pt"},)"
        R"("a":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]},)"
        R"("h":{"dtype":"F16","shape":[3],"data_offsets":[16,22]},)"
        R"("b":{"dtype":"BF16","shape":[1],"data_offsets":[22,24]},)"
        R"("i":{"dtype":"I64","shape":[2],"data_offsets":[24,40]}})";
    std::string data = f32_bytes({1.5f, -2.0f, 0.25f, 8.0f}) + u16_bytes({0x3C00, 0xC000, 0x3800}) +
                       u16_bytes({0x4049}) + le64(7) + le64(static_cast<std::uint64_t>(-3));
    auto p = raw_file("hand.safetensors", header, data);
    SafetensorsFile f(p);
    EXPECT_EQ(f.size(), 4u);
    EXPECT_EQ(f.names(), (std::vector<std::string>{"a", "b", "h", "i"}));
    EXPECT_EQ(f.metadata().at("format"), "pt");
    const std::int64_t shape_a[] = {2, 2};
    EXPECT_EQ(f.float32("a", shape_a), (std::vector<float>{1.5f, -2.0f, 0.25f, 8.0f}));
    EXPECT_EQ(f.float32("h"), (std::vector<float>{1.0f, -2.0f, 0.5f}));
    EXPECT_EQ(f.float32("b"), (std::vector<float>{3.140625f}));
    const TensorView& i = f.tensor("i");
    EXPECT_EQ(i.dtype, DType::I64);
    std::int64_t v[2];
    std::memcpy(v, i.bytes.data(), 16);
    EXPECT_EQ(v[0], 7);
    EXPECT_EQ(v[1], -3);
    EXPECT_FALSE(f.contains("zzz"));
    EXPECT_EQ(f.find("zzz"), nullptr);
    // integer tensors do not convert to float
    EXPECT_NE(error_of([&] { f.float32("i"); }).find("'i'"), std::string::npos);
    // wrong expected shape names file, tensor and both shapes
    const std::int64_t wrong[] = {4};
    auto msg = error_of([&] { f.float32("a", wrong); });
    EXPECT_NE(msg.find(p.string()), std::string::npos);
    EXPECT_NE(msg.find("'a'"), std::string::npos);
    EXPECT_NE(msg.find("[2, 2]"), std::string::npos);
    EXPECT_NE(msg.find("[4]"), std::string::npos);
    msg = error_of([&] { f.tensor("missing.weight"); });
    EXPECT_NE(msg.find("missing.weight"), std::string::npos);
}

TEST(Safetensors, ScalarsAndEmptyTensors) {
    const std::string header =
        R"({"s":{"dtype":"F32","shape":[],"data_offsets":[0,4]},)"
        R"("e":{"dtype":"F32","shape":[0,3],"data_offsets":[4,4]}})";
    auto p = raw_file("scalar.safetensors", header, f32_bytes({42.0f}));
    SafetensorsFile f(p);
    EXPECT_EQ(f.float32("s"), (std::vector<float>{42.0f}));
    EXPECT_TRUE(f.float32("e").empty());
}

TEST(Safetensors, WriterLayoutIsHuggingFaces) {
    auto p = temp_dir() / "layout.safetensors";
    std::map<std::string, TensorData> tensors;
    const float a[] = {1.0f, 2.0f};
    const float h[] = {1.0f};
    const std::int64_t i[] = {5};
    tensors["z_f32"] = TensorData::from_float32({2}, a);
    tensors["a_f16"] = TensorData::from_float32({1}, h, DType::F16);
    tensors["m_i64"] = TensorData::from_int64({1}, i);
    save_safetensors(p, tensors, {{"k", "v"}});
    const std::string raw = slurp(p);
    std::uint64_t n = 0;
    for (int k = 7; k >= 0; --k) n = (n << 8) | static_cast<unsigned char>(raw[k]);
    EXPECT_EQ(n % 8, 0u);
    const std::string header = raw.substr(8, n);
    // I64 (8 bytes) first, then F32, then F16: offsets [0,8), [8,16), [16,18)
    EXPECT_NE(header.find(R"("m_i64":{"dtype":"I64","shape":[1],"data_offsets":[0,8]})"),
              std::string::npos);
    EXPECT_NE(header.find(R"("z_f32":{"dtype":"F32","shape":[2],"data_offsets":[8,16]})"),
              std::string::npos);
    EXPECT_NE(header.find(R"("a_f16":{"dtype":"F16","shape":[1],"data_offsets":[16,18]})"),
              std::string::npos);
    EXPECT_NE(header.find(R"("__metadata__":{"k":"v"})"), std::string::npos);
    const auto last = header.find_last_not_of(' ');  // padded with spaces after the JSON
    EXPECT_EQ(header[last], '}');
    EXPECT_LT(header.size() - last - 1, 8u);
    EXPECT_EQ(raw.size(), 8 + n + 18);
    EXPECT_EQ(raw.substr(8 + n, 8), le64(5));
    EXPECT_EQ(raw.substr(8 + n + 8, 8), f32_bytes({1.0f, 2.0f}));
    EXPECT_EQ(raw.substr(8 + n + 16, 2), u16_bytes({0x3C00}));
    // no temporary files left behind
    std::size_t files = 0;
    for (const auto& e : fs::directory_iterator(temp_dir())) {
        if (e.path().filename().string().rfind("layout.safetensors", 0) == 0) ++files;
    }
    EXPECT_EQ(files, 1u);
}

TEST(Safetensors, RoundTripAllFloatDtypes) {
    auto p = temp_dir() / "rt.safetensors";
    std::vector<float> w(3 * 5);
    for (std::size_t k = 0; k < w.size(); ++k) w[k] = 0.125f * static_cast<float>(k) - 0.75f;
    std::map<std::string, TensorData> tensors;
    tensors["bert.encoder.layer.0.weight"] = TensorData::from_float32({3, 5}, w);
    tensors["half"] = TensorData::from_float32({3, 5}, w, DType::F16);
    tensors["bf"] = TensorData::from_float32({15}, w, DType::BF16);
    save_safetensors(p, tensors, {{"format", "pt"}, {"plumb", "1"}});
    SafetensorsFile f(p);
    EXPECT_EQ(f.size(), 3u);
    EXPECT_EQ(f.metadata().size(), 2u);
    const std::int64_t s35[] = {3, 5};
    // multiples of 1/8 in [-0.75, 1.0] are exact in all three formats
    EXPECT_EQ(f.float32("bert.encoder.layer.0.weight", s35), w);
    EXPECT_EQ(f.float32("half", s35), w);
    EXPECT_EQ(f.float32("bf"), w);
    EXPECT_EQ(f.tensor("half").dtype, DType::F16);
    EXPECT_EQ(f.tensor("bf").dtype, DType::BF16);

    // saving views of a loaded file reproduces it byte for byte
    auto q = temp_dir() / "rt2.safetensors";
    save_safetensors(q, std::span<const TensorView>(f.tensors()), f.metadata());
    EXPECT_EQ(slurp(p), slurp(q));
}

TEST(Safetensors, WriterRejectsBadInput) {
    auto p = temp_dir() / "bad_write.safetensors";
    const float v[] = {1, 2, 3};
    EXPECT_THROW(TensorData::from_float32({2}, v), plumb::InvalidArgument);
    EXPECT_THROW(TensorData::from_float32({3}, v, DType::I64), plumb::InvalidArgument);
    TensorData t = TensorData::from_float32({3}, v);
    TensorView views[] = {t.view("x"), t.view("x")};
    EXPECT_THROW(save_safetensors(p, views), plumb::InvalidArgument);
    TensorView meta[] = {t.view("__metadata__")};
    EXPECT_THROW(save_safetensors(p, meta), plumb::InvalidArgument);
    TensorView wrong = t.view("w");
    wrong.shape = {4};
    EXPECT_THROW(save_safetensors(p, std::span<const TensorView>(&wrong, 1)), plumb::InvalidArgument);
    EXPECT_FALSE(fs::exists(p));
}

TEST(Safetensors, TruncatedFileIsCheckpointErrorNamingFileAndTensor) {
    auto good = temp_dir() / "trunc_src.safetensors";
    const float v[] = {1, 2, 3, 4};
    std::map<std::string, TensorData> tensors;
    tensors["emb.weight"] = TensorData::from_float32({2, 2}, v);
    save_safetensors(good, tensors);
    std::string raw = slurp(good);
    auto cut = temp_dir() / "trunc.safetensors";
    std::ofstream(cut, std::ios::binary) << raw.substr(0, raw.size() - 3);
    auto msg = error_of([&] { SafetensorsFile f(cut); });
    EXPECT_NE(msg.find(cut.string()), std::string::npos) << msg;
    EXPECT_NE(msg.find("emb.weight"), std::string::npos) << msg;

    // cut inside the header
    std::ofstream(cut, std::ios::binary) << raw.substr(0, 20);
    msg = error_of([&] { SafetensorsFile f(cut); });
    EXPECT_NE(msg.find("header length"), std::string::npos) << msg;
    // shorter than the length prefix, and empty
    std::ofstream(cut, std::ios::binary) << raw.substr(0, 5);
    EXPECT_THROW(SafetensorsFile f(cut), plumb::CheckpointError);
    std::ofstream(cut, std::ios::binary) << "";
    EXPECT_THROW(SafetensorsFile f(cut), plumb::CheckpointError);
}

TEST(Safetensors, InvalidHeadersAreCheckpointErrors) {
    const std::string d16 = f32_bytes({1, 2, 3, 4});
    struct Case {
        const char* name;
        std::string header;
        const char* expect;  // substring of the message
    };
    const Case cases[] = {
        {"json", R"({"a":{"dtype":"F32",)", "not valid JSON"},
        {"array", R"([1,2])", "not a JSON object"},
        {"dtype", R"({"a":{"dtype":"F64","shape":[2],"data_offsets":[0,16]}})", "unsupported dtype 'F64'"},
        {"noshape", R"({"a":{"dtype":"F32","data_offsets":[0,16]}})", "'a'"},
        {"negshape", R"({"a":{"dtype":"F32","shape":[-4],"data_offsets":[0,16]}})", "non-negative"},
        {"size", R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,16]}})", "needs 12 bytes"},
        {"order", R"({"a":{"dtype":"F32","shape":[0],"data_offsets":[8,4]}})", "begin > end"},
        {"beyond", R"({"a":{"dtype":"F32","shape":[5],"data_offsets":[0,20]}})", "beyond the data buffer"},
        {"overlap",
         R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,12]},)"
         R"("b":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}})",
         "overlap"},
        {"meta", R"({"__metadata__":{"x":1}})", "__metadata__"},
        {"huge", R"({"a":{"dtype":"F32","shape":[4611686018427387904,8],"data_offsets":[0,16]}})",
         "'a'"},
    };
    for (const auto& c : cases) {
        auto p = raw_file(std::string("bad_") + c.name + ".safetensors", c.header, d16);
        auto msg = error_of([&] { SafetensorsFile f(p); });
        EXPECT_NE(msg.find(p.string()), std::string::npos) << c.name << ": " << msg;
        EXPECT_NE(msg.find(c.expect), std::string::npos) << c.name << ": " << msg;
    }
    // header length beyond the file
    auto p = temp_dir() / "bad_len.safetensors";
    std::ofstream(p, std::ios::binary) << le64(1000) << "{}";
    EXPECT_NE(error_of([&] { SafetensorsFile f(p); }).find("exceeds the file size"),
              std::string::npos);
}

TEST(Safetensors, MissingFileIsIoError) {
    EXPECT_THROW(SafetensorsFile f("/nonexistent/plumb/model.safetensors"), plumb::IoError);
}
