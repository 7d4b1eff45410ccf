#include "index/document_sources.hpp"

#include <functional>
#include <map>

#include "index/corpus.hpp"
#include "index/passage_index.hpp"
#include "index/shard_manifest.hpp"
#include "index/sharded_searcher.hpp"
#include "plugin/error.hpp"

namespace plumb::index {

namespace {

/// Passage texts of a corpus file, in memory.
class CorpusTextSource : public DocumentSource {
public:
    CorpusTextSource(const std::string& path, const std::unordered_set<std::string>* wanted,
                     const std::string& format) {
        CorpusReaderOptions o;
        o.format = resolve_corpus_format(format, path);
        CorpusReader reader(path, o);
        Document d;
        std::unordered_set<std::string> seen;
        while (reader.next(d)) {
            if (!seen.insert(d.id).second) {
                throw ParseError(path, reader.line_number(),
                                 "duplicate document id '" + d.id + "'");
            }
            if (wanted && !wanted->count(d.id)) continue;
            m_docs.emplace(d.id, indexed_text(std::move(d)));
        }
    }
    std::optional<std::string> text(std::string_view docid) const override {
        if (auto it = m_docs.find(docid); it != m_docs.end()) return it->second;
        return std::nullopt;
    }
    std::uint64_t size() const override { return m_docs.size(); }

private:
    std::map<std::string, std::string, std::less<>> m_docs;  // found by string_view, no copy
};

}  // namespace

std::shared_ptr<const DocumentSource> open_document_source(
    const std::string& index_dir, const std::string& corpus,
    const std::unordered_set<std::string>* wanted, const std::string& format) {
    if (!index_dir.empty() && !corpus.empty()) {
        throw ConfigError("give either --index or --corpus, not both");
    }
    if (!index_dir.empty()) {
        if (ShardManifest::present(index_dir)) {  // a sharded index: every shard's texts
            return std::make_shared<const ShardedDocuments>(ShardedSearcher::open(index_dir));
        }
        return PassageIndex::open(index_dir);
    }
    if (!corpus.empty()) return std::make_shared<CorpusTextSource>(corpus, wanted, format);
    throw ConfigError("a passage text source is needed: --index DIR or --corpus FILE");
}

std::string resource_key(const std::string& prefix, const std::filesystem::path& dir) {
    std::error_code ec;
    const auto canonical = std::filesystem::weakly_canonical(dir, ec);
    return prefix + (ec ? dir : canonical).string();
}

std::shared_ptr<const PassageIndex> shared_passage_index(StageContext& ctx,
                                                         const std::filesystem::path& dir) {
    return ctx.shared<const PassageIndex>(resource_key("index:", dir),
                                          [&] { return PassageIndex::open(dir); });
}

}  // namespace plumb::index
