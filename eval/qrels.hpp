#pragma once
/// \file qrels.hpp
/// Relevance judgements (TREC qrels: `qid iter docid rel`, or BEIR's `query-id corpus-id score`
/// TSV), read the way trec_eval reads them.
///
/// Grades are integers and may be negative. Following trec_eval (form_res_rels.c), a document
/// judged with a negative grade is "in the pool but unjudged": it is never relevant, is not
/// counted as judged non-relevant by bpref, and does not count towards the relevance levels
/// that num_rel and the ideal DCG are computed from.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace plumb::eval {

/// Hash of a document id as used by QueryQrels' lookup table (std::hash of the bytes).
std::uint64_t docid_hash(std::string_view docid) noexcept;

/// Number of judged documents with one grade.
struct GradeCount {
    long grade;
    long count;
    bool operator==(const GradeCount&) const = default;
};

/// The judgements of one query: docid -> grade, with an open-addressing hash table for fast
/// lookup. Immutable after loading; safe to read from several threads.
class QueryQrels {
public:
    explicit QueryQrels(std::string qid);

    const std::string& qid() const noexcept { return m_qid; }

    /// Adds a judgement. Returns false (and changes nothing) when `docid` is already judged.
    bool add(std::string_view docid, long grade);

    /// Grade of `docid`, or nullptr when the document is not in the qrels of this query.
    /// `hash` must be docid_hash(docid) (lets callers hash a document id once).
    const long* find(std::string_view docid, std::uint64_t hash) const noexcept;
    const long* find(std::string_view docid) const noexcept {
        return find(docid, docid_hash(docid));
    }

    /// Number of judged documents (any grade, negative included).
    std::size_t size() const noexcept { return m_count; }

    /// Number of documents judged with each grade >= 0 that occurs (trec_eval's rel_levels
    /// without its empty levels), by increasing grade. Sized by the distinct grades, not their
    /// values: a grade of 2^31 - 1 costs one entry. Empty when no grade is >= 0.
    const std::vector<GradeCount>& level_counts() const noexcept { return m_levels; }

    /// Number of documents with grade >= relevance_level (trec_eval's num_rel; documents with a
    /// negative grade never count).
    long num_rel(long relevance_level) const noexcept;

    /// All judgements (docid, grade) in insertion order.
    std::vector<std::pair<std::string, long>> judgements() const;

private:
    struct Slot {
        std::uint64_t hash = 0;
        std::uint32_t offset = 0;
        std::uint32_t length = 0;
        long grade = 0;
        bool used = false;
    };
    void grow();
    std::string m_qid;
    std::string m_arena;                 // concatenated docids
    std::vector<Slot> m_slots;           // power-of-two open addressing table
    std::vector<std::uint32_t> m_order;  // slot index of each judgement in insertion order
    std::size_t m_count = 0;
    std::vector<GradeCount> m_levels;
};

/// Judgements of all queries.
class Qrels {
public:
    Qrels();
    ~Qrels();
    Qrels(Qrels&&) noexcept;
    Qrels& operator=(Qrels&&) noexcept;

    /// Reads a qrels file: whitespace-separated `qid iter docid rel`, exactly four fields; `rel`
    /// an integer (negative allowed). Also BEIR's qrels (`qrels/test.tsv`): `query-id corpus-id
    /// score`, three fields, with or without the header line `query-id<TAB>corpus-id<TAB>score`.
    /// The first judgement line fixes the layout for the whole file (3 fields: BEIR, else
    /// TREC); a line of the other layout is an error. Empty lines and lines starting with '#'
    /// are skipped. Throws IoError when unreadable, ParseError (file:line) for a malformed
    /// line, a non-integer grade or a duplicate (qid, docid).
    static Qrels load(const std::filesystem::path& path);

    /// Parses qrels text held in memory; `name` is used in error messages.
    static Qrels parse(std::string_view text, const std::string& name = "<qrels>");

    /// Adds one judgement. Throws InvalidArgument on a duplicate (qid, docid).
    void add(std::string_view qid, std::string_view docid, long grade);

    /// Judgements of `qid`, or nullptr when the query has none.
    const QueryQrels* find(std::string_view qid) const noexcept;

    /// Query ids in trec_eval's evaluation order: byte-wise ascending (strcmp).
    std::vector<std::string> qids() const;

    std::size_t num_queries() const noexcept;
    std::size_t num_judgements() const noexcept;

private:
    struct Impl;
    std::unique_ptr<Impl> m_impl;
};

}  // namespace plumb::eval
