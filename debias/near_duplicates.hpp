#pragma once
/// \file near_duplicates.hpp
/// Near-duplicate removal (paper 002: repeated passages crowd out answers).
///
/// Shingles (documented choices): the text is tokenised like eval::gender_tokens (ASCII
/// lower-casing, split on ASCII whitespace); the shingles are the sequences of `shingle` (default
/// 3) consecutive tokens; a text with fewer tokens than `shingle` has one shingle (all its
/// tokens); an empty text has none. Each shingle is hashed (64-bit FNV-1a of the tokens joined by
/// single spaces); the shingle set is the set of distinct hashes. Jaccard J(A, B) = |A∩B| / |A∪B|,
/// exact on the hash sets; two empty sets have J = 0 (never duplicates).
///
/// Walking the first `depth` candidates (default 1000; 0 = all) in rank order, a candidate whose
/// Jaccard with ANY higher-ranked kept candidate is >= `threshold` (default 0.9) is a
/// near-duplicate: removed, or, with `demote`, moved to the end of the list (duplicates keep their
/// relative order). Candidates after `depth` are not examined. A candidate without text takes its
/// text from the DocumentSource when one is given; otherwise apply throws InvalidArgument naming
/// the docid (dedup needs passage text).

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "debias/post_filter.hpp"

namespace plumb::debias {

struct NearDuplicateOptions {
    std::size_t shingle = 3;   ///< words per shingle (>= 1)
    double threshold = 0.9;    ///< Jaccard at or above which a passage is a duplicate, (0, 1]
    bool demote = false;       ///< move duplicates to the end instead of removing them
    std::size_t depth = 1000;  ///< leading candidates examined (0 = all)
    std::size_t k = 10;        ///< cutoff of the report's bias/utility measures
};

/// Sorted distinct shingle hashes of `text` (see above).
std::vector<std::uint64_t> shingle_set(std::string_view text, std::size_t shingle);

/// Jaccard of two sorted distinct hash sets (0 when both are empty).
double jaccard(const std::vector<std::uint64_t>& a, const std::vector<std::uint64_t>& b);

class NearDuplicates : public BiasPostFilter {
public:
    /// `bias` is only used for the report (may be unconfigured: bias then reads 0). Throws
    /// InvalidArgument for shingle == 0 or a threshold outside (0, 1].
    NearDuplicates(NearDuplicateOptions options, PassageBias bias = {});

    std::string name() const override { return "near_duplicates"; }

    /// The filter described by a pipeline configuration (the keys of kCommonFilterKeys plus
    /// its own, see the file comment); registered as a post-filter type by
    /// debias::register_post_filters(). ConfigError / InvalidArgument on bad values.
    static std::shared_ptr<const PostFilter> from_config(const nlohmann::json& config,
                                                         StageContext& ctx);
    PostFilterReport apply_with_report(const Query& query, RankedList& list) const override;

private:
    NearDuplicateOptions m_options;
    PassageBias m_bias;
};

}  // namespace plumb::debias
