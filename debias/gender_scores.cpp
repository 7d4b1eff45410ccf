#include "debias/gender_scores.hpp"

#include <cstdio>
#include <memory>
#include <vector>

#include "debias/detail_passages.hpp"
#include "eval/gender.hpp"
#include "index/corpus.hpp"
#include "plugin/error.hpp"
#include "plugin/text_io.hpp"

namespace plumb::debias {
namespace {

constexpr eval::BiasVariant kVariants[] = {eval::BiasVariant::Tc, eval::BiasVariant::Tf,
                                           eval::BiasVariant::Bool};

/// The five output files, committed together at the end.
class Writers {
public:
    explicit Writers(const std::filesystem::path& prefix) {
        for (auto v : kVariants) {
            m_files.push_back(std::make_unique<AtomicFile>(
                gender_output_path(prefix, eval::bias_variant_name(v))));
            std::fprintf(m_files.back()->stream(), "# plumb-gender-bias v1 variant=%s\n",
                         eval::bias_variant_name(v));
        }
        m_files.push_back(std::make_unique<AtomicFile>(gender_output_path(prefix, "ibbr")));
        std::fprintf(m_files.back()->stream(),
                     "# IBBR bias label d = sgn(mag) in {-1,0,1}, +1 = male-leaning\n");
        m_files.push_back(
            std::make_unique<AtomicFile>(gender_output_path(prefix, "ibbr_magnitude")));
        std::fprintf(m_files.back()->stream(),
                     "# IBBR magnitude = sum_{w in G_m} ln(1+c(w,p)) - sum_{w in G_f} "
                     "ln(1+c(w,p))\n");
        m_files.push_back(std::make_unique<AtomicFile>(gender_combined_path(prefix)));
        std::fprintf(m_files.back()->stream(),
                     "%s\ndocid\ttc\ttc_female\ttc_male\ttf\ttf_female\ttf_male\tbool\t"
                     "bool_female\tbool_male\tibbr_magnitude\tibbr_label\n",
                     std::string(eval::kCombinedBiasHeader).c_str());
    }

    void add(const std::string& docid, const eval::GenderCounts& counts, GenderScoreStats& stats) {
        if (docid.empty() || docid.find_first_of(" \t\r\n\v\f") != std::string::npos)
            throw InvalidArgument("docid '" + docid + "' is empty or contains whitespace");
        for (std::size_t k = 0; k < 3; ++k) {
            auto t = eval::passage_magnitude(counts, kVariants[k]);
            std::fprintf(m_files[k]->stream(), "%s\t%.17g\t%.17g\t%.17g\n", docid.c_str(), t.bias,
                         t.female, t.male);
        }
        int label = eval::ibbr_label(counts);
        std::fprintf(m_files[3]->stream(), "%s\t%d\n", docid.c_str(), label);
        std::fprintf(m_files[4]->stream(), "%s\t%.17g\n", docid.c_str(), counts.ibbr_magnitude);
        std::FILE* all = m_files[5]->stream();
        std::fprintf(all, "%s", docid.c_str());
        for (auto v : kVariants) {
            auto t = eval::passage_magnitude(counts, v);
            std::fprintf(all, "\t%.17g\t%.17g\t%.17g", t.bias, t.female, t.male);
        }
        std::fprintf(all, "\t%.17g\t%d\n", counts.ibbr_magnitude, label);
        stats.passages++;
        if (counts.female) stats.with_female++;
        if (counts.male) stats.with_male++;
        (label > 0 ? stats.ibbr_male : label < 0 ? stats.ibbr_female : stats.ibbr_neutral)++;
    }

    void commit() {
        for (auto& f : m_files) f->commit();
    }

private:
    std::vector<std::unique_ptr<AtomicFile>> m_files;
};

}  // namespace

namespace {
/// The output path without a trailing ".tsv".
std::string output_stem(const std::filesystem::path& output) {
    std::string s = output.string();
    if (s.size() > 4 && s.ends_with(".tsv")) s.resize(s.size() - 4);
    return s;
}
}  // namespace

std::filesystem::path gender_output_path(const std::filesystem::path& prefix,
                                         const std::string& suffix) {
    return std::filesystem::path(output_stem(prefix) + "." + suffix + ".tsv");
}

std::filesystem::path gender_combined_path(const std::filesystem::path& output) {
    return std::filesystem::path(output_stem(output) + ".tsv");
}

GenderScoreStats score_gender(const GenderScoreOptions& o, const ProgressCallback& progress,
                              const CancelToken* cancel) {
    if (o.corpus.empty() == o.index_dir.empty())
        throw InvalidArgument("give exactly one of a corpus or an index");
    if (o.output_prefix.empty()) throw InvalidArgument("an output prefix is required");
    auto words = eval::GenderWordList::load(o.wordlist);
    GenderScoreStats stats;
    Writers out(o.output_prefix);
    stats.skipped_bad = detail::for_each_passage(
        o.corpus, o.corpus_format, o.skip_bad, o.index_dir,
        [&](const std::string& docid, const std::string& text) {
            if (cancel && cancel->requested())
                throw Error("gender scoring cancelled; nothing written");
            out.add(docid, eval::count_gender_words(text, words), stats);
        },
        progress);
    out.commit();
    return stats;
}

QueryGenderStats label_query_gender(const std::filesystem::path& wordlist,
                                    const std::filesystem::path& topics,
                                    const std::filesystem::path& output, bool majority) {
    auto words = eval::GenderWordList::load(wordlist);
    auto queries = index::read_topics(topics);
    QueryGenderStats stats;
    AtomicFile out(output);
    for (const auto& q : queries) {
        auto counts = eval::count_gender_words(q.text, words);
        char label = eval::query_gender_label(
            counts, majority ? eval::BothPolicy::Majority : eval::BothPolicy::Neutral);
        if (counts.female && counts.male) stats.both++;
        (label == 'f' ? stats.female : label == 'm' ? stats.male : stats.neutral)++;
        out.write(q.id + '\t' + std::string(1, label) + '\n');
    }
    out.commit();
    return stats;
}

}  // namespace plumb::debias
