#pragma once
/// \file html_text.hpp
/// The text of an HTML (or TREC SGML) fragment, as Anserini indexes HTML and TREC documents:
/// its `JsoupStringTransform` (Jsoup.parse(raw).text()) removes markup and decodes entities.
///
/// What html_to_text keeps and drops (Jsoup's Document.text() for well-formed input):
///  - tags (`<p>`, `</TEXT>`, `<a href="...">`) are removed; a known inline HTML tag (a, b, i,
///    em, strong, span, font, u, sub, sup, small, big, code, tt, abbr, acronym, cite, q, s,
///    strike, kbd, var, samp, dfn, label, mark) leaves nothing (`<b>foo</b>bar` → `foobar`),
///    any other tag a space (block tags, `<br>`, and unknown SGML tags such as `<HEADLINE>`;
///    Jsoup treats unknown tags as inline, which can glue two words: plumb never does);
///  - comments (`<!-- -->`), declarations (`<!DOCTYPE>`), processing instructions (`<? ?>`),
///    CDATA sections, and the content of `<script>` and `<style>` are dropped;
///  - `<` not followed by a letter, `/`, `!` or `?` is text (`a < b` stays);
///  - entities: the HTML 4 named entities (`&amp;`, `&eacute;`, `&nbsp;` ...) and numeric
///    references (`&#233;`, `&#xE9;`) are decoded to UTF-8 (`&nbsp;` to a plain space); an
///    unknown or unterminated entity is kept literally; invalid code points become U+FFFD;
///  - runs of whitespace become one space; the result is trimmed.
/// The input must be valid UTF-8 (readers check it first, to name the bad line).

#include <string>
#include <string_view>

namespace plumb::index {

/// Markup-free text of `html` (rules above). Thread-safe, no allocation beyond the result.
std::string html_to_text(std::string_view html);

}  // namespace plumb::index
