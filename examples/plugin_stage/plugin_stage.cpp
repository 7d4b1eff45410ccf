// An example plumb plugin library: one re-rank scorer, "query_words", scoring a passage by the
// number of distinct query words (ASCII case-folded, split at non-alphanumerics) it contains.
// Only plugin_abi.h is needed; load it with Registry::load_library() or `plumb pipeline --plugin`,
// then use {"type": "query_words", "depth": 100} in a pipeline's "rerank" list.
#include <cctype>
#include <set>
#include <string>

#include "plugin/plugin_abi.h"

#ifndef PLUMB_EXAMPLE_ABI_VERSION  // overridden by a test to check the version mismatch error
#define PLUMB_EXAMPLE_ABI_VERSION PLUMB_PLUGIN_ABI_VERSION
#endif

namespace {

std::set<std::string> words(const char* text) {
    std::set<std::string> out;
    std::string w;
    for (const char* p = text;; ++p) {
        unsigned char c = static_cast<unsigned char>(*p);
        if (c != 0 && std::isalnum(c)) {
            w += static_cast<char>(std::tolower(c));
        } else {
            if (!w.empty()) out.insert(w);
            w.clear();
            if (c == 0) break;
        }
    }
    return out;
}

int score(void*, const char* query, const char* const* passages, size_t n, float* out) {
    try {
        auto q = words(query);
        for (size_t i = 0; i < n; ++i) {
            auto p = words(passages[i]);
            int hits = 0;
            for (const auto& w : q) hits += p.count(w) ? 1 : 0;
            out[i] = static_cast<float>(hits);
        }
        return 0;
    } catch (...) {
        return 1;
    }
}

int register_scorers(const plumb_host_api* api) {
    if (api->abi_version != PLUMB_PLUGIN_ABI_VERSION) return 1;
    return api->register_scorer(api->host, "query_words", nullptr, &score, nullptr);
}

const plumb_plugin_info info = {PLUMB_EXAMPLE_ABI_VERSION, "example-query-words",
                                &register_scorers};

}  // namespace

extern "C" __attribute__((visibility("default"))) const plumb_plugin_info* plumb_plugin_entry(
    void) {
    return &info;
}
