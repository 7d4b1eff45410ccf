#include "debias/balance.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "debias/answer_positions.hpp"
#include "debias/judgements.hpp"
#include "debias/plot.hpp"
#include "debias/rotation.hpp"
#include "plugin/error.hpp"
#include "plugin/text_io.hpp"

namespace plumb::debias {
namespace {

std::string fmt_g(double v, const char* spec = "%g") {
    char buf[64];
    std::snprintf(buf, sizeof buf, spec, v);
    return buf;
}

std::vector<double> unit(const std::vector<double>& v) {
    double n = 0;
    for (double x : v) n += x * x;
    n = std::sqrt(n);
    std::vector<double> out(v.size(), 0.0);
    if (n == 0) return out;
    for (std::size_t i = 0; i < v.size(); ++i) out[i] = v[i] / n;
    return out;
}

double dot(const std::vector<double>& a, const std::vector<double>& b) {
    double s = 0;
    for (std::size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
    return s;
}

}  // namespace

std::unordered_map<std::string, char> read_gendered_queries(const std::filesystem::path& path) {
    LineReader reader(path);
    std::unordered_map<std::string, char> out;
    FirstLines first;
    std::string_view line;
    std::vector<std::string_view> f;
    while (reader.next(line)) {
        if (trim(line).empty()) continue;
        split(line, '\t', f);
        if (f.size() != 2) reader.fail("expected 'qid<TAB>f|m|n'");
        auto qid = trim(f[0]);
        auto label = trim(f[1]);
        if (qid.empty()) reader.fail("empty qid");
        if (label != "f" && label != "m" && label != "n")
            reader.fail("label must be f, m or n, got '" + std::string(label) + "'");
        if (label == "n") continue;
        first.add(reader, std::string(qid), "qid");
        out.emplace(std::string(qid), label[0]);
    }
    return out;
}

namespace {

/// The tab-separated fields of `reader`'s next non-blank line, checked as UTF-8 (the files of
/// generated queries and their negatives carry passage text); false at the end of the file.
bool next_text_fields(LineReader& reader, std::vector<std::string_view>& fields) {
    std::string_view line;
    while (reader.next(line)) {
        if (trim(line).empty()) continue;
        if (!is_valid_utf8(line)) reader.fail("invalid UTF-8");
        split(line, '\t', fields);
        return true;
    }
    return false;
}

}  // namespace

std::vector<GeneratedPair> read_generated_pairs(
    const std::filesystem::path& path, const std::function<bool(std::string_view qid)>& keep,
    std::size_t* total) {
    LineReader reader(path);
    std::vector<GeneratedPair> out;
    FirstLines first;
    if (total) *total = 0;
    std::vector<std::string_view> f;
    while (next_text_fields(reader, f)) {
        GeneratedPair p;
        if (f.size() == 3) {
            p = {std::string(trim(f[0])), std::string(f[1]), std::string(trim(f[0])),
                 std::string(f[2])};
        } else if (f.size() == 4) {
            p = {std::string(trim(f[0])), std::string(f[1]), std::string(trim(f[2])),
                 std::string(f[3])};
        } else {
            reader.fail(
                "expected 'qid<TAB>query<TAB>passage' or 'qid<TAB>query<TAB>docid<TAB>"
                "passage', got " +
                std::to_string(f.size()) + " fields");
        }
        if (p.qid.empty() || p.docid.empty()) reader.fail("empty qid or docid");
        if (total) ++*total;
        if (keep && !keep(p.qid)) continue;
        first.add(reader, p.qid, "qid");
        out.push_back(std::move(p));
    }
    return out;
}

std::unordered_map<std::string, std::vector<std::string>> read_negatives(
    const std::filesystem::path& path, const std::function<bool(std::string_view qid)>& keep) {
    LineReader reader(path);
    std::unordered_map<std::string, std::vector<std::string>> out;
    std::vector<std::string_view> f;
    while (next_text_fields(reader, f)) {
        if (f.size() != 2 && f.size() != 3)
            reader.fail("expected 'qid<TAB>docid<TAB>passage' or 'qid<TAB>passage', got " +
                        std::to_string(f.size()) + " fields");
        const auto qid = trim(f[0]);
        const auto passage = f.back();
        if (qid.empty() || trim(passage).empty()) reader.fail("empty qid or passage");
        if (keep && !keep(qid)) continue;
        out[std::string(qid)].emplace_back(passage);
    }
    return out;
}

namespace {

/// Step 1's split: unit φ vectors and the matchable female and male pairs, with the counts.
struct MatchInput {
    MatchResult counts;
    std::vector<std::size_t> fem, mal;
    std::vector<std::vector<double>> u;
};

MatchInput prepare_matching(const std::vector<GeneratedPair>& pairs,
                            const std::vector<char>& gender,
                            const std::vector<std::vector<double>>& phi, const char* what) {
    if (gender.size() != pairs.size() || phi.size() != pairs.size())
        throw InvalidArgument(std::string(what) + ": pairs, gender and phi sizes differ");
    MatchInput in;
    in.u.resize(pairs.size());
    for (std::size_t i = 0; i < pairs.size(); ++i) {
        if (gender[i] != 'f' && gender[i] != 'm') {
            in.counts.neutral_or_unlabelled++;
            continue;
        }
        (gender[i] == 'f' ? in.counts.female_queries : in.counts.male_queries)++;
        in.u[i] = unit(phi[i]);
        bool zero = std::all_of(phi[i].begin(), phi[i].end(), [](double x) { return x == 0; });
        if (zero) {
            in.counts.unmatchable++;
            continue;
        }
        (gender[i] == 'f' ? in.fem : in.mal).push_back(i);
    }
    return in;
}

/// The order of matches (and of one-to-one's greedy): decreasing cosine, then female qid, then
/// male qid. E: anything with cosine, female and male (indices into `pairs`).
template <class E>
bool match_before(const E& a, const E& b, const std::vector<GeneratedPair>& pairs) {
    if (a.cosine != b.cosine) return a.cosine > b.cosine;
    if (pairs[a.female].qid != pairs[b.female].qid)
        return pairs[a.female].qid < pairs[b.female].qid;
    return pairs[a.male].qid < pairs[b.male].qid;
}

void sort_matches(std::vector<Match>& matches, const std::vector<GeneratedPair>& pairs) {
    std::stable_sort(matches.begin(), matches.end(), [&](const Match& a, const Match& b) {
        return match_before(a, b, pairs);
    });
}

}  // namespace

MatchResult match_cross_gender(const std::vector<GeneratedPair>& pairs,
                               const std::vector<char>& gender,
                               const std::vector<std::vector<double>>& phi,
                               const ProgressCallback& progress, const CancelToken* cancel) {
    auto in = prepare_matching(pairs, gender, phi, "match_cross_gender");
    MatchResult res = std::move(in.counts);
    const auto& fem = in.fem;
    const auto& mal = in.mal;
    const auto& u = in.u;
    std::map<std::pair<std::size_t, std::size_t>, Match> found;
    auto best_of = [&](std::size_t i, const std::vector<std::size_t>& others) {
        std::size_t best = others.front();
        double best_cos = -2;
        for (std::size_t j : others) {
            double c = dot(u[i], u[j]);
            if (c > best_cos) best_cos = c, best = j;  // strict: ties keep the earlier query
        }
        return std::pair{best, best_cos};
    };
    const std::uint64_t total = fem.size() + mal.size();
    std::uint64_t done = 0;
    if (!fem.empty() && !mal.empty()) {
        for (std::size_t f : fem) {
            if (cancel && cancel->requested()) throw Error("matching cancelled");
            auto [m, c] = best_of(f, mal);
            auto& match = found[{f, m}];
            match = {f, m, c, true, match.male_to_female};
            if (progress && (++done & 255) == 0) progress(done, total);
        }
        for (std::size_t m : mal) {
            if (cancel && cancel->requested()) throw Error("matching cancelled");
            auto [f, c] = best_of(m, fem);
            auto& match = found[{f, m}];
            match = {f, m, c, match.female_to_male, true};
            if (progress && (++done & 255) == 0) progress(done, total);
        }
    }
    if (progress) progress(total, total);
    for (auto& [key, match] : found) res.matches.push_back(match);
    sort_matches(res.matches, pairs);
    return res;
}

MatchResult match_one_to_one(const std::vector<GeneratedPair>& pairs,
                             const std::vector<char>& gender,
                             const std::vector<std::vector<double>>& phi,
                             const ProgressCallback& progress, const CancelToken* cancel) {
    auto in = prepare_matching(pairs, gender, phi, "match_one_to_one");
    MatchResult res = std::move(in.counts);
    const auto& fem = in.fem;
    const auto& mal = in.mal;
    const auto& u = in.u;
    // Greedy over every female-male edge in one strict order: cosine descending, then the female
    // qid, then the male qid ascending (qids are unique); an edge is taken when both its queries
    // are still free. Equivalently (the order restricted to one query's edges is cosine, then
    // the partner's qid), rounds of mutually best pairs. Without materialising the F x M edges:
    // each female keeps her best kCandidates free males in that order, computed again from the
    // males still free when they are used up; a max-heap holds each female's best remaining edge
    // and is checked lazily (a popped edge whose male was taken meanwhile moves the female to her
    // next candidate), so the popped edge with a free male is the best remaining edge.
    constexpr std::size_t kCandidates = 64;
    struct Edge {
        double cosine;
        std::size_t female, male;
    };
    auto better = [&](const Edge& a, const Edge& b) { return match_before(a, b, pairs); };
    std::vector<char> taken(pairs.size(), 0);
    std::vector<std::vector<Edge>> cand(pairs.size());
    std::vector<std::size_t> next(pairs.size(), 0);
    std::size_t males_free = mal.size();
    // f's best kCandidates edges to free males, best first; false when no male is free.
    auto refill = [&](std::size_t f) {
        auto& c = cand[f];
        c.clear();
        next[f] = 0;
        if (males_free == 0) return false;
        c.reserve(std::min(males_free, kCandidates + 1));
        // A heap under `better` as its "less": its top is the worst edge kept.
        for (std::size_t m : mal) {
            if (taken[m]) continue;
            Edge e{dot(u[f], u[m]), f, m};
            if (c.size() < kCandidates) {
                c.push_back(e);
                std::push_heap(c.begin(), c.end(), better);
            } else if (better(e, c.front())) {
                std::pop_heap(c.begin(), c.end(), better);
                c.back() = e;
                std::push_heap(c.begin(), c.end(), better);
            }
        }
        std::sort(c.begin(), c.end(), better);
        return true;
    };
    auto heap_less = [&](const Edge& a, const Edge& b) { return better(b, a); };  // max-heap
    std::vector<Edge> heap;
    heap.reserve(fem.size());
    const std::uint64_t total = std::min(fem.size(), mal.size());
    std::uint64_t step = 0;
    if (cancel && cancel->requested()) throw Error("matching cancelled");
    for (std::size_t f : fem) {
        if (cancel && (++step & 63) == 0 && cancel->requested()) throw Error("matching cancelled");
        if (refill(f)) heap.push_back(cand[f].front());
    }
    std::make_heap(heap.begin(), heap.end(), heap_less);
    while (!heap.empty() && males_free > 0) {
        if (cancel && (++step & 255) == 0 && cancel->requested())
            throw Error("matching cancelled");
        std::pop_heap(heap.begin(), heap.end(), heap_less);
        const Edge e = heap.back();
        heap.pop_back();
        if (!taken[e.male]) {
            res.matches.push_back({e.female, e.male, e.cosine, true, true});
            taken[e.female] = taken[e.male] = 1;
            --males_free;
            cand[e.female] = {};
            if (progress && (res.matches.size() & 255) == 0) progress(res.matches.size(), total);
            continue;
        }
        // The female's next candidate whose male is free, or a fresh list.
        auto& c = cand[e.female];
        std::size_t& i = next[e.female];
        while (i < c.size() && taken[c[i].male]) ++i;
        if (i == c.size() && !refill(e.female)) continue;
        heap.push_back(c[i]);
        std::push_heap(heap.begin(), heap.end(), heap_less);
    }
    if (progress) progress(total, total);
    sort_matches(res.matches, pairs);
    return res;
}

std::vector<std::size_t> select_augmentation(const MatchResult& result, std::size_t target) {
    std::vector<std::size_t> out;
    std::unordered_set<std::size_t> used;
    for (const auto& m : result.matches) {
        std::size_t add = (used.count(m.female) ? 0 : 1) + (used.count(m.male) ? 0 : 1);
        if (out.size() + add > target) break;
        for (std::size_t i : {m.female, m.male})
            if (used.insert(i).second) out.push_back(i);
        if (out.size() == target) break;
    }
    return out;
}

BalanceReport run_balance(const BalanceOptions& o, const ProgressCallback& progress,
                          const CancelToken* cancel) {
    if (o.ratios.empty()) throw InvalidArgument("at least one ratio is required");
    for (double r : o.ratios)
        if (!(r >= 0 && r <= 10)) throw InvalidArgument("ratio " + fmt_g(r) + " outside [0, 10]");
    if (o.output_dir.empty()) throw InvalidArgument("an output directory is required");
    if (o.train.empty()) throw InvalidArgument("the original training set (--train) is required");

    BalanceReport rep;
    auto dic = LiwcDictionary::load(o.dictionary, o.skip_bad_dictionary_lines);
    rep.dictionary_lines_skipped = dic.skipped_lines().size();
    auto cats = resolve_categories(dic, o.categories);
    for (int id : cats)
        for (const auto& c : dic.categories())
            if (c.id == id) rep.categories.push_back(c.name);

    auto labels = read_gendered_queries(o.query_gender);
    std::size_t total_pairs = 0;
    auto pairs = read_generated_pairs(
        o.pairs, [&](std::string_view qid) { return labels.count(std::string(qid)) > 0; },
        &total_pairs);
    rep.pairs = total_pairs;
    std::vector<char> gender(pairs.size(), 'n');
    std::vector<std::vector<double>> phi(pairs.size());
    for (std::size_t i = 0; i < pairs.size(); ++i) {
        gender[i] = labels.at(pairs[i].qid);
        phi[i] = liwc_phi(pairs[i].passage, dic, cats);
    }
    rep.match = o.one_to_one ? match_one_to_one(pairs, gender, phi, progress, cancel)
                             : match_cross_gender(pairs, gender, phi, progress, cancel);
    rep.match.neutral_or_unlabelled = total_pairs - pairs.size();

    // The training set: count examples and check its shape.
    std::size_t fields_expected = 0;
    {
        LineReader reader(o.train);
        std::string_view line;
        std::vector<std::string_view> f;
        while (reader.next(line)) {
            if (trim(line).empty()) continue;
            split(line, '\t', f);
            if (f.size() != 2 && f.size() != 3)
                reader.fail(
                    "training examples must be 'query<TAB>passage' or "
                    "'query<TAB>pos<TAB>neg', got " +
                    std::to_string(f.size()) + " fields");
            if (fields_expected == 0)
                fields_expected = f.size();
            else if (f.size() != fields_expected)
                reader.fail("mixed 2- and 3-field training lines");
            rep.train_examples++;
        }
    }
    // The generated queries' own negatives (only those of gendered pairs are kept).
    std::unordered_map<std::string, std::vector<std::string>> negatives;
    if (!o.negatives.empty()) {
        if (fields_expected != 3)
            throw InvalidArgument(o.train.string() +
                                  ": --negatives needs a training set of triples "
                                  "(query<TAB>pos<TAB>neg)");
        negatives = read_negatives(
            o.negatives, [&](std::string_view qid) { return labels.count(std::string(qid)) > 0; });
    }
    // Every ratio's selection is checked before any file is written, so that a missing negative
    // never leaves some ratios' training sets behind without the rest and report.json.
    for (double r : o.ratios) {
        const auto target =
            static_cast<std::size_t>(std::llround(r * static_cast<double>(rep.train_examples)));
        const auto chosen = select_augmentation(rep.match, target);
        if (fields_expected == 3 && !o.negatives.empty()) {
            for (auto i : chosen) {
                if (negatives.find(pairs[i].qid) == negatives.end())
                    throw InvalidArgument(o.negatives.string() +
                                          ": no negative for generated query '" + pairs[i].qid +
                                          "'");
            }
        } else if (fields_expected == 3 && !chosen.empty() && pairs.size() < 2) {
            throw InvalidArgument("triples need at least two generated pairs for negatives");
        }
    }
    std::filesystem::create_directories(o.output_dir);

    for (double r : o.ratios) {
        RatioOutput out;
        out.ratio = r;
        out.target =
            static_cast<std::size_t>(std::llround(r * static_cast<double>(rep.train_examples)));
        auto chosen = select_augmentation(rep.match, out.target);
        out.added = chosen.size();
        for (auto i : chosen) (gender[i] == 'f' ? out.added_female : out.added_male)++;
        out.file = o.output_dir / ("train_r" + fmt_g(r) + ".tsv");
        AtomicFile file(out.file);
        {  // the original training set, streamed (blank lines dropped)
            LineReader train(o.train);
            std::string_view line;
            while (train.next(line)) {
                if (trim(line).empty()) continue;
                file.write(line);
                file.write("\n");
            }
        }
        std::mt19937_64 gen(o.seed ^ fnv1a64("balance-negatives") ^ fnv1a64(fmt_g(r)));
        for (auto i : chosen) {
            std::string line = pairs[i].query + '\t' + pairs[i].passage;
            if (fields_expected == 3 && !o.negatives.empty()) {
                auto it = negatives.find(pairs[i].qid);
                if (it == negatives.end())
                    throw InvalidArgument(o.negatives.string() + ": no negative for generated query '" +
                                          pairs[i].qid + "'");
                const auto& ns = it->second;
                line += '\t' + ns[ns.size() == 1 ? 0 : uniform_below(gen, ns.size())];
            } else if (fields_expected == 3) {
                if (pairs.size() < 2)
                    throw InvalidArgument(
                        "triples need at least two generated pairs for negatives");
                std::size_t j = static_cast<std::size_t>(uniform_below(gen, pairs.size() - 1));
                if (j >= i) ++j;  // any other pair
                line += '\t' + pairs[j].passage;
            }
            file.write(line + '\n');
        }
        file.commit();
        rep.outputs.push_back(out);
    }

    // matches.tsv
    {
        AtomicFile file(o.output_dir / "matches.tsv");
        file.write("female_qid\tmale_qid\tcosine\tdirection\n");
        for (const auto& m : rep.match.matches) {
            std::string dir = o.one_to_one                         ? "one-to-one"
                              : m.female_to_male && m.male_to_female ? "both"
                              : m.female_to_male                   ? "f->m"
                                                                   : "m->f";
            file.write(pairs[m.female].qid + '\t' + pairs[m.male].qid + '\t' +
                       fmt_g(m.cosine, "%.6f") + '\t' + dir + '\n');
        }
        file.commit();
    }
    // phi.tsv in eval's category-vector format (one row per docid).
    {
        AtomicFile file(o.output_dir / "phi.tsv");
        std::string header = "docid";
        for (const auto& c : rep.categories) header += '\t' + c;
        file.write(header + '\n');
        std::unordered_set<std::string> written;
        for (std::size_t i = 0; i < pairs.size(); ++i) {
            if (gender[i] == 'n' || !written.insert(pairs[i].docid).second) continue;
            std::string row = pairs[i].docid;
            for (double v : phi[i]) row += '\t' + fmt_g(v, "%.17g");
            file.write(row + '\n');
        }
        file.commit();
    }
    // Report.
    std::vector<double> cosines;
    for (const auto& m : rep.match.matches) cosines.push_back(m.cosine);
    std::sort(cosines.begin(), cosines.end());
    double mean = 0;
    for (double c : cosines) mean += c;
    if (!cosines.empty()) mean /= static_cast<double>(cosines.size());
    auto median = [&]() {
        if (cosines.empty()) return 0.0;
        std::size_t n = cosines.size();
        return n % 2 ? cosines[n / 2] : (cosines[n / 2 - 1] + cosines[n / 2]) / 2;
    }();
    nlohmann::ordered_json j;
    j["pairs"] = rep.pairs;
    j["female_queries"] = rep.match.female_queries;
    j["male_queries"] = rep.match.male_queries;
    j["neutral_or_unlabelled"] = rep.match.neutral_or_unlabelled;
    j["unmatchable_zero_phi"] = rep.match.unmatchable;
    j["categories"] = rep.categories;
    j["dictionary_lines_skipped"] = rep.dictionary_lines_skipped;
    j["matched_pairs"] = rep.match.matches.size();
    j["one_to_one"] = o.one_to_one;
    j["negatives"] = o.negatives.empty() ? std::string("another generated pair's passage")
                                         : o.negatives.filename().string();
    j["cosine"] = {{"mean", mean},
                   {"median", median},
                   {"min", cosines.empty() ? 0.0 : cosines.front()},
                   {"max", cosines.empty() ? 0.0 : cosines.back()}};
    j["phi_distance_mean"] = cosines.empty() ? 0.0 : 1.0 - mean;
    j["train_examples"] = rep.train_examples;
    j["outputs"] = nlohmann::ordered_json::array();
    std::string t = "Balanced relevance judgements (cross-gender matching on LIWC phi)\n";
    t += "generated pairs: " + std::to_string(rep.pairs) + " (female " +
         std::to_string(rep.match.female_queries) + ", male " +
         std::to_string(rep.match.male_queries) + ", neutral/unlabelled " +
         std::to_string(rep.match.neutral_or_unlabelled) + ", unmatchable (phi = 0) " +
         std::to_string(rep.match.unmatchable) + ")\n";
    t += "categories: ";
    for (std::size_t k = 0; k < rep.categories.size(); ++k) t += (k ? "," : "") + rep.categories[k];
    t += std::string("\nmatched pairs (") +
         (o.one_to_one ? "one-to-one, greedy by cosine" : "best match in both directions, "
                                                          "not one-to-one") +
         "): " +
         std::to_string(rep.match.matches.size()) + "\n";
    t += "cosine of matched phi: mean " + fmt_g(mean, "%.4f") + ", median " +
         fmt_g(median, "%.4f") + ", min " + fmt_g(cosines.empty() ? 0 : cosines.front(), "%.4f") +
         ", max " + fmt_g(cosines.empty() ? 0 : cosines.back(), "%.4f") +
         " (phi distance = 1 - cosine)\n";
    t += "training examples: " + std::to_string(rep.train_examples) + "\n";
    if (fields_expected == 3)
        t += "negatives of the added triples: " +
             (o.negatives.empty() ? std::string("another generated pair's passage (random)")
                                  : "the pair's own query's, from " + o.negatives.string()) +
             "\n";
    for (const auto& out : rep.outputs) {
        t += "ratio " + fmt_g(out.ratio) + ": target " + std::to_string(out.target) + ", added " +
             std::to_string(out.added) + " (f " + std::to_string(out.added_female) + ", m " +
             std::to_string(out.added_male) + ")" +
             (out.added < out.target ? " [matched pairs exhausted]" : "") + " -> " +
             out.file.filename().string() + "\n";
        j["outputs"].push_back({{"ratio", out.ratio},
                                {"target", out.target},
                                {"added", out.added},
                                {"added_female", out.added_female},
                                {"added_male", out.added_male},
                                {"file", out.file.filename().string()}});
    }
    {
        AtomicFile f(o.output_dir / "report.json");
        f.write(j.dump(2) + "\n");
        f.commit();
    }
    {
        AtomicFile f(o.output_dir / "report.txt");
        f.write(t);
        f.commit();
    }
    if (!cosines.empty()) {
        BarChart chart;
        chart.title = "Cosine similarity of matched phi vectors";
        chart.x_label = "cosine (bin lower edge)";
        chart.y_label = "matched pairs";
        std::vector<double> counts(10, 0.0);
        for (double c : cosines) counts[position_bin(std::clamp(c, 0.0, 1.0), 10)] += 1;
        for (int b = 0; b < 10; ++b) chart.categories.push_back(fmt_g(b / 10.0, "%.1f"));
        chart.series.push_back({"matched pairs", counts, {}});
        write_bar_chart(chart, o.output_dir / "cosine");
    }
    return rep;
}

}  // namespace plumb::debias
