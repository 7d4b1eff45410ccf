#pragma once
/// \file atomic_directory.hpp
/// A directory written as a unit (an index, a model checkpoint): the caller writes into a
/// temporary sibling `<target>.tmp-<pid>-<n>`, and commit() puts it in place of `target` so that
/// at every moment `target` is either the complete previous directory or the complete new one.
/// A run killed before commit leaves only the temporary, which the next AtomicDirectory (or
/// remove_stale_temporaries() in plugin/text_io.hpp) for the same target removes.

#include <filesystem>

namespace plumb {

class AtomicDirectory {
public:
    /// Removes stale temporaries of dead processes for `target`, then creates an empty
    /// temporary sibling (and `target`'s parent directories). IoError on failure.
    explicit AtomicDirectory(std::filesystem::path target);
    /// Removes the temporary (before commit: the unfinished new directory; after a commit that
    /// replaced an existing target: the previous directory).
    ~AtomicDirectory();
    AtomicDirectory(const AtomicDirectory&) = delete;
    AtomicDirectory& operator=(const AtomicDirectory&) = delete;

    /// Where to write the new directory's files.
    const std::filesystem::path& path() const noexcept { return m_tmp; }
    /// The absolute, normalised target.
    const std::filesystem::path& target() const noexcept { return m_target; }

    /// fsyncs every file and folder written under path(), then exchanges it with `target`
    /// atomically (renameat2 RENAME_EXCHANGE; a plain rename when `target` does not exist; on a
    /// file system without exchange, the old target is first renamed aside to a temporary name
    /// so that a crash leaves it recoverable), fsyncs the parent and removes the previous
    /// directory. IoError on failure (the target is then unchanged); InvalidArgument when
    /// called twice.
    void commit();

private:
    std::filesystem::path m_target;
    std::filesystem::path m_tmp;
    bool m_committed = false;
};

}  // namespace plumb
