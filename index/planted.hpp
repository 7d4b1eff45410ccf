#pragma once
/// \file planted.hpp
/// The planted-bias corpus: a deterministic synthetic collection whose biases are known, the
/// embedded default for the debiasing experiments (issue 7; index/README.md, "The planted-bias
/// corpus"). Built on CorpusGenerator's Zipf vocabulary and background passages.
///
/// Per query (qids "1".."N": train, then dev, then test): 2-5 content words ("terms", mid-
/// frequency topic words) and an ANSWER span of `answer_words` rare words (rank range
/// [answer_rank_min, answer_rank_max] · vocab). The query text is either a keyword query (the
/// terms, shuffled) or a question (a template of English function words around the terms, e.g.
/// "what is the T1 of T2 T3"). Each planted passage serves exactly one query:
///  - the ANSWER passage (grade 2): all terms and the complete answer span, as one contiguous
///    block "terms-left answer terms-right" inserted into background words so that the answer
///    starts at relative position x (start_token ≈ x · n);
///  - 0..max_partial PARTIAL passages (grade 1): the complete answer span and a strict subset
///    (about half) of the terms, placed like the answer passage;
///  - `hard_negatives` HARD NEGATIVES (unjudged): a strict subset (hard_negative_terms · |terms|,
///    at least 1, at most |terms| - 1; hard_negative_terms = 1: every term, so that coverage no
///    longer separates them from relevant passages) of the terms, each 1-2 times, plus a strict
///    subset of the answer words in shuffled order (never the complete span: it is checked and
///    broken if background words complete it by chance), as one block whose start is drawn from
///    `distractor_positions`.
/// x for relevant passages: Early = truncated exponential on [0, 1) with scale `early_scale`
/// (x = -s·ln(1 - u·(1 - e^(-1/s))); s = 0.15 puts ~74 % of the mass below 0.2, ~86 % below 0.3,
/// mean ≈ 0.15: MS MARCO-like, Hofstätter et al. 2021 Fig. 1), or Uniform on [0, 1) (SQuAD-like).
/// Distractor placement: Opposite (1 - x' with x' drawn from the answer distribution: late for
/// Early answers, uniform for Uniform ones), Late (1 - x' with x' Early), Uniform, or Early.
///
/// Intended effect (paper 000, Table 3). With Early answers and Opposite placement, a re-ranker
/// trained on the triples can separate relevant passages from hard negatives in two ways: by
/// where the query-term matches are (early ⇒ relevant: a shortcut) and by how many of the query
/// terms match (all ⇒ relevant: the position-independent true signal; the complete answer span is
/// the ground truth the answer-position audit finds). A TK trained on the original triples learns
/// the shortcut and loses effectiveness on a rotated test set (rotation, Eq. 7, spreads matches
/// uniformly); trained on rotated triples it can only learn coverage and does not lose. The
/// shortcut gets stronger as hard_negative_terms → 1 (less coverage difference) and
/// hard_negative_share → 1.
///
/// Gender: a share `gender_share` of all passages gets 1..max_gender_words words of ONE gender
/// from the built-in list (gender_words(); written as gender_words.txt, eval::GenderWordList
/// format) at random positions outside the planted block. Relevant (grade >= 1) gendered
/// passages are male with probability `gender_skew`, all other gendered passages with 0.5.
/// Queries contain no gender word (label 'n'), so the skew is the only gender signal a ranking
/// can pick up. Pseudo-words can never spell an English gender word (see generator.hpp).
///
/// Gendered queries (paper 001; off by default): a share `female_query_share` of the queries is
/// female and `male_query_share` male (label 'f' / 'm', drawn per query from its own stream), the
/// rest neutral ('n'). A gendered query's text contains exactly one gender word of its gender
/// (inserted at a random position after the question prefix), so a lexicon labeller
/// (`plumb debias query-gender`) recovers the label. Its relevant passages always carry gender
/// words (one gender per passage, as above): of the query's gender with probability
/// `query_gender_skew`, else of the other gender (paper 001 assumes a query's relevant document
/// shares its gender; MS MARCO's generated pairs are ~3.5 % female and ~5.3 % male queries).
/// Neutral queries keep the `gender_skew` model above.
/// Psychological categories (paper 001's LIWC measure): with gendered queries on, every planted
/// passage of a gendered query gets `liwc_words` words of a built-in LIWC-format dictionary
/// (written as liwc.dic; liwc_dictionary()) at random background positions. Relevant passages
/// draw each word's category from their query's gender's stereotyped categories with
/// probability `liwc_skew` (female: posemo, negemo, home; male: achieve, work, leisure; our
/// choice of stereotype), else uniformly from all seven leaf categories; hard negatives always
/// uniformly. So the relevant passages of female and male queries differ in φ (and a ranker
/// that learns the association carries it into its top 10), the bias paper 001 balances.
/// Generated pairs (paper 001's augmentation pool, doc2query-like): `generated_pairs` extra
/// (query, passage) pairs, qids g1..gK, not in the corpus or the qrels, each with gender drawn
/// like the queries', a keyword/question text with the gender word, and one passage (background,
/// all its terms, gender words as a gendered query's relevant passage, category words as above);
/// written as generated_pairs.tsv (qid, query, docid, passage) and generated_gender.tsv.
///
/// Gendered candidates (paper 004, IBBR; off by default): with `candidate_gender_share` set, the
/// planted passages of every query (relevant ones of neutral queries, partial ones, hard
/// negatives) carry gender words with that probability instead of `gender_share` (relevant:
/// male with `gender_skew`, hard negatives: 0.5), so most queries have a female- or male-biased
/// relevant passage and gendered non-relevant candidates: PRF_m / PRF_f are defined.
/// A learnable gender preference (paper 004's planted cause; off by default): with
/// `candidate_gender_train_skew` s set as well, the TRAIN queries' gendered relevant passages
/// (neutral queries' answer and partial passages) are male with probability s instead of
/// `gender_skew`, and their gendered hard negatives FEMALE with probability s instead of 0.5.
/// Dev and test queries keep the model above. So in the training triples male words mark
/// positives and female words negatives, a ranker trained on them learns to score male-labelled
/// passages higher than female-labelled ones, and on the dev / test candidates (where gender
/// says nothing about relevance when `gender_skew` = 0.5) that learned preference shows as
/// PRF_m > PRF_f: the gap IBBR is meant to remove. With s < 1 the training batches still hold
/// female-labelled positives, which IBBR's PD / TS need (a batch without both groups adds 0).
/// It draws nothing extra: every other passage and file stays as without it.
///
/// A gender cue in the training triples (paper 001's learnable cause; off by default): with
/// `near_duplicate_negatives` Gendered (All), the hard negatives of the gendered (of every)
/// TRAIN query are near-duplicates of a relevant passage whose gender words mirror the
/// relevant passages': every query term once (not `hard_negative_terms`), a strict subset of
/// the answer words, one block placed like a relevant passage's (`answer_positions`, not
/// `distractor_positions`), and gender words drawn as for the query's relevant passages (same
/// share) but male with 1 - their P(male) (a male query's: female with `query_gender_skew`; a
/// neutral query's: female with `gender_train_skew`). So in their triples what tells the
/// positive from the negative is the gender of the words (besides the complete answer span,
/// which no query word matches), and where the judgements lean male — more male queries
/// (`male_query_share` > `female_query_share`), neutral train queries' relevant passages male
/// (`gender_train_skew` > 0.5) — a ranker learns to prefer male words: the preference paper
/// 001's balancing targets. Dev and test passages are unchanged, and every other passage and
/// file stays as without it. (Without a gender contrast — negatives with no gender words —
/// TK learned "more words ⇒ relevant", not a gender preference: README, section 001.)
/// Exactly balanced evaluation gender (`balanced_eval_gender`; paper 001's evaluation; off by
/// default): with gender drawn per passage, the dev / test relevant passages of a few hundred
/// queries lean one way by chance (at 0.5, collection seed 45 of the main job: an ideal ranking's
/// ARaB@10 −0.07), so a ranking measure such as ARaB@10 then moves with effectiveness and not
/// only with a ranker's gender preference. With it on, the planted passages of the DEV and TEST
/// queries — the answer passages of neutral queries, their partial passages, and the hard
/// negatives of every query — take their gender from a shuffled list per split and class
/// (these three) instead of a draw: of the class's n passages round(share · n) carry gender
/// words (share: as without it), half of them male and half female, each male passage's word
/// count (1..max_gender_words) equal to a female one's (an odd one out: either gender by a
/// coin). Their own stream: every other passage stays as without it; so do the topics, qrels
/// and triple ids, but the text of a random negative (triples.train.tsv,
/// generated_negatives.tsv) that happens to be a dev / test planted passage carries its new
/// gender words. Needs `gender_skew` 0.5.
/// `gender_train_skew` alone: the train queries' gendered relevant passages (neutral queries)
/// are male with that probability instead of `gender_skew` (dev / test keep `gender_skew`).
/// Generated negatives (with `generated_pairs`, `generated_negatives` on): one negative per
/// generated pair, made the way the training triples' negatives are (generated_negatives.tsv,
/// qid, docid, passage): with probability `hard_negative_share` a hard negative of the pair's
/// own query (docid g<k>n: background, the pair's terms, category words drawn uniformly; near-
/// duplicate (All; Gendered: for a gendered pair): every term once, placed like the pair's own
/// block, gender words mirrored as above; otherwise as a hard negative: `hard_negative_terms` of
/// the terms 1-2 times each, placed by `distractor_positions`, gender words with `gender_share`,
/// either gender), else a random corpus passage (its own docid). `plumb debias balance
/// --negatives` makes the added training triples with them.
///
/// Complexity levels (paper 003; off by default): with `complexity_levels` every query gets a
/// level simple / medium / complex (uniform, from its own stream) that fixes its form and its
/// relevance cues:
///  - simple: a keyword query (the terms); relevant passages contain every query word, hard
///    negatives a strict subset: lexical overlap identifies relevance;
///  - medium: a question (template around the terms, as above), same cues as simple;
///  - complex: a question whose main clause holds the terms, followed by a subordinate clause
///    (English function words and verbs: "that is used to make X", "when you need X for Y", ...)
///    with `clause_terms` further content words. Relevant passages contain the main clause's
///    terms but none of the clause's words; hard negatives contain a strict subset of the terms
///    plus every clause word (1-2 times each), so they overlap the query in as many or more
///    words than the relevant passage. Relevance follows the main clause; lexical overlap —
///    the shortcut a model learns from simple and medium queries — points to the hard negatives.
/// Keyword/question/clause forms make the levels visible to debias::ComplexityAnalyzer (more
/// tokens, verbs, clauses and dependent clauses per level). Labels: query_complexity.tsv.
/// The cue above is `complexity_cue` Overlap (the default). With Position (paper 003's
/// experiment, `--complexity-cue position`) the shortcut is WHERE the query words match, and it
/// holds for simple and medium queries only:
///  - simple and medium: as above (relevant blocks drawn from `answer_positions`, hard
///    negatives' blocks from `distractor_positions`: with Early / Opposite, early match ⇒
///    relevant);
///  - complex: the placements are swapped — relevant blocks from the distractor distribution,
///    hard negatives' blocks from the answer distribution (late match ⇒ relevant) — and hard
///    negatives carry no clause words.
/// Coverage (a relevant passage holds every main-clause term, a hard negative a strict subset)
/// identifies relevance at every level; the position cue agrees with it for two thirds of the
/// queries and contradicts it for the complex third. A ranker that leans on the position cue
/// (TK does: paper 000) ranks complex queries worse; a weak learner that picks up the cue lets
/// EqualizeIR's product of experts discount it. Each passage consumes the same random draws
/// with either placement, so only complex queries' planted passages differ from Overlap's.
/// With `clause_words` Corpus (the default) the clause words are corpus words, which background
/// passages contain: complex queries then lose against background passages too, whatever the
/// cue. `clause_words` Unseen (paper 003's experiment in scripts/run) takes them from a pool of
/// pseudo-words no background passage contains, so that what sets complex queries apart is the
/// cue alone (see ClauseWords).
/// With all three off (the defaults) every data file is the same as without these options.
///
/// Survivorship (paper 002): per query a list of `shown_k` passages as shown to an annotator.
/// With probability `unanswered` the query is unanswered (its relevant passages are not shown,
/// nothing is selected); otherwise the answer passage is shown at rank min(k, G) with G
/// geometric(shown_rank_p) on {1, 2, ...} and selected; partial passages are shown unselected;
/// the rest are hard negatives and random passages.
///
/// Determinism as CorpusGenerator: same configuration ⇒ byte-identical files; passage i depends
/// only on the seed, the configuration and i.

#include <array>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "index/generator.hpp"

namespace plumb::index {

/// Where relevant passages carry their answer span.
enum class AnswerPositions { Early, Uniform };
/// Where hard negatives carry their block of query words.
enum class DistractorPositions { Opposite, Late, Uniform, Early };
/// What misleads on complex queries (complexity levels; see the file comment).
enum class ComplexityCue { Overlap, Position };
/// Where a complex query's clause content words come from (complexity levels): Corpus (the
/// default) draws them from the corpus vocabulary like the query terms, so background passages
/// contain them; Unseen draws them from a pool of pseudo-words that no background passage
/// contains (CVCVCV, ending in a vowel, where every vocabulary word ends in a consonant), so
/// they give no background passage a lexical advantage (BM25: document frequency 0 unless a
/// planted passage carries them; with cue Overlap the hard negatives do).
enum class ClauseWords { Corpus, Unseen };

/// "early" / "uniform" (throws InvalidArgument otherwise) and back.
AnswerPositions parse_answer_positions(std::string_view name);
const char* answer_positions_name(AnswerPositions value) noexcept;
/// "opposite" / "late" / "uniform" / "early" and back.
DistractorPositions parse_distractor_positions(std::string_view name);
const char* distractor_positions_name(DistractorPositions value) noexcept;
/// "overlap" / "position" and back.
ComplexityCue parse_complexity_cue(std::string_view name);
const char* complexity_cue_name(ComplexityCue value) noexcept;
/// Which train queries' hard negatives are near-duplicates (see the file comment).
enum class NearDuplicateNegatives { Off, Gendered, All };

/// "corpus" | "unseen"; throws InvalidArgument for another name.
ClauseWords parse_clause_words(std::string_view name);
const char* clause_words_name(ClauseWords value) noexcept;
/// "off" | "gendered" | "all"; throws InvalidArgument for another name.
NearDuplicateNegatives parse_near_duplicate_negatives(std::string_view name);
const char* near_duplicate_negatives_name(NearDuplicateNegatives value) noexcept;

/// Parameters of a planted-bias collection (see the file comment for the model).
struct PlantedConfig {
    /// Vocabulary, background passages, seed and corpus format: passages, seed, vocab, zipf_s,
    /// min_words, max_words, topic_rank_min/max (query terms), format. Its queries, grade,
    /// distractor and query-term fields are not used.
    GeneratorConfig base;
    std::uint64_t train_queries = 1000;
    std::uint64_t dev_queries = 100;
    std::uint64_t test_queries = 200;

    AnswerPositions answer_positions = AnswerPositions::Early;
    double early_scale = 0.15;          ///< scale of the truncated exponential (Early)
    std::uint32_t answer_words = 3;     ///< answer span length (words)
    double answer_rank_min = 0.2;       ///< answer-word ranks: uniform in
    double answer_rank_max = 1.0;       ///< [answer_rank_min, answer_rank_max] · vocab
    std::uint32_t min_query_terms = 2;  ///< content words per query
    std::uint32_t max_query_terms = 5;
    double question_share = 0.5;    ///< share of question-like queries (else keyword queries)
    std::uint32_t max_partial = 1;  ///< grade-1 passages per query: uniform in [0, max_partial]

    std::uint32_t hard_negatives = 4;   ///< hard negatives per query
    double hard_negative_terms = 0.75;  ///< share of the query terms in a hard negative
    DistractorPositions distractor_positions = DistractorPositions::Opposite;

    std::uint32_t triples_per_query = 10;  ///< training triples per train query
    double hard_negative_share = 0.5;      ///< share of triples whose negative is a hard negative

    double gender_share = 0.3;           ///< share of passages with gender words
    double gender_skew = 0.75;           ///< P(male) for gendered relevant passages
    /// Train queries only: P(male) of neutral queries' gendered relevant passages; unset =
    /// gender_skew (paper 001's cause: judgements that lean male, dev / test gender_skew).
    std::optional<double> gender_train_skew;
    std::uint32_t max_gender_words = 3;  ///< gender words per gendered passage: 1..max

    double female_query_share = 0.0;  ///< share of female queries (paper 001); 0 = none
    double male_query_share = 0.0;    ///< share of male queries; female + male <= 1
    double query_gender_skew = 0.9;   ///< P(a gendered query's relevant passage has its gender)
    /// P(gender words) for every query's planted passages (paper 004); unset = gender_share.
    std::optional<double> candidate_gender_share;
    /// Train queries only: P(male) of gendered relevant passages and P(female) of gendered
    /// hard negatives (paper 004's learnable cause; needs candidate_gender_share); unset =
    /// gender_skew and 0.5 as for dev and test.
    std::optional<double> candidate_gender_train_skew;

    std::uint32_t liwc_words = 3;  ///< category words per planted passage of a gendered query
    double liwc_skew = 0.8;        ///< P(a relevant passage's category is stereotyped)
    std::uint64_t generated_pairs =
        0;  ///< generated (query, passage) pairs (needs gendered queries)
    /// Train hard negatives as near-duplicates with mirrored gender (paper 001's cause).
    NearDuplicateNegatives near_duplicate_negatives = NearDuplicateNegatives::Off;
    bool generated_negatives = false;  ///< one negative per generated pair (needs the pairs)
    /// Exactly balanced gender on the DEV and TEST queries' planted passages (paper 001's
    /// evaluation; off by default; needs gender_skew 0.5): see the file comment.
    bool balanced_eval_gender = false;

    bool complexity_levels = false;  ///< simple / medium / complex queries (paper 003)
    std::uint32_t clause_terms = 2;  ///< content words in a complex query's subordinate clause
    ComplexityCue complexity_cue = ComplexityCue::Overlap;  ///< the cue complex queries break
    ClauseWords clause_words = ClauseWords::Corpus;         ///< the clause words' vocabulary

    std::uint32_t shown_k = 10;  ///< passages shown per query (survivorship)
    double unanswered = 0.3;     ///< share of unanswered queries
    double shown_rank_p = 0.4;   ///< geometric parameter of the shown rank of the answer

    /// Throws InvalidArgument when a value is outside its domain.
    void validate() const;
    std::uint64_t queries() const noexcept { return train_queries + dev_queries + test_queries; }
};

/// Size presets: "tiny" (2,000 passages; 60 / 10 / 20 queries: tests), "small" (20,000;
/// 1,000 / 100 / 200: the main job), "medium" (200,000; 5,000 / 200 / 500), "large"
/// (2,000,000; 20,000 / 500 / 1,000: benchmarks). Other fields keep their defaults.
/// Throws InvalidArgument for another name.
PlantedConfig planted_preset(std::string_view size);

/// Role of a passage in the collection.
enum class PassageRole : std::uint8_t { Background, Answer, Partial, HardNegative };
const char* passage_role_name(PassageRole role) noexcept;

/// One planted passage and what was planted in it.
struct PlantedPassage {
    Document doc;
    PassageRole role = PassageRole::Background;
    std::uint32_t query = 0;         ///< query index (0-based), when role != Background
    std::uint32_t tokens = 0;        ///< whitespace tokens of the text
    std::int64_t answer_start = -1;  ///< token index of the answer span (Answer, Partial), or -1
    std::int64_t block_start = -1;   ///< token index of the planted block, or -1
    char gender = 'n';               ///< 'f', 'm' or 'n' (no gender words)
};

/// One topic with its planted metadata.
struct PlantedTopic {
    std::string qid;
    std::string text;
    std::string split;       ///< "train", "dev" or "test"
    std::string type;        ///< "keyword" or the question word ("what", "how", ...)
    std::string answer;      ///< the answer span (space-separated words)
    char gender = 'n';       ///< 'f', 'm' or 'n' (query_gender.tsv)
    std::string complexity;  ///< "simple", "medium", "complex"; empty without complexity_levels
};

/// "simple", "medium", "complex" for planted complexity levels 0, 1, 2.
const char* complexity_level_name(std::uint8_t level) noexcept;

/// One training triple by ids (`qid`, relevant passage, negative passage).
struct TripleIds {
    std::uint32_t query = 0;
    std::uint64_t positive = 0;
    std::uint64_t negative = 0;
    bool hard = false;  ///< the negative is one of the query's hard negatives
};

/// One shown passage (eval/subsets.hpp shown-ranks row).
struct ShownRow {
    std::uint32_t query = 0;
    unsigned rank = 0;  ///< 1-based
    std::uint64_t passage = 0;
    bool selected = false;
};

/// Paths and figures of a written planted collection.
struct PlantedCollection {
    std::filesystem::path dir;
    std::vector<std::filesystem::path> files;  ///< every file written, in writing order
    std::uint64_t passages = 0;
    std::uint64_t queries = 0;
    std::uint64_t judgments = 0;
    std::uint64_t triples = 0;
    std::uint64_t corpus_bytes = 0;
    bool complete = false;  ///< false when cancelled (nothing committed)
};

/// Generates a planted-bias collection. Construction builds the vocabulary and the plan
/// (O(vocab + queries · planted passages) memory); passages are produced on demand. Const methods
/// are thread-safe.
class PlantedGenerator : private CorpusGenerator {
public:
    /// Throws InvalidArgument for an invalid configuration (including more planted passages than
    /// `base.passages`).
    explicit PlantedGenerator(PlantedConfig config);

    const PlantedConfig& planted_config() const noexcept { return m_config; }

    /// Passage i (0-based) and its planted metadata. Throws InvalidArgument when out of range.
    PlantedPassage passage(std::uint64_t i) const;
    /// All topics in qid order (train, dev, test).
    std::vector<PlantedTopic> topics() const;
    /// All judgments: per query its answer passage (grade 2) then partial passages (grade 1).
    std::vector<Judgment> qrels() const;
    /// Training triples of the train queries, in query order.
    std::vector<TripleIds> triples() const;
    /// Annotator-shown rankings of every query, by query then rank.
    std::vector<ShownRow> shown_rankings() const;

    /// Query index → its relevant passages (answer first), hard negatives.
    const std::vector<std::uint64_t>& relevant_passages(std::uint32_t query) const;
    const std::vector<std::uint64_t>& hard_negative_passages(std::uint32_t query) const;
    /// The answer span (words) and the content words of query `query` (main clause).
    std::vector<std::string> answer_span(std::uint32_t query) const;
    std::vector<std::string> query_terms(std::uint32_t query) const;
    /// The content words of a complex query's subordinate clause (empty otherwise).
    std::vector<std::string> clause_terms(std::uint32_t query) const;
    /// 'f', 'm' or 'n'.
    char query_gender(std::uint32_t query) const;
    /// 0 simple, 1 medium, 2 complex (0 for every query without complexity_levels).
    std::uint8_t complexity_level(std::uint32_t query) const;

    /// The built-in gender word list (word, 'f' | 'm'), lower case.
    static const std::vector<std::pair<std::string, char>>& gender_words();
    /// The built-in LIWC-format dictionary (liwc.dic): categories affect (parent of posemo and
    /// negemo), posemo, negemo, cogproc, drives (parent of achieve), achieve, work, home,
    /// leisure; ten English words per leaf category, none a gender word or a pseudo-word.
    static const std::string& liwc_dictionary();
    /// Generated pair k (0-based; qid "g<k+1>", docid "g<k+1>"): gender, query, passage.
    struct GeneratedPair {
        std::string qid;
        char gender = 'n';
        std::string query;
        std::string passage;
    };
    GeneratedPair generated_pair(std::uint64_t k) const;
    /// The negative of generated pair k (generated_negatives; see the file comment): docid
    /// "g<k+1>n" for a hard negative, a corpus passage's id otherwise.
    struct GeneratedNegative {
        std::string qid;
        std::string docid;
        std::string passage;
    };
    GeneratedNegative generated_negative(std::uint64_t k) const;

    /// Writes the collection into `dir` (created), every file atomically:
    ///   corpus.tsv | corpus.jsonl      id<TAB>text | BEIR JSONL (_id, title, text)
    ///   topics.tsv, topics.{train,dev,test}.tsv          qid<TAB>query
    ///   qrels.txt, qrels.{train,dev,test}.txt            qid 0 docid grade (2 answer, 1 partial)
    ///   triples.train.tsv                                query<TAB>positive<TAB>negative
    ///   triples.train.ids.tsv                            qid<TAB>pid+<TAB>pid-
    ///   answers.tsv                                      qid<TAB>answer span
    ///   gender_words.txt                                 word,f | word,m
    ///   query_gender.tsv                                 qid<TAB>f|m|n (all n by default)
    ///   query_complexity.tsv (complexity_levels only)    qid<TAB>simple|medium|complex
    ///   liwc.dic (gendered queries only)                 LIWC-format dictionary
    ///   generated_pairs.tsv (generated_pairs > 0)        qid<TAB>query<TAB>docid<TAB>passage
    ///   generated_gender.tsv (generated_pairs > 0)       qid<TAB>f|m|n
    ///   generated_negatives.tsv (generated_negatives)    qid<TAB>docid<TAB>passage
    ///   shown_ranks.tsv                                  qid<TAB>rank<TAB>docid<TAB>is_selected
    ///   query_types.tsv                                  qid<TAB>type
    ///   manifest.json                                    parameters, counts, realised statistics
    /// Progress counts passages. When `cancel` is requested nothing is committed (complete =
    /// false). Throws IoError.
    PlantedCollection write(const std::filesystem::path& dir, const ProgressCallback& progress = {},
                            const CancelToken* cancel = nullptr) const;

private:
    struct QueryPlan {
        std::vector<std::uint32_t> terms;     ///< content-word ranks
        std::vector<std::uint32_t> answer;    ///< answer-word ranks, span order
        std::vector<std::uint64_t> relevant;  ///< answer passage, then partial passages
        std::vector<std::uint64_t> hard;
        std::vector<std::uint32_t> clause;  ///< complex queries: clause content-word tokens
        char gender = 'n';
        std::uint8_t level = 0;  ///< complexity level (complexity_levels only)
    };
    struct Assignment {
        std::uint32_t query = 0;
        PassageRole role = PassageRole::Background;
    };
    /// balanced_eval_gender: a dev / test planted passage's gender ('n' = none) and word count.
    struct GenderSlot {
        char gender = 'n';
        std::uint32_t words = 0;
    };

    void build_plan();
    /// balanced_eval_gender: fills m_gender_slots (see the file comment).
    void plan_balanced_gender();
    /// Generated pair k's stream after its terms were drawn (gender, then terms).
    std::vector<std::uint32_t> generated_terms(std::uint64_t k, std::mt19937_64& rng,
                                               char& gender) const;
    /// Whether the train hard negatives of query (or generated pair) gender `g` are near-duplicates.
    bool near_duplicate_for(char g) const noexcept;
    double draw_answer_x(std::mt19937_64& rng) const;
    /// Inserts `liwc_words` category words into `words` (see the file comment).
    void add_category_words(std::vector<std::uint32_t>& words, char gender, bool stereotyped,
                            std::mt19937_64& rng) const;
    /// A gender noun of `gender` inserted into `text` at a word position in [first, last].
    static std::string with_gender_word(const std::string& text, char gender, std::size_t first,
                                        std::size_t last, std::mt19937_64& rng);
    double m_term_lo = 1, m_term_hi = 1;  ///< content-word rank range
    double draw_distractor_x(std::mt19937_64& rng) const;
    std::string text_of(const std::vector<std::uint32_t>& tokens) const;
    /// The word of one token (vocabulary rank, unseen clause word, category or gender word).
    std::string token_word(std::uint32_t token) const;
    PlantedTopic topic(std::uint32_t q) const;

    PlantedConfig m_config;
    std::vector<QueryPlan> m_queries;
    std::vector<std::string> m_unseen_words;  ///< ClauseWords::Unseen: the clause word pool
    std::unordered_map<std::uint64_t, Assignment> m_assigned;
    std::unordered_map<std::uint64_t, GenderSlot> m_gender_slots;  ///< balanced_eval_gender
};

}  // namespace plumb::index
