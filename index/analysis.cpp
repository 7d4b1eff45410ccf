#include "index/analysis.hpp"

#include <map>
#include <mutex>

#include "index/detail/analysis_chain.hpp"
#include "plugin/error.hpp"

namespace plumb::index {

const char* analyzer_kind_name(AnalyzerKind kind) noexcept {
    return kind == AnalyzerKind::Anserini ? "anserini" : "lucene3";
}

AnalyzerKind parse_analyzer_kind(std::string_view name) {
    for (auto kind : {AnalyzerKind::Lucene3, AnalyzerKind::Anserini}) {
        if (name == analyzer_kind_name(kind)) return kind;
    }
    throw ConfigError("unknown analyzer '" + std::string(name) +
                      "' (known analyzers: lucene3, anserini)");
}

std::string AnalysisOptions::name() const {
    std::string n = analyzer == AnalyzerKind::Anserini ? "uax29+possessive+lowercase"
                                                       : "standard+lowercase";
    if (stop) n += "+stop";
    if (stem) n += "+porter";
    return n;
}

AnalysisOptions AnalysisOptions::from_name(const std::string& name) {
    for (auto kind : {AnalyzerKind::Lucene3, AnalyzerKind::Anserini}) {
        for (bool stop : {true, false}) {
            for (bool stem : {true, false}) {
                AnalysisOptions o;
                o.analyzer = kind;
                o.stop = stop;
                o.stem = stem;
                if (o.name() == name) return o;
            }
        }
    }
    throw IndexError("unknown analysis configuration '" + name + "'");
}

namespace detail {

void utf8_to_wide(std::string_view in, std::wstring& out) {
    out.clear();
    out.reserve(in.size());
    const auto* s = reinterpret_cast<const unsigned char*>(in.data());
    std::size_t n = in.size(), i = 0;
    while (i < n) {
        unsigned c = s[i];
        if (c < 0x80) {
            out.push_back(static_cast<wchar_t>(c));
            ++i;
            continue;
        }
        int len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 0;
        if (len == 0 || c > 0xF4 || i + static_cast<std::size_t>(len) > n) {
            out.push_back(L'\uFFFD');
            ++i;
            continue;
        }
        unsigned cp = c & (0x7F >> len);
        bool ok = true;
        for (int j = 1; j < len; ++j) {
            unsigned cc = s[i + j];
            if ((cc & 0xC0) != 0x80) {
                ok = false;
                break;
            }
            cp = (cp << 6) | (cc & 0x3F);
        }
        static const unsigned kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
        if (!ok || cp < kMin[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
            out.push_back(L'\uFFFD');
            ++i;
            continue;
        }
        out.push_back(static_cast<wchar_t>(cp));
        i += static_cast<std::size_t>(len);
    }
}

void wide_to_utf8(const wchar_t* s, std::size_t n, std::string& out) {
    for (std::size_t i = 0; i < n; ++i) {
        auto cp = static_cast<std::uint32_t>(s[i]);
        if (cp < 0x80) {
            out.push_back(static_cast<char>(cp));
        } else if (cp < 0x800) {
            out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
            out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
        } else if (cp < 0x10000) {
            if (cp >= 0xD800 && cp <= 0xDFFF) cp = 0xFFFD;
            out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
            out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
            out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
        } else if (cp <= 0x10FFFF) {
            out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
            out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
            out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
            out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
        } else {
            out += "\xEF\xBF\xBD";
        }
    }
}

namespace {

/// Lucene++'s StopAnalyzer::ENGLISH_STOP_WORDS_SET() fills a static on first use, outside any
/// synchronisation ThreadSanitizer can see (PLUMB_SANITIZE=thread reported index-builder and
/// search threads racing on it): fetch it once, under C++'s thread-safe static initialisation.
const Lucene::HashSet<Lucene::String>& english_stop_words() {
    static const Lucene::HashSet<Lucene::String> set =
        Lucene::StopAnalyzer::ENGLISH_STOP_WORDS_SET();
    return set;
}

/// Builds the Lucene++ chain of `options`: tokenizer, top of the filter chain, term attribute.
void build_lucene_chain(const AnalysisOptions& options, Lucene::StandardTokenizerPtr& tokenizer,
                        Lucene::TokenStreamPtr& top, Lucene::TermAttributePtr& term) {
    using namespace Lucene;
    tokenizer = newLucene<StandardTokenizer>(LuceneVersion::LUCENE_30,
                                             newLucene<StringReader>(L""));
    TokenStreamPtr ts = newLucene<StandardFilter>(tokenizer);
    ts = newLucene<LowerCaseFilter>(ts);
    if (options.stop) {
        ts = newLucene<StopFilter>(true, ts, english_stop_words());
    }
    if (options.stem) ts = newLucene<PorterStemFilter>(ts);
    top = ts;
    term = top->addAttribute<TermAttribute>();
}

/// Lucene++ fills several statics on first use without synchronisation (its source has
/// `static Collection<String> x; if (!x) x = ...;` in StandardTokenizer::TOKEN_TYPES(), for
/// one). Two threads running their first analysis at once (the index builder's workers) can both
/// fill one and lose a copy: under LeakSanitizer, GeneratedIndex's fixture (an index built with two
/// workers) lost one 40- or 52-byte wide string, copied by std::wstring::_M_assign, in 5 of about
/// 170 runs (and once in CI); with this warm-up in 0 of 500. So the first chain built in the
/// process runs, under std::call_once, a full chain with every filter over a text holding each
/// StandardTokenizer token type before any chain is handed out.
void warm_lucene_statics() {
    static std::once_flag once;
    std::call_once(once, [] {
        using namespace Lucene;
        AnalysisOptions all;
        all.analyzer = AnalyzerKind::Lucene3;
        all.stop = true;
        all.stem = true;
        StandardTokenizerPtr tokenizer;
        TokenStreamPtr top;
        TermAttributePtr term;
        build_lucene_chain(all, tokenizer, top, term);
        // alphanum, apostrophe, acronym, company, email, host, num, CJ and the stop words.
        tokenizer->reset(newLucene<StringReader>(
            L"The running dogs O'Reilly's U.S.A. AT&T mail@example.com www.example.com "
            L"3.14 \u4e2d\u6587 of"));
        top->reset();
        while (top->incrementToken()) {
        }
        top->end();
        top->close();
    });
}

}  // namespace

AnalysisChain::AnalysisChain(const AnalysisOptions& options) : m_options(options) {
    if (options.analyzer == AnalyzerKind::Anserini) return;  // no Lucene++ objects needed
    warm_lucene_statics();
    build_lucene_chain(options, m_tokenizer, m_top, m_term);
}

void AnalysisChain::run_anserini(const std::wstring& text) {
    m_terms.clear();
    m_spans.clear();
    standard_tokenize(text.data(), text.size(), m_tokens);
    for (const auto& t : m_tokens) {
        const std::size_t begin = m_terms.size();
        m_terms.append(text, t.begin, t.end - t.begin);
        const std::size_t len =
            english_filter(m_terms.data() + begin, t.end - t.begin, m_options.stop, m_options.stem);
        m_terms.resize(begin + len);
        if (len > 0) m_spans.emplace_back(begin, len);
    }
}

}  // namespace detail

Analyzer::Analyzer(AnalysisOptions options) : m_options(options) {}

std::vector<std::string> Analyzer::analyze(std::string_view text) const {
    // One chain per thread and configuration (at most eight configurations exist).
    thread_local std::map<std::string, std::unique_ptr<detail::AnalysisChain>> chains;
    auto& chain = chains[m_options.name()];
    std::wstring wide;
    detail::utf8_to_wide(text, wide);
    std::vector<std::string> terms;
    try {
        if (!chain) chain = std::make_unique<detail::AnalysisChain>(m_options);
        chain->run(wide, [&](const wchar_t* t, std::int32_t n) {
            std::string s;
            detail::wide_to_utf8(t, static_cast<std::size_t>(n), s);
            terms.push_back(std::move(s));
        });
    } catch (const Lucene::LuceneException& e) {
        chain.reset();  // the chain may be in a bad state
        throw Error("analysis failed: " + Lucene::StringUtils::toUTF8(e.getError()));
    }
    return terms;
}

}  // namespace plumb::index
