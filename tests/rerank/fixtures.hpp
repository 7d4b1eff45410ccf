#pragma once
/// \file fixtures.hpp
/// Inputs several rerank tests share: text files, copies of the tiny reference models
/// (tests/rerank/reference) and text triples in their vocabulary.
#include <array>
#include <filesystem>
#include <fstream>
#include <span>
#include <string>

namespace plumb::test {

/// The tiny reference models and expected.json (tests/rerank/reference).
inline const std::filesystem::path kRerankReference =
    std::filesystem::path(PLUMB_SOURCE_DIR) / "tests/rerank/reference";

/// Writes `text` to `path` as it is (binary), replacing the file.
inline void write_text(const std::filesystem::path& path, const std::string& text) {
    std::ofstream(path, std::ios::binary) << text;
}

/// A copy of the reference model folder `name` in `dir` (`dir`/`name`), for tests that write
/// next to a model or train from it.
inline std::filesystem::path copy_reference_model(const std::string& name,
                                                  const std::filesystem::path& dir) {
    namespace fs = std::filesystem;
    fs::path out = dir / name;
    fs::create_directories(out);
    for (const auto& e : fs::directory_iterator(kRerankReference / name)) {
        fs::copy_file(e.path(), out / e.path().filename(), fs::copy_options::overwrite_existing);
    }
    return out;
}

/// A training example as text: query, positive passage, negative passage.
using TextTriple = std::array<const char*, 3>;

/// Four triples in the tiny reference BERT vocabulary (the cat sat on mat dog ran a big red blue
/// fish swim hello world what is where bird fly tree car).
inline constexpr std::array<TextTriple, 4> kTinyBertTriples = {{
    {"where is the cat", "the cat sat on the mat", "a big red car"},
    {"what is the dog", "the dog ran", "blue fish swim"},
    {"where is the bird", "a bird fly on a tree", "hello world"},
    {"what is a fish", "a blue fish swim", "the red car ran"},
}};

/// The same queries with positives that name a man or a woman (IBBR's bias labels come from
/// kTinyGenderWords).
inline constexpr std::array<TextTriple, 4> kTinyBertGenderedTriples = {{
    {"where is the cat", "he sat on the mat with the cat", "a big red car"},
    {"what is the dog", "she ran with the dog", "blue fish swim"},
    {"where is the bird", "the man saw a bird fly on a tree", "hello world"},
    {"what is a fish", "the woman saw a blue fish swim", "the red car ran"},
}};

/// A gender word list (`word,f` / `word,m`) for kTinyBertGenderedTriples.
inline constexpr const char* kTinyGenderWords = "he,m\nshe,f\nman,m\nwoman,f\n";

/// `lines` lines `query<TAB>positive<TAB>negative`, cycling through `rows`.
inline std::string triples_tsv(std::span<const TextTriple> rows, int lines) {
    std::string s;
    for (int k = 0; k < lines; ++k) {
        const auto& r = rows[static_cast<std::size_t>(k) % rows.size()];
        s += std::string(r[0]) + "\t" + r[1] + "\t" + r[2] + "\n";
    }
    return s;
}

}  // namespace plumb::test
