#pragma once
/// \file tar_files.hpp
/// Tar archives written in the test process with libarchive (link LibArchive::LibArchive).
#include <archive.h>
#include <archive_entry.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace plumb::test {

/// Writes a tar archive (gzip-compressed when `gzip`) at `path` holding `files`: (name,
/// content) pairs in order; a name ending in '/' is a folder.
inline void write_tar(const std::filesystem::path& path,
                      const std::vector<std::pair<std::string, std::string>>& files, bool gzip) {
    archive* a = archive_write_new();
    if (gzip) archive_write_add_filter_gzip(a);
    archive_write_set_format_pax_restricted(a);
    EXPECT_EQ(archive_write_open_filename(a, path.string().c_str()), ARCHIVE_OK);
    for (const auto& [name, data] : files) {
        archive_entry* e = archive_entry_new();
        archive_entry_set_pathname(e, name.c_str());
        const bool folder = name.ends_with("/");
        archive_entry_set_filetype(e, folder ? AE_IFDIR : AE_IFREG);
        archive_entry_set_perm(e, folder ? 0755 : 0644);
        archive_entry_set_size(e, folder ? 0 : static_cast<la_int64_t>(data.size()));
        archive_write_header(a, e);
        if (!folder) archive_write_data(a, data.data(), data.size());
        archive_entry_free(e);
    }
    archive_write_close(a);
    archive_write_free(a);
}

}  // namespace plumb::test
