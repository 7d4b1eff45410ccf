// Reading a TSV / JSONL corpus file by byte ranges (CorpusReaderOptions::first_byte / end_byte,
// the split of sharded builds): for LF, CRLF and CR-only line ends, with and without a BOM and
// a final line end, empty and blank lines and a long line that straddles many split points,
// every split point of the file gives ranges that read every document exactly once, each in
// the range its line starts in. The expected documents come from the file's construction (the
// start offset of every line is the sum of the lengths before it), not from the reader.
// Errors in a range name the file's line. Sharded builds split by bytes (build_shards in one
// process) give shards that follow the byte ranges and runs byte-identical to one index.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "index/bm25_searcher.hpp"
#include "index/corpus.hpp"
#include "index/index_builder.hpp"
#include "index/shard_builder.hpp"
#include "index/shard_manifest.hpp"
#include "index/sharded_searcher.hpp"
#include "plugin/error.hpp"
#include "plugin/trec_run.hpp"
#include "tests/support/scratch_dir.hpp"

namespace fs = std::filesystem;
namespace pi = plumb::index;

namespace {

const plumb::test::ScratchDir kScratch("plumb_test_corpus_ranges_");

/// A corpus file built line by line: its bytes, each line's start offset and the id of the
/// document on it ("" for an empty or blank line).
struct Built {
    std::string bytes;
    std::vector<std::uint64_t> starts;
    std::vector<std::string> ids;
};

Built make(pi::CorpusFormat format, const std::string& eol, bool bom, bool final_eol) {
    // (id, text): an empty id makes an empty line, "blank" a line of spaces and tabs.
    const std::vector<std::pair<std::string, std::string>> records = {
        {"d0", "first passage"}, {"", ""},  {"d1", "x"},
        {"d2", std::string(150, 'y') + " long line over many split points"},
        {"blank", ""},           {"d3", "z z"}, {"", ""}, {"", ""}, {"d4", "last one"}};
    Built b;
    if (bom) b.bytes = "\xEF\xBB\xBF";
    for (std::size_t i = 0; i < records.size(); ++i) {
        const auto& [id, text] = records[i];
        b.starts.push_back(i == 0 ? 0 : b.bytes.size());
        if (id == "blank") {
            b.bytes += " \t ";
            b.ids.emplace_back();
        } else if (id.empty()) {
            b.ids.emplace_back();
        } else {
            b.bytes += format == pi::CorpusFormat::Tsv
                           ? id + "\t" + text
                           : "{\"_id\": \"" + id + "\", \"text\": \"" + text + "\"}";
            b.ids.push_back(id);
        }
        if (i + 1 < records.size() || final_eol) b.bytes += eol;
    }
    return b;
}

std::vector<std::string> read_range(const fs::path& file, pi::CorpusFormat format,
                                    std::uint64_t first, std::uint64_t end) {
    pi::CorpusReaderOptions o;
    o.format = format;
    o.first_byte = first;
    o.end_byte = end;
    pi::CorpusReader reader(file, o);
    std::vector<std::string> ids;
    pi::Document d;
    while (reader.next(d)) ids.push_back(d.id);
    return ids;
}

std::vector<std::string> expected(const Built& b, std::uint64_t first, std::uint64_t end) {
    std::vector<std::string> ids;
    for (std::size_t i = 0; i < b.starts.size(); ++i) {
        if (b.starts[i] >= first && b.starts[i] < end && !b.ids[i].empty()) {
            ids.push_back(b.ids[i]);
        }
    }
    return ids;
}

}  // namespace

TEST(CorpusRanges, EverySplitPointReadsEveryLineOnce) {
    int files = 0;
    for (auto format : {pi::CorpusFormat::Tsv, pi::CorpusFormat::Jsonl}) {
        for (const std::string eol : {"\n", "\r\n", "\r"}) {
            for (bool bom : {false, true}) {
                for (bool final_eol : {true, false}) {
                    const auto b = make(format, eol, bom, final_eol);
                    const auto file = kScratch.file("c" + std::to_string(files++), b.bytes);
                    const std::uint64_t size = b.bytes.size();
                    SCOPED_TRACE(std::string(pi::corpus_format_name(format)) + " eol " +
                                 std::to_string(eol.size()) + (eol == "\r" ? "CR" : "") +
                                 " bom " + std::to_string(bom) + " final " +
                                 std::to_string(final_eol));
                    ASSERT_EQ(read_range(file, format, 0, size),
                              (std::vector<std::string>{"d0", "d1", "d2", "d3", "d4"}));
                    // Two ranges at every split point, and three ranges 40 bytes apart.
                    for (std::uint64_t s = 0; s <= size; ++s) {
                        SCOPED_TRACE("split at " + std::to_string(s));
                        ASSERT_EQ(read_range(file, format, 0, s), expected(b, 0, s));
                        ASSERT_EQ(read_range(file, format, s, size), expected(b, s, size));
                        const auto t = std::min(size, s + 40);
                        ASSERT_EQ(read_range(file, format, s, t), expected(b, s, t));
                    }
                    // The default end, and a range past the end of the file.
                    EXPECT_EQ(read_range(file, format, 5, UINT64_MAX), expected(b, 5, size));
                    EXPECT_TRUE(read_range(file, format, size + 10, size + 20).empty());
                }
            }
        }
    }
}

TEST(CorpusRanges, LinesAcrossTheReadBuffer) {
    // 2.5 MiB of CRLF lines of 1 to 9,000 bytes: ranges begin and end at random points and
    // around the reader's 1 MiB buffer boundaries, so lines straddle buffer refills.
    Built b;
    std::mt19937 rng(5);
    std::uniform_int_distribution<int> len(1, 9000);
    for (int i = 0; b.bytes.size() < (5u << 19); ++i) {
        b.starts.push_back(b.bytes.size());
        b.ids.push_back("d" + std::to_string(i));
        b.bytes += b.ids.back() + "\t" + std::string(static_cast<std::size_t>(len(rng)), 'a' + i % 26) +
                   "\r\n";
    }
    const auto file = kScratch.file("big.tsv", b.bytes);
    const std::uint64_t size = b.bytes.size();
    std::vector<std::uint64_t> points = {0, 1, (1u << 20) - 1, 1u << 20, (1u << 20) + 1,
                                         (2u << 20) - 3, 2u << 20, size - 1, size};
    std::uniform_int_distribution<std::uint64_t> any(0, size);
    for (int i = 0; i < 12; ++i) points.push_back(any(rng));
    for (auto s : points) {
        for (auto t : {s + (1u << 20), s + (1u << 20) + 2, s + 7000, size}) {
            t = std::min(t, size);
            SCOPED_TRACE("range " + std::to_string(s) + " " + std::to_string(t));
            ASSERT_EQ(read_range(file, pi::CorpusFormat::Tsv, s, t), expected(b, s, t));
        }
    }
}

TEST(CorpusRanges, ErrorsNameTheFilesLine) {
    // Line 6 is bad; the range starts at line 4.
    const std::string text = "a\tone\nb\ttwo\n\nc\tthree\nd\tfour\ne no tab\nf\tsix\n";
    const auto file = kScratch.file("bad.tsv", text);
    const auto from = text.find("c\tthree");
    try {
        read_range(file, pi::CorpusFormat::Tsv, from - 2, text.size());
        FAIL() << "expected ParseError";
    } catch (const plumb::ParseError& e) {
        EXPECT_EQ(e.line(), 6u) << e.what();
        EXPECT_EQ(e.file(), file.string());
    }
    // A duplicate id inside one range, named by the file's lines, when building an index.
    const std::string dup = "a\tone\nb\ttwo\nc\tthree\nb\tagain\n";
    const auto dup_file = kScratch.file("dup.tsv", dup);
    pi::IndexBuildOptions o;
    o.first_byte = dup.find("b\ttwo");
    try {
        pi::build_index(dup_file, kScratch.fresh("dup-ix"), o);
        FAIL() << "expected ParseError";
    } catch (const plumb::ParseError& e) {
        EXPECT_EQ(e.line(), 4u) << e.what();
        EXPECT_NE(std::string(e.what()).find("first at line 2"), std::string::npos) << e.what();
    }
    // Not a byte-range reader's input: a folder, a gzip file, a TREC corpus.
    pi::CorpusReaderOptions r;
    r.first_byte = 3;
    const auto beir = kScratch.path() / "beir";
    kScratch.file("beir/corpus.jsonl", "{\"_id\": \"a\", \"text\": \"b\"}\n");
    r.format = pi::CorpusFormat::Jsonl;
    EXPECT_THROW(pi::CorpusReader(beir, r), plumb::InvalidArgument);
    r.format = pi::CorpusFormat::Tsv;
    const auto gz = kScratch.file("c.tsv.gz", std::string("\x1f\x8b\x08\x00", 4) + "junk");
    EXPECT_THROW(pi::CorpusReader(gz, r), plumb::InvalidArgument);
    r.format = pi::CorpusFormat::Trec;
    EXPECT_THROW(pi::CorpusReader(file, r), plumb::InvalidArgument);
    // A range that starts after its end is a usage error, not an empty read.
    pi::CorpusReaderOptions backwards;
    backwards.first_byte = 10;
    backwards.end_byte = 4;
    EXPECT_THROW(pi::CorpusReader(file, backwards), plumb::InvalidArgument);
    // --skip-bad in a range: the too-many-bad-records error names the file's line (6), not the
    // range's (3).
    pi::CorpusReaderOptions skip;
    skip.skip_bad = true;
    skip.max_bad_share = 0.0;
    skip.first_byte = from - 2;
    try {
        pi::CorpusReader reader(file, skip);
        pi::Document d;
        while (reader.next(d)) {
        }
        FAIL() << "expected ParseError";
    } catch (const plumb::ParseError& e) {
        EXPECT_EQ(e.line(), 6u) << e.what();
    }
}

TEST(CorpusRanges, ShardsFollowTheByteRangesAndSearchLikeOneIndex) {
    // CRLF line ends, a BOM, empty lines; 3 shards; ids not in corpus order.
    std::string text = "\xEF\xBB\xBF";
    std::vector<std::uint64_t> starts;
    for (int d = 0; d < 90; ++d) {
        starts.push_back(d == 0 ? 0 : text.size());
        text += "p" + std::to_string((d * 37) % 90) + "\tcommon";
        for (int i = 0; i < 12; ++i) {
            if ((d * 7 + i * 3) % (i + 2) == 0) text += " word" + std::to_string(i);
        }
        text += d % 11 == 0 ? std::string(d * 3, 'q') + " \r\n\r\n" : "\r\n";
    }
    // (the empty lines' starts are not documents)
    const auto file = kScratch.file("crlf.tsv", text);
    ASSERT_TRUE(pi::split_by_bytes(file, {}));
    const auto dir = kScratch.fresh("crlf-shards");
    pi::build_shards(file, dir, 3);
    const auto m = pi::ShardManifest::read(dir);
    ASSERT_EQ(m.shards.size(), 3u);
    for (std::size_t i = 0; i < 3; ++i) {
        const auto bytes = pi::shard_bytes(text.size(), 3, i);
        EXPECT_EQ(bytes.first, text.size() * i / 3);
        std::uint64_t want = 0;
        for (auto s : starts) want += s >= bytes.first && s < bytes.end ? 1 : 0;
        EXPECT_EQ(m.shards[i].documents, want) << "shard " << i;
    }
    EXPECT_EQ(m.documents(), 90u);
    // Runs over the shards equal one index's over the whole file byte for byte.
    pi::build_index(file, kScratch.fresh("crlf-whole"));
    const auto whole = pi::Bm25Searcher::open(kScratch.path() / "crlf-whole");
    const auto sharded = pi::ShardedSearcher::open(dir);
    std::vector<plumb::Query> queries{{"1", "word3 word5"}, {"2", "common"}, {"3", "q word0"}};
    for (bool rm3 : {false, true}) {
        pi::SearchOptions o;
        o.rm3 = rm3;
        o.rm3_params.fb_docs = 3;
        std::string a, b;
        for (const auto& l : whole->search_batch(queries, 50, o)) a += plumb::format_trec_run(l, "t");
        for (const auto& l : sharded->search_batch(queries, 50, o)) b += plumb::format_trec_run(l, "t");
        EXPECT_GT(a.size(), 200u);
        EXPECT_EQ(a, b) << "rm3 " << rm3;
    }
    // Too many shards for the corpus: a range without a line start.
    const auto tiny = kScratch.file("tiny.tsv", "a\t" + std::string(200, 'x') + "\nb\ty\n");
    try {
        pi::build_shards(tiny, kScratch.fresh("tiny-shards"), 3);
        FAIL() << "expected InvalidArgument";
    } catch (const plumb::InvalidArgument& e) {
        EXPECT_NE(std::string(e.what()).find("shard-001"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("holds no document"), std::string::npos) << e.what();
    }
    EXPECT_FALSE(pi::ShardManifest::present(kScratch.path() / "tiny-shards"));
}
