#include "index/planted.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <unordered_set>

#include "plugin/error.hpp"
#include "plugin/text_io.hpp"

namespace plumb::index {

namespace fs = std::filesystem;

namespace {

// Stream domains of the planted generator (CorpusGenerator uses 1-4).
constexpr std::uint64_t kQueryPlanDomain = 101;
constexpr std::uint64_t kAssignDomain = 102;
constexpr std::uint64_t kPassageDomain = 103;
constexpr std::uint64_t kQueryTextDomain = 104;
constexpr std::uint64_t kTripleDomain = 105;
constexpr std::uint64_t kShownDomain = 106;
constexpr std::uint64_t kQueryGenderDomain = 107;      // gendered queries (opt-in)
constexpr std::uint64_t kComplexityDomain = 108;       // complexity levels (opt-in)
constexpr std::uint64_t kQueryGenderTextDomain = 109;  // the gender word of a gendered query
constexpr std::uint64_t kLiwcDomain = 110;             // category words (gendered queries)
constexpr std::uint64_t kGeneratedDomain = 111;        // generated pairs
constexpr std::uint64_t kUnseenWordDomain = 112;       // unseen clause words (opt-in)
constexpr std::uint64_t kGeneratedNegDomain = 113;     // generated pairs' negatives (opt-in)
constexpr std::uint64_t kBalancedGenderDomain = 114;   // balanced dev / test gender (opt-in)

// Tokens are vocabulary ranks (1..vocab, vocab <= 50 M); gender words are kGenderBase + index.
constexpr std::uint32_t kGenderBase = 0xF0000000u;
// Category words (liwc.dic) are kLiwcBase + leaf · kLiwcPerLeaf + j.
constexpr std::uint32_t kLiwcBase = 0xE0000000u;
// Unseen clause words (ClauseWords::Unseen) are kUnseenBase + index into the pool.
constexpr std::uint32_t kUnseenBase = 0xD0000000u;
constexpr std::size_t kUnseenPool = 1000;

// The built-in LIWC-format dictionary: leaf categories with their dictionary ids (a leaf under
// affect or drives also carries the parent's id) and ten words each. English words that are
// neither gender words nor pseudo-words (they break the syllable pattern of generator.cpp).
struct LiwcLeaf {
    const char* name;
    const char* ids;
    std::array<const char*, 10> words;
};
constexpr std::size_t kLiwcPerLeaf = 10;
constexpr std::array<LiwcLeaf, 7> kLiwcLeaves{{
    {"posemo",
     "1 2",
     {"happy", "love", "nice", "glad", "joy", "kind", "hope", "enjoy", "lovely", "sweet"}},
    {"negemo",
     "1 3",
     {"sad", "angry", "afraid", "hurt", "worry", "upset", "fear", "cry", "lonely", "nervous"}},
    {"cogproc",
     "4",
     {"think", "know", "because", "reason", "understand", "believe", "consider", "idea", "maybe",
      "realize"}},
    {"achieve",
     "5 6",
     {"win", "success", "goal", "earn", "achieve", "effort", "ambition", "award", "victory",
      "compete"}},
    {"work",
     "7",
     {"job", "office", "career", "business", "salary", "boss", "project", "employee", "market",
      "company"}},
    {"home",
     "8",
     {"house", "kitchen", "garden", "room", "clean", "cook", "bed", "furniture", "dinner",
      "laundry"}},
    {"leisure",
     "9",
     {"music", "game", "party", "movie", "sport", "travel", "holiday", "dance", "fun", "hobby"}},
}};
// Stereotyped leaves per gender (our choice): female posemo, negemo, home; male achieve, work,
// leisure.
constexpr std::array<std::size_t, 3> kFemaleLeaves{0, 1, 5};
constexpr std::array<std::size_t, 3> kMaleLeaves{3, 4, 6};

constexpr std::size_t kHistogramBins = 10;

template <class T>
void shuffle(std::vector<T>& v, std::mt19937_64& rng) {
    for (std::size_t i = v.size(); i > 1; --i) {
        std::size_t j = static_cast<std::size_t>(uniform_below(rng, i));
        std::swap(v[i - 1], v[j]);
    }
}

// Question prefixes by question word; connectors between content words. English function words
// only: none is a gender word or can be a pseudo-word.
struct QuestionKind {
    const char* type;
    std::vector<const char*> prefixes;
};
const std::vector<QuestionKind>& question_kinds() {
    static const std::vector<QuestionKind> kinds{
        {"what", {"what is the", "what are the", "what is a", "what does the"}},
        {"how", {"how do i", "how to", "how much does the", "how many", "how long does the"}},
        {"where", {"where is the", "where can i find the", "where are"}},
        {"when", {"when did the", "when is the", "when was"}},
        {"who", {"who was the", "who invented the", "who is"}},
        {"which", {"which", "which is the"}},
        {"why", {"why does the", "why is the", "why do"}},
    };
    return kinds;
}
constexpr const char* kConnectors[] = {"of", "in", "for", "on", "to", "and", "with", "from", "at"};

// Subordinate clauses of complex queries (relative, adverbial): English function words and
// verbs WordNet knows, so that the complexity analyser sees verbs, clauses and dependent
// clauses. None is a gender word.
constexpr const char* kClauses[] = {"that is used to make",        "that can be found in",
                                    "which was made with",         "when you need",
                                    "because it is used for",      "if they want to buy",
                                    "where people go to see",      "after it was sold to",
                                    "so that it can be used with", "which they often use for"};
constexpr const char* kClauseJoins[] = {"and", "or", "with", "for", "in"};

// A question: a prefix of a random question kind (its type in `type`), then `words` joined now
// and then by a connector; `prefix_words` receives the prefix's word count.
std::string question_text(const std::vector<std::string>& words, std::mt19937_64& rng,
                          std::string& type, std::size_t& prefix_words) {
    const auto& kinds = question_kinds();
    const QuestionKind& kind = kinds[uniform_below(rng, kinds.size())];
    type = kind.type;
    std::string text = kind.prefixes[uniform_below(rng, kind.prefixes.size())];
    prefix_words = 1 + static_cast<std::size_t>(std::count(text.begin(), text.end(), ' '));
    for (std::size_t k = 0; k < words.size(); ++k) {
        if (k > 0 && uniform01(rng) < 0.5) {
            text += ' ';
            text += kConnectors[uniform_below(rng, std::size(kConnectors))];
        }
        text += ' ';
        text += words[k];
    }
    return text;
}

// Pronouns and titles of the gender word list are not put into queries (nouns read better).
bool query_gender_word(const std::string& w) {
    for (const char* p :
         {"she", "her", "hers", "herself", "he", "him", "his", "himself", "mrs", "mr"})
        if (w == p) return false;
    return true;
}

std::size_t bin_of(double x) {
    auto b = static_cast<std::size_t>(std::floor(x * kHistogramBins));
    return std::min(b, kHistogramBins - 1);
}

// First index of `needle` as a contiguous subsequence of `hay`, or npos.
std::size_t find_span(const std::vector<std::uint32_t>& hay,
                      const std::vector<std::uint32_t>& needle) {
    if (needle.empty() || needle.size() > hay.size()) return std::string::npos;
    auto it = std::search(hay.begin(), hay.end(), needle.begin(), needle.end());
    return it == hay.end() ? std::string::npos : static_cast<std::size_t>(it - hay.begin());
}

GeneratorConfig base_config(const PlantedConfig& c) {
    c.validate();
    GeneratorConfig b = c.base;
    b.queries = 0;  // the planted generator makes its own plan
    return b;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Names and presets
// ---------------------------------------------------------------------------------------------

namespace {

/// One enumerator and its name (as options, reports and JSON spell it).
template <class E>
struct Named {
    const char* name;
    E value;
};

/// The enumerator called `name`; else InvalidArgument "<what> must be a, b or c, not 'x'" (the
/// names in table order).
template <class E, std::size_t N>
E parse_named(std::string_view name, const Named<E> (&table)[N], const char* what) {
    for (const auto& e : table) {
        if (name == e.name) return e.value;
    }
    std::string list;
    for (std::size_t i = 0; i < N; ++i) {
        if (i > 0) list += i + 1 == N ? " or " : ", ";
        list += table[i].name;
    }
    throw InvalidArgument(std::string(what) + " must be " + list + ", not '" + std::string(name) +
                          "'");
}

template <class E, std::size_t N>
const char* name_of(E value, const Named<E> (&table)[N]) noexcept {
    for (const auto& e : table) {
        if (e.value == value) return e.name;
    }
    return "?";
}

constexpr Named<AnswerPositions> kAnswerPositions[] = {{"early", AnswerPositions::Early},
                                                       {"uniform", AnswerPositions::Uniform}};
constexpr Named<DistractorPositions> kDistractorPositions[] = {
    {"opposite", DistractorPositions::Opposite},
    {"late", DistractorPositions::Late},
    {"uniform", DistractorPositions::Uniform},
    {"early", DistractorPositions::Early}};
constexpr Named<PassageRole> kPassageRoles[] = {{"background", PassageRole::Background},
                                                {"answer", PassageRole::Answer},
                                                {"partial", PassageRole::Partial},
                                                {"hard_negative", PassageRole::HardNegative}};
constexpr Named<ComplexityCue> kComplexityCues[] = {{"overlap", ComplexityCue::Overlap},
                                                    {"position", ComplexityCue::Position}};
constexpr Named<ClauseWords> kClauseWords[] = {{"corpus", ClauseWords::Corpus},
                                               {"unseen", ClauseWords::Unseen}};
constexpr Named<NearDuplicateNegatives> kNearDuplicateNegatives[] = {
    {"off", NearDuplicateNegatives::Off},
    {"gendered", NearDuplicateNegatives::Gendered},
    {"all", NearDuplicateNegatives::All}};

}  // namespace

AnswerPositions parse_answer_positions(std::string_view name) {
    return parse_named(name, kAnswerPositions, "answer positions");
}

const char* answer_positions_name(AnswerPositions value) noexcept {
    return name_of(value, kAnswerPositions);
}

DistractorPositions parse_distractor_positions(std::string_view name) {
    return parse_named(name, kDistractorPositions, "distractor positions");
}

const char* distractor_positions_name(DistractorPositions value) noexcept {
    return name_of(value, kDistractorPositions);
}

const char* complexity_level_name(std::uint8_t level) noexcept {
    switch (level) {
        case 0:
            return "simple";
        case 1:
            return "medium";
        case 2:
            return "complex";
    }
    return "?";
}

const char* passage_role_name(PassageRole role) noexcept { return name_of(role, kPassageRoles); }

ComplexityCue parse_complexity_cue(std::string_view name) {
    return parse_named(name, kComplexityCues, "complexity cue");
}

const char* complexity_cue_name(ComplexityCue value) noexcept {
    return name_of(value, kComplexityCues);
}

ClauseWords parse_clause_words(std::string_view name) {
    return parse_named(name, kClauseWords, "clause words");
}

const char* clause_words_name(ClauseWords value) noexcept { return name_of(value, kClauseWords); }

NearDuplicateNegatives parse_near_duplicate_negatives(std::string_view name) {
    return parse_named(name, kNearDuplicateNegatives, "near-duplicate negatives");
}

const char* near_duplicate_negatives_name(NearDuplicateNegatives value) noexcept {
    return name_of(value, kNearDuplicateNegatives);
}

PlantedConfig planted_preset(std::string_view size) {
    PlantedConfig c;
    auto set = [&](std::uint64_t p, std::uint64_t tr, std::uint64_t dv, std::uint64_t te) {
        c.base.passages = p;
        c.train_queries = tr;
        c.dev_queries = dv;
        c.test_queries = te;
    };
    if (size == "tiny")
        set(2000, 60, 10, 20);
    else if (size == "small")
        set(20000, 1000, 100, 200);
    else if (size == "medium")
        set(200000, 5000, 200, 500);
    else if (size == "large")
        set(2000000, 20000, 500, 1000);
    else
        throw InvalidArgument("size must be tiny, small, medium or large, not '" +
                              std::string(size) + "'");
    return c;
}

void PlantedConfig::validate() const {
    auto bad = [](const std::string& m) { throw InvalidArgument("planted generator: " + m); };
    auto share = [&](double v, const char* name) {
        if (!(v >= 0.0 && v <= 1.0)) bad(std::string(name) + " must be in [0, 1]");
    };
    base.validate();
    if (queries() == 0) bad("need at least one query");
    if (queries() > 10'000'000) bad("at most 10,000,000 queries");
    if (!(early_scale > 0.0 && early_scale <= 10.0)) bad("early_scale must be in (0, 10]");
    if (answer_words == 0 || answer_words > 20) bad("answer_words must be in [1, 20]");
    if (!(answer_rank_min > 0.0 && answer_rank_min <= answer_rank_max && answer_rank_max <= 1.0))
        bad("need 0 < answer_rank_min <= answer_rank_max <= 1");
    if (min_query_terms < 2 || max_query_terms < min_query_terms || max_query_terms > 20)
        bad("need 2 <= min_query_terms <= max_query_terms <= 20");
    if (max_query_terms > base.vocab / 4) bad("max_query_terms must be at most vocab/4");
    if (answer_words > base.vocab / 4) bad("answer_words must be at most vocab/4");
    share(question_share, "question_share");
    if (max_partial > 100) bad("max_partial must be at most 100");
    if (hard_negatives > 1000) bad("hard_negatives must be at most 1000");
    share(hard_negative_terms, "hard_negative_terms");
    share(hard_negative_share, "hard_negative_share");
    if (triples_per_query > 100000) bad("triples_per_query must be at most 100,000");
    share(gender_share, "gender_share");
    share(gender_skew, "gender_skew");
    if (gender_train_skew) share(*gender_train_skew, "gender_train_skew");
    if (max_gender_words == 0 || max_gender_words > 100)
        bad("max_gender_words must be in [1, 100]");
    share(female_query_share, "female_query_share");
    share(male_query_share, "male_query_share");
    if (female_query_share + male_query_share > 1.0)
        bad("female_query_share + male_query_share must be at most 1");
    share(query_gender_skew, "query_gender_skew");
    if (candidate_gender_share) share(*candidate_gender_share, "candidate_gender_share");
    if (candidate_gender_train_skew) {
        share(*candidate_gender_train_skew, "candidate_gender_train_skew");
        if (!candidate_gender_share)
            bad("candidate_gender_train_skew needs candidate_gender_share");
    }
    if (clause_terms == 0 || clause_terms > 10) bad("clause_terms must be in [1, 10]");
    if (liwc_words > 100) bad("liwc_words must be at most 100");
    share(liwc_skew, "liwc_skew");
    if (generated_pairs > 10'000'000) bad("generated_pairs must be at most 10,000,000");
    if (generated_pairs > 0 && female_query_share + male_query_share <= 0.0)
        bad("generated_pairs need gendered queries (female_query_share or male_query_share)");
    if (generated_negatives && generated_pairs == 0)
        bad("generated_negatives need generated_pairs");
    if (balanced_eval_gender && gender_skew != 0.5)
        bad("balanced_eval_gender needs gender_skew 0.5 (dev / test relevant passages half male)");
    if (near_duplicate_negatives == NearDuplicateNegatives::Gendered &&
        female_query_share + male_query_share <= 0.0)
        bad("near_duplicate_negatives gendered needs gendered queries");
    if (complexity_levels && max_query_terms + clause_terms > base.vocab / 4)
        bad("max_query_terms + clause_terms must be at most vocab/4");
    if (shown_k == 0 || shown_k > 1000) bad("shown_k must be in [1, 1000]");
    share(unanswered, "unanswered");
    if (!(shown_rank_p > 0.0 && shown_rank_p <= 1.0)) bad("shown_rank_p must be in (0, 1]");
    const std::uint64_t planted = queries() * (1ULL + max_partial + hard_negatives);
    if (planted >= base.passages)
        bad("passages (" + std::to_string(base.passages) +
            ") must exceed the planted passages (queries x (1 + max_partial + hard_negatives) = " +
            std::to_string(planted) + ")");
    if (shown_k + 1ULL + max_partial > base.passages)
        bad("shown_k + 1 + max_partial must be at most passages");
}

// ---------------------------------------------------------------------------------------------
// Gender words
// ---------------------------------------------------------------------------------------------

const std::string& PlantedGenerator::liwc_dictionary() {
    static const std::string text = [] {
        std::string t =
            "%\n1\taffect\n2\tposemo\n3\tnegemo\n4\tcogproc\n5\tdrives\n6\tachieve\n7\twork\n"
            "8\thome\n9\tleisure\n%\n";
        for (const auto& leaf : kLiwcLeaves)
            for (const char* w : leaf.words) t += std::string(w) + '\t' + leaf.ids + '\n';
        return t;
    }();
    return text;
}

void PlantedGenerator::add_category_words(std::vector<std::uint32_t>& words, char gender,
                                          bool stereotyped, std::mt19937_64& rng) const {
    const auto& stereo = gender == 'f' ? kFemaleLeaves : kMaleLeaves;
    for (std::uint32_t n = 0; n < m_config.liwc_words; ++n) {
        const std::size_t leaf = stereotyped && uniform01(rng) < m_config.liwc_skew
                                     ? stereo[uniform_below(rng, stereo.size())]
                                     : uniform_below(rng, kLiwcLeaves.size());
        const auto w = kLiwcBase + static_cast<std::uint32_t>(leaf * kLiwcPerLeaf +
                                                              uniform_below(rng, kLiwcPerLeaf));
        const auto pos = uniform_below(rng, words.size() + 1);
        words.insert(words.begin() + static_cast<std::ptrdiff_t>(pos), w);
    }
}

std::string PlantedGenerator::with_gender_word(const std::string& text, char gender,
                                               std::size_t first, std::size_t last,
                                               std::mt19937_64& rng) {
    std::vector<std::string> pool;
    for (const auto& [w, g] : gender_words())
        if (g == gender && query_gender_word(w)) pool.push_back(w);
    const std::string& gw = pool[uniform_below(rng, pool.size())];
    std::vector<std::string> words;
    for (std::size_t at = 0; at <= text.size();) {
        const auto sp = std::min(text.find(' ', at), text.size());
        words.push_back(text.substr(at, sp - at));
        at = sp + 1;
    }
    last = std::min(last, words.size());
    const auto pos = first + uniform_below(rng, last - first + 1);
    words.insert(words.begin() + static_cast<std::ptrdiff_t>(pos), gw);
    std::string out;
    for (std::size_t k = 0; k < words.size(); ++k) out += (k ? " " : "") + words[k];
    return out;
}

const std::vector<std::pair<std::string, char>>& PlantedGenerator::gender_words() {
    // Gender-definitional English words (in the spirit of Rekabsaz & Schedl 2020's list). None
    // has the shape of a pseudo-word ((consonant vowel)+ final consonant over generator.cpp's
    // letters), so passages' background words never collide with them.
    static const std::vector<std::pair<std::string, char>> words = [] {
        std::vector<std::pair<std::string, char>> w;
        for (const char* f :
             {"she",        "her",    "hers",        "herself",  "woman",     "women",  "girl",
              "girls",      "mother", "mothers",     "daughter", "daughters", "sister", "sisters",
              "wife",       "wives",  "queen",       "queens",   "lady",      "ladies", "aunt",
              "aunts",      "niece",  "grandmother", "actress",  "mrs",       "female", "females",
              "girlfriend", "bride",  "heroine",     "princess"})
            w.emplace_back(f, 'f');
        for (const char* m :
             {"he",        "him",       "his",     "himself",  "man",       "men",
              "boy",       "boys",      "father",  "fathers",  "son",       "sons",
              "brother",   "brothers",  "husband", "husbands", "king",      "kings",
              "gentleman", "gentlemen", "uncle",   "uncles",   "nephew",    "grandfather",
              "actor",     "mr",        "male",    "males",    "boyfriend", "groom",
              "hero",      "prince"})
            w.emplace_back(m, 'm');
        return w;
    }();
    return words;
}

// ---------------------------------------------------------------------------------------------
// Plan
// ---------------------------------------------------------------------------------------------

PlantedGenerator::PlantedGenerator(PlantedConfig config)
    : CorpusGenerator(base_config(config)), m_config(std::move(config)) {
    build_plan();
}

void PlantedGenerator::build_plan() {
    const auto& c = m_config;
    const auto& b = c.base;
    const double vocab = b.vocab;
    // Content words: log-uniform ranks in [lo, hi] (as CorpusGenerator's topic words).
    double hi = std::floor(std::max(1.0, b.topic_rank_max * vocab));
    double lo = std::floor(std::min(hi, std::max(1.0, b.topic_rank_min * vocab)));
    if (hi - lo + 1 < 2.0 * c.max_query_terms) {  // tiny vocabularies: widen
        hi = std::min(vocab, lo + 2.0 * c.max_query_terms);
        if (hi - lo + 1 < c.max_query_terms) lo = 1;
    }
    m_term_lo = lo;
    m_term_hi = hi;
    // Answer words: uniform ranks in [alo, ahi].
    double ahi = std::max(1.0, std::floor(c.answer_rank_max * vocab));
    double alo = std::min(ahi, std::max(1.0, std::ceil(c.answer_rank_min * vocab)));
    if (ahi - alo + 1 < 2.0 * (c.answer_words + c.max_query_terms)) {  // tiny ranges: widen
        alo = 1;
        ahi = vocab;  // validate(): vocab >= 4 · max(answer_words, max_query_terms)
    }

    const std::uint64_t nq = c.queries();
    m_queries.resize(nq);
    std::uint64_t planted = 0;
    std::vector<std::uint32_t> partials(nq);
    for (std::uint64_t q = 0; q < nq; ++q) {
        auto rng = stream(kQueryPlanDomain, q);
        QueryPlan& plan = m_queries[q];
        auto nterms =
            c.min_query_terms + uniform_below(rng, c.max_query_terms - c.min_query_terms + 1);
        while (plan.terms.size() < nterms) {
            auto r =
                static_cast<std::uint32_t>(lo * std::exp(uniform01(rng) * std::log((hi + 1) / lo)));
            r = std::clamp<std::uint32_t>(r, 1, static_cast<std::uint32_t>(hi));
            if (std::find(plan.terms.begin(), plan.terms.end(), r) == plan.terms.end())
                plan.terms.push_back(r);
        }
        while (plan.answer.size() < c.answer_words) {
            auto r = static_cast<std::uint32_t>(
                alo +
                static_cast<double>(uniform_below(rng, static_cast<std::uint64_t>(ahi - alo + 1))));
            if (std::find(plan.answer.begin(), plan.answer.end(), r) == plan.answer.end() &&
                std::find(plan.terms.begin(), plan.terms.end(), r) == plan.terms.end())
                plan.answer.push_back(r);
        }
        partials[q] = static_cast<std::uint32_t>(uniform_below(rng, c.max_partial + 1ULL));
        planted += 1 + partials[q] + c.hard_negatives;
    }

    // Opt-in causes, each from its own stream, so that the draws above (and every file) are the
    // same as without them when they are off.
    if (c.female_query_share > 0.0 || c.male_query_share > 0.0) {
        for (std::uint64_t q = 0; q < nq; ++q) {
            auto rng = stream(kQueryGenderDomain, q);
            const double u = uniform01(rng);
            m_queries[q].gender = u < c.female_query_share                        ? 'f'
                                  : u < c.female_query_share + c.male_query_share ? 'm'
                                                                                  : 'n';
        }
    }
    if (c.complexity_levels && c.clause_words == ClauseWords::Unseen) {
        // The unseen pool: CVCVCV pseudo-words ending in a vowel. Every vocabulary word ends in
        // a consonant (CorpusGenerator), so no background passage contains one; the gender and
        // category words are excluded too (their passages are planted with them).
        auto rng = stream(kUnseenWordDomain, 0);
        constexpr char kC[] = "bdfghjklmnprtvwz";
        constexpr char kV[] = "aiou";
        std::unordered_set<std::string> seen;
        for (const auto& [w, g] : gender_words()) seen.insert(w);
        for (const auto& leaf : kLiwcLeaves)
            for (const auto* w : leaf.words) seen.insert(w);
        std::string w;
        while (m_unseen_words.size() < kUnseenPool) {
            w.clear();
            for (int k = 0; k < 3; ++k) {
                w += kC[uniform_below(rng, sizeof kC - 1)];
                w += kV[uniform_below(rng, sizeof kV - 1)];
            }
            if (seen.insert(w).second) m_unseen_words.push_back(w);
        }
    }
    if (c.complexity_levels) {
        for (std::uint64_t q = 0; q < nq; ++q) {
            auto rng = stream(kComplexityDomain, q);
            QueryPlan& plan = m_queries[q];
            plan.level = static_cast<std::uint8_t>(uniform_below(rng, 3));
            if (plan.level != 2) continue;
            auto taken = [&](std::uint32_t r) {
                return std::find(plan.terms.begin(), plan.terms.end(), r) != plan.terms.end() ||
                       std::find(plan.answer.begin(), plan.answer.end(), r) != plan.answer.end() ||
                       std::find(plan.clause.begin(), plan.clause.end(), r) != plan.clause.end();
            };
            if (c.clause_words == ClauseWords::Unseen) {
                // Uniform over the unseen pool (see ClauseWords), distinct within the query.
                while (plan.clause.size() < c.clause_terms) {
                    auto t = kUnseenBase +
                             static_cast<std::uint32_t>(uniform_below(rng, m_unseen_words.size()));
                    if (!taken(t)) plan.clause.push_back(t);
                }
                continue;
            }
            // Same range as the terms; vocab >= 4 (max_query_terms + clause_terms) (validate).
            double clo = lo, chi = hi;
            if (chi - clo + 1 < 2.0 * (c.max_query_terms + c.clause_terms + c.answer_words)) {
                clo = 1;
                chi = vocab;
            }
            while (plan.clause.size() < c.clause_terms) {
                auto r = static_cast<std::uint32_t>(
                    clo * std::exp(uniform01(rng) * std::log((chi + 1) / clo)));
                r = std::clamp<std::uint32_t>(r, 1, static_cast<std::uint32_t>(chi));
                if (!taken(r)) plan.clause.push_back(r);
            }
        }
    }

    // Distinct passages for all plants: partial Fisher-Yates over 0..passages-1 with a sparse
    // map of swapped entries (exact, O(planted) memory).
    auto rng = stream(kAssignDomain, 0);
    std::unordered_map<std::uint64_t, std::uint64_t> swapped;
    swapped.reserve(planted * 2);
    auto at = [&](std::uint64_t k) {
        auto it = swapped.find(k);
        return it == swapped.end() ? k : it->second;
    };
    std::uint64_t k = 0;
    auto next_passage = [&] {
        std::uint64_t j = k + uniform_below(rng, b.passages - k);
        std::uint64_t vk = at(k), vj = at(j);
        swapped[j] = vk;
        swapped[k] = vj;
        ++k;
        return vj;
    };
    m_assigned.reserve(planted * 2);
    for (std::uint64_t q = 0; q < nq; ++q) {
        QueryPlan& plan = m_queries[q];
        auto qi = static_cast<std::uint32_t>(q);
        auto add = [&](PassageRole role, std::vector<std::uint64_t>& list) {
            std::uint64_t p = next_passage();
            list.push_back(p);
            m_assigned.emplace(p, Assignment{qi, role});
        };
        add(PassageRole::Answer, plan.relevant);
        for (std::uint32_t n = 0; n < partials[q]; ++n) add(PassageRole::Partial, plan.relevant);
        for (std::uint32_t n = 0; n < c.hard_negatives; ++n)
            add(PassageRole::HardNegative, plan.hard);
    }
    if (c.balanced_eval_gender) plan_balanced_gender();
}

void PlantedGenerator::plan_balanced_gender() {
    // The file comment: per split (dev, test) and class (neutral queries' answer passages, their
    // partial passages, every query's hard negatives), a shuffled list of slots, round(share * n)
    // gendered, in male / female pairs of equal word count.
    const auto& c = m_config;
    const double share = c.candidate_gender_share.value_or(c.gender_share);
    const std::uint64_t first[2] = {c.train_queries, c.train_queries + c.dev_queries};
    const std::uint64_t last[2] = {c.train_queries + c.dev_queries, c.queries()};
    for (int split = 0; split < 2; ++split) {
        for (int cls = 0; cls < 3; ++cls) {
            auto rng = stream(kBalancedGenderDomain, static_cast<std::uint64_t>(split * 3 + cls));
            std::vector<std::uint64_t> passages;
            for (std::uint64_t q = first[split]; q < last[split]; ++q) {
                const QueryPlan& plan = m_queries[q];
                if (cls == 0 && plan.gender == 'n')  // the answer passage comes first
                    passages.push_back(plan.relevant.front());
                if (cls == 1 && plan.gender == 'n')
                    passages.insert(passages.end(), plan.relevant.begin() + 1, plan.relevant.end());
                if (cls == 2) passages.insert(passages.end(), plan.hard.begin(), plan.hard.end());
            }
            const auto n = passages.size();
            const auto gendered = std::min<std::uint64_t>(
                n, static_cast<std::uint64_t>(std::llround(share * static_cast<double>(n))));
            std::vector<GenderSlot> slots;
            slots.reserve(n);
            auto draw_words = [&] {
                return 1 + static_cast<std::uint32_t>(uniform_below(rng, c.max_gender_words));
            };
            for (std::uint64_t k = 0; k + 1 < gendered; k += 2) {
                const auto words = draw_words();
                slots.push_back({'m', words});
                slots.push_back({'f', words});
            }
            if (gendered % 2) {
                const char g = uniform01(rng) < 0.5 ? 'm' : 'f';
                slots.push_back({g, draw_words()});
            }
            slots.resize(n);  // the rest: no gender words
            shuffle(slots, rng);
            for (std::uint64_t k = 0; k < n; ++k) m_gender_slots.emplace(passages[k], slots[k]);
        }
    }
}

double PlantedGenerator::draw_answer_x(std::mt19937_64& rng) const {
    double u = uniform01(rng);
    if (m_config.answer_positions == AnswerPositions::Uniform) return u;
    // Truncated exponential on [0, 1) by inverse CDF.
    const double s = m_config.early_scale;
    double x = -s * std::log(1.0 - u * (1.0 - std::exp(-1.0 / s)));
    return std::clamp(x, 0.0, std::nextafter(1.0, 0.0));
}

double PlantedGenerator::draw_distractor_x(std::mt19937_64& rng) const {
    const double below_one = std::nextafter(1.0, 0.0);
    switch (m_config.distractor_positions) {
        case DistractorPositions::Opposite:
            return std::clamp(1.0 - draw_answer_x(rng), 0.0, below_one);
        case DistractorPositions::Late: {
            const double s = m_config.early_scale;
            double u = uniform01(rng);
            double x = -s * std::log(1.0 - u * (1.0 - std::exp(-1.0 / s)));
            return std::clamp(1.0 - x, 0.0, below_one);
        }
        case DistractorPositions::Uniform:
            return uniform01(rng);
        case DistractorPositions::Early: {
            const double s = m_config.early_scale;
            double u = uniform01(rng);
            return std::clamp(-s * std::log(1.0 - u * (1.0 - std::exp(-1.0 / s))), 0.0, below_one);
        }
    }
    return 0.0;
}

// ---------------------------------------------------------------------------------------------
// Passages
// ---------------------------------------------------------------------------------------------

std::string PlantedGenerator::text_of(const std::vector<std::uint32_t>& tokens) const {
    std::string out;
    out.reserve(tokens.size() * 8);
    const auto& gw = gender_words();
    for (std::size_t k = 0; k < tokens.size(); ++k) {
        if (k) out += ' ';
        const auto t = tokens[k];
        if (t >= kGenderBase)
            out += gw[t - kGenderBase].first;
        else if (t >= kLiwcBase)
            out +=
                kLiwcLeaves[(t - kLiwcBase) / kLiwcPerLeaf].words[(t - kLiwcBase) % kLiwcPerLeaf];
        else if (t >= kUnseenBase)
            out += m_unseen_words[t - kUnseenBase];
        else
            out += word(t);
    }
    return out;
}

std::string PlantedGenerator::token_word(std::uint32_t token) const { return text_of({token}); }

PlantedPassage PlantedGenerator::passage(std::uint64_t i) const {
    const auto& c = m_config;
    if (i >= c.base.passages)
        throw InvalidArgument("planted generator: passage index out of range");
    PlantedPassage out;
    auto rng = stream(kPassageDomain, i);
    std::vector<std::uint32_t> words = passage_words(i, rng);

    const QueryPlan* plan = nullptr;
    if (auto it = m_assigned.find(i); it != m_assigned.end()) {
        out.role = it->second.role;
        out.query = it->second.query;
        plan = &m_queries[out.query];
    }
    const bool relevant = out.role == PassageRole::Answer || out.role == PassageRole::Partial;

    // Category words of a gendered query's planted passages (own stream: nothing else moves).
    if (plan && plan->gender != 'n' && c.liwc_words > 0) {
        auto lrng = stream(kLiwcDomain, i);
        add_category_words(words, plan->gender, relevant, lrng);
    }

    // Gender words at random positions of the background (before the block goes in, so the
    // block stays contiguous).
    double share = c.gender_share;
    double p_male = relevant ? c.gender_skew : 0.5;
    const bool train = plan && out.query < c.train_queries;
    if (relevant && train && c.gender_train_skew) p_male = *c.gender_train_skew;
    if (plan && c.candidate_gender_share) share = *c.candidate_gender_share;
    // Paper 004's learnable cause: train queries' relevant passages lean male, their hard
    // negatives female (file comment); gendered queries' relevant passages are set below.
    if (plan && c.candidate_gender_train_skew && out.query < c.train_queries)
        p_male = relevant ? *c.candidate_gender_train_skew : 1.0 - *c.candidate_gender_train_skew;
    if (plan && relevant && plan->gender != 'n') {
        share = 1.0;  // uniform01 < 1: always gendered
        p_male = plan->gender == 'm' ? c.query_gender_skew : 1.0 - c.query_gender_skew;
    }
    // Paper 001's learnable cause: near-duplicate hard negatives whose gender words mirror
    // those of the query's relevant passages (file comment).
    const bool near_dup = train && out.role == PassageRole::HardNegative &&
                       near_duplicate_for(plan->gender);
    if (near_dup) {
        double rel_male = c.gender_train_skew.value_or(c.gender_skew);
        if (c.candidate_gender_train_skew) rel_male = *c.candidate_gender_train_skew;
        if (plan->gender != 'n') {
            share = 1.0;
            rel_male = plan->gender == 'm' ? c.query_gender_skew : 1.0 - c.query_gender_skew;
        }
        p_male = 1.0 - rel_male;
    }
    // balanced_eval_gender: a dev / test planted passage's gender and word count come from its
    // slot (plan_balanced_gender) instead of the draws (the share draw is still taken). Only
    // planted passages have slots, so background passages skip the lookup.
    const GenderSlot* slot = nullptr;
    if (plan && !m_gender_slots.empty())
        if (auto it = m_gender_slots.find(i); it != m_gender_slots.end()) slot = &it->second;
    const bool gendered = uniform01(rng) < share;
    if (slot ? slot->gender != 'n' : gendered) {
        const bool male = uniform01(rng) < p_male;
        out.gender = slot ? slot->gender : (male ? 'm' : 'f');
        const auto& gw = gender_words();
        std::vector<std::uint32_t> pool;
        for (std::uint32_t g = 0; g < gw.size(); ++g)
            if (gw[g].second == out.gender) pool.push_back(kGenderBase + g);
        const std::uint64_t count = 1 + uniform_below(rng, c.max_gender_words);
        for (auto n = slot ? slot->words : count; n > 0; --n) {
            auto w = pool[uniform_below(rng, pool.size())];
            auto pos = uniform_below(rng, words.size() + 1);
            words.insert(words.begin() + static_cast<std::ptrdiff_t>(pos), w);
        }
    }

    if (plan) {
        // Complexity cue Position: complex queries swap the two placements (file comment).
        const bool swap =
            c.complexity_levels && c.complexity_cue == ComplexityCue::Position && plan->level == 2;
        std::vector<std::uint32_t> terms = plan->terms;
        shuffle(terms, rng);
        const std::size_t t = terms.size();  // >= 2
        std::vector<std::uint32_t> block;
        std::size_t offset = 0;  // answer offset within the block
        double x = 0.0;
        if (relevant) {
            std::size_t keep =
                out.role == PassageRole::Answer ? t : std::max<std::size_t>(1, t / 2);
            terms.resize(keep);
            auto left = static_cast<std::size_t>(uniform_below(rng, keep + 1));
            block.assign(terms.begin(), terms.begin() + static_cast<std::ptrdiff_t>(left));
            offset = block.size();
            block.insert(block.end(), plan->answer.begin(), plan->answer.end());
            block.insert(block.end(), terms.begin() + static_cast<std::ptrdiff_t>(left),
                         terms.end());
            x = swap ? draw_distractor_x(rng) : draw_answer_x(rng);
        } else {
            auto keep = static_cast<std::size_t>(
                std::llround(c.hard_negative_terms * static_cast<double>(t)));
            // At most t - 1 (a strict subset); hard_negative_terms 1 = every term (no coverage
            // difference; see the file comment).
            keep = c.hard_negative_terms >= 1.0 ? t : std::clamp<std::size_t>(keep, 1, t - 1);
            if (near_dup)  // every term once, as in the answer passage
                block = terms;
            else
                for (std::size_t k = 0; k < keep; ++k)
                    for (auto n = 1 + uniform_below(rng, 2); n > 0; --n) block.push_back(terms[k]);
            // Complex queries, cue Overlap: the clause's words too (lexical overlap points here).
            if (!near_dup && c.complexity_cue == ComplexityCue::Overlap)
                for (auto w : plan->clause)
                    for (auto n = 1 + uniform_below(rng, 2); n > 0; --n) block.push_back(w);
            const std::size_t a = plan->answer.size();
            if (a >= 2) {
                std::vector<std::uint32_t> answer = plan->answer;
                shuffle(answer, rng);
                auto na = 1 + uniform_below(rng, a - 1);  // 1 .. a-1: never the whole span
                block.insert(block.end(), answer.begin(),
                             answer.begin() + static_cast<std::ptrdiff_t>(na));
            }
            shuffle(block, rng);
            // Plain near-duplicates are placed like relevant passages.
            x = (swap != near_dup) ? draw_answer_x(rng) : draw_distractor_x(rng);
        }
        const auto L = static_cast<std::int64_t>(words.size());
        const auto n = static_cast<double>(words.size() + block.size());
        std::int64_t b = std::llround(x * n) - static_cast<std::int64_t>(offset);
        b = std::clamp<std::int64_t>(b, 0, L);
        words.insert(words.begin() + b, block.begin(), block.end());
        out.block_start = b;
        if (relevant) out.answer_start = b + static_cast<std::int64_t>(offset);
        if (out.role == PassageRole::HardNegative) {
            // Background words completing the span by chance (astronomically rare): break it.
            std::uint32_t filler = 1;  // the most frequent word that is not an answer word
            while (std::find(plan->answer.begin(), plan->answer.end(), filler) !=
                   plan->answer.end())
                ++filler;
            for (std::size_t at = find_span(words, plan->answer); at != std::string::npos;
                 at = find_span(words, plan->answer))
                words[at + plan->answer.size() - 1] = filler;
        }
    }
    out.tokens = static_cast<std::uint32_t>(words.size());
    out.doc.id = std::to_string(i);
    out.doc.text = text_of(words);
    return out;
}

// ---------------------------------------------------------------------------------------------
// Topics, qrels, triples, shown rankings
// ---------------------------------------------------------------------------------------------

const std::vector<std::uint64_t>& PlantedGenerator::relevant_passages(std::uint32_t query) const {
    if (query >= m_queries.size()) throw InvalidArgument("planted generator: query out of range");
    return m_queries[query].relevant;
}

const std::vector<std::uint64_t>& PlantedGenerator::hard_negative_passages(
    std::uint32_t query) const {
    if (query >= m_queries.size()) throw InvalidArgument("planted generator: query out of range");
    return m_queries[query].hard;
}

std::vector<std::string> PlantedGenerator::answer_span(std::uint32_t query) const {
    if (query >= m_queries.size()) throw InvalidArgument("planted generator: query out of range");
    std::vector<std::string> out;
    for (auto r : m_queries[query].answer) out.push_back(word(r));
    return out;
}

std::vector<std::string> PlantedGenerator::clause_terms(std::uint32_t query) const {
    if (query >= m_queries.size()) throw InvalidArgument("planted generator: query out of range");
    std::vector<std::string> out;
    for (auto r : m_queries[query].clause) out.push_back(token_word(r));
    return out;
}

char PlantedGenerator::query_gender(std::uint32_t query) const {
    if (query >= m_queries.size()) throw InvalidArgument("planted generator: query out of range");
    return m_queries[query].gender;
}

std::uint8_t PlantedGenerator::complexity_level(std::uint32_t query) const {
    if (query >= m_queries.size()) throw InvalidArgument("planted generator: query out of range");
    return m_queries[query].level;
}

std::vector<std::string> PlantedGenerator::query_terms(std::uint32_t query) const {
    if (query >= m_queries.size()) throw InvalidArgument("planted generator: query out of range");
    std::vector<std::string> out;
    for (auto r : m_queries[query].terms) out.push_back(word(r));
    return out;
}

PlantedTopic PlantedGenerator::topic(std::uint32_t q) const {
    const auto& c = m_config;
    const QueryPlan& plan = m_queries[q];
    PlantedTopic out;
    out.qid = std::to_string(q + 1ULL);
    out.split = q < c.train_queries                   ? "train"
                : q < c.train_queries + c.dev_queries ? "dev"
                                                      : "test";
    auto rng = stream(kQueryTextDomain, q);
    std::vector<std::uint32_t> terms = plan.terms;
    shuffle(terms, rng);
    const bool drawn_question = uniform01(rng) < c.question_share;
    const bool question = c.complexity_levels ? plan.level >= 1 : drawn_question;
    // A gender word goes between the question prefix and the subordinate clause.
    std::size_t prefix_words = 0, main_words = 0;
    if (c.complexity_levels) out.complexity = complexity_level_name(plan.level);
    if (question) {
        std::vector<std::string> term_words;
        for (auto t : terms) term_words.push_back(word(t));
        out.text = question_text(term_words, rng, out.type, prefix_words);
        main_words =
            1 + static_cast<std::size_t>(std::count(out.text.begin(), out.text.end(), ' '));
        if (!plan.clause.empty()) {
            out.text += ' ';
            out.text += kClauses[uniform_below(rng, std::size(kClauses))];
            for (std::size_t k = 0; k < plan.clause.size(); ++k) {
                if (k) {
                    out.text += ' ';
                    out.text += kClauseJoins[uniform_below(rng, std::size(kClauseJoins))];
                }
                out.text += ' ';
                out.text += token_word(plan.clause[k]);
            }
        }
    } else {
        out.type = "keyword";
        for (std::size_t k = 0; k < terms.size(); ++k) {
            if (k) out.text += ' ';
            out.text += word(terms[k]);
        }
    }
    for (std::size_t k = 0; k < plan.answer.size(); ++k) {
        if (k) out.answer += ' ';
        out.answer += word(plan.answer[k]);
    }
    out.gender = plan.gender;
    if (plan.gender != 'n') {
        // One gender word of the query's gender, after the question prefix.
        auto grng = stream(kQueryGenderTextDomain, q);
        if (main_words == 0) main_words = terms.size();  // keyword queries: anywhere
        out.text = with_gender_word(out.text, plan.gender, prefix_words, main_words, grng);
    }
    return out;
}

bool PlantedGenerator::near_duplicate_for(char g) const noexcept {
    return m_config.near_duplicate_negatives == NearDuplicateNegatives::All ||
           (m_config.near_duplicate_negatives == NearDuplicateNegatives::Gendered && g != 'n');
}

std::vector<std::uint32_t> PlantedGenerator::generated_terms(std::uint64_t k,
                                                             std::mt19937_64& rng,
                                                             char& gender) const {
    const auto& c = m_config;
    rng = stream(kGeneratedDomain, k);
    const double u = uniform01(rng);
    gender = u < c.female_query_share                        ? 'f'
             : u < c.female_query_share + c.male_query_share ? 'm'
                                                             : 'n';
    // Terms as a query's (content-word ranks, distinct).
    const auto nterms =
        c.min_query_terms + uniform_below(rng, c.max_query_terms - c.min_query_terms + 1);
    std::vector<std::uint32_t> terms;
    while (terms.size() < nterms) {
        auto r = static_cast<std::uint32_t>(
            m_term_lo * std::exp(uniform01(rng) * std::log((m_term_hi + 1) / m_term_lo)));
        r = std::clamp<std::uint32_t>(r, 1, static_cast<std::uint32_t>(m_term_hi));
        if (std::find(terms.begin(), terms.end(), r) == terms.end()) terms.push_back(r);
    }
    return terms;
}

PlantedGenerator::GeneratedNegative PlantedGenerator::generated_negative(std::uint64_t k) const {
    const auto& c = m_config;
    if (!c.generated_negatives || k >= c.generated_pairs)
        throw InvalidArgument("planted generator: generated negative index out of range");
    GeneratedNegative out;
    out.qid = "g" + std::to_string(k + 1);
    std::mt19937_64 trng;
    char gender = 'n';
    std::vector<std::uint32_t> terms = generated_terms(k, trng, gender);
    auto rng = stream(kGeneratedNegDomain, k);
    if (!(uniform01(rng) < c.hard_negative_share)) {  // a random negative, as in triples()
        const auto i = uniform_below(rng, c.base.passages);
        out.docid = std::to_string(i);
        out.passage = passage(i).doc.text;
        return out;
    }
    out.docid = out.qid + "n";
    // Background words of an index past the corpus and the generated pairs' passages.
    std::vector<std::uint32_t> words =
        passage_words(c.base.passages + c.generated_pairs + k, rng);
    if (c.liwc_words > 0 && gender != 'n') add_category_words(words, gender, false, rng);
    const bool near_dup = near_duplicate_for(gender);
    // Near-duplicates mirror the pair passage's gender words (always gendered for a gendered
    // pair, P(male) = 1 - the pair passage's); otherwise as a hard negative: either gender.
    const double share = near_dup && gender != 'n' ? 1.0 : c.gender_share;
    const double p_male = !near_dup            ? 0.5
                          : gender == 'n'   ? 1.0 - c.gender_skew
                          : gender == 'm'   ? 1.0 - c.query_gender_skew
                                            : c.query_gender_skew;
    if (uniform01(rng) < share) {
        const char pg = uniform01(rng) < p_male ? 'm' : 'f';
        const auto& gw = gender_words();
        std::vector<std::uint32_t> pool;
        for (std::uint32_t g = 0; g < gw.size(); ++g)
            if (gw[g].second == pg) pool.push_back(kGenderBase + g);
        for (auto n = 1 + uniform_below(rng, c.max_gender_words); n > 0; --n) {
            auto w = pool[uniform_below(rng, pool.size())];
            auto pos = uniform_below(rng, words.size() + 1);
            words.insert(words.begin() + static_cast<std::ptrdiff_t>(pos), w);
        }
    }
    shuffle(terms, rng);
    std::vector<std::uint32_t> block;
    if (near_dup) {
        block = terms;  // every term once, placed like the pair's own block
    } else {
        const std::size_t t = terms.size();
        auto keep = static_cast<std::size_t>(
            std::llround(c.hard_negative_terms * static_cast<double>(t)));
        keep = c.hard_negative_terms >= 1.0 ? t : std::clamp<std::size_t>(keep, 1, t - 1);
        for (std::size_t j = 0; j < keep; ++j)
            for (auto n = 1 + uniform_below(rng, 2); n > 0; --n) block.push_back(terms[j]);
        shuffle(block, rng);
    }
    const double x = near_dup ? draw_answer_x(rng) : draw_distractor_x(rng);
    const auto at =
        std::clamp<std::int64_t>(std::llround(x * static_cast<double>(words.size() + block.size())),
                                 0, static_cast<std::int64_t>(words.size()));
    words.insert(words.begin() + at, block.begin(), block.end());
    out.passage = text_of(words);
    return out;
}

PlantedGenerator::GeneratedPair PlantedGenerator::generated_pair(std::uint64_t k) const {
    const auto& c = m_config;
    if (k >= c.generated_pairs)
        throw InvalidArgument("planted generator: generated pair index out of range");
    GeneratedPair out;
    out.qid = "g" + std::to_string(k + 1);
    std::mt19937_64 rng;
    std::vector<std::uint32_t> terms = generated_terms(k, rng, out.gender);
    std::vector<std::string> term_words;
    for (auto t : terms) term_words.push_back(word(t));
    std::size_t prefix_words = 0;
    if (uniform01(rng) < c.question_share) {
        std::string type;
        out.query = question_text(term_words, rng, type, prefix_words);
    } else {
        for (std::size_t i = 0; i < term_words.size(); ++i)
            out.query += (i ? " " : "") + term_words[i];
    }
    const std::size_t nwords =
        1 + static_cast<std::size_t>(std::count(out.query.begin(), out.query.end(), ' '));
    if (out.gender != 'n')
        out.query = with_gender_word(out.query, out.gender, prefix_words, nwords, rng);

    // The passage: background, category and gender words as a gendered query's relevant
    // passage (neutral: category words uniform, gender words as a neutral relevant passage),
    // then all terms as one block at an answer-like position.
    std::vector<std::uint32_t> words = passage_words(c.base.passages + k, rng);
    if (c.liwc_words > 0)
        add_category_words(words, out.gender == 'n' ? 'f' : out.gender, out.gender != 'n', rng);
    const bool gendered = out.gender != 'n' || uniform01(rng) < c.gender_share;
    if (gendered) {
        const double p_male = out.gender == 'n'   ? c.gender_skew
                              : out.gender == 'm' ? c.query_gender_skew
                                                  : 1.0 - c.query_gender_skew;
        const char pg = uniform01(rng) < p_male ? 'm' : 'f';
        const auto& gw = gender_words();
        std::vector<std::uint32_t> pool;
        for (std::uint32_t g = 0; g < gw.size(); ++g)
            if (gw[g].second == pg) pool.push_back(kGenderBase + g);
        for (auto n = 1 + uniform_below(rng, c.max_gender_words); n > 0; --n) {
            auto w = pool[uniform_below(rng, pool.size())];
            auto pos = uniform_below(rng, words.size() + 1);
            words.insert(words.begin() + static_cast<std::ptrdiff_t>(pos), w);
        }
    }
    shuffle(terms, rng);
    const double x = draw_answer_x(rng);
    const auto at =
        std::clamp<std::int64_t>(std::llround(x * static_cast<double>(words.size() + terms.size())),
                                 0, static_cast<std::int64_t>(words.size()));
    words.insert(words.begin() + at, terms.begin(), terms.end());
    out.passage = text_of(words);
    return out;
}

std::vector<PlantedTopic> PlantedGenerator::topics() const {
    std::vector<PlantedTopic> out;
    out.reserve(m_queries.size());
    for (std::size_t q = 0; q < m_queries.size(); ++q)
        out.push_back(topic(static_cast<std::uint32_t>(q)));
    return out;
}

std::vector<Judgment> PlantedGenerator::qrels() const {
    std::vector<Judgment> out;
    for (std::size_t q = 0; q < m_queries.size(); ++q) {
        const auto& rel = m_queries[q].relevant;
        for (std::size_t k = 0; k < rel.size(); ++k)
            out.push_back(Judgment{std::to_string(q + 1), std::to_string(rel[k]), k == 0 ? 2 : 1});
    }
    return out;
}

std::vector<TripleIds> PlantedGenerator::triples() const {
    const auto& c = m_config;
    std::vector<TripleIds> out;
    out.reserve(c.train_queries * c.triples_per_query);
    for (std::uint64_t q = 0; q < c.train_queries; ++q) {
        const QueryPlan& plan = m_queries[q];
        auto rng = stream(kTripleDomain, q);
        for (std::uint32_t n = 0; n < c.triples_per_query; ++n) {
            TripleIds t;
            t.query = static_cast<std::uint32_t>(q);
            t.positive = plan.relevant[uniform_below(rng, plan.relevant.size())];
            if (!plan.hard.empty() && uniform01(rng) < c.hard_negative_share) {
                t.negative = plan.hard[uniform_below(rng, plan.hard.size())];
                t.hard = true;
            } else {
                do {
                    t.negative = uniform_below(rng, c.base.passages);
                } while (std::find(plan.relevant.begin(), plan.relevant.end(), t.negative) !=
                         plan.relevant.end());
            }
            out.push_back(t);
        }
    }
    return out;
}

std::vector<ShownRow> PlantedGenerator::shown_rankings() const {
    const auto& c = m_config;
    std::vector<ShownRow> out;
    for (std::size_t q = 0; q < m_queries.size(); ++q) {
        const QueryPlan& plan = m_queries[q];
        auto rng = stream(kShownDomain, q);
        const bool answered = uniform01(rng) >= c.unanswered;
        std::vector<std::uint64_t> others;
        if (answered) others.insert(others.end(), plan.relevant.begin() + 1, plan.relevant.end());
        others.insert(others.end(), plan.hard.begin(), plan.hard.end());
        const std::size_t fill = answered ? c.shown_k - 1 : c.shown_k;
        if (others.size() > fill) {
            shuffle(others, rng);
            others.resize(fill);
        }
        while (others.size() < fill) {
            std::uint64_t p = uniform_below(rng, c.base.passages);
            if (std::find(others.begin(), others.end(), p) == others.end() &&
                std::find(plan.relevant.begin(), plan.relevant.end(), p) == plan.relevant.end())
                others.push_back(p);
        }
        shuffle(others, rng);
        std::size_t answer_rank = 0;  // 1-based; 0 = not shown
        if (answered) {
            unsigned g = 1;
            while (g < c.shown_k && uniform01(rng) >= c.shown_rank_p) ++g;
            answer_rank = g;
            others.insert(others.begin() + static_cast<std::ptrdiff_t>(g - 1), plan.relevant[0]);
        }
        for (std::size_t r = 0; r < others.size(); ++r)
            out.push_back(ShownRow{static_cast<std::uint32_t>(q), static_cast<unsigned>(r + 1),
                                   others[r], r + 1 == answer_rank});
    }
    return out;
}

// ---------------------------------------------------------------------------------------------
// Writing
// ---------------------------------------------------------------------------------------------

PlantedCollection PlantedGenerator::write(const fs::path& dir, const ProgressCallback& progress,
                                          const CancelToken* cancel) const {
    const auto& c = m_config;
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) throw IoError(dir.string() + ": cannot create directory: " + ec.message());

    PlantedCollection out;
    out.dir = dir;
    const bool jsonl = c.base.format == CorpusFormat::Jsonl;
    const fs::path corpus_path = dir / (jsonl ? "corpus.jsonl" : "corpus.tsv");

    // Statistics gathered while streaming the corpus.
    std::array<std::uint64_t, kHistogramBins> answer_hist{}, partial_hist{}, hard_hist{};
    double answer_sum = 0.0, partial_sum = 0.0, hard_sum = 0.0;
    std::uint64_t answer_n = 0, partial_n = 0, hard_n = 0;
    std::uint64_t rel_f = 0, rel_m = 0, rel_total = 0, other_f = 0, other_m = 0;
    // Relevant passages of gendered queries: with the query's gender / the other one.
    std::uint64_t gq_rel_same = 0, gq_rel_other = 0;
    // Planted candidates (relevant and hard negatives) with gender words.
    std::uint64_t planted_total = 0, planted_gendered = 0;
    // Category words (liwc.dic leaves) in relevant passages of female / male queries.
    std::map<std::string, std::uint64_t> liwc_counts_f, liwc_counts_m;
    std::unordered_map<std::string, const char*> liwc_leaf_of;
    for (const auto& leaf : kLiwcLeaves)
        for (const char* w : leaf.words) liwc_leaf_of.emplace(w, leaf.name);
    std::uint64_t tokens_total = 0;

    AtomicFile corpus(corpus_path);
    std::string line;
    const std::uint64_t n = c.base.passages;
    for (std::uint64_t i = 0; i < n; ++i) {
        if ((i & 4095) == 0) {
            if (cancel && cancel->requested()) return out;  // AtomicFile discards the temp file
            if (progress) progress(i, n);
        }
        PlantedPassage p = passage(i);
        tokens_total += p.tokens;
        const bool relevant = p.role == PassageRole::Answer || p.role == PassageRole::Partial;
        if (p.role != PassageRole::Background) {
            ++planted_total;
            planted_gendered += p.gender != 'n';
            const char qg = m_queries[p.query].gender;
            if (relevant && qg != 'n' && p.gender != 'n')
                (p.gender == qg ? gq_rel_same : gq_rel_other)++;
            if (relevant && qg != 'n' && c.liwc_words > 0) {
                auto& counts = qg == 'f' ? liwc_counts_f : liwc_counts_m;
                for (std::size_t at = 0; at < p.doc.text.size();) {
                    const auto sp = std::min(p.doc.text.find(' ', at), p.doc.text.size());
                    auto it = liwc_leaf_of.find(p.doc.text.substr(at, sp - at));
                    if (it != liwc_leaf_of.end()) ++counts[it->second];
                    at = sp + 1;
                }
            }
        }
        if (relevant) {
            ++rel_total;
            rel_f += p.gender == 'f';
            rel_m += p.gender == 'm';
            double x = static_cast<double>(p.answer_start) / p.tokens;
            if (p.role == PassageRole::Answer) {
                ++answer_hist[bin_of(x)], answer_sum += x, ++answer_n;
            } else {
                ++partial_hist[bin_of(x)], partial_sum += x, ++partial_n;
            }
        } else {
            other_f += p.gender == 'f';
            other_m += p.gender == 'm';
            if (p.role == PassageRole::HardNegative) {
                double x = static_cast<double>(p.block_start) / p.tokens;
                ++hard_hist[bin_of(x)], hard_sum += x, ++hard_n;
            }
        }
        if (jsonl) {
            nlohmann::json obj{{"_id", p.doc.id}, {"title", p.doc.title}, {"text", p.doc.text}};
            line = obj.dump();
        } else {
            line = p.doc.id;
            line += '\t';
            line += p.doc.text;
        }
        line += '\n';
        corpus.write(line);
        out.corpus_bytes += line.size();
        ++out.passages;
    }
    if (progress) progress(n, n);
    out.files.push_back(corpus_path);

    std::vector<std::unique_ptr<AtomicFile>> files;
    auto open = [&](const std::string& name) -> AtomicFile& {
        files.push_back(std::make_unique<AtomicFile>(dir / name));
        out.files.push_back(dir / name);
        return *files.back();
    };

    // Topics, qrels, answers, query labels and types.
    const auto all_topics = topics();
    AtomicFile& topics_all = open("topics.tsv");
    AtomicFile& topics_train = open("topics.train.tsv");
    AtomicFile& topics_dev = open("topics.dev.tsv");
    AtomicFile& topics_test = open("topics.test.tsv");
    AtomicFile& answers = open("answers.tsv");
    AtomicFile& query_gender = open("query_gender.tsv");
    AtomicFile& query_types = open("query_types.tsv");
    AtomicFile* query_complexity = c.complexity_levels ? &open("query_complexity.tsv") : nullptr;
    std::map<std::string, std::uint64_t> type_counts, gender_counts, level_counts;
    std::uint64_t query_tokens = 0;
    for (const auto& t : all_topics) {
        std::string row = t.qid + '\t' + t.text + '\n';
        topics_all.write(row);
        (t.split == "train" ? topics_train
         : t.split == "dev" ? topics_dev
                            : topics_test)
            .write(row);
        answers.write(t.qid + '\t' + t.answer + '\n');
        query_gender.write(t.qid + '\t' + t.gender + '\n');
        ++gender_counts[std::string(1, t.gender)];
        if (query_complexity) {
            query_complexity->write(t.qid + '\t' + t.complexity + '\n');
            ++level_counts[t.complexity];
        }
        query_types.write(t.qid + '\t' + t.type + '\n');
        ++type_counts[t.type];
        query_tokens +=
            1 + static_cast<std::uint64_t>(std::count(t.text.begin(), t.text.end(), ' '));
        ++out.queries;
    }
    AtomicFile& qrels_all = open("qrels.txt");
    AtomicFile& qrels_train = open("qrels.train.txt");
    AtomicFile& qrels_dev = open("qrels.dev.txt");
    AtomicFile& qrels_test = open("qrels.test.txt");
    for (const Judgment& j : qrels()) {
        std::string row = j.qid + " 0 " + j.docid + ' ' + std::to_string(j.grade) + '\n';
        qrels_all.write(row);
        const auto q = std::stoull(j.qid) - 1;
        (q < c.train_queries                   ? qrels_train
         : q < c.train_queries + c.dev_queries ? qrels_dev
                                               : qrels_test)
            .write(row);
        ++out.judgments;
    }

    // Training triples: text and ids.
    AtomicFile& triples_text = open("triples.train.tsv");
    AtomicFile& triples_ids = open("triples.train.ids.tsv");
    std::uint64_t hard_triples = 0;
    for (const TripleIds& t : triples()) {
        if (cancel && (out.triples & 1023) == 0 && cancel->requested()) return out;
        const auto& qt = all_topics[t.query];
        triples_text.write(qt.text + '\t' + passage(t.positive).doc.text + '\t' +
                           passage(t.negative).doc.text + '\n');
        triples_ids.write(qt.qid + '\t' + std::to_string(t.positive) + '\t' +
                          std::to_string(t.negative) + '\n');
        hard_triples += t.hard;
        ++out.triples;
    }

    // Gender word list (eval::GenderWordList format).
    AtomicFile& gender = open("gender_words.txt");
    gender.write("# plumb planted-bias corpus: gender-definitional words (word,f / word,m)\n");
    for (const auto& [w, g] : gender_words()) gender.write(w + ',' + g + '\n');

    // Paper 001's inputs: the category dictionary and the generated pairs.
    const bool gendered_queries = c.female_query_share + c.male_query_share > 0.0;
    if (gendered_queries) open("liwc.dic").write(liwc_dictionary());
    std::map<std::string, std::uint64_t> generated_genders;
    if (c.generated_pairs > 0) {
        AtomicFile& pairs = open("generated_pairs.tsv");
        AtomicFile& pair_gender = open("generated_gender.tsv");
        for (std::uint64_t k = 0; k < c.generated_pairs; ++k) {
            if (cancel && (k & 1023) == 0 && cancel->requested()) return out;
            const auto g = generated_pair(k);
            pairs.write(g.qid + '\t' + g.query + '\t' + g.qid + '\t' + g.passage + '\n');
            pair_gender.write(g.qid + '\t' + g.gender + '\n');
            ++generated_genders[std::string(1, g.gender)];
        }
    }
    std::uint64_t generated_hard = 0;
    if (c.generated_negatives) {
        AtomicFile& negs = open("generated_negatives.tsv");
        for (std::uint64_t k = 0; k < c.generated_pairs; ++k) {
            if (cancel && (k & 1023) == 0 && cancel->requested()) return out;
            const auto g = generated_negative(k);
            negs.write(g.qid + '\t' + g.docid + '\t' + g.passage + '\n');
            generated_hard += g.docid.front() == 'g';
        }
    }

    // Annotator-shown rankings (eval/subsets.hpp shown-ranks format).
    AtomicFile& shown = open("shown_ranks.tsv");
    std::uint64_t shown_answered = 0;
    std::map<unsigned, std::uint64_t> first_rank;
    for (const ShownRow& r : shown_rankings()) {
        shown.write(all_topics[r.query].qid + '\t' + std::to_string(r.rank) + '\t' +
                    std::to_string(r.passage) + '\t' + (r.selected ? "1" : "0") + '\n');
        if (r.selected) ++shown_answered, ++first_rank[r.rank];
    }

    // Manifest.
    auto hist_json = [](const auto& h, std::uint64_t count, double sum) {
        nlohmann::json j;
        j["bins"] = kHistogramBins;
        j["counts"] = std::vector<std::uint64_t>(h.begin(), h.end());
        std::vector<double> props;
        for (auto v : h) props.push_back(count ? static_cast<double>(v) / count : 0.0);
        j["proportions"] = props;
        j["n"] = count;
        j["mean"] = count ? sum / count : 0.0;
        return j;
    };
    nlohmann::json m;
    m["format"] = "plumb-planted-corpus";
    m["version"] = 1;
    const auto& b = c.base;
    m["parameters"] = {
        {"seed", b.seed},
        {"passages", b.passages},
        {"vocab", b.vocab},
        {"zipf_s", b.zipf_s},
        {"min_words", b.min_words},
        {"max_words", b.max_words},
        {"topic_rank_min", b.topic_rank_min},
        {"topic_rank_max", b.topic_rank_max},
        {"corpus_format", corpus_format_name(b.format)},
        {"train_queries", c.train_queries},
        {"dev_queries", c.dev_queries},
        {"test_queries", c.test_queries},
        {"answer_positions", answer_positions_name(c.answer_positions)},
        {"early_scale", c.early_scale},
        {"answer_words", c.answer_words},
        {"answer_rank_min", c.answer_rank_min},
        {"answer_rank_max", c.answer_rank_max},
        {"min_query_terms", c.min_query_terms},
        {"max_query_terms", c.max_query_terms},
        {"question_share", c.question_share},
        {"max_partial", c.max_partial},
        {"hard_negatives", c.hard_negatives},
        {"hard_negative_terms", c.hard_negative_terms},
        {"distractor_positions", distractor_positions_name(c.distractor_positions)},
        {"triples_per_query", c.triples_per_query},
        {"hard_negative_share", c.hard_negative_share},
        {"gender_share", c.gender_share},
        {"gender_skew", c.gender_skew},
        {"max_gender_words", c.max_gender_words},
        {"female_query_share", c.female_query_share},
        {"male_query_share", c.male_query_share},
        {"query_gender_skew", c.query_gender_skew},
        {"candidate_gender_share", c.candidate_gender_share
                                       ? nlohmann::json(*c.candidate_gender_share)
                                       : nlohmann::json(nullptr)},
        {"liwc_words", c.liwc_words},
        {"liwc_skew", c.liwc_skew},
        {"generated_pairs", c.generated_pairs},
        {"complexity_levels", c.complexity_levels},
        {"clause_terms", c.clause_terms},
        {"shown_k", c.shown_k},
        {"unanswered", c.unanswered},
        {"shown_rank_p", c.shown_rank_p},
    };
    // Only when set: the default manifest stays as it was.
    if (c.gender_train_skew) m["parameters"]["gender_train_skew"] = *c.gender_train_skew;
    if (c.near_duplicate_negatives != NearDuplicateNegatives::Off)
        m["parameters"]["near_duplicate_negatives"] = near_duplicate_negatives_name(c.near_duplicate_negatives);
    if (c.generated_negatives) m["parameters"]["generated_negatives"] = true;
    if (c.balanced_eval_gender) m["parameters"]["balanced_eval_gender"] = true;
    if (c.candidate_gender_train_skew)
        m["parameters"]["candidate_gender_train_skew"] = *c.candidate_gender_train_skew;
    // Only with complexity levels on: the default manifest stays as it was.
    if (c.complexity_levels)
        m["parameters"]["complexity_cue"] = complexity_cue_name(c.complexity_cue);
    // Only when not the default: the other manifests stay as they were.
    if (c.complexity_levels && c.clause_words != ClauseWords::Corpus)
        m["parameters"]["clause_words"] = clause_words_name(c.clause_words);
    m["counts"] = {
        {"passages", out.passages},
        {"corpus_bytes", out.corpus_bytes},
        {"mean_passage_tokens",
         out.passages ? static_cast<double>(tokens_total) / out.passages : 0.0},
        {"queries", out.queries},
        {"train_queries", c.train_queries},
        {"dev_queries", c.dev_queries},
        {"test_queries", c.test_queries},
        {"query_types", type_counts},
        {"query_genders", gender_counts},
        {"generated_pair_genders", generated_genders},
        {"complexity_levels", level_counts},
        {"mean_query_tokens", out.queries ? static_cast<double>(query_tokens) / out.queries : 0.0},
        {"judgments", out.judgments},
        {"answer_passages", answer_n},
        {"partial_passages", partial_n},
        {"hard_negatives", hard_n},
        {"triples", out.triples},
        {"hard_negative_triples", hard_triples},
        {"shown_answered_queries", shown_answered},
        {"shown_unanswered_queries", out.queries - shown_answered},
    };
    if (c.generated_negatives) m["counts"]["generated_hard_negatives"] = generated_hard;
    std::map<std::string, std::uint64_t> first_rank_json;
    for (auto [r, k] : first_rank) first_rank_json[std::to_string(r)] = k;
    m["realised"] = {
        {"answer_start_relative", hist_json(answer_hist, answer_n, answer_sum)},
        {"partial_answer_start_relative", hist_json(partial_hist, partial_n, partial_sum)},
        {"hard_negative_block_start_relative", hist_json(hard_hist, hard_n, hard_sum)},
        {"gender",
         {{"relevant_passages", rel_total},
          {"relevant_female", rel_f},
          {"relevant_male", rel_m},
          {"relevant_male_share",
           rel_f + rel_m ? static_cast<double>(rel_m) / static_cast<double>(rel_f + rel_m) : 0.0},
          {"other_female", other_f},
          {"other_male", other_m},
          {"gendered_share",
           out.passages ? static_cast<double>(rel_f + rel_m + other_f + other_m) / out.passages
                        : 0.0}}},
        {"gendered_queries",
         {{"relevant_same_gender", gq_rel_same},
          {"relevant_other_gender", gq_rel_other},
          {"relevant_same_gender_share",
           gq_rel_same + gq_rel_other
               ? static_cast<double>(gq_rel_same) / static_cast<double>(gq_rel_same + gq_rel_other)
               : 0.0}}},
        {"category_words_relevant",
         {{"female_queries", liwc_counts_f}, {"male_queries", liwc_counts_m}}},
        {"planted_candidates",
         {{"passages", planted_total},
          {"gendered", planted_gendered},
          {"gendered_share", planted_total ? static_cast<double>(planted_gendered) /
                                                 static_cast<double>(planted_total)
                                           : 0.0}}},
        {"shown_first_selected_rank", first_rank_json},
    };
    std::vector<std::string> names;
    for (const auto& f : out.files) names.push_back(f.filename().string());
    names.push_back("manifest.json");
    m["files"] = names;
    AtomicFile& manifest = open("manifest.json");
    manifest.write(m.dump(2) + '\n');

    if (cancel && cancel->requested()) return out;
    corpus.commit();
    for (auto& f : files) f->commit();
    out.complete = true;
    return out;
}

}  // namespace plumb::index
