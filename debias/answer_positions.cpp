#include "debias/answer_positions.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <unordered_map>

#include "debias/judgements.hpp"
#include "debias/plot.hpp"
#include "debias/rotation.hpp"
#include "index/corpus.hpp"
#include "plugin/error.hpp"
#include "plugin/json.hpp"
#include "plugin/text_io.hpp"

namespace plumb::debias {
namespace {

char ascii_lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

bool iequal(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (ascii_lower(a[i]) != ascii_lower(b[i])) return false;
    return true;
}

bool is_json_path(const std::filesystem::path& p) { return p.extension() == ".json"; }

struct TsvAnswer {
    std::string qid;
    std::string text;
};

/// With strip_punctuation: trims leading/trailing ASCII punctuation of each token in place
/// (tokens are kept, possibly empty, so that n and token indices stay those of the whitespace
/// tokenisation that rotation uses).
void normalise(std::vector<std::string_view>& tokens, bool strip) {
    if (!strip) return;
    auto punct = [](char c) {
        auto u = static_cast<unsigned char>(c);
        return u < 128 && std::ispunct(u);
    };
    for (auto& t : tokens) {
        while (!t.empty() && punct(t.front())) t.remove_prefix(1);
        while (!t.empty() && punct(t.back())) t.remove_suffix(1);
    }
}

void record(PositionHistogram& h, std::size_t start, std::size_t n, std::size_t bins) {
    h.counts[position_bin(static_cast<double>(start) / static_cast<double>(n), bins)]++;
    h.found++;
}

void audit_squad(const AnswerPositionOptions& o, AnswerPositionReport& rep) {
    const nlohmann::json root = read_json_file(o.answers);
    if (!root.is_object() || !root.contains("data") || !root["data"].is_array())
        throw ParseError(o.answers.string(), 0, "SQuAD JSON needs a top-level 'data' array");
    if (o.rotation_seed) {
        rep.after.emplace();
        rep.after->counts.assign(o.bins, 0);
        rep.after_method = "seed";
    }
    std::vector<std::string_view> tokens;
    for (const auto& article : root["data"]) {
        if (!article.contains("paragraphs")) continue;
        for (const auto& para : article["paragraphs"]) {
            if (!para.contains("context") || !para["context"].is_string())
                throw ParseError(o.answers.string(), 0, "paragraph without a 'context' string");
            const std::string& context = para["context"].get_ref<const std::string&>();
            split_ws(context, tokens);
            std::size_t n = tokens.size();
            std::size_t r = o.rotation_seed ? draw_rotation(*o.rotation_seed, context, n) : 1;
            if (!para.contains("qas")) continue;
            for (const auto& qa : para["qas"]) {
                if (!qa.contains("answers") || !qa["answers"].is_array()) continue;
                for (const auto& ans : qa["answers"]) {
                    rep.answers++;
                    rep.triples++;
                    std::optional<std::size_t> start;
                    if (ans.contains("answer_start") && ans["answer_start"].is_number_integer()) {
                        auto off = ans["answer_start"].get<long long>();
                        if (off >= 0 && static_cast<std::size_t>(off) < context.size())
                            start = token_index_at(context, static_cast<std::size_t>(off));
                    }
                    if (!start || n == 0) {
                        rep.before.not_found++;
                        if (rep.after) rep.after->not_found++;
                        continue;
                    }
                    record(rep.before, *start, n, o.bins);
                    if (rep.after) record(*rep.after, map_rotated_index(*start, r, n), n, o.bins);
                }
            }
        }
    }
}

std::vector<TsvAnswer> read_tsv_answers(const std::filesystem::path& path) {
    LineReader reader(path);
    std::vector<TsvAnswer> out;
    std::string_view line;
    while (reader.next(line)) {
        if (trim(line).empty()) continue;
        auto tab = line.find('\t');
        if (tab == std::string_view::npos) reader.fail("expected 'qid<TAB>answer'");
        auto qid = trim(line.substr(0, tab));
        if (qid.empty()) reader.fail("empty qid");
        if (!is_valid_utf8(line)) reader.fail("invalid UTF-8");
        out.push_back({std::string(qid), std::string(line.substr(tab + 1))});
    }
    return out;
}

std::unordered_map<std::string, std::string> read_passages(const std::filesystem::path& corpus,
                                                           const std::string& format,
                                                           const std::set<std::string>& wanted,
                                                           const ProgressCallback& progress) {
    index::CorpusReaderOptions ropts;
    ropts.format = index::resolve_corpus_format(format, corpus);
    index::CorpusReader reader(corpus, ropts);
    std::unordered_map<std::string, std::string> out;
    index::Document doc;
    std::uint64_t k = 0;
    while (reader.next(doc)) {
        if (wanted.count(doc.id)) out[doc.id] = std::move(doc.text);
        if (progress && (++k & 4095) == 0) progress(reader.bytes_read(), reader.size_bytes());
    }
    return out;
}

void audit_tsv(const AnswerPositionOptions& o, AnswerPositionReport& rep,
               const ProgressCallback& progress) {
    if (o.qrels.empty() || o.corpus.empty())
        throw InvalidArgument("TSV answers need --qrels and --corpus");
    auto answers = read_tsv_answers(o.answers);
    rep.answers = answers.size();
    std::map<std::string, std::vector<std::string>> relevant;  // qid -> docids
    for (auto& j : read_qrels(o.qrels))
        if (j.relevance >= o.min_relevance) relevant[j.qid].push_back(j.docid);
    std::set<std::string> wanted;
    std::set<std::string> answer_qids;
    for (const auto& a : answers) {
        answer_qids.insert(a.qid);
        auto it = relevant.find(a.qid);
        if (it != relevant.end()) wanted.insert(it->second.begin(), it->second.end());
    }
    for (const auto& q : answer_qids)
        if (!relevant.count(q)) rep.queries_without_relevant++;
    auto passages = read_passages(o.corpus, o.corpus_format, wanted, progress);

    std::unordered_map<std::string, RotationOffset> offsets;
    std::unordered_map<std::string, std::string> rotated;
    if (!o.offsets.empty()) {
        for (auto& [id, off] : read_rotation_offsets(o.offsets)) offsets[id] = off;
        rep.after_method = "offsets";
    } else if (!o.rotated_corpus.empty()) {
        rotated = read_passages(o.rotated_corpus, o.corpus_format, wanted, progress);
        rep.after_method = "rotated-corpus";
    }
    if (!rep.after_method.empty()) {
        rep.after.emplace();
        rep.after->counts.assign(o.bins, 0);
    }

    std::vector<std::string_view> ptoks, atoks;
    for (const auto& a : answers) {
        auto it = relevant.find(a.qid);
        if (it == relevant.end()) continue;
        split_ws(a.text, atoks);
        normalise(atoks, o.strip_punctuation);
        if (std::all_of(atoks.begin(), atoks.end(), [](auto t) { return t.empty(); }))
            atoks.clear();  // nothing left to find (e.g. the answer ".")
        for (const auto& docid : it->second) {
            auto p = passages.find(docid);
            if (p == passages.end()) continue;  // counted per docid below
            rep.triples++;
            split_ws(p->second, ptoks);
            normalise(ptoks, o.strip_punctuation);
            auto start = find_token_span(ptoks, atoks);
            std::size_t n = ptoks.size();
            if (start)
                record(rep.before, *start, n, o.bins);
            else
                rep.before.not_found++;
            if (!rep.after) continue;
            if (rep.after_method == "offsets") {
                auto off = offsets.find(docid);
                if (!start || off == offsets.end() || off->second.n != n) {
                    rep.after->not_found++;
                    continue;
                }
                record(*rep.after, map_rotated_index(*start, off->second.r, n), n, o.bins);
            } else {
                auto rp = rotated.find(docid);
                if (rp == rotated.end()) {
                    rep.after->not_found++;
                    continue;
                }
                std::vector<std::string_view> rtoks;
                split_ws(rp->second, rtoks);
                normalise(rtoks, o.strip_punctuation);
                auto rstart = find_token_span(rtoks, atoks);
                if (rstart)
                    record(*rep.after, *rstart, rtoks.size(), o.bins);
                else
                    rep.after->not_found++;
            }
        }
    }
    std::uint64_t missing = 0;
    for (const auto& id : wanted)
        if (!passages.count(id)) missing++;
    rep.missing_passages = missing;
}

std::string fmt_double(double v, int decimals = 4) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
    return buf;
}

std::string bin_label(std::size_t b, std::size_t bins) {
    return fmt_double(static_cast<double>(b) / static_cast<double>(bins), 2);
}

nlohmann::ordered_json histogram_json(const PositionHistogram& h, std::size_t bins) {
    nlohmann::ordered_json j;
    j["found"] = h.found;
    j["not_found"] = h.not_found;
    j["counts"] = h.counts;
    j["proportions"] = h.proportions();
    std::vector<double> lower;
    for (std::size_t b = 0; b < bins; ++b)
        lower.push_back(static_cast<double>(b) / static_cast<double>(bins));
    j["bin_lower_edges"] = lower;
    return j;
}

}  // namespace

std::optional<std::size_t> find_token_span(const std::vector<std::string_view>& haystack,
                                           const std::vector<std::string_view>& needle) {
    if (needle.empty() || needle.size() > haystack.size()) return std::nullopt;
    for (std::size_t i = 0; i + needle.size() <= haystack.size(); ++i) {
        std::size_t k = 0;
        while (k < needle.size() && iequal(haystack[i + k], needle[k])) ++k;
        if (k == needle.size()) return i;
    }
    return std::nullopt;
}

std::optional<std::size_t> token_index_at(std::string_view text, std::size_t offset) {
    auto is_space = [](char c) {
        return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
    };
    std::size_t index = 0;
    std::size_t i = 0;
    while (i < text.size()) {
        while (i < text.size() && is_space(text[i])) ++i;
        if (i >= text.size()) break;
        while (i < text.size() && !is_space(text[i])) ++i;
        if (offset < i) return index;  // inside this token, or on whitespace before it
        ++index;
    }
    return std::nullopt;
}

std::size_t position_bin(double x, std::size_t bins) {
    if (bins == 0) throw InvalidArgument("position_bin: bins must be positive");
    if (!(x > 0)) return 0;
    auto b = static_cast<std::size_t>(std::floor(x * static_cast<double>(bins)));
    return std::min(b, bins - 1);
}

std::vector<double> PositionHistogram::proportions() const {
    std::vector<double> p(counts.size(), 0.0);
    if (found == 0) return p;
    for (std::size_t i = 0; i < counts.size(); ++i)
        p[i] = static_cast<double>(counts[i]) / static_cast<double>(found);
    return p;
}

AnswerPositionReport audit_answer_positions(const AnswerPositionOptions& options,
                                            const ProgressCallback& progress) {
    if (options.bins == 0) throw InvalidArgument("bins must be positive");
    if (options.answers.empty()) throw InvalidArgument("answers file is required");
    AnswerPositionReport rep;
    rep.bins = options.bins;
    rep.before.counts.assign(options.bins, 0);
    if (is_json_path(options.answers))
        audit_squad(options, rep);
    else
        audit_tsv(options, rep, progress);
    return rep;
}

void write_answer_position_report(const AnswerPositionReport& rep,
                                  const std::filesystem::path& prefix) {
    nlohmann::ordered_json j;
    j["bins"] = rep.bins;
    j["answers"] = rep.answers;
    j["triples"] = rep.triples;
    j["queries_without_relevant"] = rep.queries_without_relevant;
    j["missing_passages"] = rep.missing_passages;
    j["before"] = histogram_json(rep.before, rep.bins);
    if (rep.after) {
        j["after"] = histogram_json(*rep.after, rep.bins);
        j["after_method"] = rep.after_method;
    }
    {
        AtomicFile out(prefix.string() + ".json");
        out.write(j.dump(2) + "\n");
        out.commit();
    }
    std::string t = "Answer positions (relative start token / passage length)\n";
    t += "answers read: " + std::to_string(rep.answers) + "\n";
    t += "(query, relevant passage, answer) examined: " + std::to_string(rep.triples) + "\n";
    t += "found: " + std::to_string(rep.before.found) +
         ", not found verbatim: " + std::to_string(rep.before.not_found) + "\n";
    if (rep.queries_without_relevant)
        t += "answer queries without a relevant judgement: " +
             std::to_string(rep.queries_without_relevant) + "\n";
    if (rep.missing_passages)
        t += "relevant passages missing from the corpus: " + std::to_string(rep.missing_passages) +
             "\n";
    if (rep.after)
        t += "after rotation (" + rep.after_method + "): found " +
             std::to_string(rep.after->found) + ", not found " +
             std::to_string(rep.after->not_found) + "\n";
    t += "\nbin\tbefore\tshare";
    if (rep.after) t += "\tafter\tshare";
    t += "\n";
    auto pb = rep.before.proportions();
    std::vector<double> pa = rep.after ? rep.after->proportions() : std::vector<double>{};
    for (std::size_t b = 0; b < rep.bins; ++b) {
        t += "[" + bin_label(b, rep.bins) + "," + bin_label(b + 1, rep.bins) + ")\t" +
             std::to_string(rep.before.counts[b]) + "\t" + fmt_double(pb[b]);
        if (rep.after) t += "\t" + std::to_string(rep.after->counts[b]) + "\t" + fmt_double(pa[b]);
        t += "\n";
    }
    {
        AtomicFile out(prefix.string() + ".txt");
        out.write(t);
        out.commit();
    }
    BarChart chart;
    chart.title = "Relative answer start positions";
    chart.x_label = "relative start (start token / passage tokens)";
    chart.y_label = "share of found answers";
    for (std::size_t b = 0; b < rep.bins; ++b) chart.categories.push_back(bin_label(b, rep.bins));
    chart.series.push_back({"original", pb, {}});
    if (rep.after) chart.series.push_back({"rotated", pa, {}});
    write_bar_chart(chart, prefix);
}

}  // namespace plumb::debias
