// `plumb eval-bias`, `plumb eval-prf`, `plumb eval-liwc`: gender-bias measures over runs
// (RaB/ARaB, PRF/|ΔA-PRF|, LIWC-style category difference). Thin layers over
// eval/bias_metrics.hpp and eval/gender.hpp; passage text comes from a corpus file or a plumb
// index when the bias values are computed on the fly.
#include <unistd.h>

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
#include "eval/gender.hpp"
#include "eval/qrels.hpp"
#include "eval/run.hpp"
#include "eval/subsets.hpp"
#include "index/corpus.hpp"
#include "index/passage_index.hpp"
#include "plugin/cli/command.hpp"
#include "plugin/cli/output.hpp"
#include "plugin/cli/progress_bar.hpp"
#include "plugin/error.hpp"
#include "plugin/text_io.hpp"

namespace plumb::eval {
namespace {

using cli::write_output;

std::string fmt(double v, int decimals = 4) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
    return buf;
}

std::string pad(const std::string& s, std::size_t w) {
    return s.size() >= w ? s : s + std::string(w - s.size(), ' ');
}

void check_format(const std::string& f) {
    if (f != "text" && f != "json" && f != "csv")
        throw ConfigError("--format must be text, json or csv");
}

std::vector<std::string> run_names(const std::vector<std::string>& runs,
                                   const std::vector<std::string>& names) {
    if (!names.empty()) {
        if (names.size() != runs.size())
            throw ConfigError("--name given " + std::to_string(names.size()) + " times for " +
                              std::to_string(runs.size()) + " runs");
        return names;
    }
    std::vector<std::string> out;
    for (const auto& r : runs) out.push_back(std::filesystem::path(r).filename().string());
    return out;
}

/// Gender-word counts of the passages `needed`, from a corpus file or a plumb index.
std::unordered_map<std::string, GenderCounts> counts_for(
    const std::unordered_set<std::string>& needed, const GenderWordList& words,
    const std::string& corpus, const std::string& corpus_format, const std::string& index_dir) {
    std::unordered_map<std::string, GenderCounts> out;
    if (corpus.empty() == index_dir.empty())
        throw ConfigError("give exactly one of --corpus and --index with --wordlist");
    if (!index_dir.empty()) {
        auto idx = index::PassageIndex::open(index_dir);
        for (const auto& id : needed) {
            auto text = idx->text(id);
            if (!text)
                throw InvalidArgument("passage '" + id + "' of the run is not in the index " +
                                      index_dir);
            out.emplace(id, count_gender_words(*text, words));
        }
        return out;
    }
    index::CorpusReaderOptions o;
    o.format = corpus_format.empty() ? index::detect_corpus_format(corpus)
                                     : index::parse_corpus_format(corpus_format);
    index::CorpusReader reader(corpus, o);
    cli::ProgressBar bar("corpus", "bytes", ::isatty(2) != 0);
    index::Document doc;
    std::uint64_t n = 0;
    while (reader.next(doc)) {
        if (++n % 4096 == 0) bar.update(reader.bytes_read(), reader.size_bytes());
        if (!needed.count(doc.id) || out.count(doc.id)) continue;
        const std::string text = doc.title.empty() ? doc.text : doc.title + " " + doc.text;
        out.emplace(doc.id, count_gender_words(text, words));
    }
    bar.finish();
    for (const auto& id : needed)
        if (!out.count(id))
            throw InvalidArgument("passage '" + id + "' of the run is not in the corpus " + corpus +
                                  " (" + std::to_string(needed.size() - out.size()) +
                                  " passages missing)");
    return out;
}

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
    std::vector<std::string> runs;
    std::vector<std::string> names;
    std::string queries;
    std::string label;
    std::vector<std::string> bias_files;
    std::string wordlist;
    std::string corpus;
    std::string corpus_format;
    std::string index_dir;
    std::string cutoffs = "5,10";
    std::string variant = "all";
    bool strict = false;
    std::string format = "text";
    std::string output;
};

void run_bias(const BiasArgs& a) {
    check_format(a.format);
    if (a.runs.empty()) throw ConfigError("eval-bias: give at least one --run");
    if (a.bias_files.empty() == a.wordlist.empty())
        throw ConfigError("eval-bias: give --bias-file or --wordlist (with --corpus/--index)");
    const auto names = run_names(a.runs, a.names);
    const auto cutoffs = parse_cutoffs(a.cutoffs);
    const std::size_t depth = *std::max_element(cutoffs.begin(), cutoffs.end());
    std::vector<BiasVariant> variants;
    if (a.variant == "all")
        variants = {BiasVariant::Tc, BiasVariant::Tf, BiasVariant::Bool};
    else
        variants = {parse_bias_variant(a.variant)};
    const auto subset =
        a.queries.empty() ? std::vector<std::string>{} : read_query_subset(a.queries, a.label);
    if (!a.queries.empty() && subset.empty())
        throw ConfigError("eval-bias: no query of " + a.queries + " selected" +
                          (a.label.empty() ? "" : " with label '" + a.label + "'"));

    std::vector<std::vector<QueryRanking>> rankings;
    std::vector<std::size_t> absent(a.runs.size());
    for (std::size_t r = 0; r < a.runs.size(); ++r)
        rankings.push_back(
            select(rankings_from_run(read_run(a.runs[r]), depth), subset, absent[r]));

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
        const auto words = GenderWordList::load(a.wordlist);
        std::unordered_set<std::string> needed;
        for (const auto& run : rankings)
            for (const auto& q : run)
                for (const auto& d : q.docids) needed.insert(d);
        const auto counts = counts_for(needed, words, a.corpus, a.corpus_format, a.index_dir);
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
    for (std::size_t r = 0; r < a.runs.size(); ++r) {
        for (auto v : variants) {
            const auto rows = rank_bias(rankings[r], tables.at(static_cast<int>(v)), cutoffs, ro);
            for (const auto& s : rows) {
                missing_total += s.missing;
                text += pad(names[r], 16) + "  " + pad(bias_variant_name(v), 7) + "  " +
                        pad(std::to_string(s.cutoff), 6) + "  " +
                        pad(std::to_string(s.queries), 7) + "  " + pad(fmt(s.rab.bias), 7) + "  " +
                        pad(fmt(s.rab.female), 7) + "  " + pad(fmt(s.rab.male), 7) + "  " +
                        pad(fmt(s.arab.bias), 7) + "  " + pad(fmt(s.arab.female), 7) + "  " +
                        fmt(s.arab.male) + "\n";
                csv += names[r] + "," + bias_variant_name(v) + "," + std::to_string(s.cutoff) +
                       "," + std::to_string(s.queries) + "," + std::to_string(s.empty) + "," +
                       std::to_string(absent[r]) + "," + std::to_string(s.missing) + "," +
                       fmt(s.rab.bias, 10) + "," + fmt(s.rab.female, 10) + "," +
                       fmt(s.rab.male, 10) + "," + fmt(s.arab.bias, 10) + "," +
                       fmt(s.arab.female, 10) + "," + fmt(s.arab.male, 10) + "\n";
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
    cli::write_formatted(a.format, text, csv, json.dump(2) + "\n", a.output);
}

// ------------------------------------------------------------------------------------------
// plumb eval-prf
// ------------------------------------------------------------------------------------------

struct PrfArgs {
    std::vector<std::string> runs;
    std::vector<std::string> names;
    std::string qrels;
    std::string labels;
    std::string wordlist;
    std::string corpus;
    std::string corpus_format;
    std::string index_dir;
    std::string queries;
    std::string label;
    long level = 1;
    bool per_query = false;
    std::string format = "text";
    std::string output;
};

void run_prf(const PrfArgs& a) {
    check_format(a.format);
    if (a.runs.empty()) throw ConfigError("eval-prf: give at least one --run");
    if (a.labels.empty() == a.wordlist.empty())
        throw ConfigError("eval-prf: give --labels or --wordlist (with --corpus/--index)");
    const auto names = run_names(a.runs, a.names);
    const auto qrels = Qrels::load(a.qrels);
    const auto subset =
        a.queries.empty() ? std::vector<std::string>{} : read_query_subset(a.queries, a.label);
    const std::unordered_set<std::string> keep(subset.begin(), subset.end());

    std::vector<std::vector<ScoredRanking>> runs;
    for (const auto& path : a.runs) {
        auto all = scored_rankings_from_run(read_run(path));
        if (!keep.empty())
            std::erase_if(all, [&](const ScoredRanking& q) { return !keep.count(q.qid); });
        runs.push_back(std::move(all));
    }
    RelevanceMap rel;
    for (const auto& run : runs)
        for (const auto& q : run) {
            if (rel.count(q.qid)) continue;
            auto& m = rel[q.qid];
            if (const auto* qq = qrels.find(q.qid))
                for (auto& [d, g] : qq->judgements()) m.emplace(d, static_cast<int>(g));
        }
    std::unordered_map<std::string, int> labels;
    if (!a.labels.empty()) {
        labels = read_bias_labels(a.labels);
    } else {
        const auto words = GenderWordList::load(a.wordlist);
        std::unordered_set<std::string> needed;
        for (const auto& run : runs)
            for (const auto& q : run)
                for (const auto& d : q.docs) needed.insert(d.first);
        for (const auto& [id, c] :
             counts_for(needed, words, a.corpus, a.corpus_format, a.index_dir))
            labels.emplace(id, ibbr_label(c));
    }

    auto opt = [](const std::optional<double>& v) { return v ? fmt(*v) : std::string("-"); };
    auto opt_csv = [](const std::optional<double>& v) { return v ? fmt(*v, 10) : std::string(); };
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
        const auto s = prf(runs[r], rel, labels, static_cast<int>(a.level));
        text += pad(names[r], 16) + "  " + fmt(s.mean_prf_male) + "  " +
                pad("(" + std::to_string(s.queries_male) + ")", 9) + "  " + fmt(s.mean_prf_female) +
                "  " + pad("(" + std::to_string(s.queries_female) + ")", 9) + "  " + opt(s.delta) +
                "\n";
        nlohmann::json j{{"run", names[r]},
                         {"prf_male", s.mean_prf_male},
                         {"queries_male", s.queries_male},
                         {"prf_female", s.mean_prf_female},
                         {"queries_female", s.queries_female},
                         {"delta", opt_json(s.delta)},
                         {"unlabelled", s.unlabelled}};
        if (!a.per_query) {
            csv += names[r] + "," + fmt(s.mean_prf_male, 10) + "," +
                   std::to_string(s.queries_male) + "," + fmt(s.mean_prf_female, 10) + "," +
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
    cli::write_formatted(a.format, text, csv, json.dump(2) + "\n", a.output);
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
    std::string format = "text";
    std::string output;
};

void run_liwc(const LiwcArgs& a) {
    check_format(a.format);
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
        "  " + pad(a.group_a, 10) + "  " + pad(a.group_b, 10) + "  difference\n";
    std::string csv = "category,mean_" + a.group_a + ",mean_" + a.group_b + ",difference\n";
    nlohmann::json json{{"group_a", a.group_a},
                        {"group_b", a.group_b},
                        {"queries_a", d.queries_a},
                        {"queries_b", d.queries_b},
                        {"k", a.k},
                        {"missing", d.missing}};
    for (std::size_t c = 0; c < d.categories.size(); ++c) {
        text += pad(d.categories[c], 16) + "  " + pad(fmt(d.mean_a[c], 6), 10) + "  " +
                pad(fmt(d.mean_b[c], 6), 10) + "  " + fmt(d.difference[c], 6) + "\n";
        csv += d.categories[c] + "," + fmt(d.mean_a[c], 10) + "," + fmt(d.mean_b[c], 10) + "," +
               fmt(d.difference[c], 10) + "\n";
        json["categories"][d.categories[c]] = {
            {"mean_a", d.mean_a[c]}, {"mean_b", d.mean_b[c]}, {"difference", d.difference[c]}};
    }
    cli::write_formatted(a.format, text, csv, json.dump(2) + "\n", a.output);
}

void add_text_source(CLI::App* sub, std::string& wordlist, std::string& corpus,
                     std::string& corpus_format, std::string& index_dir) {
    sub->add_option("--wordlist", wordlist, "gender word list (word,f / word,m lines)");
    sub->add_option("--corpus", corpus, "passage corpus (TSV id<TAB>text or BEIR JSONL)");
    sub->add_option("--corpus-format", corpus_format, "tsv | jsonl (default: by extension)");
    sub->add_option("--index", index_dir, "plumb passage index directory (instead of --corpus)");
}

const cli::CommandRegistrar kBiasCommand("eval-bias", [](CLI::App& app) {
    auto a = std::make_shared<BiasArgs>();
    auto* sub = app.add_subcommand(
        "eval-bias", "Gender bias of rankings: RaB@t and ARaB@t (tc, tf, bool) over a query set");
    sub->add_option("--run", a->runs, "run file (repeatable)")->required();
    sub->add_option("--name", a->names, "display name per run (repeat, in --run order)");
    sub->add_option("--queries", a->queries,
                    "query subset: qid, qid<TAB>label or qid,text,label lines (default: all run "
                    "queries)");
    sub->add_option("--label", a->label, "keep only queries with this label (e.g. n = neutral)");
    sub->add_option("--bias-file", a->bias_files,
                    "per-passage bias file docid<TAB>bias<TAB>female<TAB>male (one per variant; "
                    "repeatable)");
    add_text_source(sub, a->wordlist, a->corpus, a->corpus_format, a->index_dir);
    sub->add_option("--cutoffs", a->cutoffs, "cutoffs t, comma-separated (default 5,10)");
    sub->add_option("--variant", a->variant, "tc | tf | bool | all (default all)");
    sub->add_flag("--strict", a->strict, "error on ranked passages without a bias entry");
    sub->add_option("--format", a->format, "text | json | csv (default text)");
    sub->add_option("--output", a->output, "write to FILE atomically instead of stdout");
    sub->callback([a]() { run_bias(*a); });
});

const cli::CommandRegistrar kPrfCommand("eval-prf", [](CLI::App& app) {
    auto a = std::make_shared<PrfArgs>();
    auto* sub = app.add_subcommand(
        "eval-prf", "Pairwise ranking fairness: PRF_m, PRF_f and |dA-PRF| (nPRF per query)");
    sub->add_option("--run", a->runs, "run file (repeatable)")->required();
    sub->add_option("--name", a->names, "display name per run (repeat, in --run order)");
    sub->add_option("--qrels", a->qrels, "qrels file")->required();
    sub->add_option("--labels", a->labels, "passage labels docid<TAB>d, d in {-1,0,1}");
    add_text_source(sub, a->wordlist, a->corpus, a->corpus_format, a->index_dir);
    sub->add_option("--queries", a->queries, "query subset file (as for eval-bias)");
    sub->add_option("--label", a->label, "keep only queries with this label");
    sub->add_option("-l,--level", a->level, "minimum relevant grade (default 1)");
    sub->add_flag("--per-query", a->per_query, "also print PRF and nPRF per query");
    sub->add_option("--format", a->format, "text | json | csv (default text)");
    sub->add_option("--output", a->output, "write to FILE atomically instead of stdout");
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
    sub->add_option("--k", a->k, "top-k passages per query (default 10)");
    sub->add_option("--format", a->format, "text | json | csv (default text)");
    sub->add_option("--output", a->output, "write to FILE atomically instead of stdout");
    sub->callback([a]() { run_liwc(*a); });
});

}  // namespace
}  // namespace plumb::eval
