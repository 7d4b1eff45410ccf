#include "rerank/torchscript_stage.hpp"

#include <torch/script.h>
#include <torch/torch.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <numeric>

#include "plugin/error.hpp"
#include "plugin/json.hpp"
#include "plugin/text_io.hpp"
#include "rerank/checkpoint_format.hpp"
#include "rerank/torch_threads.hpp"

namespace plumb::rerank {

namespace fs = std::filesystem;

struct TorchScriptStage::Impl {
    TorchScriptStageOptions opt;
    std::unique_ptr<WordPieceTokenizer> tokenizer;
    // forward() is a non-const member of torch::jit::Module; running it does not mutate the
    // module (eval mode, inference only).
    mutable torch::jit::Module module;

    [[noreturn]] void fail(const std::string& what) const {
        throw CheckpointError(opt.model.string() + ": " + what);
    }

    /// Scores one padded batch; returns B floats.
    std::vector<float> run(const BatchEncoding& b) const {
        const auto B = static_cast<std::int64_t>(b.batch);
        const auto L = static_cast<std::int64_t>(b.length);
        auto make = [&](const std::vector<std::int64_t>& v) {
            return torch::from_blob(const_cast<std::int64_t*>(v.data()), {B, L}, torch::kInt64)
                .clone();
        };
        c10::InferenceMode guard;
        std::vector<torch::jit::IValue> inputs;
        inputs.emplace_back(make(b.input_ids));
        inputs.emplace_back(make(b.attention_mask));
        if (opt.pass_token_type_ids) inputs.emplace_back(make(b.token_type_ids));
        torch::jit::IValue out;
        try {
            out = module.forward(std::move(inputs));
        } catch (const c10::Error& e) {
            fail(std::string("forward failed: ") + e.what_without_backtrace());
        } catch (const std::exception& e) {
            fail(std::string("forward failed: ") + e.what());
        }
        if (out.isTuple()) {
            const auto& elems = out.toTupleRef().elements();
            if (elems.empty()) fail("forward returned an empty tuple");
            out = elems[0];
        } else if (out.isList()) {
            auto list = out.toList();
            if (list.empty()) fail("forward returned an empty list");
            out = list.get(0);
        } else if (out.isGenericDict()) {
            auto dict = out.toGenericDict();
            auto it = dict.find(torch::jit::IValue(std::string("logits")));
            if (it == dict.end()) fail("forward returned a dict without 'logits'");
            out = it->value();
        }
        if (!out.isTensor()) fail("forward returned " + out.tagKind() + ", expected a tensor");
        torch::Tensor t = out.toTensor();
        if (!t.is_floating_point()) fail("forward returned a non-floating tensor");
        auto shape_str = [&] {
            std::string s = "[";
            for (std::int64_t d = 0; d < t.dim(); ++d) {
                if (d) s += ", ";
                s += std::to_string(t.size(d));
            }
            return s + "]";
        };
        if (t.dim() == 2 && t.size(0) == B) {
            if (t.size(1) == 1) {
                t = t.select(1, 0);
            } else if (t.size(1) >= 2) {
                if (opt.positive_index >= t.size(1)) {
                    fail("output has " + std::to_string(t.size(1)) +
                         " columns, positive_index is " + std::to_string(opt.positive_index));
                }
                t = t.select(1, opt.positive_index);
            }
        }
        if (t.dim() != 1 || t.size(0) != B) {
            fail("forward returned shape " + shape_str() + " for a batch of " + std::to_string(B) +
                 " (expected [B], [B, 1] or [B, C])");
        }
        t = t.to(torch::kCPU, torch::kFloat32).contiguous();
        const float* p = t.data_ptr<float>();
        return std::vector<float>(p, p + B);
    }

    std::vector<float> score(std::string_view query,
                             std::span<const std::string_view> passages) const {
        const std::size_t n = passages.size();
        std::vector<float> scores(n, 0.0f);
        if (n == 0) return scores;
        const std::size_t cap = opt.max_length - 3 + 1;  // see WordPieceTokenizer::encode_pair
        const auto q = tokenizer->encode_ids(query, cap);
        std::vector<Encoding> encs;
        encs.reserve(n);
        for (auto p : passages) {
            encs.push_back(tokenizer->encode_pair_ids(q, tokenizer->encode_ids(p, cap),
                                                      opt.max_length, opt.truncation));
        }
        std::vector<std::size_t> order(n);
        std::iota(order.begin(), order.end(), 0);
        if (opt.group_by_length) {
            std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
                return encs[a].size() < encs[b].size();
            });
        }
        std::vector<Encoding> batch;
        for (std::size_t start = 0; start < n; start += opt.batch_size) {
            const std::size_t end = std::min(n, start + opt.batch_size);
            batch.clear();
            for (std::size_t k = start; k < end; ++k) batch.push_back(std::move(encs[order[k]]));
            const auto s = run(pad_batch(batch, tokenizer->pad_id()));
            for (std::size_t k = start; k < end; ++k) scores[order[k]] = s[k - start];
        }
        return scores;
    }
};

TorchScriptStage::TorchScriptStage(TorchScriptStageOptions options)
    : m_impl(std::make_unique<Impl>()) {
    auto& opt = m_impl->opt;
    opt = std::move(options);
    if (opt.batch_size == 0) throw InvalidArgument("torchscript stage: batch_size must be > 0");
    if (opt.max_length < 3) throw InvalidArgument("torchscript stage: max_length must be >= 3");
    if (opt.positive_index < 0) {
        throw InvalidArgument("torchscript stage: positive_index must be >= 0");
    }
    if (opt.threads < 0) throw InvalidArgument("torchscript stage: threads must be >= 0");
    std::error_code ec;
    if (!fs::is_regular_file(opt.model, ec)) m_impl->fail("model file not found");
    // A state dict (torch.save), safetensors, a legacy pickle, ...: name it instead of LibTorch's
    // "PytorchStreamReader failed locating file constants.pkl".
    if (const auto found = sniff_checkpoint_format(opt.model);
        found != CheckpointFormat::TorchScript && found != CheckpointFormat::Unknown) {
        throw CheckpointError(
            wrong_format_message(opt.model, found, "a TorchScript archive (torch.jit.save)"));
    }
    m_impl->tokenizer = std::make_unique<WordPieceTokenizer>(
        WordPieceTokenizer::from_folder(opt.tokenizer, opt.tokenizer_options));
    try {
        m_impl->module = torch::jit::load(opt.model.string(), torch::kCPU);
    } catch (const c10::Error& e) {
        m_impl->fail(std::string("not a loadable TorchScript model: ") +
                     e.what_without_backtrace());
    } catch (const std::exception& e) {
        m_impl->fail(std::string("not a loadable TorchScript model: ") + e.what());
    }
    if (!m_impl->module.find_method("forward")) m_impl->fail("the module has no forward()");
    m_impl->module.eval();
}

TorchScriptStage::~TorchScriptStage() = default;

std::string TorchScriptStage::name() const { return m_impl->opt.name; }
std::size_t TorchScriptStage::depth() const { return m_impl->opt.depth; }

std::vector<float> TorchScriptStage::score(const Query& query,
                                           std::span<const Candidate> candidates) const {
    const std::size_t n = std::min(candidates.size(), m_impl->opt.depth);
    std::vector<std::string_view> passages;
    passages.reserve(n);
    for (std::size_t i = 0; i < n; ++i) passages.push_back(candidates[i].text);
    TorchThreadsScope threads(m_impl->opt.threads);
    return m_impl->score(query.text, passages);
}

std::vector<float> TorchScriptStage::score_pairs(std::string_view query,
                                                 std::span<const std::string_view> passages) const {
    TorchThreadsScope threads(m_impl->opt.threads);
    return m_impl->score(query, passages);
}

const TorchScriptStageOptions& TorchScriptStage::options() const noexcept { return m_impl->opt; }
const WordPieceTokenizer& TorchScriptStage::tokenizer() const noexcept {
    return *m_impl->tokenizer;
}

std::unique_ptr<TorchScriptStage> make_torchscript_stage(const fs::path& path,
                                                         TorchScriptStageOptions base) {
    std::error_code ec;
    fs::path dir = path;
    if (fs::is_directory(path, ec)) {
        if (fs::is_regular_file(path / "model.pt", ec)) {
            base.model = path / "model.pt";
        } else {
            std::vector<fs::path> found;
            for (const auto& e : fs::directory_iterator(path, ec)) {
                const auto ext = e.path().extension().string();
                if (e.is_regular_file() &&
                    (ext == ".pt" || ext == ".ts" || ext == ".torchscript")) {
                    found.push_back(e.path());
                }
            }
            if (found.size() != 1) {
                throw CheckpointError(path.string() +
                                      ": expected model.pt or exactly one "
                                      "*.pt/*.ts/*.torchscript file, found " +
                                      std::to_string(found.size()));
            }
            base.model = found.front();
        }
    } else {
        base.model = path;
        dir = path.parent_path().empty() ? fs::path(".") : path.parent_path();
    }
    base.tokenizer = dir;
    const fs::path cfg = dir / "torchscript.json";
    if (fs::is_regular_file(cfg, ec)) {
        nlohmann::json j;
        try {
            j = read_json_file(cfg);
        } catch (const ParseError& e) {
            throw CheckpointError(e.what());
        }
        if (!j.is_object()) throw CheckpointError(cfg.string() + ": expected a JSON object");
        for (auto it = j.begin(); it != j.end(); ++it) {
            const auto& k = it.key();
            const auto& v = it.value();
            if (k == "positive_index" && v.is_number_integer() && v.get<std::int64_t>() >= 0) {
                base.positive_index = v.get<std::int64_t>();
            } else if (k == "pass_token_type_ids" && v.is_boolean()) {
                base.pass_token_type_ids = v.get<bool>();
            } else if (k == "max_length" && v.is_number_integer() && v.get<std::int64_t>() >= 3) {
                base.max_length = v.get<std::size_t>();
            } else {
                throw CheckpointError(cfg.string() + ": " + k + ": unknown key or bad value " +
                                      v.dump());
            }
        }
    }
    return std::make_unique<TorchScriptStage>(std::move(base));
}


std::shared_ptr<const RerankStage> TorchScriptStage::from_config(const nlohmann::json& c,
                                                                 StageContext& ctx) {
    const std::string where = "re-rank stage torchscript";
    check_keys(c,
               {"model", "depth", "name", "batch_size", "max_length", "threads", "token_type_ids"},
               where);
    TorchScriptStageOptions o;
    o.pass_token_type_ids = config_bool(c, "token_type_ids", true, where);
    o.depth = config_positive_size(c, "depth", o.depth, where);
    o.batch_size = config_positive_size(c, "batch_size", o.batch_size, where);
    o.max_length = config_positive_size(c, "max_length", o.max_length, where);
    o.threads = static_cast<int>(config_size(c, "threads", 0, where));
    o.name = config_string(c, "name", o.name, where);
    return make_torchscript_stage(ctx.resolve(config_required_string(c, "model", where)), o);
}

}  // namespace plumb::rerank
