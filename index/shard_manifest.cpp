#include "index/shard_manifest.hpp"

#include <nlohmann/json.hpp>
#include <set>

#include "plugin/error.hpp"
#include "plugin/text_io.hpp"

namespace plumb::index {
namespace {

constexpr const char* kFile = "plumb-shards.json";
constexpr const char* kFormat = "plumb-shards";
constexpr int kVersion = 1;

}  // namespace

std::uint64_t ShardManifest::documents() const noexcept {
    std::uint64_t n = 0;
    for (const auto& s : shards) n += s.documents;
    return n;
}

std::uint64_t ShardManifest::total_length() const noexcept {
    std::uint64_t n = 0;
    for (const auto& s : shards) n += s.total_length;
    return n;
}

const char* ShardManifest::file_name() noexcept { return kFile; }

bool ShardManifest::present(const std::filesystem::path& dir) {
    std::error_code ec;
    return std::filesystem::is_regular_file(dir / kFile, ec);
}

ShardManifest ShardManifest::read(const std::filesystem::path& dir) {
    const auto path = dir / kFile;
    if (!present(dir)) throw IndexError(path.string() + ": no shard manifest");
    ShardManifest m;
    try {
        auto j = nlohmann::json::parse(read_file(path));
        if (!j.is_object() || j.value("format", std::string()) != kFormat) {
            throw IndexError(path.string() + ": not a plumb shard manifest (format '" +
                             std::string(kFormat) + "' expected)");
        }
        if (j.value("version", 0) != kVersion) {
            throw IndexError(path.string() + ": unsupported shard manifest version " +
                             j.value("version", nlohmann::json()).dump() + " (this build reads " +
                             std::to_string(kVersion) + ")");
        }
        const auto& shards = j.at("shards");
        if (!shards.is_array() || shards.empty()) {
            throw IndexError(path.string() + ": the manifest lists no shards");
        }
        std::set<std::string> seen;
        for (const auto& s : shards) {
            Shard e;
            e.path = s.at("path").get<std::string>();
            e.documents = s.at("documents").get<std::uint64_t>();
            e.total_length = s.at("total_length").get<std::uint64_t>();
            if (e.path.empty() || !seen.insert(e.path).second) {
                throw IndexError(path.string() + ": empty or duplicate shard path '" + e.path +
                                 "'");
            }
            m.shards.push_back(std::move(e));
        }
        if (j.at("documents").get<std::uint64_t>() != m.documents() ||
            j.at("total_length").get<std::uint64_t>() != m.total_length()) {
            throw IndexError(path.string() +
                             ": documents / total_length differ from the sums over the shards");
        }
    } catch (const nlohmann::json::exception& e) {
        throw IndexError(path.string() + ": malformed shard manifest: " + e.what());
    }
    return m;
}

void ShardManifest::write(const std::filesystem::path& dir) const {
    nlohmann::json shards = nlohmann::json::array();
    for (const auto& s : this->shards) {
        shards.push_back(
            {{"path", s.path}, {"documents", s.documents}, {"total_length", s.total_length}});
    }
    nlohmann::json j = {{"format", kFormat},
                        {"version", kVersion},
                        {"documents", documents()},
                        {"total_length", total_length()},
                        {"shards", shards}};
    AtomicFile f(dir / kFile);
    f.write(j.dump(2) + "\n");
    f.commit();
}

std::filesystem::path ShardManifest::shard_dir(const std::filesystem::path& dir,
                                               std::size_t i) const {
    std::filesystem::path p(shards.at(i).path);
    return p.is_absolute() ? p : dir / p;
}

}  // namespace plumb::index
