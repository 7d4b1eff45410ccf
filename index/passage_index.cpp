#include "index/passage_index.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

#include "index/detail/index_data.hpp"
#include "plugin/error.hpp"
#include "plugin/json.hpp"
#include "plugin/text_io.hpp"

namespace fs = std::filesystem;

namespace plumb::index {
namespace detail {

IndexData::~IndexData() {
    if (text_fd >= 0) ::close(text_fd);
    try {
        if (reader) reader->close();
    } catch (...) {
    }
}

void write_all(std::FILE* f, const void* data, std::size_t n, const fs::path& p) {
    if (n > 0 && std::fwrite(data, 1, n, f) != n) {
        throw IoError("cannot write " + p.string() + ": " + std::strerror(errno));
    }
}

void fsync_file(std::FILE* f, const fs::path& p) {
    if (std::fflush(f) != 0 || ::fsync(::fileno(f)) != 0) {
        throw IoError("cannot flush " + p.string() + ": " + std::strerror(errno));
    }
}

void fsync_path(const fs::path& p) {
    int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw IoError("cannot open " + p.string() + ": " + std::strerror(errno));
    int rc = ::fsync(fd);
    int err = errno;
    ::close(fd);
    if (rc != 0) throw IoError("cannot fsync " + p.string() + ": " + std::strerror(err));
}

template <class T>
void write_vector_file(const fs::path& p, const std::vector<T>& v) {
    std::FILE* f = std::fopen(p.c_str(), "wb");
    if (!f) throw IoError("cannot create " + p.string() + ": " + std::strerror(errno));
    try {
        write_all(f, v.data(), v.size() * sizeof(T), p);
        fsync_file(f, p);
    } catch (...) {
        std::fclose(f);
        throw;
    }
    if (std::fclose(f) != 0) throw IoError("cannot close " + p.string());
}

std::string read_blob(const fs::path& p, std::uint64_t expected_size) {
    std::error_code ec;
    auto size = fs::file_size(p, ec);
    if (ec) throw IndexError("index file missing: " + p.string());
    if (size != expected_size) {
        throw IndexError("index file " + p.string() + " has " + std::to_string(size) +
                         " bytes, expected " + std::to_string(expected_size));
    }
    std::string s(size, '\0');
    std::FILE* f = std::fopen(p.c_str(), "rb");
    if (!f) throw IoError("cannot open " + p.string() + ": " + std::strerror(errno));
    std::size_t got = size ? std::fread(s.data(), 1, size, f) : 0;
    std::fclose(f);
    if (got != size) throw IoError("cannot read " + p.string());
    return s;
}

template <class T>
std::vector<T> read_vector_file(const fs::path& p, std::size_t expected_count) {
    std::error_code ec;
    auto size = fs::file_size(p, ec);
    if (ec) throw IndexError("index file missing: " + p.string());
    if (size != expected_count * sizeof(T)) {
        throw IndexError("index file " + p.string() + " has " + std::to_string(size) +
                         " bytes, expected " + std::to_string(expected_count * sizeof(T)));
    }
    std::vector<T> v(expected_count);
    std::FILE* f = std::fopen(p.c_str(), "rb");
    if (!f) throw IoError("cannot open " + p.string() + ": " + std::strerror(errno));
    std::size_t got = expected_count ? std::fread(v.data(), sizeof(T), expected_count, f) : 0;
    std::fclose(f);
    if (got != expected_count) throw IoError("cannot read " + p.string());
    return v;
}

template void write_vector_file(const fs::path&, const std::vector<std::uint32_t>&);
template void write_vector_file(const fs::path&, const std::vector<std::uint64_t>&);
template std::vector<std::uint32_t> read_vector_file(const fs::path&, std::size_t);
template std::vector<std::uint64_t> read_vector_file(const fs::path&, std::size_t);

void rethrow_lucene(const Lucene::LuceneException& e, const std::string& context) {
    throw IndexError(context + ": Lucene++: " + Lucene::StringUtils::toUTF8(e.getError()));
}

namespace {

template <class T>
T take(const std::string& buf, std::size_t& pos, const fs::path& p) {
    if (pos + sizeof(T) > buf.size()) throw IndexError("truncated index file " + p.string());
    T v;
    std::memcpy(&v, buf.data() + pos, sizeof(T));
    pos += sizeof(T);
    return v;
}

void load_terms(IndexData& d, const fs::path& p) {
    std::error_code ec;
    auto size = fs::file_size(p, ec);
    if (ec) throw IndexError("index file missing: " + p.string());
    std::string buf = read_blob(p, size);
    std::size_t pos = 0;
    if (buf.size() < 16 || std::memcmp(buf.data(), kTermsMagic, 8) != 0) {
        throw IndexError("bad term dictionary " + p.string());
    }
    pos = 8;
    auto count = take<std::uint64_t>(buf, pos, p);
    if (count != d.info.terms) throw IndexError("term count mismatch in " + p.string());
    d.terms.resize(count);
    d.term_index.reserve(count);
    for (std::uint64_t i = 0; i < count; ++i) {
        auto len = take<std::uint32_t>(buf, pos, p);
        if (pos + len > buf.size()) throw IndexError("truncated index file " + p.string());
        std::string term(buf.data() + pos, len);
        pos += len;
        TermEntry& e = d.terms[i];
        e.df = take<std::int32_t>(buf, pos, p);
        e.freq_ptr = take<std::int64_t>(buf, pos, p);
        e.prox_ptr = take<std::int64_t>(buf, pos, p);
        e.skip_offset = take<std::int32_t>(buf, pos, p);
        e.max_tf = take<std::uint32_t>(buf, pos, p);
        e.min_dl = take<std::uint32_t>(buf, pos, p);
        e.max_frac_default = take<float>(buf, pos, p);
        d.term_index.emplace(std::move(term), static_cast<std::uint32_t>(i));
    }
    if (pos != buf.size()) throw IndexError("trailing bytes in " + p.string());
}

}  // namespace
}  // namespace detail

using detail::IndexData;

PassageIndex::PassageIndex(std::unique_ptr<IndexData> data) : m_data(std::move(data)) {}
PassageIndex::~PassageIndex() = default;

std::shared_ptr<const PassageIndex> PassageIndex::open(const fs::path& dir,
                                                       const IndexOpenOptions& options) {
    auto meta_path = dir / detail::kMetaFile;
    if (!fs::exists(meta_path)) {
        throw IndexError("no committed plumb index at " + dir.string() + " (missing " +
                         detail::kMetaFile + ")");
    }
    auto d = std::make_unique<IndexData>();
    d->dir = dir;
    std::string analysis_name;
    std::string analyzer_name;  // empty: written before the choice existed (lucene3)
    std::string postings_file;
    int postings_version = 0;
    try {
        auto j = read_json_file(meta_path);
        if (j.at("format").get<std::string>() != detail::kFormatName) {
            throw IndexError(meta_path.string() + ": not a plumb passage index");
        }
        int version = j.at("version").get<int>();
        if (version != detail::kFormatVersion) {
            throw IndexError(meta_path.string() + ": unsupported index version " +
                             std::to_string(version) + " (this build reads version " +
                             std::to_string(detail::kFormatVersion) + ")");
        }
        d->info.documents = j.at("documents").get<std::uint64_t>();
        d->info.total_length = j.at("total_length").get<std::uint64_t>();
        d->info.terms = j.at("terms").get<std::uint64_t>();
        analysis_name = j.at("analysis").get<std::string>();
        if (auto it = j.find("analyzer"); it != j.end()) analyzer_name = it->get<std::string>();
        // Indexes built before postings.bin existed lack the key: searched through Lucene++.
        if (auto it = j.find("postings"); it != j.end()) {
            postings_file = it->at("file").get<std::string>();
            postings_version = it->at("version").get<int>();
        }
    } catch (const ParseError& e) {
        throw IndexError(e.what());
    } catch (const nlohmann::json::exception& e) {
        throw IndexError(meta_path.string() + ": bad metadata: " + e.what());
    }
    d->info.analysis = AnalysisOptions::from_name(analysis_name);
    // "analyzer" (absent in indexes built before it existed) must agree with "analysis".
    if (!analyzer_name.empty() && analyzer_name != analyzer_kind_name(d->info.analysis.analyzer)) {
        throw IndexError(meta_path.string() + ": analyzer '" + analyzer_name +
                         "' contradicts analysis '" + analysis_name + "'");
    }
    if (options.expect_analysis && !(*options.expect_analysis == d->info.analysis)) {
        throw IndexError("index " + dir.string() + " was built with analysis '" + analysis_name +
                         "' but '" + options.expect_analysis->name() + "' was requested");
    }
    d->analyzer = Analyzer(d->info.analysis);
    const std::uint64_t n = d->info.documents;
    if (n >= 0xFFFFFFFFull) throw IndexError("index too large: " + std::to_string(n));
    d->info.avgdl = n ? static_cast<double>(d->info.total_length) / static_cast<double>(n) : 0;

    d->doclen = detail::read_vector_file<std::uint32_t>(dir / "doclen.u32", n);
    d->idrank = detail::read_vector_file<std::uint32_t>(dir / "idrank.u32", n);
    d->id_off = detail::read_vector_file<std::uint64_t>(dir / "ids.off", n + 1);
    d->ids = detail::read_blob(dir / "ids.dat", d->id_off.back());
    d->text_off = detail::read_vector_file<std::uint64_t>(dir / "text.off", n + 1);
    {
        std::error_code ec;
        auto size = fs::file_size(dir / "text.dat", ec);
        if (ec || size != d->text_off.back()) {
            throw IndexError("index file " + (dir / "text.dat").string() +
                             " is missing or has the wrong size");
        }
    }
    d->by_id.assign(n, 0xFFFFFFFFu);
    for (std::uint32_t doc = 0; doc < n; ++doc) {
        auto r = d->idrank[doc];
        if (r >= n || d->by_id[r] != 0xFFFFFFFFu) {
            throw IndexError("corrupt id ranks in " + dir.string());
        }
        d->by_id[r] = doc;
    }
    std::uint64_t total = 0;
    for (auto l : d->doclen) total += l;
    if (total != d->info.total_length) throw IndexError("document lengths do not match metadata");
    detail::load_terms(*d, dir / "terms.bin");
    if (!postings_file.empty()) {
        // Version 1 (no block table) is still read; the builder writes kPostingsVersion.
        if (postings_version < 1 || postings_version > detail::kPostingsVersion ||
            postings_file.find('/') != std::string::npos) {
            throw IndexError(meta_path.string() + ": unsupported postings file '" + postings_file +
                             "' version " + std::to_string(postings_version) +
                             " (this build reads versions 1 to " +
                             std::to_string(detail::kPostingsVersion) + ")");
        }
        std::vector<std::uint32_t> dfs(d->terms.size());
        for (std::size_t i = 0; i < dfs.size(); ++i) {
            dfs[i] = static_cast<std::uint32_t>(d->terms[i].df);
        }
        d->postings.open(dir / postings_file, postings_version, dfs, static_cast<std::uint32_t>(n));
    }

    d->text_fd = ::open((dir / "text.dat").c_str(), O_RDONLY | O_CLOEXEC);
    if (d->text_fd < 0) {
        throw IoError("cannot open " + (dir / "text.dat").string() + ": " + std::strerror(errno));
    }
    try {
        using namespace Lucene;
        d->directory = newLucene<SimpleFSDirectory>(
            StringUtils::toUnicode((dir / detail::kLuceneDir).string()));
        d->reader = IndexReader::open(d->directory, true);
        if (static_cast<std::uint64_t>(d->reader->maxDoc()) != n) {
            throw IndexError("Lucene index in " + dir.string() + " holds " +
                             std::to_string(d->reader->maxDoc()) + " documents, metadata " +
                             std::to_string(n));
        }
        if (n > 0) {
            auto subs = d->reader->getSequentialSubReaders();
            if (!subs || subs.empty()) {
                d->segment = d->reader;
            } else if (subs.size() == 1) {
                d->segment = subs[0];
            } else {
                throw IndexError("Lucene index in " + dir.string() + " has " +
                                 std::to_string(subs.size()) + " segments (expected 1)");
            }
        }
        d->body_term = newLucene<Term>(detail::kBodyField, L"");
    } catch (const Lucene::LuceneException& e) {
        detail::rethrow_lucene(e, "cannot open index " + dir.string());
    }
    return std::shared_ptr<const PassageIndex>(new PassageIndex(std::move(d)));
}

std::optional<std::string> PassageIndex::text(std::string_view docid) const {
    auto doc = find(docid);
    if (!doc) return std::nullopt;
    return text_at(*doc);
}

std::uint64_t PassageIndex::size() const { return m_data->info.documents; }
const IndexInfo& PassageIndex::info() const noexcept { return m_data->info; }
const Analyzer& PassageIndex::analyzer() const noexcept { return m_data->analyzer; }
const fs::path& PassageIndex::directory() const noexcept { return m_data->dir; }

std::optional<std::uint32_t> PassageIndex::find(std::string_view docid) const {
    const auto& d = *m_data;
    auto it =
        std::lower_bound(d.by_id.begin(), d.by_id.end(), docid,
                         [&](std::uint32_t doc, std::string_view id) { return d.id_of(doc) < id; });
    if (it == d.by_id.end() || d.id_of(*it) != docid) return std::nullopt;
    return *it;
}

std::string_view PassageIndex::docid(std::uint32_t doc) const {
    if (doc >= m_data->info.documents) {
        throw InvalidArgument("document number out of range: " + std::to_string(doc));
    }
    return m_data->id_of(doc);
}

std::string PassageIndex::text_at(std::uint32_t doc) const {
    const auto& d = *m_data;
    if (doc >= d.info.documents) {
        throw InvalidArgument("document number out of range: " + std::to_string(doc));
    }
    std::uint64_t begin = d.text_off[doc], len = d.text_off[doc + 1] - begin;
    std::string s(len, '\0');
    std::uint64_t got = 0;
    while (got < len) {
        auto r = ::pread(d.text_fd, s.data() + got, len - got, static_cast<off_t>(begin + got));
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            throw IoError("cannot read passage text from " + (d.dir / "text.dat").string());
        }
        got += static_cast<std::uint64_t>(r);
    }
    return s;
}

std::uint32_t PassageIndex::doc_length(std::uint32_t doc) const {
    if (doc >= m_data->info.documents) {
        throw InvalidArgument("document number out of range: " + std::to_string(doc));
    }
    return m_data->doclen[doc];
}

std::uint64_t PassageIndex::doc_freq(std::string_view term) const {
    const auto* e = m_data->find_term(term);
    return e ? static_cast<std::uint64_t>(e->df) : 0;
}

}  // namespace plumb::index
