#include "rerank/vector_store.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>

#include "plugin/error.hpp"
#include "plugin/json.hpp"
#include "plugin/text_io.hpp"
#include "index/corpus.hpp"
#include "index/passage_index.hpp"
#include "rerank/detail/vector_store.hpp"

namespace plumb::rerank {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr const char* kStoreFormat = "plumb-dense-vectors";
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

}  // namespace

namespace detail {

VectorStore load_vector_store(const fs::path& dir, bool with_vectors) {
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

}  // namespace detail

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

VectorStore VectorStore::load(const fs::path& dir) { return detail::load_vector_store(dir, true); }

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

CollectionStream open_collection_stream(const std::filesystem::path& index,
                                        const std::filesystem::path& corpus,
                                        const std::string& format) {
    namespace pi = plumb::index;
    if (!index.empty() && !corpus.empty()) {
        throw ConfigError("give either --index or --corpus, not both");
    }
    CollectionStream in;
    if (!index.empty()) {
        auto idx = pi::PassageIndex::open(index);
        in.total = idx->size();
        auto next = std::make_shared<std::uint32_t>(0);
        in.docs = [idx, next](DocId& id, std::string& text) {
            if (*next >= idx->size()) return false;
            id = std::string(idx->docid(*next));
            text = idx->text_at(*next);
            ++*next;
            return true;
        };
    } else if (!corpus.empty()) {
        pi::CorpusReaderOptions ro;
        ro.format = pi::resolve_corpus_format(format, corpus);
        auto reader = std::make_shared<pi::CorpusReader>(corpus, ro);
        in.docs = [reader](DocId& id, std::string& text) {
            pi::Document d;
            if (!reader->next(d)) return false;
            id = std::move(d.id);
            text = pi::indexed_text(std::move(d));  // as a DocumentSource serves it
            return true;
        };
    } else {
        throw ConfigError("a collection is needed: --index DIR or --corpus FILE");
    }
    return in;
}

}  // namespace plumb::rerank
