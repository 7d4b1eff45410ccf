#include "rerank/dense_index.hpp"

#include <faiss/AutoTune.h>
#include <faiss/Index.h>
#include <faiss/impl/FaissException.h>
#include <faiss/index_factory.h>
#include <faiss/index_io.h>
#include <unistd.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "plugin/error.hpp"
#include "plugin/json.hpp"
#include "plugin/text_io.hpp"
#include "rerank/detail/vector_store.hpp"

namespace plumb::rerank {

namespace fs = std::filesystem;

namespace {

constexpr const char* kIndexFormat = "plumb-dense-index";
constexpr int kVersion = 1;

faiss::MetricType faiss_metric(DenseMetric m) {
    return m == DenseMetric::InnerProduct ? faiss::METRIC_INNER_PRODUCT : faiss::METRIC_L2;
}

}  // namespace

const char* dense_metric_name(DenseMetric metric) noexcept {
    return metric == DenseMetric::InnerProduct ? "ip" : "l2";
}

DenseMetric parse_dense_metric(const std::string& name) {
    if (name == "ip") return DenseMetric::InnerProduct;
    if (name == "l2") return DenseMetric::L2;
    throw InvalidArgument("unknown metric '" + name + "' (known: ip, l2)");
}

struct DenseIndex::Impl {
    std::unique_ptr<faiss::Index> index;
    DenseIndexOptions options;
    VectorStoreMeta meta;
    std::vector<DocId> ids;
};

DenseIndex::DenseIndex() : m_impl(std::make_unique<Impl>()) {}
DenseIndex::DenseIndex(DenseIndex&&) noexcept = default;
DenseIndex& DenseIndex::operator=(DenseIndex&&) noexcept = default;
DenseIndex::~DenseIndex() = default;

void DenseIndex::build(const fs::path& dir, const DenseIndexOptions& options,
                       const ProgressCallback& progress) {
    auto store = VectorStore::load(dir);
    if (!store.complete) {
        throw IndexError(dir.string() +
                         ": the vectors are incomplete (encoding was interrupted): "
                         "run the encoder again to finish them");
    }
    const auto d = static_cast<faiss::Index::idx_t>(store.meta.dim);
    const auto n = static_cast<faiss::Index::idx_t>(store.ids.size());
    std::unique_ptr<faiss::Index> index;
    try {
        index.reset(faiss::index_factory(static_cast<int>(d), options.factory.c_str(),
                                         faiss_metric(options.metric)));
    } catch (const faiss::FaissException& e) {
        throw InvalidArgument("FAISS factory '" + options.factory + "': " + e.msg);
    }
    // "<target>.tmp.<pid>.0": the next build removes it if this process is killed.
    remove_stale_temporaries(dir / "index.faiss");
    const fs::path tmp = dir / ("index.faiss.tmp." + std::to_string(::getpid()) + ".0");
    try {
        if (!index->is_trained) index->train(n, store.vectors.data());
        constexpr faiss::Index::idx_t kStep = 16384;
        for (faiss::Index::idx_t i = 0; i < n; i += kStep) {
            const auto m = std::min(kStep, n - i);
            index->add(m, store.vectors.data() + i * d);
            if (progress)
                progress(static_cast<std::uint64_t>(i + m), static_cast<std::uint64_t>(n));
        }
        faiss::write_index(index.get(), tmp.c_str());
    } catch (const faiss::FaissException& e) {
        std::error_code ec;
        fs::remove(tmp, ec);
        throw IndexError(dir.string() + ": FAISS failed to build '" + options.factory +
                         "': " + e.msg);
    }
    std::error_code ec;
    fs::rename(tmp, dir / "index.faiss", ec);
    if (ec) {
        fs::remove(tmp, ec);
        throw IoError((dir / "index.faiss").string() + ": cannot rename: " + ec.message());
    }
    nlohmann::json j;
    j["format"] = kIndexFormat;
    j["version"] = kVersion;
    j["factory"] = options.factory;
    j["metric"] = dense_metric_name(options.metric);
    j["dim"] = store.meta.dim;
    j["count"] = store.ids.size();
    AtomicFile out(dir / "index.json");
    out.write(j.dump(2));
    out.write("\n");
    out.commit();
}

DenseIndex DenseIndex::load(const fs::path& dir, std::size_t expected_dim, int ef_search) {
    const auto info_path = dir / "index.json";
    if (!fs::exists(info_path)) {
        throw IndexError(dir.string() + ": no index.json (build the index first)");
    }
    DenseIndex out;
    auto& impl = *out.m_impl;
    std::size_t dim = 0, count = 0;
    try {
        auto j = read_json_file(info_path);
        if (j.value("format", "") != kIndexFormat) {
            throw IndexError(info_path.string() + ": not a plumb dense index");
        }
        if (j.at("version").get<int>() != kVersion) {
            throw IndexError(info_path.string() + ": unsupported version " +
                             j.at("version").dump());
        }
        impl.options.factory = j.at("factory").get<std::string>();
        impl.options.metric = parse_dense_metric(j.at("metric").get<std::string>());
        dim = j.at("dim").get<std::size_t>();
        count = j.at("count").get<std::size_t>();
    } catch (const ParseError& e) {
        throw IndexError(e.what());
    } catch (const nlohmann::json::exception& e) {
        throw IndexError(info_path.string() + ": malformed: " + e.what());
    }
    auto store = detail::load_vector_store(dir, false);
    impl.meta = store.meta;
    impl.ids = std::move(store.ids);
    try {
        impl.index.reset(faiss::read_index((dir / "index.faiss").c_str()));
    } catch (const faiss::FaissException& e) {
        throw IndexError((dir / "index.faiss").string() + ": cannot read: " + e.msg);
    }
    const auto d = static_cast<std::size_t>(impl.index->d);
    if (d != dim || d != impl.meta.dim || static_cast<std::size_t>(impl.index->ntotal) != count ||
        count != impl.ids.size()) {
        throw IndexError(dir.string() + ": index (" + std::to_string(impl.index->ntotal) + " x " +
                         std::to_string(d) + ") does not match its vectors (" +
                         std::to_string(impl.ids.size()) + " x " + std::to_string(impl.meta.dim) +
                         ")");
    }
    if (expected_dim != 0 && expected_dim != d) {
        throw IndexError(dir.string() + ": vectors have dimension " + std::to_string(d) +
                         " but the encoder produces " + std::to_string(expected_dim));
    }
    if (ef_search > 0 && impl.options.factory.find("HNSW") != std::string::npos) {
        try {
            faiss::ParameterSpace().set_index_parameter(impl.index.get(), "efSearch", ef_search);
        } catch (const faiss::FaissException& e) {
            throw InvalidArgument("efSearch for '" + impl.options.factory + "': " + e.msg);
        }
    }
    return out;
}

std::size_t DenseIndex::dim() const noexcept { return static_cast<std::size_t>(m_impl->index->d); }
std::size_t DenseIndex::size() const noexcept { return m_impl->ids.size(); }
const DenseIndexOptions& DenseIndex::options() const noexcept { return m_impl->options; }
const VectorStoreMeta& DenseIndex::meta() const noexcept { return m_impl->meta; }

const DocId& DenseIndex::docid(std::size_t row) const {
    if (row >= m_impl->ids.size()) throw InvalidArgument("DenseIndex: row out of range");
    return m_impl->ids[row];
}

std::vector<std::vector<std::pair<std::size_t, float>>> DenseIndex::search(
    std::span<const float> queries, std::size_t k) const {
    const auto d = dim();
    if (queries.size() % d != 0) {
        throw InvalidArgument("DenseIndex::search: " + std::to_string(queries.size()) +
                              " floats is not a multiple of the dimension " + std::to_string(d));
    }
    const auto n = queries.size() / d;
    std::vector<std::vector<std::pair<std::size_t, float>>> out(n);
    k = std::min(k, size());
    if (n == 0 || k == 0) return out;
    std::vector<float> dist(n * k);
    std::vector<faiss::Index::idx_t> labels(n * k);
    try {
        m_impl->index->search(static_cast<faiss::Index::idx_t>(n), queries.data(),
                              static_cast<faiss::Index::idx_t>(k), dist.data(), labels.data());
    } catch (const faiss::FaissException& e) {
        throw IndexError(std::string("FAISS search failed: ") + e.msg);
    }
    const bool ip = m_impl->options.metric == DenseMetric::InnerProduct;
    for (std::size_t q = 0; q < n; ++q) {
        for (std::size_t j = 0; j < k; ++j) {
            const auto label = labels[q * k + j];
            if (label < 0) continue;  // fewer results than k (e.g. HNSW on tiny indexes)
            const float s = ip ? dist[q * k + j] : -dist[q * k + j];
            out[q].emplace_back(static_cast<std::size_t>(label), s);
        }
    }
    return out;
}

}  // namespace plumb::rerank
