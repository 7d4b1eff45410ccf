#pragma once
/// \file passage_index.hpp
/// A committed passage index opened read-only (see index_builder.hpp for the layout): document
/// lengths, ids, passage text and the preloaded term dictionary. Serves text as a DocumentSource.
/// All members are const and safe to call concurrently.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "index/analysis.hpp"
#include "plugin/document_source.hpp"

namespace plumb::index {

namespace detail {
struct IndexData;
}

/// What the metadata file records.
struct IndexInfo {
    std::uint64_t documents = 0;
    std::uint64_t total_length = 0;  ///< sum of exact document lengths
    double avgdl = 0;                ///< total_length / documents (0 for an empty index)
    std::uint64_t terms = 0;         ///< distinct terms
    AnalysisOptions analysis;
};

struct IndexOpenOptions {
    /// When set, opening fails with IndexError unless the index was built with this analysis.
    std::optional<AnalysisOptions> expect_analysis;
};

class PassageIndex : public DocumentSource {
public:
    /// Opens a committed index. Throws IndexError when `dir` holds no committed index (missing
    /// commit marker), an unknown format/version, inconsistent files, or an analysis mismatch.
    static std::shared_ptr<const PassageIndex> open(const std::filesystem::path& dir,
                                                    const IndexOpenOptions& options = {});
    ~PassageIndex() override;

    // DocumentSource
    std::optional<std::string> text(std::string_view docid) const override;
    std::uint64_t size() const override;

    const IndexInfo& info() const noexcept;
    const Analyzer& analyzer() const noexcept;
    const std::filesystem::path& directory() const noexcept;

    /// Internal document number (0 .. size()-1) of an external id.
    std::optional<std::uint32_t> find(std::string_view docid) const;
    /// External id of internal document `doc`. Throws InvalidArgument when out of range.
    std::string_view docid(std::uint32_t doc) const;
    /// Passage text of internal document `doc` (reads the store). Throws IoError, InvalidArgument.
    std::string text_at(std::uint32_t doc) const;
    /// Exact analysed length of `doc`.
    std::uint32_t doc_length(std::uint32_t doc) const;
    /// Document frequency of an analysed term (0 when absent).
    std::uint64_t doc_freq(std::string_view term) const;

    /// Internal state for the searcher (defined in index/detail/index_data.hpp).
    const detail::IndexData& data() const noexcept { return *m_data; }

private:
    explicit PassageIndex(std::unique_ptr<detail::IndexData> data);
    std::unique_ptr<detail::IndexData> m_data;
};

}  // namespace plumb::index
