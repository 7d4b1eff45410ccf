#pragma once
/// \file detail/analysis_chain.hpp
/// INTERNAL (not installed; includes Lucene++): one reusable Lucene++ token stream chain and
/// UTF-8 <-> UTF-32 helpers. One chain per thread; not thread-safe. The "anserini" analyzer runs
/// plumb's own tokenizer and filters (standard_tokenizer.hpp, english_filters.hpp) instead of
/// Lucene++'s.

#include <lucene++/LuceneHeaders.h>
#include <lucene++/PorterStemFilter.h>
#include <lucene++/StandardFilter.h>
#include <lucene++/StandardTokenizer.h>
#include <lucene++/StopFilter.h>
#include <lucene++/StopAnalyzer.h>
#include <lucene++/LowerCaseFilter.h>
#include <lucene++/TermAttribute.h>
#include <lucene++/StringReader.h>

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "index/analysis.hpp"
#include "index/detail/english_filters.hpp"
#include "index/detail/standard_tokenizer.hpp"

namespace plumb::index::detail {

/// Decodes UTF-8 to UTF-32 (wchar_t is 32 bits on Linux); invalid sequences become U+FFFD.
void utf8_to_wide(std::string_view in, std::wstring& out);
/// Appends the UTF-8 encoding of `n` wide characters to `out`.
void wide_to_utf8(const wchar_t* s, std::size_t n, std::string& out);

class AnalysisChain {
public:
    explicit AnalysisChain(const AnalysisOptions& options);

    /// Calls on_token(const wchar_t* term, int32_t length) for each analysed token of `text`.
    template <class F>
    void run(const std::wstring& text, F&& on_token) {
        if (m_options.analyzer == AnalyzerKind::Anserini) {
            run_anserini(text);
            for (const auto& [begin, len] : m_spans) {
                on_token(static_cast<const wchar_t*>(m_terms.data() + begin),
                         static_cast<std::int32_t>(len));
            }
            return;
        }
        m_tokenizer->reset(Lucene::newLucene<Lucene::StringReader>(text));
        m_top->reset();
        while (m_top->incrementToken()) {
            on_token(static_cast<const wchar_t*>(m_term->termBufferArray()),
                     m_term->termLength());
        }
        m_top->end();
    }

private:
    void run_anserini(const std::wstring& text);

    AnalysisOptions m_options;
    // anserini: tokens, the analysed terms back to back, (offset, length) of each kept term
    std::vector<StdToken> m_tokens;
    std::wstring m_terms;
    std::vector<std::pair<std::size_t, std::size_t>> m_spans;
    // lucene3
    Lucene::StandardTokenizerPtr m_tokenizer;
    Lucene::TokenStreamPtr m_top;
    Lucene::TermAttributePtr m_term;
};

}  // namespace plumb::index::detail
