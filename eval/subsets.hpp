#pragma once
/// \file subsets.hpp
/// Query subsets: evaluation on a qid list, and the survivorship analysis of paper 002
/// (Gupta 2021, Appendix A; FORMULAS.md "Survivorship").
///
/// Shown-ranks file (what annotators saw), one line per shown passage:
///     qid<TAB>rank<TAB>docid<TAB>is_selected
/// rank = 1-based position in the list shown to the annotator, is_selected = 1 when the annotator
/// marked the passage as relevant (MS MARCO QnA `is_selected`), else 0. Blank lines and lines
/// starting with '#' are skipped; lines of a query need not be contiguous. A wrong field count,
/// a rank that is not a positive integer, is_selected other than 0/1, or a repeated (qid, rank)
/// or (qid, docid) throws ParseError "<file>:<line>: ...".
///
/// S_k = queries with a selected passage at a rank <= k (the thesis' subset_function);
/// "All" = every query of the file, unanswered ones included (their reciprocal rank counts as 0
/// if they have no relevant judgement). A query is unanswered when none of its shown passages
/// is selected.

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace plumb::eval {

/// Reads a qid list: the first whitespace-separated field of each non-blank, non-'#' line.
/// Repeated qids are kept once (first occurrence order).
std::vector<std::string> read_qid_list(const std::filesystem::path& path);

/// Query subset file: lines `qid`, `qid<TAB>...<TAB>label` or `qid,text,...,label` (label =
/// last field). A header line whose first field is "qid" or "query_id" is skipped. With
/// `label`, only queries whose last field equals it are kept (a line without a label field is
/// an error then). Returns the qids in file order.
/// Blank lines and lines starting with '#' are skipped; a repeated qid is kept once. ParseError
/// (file:line) for an empty qid or, with `label`, a line without a label field.
std::vector<std::string> read_query_subset(const std::filesystem::path& path,
                                           const std::string& label = {});

struct ShownPassage {
    unsigned rank = 0;
    std::string docid;
    bool selected = false;
};

struct ShownQuery {
    std::string qid;
    std::vector<ShownPassage> passages;  ///< sorted by rank
    /// Smallest rank of a selected passage; nullopt for an unanswered query.
    std::optional<unsigned> first_selected;
};

struct ShownRanks {
    std::vector<ShownQuery> queries;  ///< in order of first appearance
    unsigned max_rank = 0;            ///< largest rank in the file
};

/// Reads the shown-ranks format above.
ShownRanks read_shown_ranks(const std::filesystem::path& path);

/// Qids of S_k (k >= 1), in file order.
std::vector<std::string> subset_qids(const ShownRanks& shown, unsigned k);

/// One row of the Appendix A table: a subset and each run's mean value on it.
struct SubsetRow {
    std::string label;  ///< "All" or the rank threshold k
    unsigned k = 0;     ///< 0 for All
    std::size_t num_queries = 0;
    std::vector<double> means;  ///< one per run: mean over the subset's queries (missing = 0)
};

/// The survivorship table: "All", then S_k for k = max_k down to 1 (max_k = 0: the file's
/// max_rank). `per_query[r]` maps qid -> the run's per-query value (e.g. RR@10); a query missing
/// from a map scores 0 (a query without relevant judgements or not retrieved). Empty subsets
/// get mean 0.
std::vector<SubsetRow> survivorship_table(
    const ShownRanks& shown, const std::vector<std::unordered_map<std::string, double>>& per_query,
    unsigned max_k = 0);

/// Unanswered queries of one query type (or overall: type "all").
struct UnansweredRow {
    std::string type;
    std::size_t total = 0;
    std::size_t unanswered = 0;
    double share = 0.0;  ///< unanswered / total (0 when total == 0)
};

/// "all" first, then one row per type sorted by name. `types` maps qid -> type; queries without
/// a type are grouped under "(none)" (only when `types` is non-empty).
std::vector<UnansweredRow> unanswered_by_type(
    const ShownRanks& shown, const std::unordered_map<std::string, std::string>& types);

}  // namespace plumb::eval
