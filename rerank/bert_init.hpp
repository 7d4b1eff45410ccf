#pragma once
/// \file bert_init.hpp
/// An untrained BERT folder for training from scratch (`plumb bert-init`): a WordPiece vocabulary
/// built from the words of a corpus and its topics, and a randomly initialised BertModel of the
/// given sizes, saved as a Hugging Face folder (config.json, model.safetensors, vocab.txt,
/// tokenizer_config.json) that `plumb train --model cat|dot --init` loads.
///
/// The vocabulary, in id order:
///  1. the special tokens [PAD] (id 0 = pad_token_id), [UNK], [CLS], [SEP], [MASK];
///  2. every character (Unicode code point) of every word seen, as a word-initial piece "c" and
///     as a continuation piece "##c", in code-point order;
///  3. the words of the texts (BasicTokenizer: lower-cased, accents stripped, punctuation split
///     off; see wordpiece.hpp) seen at least `min_count` times and not already listed, most
///     frequent first (ties in byte order), until the vocabulary holds `max_size` tokens.
/// Hence every kept word maps to itself, and a word that is not in the vocabulary (rare, or new)
/// is split by WordPiece's greedy longest-match-first rule into the longest vocabulary word that
/// begins it followed by single-character continuation pieces ("tokenizer" ->
/// "token", "##i", "##z", "##e", "##r" when "token" is a word of the vocabulary); only a word
/// holding a character never seen becomes [UNK].
/// Deterministic: the same texts give the same vocabulary whatever their order.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>

#include "rerank/hf_config.hpp"
#include "rerank/wordpiece.hpp"

namespace plumb::rerank {

struct WordPieceVocabOptions {
    /// Most tokens in the vocabulary (specials and characters included; they are always kept,
    /// InvalidArgument when they alone exceed it).
    std::size_t max_size = 30000;
    /// Words seen fewer times are left out (split into pieces instead).
    std::size_t min_count = 1;
    /// How text is split into words (lower-casing, accents, punctuation).
    WordPieceOptions tokenizer;
};

/// Counts the words of texts and builds the vocabulary described in the file comment.
class WordPieceVocabBuilder {
public:
    explicit WordPieceVocabBuilder(WordPieceVocabOptions options = {});

    /// Counts the words of `text`. Throws InvalidArgument for invalid UTF-8.
    void add_text(std::string_view text);
    /// Distinct words counted so far.
    std::size_t distinct_words() const noexcept { return m_counts.size(); }
    /// The vocabulary. Throws InvalidArgument when specials and characters exceed max_size.
    Vocab build() const;

private:
    WordPieceVocabOptions m_options;
    BasicTokenizer m_basic;
    std::unordered_map<std::string, std::uint64_t> m_counts;
};

/// The sizes of a small BERT trained from scratch (defaults: 2 layers x 128 hidden, 2 heads,
/// intermediate 512, 512 positions; GELU, dropout 0.1, as BertConfig).
struct BertInitOptions {
    std::int64_t layers = 2;
    std::int64_t hidden = 128;
    std::int64_t heads = 2;
    std::int64_t intermediate = 512;
    std::int64_t max_positions = 512;
    std::uint64_t seed = 42;
    /// Standard deviation of the random word embeddings (transformers: 0.02, the same as the
    /// position and token type embeddings). Larger values let word identity dominate the
    /// embedding sum over positions after the LayerNorm (as TK's word vectors dominate its
    /// position encodings); see the main job's use with `plumb train --freeze-word-embeddings`.
    double word_std = 0.02;
};

/// The config of a BERT with `options`' sizes over a vocabulary of `vocab_size` tokens
/// (BertConfig defaults otherwise; pad id 0). Throws CheckpointError for inconsistent sizes.
HfConfig make_bert_init_config(const BertInitOptions& options, std::int64_t vocab_size);

/// What write_bert_init wrote.
struct BertInitSummary {
    HfConfig config;
    std::size_t vocab_size = 0;
    std::size_t parameters = 0;  ///< number of scalar parameters
};

/// Writes `dir` as one unit (AtomicDirectory): config.json, model.safetensors (a randomly
/// initialised BertModel without heads, transformers' initialisation, deterministic per seed),
/// vocab.txt and tokenizer_config.json (do_lower_case etc. from the vocabulary's tokenizer
/// options). The vocabulary's first token must be [PAD] (the pad id). Throws InvalidArgument,
/// CheckpointError, IoError.
BertInitSummary write_bert_init(const std::filesystem::path& dir, const Vocab& vocab,
                                const BertInitOptions& options,
                                const WordPieceOptions& tokenizer = {});

}  // namespace plumb::rerank
