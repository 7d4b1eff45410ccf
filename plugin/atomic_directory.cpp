#include "plugin/atomic_directory.hpp"

#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <string>

#include "plugin/error.hpp"
#include "plugin/text_io.hpp"

namespace fs = std::filesystem;

namespace plumb {
namespace {

std::string errno_text() { return std::strerror(errno); }

/// "<target>.tmp-<pid>-<n>": the name remove_stale_temporaries() recognises.
fs::path temporary_sibling(const fs::path& target) {
    static std::atomic<unsigned> counter{0};
    fs::path p = target;
    p += ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
    return p;
}

void fsync_one(const fs::path& p, bool directory) {
    const int fd = ::open(p.c_str(), (directory ? O_DIRECTORY : 0) | O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw IoError(p.string() + ": cannot open to sync: " + errno_text());
    const bool ok = ::fsync(fd) == 0;
    const std::string why = ok ? "" : errno_text();
    ::close(fd);
    if (!ok) throw IoError(p.string() + ": fsync failed: " + why);
}

void fsync_tree(const fs::path& root) {
    for (const auto& e : fs::recursive_directory_iterator(root)) {
        if (e.is_symlink()) continue;
        if (e.is_directory()) {
            fsync_one(e.path(), true);
        } else if (e.is_regular_file()) {
            fsync_one(e.path(), false);
        }
    }
    fsync_one(root, true);
}

void rename_or_throw(const fs::path& from, const fs::path& to) {
    if (::rename(from.c_str(), to.c_str()) != 0) {
        throw IoError("cannot rename " + from.string() + " to " + to.string() + ": " +
                      errno_text());
    }
}

}  // namespace

AtomicDirectory::AtomicDirectory(fs::path target) {
    m_target = fs::absolute(target).lexically_normal();
    if (m_target.filename().empty()) m_target = m_target.parent_path();
    std::error_code ec;
    fs::create_directories(m_target.parent_path(), ec);
    if (ec) {
        throw IoError(m_target.parent_path().string() + ": cannot create directory: " +
                      ec.message());
    }
    remove_stale_temporaries(m_target);  // left by runs killed while writing `target`
    m_tmp = temporary_sibling(m_target);
    fs::remove_all(m_tmp, ec);
    fs::create_directory(m_tmp, ec);
    if (ec) throw IoError(m_tmp.string() + ": cannot create directory: " + ec.message());
}

AtomicDirectory::~AtomicDirectory() {
    std::error_code ec;
    fs::remove_all(m_tmp, ec);  // best effort; a leftover is swept by the next writer
}

void AtomicDirectory::commit() {
    if (m_committed) throw InvalidArgument("AtomicDirectory: " + m_target.string() +
                                           " committed twice");
    fsync_tree(m_tmp);
    std::error_code ec;
    if (!fs::exists(m_target, ec)) {
        rename_or_throw(m_tmp, m_target);
    } else if (::renameat2(AT_FDCWD, m_tmp.c_str(), AT_FDCWD, m_target.c_str(),
                           RENAME_EXCHANGE) != 0) {
        if (errno != EINVAL && errno != ENOSYS && errno != EOPNOTSUPP) {
            throw IoError("cannot replace " + m_target.string() + " with " + m_tmp.string() +
                          ": " + errno_text());
        }
        // No exchange on this file system: old aside (a temporary name, so a crash here leaves
        // it for the sweeper, with the new one complete at m_tmp), new in place.
        const fs::path old = temporary_sibling(m_target);
        rename_or_throw(m_target, old);
        try {
            rename_or_throw(m_tmp, m_target);
        } catch (...) {
            ::rename(old.c_str(), m_target.c_str());  // put the previous one back
            throw;
        }
        rename_or_throw(old, m_tmp);  // removed below like an exchanged one
    }
    m_committed = true;
    fsync_one(m_target.parent_path(), true);
    fs::remove_all(m_tmp, ec);  // the previous directory, after an exchange
}

}  // namespace plumb
