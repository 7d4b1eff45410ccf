#include "rerank/embeddings_text.hpp"

#include <charconv>
#include <cmath>

#include "plugin/error.hpp"
#include "plugin/text_io.hpp"

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
    std::vector<double> sum;
    std::unordered_map<std::string, std::int64_t> seen;
    std::vector<float> values;
    while (reader.next(line)) {
        split_ws(line, fields);
        if (!header_checked) {
            header_checked = true;
            std::uint64_t a = 0, b = 0;
            const bool looks_like_header =
                fields.size() == 2 && parse_uint(fields[0], a) && parse_uint(fields[1], b);
            if (options.format == EmbeddingsFormat::Word2VecText ||
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
            e.dim = d;
            e.matrix.assign(2 * e.dim, 0.0f);  // <pad>, <oov>
            sum.assign(e.dim, 0.0);
        } else if (d != e.dim) {
            reader.fail("vector has " + std::to_string(d) + " values, expected " +
                        std::to_string(e.dim) + (word2vec ? " (word2vec header)" : " (first line)"));
        }
        if (e.matrix.empty()) {  // word2vec: dim known from the header
            e.matrix.assign(2 * e.dim, 0.0f);
            sum.assign(e.dim, 0.0);
        }
        values.resize(d);
        for (std::size_t k = 0; k < d; ++k) {
            if (!parse_float(fields[k + 1], values[k])) {
                reader.fail("value " + std::to_string(k + 1) + " '" + std::string(fields[k + 1]) +
                            "' is not a finite number");
            }
        }
        ++lines_with_words;
        std::string word = options.lowercase ? ascii_lower(fields[0]) : std::string(fields[0]);
        if (seen.count(word)) {
            ++e.duplicates;
            continue;
        }
        if (options.max_words && e.words.size() - 2 >= options.max_words) break;
        seen.emplace(word, static_cast<std::int64_t>(e.words.size()));
        e.words.push_back(std::move(word));
        e.matrix.insert(e.matrix.end(), values.begin(), values.end());
        for (std::size_t k = 0; k < d; ++k) sum[k] += values[k];
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
    if (options.oov_init == OovInit::Mean) {
        const double n = static_cast<double>(e.words.size() - 2);
        for (std::size_t k = 0; k < e.dim; ++k) {
            e.matrix[e.dim + k] = static_cast<float>(sum[k] / n);
        }
    }
    if (options.progress) options.progress(reader.bytes_read(), reader.size());
    e.rebuild_index();
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
