#include "rerank/embeddings_text.hpp"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>

#include "plugin/error.hpp"
#include "plugin/text_io.hpp"
#include "rerank/checkpoint_format.hpp"

namespace plumb::rerank {

namespace fs = std::filesystem;

namespace {

std::string ascii_lower(std::string_view s) {
    std::string out(s);
    for (auto& c : out) {
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    }
    return out;
}

bool parse_uint(std::string_view s, std::uint64_t& out) {
    if (s.empty()) return false;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    return ec == std::errc() && p == s.data() + s.size();
}

bool parse_float(std::string_view s, float& out) {
    if (s.empty()) return false;
    if (s.front() == '+') s.remove_prefix(1);  // from_chars rejects a leading '+'
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    return ec == std::errc() && p == s.data() + s.size() && std::isfinite(out);
}

bool is_text_line(std::string_view line) {
    if (!is_valid_utf8(line)) return false;
    for (char c : line) {
        if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\r') return false;
    }
    return true;
}

// Word2vec with a "count dim" header: is the first record binary? In the text format the first
// record is a UTF-8 line of a word and numbers; in the binary format it is "word " followed by
// raw float32 bytes, which are neither (a 0x00, a control byte or invalid UTF-8 appears).
bool word2vec_is_binary(const fs::path& path) {
    LineReader r(path);
    std::string_view line;
    if (!r.next(line)) return false;
    std::vector<std::string_view> f;
    split_ws(line, f);
    std::uint64_t count = 0, dim = 0;
    if (f.size() != 2 || !parse_uint(f[0], count) || !parse_uint(f[1], dim) || dim == 0) {
        return false;
    }
    std::string chunk(static_cast<std::size_t>(std::min<std::uint64_t>(
                          std::max<std::uint64_t>(1 << 16, 32 * dim + 1024), 1 << 26)),
                      '\0');
    chunk.resize(r.read_bytes(chunk.data(), chunk.size()));
    std::string_view first(chunk);
    first = first.substr(0, first.find('\n'));
    if (first.empty()) return false;
    if (!is_text_line(first)) return true;
    split_ws(first, f);
    float v;
    for (std::size_t k = 1; k < f.size(); ++k) {
        if (!parse_float(f[k], v)) return true;
    }
    return false;
}

// Rows after the two reserved ones: duplicates, lower-casing, max_words, the running sum.
struct RowBuilder {
    WordEmbeddings& e;
    const EmbeddingsTextOptions& options;
    std::vector<double> sum;
    std::unordered_map<std::string, std::int64_t> seen;

    void start(std::size_t dim) {
        e.dim = dim;
        e.matrix.assign(2 * dim, 0.0f);  // <pad>, <oov>
        sum.assign(dim, 0.0);
    }
    // false when max_words is reached.
    bool add(std::string_view raw_word, std::span<const float> values) {
        std::string word = options.lowercase ? ascii_lower(raw_word) : std::string(raw_word);
        if (seen.count(word)) {
            ++e.duplicates;
            return true;
        }
        if (options.max_words && e.words.size() - 2 >= options.max_words) return false;
        seen.emplace(word, static_cast<std::int64_t>(e.words.size()));
        e.words.push_back(std::move(word));
        e.matrix.insert(e.matrix.end(), values.begin(), values.end());
        for (std::size_t k = 0; k < values.size(); ++k) sum[k] += values[k];
        return true;
    }
    void finish() {
        if (options.oov_init == OovInit::Mean) {
            const double n = static_cast<double>(e.words.size() - 2);
            for (std::size_t k = 0; k < e.dim; ++k) {
                e.matrix[e.dim + k] = static_cast<float>(sum[k] / n);
            }
        }
        e.rebuild_index();
    }
};

// The binary format of word2vec's C tool (`-binary 1`): a text header "count dim\n", then per
// word: the word's bytes, one space, dim little-endian float32, and (optionally) "\n".
WordEmbeddings load_word2vec_binary(const fs::path& path, const EmbeddingsTextOptions& options) {
    LineReader reader(path);
    WordEmbeddings e;
    e.lowercase = options.lowercase;
    e.words = {"<pad>", "<oov>"};
    std::string_view line;
    std::vector<std::string_view> fields;
    std::uint64_t count = 0, dim = 0;
    if (!reader.next(line)) throw ParseError(reader.name(), 0, "no word vectors in the file");
    split_ws(line, fields);
    if (fields.size() != 2 || !parse_uint(fields[0], count) || !parse_uint(fields[1], dim) ||
        dim == 0 || dim > (1u << 20)) {
        reader.fail("word2vec header must be two positive integers 'count dim'");
    }
    RowBuilder rows{e, options, {}, {}};
    rows.start(static_cast<std::size_t>(dim));
    const std::string file = reader.name();
    std::vector<float> values(static_cast<std::size_t>(dim));
    std::string word;
    constexpr std::size_t kMaxWordBytes = 1 << 16;
    for (std::uint64_t i = 0; i < count; ++i) {
        const std::string entry = "entry " + std::to_string(i + 1) + " of " + std::to_string(count);
        word.clear();
        char c = 0;
        for (;;) {
            if (reader.read_bytes(&c, 1) != 1) {
                throw ParseError(
                    file, 0,
                    entry + ": truncated (the file ends " +
                        (word.empty() ? std::string("before the word") : "inside the word") + ")");
            }
            if (c == ' ') break;
            if (word.empty() && (c == '\n' || c == '\r')) continue;  // end of the previous row
            word.push_back(c);
            if (word.size() > kMaxWordBytes) {
                throw ParseError(file, 0,
                                 entry + ": no space after a word of " +
                                     std::to_string(kMaxWordBytes) +
                                     " bytes (wrong dimension in the header?)");
            }
        }
        if (word.empty()) {
            throw ParseError(file, 0, entry + ": empty word (wrong dimension in the header?)");
        }
        if (auto bad = find_invalid_utf8(word); bad != std::string::npos) {
            throw ParseError(file, 0,
                             entry + ": the word is not valid UTF-8 at byte " +
                                 std::to_string(bad + 1) +
                                 " (a wrong dimension in the header misaligns entries)");
        }
        const std::size_t want = values.size() * sizeof(float);
        const std::size_t got = reader.read_bytes(reinterpret_cast<char*>(values.data()), want);
        if (got != want) {
            throw ParseError(file, 0,
                             entry + " ('" + word + "'): truncated: " + std::to_string(dim) +
                                 " float32 values need " + std::to_string(want) +
                                 " bytes, the file ends after " + std::to_string(got));
        }
        static_assert(std::endian::native == std::endian::little,
                      "word2vec binary vectors are little-endian float32");
        for (std::size_t k = 0; k < values.size(); ++k) {
            if (!std::isfinite(values[k])) {
                throw ParseError(file, 0,
                                 entry + " ('" + word + "'): value " + std::to_string(k + 1) +
                                     " is not a finite number");
            }
        }
        if (!rows.add(word, values)) break;
        if (options.progress && (i & 0xFFFF) == 0) {
            options.progress(reader.bytes_read(), reader.size());
        }
    }
    if (!options.max_words || e.words.size() - 2 < options.max_words) {
        // Only line ends may follow the announced entries.
        char rest[256];
        std::size_t n;
        while ((n = reader.read_bytes(rest, sizeof rest)) > 0) {
            for (std::size_t k = 0; k < n; ++k) {
                if (rest[k] != '\n' && rest[k] != '\r' && rest[k] != ' ') {
                    throw ParseError(file, 0,
                                     "data after the " + std::to_string(count) +
                                         " entries the header announces (wrong count "
                                         "or dimension in the header?)");
                }
            }
        }
    }
    if (e.words.size() == 2) throw ParseError(file, 0, "no word vectors in the file");
    if (options.progress) options.progress(reader.bytes_read(), reader.size());
    rows.finish();
    return e;
}

}  // namespace

std::int64_t WordEmbeddings::index(std::string_view word) const {
    auto it = lowercase ? m_index.find(ascii_lower(word)) : m_index.find(word);
    return it == m_index.end() ? kOovIndex : it->second;
}

std::vector<std::int64_t> WordEmbeddings::indices(std::span<const std::string> ws) const {
    std::vector<std::int64_t> out;
    out.reserve(ws.size());
    for (const auto& w : ws) out.push_back(index(w));
    return out;
}

std::span<const float> WordEmbeddings::row(std::int64_t i) const {
    if (i < 0 || static_cast<std::size_t>(i) >= rows()) {
        throw InvalidArgument("WordEmbeddings::row: index " + std::to_string(i) +
                              " out of range [0, " + std::to_string(rows()) + ")");
    }
    return std::span<const float>(matrix).subspan(static_cast<std::size_t>(i) * dim, dim);
}

void WordEmbeddings::rebuild_index() {
    m_index.clear();
    m_index.reserve(words.size());
    for (std::size_t i = static_cast<std::size_t>(kFirstWordIndex); i < words.size(); ++i) {
        m_index.emplace(lowercase ? ascii_lower(words[i]) : words[i], static_cast<std::int64_t>(i));
    }
}

WordEmbeddings load_text_embeddings(const fs::path& path, const EmbeddingsTextOptions& options) {
    if (path != "-") {
        std::error_code ec;
        if (fs::is_regular_file(path, ec)) {
            const auto found = sniff_checkpoint_format(path);
            if (found != CheckpointFormat::Unknown && found != CheckpointFormat::Gzip &&
                found != CheckpointFormat::Empty) {
                throw ParseError(path.string(), 0,
                                 std::string("this is ") + checkpoint_format_description(found) +
                                     ", not word vectors (GloVe, word2vec, fastText)");
            }
        }
    }
    if (options.format == EmbeddingsFormat::Word2VecBinary ||
        ((options.format == EmbeddingsFormat::Auto ||
          options.format == EmbeddingsFormat::Word2Vec) &&
         word2vec_is_binary(path))) {
        return load_word2vec_binary(path, options);
    }
    LineReader reader(path);
    WordEmbeddings e;
    e.lowercase = options.lowercase;
    e.words = {"<pad>", "<oov>"};
    std::string_view line;
    std::vector<std::string_view> fields;
    bool header_checked = false;
    bool word2vec = false;
    std::uint64_t header_count = 0;
    std::uint64_t lines_with_words = 0;
    RowBuilder rows{e, options, {}, {}};
    std::vector<float> values;
    while (reader.next(line)) {
        split_ws(line, fields);
        if (!header_checked) {
            header_checked = true;
            std::uint64_t a = 0, b = 0;
            const bool looks_like_header =
                fields.size() == 2 && parse_uint(fields[0], a) && parse_uint(fields[1], b);
            if (options.format == EmbeddingsFormat::Word2VecText ||
                options.format == EmbeddingsFormat::Word2Vec ||
                (options.format == EmbeddingsFormat::Auto && looks_like_header)) {
                if (!looks_like_header || b == 0) {
                    reader.fail("word2vec header must be two positive integers 'count dim'");
                }
                word2vec = true;
                header_count = a;
                e.dim = static_cast<std::size_t>(b);
                continue;
            }
        }
        if (fields.empty()) continue;  // blank line
        if (auto bad = find_invalid_utf8(line); bad != std::string_view::npos) {
            reader.fail("invalid UTF-8 at byte " + std::to_string(bad + 1));
        }
        if (fields.size() < 2) reader.fail("expected a word followed by its vector");
        const std::size_t d = fields.size() - 1;
        if (e.dim == 0) {
            rows.start(d);
        } else if (d != e.dim) {
            reader.fail("vector has " + std::to_string(d) + " values, expected " +
                        std::to_string(e.dim) + (word2vec ? " (word2vec header)" : " (first line)"));
        }
        if (e.matrix.empty()) rows.start(e.dim);  // word2vec: dim known from the header
        values.resize(d);
        for (std::size_t k = 0; k < d; ++k) {
            if (!parse_float(fields[k + 1], values[k])) {
                reader.fail("value " + std::to_string(k + 1) + " '" + std::string(fields[k + 1]) +
                            "' is not a finite number");
            }
        }
        ++lines_with_words;
        if (!rows.add(fields[0], values)) break;
        if (options.progress && (lines_with_words & 0xFFFF) == 0) {
            options.progress(reader.bytes_read(), reader.size());
        }
    }
    if (!header_checked || e.dim == 0 || e.words.size() == 2) {
        throw ParseError(reader.name(), 0, "no word vectors in the file");
    }
    if (word2vec && !options.max_words && lines_with_words != header_count) {
        throw ParseError(reader.name(), 1,
                         "word2vec header announces " + std::to_string(header_count) +
                             " words, the file has " + std::to_string(lines_with_words));
    }
    if (options.progress) options.progress(reader.bytes_read(), reader.size());
    rows.finish();
    return e;
}

std::vector<std::string> load_word_list(const fs::path& path) {
    LineReader reader(path);
    std::vector<std::string> words;
    std::string_view line;
    while (reader.next(line)) {
        if (auto bad = find_invalid_utf8(line); bad != std::string_view::npos) {
            reader.fail("invalid UTF-8 at byte " + std::to_string(bad + 1));
        }
        words.emplace_back(line);
    }
    return words;
}

void save_word_list(const fs::path& path, std::span<const std::string> words) {
    for (const auto& w : words) {
        if (w.find_first_of("\r\n") != std::string::npos) {
            throw InvalidArgument("save_word_list: word contains a line break");
        }
    }
    AtomicFile out(path);
    for (const auto& w : words) {
        out.write(w);
        out.write("\n");
    }
    out.commit();
}

}  // namespace plumb::rerank
