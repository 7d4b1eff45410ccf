#include "debias/rotation.hpp"

#include <charconv>
#include <limits>
#include <nlohmann/json.hpp>

#include "index/corpus.hpp"
#include "plugin/error.hpp"
#include "plugin/hash.hpp"
#include "plugin/text_io.hpp"

namespace plumb::debias {
namespace {

using plumb::splitmix64;

void write_offset(AtomicFile* file, std::string_view key, std::size_t r, std::size_t n) {
    if (!file) return;
    std::string line(key);
    line += '\t';
    line += std::to_string(r);
    line += '\t';
    line += std::to_string(n);
    line += '\n';
    file->write(line);
}

bool cancelled(const CancelToken* cancel) { return cancel && cancel->requested(); }

std::size_t parse_size(const LineReader& reader, std::string_view s, const char* what) {
    std::size_t v = 0;
    auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || ptr != s.data() + s.size())
        reader.fail(std::string(what) + " is not a non-negative integer: '" + std::string(s) + "'");
    return v;
}

}  // namespace

std::uint64_t uniform_below(std::mt19937_64& gen, std::uint64_t n) {
    if (n == 0) throw InvalidArgument("uniform_below: n must be positive");
    // Accept x >= 2^64 mod n: the accepted range holds a multiple of n values.
    const std::uint64_t threshold = (0 - n) % n;
    for (;;) {
        std::uint64_t x = gen();
        if (x >= threshold) return x % n;
    }
}

std::uint64_t fnv1a64(std::string_view s) noexcept { return plumb::fnv1a64(s); }

std::size_t draw_rotation(std::uint64_t seed, std::string_view text, std::size_t n) {
    if (n <= 1) return 1;
    std::mt19937_64 gen(splitmix64(seed ^ splitmix64(fnv1a64(text))));
    return static_cast<std::size_t>(uniform_below(gen, n)) + 1;
}

std::string rotate_tokens(const std::vector<std::string_view>& tokens, std::size_t r) {
    const std::size_t n = tokens.size();
    if (n == 0) {
        if (r != 1) throw InvalidArgument("rotate_tokens: r must be 1 for an empty passage");
        return {};
    }
    if (r < 1 || r > n)
        throw InvalidArgument("rotate_tokens: r = " + std::to_string(r) + " outside {1.." +
                              std::to_string(n) + "}");
    std::string out;
    std::size_t bytes = n;
    for (auto t : tokens) bytes += t.size();
    out.reserve(bytes);
    for (std::size_t k = 0; k < n; ++k) {
        if (k) out += ' ';
        out += tokens[(r - 1 + k) % n];
    }
    return out;
}

std::size_t map_rotated_index(std::size_t i, std::size_t r, std::size_t n) {
    if (n == 0 || i >= n || r < 1 || r > n)
        throw InvalidArgument("map_rotated_index: need i < n and 1 <= r <= n");
    return (i + n - (r - 1)) % n;
}

RotatedPassage rotate_passage(std::uint64_t seed, std::string_view text) {
    std::vector<std::string_view> tokens;
    split_ws(text, tokens);
    RotatedPassage out;
    out.n = tokens.size();
    out.r = draw_rotation(seed, text, out.n);
    out.text = rotate_tokens(tokens, out.r);
    return out;
}

RotateStats rotate_corpus(const std::filesystem::path& input, const std::filesystem::path& output,
                          const RotateCorpusOptions& options, const ProgressCallback& progress,
                          const CancelToken* cancel) {
    index::CorpusReaderOptions ropts;
    ropts.format = index::resolve_corpus_format(options.format, input);
    ropts.skip_bad = options.skip_bad;
    ropts.tabs_in_text = options.tabs_in_text;
    index::CorpusReader reader(input, ropts);
    AtomicFile out(output);
    std::optional<AtomicFile> offsets;
    if (!options.offsets.empty()) offsets.emplace(options.offsets);
    RotateStats stats;
    index::Document doc;
    std::string line;
    while (reader.next(doc)) {
        if (cancelled(cancel)) throw Error("rotation cancelled; no output written");
        ++stats.passages;
        std::string text;
        if (options.only_ids && !options.only_ids->count(doc.id)) {
            ++stats.not_selected;
            text = std::move(doc.text);
        } else {
            auto rotated = rotate_passage(options.seed, doc.text);
            ++stats.rotated;
            if (rotated.r == 1) ++stats.unchanged_r1;
            write_offset(offsets ? &*offsets : nullptr, doc.id, rotated.r, rotated.n);
            text = std::move(rotated.text);
        }
        if (ropts.format == index::CorpusFormat::Tsv) {
            line = doc.id;
            line += '\t';
            line += text;
        } else {
            nlohmann::ordered_json j;
            j["_id"] = doc.id;
            if (!doc.title.empty()) j["title"] = doc.title;
            j["text"] = text;
            line = j.dump();
        }
        line += '\n';
        out.write(line);
        if (progress && (stats.passages & 1023) == 0)
            progress(reader.bytes_read(), reader.size_bytes());
    }
    stats.skipped_bad = reader.skipped();
    if (progress) progress(reader.bytes_read(), reader.size_bytes());
    if (offsets) offsets->commit();
    out.commit();
    return stats;
}

RotateStats rotate_triples(const std::filesystem::path& input, const std::filesystem::path& output,
                           std::uint64_t seed, const std::filesystem::path& offsets_path,
                           bool skip_bad, const ProgressCallback& progress,
                           const CancelToken* cancel) {
    LineReader reader(input);
    AtomicFile out(output);
    std::optional<AtomicFile> offsets;
    if (!offsets_path.empty()) offsets.emplace(offsets_path);
    RotateStats stats;
    std::string_view line;
    std::vector<std::string_view> fields;
    std::string buf;
    while (reader.next(line)) {
        if (cancelled(cancel)) throw Error("rotation cancelled; no output written");
        if (trim(line).empty()) continue;
        split(line, '\t', fields);
        if (fields.size() != 3) {
            if (skip_bad) {
                ++stats.skipped_bad;
                continue;
            }
            reader.fail("expected a triple 'query<TAB>positive<TAB>negative', got " +
                        std::to_string(fields.size()) + " fields");
        }
        if (!is_valid_utf8(line)) {
            if (skip_bad) {
                ++stats.skipped_bad;
                continue;
            }
            reader.fail("invalid UTF-8");
        }
        buf.assign(fields[0]);
        const char* names[2] = {"pos", "neg"};
        for (int k = 0; k < 2; ++k) {
            auto rotated = rotate_passage(seed, fields[1 + k]);
            stats.passages++;
            stats.rotated++;
            if (rotated.r == 1) ++stats.unchanged_r1;
            if (offsets) {
                std::string key = std::to_string(reader.line_number()) + '\t' + names[k];
                write_offset(&*offsets, key, rotated.r, rotated.n);
            }
            buf += '\t';
            buf += rotated.text;
        }
        buf += '\n';
        out.write(buf);
        if (progress && (reader.line_number() & 1023) == 0)
            progress(reader.bytes_read(), reader.size());
    }
    if (progress) progress(reader.bytes_read(), reader.size());
    if (offsets) offsets->commit();
    out.commit();
    return stats;
}

std::vector<std::pair<std::string, RotationOffset>> read_rotation_offsets(
    const std::filesystem::path& path) {
    LineReader reader(path);
    std::vector<std::pair<std::string, RotationOffset>> out;
    std::string_view line;
    std::vector<std::string_view> fields;
    while (reader.next(line)) {
        if (trim(line).empty()) continue;
        split(line, '\t', fields);
        if (fields.size() != 3)
            reader.fail("expected 'docid<TAB>r<TAB>n', got " + std::to_string(fields.size()) +
                        " fields");
        RotationOffset off;
        off.r = parse_size(reader, fields[1], "r");
        off.n = parse_size(reader, fields[2], "n");
        if (off.r < 1 || off.r > std::max<std::size_t>(off.n, 1))
            reader.fail("r = " + std::to_string(off.r) + " outside {1.." +
                        std::to_string(std::max<std::size_t>(off.n, 1)) + "}");
        out.emplace_back(std::string(fields[0]), off);
    }
    return out;
}

}  // namespace plumb::debias
