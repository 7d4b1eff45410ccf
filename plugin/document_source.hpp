#pragma once
/// \file document_source.hpp
/// Access to passage text by external id, for stages that need text (re-rankers, bias scores,
/// post-filters). Implemented by the Lucene++ index (index/) and by in-memory corpora.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace plumb {

/// Read-only passage store. Implementations are safe to call concurrently.
class DocumentSource {
public:
    virtual ~DocumentSource() = default;
    /// The passage text for `docid` (title and body joined as indexed), or nullopt when unknown.
    virtual std::optional<std::string> text(std::string_view docid) const = 0;
    /// Number of documents.
    virtual std::uint64_t size() const = 0;
};

}  // namespace plumb
