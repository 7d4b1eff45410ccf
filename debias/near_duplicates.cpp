#include "debias/near_duplicates.hpp"

#include <algorithm>
#include <optional>

#include <nlohmann/json.hpp>

#include "plugin/error.hpp"
#include "plugin/hash.hpp"

namespace plumb::debias {

namespace {

constexpr std::uint64_t kFnvOffset = plumb::kFnv1aOffset;

std::uint64_t fnv(std::uint64_t h, std::string_view s) { return plumb::fnv1a64(s, h); }

}  // namespace

std::vector<std::uint64_t> shingle_set(std::string_view text, std::size_t shingle) {
    if (shingle == 0) throw InvalidArgument("near_duplicates: shingle size must be >= 1");
    const auto tokens = eval::gender_tokens(text);
    std::vector<std::uint64_t> out;
    if (tokens.empty()) return out;
    const std::size_t w = std::min(shingle, tokens.size());
    for (std::size_t i = 0; i + w <= tokens.size(); ++i) {
        std::uint64_t h = kFnvOffset;
        for (std::size_t j = 0; j < w; ++j) {
            if (j > 0) h = fnv(h, " ");
            h = fnv(h, tokens[i + j]);
        }
        out.push_back(h);
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
}

double jaccard(const std::vector<std::uint64_t>& a, const std::vector<std::uint64_t>& b) {
    if (a.empty() && b.empty()) return 0.0;
    std::size_t i = 0, j = 0, inter = 0;
    while (i < a.size() && j < b.size()) {
        if (a[i] < b[j]) {
            ++i;
        } else if (b[j] < a[i]) {
            ++j;
        } else {
            ++inter;
            ++i;
            ++j;
        }
    }
    const std::size_t uni = a.size() + b.size() - inter;
    return static_cast<double>(inter) / static_cast<double>(uni);
}

NearDuplicates::NearDuplicates(NearDuplicateOptions options, PassageBias bias)
    : m_options(options), m_bias(std::move(bias)) {
    if (m_options.shingle == 0) throw InvalidArgument("near_duplicates: shingle must be >= 1");
    if (!(m_options.threshold > 0.0 && m_options.threshold <= 1.0)) {
        throw InvalidArgument("near_duplicates: threshold must be in (0, 1]");
    }
    if (m_options.k == 0) throw InvalidArgument("near_duplicates: k must be >= 1");
}

PostFilterReport NearDuplicates::apply_with_report(const Query&, RankedList& list) const {
    auto& cands = list.candidates;
    PostFilterReport r = start_report(name(), m_options.k, cands, m_bias);
    const std::size_t n = cands.size();
    const std::size_t depth = examined_candidates(m_options.depth, n);
    std::vector<std::vector<std::uint64_t>> kept_sets;
    std::vector<char> dup(n, 0);
    for (std::size_t i = 0; i < depth; ++i) {
        const std::string* text = &cands[i].text;
        std::optional<std::string> fetched;
        if (text->empty()) {
            if (m_bias.documents) fetched = m_bias.documents->text(cands[i].docid);
            if (fetched) {
                text = &*fetched;
            } else if (!m_bias.documents) {
                throw InvalidArgument("near_duplicates: candidate '" + cands[i].docid +
                                      "' of query '" + list.qid +
                                      "' has no text (dedup needs passage text)");
            } else {
                throw InvalidArgument("near_duplicates: no text for docid '" + cands[i].docid +
                                      "'");
            }
        }
        auto s = shingle_set(*text, m_options.shingle);
        bool is_dup = false;
        for (const auto& k : kept_sets) {
            if (jaccard(s, k) >= m_options.threshold) {
                is_dup = true;
                break;
            }
        }
        if (is_dup) {
            dup[i] = 1;
            ++r.removed;
        } else {
            kept_sets.push_back(std::move(s));
        }
    }
    r.changed = r.removed > 0;
    if (r.changed) {
        std::vector<Candidate> out, tail;
        out.reserve(n);
        for (std::size_t i = 0; i < n; ++i) {
            if (!dup[i]) {
                out.push_back(std::move(cands[i]));
            } else if (m_options.demote) {
                tail.push_back(std::move(cands[i]));
            }
        }
        for (auto& c : tail) out.push_back(std::move(c));
        cands = std::move(out);
    }
    r.after = summarize_ranking(cands, r.k, m_bias);
    if (r.changed && m_options.demote) rewrite_scores(cands);
    return r;
}

std::shared_ptr<const PostFilter> NearDuplicates::from_config(const nlohmann::json& c,
                                                            StageContext& ctx) {
    const std::string where = "post-filter \"near_duplicates\"";
    check_keys(c, kCommonFilterKeys, {"shingle", "threshold", "demote", "depth"}, where);
    auto common = common_filter_config(c, ctx, where);
    NearDuplicateOptions o;
    o.k = common.k;
    o.shingle = config_size(c, "shingle", 3, where);
    o.threshold = config_double(c, "threshold", 0.9, where);
    o.demote = config_bool(c, "demote", false, where);
    o.depth = config_size(c, "depth", 1000, where);
    return std::make_shared<const NearDuplicates>(o, std::move(common.bias));
}

}  // namespace plumb::debias
