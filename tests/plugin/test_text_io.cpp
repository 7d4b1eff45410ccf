#include <gtest/gtest.h>
#include <zlib.h>

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "plugin/error.hpp"
#include "plugin/text_io.hpp"
#include "tests/support/temp_dir.hpp"

namespace fs = std::filesystem;
using plumb::test::TempDir;

namespace {
// The first CR of a CRLF file sits on the last byte of LineReader's 1 MiB buffer.
constexpr std::size_t kFirstLineLength = (1u << 20) - 1;
}  // namespace

TEST(Utf8, AcceptsValidRejectsInvalid) {
    EXPECT_TRUE(plumb::is_valid_utf8("plain ascii"));
    EXPECT_TRUE(plumb::is_valid_utf8("caf\xC3\xA9 \xE4\xB8\xAD \xF0\x9F\x98\x80"));
    EXPECT_FALSE(plumb::is_valid_utf8("bad \xC3"));            // truncated sequence
    EXPECT_FALSE(plumb::is_valid_utf8("\xC0\xAF"));            // overlong '/'
    EXPECT_FALSE(plumb::is_valid_utf8("\xED\xA0\x80"));        // UTF-16 surrogate
    EXPECT_FALSE(plumb::is_valid_utf8("\xF4\x90\x80\x80"));    // above U+10FFFF
    EXPECT_EQ(plumb::find_invalid_utf8("ab\xFF"), 2u);
}

TEST(LineReader, StripsBomAndCrlfAndCountsLines) {
    const TempDir dir;
    auto p = dir.write("crlf.txt", std::string("\xEF\xBB\xBF") + "a\tb\r\n\r\nlast");
    plumb::LineReader r(p);
    std::string_view line;
    ASSERT_TRUE(r.next(line));
    EXPECT_EQ(line, "a\tb");
    EXPECT_EQ(r.line_number(), 1u);
    ASSERT_TRUE(r.next(line));
    EXPECT_EQ(line, "");
    ASSERT_TRUE(r.next(line));
    EXPECT_EQ(line, "last");
    EXPECT_EQ(r.line_number(), 3u);
    EXPECT_FALSE(r.next(line));
}

TEST(LineReader, CrOnlyLineEnds) {
    // Classic Mac OS files (e.g. public LIWC-format dictionaries): CR alone ends a line; a
    // trailing CR at the end of the file does not make an extra line; empty lines are kept.
    const TempDir dir;
    auto p = dir.write("cr.txt",
                       "\xEF\xBB\xBF"
                       "%\r1\tposemo\r\rlast\r");
    plumb::LineReader r(p);
    std::string_view line;
    std::vector<std::string> lines;
    while (r.next(line)) lines.emplace_back(line);
    EXPECT_EQ(lines, (std::vector<std::string>{"%", "1\tposemo", "", "last"}));
    EXPECT_EQ(r.line_number(), 4u);
    // Across buffer boundaries (1 MiB buffer): long CR-only lines.
    const std::string big(1500000, 'y');
    p = dir.write("cr_big.txt", "x\r" + big + "\r" + big + "\rz");
    plumb::LineReader r2(p);
    lines.clear();
    while (r2.next(line)) lines.emplace_back(line);
    EXPECT_EQ(lines, (std::vector<std::string>{"x", big, big, "z"}));
    // CRLF files keep their semantics even when the first CR ends a buffer.
    const std::string first(kFirstLineLength, 'a');
    p = dir.write("crlf_edge.txt", first + "\r\nb\r\n");
    plumb::LineReader r3(p);
    lines.clear();
    while (r3.next(line)) lines.emplace_back(line);
    EXPECT_EQ(lines, (std::vector<std::string>{first, "b"}));
}

TEST(LineReader, CrOnlyFirstLineEndOnTheLastByteOfTheBuffer) {
    // The first line end is a CR on the last byte of the 1 MiB buffer and the next byte is not
    // LF: CR-only line ends, decided when the next buffer arrives (before, the first two lines
    // came back as one, and a later LF decided the file's line ends).
    const TempDir dir;
    const std::string first(kFirstLineLength, 'a');
    auto p = dir.write("cr_edge.txt", first + "\rb\rc\nd\r");
    plumb::LineReader r(p);
    std::string_view line;
    std::vector<std::string> lines;
    while (r.next(line)) lines.emplace_back(line);
    EXPECT_EQ(lines, (std::vector<std::string>{first, "b", "c\nd"}));
}

namespace {
// Every line that starts in [begin, end) of `p`, read through restrict_to_bytes().
std::vector<std::string> range_lines(const fs::path& p, std::uint64_t begin, std::uint64_t end) {
    plumb::LineReader r(p);
    r.restrict_to_bytes(begin, end);
    std::vector<std::string> out;
    std::string_view line;
    while (r.next(line)) out.emplace_back(line);
    return out;
}
}  // namespace

TEST(LineReader, ByteRangesPartitionTheLines) {
    // Line starts (by hand): LF file "\xEF\xBB\xBFab\n\ncd\nlast" has lines at bytes 0 ("ab"
    // after the BOM), 6 (""), 7 ("cd"), 10 ("last"). A range holds the lines starting in it.
    const TempDir dir;
    const std::string lf = "\xEF\xBB\xBF" "ab\n\ncd\nlast";
    auto p = dir.write("lf.txt", lf);
    using V = std::vector<std::string>;
    EXPECT_EQ(range_lines(p, 0, 6), (V{"ab"}));
    EXPECT_EQ(range_lines(p, 1, 7), (V{""}));      // starts mid-line: the next line start is 6
    EXPECT_EQ(range_lines(p, 6, 8), (V{"", "cd"}));
    EXPECT_EQ(range_lines(p, 8, 100), (V{"last"}));
    EXPECT_EQ(range_lines(p, 11, 100), (V{}));     // no line starts after byte 10
    EXPECT_EQ(range_lines(p, 0, 0), (V{}));
    // Every split point: the two halves together are the whole file, in order, each line once.
    const std::vector<std::pair<std::string, V>> cases = {
        {lf, V{"ab", "", "cd", "last"}},
        {"\xEF\xBB\xBF" "ab\r\n\r\ncd\r\nlast\r\n", V{"ab", "", "cd", "last"}},
        {"ab\r\rcd\rlast", V{"ab", "", "cd", "last"}},
        {"\n\nx\n", V{"", "", "x"}}};
    for (const auto& [text, lines] : cases) {
        auto f = dir.write("split.txt", text);
        const V whole = range_lines(f, 0, text.size());
        EXPECT_EQ(whole, lines) << testing::PrintToString(text);
        for (std::uint64_t cut = 0; cut <= text.size() + 1; ++cut) {
            V a = range_lines(f, 0, cut), b = range_lines(f, cut, text.size() + 5);
            a.insert(a.end(), b.begin(), b.end());
            EXPECT_EQ(a, whole) << "cut at byte " << cut << " of " << testing::PrintToString(text);
        }
    }
    // The BOM is removed only on the file's first line; a range starting there keeps it out.
    EXPECT_EQ(range_lines(dir.write("bom.txt", "\xEF\xBB\xBFx\ny"), 0, 2), (V{"x"}));
}

TEST(LineReader, ByteRangesAcrossTheBuffer) {
    // A CRLF file whose line starts lie around the 1 MiB buffer edge: lines "a..a" (1 MiB - 1
    // bytes, so its CR is the buffer's last byte), "b", "c"; and a CR-only file whose first line
    // end is a CR on the last byte of the buffer (decided by the next byte). Line starts: 0,
    // 2^20 + 1 ("b"), 2^20 + 4 ("c") for CRLF; 0, 2^20 ("b"), 2^20 + 2 ("c") for CR.
    const TempDir dir;
    using V = std::vector<std::string>;
    const std::string first(kFirstLineLength, 'a');
    const std::uint64_t mib = 1u << 20;
    auto crlf = dir.write("crlf_big.txt", first + "\r\nb\r\nc\r\n");
    EXPECT_EQ(range_lines(crlf, 0, 1), (V{first}));
    EXPECT_EQ(range_lines(crlf, 1, mib + 1), (V{}));
    EXPECT_EQ(range_lines(crlf, 1, mib + 2), (V{"b"}));
    EXPECT_EQ(range_lines(crlf, mib + 1, mib + 4), (V{"b"}));
    EXPECT_EQ(range_lines(crlf, mib + 2, mib + 100), (V{"c"}));
    auto cr = dir.write("cr_big.txt", first + "\rb\rc\r");
    EXPECT_EQ(range_lines(cr, 0, 1), (V{first}));
    EXPECT_EQ(range_lines(cr, 5, mib + 1), (V{"b"}));
    EXPECT_EQ(range_lines(cr, mib, mib + 100), (V{"b", "c"}));
    EXPECT_EQ(range_lines(cr, mib + 1, mib + 100), (V{"c"}));
}

TEST(LineReader, ByteRangeErrorsNameTheFilesLine) {
    // Lines 1-3 of the file precede the range; its second line (file line 5) holds a NUL byte.
    const TempDir dir;
    auto p = dir.write("nul.txt", std::string("a\nb\nc\nd\nbad\0x\n", 14));
    plumb::LineReader r(p);
    r.restrict_to_bytes(6, 100);
    std::string_view line;
    ASSERT_TRUE(r.next(line));
    EXPECT_EQ(line, "d");
    EXPECT_EQ(r.line_number(), 1u);
    EXPECT_EQ(r.file_line(1), 4u);
    try {
        r.next(line);
        FAIL() << "expected a ParseError";
    } catch (const plumb::ParseError& e) {
        EXPECT_EQ(e.line(), 5u);
        EXPECT_NE(std::string(e.what()).find("nul.txt"), std::string::npos);
    }
    // Standard input cannot seek: a clear error, not a wrong split (gzip: below).
    plumb::LineReader in("-");
    EXPECT_THROW(in.restrict_to_bytes(0, 10), plumb::InvalidArgument);
}

TEST(LineReader, RawBytesAfterATextHeader) {
    const TempDir dir;
    auto p = dir.write("bin.txt", std::string("2 3\nab\0\x01\xff\ncd", 12));
    plumb::LineReader r(p);
    std::string_view line;
    ASSERT_TRUE(r.next(line));
    EXPECT_EQ(line, "2 3");
    char buf[8];
    ASSERT_EQ(r.read_bytes(buf, 5), 5u);
    EXPECT_EQ(std::string(buf, 5), std::string("ab\0\x01\xff", 5));
    ASSERT_TRUE(r.next(line));
    EXPECT_EQ(line, "");
    EXPECT_EQ(r.read_bytes(buf, 8), 2u);  // end of file
    EXPECT_EQ(std::string(buf, 2), "cd");
}

TEST(LineReader, LinesLongerThanTheBuffer) {
    const TempDir dir;
    std::string big(3 << 20, 'x');
    auto p = dir.write("big.txt", big + "\nshort\n");
    plumb::LineReader r(p);
    std::string_view line;
    ASSERT_TRUE(r.next(line));
    EXPECT_EQ(line.size(), big.size());
    ASSERT_TRUE(r.next(line));
    EXPECT_EQ(line, "short");
    EXPECT_FALSE(r.next(line));
}

TEST(LineReader, MissingFileIsIoErrorNamingIt) {
    try {
        plumb::LineReader r("/nonexistent/plumb/file.tsv");
        FAIL() << "expected IoError";
    } catch (const plumb::IoError& e) {
        EXPECT_NE(std::string(e.what()).find("/nonexistent/plumb/file.tsv"), std::string::npos);
    }
}

TEST(LineReader, FailNamesFileAndLine) {
    const TempDir dir;
    auto p = dir.write("fail.txt", "one\ntwo\n");
    plumb::LineReader r(p);
    std::string_view line;
    r.next(line);
    r.next(line);
    try {
        r.fail("bad field");
        FAIL();
    } catch (const plumb::ParseError& e) {
        EXPECT_EQ(e.line(), 2u);
        EXPECT_EQ(std::string(e.what()), p.string() + ":2: bad field");
    }
}

TEST(Split, TabsAndWhitespace) {
    std::vector<std::string_view> f;
    plumb::split("a\t\tb", '\t', f);
    ASSERT_EQ(f.size(), 3u);
    EXPECT_EQ(f[1], "");
    plumb::split_ws("  q1 \t Q0  d1 ", f);
    ASSERT_EQ(f.size(), 3u);
    EXPECT_EQ(f[2], "d1");
}

TEST(AtomicFile, CommitReplacesAbandonLeavesNothing) {
    const TempDir dir;
    auto target = dir / "out.txt";
    {
        plumb::AtomicFile f(target);
        f.write("hello\n");
        f.commit();
    }
    EXPECT_EQ(plumb::read_file(target), "hello\n");
    {
        plumb::AtomicFile f(target);
        f.write("half-written");
        // destroyed without commit: simulates an error during writing
    }
    EXPECT_EQ(plumb::read_file(target), "hello\n");
    std::size_t files = 0;
    for (auto& e : fs::directory_iterator(dir.path)) {
        (void)e;
        ++files;
    }
    EXPECT_EQ(files, 1u);
}

// A buffer larger than AtomicFile's 8 MiB write slice (and not a multiple of it) mixed with
// small writes arrives byte for byte: the slices neither drop, repeat nor reorder bytes.
TEST(AtomicFile, LargeWritesArriveWhole) {
    const TempDir dir;
    auto target = dir / "big.bin";
    std::string big((std::size_t{8} << 20) * 2 + 12345, '\0');
    for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>((i * 131 + i / 7) & 0xff);
    {
        plumb::AtomicFile f(target);
        f.write("head");
        f.write(big);
        f.write("tail");
        f.commit();
    }
    const std::string got = plumb::read_file(target);
    ASSERT_EQ(got.size(), big.size() + 8);
    EXPECT_EQ(got.substr(0, 4), "head");
    EXPECT_EQ(got.substr(got.size() - 4), "tail");
    EXPECT_TRUE(got.compare(4, big.size(), big) == 0);
}

namespace {
/// Writes `bytes` gzip-compressed to `path` with zlib (an independent writer).
void write_gzip(const fs::path& path, const std::string& bytes) {
    gzFile g = gzopen(path.c_str(), "wb");
    ASSERT_NE(g, nullptr);
    ASSERT_EQ(gzwrite(g, bytes.data(), static_cast<unsigned>(bytes.size())),
              static_cast<int>(bytes.size()));
    ASSERT_EQ(gzclose(g), Z_OK);
}
}  // namespace

TEST(LineReader, ReadsGzipTransparentlyWithTheSameLineSemantics) {
    // Named without .gz on purpose: the magic bytes decide. BOM, CRLF, empty line, no final LF.
    const TempDir dir;
    auto path = dir / "lines.txt";
    write_gzip(path, "\xEF\xBB\xBFq1\tfirst\r\n\nq3\tthird");
    plumb::LineReader r(path);
    EXPECT_TRUE(r.compressed());
    std::string_view line;
    ASSERT_TRUE(r.next(line));
    EXPECT_EQ(line, "q1\tfirst");
    ASSERT_TRUE(r.next(line));
    EXPECT_EQ(line, "");
    ASSERT_TRUE(r.next(line));
    EXPECT_EQ(line, "q3\tthird");
    EXPECT_EQ(r.line_number(), 3u);
    EXPECT_FALSE(r.next(line));
    // Progress counts compressed bytes against the compressed size.
    EXPECT_EQ(r.bytes_read(), fs::file_size(path));
}

TEST(LineReader, GzipCannotBeReadByByteRanges) {
    const TempDir dir;
    const auto path = dir / "c.tsv.gz";
    write_gzip(path, "a\tb\nc\td\n");
    plumb::LineReader r(path);
    EXPECT_THROW(r.restrict_to_bytes(2, 10), plumb::InvalidArgument);
}

TEST(LineReader, LongGzipLinesCrossBufferBoundaries) {
    const TempDir dir;
    auto path = dir / "long.gz";
    const std::string a(3'000'000, 'a'), b(5, 'b');  // longer than the 1 MiB buffer
    write_gzip(path, a + "\n" + b + "\n");
    plumb::LineReader r(path);
    std::string_view line;
    ASSERT_TRUE(r.next(line));
    EXPECT_EQ(line.size(), a.size());
    ASSERT_TRUE(r.next(line));
    EXPECT_EQ(line, b);
    EXPECT_FALSE(r.next(line));
}

TEST(LineReader, TruncatedGzipIsAnIoErrorNamingTheFile) {
    const TempDir dir;
    auto full = dir / "full.gz";
    std::string text;
    for (int i = 0; i < 20000; ++i) text += "line number " + std::to_string(i) + "\n";
    write_gzip(full, text);
    const std::string bytes = plumb::read_file(full);
    auto cut = dir.write("cut.gz", std::string_view(bytes).substr(0, bytes.size() / 2));
    plumb::LineReader r(cut);
    std::string_view line;
    try {
        while (r.next(line)) {
        }
        FAIL() << "a truncated gzip stream must not read as a shorter file";
    } catch (const plumb::IoError& e) {
        EXPECT_NE(std::string(e.what()).find("cut.gz"), std::string::npos) << e.what();
    }
}
