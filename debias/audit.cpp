#include "debias/audit.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <unordered_map>
#include <unordered_set>

#include "debias/complexity.hpp"
#include "debias/plot.hpp"
#include "eval/bias_metrics.hpp"
#include "eval/distribution.hpp"
#include "eval/evaluator.hpp"
#include "eval/run.hpp"
#include "index/corpus.hpp"
#include "plugin/atomic_directory.hpp"
#include "plugin/error.hpp"
#include "plugin/text_io.hpp"

namespace plumb::debias {
namespace {

using nlohmann::json;

constexpr const char* kAxes[] = {"position", "gender", "complexity", "survivorship"};

std::string str(const std::filesystem::path& p) { return p.string(); }

/// Bucket display order: easy, medium, hard, then the others by name.
void sort_buckets(std::vector<std::string>& names) {
    std::sort(names.begin(), names.end(), [](const auto& x, const auto& y) {
        auto rank = [](const std::string& s) {
            return s == "easy" ? 0 : s == "medium" ? 1 : s == "hard" ? 2 : 3;
        };
        return std::make_pair(rank(x), x) < std::make_pair(rank(y), y);
    });
}

/// Per-query values of a column, qid -> value.
std::unordered_map<std::string, double> per_query(const eval::EvalResult& r,
                                                  const std::string& column) {
    std::unordered_map<std::string, double> out;
    const long c = r.column_index(column);
    if (c < 0) throw InvalidArgument("audit: column " + column + " was not computed");
    for (const auto& q : r.queries) out[q.qid] = q.values[static_cast<std::size_t>(c)];
    return out;
}

BucketStats stats(std::string bucket, const std::vector<double>& values) {
    const auto d = eval::describe(values);
    return {std::move(bucket), d.n, d.mean, d.sd, d.cv};
}

}  // namespace

const AxisStatus& AuditReport::axis(const std::string& name) const {
    for (const auto& a : axes)
        if (a.axis == name) return a;
    throw InvalidArgument("audit: no axis '" + name + "'");
}

std::vector<std::pair<std::string, std::string>> read_complexity_buckets(
    const std::filesystem::path& path) {
    LineReader in(path);
    std::string_view line;
    std::vector<std::string_view> f;
    long qid_col = -1, bucket_col = -1;
    std::size_t width = 0;
    std::vector<std::pair<std::string, std::string>> out;
    std::unordered_set<std::string> seen;
    while (in.next(line)) {
        if (trim(line).empty() || line.front() == '#') continue;
        split(line, '\t', f);
        if (qid_col < 0) {
            for (std::size_t i = 0; i < f.size(); ++i) {
                if (trim(f[i]) == "qid") qid_col = static_cast<long>(i);
                if (trim(f[i]) == "bucket") bucket_col = static_cast<long>(i);
            }
            if (qid_col < 0 || bucket_col < 0)
                in.fail(
                    "the header must name a 'qid' and a 'bucket' column (the per-query TSV "
                    "of plumb debias complexity)");
            width = f.size();
            continue;
        }
        if (f.size() != width)
            in.fail("expected " + std::to_string(width) + " fields, found " +
                    std::to_string(f.size()));
        std::string qid(trim(f[static_cast<std::size_t>(qid_col)]));
        std::string bucket(trim(f[static_cast<std::size_t>(bucket_col)]));
        if (qid.empty() || bucket.empty()) in.fail("empty qid or bucket");
        if (!seen.insert(qid).second) in.fail("query '" + qid + "' is listed twice");
        out.emplace_back(std::move(qid), std::move(bucket));
    }
    if (qid_col < 0) throw ParseError(str(path), 0, "empty file (a header with qid and bucket)");
    return out;
}

AuditReport run_audit(const AuditInputs& in, const AuditOptions& options,
                      const ProgressCallback& progress) {
    if (in.runs.empty()) throw InvalidArgument("audit: no run given");
    if (options.cutoff == 0) throw InvalidArgument("audit: the cutoff must be at least 1");
    AuditReport report;
    report.options = options;
    {
        std::unordered_set<std::string> names;
        for (const auto& r : in.runs) {
            if (r.name.empty()) throw InvalidArgument("audit: a run has an empty name");
            if (!names.insert(r.name).second)
                throw InvalidArgument("audit: two runs are named '" + r.name + "'");
            if (r.run.empty()) throw InvalidArgument("audit: run '" + r.name + "' has no file");
            report.runs.push_back(r.name);
        }
    }
    for (const char* a : kAxes) report.axes.push_back({a, false, {}});
    auto status = [&](const char* a) -> AxisStatus& {
        for (auto& s : report.axes)
            if (s.axis == a) return s;
        throw InvalidArgument(a);
    };
    const std::size_t steps = in.runs.size() + 4;
    std::size_t step = 0;
    auto tick = [&] {
        if (progress) progress(++step, steps);
    };

    // The runs and their effectiveness on the test set.
    const std::string t = std::to_string(options.cutoff);
    const std::string ndcg = "ndcg_cut_" + t, mrr = "mrr_cut_" + t;
    const auto measures = eval::MeasureSet::parse({"ndcg_cut." + t, "mrr_cut." + t});
    eval::EvalOptions eval_options;
    eval_options.relevance_level = options.relevance_level;
    std::shared_ptr<const eval::Qrels> qrels;
    if (!in.qrels.empty()) qrels = std::make_shared<const eval::Qrels>(eval::Qrels::load(in.qrels));
    std::vector<eval::Run> runs;
    std::vector<eval::EvalResult> results;
    for (const auto& r : in.runs) {
        runs.push_back(eval::read_run(r.run));
        if (qrels)
            results.push_back(
                eval::Evaluator(qrels, measures, eval_options).evaluate_run(runs.back()));
        tick();
    }

    // ---- position ----------------------------------------------------------------------
    {
        auto& st = status("position");
        report.position.resize(in.runs.size());
        std::vector<eval::PositionRow> rows;
        std::vector<std::size_t> row_run;
        bool any = false;
        std::shared_ptr<const eval::Qrels> rotated_qrels = qrels;
        if (!in.rotated_qrels.empty())
            rotated_qrels =
                std::make_shared<const eval::Qrels>(eval::Qrels::load(in.rotated_qrels));
        for (std::size_t i = 0; i < in.runs.size(); ++i) {
            const auto& r = in.runs[i];
            if (!r.mats.empty()) {
                report.position[i].mats = eval::read_mats_json(r.mats);
                any = true;
            } else if (r.mats_value) {
                if (!std::isnan(*r.mats_value)) report.position[i].mats = r.mats_value;
                any = true;
            } else {
                st.missing.push_back(
                    "MATS report of run " + r.name +
                    " (--mats NAME,FILE.json from plumb debias mats, or --mats-model "
                    "NAME,MODEL with --mats-corpus)");
            }
            if (r.rotated_run.empty()) {
                st.missing.push_back("run of " + r.name +
                                     " on the rotated test set (--rotated-run NAME,RUN)");
            } else if (!qrels) {
                st.missing.push_back("qrels (--qrels) for the rotated run of " + r.name);
            } else {
                const eval::Evaluator deb(rotated_qrels, measures, eval_options);
                rows.push_back(
                    {r.name, "run", results[i], deb.evaluate_run(eval::read_run(r.rotated_run))});
                row_run.push_back(i);
                any = true;
            }
        }
        if (!rows.empty()) {
            eval::PositionTableOptions po;
            po.columns = {ndcg, mrr};
            po.labels = {"nDCG@" + t, "MRR@" + t};
            const auto table = eval::build_position_table(rows, po);
            for (std::size_t j = 0; j < table.rows.size(); ++j) {
                auto& p = report.position[row_run[j]];
                p.has_delta = true;
                p.paired_queries = table.rows[j].num_queries;
                p.cells = table.rows[j].cells;
            }
        }
        st.computed = any;
        tick();
    }

    // ---- gender ------------------------------------------------------------------------
    {
        auto& st = status("gender");
        const bool text = !in.words.empty() && in.documents;
        if (!in.words.empty() && !in.documents)
            st.missing.push_back("passage text (--corpus or --index) for --words");
        if (in.bias_file.empty() && !text) {
            if (in.words.empty())
                st.missing.push_back(
                    "passage bias: --bias-file, or --words with passage text (--corpus or "
                    "--index)");
        } else {
            // Docids whose bias or label is needed: every ranked passage within the cutoff (RaB)
            // and every candidate (PRF).
            std::vector<std::string> docids;
            {
                std::unordered_set<std::string> seen;
                for (const auto& run : runs)
                    for (const auto& q : run.queries)
                        for (const auto& d : q.docs)
                            if (std::string id(q.docid(d)); seen.insert(id).second)
                                docids.push_back(std::move(id));
            }
            std::unordered_map<std::string, eval::GenderCounts> counts;
            std::optional<eval::GenderWordList> words;
            if (text) {
                words = eval::GenderWordList::load(in.words);
                counts = eval::gender_counts(docids, *in.documents, *words, {}, nullptr,
                                             in.documents_name);
            }
            eval::BiasTable table;
            if (!in.bias_file.empty()) {
                table = eval::read_bias_file(in.bias_file, options.variant);
            } else {
                for (const auto& [id, c] : counts)
                    table.emplace(id, eval::passage_magnitude(c, options.variant));
            }
            std::unordered_map<std::string, int> labels;
            if (!in.passage_labels.empty()) {
                labels = eval::read_bias_labels(in.passage_labels);
            } else if (text) {
                for (const auto& [id, c] : counts) labels.emplace(id, eval::ibbr_label(c));
            }
            const bool prf = qrels && !labels.empty();
            if (!qrels) st.missing.push_back("|ΔA-PRF|: qrels (--qrels)");
            if (labels.empty())
                st.missing.push_back(
                    "|ΔA-PRF|: passage labels (--labels, or --words with passage text)");
            std::optional<std::unordered_set<std::string>> neutral;
            if (!in.query_labels.empty()) {
                const auto qids = eval::read_query_subset(in.query_labels, options.neutral_label);
                neutral.emplace(qids.begin(), qids.end());
                report.gender_query_labels = true;
                report.gender_neutral_queries = neutral->size();
            }
            std::vector<eval::BiasRow> rows;
            for (std::size_t i = 0; i < runs.size(); ++i) {
                eval::BiasRow row;
                row.name = in.runs[i].name;
                row.rankings = eval::rankings_from_run(runs[i], options.cutoff);
                if (neutral)
                    std::erase_if(row.rankings, [&](const eval::QueryRanking& q) {
                        return !neutral->count(q.qid);
                    });
                if (prf) row.scored = eval::scored_rankings_from_run(runs[i]);
                rows.push_back(std::move(row));
            }
            eval::BiasTableOptions bo;
            bo.cutoff = options.cutoff;
            bo.variant = eval::bias_variant_name(options.variant);
            bo.min_relevance = options.relevance_level;
            const eval::Qrels none;
            const auto bias = eval::build_bias_table(rows, table, prf ? labels : decltype(labels){},
                                                     qrels ? *qrels : none, bo);
            for (const auto& r : bias.rows) {
                GenderAudit g;
                g.queries = r.queries;
                g.rab = r.rab;
                g.arab = r.arab;
                g.abs_rab = r.abs_rab;
                g.delta_prf = r.delta_prf;
                g.letter = r.letter;
                g.marks_rab = r.marks_rab;
                g.marks_arab = r.marks_arab;
                g.marks_abs_rab = r.marks_abs_rab;
                report.gender.push_back(std::move(g));
            }
            st.computed = true;
        }
        if (in.query_labels.empty())
            st.missing.push_back(
                "query gender labels (--query-labels): RaB is over all queries, not only the "
                "neutral ones");
        tick();
    }

    // ---- linguistic complexity ---------------------------------------------------------
    {
        auto& st = status("complexity");
        if (in.topics.empty() && in.complexity.empty())
            st.missing.push_back(
                "queries: --topics (or --complexity, the TSV of plumb debias "
                "complexity)");
        if (!qrels) st.missing.push_back("qrels (--qrels)");
        if ((!in.topics.empty() || !in.complexity.empty()) && qrels) {
            std::vector<std::pair<std::string, std::string>> buckets;
            if (!in.complexity.empty()) {
                buckets = read_complexity_buckets(in.complexity);
            } else {
                index::TopicReadOptions to;
                to.fields = index::parse_topic_fields(in.topic_field);
                const auto queries = index::read_topics(in.topics, to);
                ComplexityOptions co;
                co.buckets = options.buckets;
                const ComplexityAnalyzer analyzer(in.wordnet, co);
                for (const auto& q : analyzer.analyze_all(queries))
                    buckets.emplace_back(q.qid, q.bucket);
            }
            std::unordered_map<std::string, std::string> bucket_of(buckets.begin(), buckets.end());
            std::vector<std::string> names;
            for (const auto& [q, b] : buckets)
                if (std::find(names.begin(), names.end(), b) == names.end()) names.push_back(b);
            sort_buckets(names);
            for (const auto& result : results) {
                std::vector<double> all;
                std::map<std::string, std::vector<double>> per;
                const long c = result.column_index(ndcg);
                for (const auto& q : result.queries) {
                    auto it = bucket_of.find(q.qid);
                    if (it == bucket_of.end()) continue;  // a judged query without a bucket
                    const double v = q.values[static_cast<std::size_t>(c)];
                    all.push_back(v);
                    per[it->second].push_back(v);
                }
                std::vector<BucketStats> row{stats("all", all)};
                for (const auto& b : names) row.push_back(stats(b, per[b]));
                report.complexity.push_back(std::move(row));
            }
            st.computed = true;
        }
        tick();
    }

    // ---- survivorship ------------------------------------------------------------------
    {
        auto& st = status("survivorship");
        if (in.shown_ranks.empty())
            st.missing.push_back(
                "shown rankings (--shown-ranks qid<TAB>rank<TAB>docid<TAB>"
                "is_selected)");
        if (!qrels) st.missing.push_back("qrels (--qrels)");
        if (!in.shown_ranks.empty() && qrels) {
            auto shown = eval::read_shown_ranks(in.shown_ranks);
            // "All" = every judged query (FORMULAS.md): a shown-rankings file that also covers
            // other splits' queries keeps only those in the qrels.
            std::erase_if(shown.queries,
                          [&](const eval::ShownQuery& q) { return !qrels->find(q.qid); });
            std::vector<std::unordered_map<std::string, double>> rr;
            for (const auto& r : results) rr.push_back(per_query(r, mrr));
            report.survivorship = eval::survivorship_table(shown, rr, options.max_k);
            if (!in.query_types.empty()) {
                std::unordered_map<std::string, std::string> types;
                for (auto& [q, type] : eval::read_query_attributes(in.query_types).rows)
                    types.emplace(std::move(q), std::move(type));
                report.unanswered = eval::unanswered_by_type(shown, types);
            }
            st.computed = true;
        }
        tick();
    }
    return report;
}

// ---- rendering ---------------------------------------------------------------------------

namespace {

std::string num(double v, int decimals = 4) { return fmt::format("{:.{}f}", v, decimals); }
std::string num(const std::optional<double>& v, int decimals = 4) {
    return v ? num(*v, decimals) : "-";
}
std::string percent(const eval::PositionCell& c) {
    if (!c.delta) return "-";
    return fmt::format("{:+.1f} %{}", *c.delta * 100.0, c.delta_significant ? " †" : "");
}
json opt(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }

std::string row(const std::vector<std::string>& cells) {
    std::string out = "|";
    for (const auto& c : cells) {
        std::string e;
        for (char ch : c) e += ch == '|' ? std::string("\\|") : std::string(1, ch);
        out += " " + e + " |";
    }
    return out + "\n";
}

std::string header(const std::vector<std::string>& cells) {
    std::string out = row(cells) + "|";
    for (std::size_t i = 0; i < cells.size(); ++i) out += i == 0 ? "---|" : "---:|";
    return out + "\n";
}

std::string missing_list(const AxisStatus& a) {
    std::string out;
    for (const auto& m : a.missing) out += "- missing: " + m + "\n";
    return out;
}

}  // namespace

std::string audit_markdown(const AuditReport& r) {
    const std::string t = std::to_string(r.options.cutoff);
    const char* variant = eval::bias_variant_name(r.options.variant);
    std::string md = "# Bias audit\n\n";
    md += "Runs: ";
    for (std::size_t i = 0; i < r.runs.size(); ++i) md += (i ? ", " : "") + r.runs[i];
    md += ". Cutoff " + t + ".\n\n";

    md += "| axis | status |\n|---|---|\n";
    for (const auto& a : r.axes) {
        std::string why;
        for (const auto& m : a.missing) why += (why.empty() ? "" : "; ") + m;
        md += row({a.axis,
                   a.computed ? (a.missing.empty() ? "computed" : "computed (missing: " + why + ")")
                              : "skipped (missing: " + why + ")"});
    }

    // Side by side: one headline figure per axis and run.
    md += "\n## All axes side by side\n\n";
    md += header({"run", "MATS", "Δ nDCG@" + t, "|RaB@" + t + "|", "|ΔA-PRF|", "c_v nDCG@" + t,
                  "MRR@" + t + " S_1", "MRR@" + t + " All"});
    for (std::size_t i = 0; i < r.runs.size(); ++i) {
        std::vector<std::string> c{r.runs[i]};
        const bool pos = r.axis("position").computed;
        c.push_back(pos ? num(r.position[i].mats) : "skipped");
        c.push_back(!pos                      ? "skipped"
                    : r.position[i].has_delta ? percent(r.position[i].cells[0])
                                              : "-");
        const bool gen = r.axis("gender").computed;
        c.push_back(!gen ? "skipped" : r.gender[i].queries == 0 ? "-" : num(r.gender[i].abs_rab));
        c.push_back(gen ? num(r.gender[i].delta_prf) : "skipped");
        c.push_back(r.axis("complexity").computed ? num(r.complexity[i][0].cv) : "skipped");
        if (r.axis("survivorship").computed) {
            const auto s1 = std::find_if(r.survivorship.begin(), r.survivorship.end(),
                                         [](const eval::SubsetRow& s) { return s.k == 1; });
            c.push_back(s1 == r.survivorship.end() ? "-" : num(s1->means[i]));
            c.push_back(num(r.survivorship.front().means[i]));
        } else {
            c.insert(c.end(), {"skipped", "skipped"});
        }
        md += row(c);
    }

    md += "\n## Position (paper 000)\n\n";
    if (const auto& a = r.axis("position"); a.computed) {
        md += "MATS of each run's model (lower = less position bias); nDCG@" + t + " and MRR@" + t +
              " on the original (Orig.) and rotated (Deb.) test sets, Δ = (Deb. − Orig.) / "
              "Deb. over the queries judged in both († Orig. vs Deb. significant).\n\n";
        md += header({"run", "MATS", "queries", "nDCG@" + t + " Orig.", "nDCG@" + t + " Deb.",
                      "Δ nDCG@" + t, "MRR@" + t + " Orig.", "MRR@" + t + " Deb.", "Δ MRR@" + t});
        for (std::size_t i = 0; i < r.runs.size(); ++i) {
            const auto& p = r.position[i];
            std::vector<std::string> c{r.runs[i], num(p.mats)};
            if (p.has_delta) {
                c.push_back(std::to_string(p.paired_queries));
                for (const auto& cell : p.cells)
                    c.insert(c.end(), {num(cell.original), num(cell.debiased), percent(cell)});
            } else {
                c.insert(c.end(), 7, "-");
            }
            md += row(c);
        }
        md += "\n" + missing_list(a);
    } else {
        md += "Skipped.\n\n" + missing_list(a);
    }

    md += "\n## Gender (papers 001, 004)\n\n";
    if (const auto& a = r.axis("gender"); a.computed) {
        md += std::string("RaB@") + t + " and ARaB@" + t + " (variant " + variant +
              ", male − female: positive leans male) and mean |RaB@" + t + "| over " +
              (r.gender_query_labels ? std::string("the run's queries labelled gender-neutral")
                                     : std::string("all queries")) +
              "; |ΔA-PRF| over all judged queries. With two or more runs, a value carries the "
              "letters of the runs it is significantly less biased than.\n\n";
        md += header({"run", "queries", "RaB@" + t, "ARaB@" + t, "|RaB@" + t + "|", "|ΔA-PRF|"});
        for (std::size_t i = 0; i < r.runs.size(); ++i) {
            const auto& g = r.gender[i];
            const std::string name =
                r.runs[i] + (r.runs.size() > 1 ? " (" + g.letter + ")" : std::string());
            if (g.queries == 0)  // no (neutral) query: RaB is undefined
                md += row({name, "0", "-", "-", "-", num(g.delta_prf)});
            else
                md += row({name, std::to_string(g.queries), num(g.rab.bias) + g.marks_rab,
                           num(g.arab.bias) + g.marks_arab, num(g.abs_rab) + g.marks_abs_rab,
                           num(g.delta_prf)});
        }
        md += "\n" + missing_list(a);
    } else {
        md += "Skipped.\n\n" + missing_list(a);
    }

    md += "\n## Linguistic complexity (paper 003)\n\n";
    if (const auto& a = r.axis("complexity"); a.computed) {
        md += "μ, σ (population) and c_v = σ/μ of per-query nDCG@" + t +
              ", over all judged queries with a complexity bucket and per bucket.\n\n";
        md += header({"run", "bucket", "queries", "μ", "σ", "c_v"});
        for (std::size_t i = 0; i < r.runs.size(); ++i)
            for (const auto& b : r.complexity[i])
                md += row(
                    {r.runs[i], b.bucket, std::to_string(b.n), num(b.mean), num(b.sd), num(b.cv)});
        md += "\n" + missing_list(a);
    } else {
        md += "Skipped.\n\n" + missing_list(a);
    }

    md += "\n## Survivorship (paper 002)\n\n";
    if (const auto& a = r.axis("survivorship"); a.computed) {
        md += "MRR@" + t +
              " on S_k (judged queries with a passage marked relevant within the first k shown) "
              "and on All (every judged query of the shown rankings; unanswered ones and those "
              "the run misses count 0).\n\n";
        std::vector<std::string> h{"subset", "queries"};
        h.insert(h.end(), r.runs.begin(), r.runs.end());
        md += header(h);
        for (const auto& s : r.survivorship) {
            std::vector<std::string> c{s.k == 0 ? "All" : "S_" + std::to_string(s.k),
                                       std::to_string(s.num_queries)};
            for (double m : s.means) c.push_back(num(m));
            md += row(c);
        }
        if (!r.unanswered.empty()) {
            md +=
                "\nUnanswered judged queries (no shown passage marked relevant) by query "
                "type.\n\n";
            md += header({"query type", "queries", "unanswered", "share"});
            for (const auto& u : r.unanswered)
                md += row(
                    {u.type, std::to_string(u.total), std::to_string(u.unanswered), num(u.share)});
        }
        md += "\n" + missing_list(a);
    } else {
        md += "Skipped.\n\n" + missing_list(a);
    }
    return md;
}

nlohmann::json audit_json(const AuditReport& r) {
    json j;
    j["cutoff"] = r.options.cutoff;
    j["variant"] = eval::bias_variant_name(r.options.variant);
    j["runs"] = r.runs;
    j["axes"] = json::array();
    for (const auto& a : r.axes)
        j["axes"].push_back({{"axis", a.axis}, {"computed", a.computed}, {"missing", a.missing}});
    if (r.axis("position").computed) {
        json rows = json::array();
        for (std::size_t i = 0; i < r.runs.size(); ++i) {
            const auto& p = r.position[i];
            json row = {{"run", r.runs[i]}, {"mats", opt(p.mats)}};
            if (p.has_delta) {
                row["queries"] = p.paired_queries;
                const char* names[] = {"ndcg", "mrr"};
                for (std::size_t c = 0; c < p.cells.size() && c < 2; ++c)
                    row[names[c]] = {{"original", p.cells[c].original},
                                     {"rotated", p.cells[c].debiased},
                                     {"delta", opt(p.cells[c].delta)},
                                     {"significant", p.cells[c].delta_significant}};
            }
            rows.push_back(std::move(row));
        }
        j["position"] = std::move(rows);
    }
    if (r.axis("gender").computed) {
        json rows = json::array();
        for (std::size_t i = 0; i < r.runs.size(); ++i) {
            const auto& g = r.gender[i];
            auto defined = [&](double v) { return g.queries ? json(v) : json(nullptr); };
            rows.push_back({{"run", r.runs[i]},
                            {"queries", g.queries},
                            {"rab", defined(g.rab.bias)},
                            {"rab_female", defined(g.rab.female)},
                            {"rab_male", defined(g.rab.male)},
                            {"arab", defined(g.arab.bias)},
                            {"abs_rab", defined(g.abs_rab)},
                            {"delta_prf", opt(g.delta_prf)}});
        }
        j["gender"] = {{"query_labels", r.gender_query_labels},
                       {"neutral_queries", r.gender_neutral_queries},
                       {"rows", std::move(rows)}};
    }
    if (r.axis("complexity").computed) {
        json rows = json::array();
        for (std::size_t i = 0; i < r.runs.size(); ++i) {
            json buckets = json::array();
            for (const auto& b : r.complexity[i])
                buckets.push_back({{"bucket", b.bucket},
                                   {"n", b.n},
                                   {"mean", b.mean},
                                   {"sd", b.sd},
                                   {"cv", opt(b.cv)}});
            rows.push_back({{"run", r.runs[i]}, {"buckets", std::move(buckets)}});
        }
        j["complexity"] = std::move(rows);
    }
    if (r.axis("survivorship").computed) {
        json rows = json::array();
        for (const auto& s : r.survivorship)
            rows.push_back({{"subset", s.k == 0 ? "All" : "S_" + std::to_string(s.k)},
                            {"k", s.k},
                            {"queries", s.num_queries},
                            {"mrr", s.means}});
        j["survivorship"] = std::move(rows);
        json types = json::array();
        for (const auto& u : r.unanswered)
            types.push_back({{"type", u.type},
                             {"queries", u.total},
                             {"unanswered", u.unanswered},
                             {"share", u.share}});
        j["unanswered"] = std::move(types);
    }
    return j;
}

void write_audit(const AuditReport& r, const std::filesystem::path& dir) {
    AtomicDirectory out(dir);
    const std::string t = std::to_string(r.options.cutoff);
    {
        AtomicFile f(out.path() / "audit.md");
        f.write(audit_markdown(r));
        f.commit();
    }
    {
        AtomicFile f(out.path() / "audit.json");
        f.write(audit_json(r).dump(2) + "\n");
        f.commit();
    }
    if (r.axis("position").computed) {
        BarChart c;
        c.title = "Position: nDCG@" + t + " on the original and rotated test sets";
        c.x_label = "run";
        c.y_label = "nDCG@" + t;
        PlotSeries orig{"Orig.", {}, {}}, deb{"Deb. (rotated)", {}, {}};
        for (std::size_t i = 0; i < r.runs.size(); ++i) {
            if (!r.position[i].has_delta) continue;
            c.categories.push_back(r.runs[i]);
            orig.values.push_back(r.position[i].cells[0].original);
            deb.values.push_back(r.position[i].cells[0].debiased);
        }
        c.series = {orig, deb};
        if (c.categories.empty()) {  // MATS only
            c.title = "Position: MATS of each run's model";
            c.y_label = "MATS";
            PlotSeries mats{"MATS", {}, {}};
            for (std::size_t i = 0; i < r.runs.size(); ++i) {
                c.categories.push_back(r.runs[i]);
                mats.values.push_back(r.position[i].mats.value_or(NAN));
            }
            c.series = {mats};
        }
        write_bar_chart(c, out.path() / "position");
    }
    if (r.axis("gender").computed) {
        BarChart c;
        c.title = "Gender: RaB@" + t + ", ARaB@" + t + " and |RaB@" + t + "|";
        c.x_label = "run";
        c.y_label = "bias (male - female)";
        c.categories = r.runs;
        PlotSeries rab{"RaB@" + t, {}, {}}, arab{"ARaB@" + t, {}, {}},
            abs{"|RaB@" + t + "|", {}, {}};
        for (const auto& g : r.gender) {
            rab.values.push_back(g.rab.bias);
            arab.values.push_back(g.arab.bias);
            abs.values.push_back(g.abs_rab);
        }
        c.series = {rab, arab, abs};
        write_bar_chart(c, out.path() / "gender");
    }
    if (r.axis("complexity").computed) {
        BarChart c;
        c.title = "Linguistic complexity: mean nDCG@" + t + " per bucket";
        c.x_label = "complexity bucket";
        c.y_label = "nDCG@" + t;
        for (const auto& b : r.complexity.front()) c.categories.push_back(b.bucket);
        for (std::size_t i = 0; i < r.runs.size(); ++i) {
            PlotSeries s{r.runs[i], {}, {}};
            for (const auto& b : r.complexity[i]) s.values.push_back(b.mean);
            c.series.push_back(std::move(s));
        }
        write_bar_chart(c, out.path() / "complexity");
    }
    if (r.axis("survivorship").computed) {
        LineChart c;
        c.title = "Survivorship: MRR@" + t + " on S_k";
        c.x_label = "k (relevant passage shown within the first k)";
        c.y_label = "MRR@" + t;
        std::vector<const eval::SubsetRow*> rows;
        for (const auto& s : r.survivorship)
            if (s.k > 0) rows.push_back(&s);
        std::sort(rows.begin(), rows.end(), [](auto* a, auto* b) { return a->k < b->k; });
        for (const auto* s : rows) c.x.push_back(s->k);
        for (std::size_t i = 0; i < r.runs.size(); ++i) {
            PlotSeries s{r.runs[i], {}, {}};
            for (const auto* row : rows) s.values.push_back(row->means[i]);
            c.series.push_back(std::move(s));
        }
        if (!c.x.empty()) write_line_chart(c, out.path() / "survivorship");
    }
    out.commit();
}

}  // namespace plumb::debias
