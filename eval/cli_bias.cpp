// `plumb eval-bias`, `plumb eval-prf`, `plumb eval-liwc`: gender-bias measures over runs
// (RaB/ARaB, PRF/|ΔA-PRF|, LIWC-style category difference). Thin layers over
// eval/bias_metrics.hpp and eval/gender.hpp; passage text comes from a corpus file or a plumb
// index when the bias values are computed on the fly.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "eval/bias_metrics.hpp"
#include "eval/detail_cli.hpp"
#include "eval/gender.hpp"
#include "eval/qrels.hpp"
#include "eval/run.hpp"
#include "eval/subsets.hpp"
#include "index/document_sources.hpp"
#include "plugin/cli/command.hpp"
#include "plugin/cli/options.hpp"
#include "plugin/cli/output.hpp"
#include "plugin/error.hpp"
#include "plugin/text_io.hpp"

namespace plumb::eval {
namespace {

using detail::fixed;
using detail::pad;

/// `--wordlist` and the passage text it is counted in: `--corpus` (with `--corpus-format`) or
/// `--index`; the alternative to a precomputed bias or label file.
struct TextSourceArgs {
    std::string wordlist;
    std::string corpus;
    std::string corpus_format;
    std::string index_dir;

    void add(CLI::App* cmd) {
        cmd->add_option("--wordlist", wordlist, "gender word list (word,f / word,m lines)");
        cmd->add_option("--corpus", corpus, "passage corpus (TSV id<TAB>text or BEIR JSONL)");
        cmd->add_option("--corpus-format", corpus_format, "tsv | jsonl (default: by extension)");
        cmd->add_option("--index", index_dir,
                        "plumb passage index directory (instead of --corpus)");
    }

    /// Gender-word counts of the passages `needed`, from the corpus or the index.
    std::unordered_map<std::string, GenderCounts> counts(
        const std::unordered_set<std::string>& needed) const {
        const auto words = GenderWordList::load(wordlist);
        const auto source = index::open_document_source(index_dir, corpus, &needed, corpus_format);
        const std::vector<std::string> ids(needed.begin(), needed.end());
        return gender_counts(ids, *source, words, {}, nullptr,
                             index_dir.empty() ? "the corpus " + corpus : "the index " + index_dir);
    }
};

std::vector<std::size_t> parse_cutoffs(const std::string& spec) {
    std::vector<std::size_t> out;
    std::vector<std::string_view> parts;
    split(spec, ',', parts);
    for (auto p : parts) {
        const std::string s(trim(p));
        std::size_t used = 0;
        unsigned long v = 0;
        try {
            v = std::stoul(s, &used);
        } catch (const std::exception&) {
            used = 0;
        }
        if (used != s.size() || s.empty() || v == 0)
            throw ConfigError("--cutoffs: '" + s + "' is not a positive integer");
        out.push_back(v);
    }
    return out;
}

/// Rankings of the selected queries (all run queries when `subset` is empty); `absent` counts
/// subset queries that the run lacks (they are reported, not averaged).
std::vector<QueryRanking> select(std::vector<QueryRanking> all,
                                 const std::vector<std::string>& subset, std::size_t& absent) {
    absent = 0;
    if (subset.empty()) return all;
    std::unordered_map<std::string, std::size_t> pos;
    for (std::size_t i = 0; i < all.size(); ++i) pos.emplace(all[i].qid, i);
    std::vector<QueryRanking> out;
    for (const auto& q : subset) {
        auto it = pos.find(q);
        if (it == pos.end()) {
            ++absent;
            continue;
        }
        out.push_back(std::move(all[it->second]));
    }
    return out;
}

// ------------------------------------------------------------------------------------------
// plumb eval-bias
// ------------------------------------------------------------------------------------------

struct BiasArgs {
    detail::RunArgs runs;
    detail::QuerySubsetArgs subset;
    std::vector<std::string> bias_files;
    TextSourceArgs text;
    std::string cutoffs = "5,10";
    std::string variant = "all";
    bool strict = false;
    detail::OutputArgs out{{"text", "json", "csv"}};
};

void run_bias(const BiasArgs& a) {
    a.out.check();
    if (a.runs.runs.empty()) throw ConfigError("eval-bias: give at least one --run");
    if (a.bias_files.empty() == a.text.wordlist.empty())
        throw ConfigError("eval-bias: give --bias-file or --wordlist (with --corpus/--index)");
    const auto names = a.runs.display_names();
    const auto cutoffs = parse_cutoffs(a.cutoffs);
    const std::size_t depth = *std::max_element(cutoffs.begin(), cutoffs.end());
    std::vector<BiasVariant> variants;
    if (a.variant == "all")
        variants = {BiasVariant::Tc, BiasVariant::Tf, BiasVariant::Bool};
    else
        variants = {parse_bias_variant(a.variant)};
    const auto subset = a.subset.qids();
    if (!a.subset.queries.empty() && subset.empty())
        throw ConfigError("eval-bias: no query of " + a.subset.queries + " selected" +
                          (a.subset.label.empty() ? "" : " with label '" + a.subset.label + "'"));

    std::vector<std::vector<QueryRanking>> rankings;
    std::vector<std::size_t> absent(a.runs.runs.size());
    for (std::size_t r = 0; r < a.runs.runs.size(); ++r)
        rankings.push_back(
            select(rankings_from_run(read_run(a.runs.runs[r]), depth), subset, absent[r]));

    // Bias tables per variant.
    std::unordered_map<int, BiasTable> tables;
    if (!a.bias_files.empty()) {
        for (const auto& f : a.bias_files) {
            if (is_combined_bias_file(f)) {
                for (auto v : variants) {
                    if (!tables.emplace(static_cast<int>(v), read_bias_file(f, v)).second)
                        throw ConfigError(std::string("two bias files for variant ") +
                                          bias_variant_name(v));
                }
                continue;
            }
            auto v = bias_file_variant(f);
            if (!v) {
                if (variants.size() != 1)
                    throw ConfigError("bias file " + f + " names no variant: give --variant");
                v = variants[0];
            }
            if (tables.count(static_cast<int>(*v)))
                throw ConfigError(std::string("two bias files for variant ") +
                                  bias_variant_name(*v));
            tables.emplace(static_cast<int>(*v), read_bias_file(f, *v));
        }
        for (auto v : variants)
            if (!tables.count(static_cast<int>(v)))
                throw ConfigError(std::string("no bias file for variant ") + bias_variant_name(v) +
                                  " (give one per variant, or --variant)");
    } else {
        std::unordered_set<std::string> needed;
        for (const auto& run : rankings)
            for (const auto& q : run)
                for (const auto& d : q.docids) needed.insert(d);
        const auto counts = a.text.counts(needed);
        for (auto v : variants) {
            BiasTable t;
            for (const auto& [id, c] : counts) t.emplace(id, passage_magnitude(c, v));
            tables.emplace(static_cast<int>(v), std::move(t));
        }
    }

    std::string text = pad("run", 16) +
                       "  variant  cutoff  queries  RaB      RaB_f    RaB_m    "
                       "ARaB     ARaB_f   ARaB_m\n";
    std::string csv =
        "run,variant,cutoff,queries,empty,absent,missing,rab,rab_female,rab_male,"
        "arab,arab_female,arab_male\n";
    nlohmann::json json = nlohmann::json::array();
    RankBiasOptions ro;
    ro.strict = a.strict;
    std::size_t missing_total = 0;
    for (std::size_t r = 0; r < a.runs.runs.size(); ++r) {
        for (auto v : variants) {
            const auto rows = rank_bias(rankings[r], tables.at(static_cast<int>(v)), cutoffs, ro);
            for (const auto& s : rows) {
                missing_total += s.missing;
                text += pad(names[r], 16) + "  " + pad(bias_variant_name(v), 7) + "  " +
                        pad(std::to_string(s.cutoff), 6) + "  " +
                        pad(std::to_string(s.queries), 7) + "  " + pad(fixed(s.rab.bias), 7) +
                        "  " + pad(fixed(s.rab.female), 7) + "  " + pad(fixed(s.rab.male), 7) +
                        "  " + pad(fixed(s.arab.bias), 7) + "  " + pad(fixed(s.arab.female), 7) +
                        "  " + fixed(s.arab.male) + "\n";
                csv += names[r] + "," + bias_variant_name(v) + "," + std::to_string(s.cutoff) +
                       "," + std::to_string(s.queries) + "," + std::to_string(s.empty) + "," +
                       std::to_string(absent[r]) + "," + std::to_string(s.missing) + "," +
                       fixed(s.rab.bias, 10) + "," + fixed(s.rab.female, 10) + "," +
                       fixed(s.rab.male, 10) + "," + fixed(s.arab.bias, 10) + "," +
                       fixed(s.arab.female, 10) + "," + fixed(s.arab.male, 10) + "\n";
                json.push_back(
                    {{"run", names[r]},
                     {"variant", bias_variant_name(v)},
                     {"cutoff", s.cutoff},
                     {"queries", s.queries},
                     {"empty", s.empty},
                     {"absent", absent[r]},
                     {"missing", s.missing},
                     {"rab",
                      {{"bias", s.rab.bias}, {"female", s.rab.female}, {"male", s.rab.male}}},
                     {"arab",
                      {{"bias", s.arab.bias}, {"female", s.arab.female}, {"male", s.arab.male}}}});
            }
        }
        if (absent[r] > 0)
            text += "  (" + names[r] + ": " + std::to_string(absent[r]) +
                    " selected queries not in the run)\n";
    }
    text += "bias = male - female (positive = leans male)";
    if (missing_total > 0)
        text += "; " + std::to_string(missing_total) +
                " ranked passages had no bias entry and counted as 0";
    text += "\n";
    a.out.write(text, csv, json.dump(2) + "\n");
}

// ------------------------------------------------------------------------------------------
// plumb eval-prf
// ------------------------------------------------------------------------------------------

struct PrfArgs {
    detail::RunArgs runs;
    detail::QrelsArgs qrels;
    std::string labels;
    TextSourceArgs text;
    detail::QuerySubsetArgs subset;
    bool per_query = false;
    detail::OutputArgs out{{"text", "json", "csv"}};
};

void run_prf(const PrfArgs& a) {
    a.out.check();
    if (a.runs.runs.empty()) throw ConfigError("eval-prf: give at least one --run");
    if (a.labels.empty() == a.text.wordlist.empty())
        throw ConfigError("eval-prf: give --labels or --wordlist (with --corpus/--index)");
    const auto names = a.runs.display_names();
    const auto qrels = Qrels::load(a.qrels.path);
    const auto subset = a.subset.qids();
    const std::unordered_set<std::string> keep(subset.begin(), subset.end());

    std::vector<std::vector<ScoredRanking>> runs;
    for (const auto& path : a.runs.runs) {
        auto all = scored_rankings_from_run(read_run(path));
        if (!keep.empty())
            std::erase_if(all, [&](const ScoredRanking& q) { return !keep.count(q.qid); });
        runs.push_back(std::move(all));
    }
    std::unordered_map<std::string, int> labels;
    if (!a.labels.empty()) {
        labels = read_bias_labels(a.labels);
    } else {
        std::unordered_set<std::string> needed;
        for (const auto& run : runs)
            for (const auto& q : run)
                for (const auto& d : q.docs) needed.insert(d.first);
        for (const auto& [id, c] : a.text.counts(needed)) labels.emplace(id, ibbr_label(c));
    }

    auto opt = [](const std::optional<double>& v) { return v ? fixed(*v) : std::string("-"); };
    auto opt_csv = [](const std::optional<double>& v) { return v ? fixed(*v, 10) : std::string(); };
    auto opt_json = [](const std::optional<double>& v) {
        return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
    };
    std::string text = pad("run", 16) + "  PRF_m   (queries)  PRF_f   (queries)  |dA-PRF|\n";
    std::string csv = a.per_query ? "run,qid,n1_male,n1_female,n0,prf_male,prf_female,nprf_male,"
                                    "nprf_female\n"
                                  : "run,prf_male,queries_male,prf_female,queries_female,delta,"
                                    "unlabelled\n";
    nlohmann::json json = nlohmann::json::array();
    std::string per_query_text;
    for (std::size_t r = 0; r < runs.size(); ++r) {
        const auto s = prf(runs[r], qrels, labels, a.qrels.level);
        text += pad(names[r], 16) + "  " + fixed(s.mean_prf_male) + "  " +
                pad("(" + std::to_string(s.queries_male) + ")", 9) + "  " +
                fixed(s.mean_prf_female) + "  " +
                pad("(" + std::to_string(s.queries_female) + ")", 9) + "  " + opt(s.delta) + "\n";
        nlohmann::json j{{"run", names[r]},
                         {"prf_male", s.mean_prf_male},
                         {"queries_male", s.queries_male},
                         {"prf_female", s.mean_prf_female},
                         {"queries_female", s.queries_female},
                         {"delta", opt_json(s.delta)},
                         {"unlabelled", s.unlabelled}};
        if (!a.per_query) {
            csv += names[r] + "," + fixed(s.mean_prf_male, 10) + "," +
                   std::to_string(s.queries_male) + "," + fixed(s.mean_prf_female, 10) + "," +
                   std::to_string(s.queries_female) + "," + opt_csv(s.delta) + "," +
                   std::to_string(s.unlabelled) + "\n";
        } else {
            per_query_text += names[r] + "\n  " + pad("qid", 12) +
                              "  n1_m  n1_f  n0     PRF_m   PRF_f   nPRF_m      nPRF_f\n";
            for (const auto& [qid, q] : s.per_query) {
                per_query_text += "  " + pad(qid, 12) + "  " + pad(std::to_string(q.n1_male), 4) +
                                  "  " + pad(std::to_string(q.n1_female), 4) + "  " +
                                  pad(std::to_string(q.n0), 5) + "  " + pad(opt(q.prf_male), 6) +
                                  "  " + pad(opt(q.prf_female), 6) + "  " +
                                  pad(opt(q.nprf_male), 10) + "  " + opt(q.nprf_female) + "\n";
                csv += names[r] + "," + qid + "," + std::to_string(q.n1_male) + "," +
                       std::to_string(q.n1_female) + "," + std::to_string(q.n0) + "," +
                       opt_csv(q.prf_male) + "," + opt_csv(q.prf_female) + "," +
                       opt_csv(q.nprf_male) + "," + opt_csv(q.nprf_female) + "\n";
                j["per_query"][qid] = {{"n1_male", q.n1_male},
                                       {"n1_female", q.n1_female},
                                       {"n0", q.n0},
                                       {"prf_male", opt_json(q.prf_male)},
                                       {"prf_female", opt_json(q.prf_female)},
                                       {"nprf_male", opt_json(q.nprf_male)},
                                       {"nprf_female", opt_json(q.nprf_female)}};
            }
        }
        json.push_back(j);
    }
    text += per_query_text;
    a.out.write(text, csv, json.dump(2) + "\n");
}

// ------------------------------------------------------------------------------------------
// plumb eval-liwc
// ------------------------------------------------------------------------------------------

struct LiwcArgs {
    std::string run;
    std::string categories;
    std::string queries;
    std::string group_a = "f";
    std::string group_b = "m";
    std::size_t k = 10;
    detail::OutputArgs out{{"text", "json", "csv"}};
};

void run_liwc(const LiwcArgs& a) {
    a.out.check();
    const auto vectors = read_category_vectors(a.categories);
    const auto qa = read_query_subset(a.queries, a.group_a);
    const auto qb = read_query_subset(a.queries, a.group_b);
    auto rankings = rankings_from_run(read_run(a.run), a.k);
    std::size_t absent_a = 0, absent_b = 0;
    auto ga = select(rankings, qa, absent_a);
    auto gb = select(rankings, qb, absent_b);
    const auto d = category_difference(ga, gb, vectors, a.k);
    std::string text =
        "groups: " + a.group_a + " (" + std::to_string(d.queries_a) + " queries), " + a.group_b +
        " (" + std::to_string(d.queries_b) + " queries); top " + std::to_string(a.k) +
        "; passages without a vector: " + std::to_string(d.missing) + "\n" + pad("category", 16) +
        "  " + pad(a.group_a, 10) + "  " + pad(a.group_b, 10) + "  " +
        pad("|" + a.group_a + "-" + a.group_b + "|", 10) + "  " + a.group_a + "-" + a.group_b +
        "\n";
    std::string csv =
        "category,mean_" + a.group_a + ",mean_" + a.group_b + ",abs_difference,difference\n";
    nlohmann::json json{{"group_a", a.group_a},
                        {"group_b", a.group_b},
                        {"queries_a", d.queries_a},
                        {"queries_b", d.queries_b},
                        {"k", a.k},
                        {"missing", d.missing}};
    for (std::size_t c = 0; c < d.categories.size(); ++c) {
        text += pad(d.categories[c], 16) + "  " + pad(fixed(d.mean_a[c], 6), 10) + "  " +
                pad(fixed(d.mean_b[c], 6), 10) + "  " + pad(fixed(d.abs_difference[c], 6), 10) +
                "  " + fixed(d.difference[c], 6) + "\n";
        csv += d.categories[c] + "," + fixed(d.mean_a[c], 10) + "," + fixed(d.mean_b[c], 10) + "," +
               fixed(d.abs_difference[c], 10) + "," + fixed(d.difference[c], 10) + "\n";
        json["categories"][d.categories[c]] = {{"mean_a", d.mean_a[c]},
                                               {"mean_b", d.mean_b[c]},
                                               {"abs_difference", d.abs_difference[c]},
                                               {"difference", d.difference[c]}};
    }
    a.out.write(text, csv, json.dump(2) + "\n");
}

const cli::CommandRegistrar kBiasCommand("eval-bias", [](CLI::App& app) {
    auto a = std::make_shared<BiasArgs>();
    auto* sub = app.add_subcommand(
        "eval-bias", "Gender bias of rankings: RaB@t and ARaB@t (tc, tf, bool) over a query set");
    a->runs.add(sub);
    a->subset.add(sub);
    sub->add_option("--bias-file", a->bias_files,
                    "per-passage bias file docid<TAB>bias<TAB>female<TAB>male (one per variant; "
                    "repeatable)");
    a->text.add(sub);
    sub->add_option("--cutoffs", a->cutoffs, "cutoffs t, comma-separated (default 5,10)");
    sub->add_option("--variant", a->variant, "tc | tf | bool | all (default all)");
    sub->add_flag("--strict", a->strict, "error on ranked passages without a bias entry");
    a->out.add(sub);
    sub->callback([a]() { run_bias(*a); });
});

const cli::CommandRegistrar kPrfCommand("eval-prf", [](CLI::App& app) {
    auto a = std::make_shared<PrfArgs>();
    auto* sub = app.add_subcommand(
        "eval-prf", "Pairwise ranking fairness: PRF_m, PRF_f and |dA-PRF| (nPRF per query)");
    a->runs.add(sub);
    a->qrels.add(sub);
    sub->add_option("--labels", a->labels, "passage labels docid<TAB>d, d in {-1,0,1}");
    a->text.add(sub);
    a->subset.add(sub);
    sub->add_flag("--per-query", a->per_query, "also print PRF and nPRF per query");
    a->out.add(sub);
    sub->callback([a]() { run_prf(*a); });
});

const cli::CommandRegistrar kLiwcCommand("eval-liwc", [](CLI::App& app) {
    auto a = std::make_shared<LiwcArgs>();
    auto* sub = app.add_subcommand(
        "eval-liwc", "LIWC-style category difference between two query groups' top-k passages");
    sub->add_option("--run", a->run, "run file")->required();
    sub->add_option("--categories", a->categories,
                    "per-passage category vectors: header docid<TAB>cat1..., rows docid<TAB>v1...")
        ->required();
    sub->add_option("--queries", a->queries, "labelled queries qid<TAB>label or qid,text,label")
        ->required();
    sub->add_option("--group-a", a->group_a, "label of group A (default f)");
    sub->add_option("--group-b", a->group_b, "label of group B (default m)");
    sub->add_option("--k", a->k, "top-k passages per query (default 10)")
        ->check(plumb::cli::positive_count());
    a->out.add(sub);
    sub->callback([a]() { run_liwc(*a); });
});

}  // namespace
}  // namespace plumb::eval
