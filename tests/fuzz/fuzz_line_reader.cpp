// plugin/text_io: LineReader (BOM, CRLF / CR-only line ends, gzip) with read_bytes() between
// lines, and the UTF-8 / split helpers on every line.
#include <vector>

#include "plugin/text_io.hpp"
#include "tests/fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace plumb;
    auto rest = fuzz::as_text(data, size);
    const auto sel = fuzz::take_selector(rest);
    const auto path = fuzz::write_input(rest, "lines.txt");
    fuzz::expect_clean([&] {
        LineReader reader(path);
        std::string_view line;
        std::vector<std::string_view> fields;
        std::vector<char> buf(64);
        std::uint64_t n = 0;
        while (reader.next(line)) {
            const auto bad = find_invalid_utf8(line);
            if ((bad == std::string_view::npos) != is_valid_utf8(line)) std::abort();
            split(line, '\t', fields);
            split_ws(line, fields);
            (void)trim(line);
            // Every few lines (per the selector) read raw bytes, as word2vec's binary reader does.
            if (sel && ++n % (sel % 7 + 1) == 0) (void)reader.read_bytes(buf.data(), sel % 61);
            (void)reader.bytes_read();
        }
    });
    fuzz::expect_clean([&] { (void)read_file(path); });
    return 0;
}
