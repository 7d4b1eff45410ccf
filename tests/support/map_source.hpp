#pragma once
/// \file map_source.hpp
/// Passages held in memory behind the plumb::DocumentSource interface, for tests of code that
/// reads passage text (bias scores, training data, re-rankers) without building an index.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "plugin/document_source.hpp"

namespace plumb::test {

/// docid -> text; const after construction, so safe to call concurrently.
class MapSource final : public plumb::DocumentSource {
public:
    explicit MapSource(std::unordered_map<std::string, std::string> docs)
        : m_docs(std::move(docs)) {}
    std::optional<std::string> text(std::string_view docid) const override {
        auto it = m_docs.find(std::string(docid));
        if (it == m_docs.end()) return std::nullopt;
        return it->second;
    }
    std::uint64_t size() const override { return m_docs.size(); }

private:
    std::unordered_map<std::string, std::string> m_docs;
};

}  // namespace plumb::test
