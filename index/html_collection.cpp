// HTML documents: one file, or the members of a tar archive (plain or gzip), read the way
// Anserini's HtmlCollection reads them (see corpus.hpp).
#include <archive.h>
#include <archive_entry.h>

#include <cstring>

#include "index/detail/sources.hpp"
#include "index/html_text.hpp"
#include "plugin/error.hpp"

namespace plumb::index::detail {

namespace {

bool ends_with_ci(std::string_view s, std::string_view suffix) {
    return s.size() >= suffix.size() && istarts_with(s.substr(s.size() - suffix.size()), suffix);
}

/// Turns the bytes of one HTML document into `doc` (BadRecord on invalid UTF-8).
void html_document(const std::string& bytes, std::string_view file_name, Document& doc) {
    std::string_view view = bytes;
    if (view.size() >= 3 && static_cast<unsigned char>(view[0]) == 0xEF &&
        static_cast<unsigned char>(view[1]) == 0xBB &&
        static_cast<unsigned char>(view[2]) == 0xBF) {
        view.remove_prefix(3);
    }
    std::size_t bad = find_invalid_utf8(view);
    if (bad != std::string_view::npos) {
        std::string_view before = view.substr(0, bad);
        std::uint64_t line = 1;
        std::size_t line_start = 0;
        for (std::size_t i = 0; i < before.size(); ++i) {
            if (before[i] == '\n') {
                ++line;
                line_start = i + 1;
            }
        }
        throw BadRecord{"invalid UTF-8 at byte " + std::to_string(bad - line_start + 1), line};
    }
    doc.id = html_doc_id(file_name);
    if (doc.id.empty() || doc.id.find_first_of(" \t\r\n\v\f") != std::string::npos) {
        throw BadRecord{"document id '" + doc.id +
                            "' (from the file name) is empty or contains "
                            "whitespace",
                        0};
    }
    doc.title.clear();
    doc.text = html_to_text(view);
}

class HtmlFileSource final : public DocSource {
public:
    explicit HtmlFileSource(const std::filesystem::path& path)
        : m_path(path), m_name(path.string()) {}
    bool next(Document& doc) override {
        if (m_done) return false;
        m_done = true;
        std::string bytes = read_file(m_path);
        m_bytes = bytes.size();
        html_document(bytes, m_path.filename().string(), doc);
        return true;
    }
    const std::string& name() const noexcept override { return m_name; }
    std::uint64_t line() const noexcept override { return 0; }
    std::uint64_t bytes_read() const noexcept override { return m_bytes; }

private:
    std::filesystem::path m_path;
    std::string m_name;
    bool m_done = false;
    std::uint64_t m_bytes = 0;
};

class HtmlArchiveSource final : public DocSource {
public:
    explicit HtmlArchiveSource(const std::filesystem::path& path)
        : m_archive_name(path.string()), m_name(m_archive_name) {
        m_a = archive_read_new();
        if (m_a == nullptr) throw IoError(m_archive_name + ": cannot allocate an archive reader");
        archive_read_support_filter_gzip(m_a);
        archive_read_support_filter_none(m_a);
        archive_read_support_format_tar(m_a);
        archive_read_support_format_gnutar(m_a);
        if (archive_read_open_filename(m_a, m_archive_name.c_str(), 1 << 16) != ARCHIVE_OK) {
            std::string msg = error();
            archive_read_free(m_a);
            throw IoError(m_archive_name + ": cannot open as a tar archive: " + msg);
        }
    }
    ~HtmlArchiveSource() override { archive_read_free(m_a); }
    HtmlArchiveSource(const HtmlArchiveSource&) = delete;
    HtmlArchiveSource& operator=(const HtmlArchiveSource&) = delete;

    bool next(Document& doc) override {
        for (;;) {
            archive_entry* entry = nullptr;
            int r = archive_read_next_header(m_a, &entry);
            if (r == ARCHIVE_EOF) return false;
            if (r != ARCHIVE_OK && r != ARCHIVE_WARN) {
                throw IoError(m_archive_name + ": corrupt or truncated archive: " + error());
            }
            if (archive_entry_filetype(entry) != AE_IFREG) continue;  // folders, links
            const char* path = archive_entry_pathname(entry);
            std::string member = path != nullptr ? path : "";
            std::string_view file_name = member;
            if (auto slash = file_name.rfind('/'); slash != std::string_view::npos) {
                file_name.remove_prefix(slash + 1);
            }
            // Hidden files: macOS resource forks ("._CACM-0001.html") and the like.
            if (file_name.empty() || file_name.front() == '.') continue;
            m_name = m_archive_name + "/" + member;
            m_bytes.clear();
            char buf[1 << 16];
            for (;;) {
                la_ssize_t n = archive_read_data(m_a, buf, sizeof buf);
                if (n < 0) {
                    throw IoError(m_name + ": corrupt or truncated archive member: " + error());
                }
                if (n == 0) break;
                m_bytes.append(buf, static_cast<std::size_t>(n));
            }
            html_document(m_bytes, file_name, doc);
            return true;
        }
    }
    const std::string& name() const noexcept override { return m_name; }
    std::uint64_t line() const noexcept override { return 0; }
    std::uint64_t bytes_read() const noexcept override {
        la_int64_t n = archive_filter_bytes(m_a, -1);
        return n > 0 ? static_cast<std::uint64_t>(n) : 0;
    }

private:
    std::string error() const {
        const char* e = archive_error_string(m_a);
        return e != nullptr ? e : "unknown error";
    }
    archive* m_a = nullptr;
    std::string m_archive_name;
    std::string m_name;
    std::string m_bytes;
};

}  // namespace

bool is_tar_name(const std::filesystem::path& path) {
    std::string n = path.filename().string();
    return ends_with_ci(n, ".tar") || ends_with_ci(n, ".tar.gz") || ends_with_ci(n, ".tgz");
}

std::string html_doc_id(std::string_view file_name) {
    if (file_name.ends_with(".html")) file_name.remove_suffix(5);
    return std::string(file_name);
}

std::unique_ptr<DocSource> open_html_file(const std::filesystem::path& path) {
    return std::make_unique<HtmlFileSource>(path);
}

std::unique_ptr<DocSource> open_html_archive(const std::filesystem::path& path) {
    return std::make_unique<HtmlArchiveSource>(path);
}

}  // namespace plumb::index::detail
