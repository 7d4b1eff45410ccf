#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "plugin/error.hpp"
#include "rerank/wordpiece.hpp"
#include "tests/test_tmp.hpp"

namespace fs = std::filesystem;
using namespace plumb::rerank;
using Ids = std::vector<std::int64_t>;
using Words = std::vector<std::string>;

namespace {

fs::path temp_dir(const std::string& sub) {
    auto dir = plumb::test::process_dir("plumb_test_wp_") / sub;
    fs::create_directories(dir);
    return dir;
}

// The test vocabulary: id = line index.
const std::vector<std::string> kTokens = {
    "[PAD]",  // 0
    "[UNK]",  // 1
    "[CLS]",  // 2
    "[SEP]",  // 3
    "[MASK]", // 4
    "hello",  // 5
    "world",  // 6
    "don",    // 7
    "'",      // 8
    "t",      // 9
    "un",     // 10
    "##aff",  // 11
    "##able", // 12
    "the",    // 13
    ",",      // 14
    ".",      // 15
    "!",      // 16
    "\xE4\xB8\xAD",  // 17 中
    "\xE5\x9B\xBD",  // 18 国
    "cafe",   // 19
    "##s",    // 20
    "a",      // 21
    "##b",    // 22
    "##c",    // 23
    "r\xC3\xA9sum\xC3\xA9",  // 24 résumé (NFC)
    "Hello",  // 25
    "caf\xC3\xA9",  // 26 café (NFC, U+00E9)
    "?",      // 27
};

fs::path vocab_file() {
    auto p = temp_dir("vocab") / "vocab.txt";
    std::ofstream out(p, std::ios::binary);
    for (const auto& t : kTokens) out << t << "\n";
    return p;
}

WordPieceTokenizer make(WordPieceOptions o = {}) {
    return WordPieceTokenizer(std::make_shared<const Vocab>(Vocab::load(vocab_file())), o);
}

}  // namespace

// Expected outputs of BasicTokenizer: transformers' own unit tests for BertTokenizer
// (tests/models/bert/test_tokenization_bert.py) give these for the same inputs.
TEST(BasicTokenizer, LowerCasingAndPunctuation) {
    BasicTokenizer lower;
    EXPECT_EQ(lower.tokenize(" \tHeLLo!how  \n Are yoU?  "),
              (Words{"hello", "!", "how", "are", "you", "?"}));
    EXPECT_EQ(lower.tokenize("H\xC3\xA9llo"), (Words{"hello"}));
    WordPieceOptions keep_accents;
    keep_accents.strip_accents = false;
    EXPECT_EQ(BasicTokenizer(keep_accents).tokenize(" \tH\xC3\xA4LLo!how  \n Are yoU?  "),
              (Words{"h\xC3\xA4llo", "!", "how", "are", "you", "?"}));
    WordPieceOptions cased;
    cased.lowercase = false;
    EXPECT_EQ(BasicTokenizer(cased).tokenize(" \tHeLLo!how  \n Are yoU?  "),
              (Words{"HeLLo", "!", "how", "Are", "yoU", "?"}));
    WordPieceOptions cased_strip = cased;
    cased_strip.strip_accents = true;
    EXPECT_EQ(BasicTokenizer(cased_strip).tokenize(" \tH\xC3\xA4LLo!how  \n Are yoU?  "),
              (Words{"HaLLo", "!", "how", "Are", "yoU", "?"}));
    // ASCII symbols outside Unicode's P* categories are still punctuation ($ ^ ` are S*)
    EXPECT_EQ(lower.tokenize("a$b^c`d"), (Words{"a", "$", "b", "^", "c", "`", "d"}));
    // Unicode punctuation: U+2026 HORIZONTAL ELLIPSIS (Po), U+00BF (Po), U+201C/D (Pi/Pf)
    EXPECT_EQ(lower.tokenize("wait\xE2\x80\xA6\xC2\xBFqu\xC3\xA9?\xE2\x80\x9Cx\xE2\x80\x9D"),
              (Words{"wait", "\xE2\x80\xA6", "\xC2\xBF", "que", "?", "\xE2\x80\x9C", "x",
                     "\xE2\x80\x9D"}));
    // symbols outside P* (U+20AC EURO SIGN, Sc) are not split off
    EXPECT_EQ(lower.tokenize("5\xE2\x82\xAC"), (Words{"5\xE2\x82\xAC"}));
}

TEST(BasicTokenizer, ChineseCharactersAreSpaced) {
    BasicTokenizer b;
    // U+535A U+63A8 are CJK ideographs
    EXPECT_EQ(b.tokenize("ah\xE5\x8D\x9A\xE6\x8E\xA8zz"),
              (Words{"ah", "\xE5\x8D\x9A", "\xE6\x8E\xA8", "zz"}));
    // Hiragana (U+3053 U+3093) and Hangul (U+D55C) are not in the CJK ranges; accent
    // stripping leaves the Hangul syllable in NFD form (U+1112 U+1161 U+11AB: Lo, not Mn), as
    // _run_strip_accents returns the decomposed text
    EXPECT_EQ(b.tokenize("\xE3\x81\x93\xE3\x82\x93\xED\x95\x9C"),
              (Words{"\xE3\x81\x93\xE3\x82\x93\xE1\x84\x92\xE1\x85\xA1\xE1\x86\xAB"}));
    // an extension-B ideograph (U+20000, 4 bytes) is spaced too
    EXPECT_EQ(b.tokenize("x\xF0\xA0\x80\x80y"), (Words{"x", "\xF0\xA0\x80\x80", "y"}));
    WordPieceOptions off;
    off.tokenize_chinese_chars = false;
    EXPECT_EQ(BasicTokenizer(off).tokenize("ah\xE5\x8D\x9A\xE6\x8E\xA8zz"),
              (Words{"ah\xE5\x8D\x9A\xE6\x8E\xA8zz"}));
}

TEST(BasicTokenizer, CleanTextRemovesControlsAndNormalisesWhitespace) {
    BasicTokenizer b;
    // U+0001 (Cc), U+200B ZERO WIDTH SPACE (Cf), U+FFFD and U+0000 are dropped, not separators
    EXPECT_EQ(b.tokenize(std::string("he\x01l\xE2\x80\x8Bl\xEF\xBF\xBDo", 12)), (Words{"hello"}));
    EXPECT_EQ(b.tokenize(std::string("ab\0cd", 5)), (Words{"abcd"}));
    // vertical tab and form feed are control characters in Python's unicodedata (Cc): dropped
    EXPECT_EQ(b.tokenize("ab\x0b" "cd\x0c" "ef"), (Words{"abcdef"}));
    // NO-BREAK SPACE and IDEOGRAPHIC SPACE (Zs) and LINE SEPARATOR (Zl) separate words
    EXPECT_EQ(b.tokenize("a\xC2\xA0" "b\xE3\x80\x80" "c\xE2\x80\xA8" "d"),
              (Words{"a", "b", "c", "d"}));
    EXPECT_TRUE(b.tokenize("").empty());
    EXPECT_TRUE(b.tokenize(" \t\r\n ").empty());
    // a word made only of a combining mark disappears after accent stripping
    EXPECT_EQ(b.tokenize("a \xCC\x81 b"), (Words{"a", "b"}));
    EXPECT_THROW(b.tokenize("bad \xC3"), plumb::InvalidArgument);
}

TEST(WordPiece, HandCheckedIds) {
    auto tok = make();
    EXPECT_EQ(tok.encode_ids("H\xC3\xA9llo, World!"), (Ids{5, 14, 6, 16}));
    EXPECT_EQ(tok.encode_ids("don't"), (Ids{7, 8, 9}));
    EXPECT_EQ(tok.encode_ids("unaffable"), (Ids{10, 11, 12}));
    EXPECT_EQ(tok.tokenize("unaffable"), (Words{"un", "##aff", "##able"}));
    EXPECT_EQ(tok.encode_ids("cafes CAF\xC3\x89"), (Ids{19, 20, 19}));  // É -> e
    // CJK: each ideograph is a word; 人 (U+4EBA) is not in the vocabulary
    EXPECT_EQ(tok.encode_ids("\xE4\xB8\xAD\xE5\x9B\xBD\xE4\xBA\xBA"), (Ids{17, 18, 1}));
    // "abcd": a ##b ##c, then "##d" is missing: the whole word becomes one [UNK]
    EXPECT_EQ(tok.encode_ids("abcd abc"), (Ids{1, 21, 22, 23}));
    EXPECT_EQ(tok.tokenize("abcd"), (Words{"[UNK]"}));
    // unknown word
    EXPECT_EQ(tok.encode_ids("hello zebra"), (Ids{5, 1}));
    // special tokens written in the text are kept whole, even without spaces
    EXPECT_EQ(tok.encode_ids("[CLS] hello [SEP]"), (Ids{2, 5, 3}));
    EXPECT_EQ(tok.encode_ids("hello[SEP]world[MASK]"), (Ids{5, 3, 6, 4}));
    // "[sep]" is not the special token: brackets are punctuation
    EXPECT_EQ(tok.encode_ids("[sep]"), (Ids{1, 1, 1}));
    // Unicode punctuation becomes its own (here unknown) word
    EXPECT_EQ(tok.encode_ids("hello\xE2\x80\xA6world"), (Ids{5, 1, 6}));
}

TEST(WordPiece, MaxInputCharsPerWord) {
    auto tok = make();
    // "a" + 99 "b": 100 characters -> a ##b x 99
    std::string w100 = "a" + std::string(99, 'b');
    auto ids = tok.encode_ids(w100);
    ASSERT_EQ(ids.size(), 100u);
    EXPECT_EQ(ids[0], 21);
    EXPECT_EQ(ids[99], 22);
    // 101 characters -> one [UNK]
    EXPECT_EQ(tok.encode_ids(w100 + "b"), (Ids{1}));
    // characters, not bytes: "café" is 4 characters (5 bytes)
    WordPieceOptions o;
    o.lowercase = false;
    o.max_input_chars_per_word = 4;
    EXPECT_EQ(make(o).encode_ids("caf\xC3\xA9 Hello"), (Ids{26, 1}));
    o = WordPieceOptions{};
    o.max_input_chars_per_word = 5;
    EXPECT_EQ(make(o).encode_ids("hello unaffable"), (Ids{5, 1}));
}

TEST(WordPiece, CasedAndAccentOptions) {
    WordPieceOptions cased;
    cased.lowercase = false;
    auto tok = make(cased);
    EXPECT_EQ(tok.encode_ids("Hello hello H\xC3\xA9llo"), (Ids{25, 5, 1}));
    // "cafe" + U+0301 COMBINING ACUTE: the fast tokenizer keeps the two code points, so the
    // word is not "café" (U+00E9) and, with no "##\u0301" piece, becomes [UNK]; with NFC (the
    // Python BertTokenizer) it composes to "café"
    EXPECT_EQ(tok.encode_ids("cafe\xCC\x81"), (Ids{1}));
    cased.nfc = true;
    EXPECT_EQ(make(cased).encode_ids("cafe\xCC\x81"), (Ids{26}));
    // uncased: NFD + dropping marks makes both spellings "cafe" either way
    EXPECT_EQ(make().encode_ids("cafe\xCC\x81 caf\xC3\xA9"), (Ids{19, 19}));
    WordPieceOptions keep;
    keep.strip_accents = false;
    EXPECT_EQ(make(keep).encode_ids("R\xC3\x89SUM\xC3\x89"), (Ids{24}));
    // default (uncased): accents stripped, "resume" is not in the vocabulary
    EXPECT_EQ(make().encode_ids("R\xC3\x89SUM\xC3\x89"), (Ids{1}));
}

// Differential test against Hugging Face's tokenizer: the ids tokenizers.js 0.2.0 gives for 408
// hostile texts (accents composed and decomposed, CJK, final sigma, dotted I, fullwidth forms,
// emoji sequences, controls, odd spaces, over-long words, special tokens in the text) in three
// normaliser settings (tests/rerank/reference/wordpiece_hf/README.md: how they were made).
TEST(WordPiece, MatchesHuggingFaceTokenizersOnHostileTexts) {
    const fs::path dir = fs::path(PLUMB_SOURCE_DIR) / "tests/rerank/reference/wordpiece_hf";
    auto read_json = [](const fs::path& p) {
        std::ifstream in(p, std::ios::binary);
        return nlohmann::json::parse(in);
    };
    const auto texts = read_json(dir / "texts.json");
    ASSERT_EQ(texts.size(), 408u);
    auto vocab = std::make_shared<const Vocab>(Vocab::load(dir / "vocab.txt"));
    struct Mode {
        const char* name;
        bool lowercase;
        std::optional<bool> strip_accents;
    };
    for (const Mode& m : {Mode{"uncased", true, std::nullopt}, Mode{"cased", false, std::nullopt},
                          Mode{"uncased-keep-accents", true, false}}) {
        WordPieceOptions o;
        o.lowercase = m.lowercase;
        o.strip_accents = m.strip_accents;
        const WordPieceTokenizer tok(vocab, o);
        const auto expected = read_json(dir / (std::string("expected-") + m.name + ".json"));
        ASSERT_EQ(expected.size(), texts.size()) << m.name;
        std::size_t differ = 0;
        for (std::size_t i = 0; i < texts.size(); ++i) {
            const auto got = tok.encode_ids(texts[i].get<std::string>());
            const auto want = expected[i].get<Ids>();
            if (got != want && ++differ <= 3) {
                ADD_FAILURE() << m.name << ": text " << i << " " << texts[i].dump();
            }
        }
        EXPECT_EQ(differ, 0u) << m.name;
    }
}

TEST(WordPiece, PairEncodingAndTruncation) {
    auto tok = make();
    Encoding e = tok.encode_pair("hello world", "the the the the the", 8);
    EXPECT_EQ(e.input_ids, (Ids{2, 5, 6, 3, 13, 13, 13, 3}));
    EXPECT_EQ(e.token_type_ids, (Ids{0, 0, 0, 0, 1, 1, 1, 1}));
    EXPECT_EQ(e.attention_mask, (Ids{1, 1, 1, 1, 1, 1, 1, 1}));
    // fits: no truncation
    e = tok.encode_pair("hello", "world", 512);
    EXPECT_EQ(e.input_ids, (Ids{2, 5, 3, 6, 3}));
    EXPECT_EQ(e.token_type_ids, (Ids{0, 0, 0, 1, 1}));
    // 4 + 4 tokens, budget 5: passage first keeps the query whole ...
    e = tok.encode_pair("hello hello hello hello", "the the the the", 8, Truncation::PassageFirst);
    EXPECT_EQ(e.input_ids, (Ids{2, 5, 5, 5, 5, 3, 13, 3}));
    // ... longest_first removes alternately, the odd one from the passage: 3 + 2
    e = tok.encode_pair("hello hello hello hello", "the the the the", 8, Truncation::LongestFirst);
    EXPECT_EQ(e.input_ids, (Ids{2, 5, 5, 5, 3, 13, 13, 3}));
    EXPECT_EQ(e.token_type_ids, (Ids{0, 0, 0, 0, 0, 1, 1, 1}));
    // longest_first: 2 + 6, budget 5 -> the passage is cut to 3
    e = tok.encode_pair("hello world", "the the the the the the", 8, Truncation::LongestFirst);
    EXPECT_EQ(e.input_ids, (Ids{2, 5, 6, 3, 13, 13, 13, 3}));
    // a query longer than the budget is cut too, the passage is then empty
    e = tok.encode_pair("hello hello hello hello hello hello", "world", 6);
    EXPECT_EQ(e.input_ids, (Ids{2, 5, 5, 5, 3, 3}));
    EXPECT_EQ(e.token_type_ids, (Ids{0, 0, 0, 0, 0, 1}));
    // single sequence
    e = tok.encode("hello world", 3);
    EXPECT_EQ(e.input_ids, (Ids{2, 5, 3}));
    EXPECT_EQ(tok.encode_ids("unaffable hello", 2), (Ids{10, 11}));
    EXPECT_THROW(tok.encode_pair("a", "b", 2), plumb::InvalidArgument);
}

TEST(WordPiece, BatchWithDynamicPadding) {
    auto tok = make();
    std::vector<std::string_view> passages = {"world", "the the the"};
    BatchEncoding b = tok.encode_pairs("hello", passages, 16);
    EXPECT_EQ(b.batch, 2u);
    EXPECT_EQ(b.length, 7u);  // longest pair: [CLS] hello [SEP] the the the [SEP]
    EXPECT_EQ(b.lengths, (std::vector<std::size_t>{5, 7}));
    EXPECT_EQ(b.input_ids, (Ids{2, 5, 3, 6, 3, 0, 0, 2, 5, 3, 13, 13, 13, 3}));
    EXPECT_EQ(b.token_type_ids, (Ids{0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 1, 1, 1, 1}));
    EXPECT_EQ(b.attention_mask, (Ids{1, 1, 1, 1, 1, 0, 0, 1, 1, 1, 1, 1, 1, 1}));
}

TEST(WordPiece, ConcurrentUseGivesSameIds) {
    auto tok = make();
    const Ids expect = tok.encode_ids("H\xC3\xA9llo, World! don't unaffable \xE4\xB8\xAD");
    std::vector<std::thread> threads;
    std::vector<int> ok(4, 0);
    for (int t = 0; t < 4; ++t) {
        threads.emplace_back([&, t] {
            bool same = true;
            for (int i = 0; i < 200; ++i) {
                same &= tok.encode_ids("H\xC3\xA9llo, World! don't unaffable \xE4\xB8\xAD") == expect;
            }
            ok[t] = same;
        });
    }
    for (auto& th : threads) th.join();
    EXPECT_EQ(ok, (std::vector<int>{1, 1, 1, 1}));
}

TEST(Vocab, LoadSaveAndErrors) {
    auto dir = temp_dir("vocab_io");
    // CRLF and duplicates: the last line of a duplicate wins, as in transformers' load_vocab
    std::ofstream(dir / "v.txt", std::ios::binary) << "[PAD]\r\na\r\nb\r\na\r\n";
    Vocab v = Vocab::load(dir / "v.txt");
    EXPECT_EQ(v.size(), 4u);
    EXPECT_EQ(v.id("a"), 3);
    EXPECT_EQ(v.id("b"), 2);
    EXPECT_EQ(v.id("zzz"), -1);
    EXPECT_EQ(v.token(1), "a");
    EXPECT_THROW(v.token(4), plumb::InvalidArgument);
    v.save(dir / "v2.txt");
    EXPECT_EQ(Vocab::load(dir / "v2.txt").tokens(), v.tokens());

    std::ofstream(dir / "bad.txt", std::ios::binary) << "[PAD]\nok\nbad\xFF\n";
    try {
        Vocab::load(dir / "bad.txt");
        FAIL() << "no ParseError";
    } catch (const plumb::ParseError& e) {
        EXPECT_EQ(e.line(), 3u);
        EXPECT_NE(std::string(e.what()).find("bad.txt:3"), std::string::npos);
    }
    // a vocabulary without [CLS] cannot build pairs
    auto no_cls = std::make_shared<const Vocab>(std::vector<std::string>{"[PAD]", "[UNK]", "[SEP]"});
    EXPECT_THROW(WordPieceTokenizer(no_cls, {}), plumb::InvalidArgument);
    EXPECT_THROW(Vocab::load(dir / "missing.txt"), plumb::IoError);
}

TEST(WordPiece, FromFolderReadsTokenizerConfig) {
    auto dir = temp_dir("folder");
    fs::copy_file(vocab_file(), dir / "vocab.txt", fs::copy_options::overwrite_existing);
    auto tok = WordPieceTokenizer::from_folder(dir);
    EXPECT_EQ(tok.encode_ids("Hello"), (Ids{5}));
    std::ofstream(dir / "tokenizer_config.json") << R"({"do_lower_case": false})";
    auto cased = WordPieceTokenizer::from_folder(dir);
    EXPECT_EQ(cased.encode_ids("Hello"), (Ids{25}));
    EXPECT_EQ(cased.cls_id(), 2);
    EXPECT_EQ(cased.sep_id(), 3);
    EXPECT_EQ(cased.pad_id(), 0);
    EXPECT_EQ(cased.unk_id(), 1);
    EXPECT_EQ(cased.mask_id(), 4);
    EXPECT_THROW(WordPieceTokenizer::from_folder(temp_dir("nothing")), plumb::CheckpointError);
}

TEST(WordPiece, EarlyStopEqualsTruncatingTheFullTokenization) {
    auto tok = make();
    const std::string text =
        "H\xC3\xA9llo, World! don't[SEP]unaffable \xE4\xB8\xAD\xE5\x9B\xBD abcd cafes hello";
    const Ids full = tok.encode_ids(text);
    ASSERT_EQ(full.size(), 17u);  // 4 + 3 + 1 + 3 + 2 + 1 + 2 + 1
    for (std::size_t k = 1; k <= full.size() + 2; ++k) {
        const Ids prefix(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(
                                                         std::min(k, full.size())));
        EXPECT_EQ(tok.encode_ids(text, k), prefix) << "max_tokens " << k;
    }
}
