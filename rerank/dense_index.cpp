#include "rerank/dense_index.hpp"

#include <faiss/AutoTune.h>
#include <faiss/Index.h>
#include <faiss/impl/FaissException.h>
#include <faiss/index_factory.h>
#include <faiss/index_io.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>

#include "plugin/error.hpp"
#include "plugin/json.hpp"
#include "plugin/text_io.hpp"

namespace plumb::rerank {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr const char* kStoreFormat = "plumb-dense-vectors";
constexpr const char* kIndexFormat = "plumb-dense-index";
constexpr int kVersion = 1;
constexpr char kMagic[8] = {'P', 'L', 'U', 'M', 'B', 'V', 'E', 'C'};
constexpr std::size_t kHeaderBytes = 8 + 4 + 4 + 8;

std::string chunk_name(std::size_t i) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "chunk-%06zu", i);
    return buf;
}

json meta_json(const VectorStoreMeta& m) {
    json j = json::object();
    for (const auto& [k, v] : m.meta) j[k] = v;
    return j;
}

struct Manifest {
    VectorStoreMeta meta;
    std::vector<std::pair<std::string, std::uint64_t>> chunks;
    bool complete = false;
};

Manifest read_manifest(const fs::path& dir) {
    const auto path = dir / "manifest.json";
    json j;
    try {
        j = read_json_file(path);
    } catch (const ParseError& e) {
        throw IndexError(e.what());
    }
    try {
        if (!j.is_object() || j.value("format", "") != kStoreFormat) {
            throw IndexError(path.string() + ": not a plumb vector folder (format '" +
                             std::string(kStoreFormat) + "' expected)");
        }
        const int version = j.at("version").get<int>();
        if (version != kVersion) {
            throw IndexError(path.string() + ": unsupported vector folder version " +
                             std::to_string(version) + " (this build reads version " +
                             std::to_string(kVersion) + ")");
        }
        Manifest m;
        m.meta.dim = j.at("dim").get<std::size_t>();
        for (const auto& [k, v] : j.at("meta").items()) m.meta.meta[k] = v.get<std::string>();
        for (const auto& c : j.at("chunks")) {
            m.chunks.emplace_back(c.at("file").get<std::string>(),
                                  c.at("count").get<std::uint64_t>());
        }
        m.complete = j.at("complete").get<bool>();
        return m;
    } catch (const json::exception& e) {
        throw IndexError(path.string() + ": malformed manifest: " + e.what());
    }
}

std::vector<DocId> read_ids(const fs::path& path, std::uint64_t expected) {
    std::vector<DocId> ids;
    LineReader reader(path);
    std::string_view line;
    while (reader.next(line)) ids.emplace_back(line);
    if (ids.size() != expected) {
        throw IndexError(path.string() + ": " + std::to_string(ids.size()) +
                         " ids, manifest says " + std::to_string(expected));
    }
    return ids;
}

void read_chunk_vectors(const fs::path& path, std::size_t dim, std::uint64_t count,
                        std::vector<float>& out) {
    const std::string data = read_file(path, std::numeric_limits<std::size_t>::max());
    if (data.size() < kHeaderBytes || std::memcmp(data.data(), kMagic, 8) != 0) {
        throw IndexError(path.string() + ": not a plumb vector chunk");
    }
    std::uint32_t version = 0, d = 0;
    std::uint64_t n = 0;
    std::memcpy(&version, data.data() + 8, 4);
    std::memcpy(&d, data.data() + 12, 4);
    std::memcpy(&n, data.data() + 16, 8);
    if (version != kVersion) {
        throw IndexError(path.string() + ": unsupported chunk version " + std::to_string(version));
    }
    if (d != dim || n != count) {
        throw IndexError(path.string() + ": chunk of " + std::to_string(n) + " x " +
                         std::to_string(d) + ", manifest says " + std::to_string(count) + " x " +
                         std::to_string(dim));
    }
    const std::size_t bytes = static_cast<std::size_t>(n) * d * sizeof(float);
    if (data.size() != kHeaderBytes + bytes) {
        throw IndexError(path.string() + ": truncated or oversized chunk (" +
                         std::to_string(data.size()) + " bytes, expected " +
                         std::to_string(kHeaderBytes + bytes) + ")");
    }
    const auto old = out.size();
    out.resize(old + static_cast<std::size_t>(n) * d);
    std::memcpy(out.data() + old, data.data() + kHeaderBytes, bytes);
}

VectorStore load_store(const fs::path& dir, bool with_vectors) {
    auto m = read_manifest(dir);
    VectorStore s;
    s.meta = m.meta;
    s.complete = m.complete;
    for (const auto& [file, count] : m.chunks) {
        auto ids = read_ids(dir / (file + ".ids"), count);
        s.ids.insert(s.ids.end(), std::make_move_iterator(ids.begin()),
                     std::make_move_iterator(ids.end()));
        if (with_vectors) read_chunk_vectors(dir / (file + ".vec"), m.meta.dim, count, s.vectors);
    }
    return s;
}

faiss::MetricType faiss_metric(DenseMetric m) {
    return m == DenseMetric::InnerProduct ? faiss::METRIC_INNER_PRODUCT : faiss::METRIC_L2;
}

}  // namespace

// ---------------------------------------------------------------------------------------------

VectorStoreWriter::VectorStoreWriter(fs::path dir, VectorStoreMeta meta)
    : m_dir(std::move(dir)), m_meta(std::move(meta)) {
    if (m_meta.dim == 0) throw InvalidArgument("VectorStoreWriter: dimension 0");
    if (fs::exists(m_dir / "manifest.json")) {
        auto m = read_manifest(m_dir);
        if (m.meta.dim != m_meta.dim || m.meta.meta != m_meta.meta) {
            throw IndexError((m_dir / "manifest.json").string() +
                             ": vectors were encoded with other settings (dim " +
                             std::to_string(m.meta.dim) + ", " + meta_json(m.meta).dump() +
                             "; now dim " + std::to_string(m_meta.dim) + ", " +
                             meta_json(m_meta).dump() + "): use another folder");
        }
        m_chunks = m.chunks;
        m_complete = m.complete;
        for (const auto& [file, count] : m_chunks) {
            auto ids = read_ids(m_dir / (file + ".ids"), count);
            m_ids.insert(m_ids.end(), ids.begin(), ids.end());
        }
    } else {
        std::error_code ec;
        fs::create_directories(m_dir, ec);
        if (ec) throw IoError(m_dir.string() + ": cannot create folder: " + ec.message());
        write_manifest();
    }
}

VectorStoreWriter::~VectorStoreWriter() = default;

std::uint64_t VectorStoreWriter::count() const noexcept { return m_ids.size(); }
const std::vector<DocId>& VectorStoreWriter::ids() const noexcept { return m_ids; }
bool VectorStoreWriter::complete() const noexcept { return m_complete; }

void VectorStoreWriter::write_manifest() const {
    json j;
    j["format"] = kStoreFormat;
    j["version"] = kVersion;
    j["dim"] = m_meta.dim;
    j["meta"] = meta_json(m_meta);
    j["chunks"] = json::array();
    for (const auto& [file, count] : m_chunks)
        j["chunks"].push_back({{"file", file}, {"count", count}});
    j["count"] = m_ids.size();
    j["complete"] = m_complete;
    AtomicFile out(m_dir / "manifest.json");
    out.write(j.dump(2));
    out.write("\n");
    out.commit();
}

void VectorStoreWriter::append(std::span<const DocId> ids, std::span<const float> vectors) {
    if (m_complete) throw IndexError(m_dir.string() + ": vector folder is already complete");
    if (vectors.size() != ids.size() * m_meta.dim) {
        throw InvalidArgument("VectorStoreWriter::append: " + std::to_string(ids.size()) +
                              " ids but " + std::to_string(vectors.size()) + " floats (dim " +
                              std::to_string(m_meta.dim) + ")");
    }
    if (ids.empty()) return;
    for (const auto& id : ids) {
        if (id.empty() || id.find_first_of(" \t\r\n") != std::string::npos) {
            throw InvalidArgument("VectorStoreWriter::append: docid '" + id +
                                  "' is empty or contains whitespace");
        }
    }
    const auto name = chunk_name(m_chunks.size());
    {
        AtomicFile vec(m_dir / (name + ".vec"));
        const std::uint32_t version = kVersion, dim = static_cast<std::uint32_t>(m_meta.dim);
        const std::uint64_t n = ids.size();
        std::string header(kMagic, 8);
        header.append(reinterpret_cast<const char*>(&version), 4);
        header.append(reinterpret_cast<const char*>(&dim), 4);
        header.append(reinterpret_cast<const char*>(&n), 8);
        vec.write(header);
        vec.write(std::string_view(reinterpret_cast<const char*>(vectors.data()),
                                   vectors.size() * sizeof(float)));
        vec.commit();
    }
    {
        AtomicFile idf(m_dir / (name + ".ids"));
        std::string text;
        for (const auto& id : ids) {
            text += id;
            text += '\n';
        }
        idf.write(text);
        idf.commit();
    }
    m_chunks.emplace_back(name, ids.size());
    m_ids.insert(m_ids.end(), ids.begin(), ids.end());
    write_manifest();
}

void VectorStoreWriter::finish() {
    m_complete = true;
    write_manifest();
}

VectorStore VectorStore::load(const fs::path& dir) { return load_store(dir, true); }

bool encode_collection(VectorStoreWriter& writer, const DocumentStream& docs,
                       const TextEncoder& encoder, std::uint64_t total,
                       const EncodeCollectionOptions& options, const ProgressCallback& progress,
                       const CancelToken* cancel) {
    const std::size_t chunk = std::max<std::size_t>(options.chunk_size, 1);
    DocId id;
    std::string text;
    std::uint64_t done = 0;
    // Skip what earlier runs stored, checking the collection did not change underneath.
    const auto& stored = writer.ids();
    while (done < stored.size()) {
        if (!docs(id, text)) {
            throw IndexError("the collection has " + std::to_string(done) +
                             " documents but the vector folder already holds " +
                             std::to_string(stored.size()));
        }
        if (id != stored[done]) {
            throw IndexError("the collection changed: document " + std::to_string(done + 1) +
                             " is '" + id + "' but the vector folder has '" + stored[done] + "'");
        }
        ++done;
    }
    if (progress) progress(done, total);
    if (writer.complete()) {
        if (docs(id, text)) {
            throw IndexError(
                "the vector folder is complete but the collection has more "
                "documents than its " +
                std::to_string(stored.size()));
        }
        return true;
    }
    std::vector<DocId> ids;
    std::vector<std::string> texts;
    bool more = true;
    while (more) {
        if (cancel && cancel->requested()) return false;
        ids.clear();
        texts.clear();
        while (ids.size() < chunk && (more = docs(id, text))) {
            ids.push_back(id);
            texts.push_back(text);
        }
        if (ids.empty()) break;
        std::vector<std::string_view> views(texts.begin(), texts.end());
        auto vectors = encoder(views);
        writer.append(ids, vectors);
        done += ids.size();
        if (progress) progress(done, total);
    }
    writer.finish();
    return true;
}

// ---------------------------------------------------------------------------------------------

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
    json j;
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
    } catch (const json::exception& e) {
        throw IndexError(info_path.string() + ": malformed: " + e.what());
    }
    auto store = load_store(dir, false);
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
