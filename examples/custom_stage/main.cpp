// A host that adds its own post-filter to plumb's built-in stages and runs a configured pipeline:
//   plumb_custom_stage CONFIG.json "query text"
// e.g. {"first_stage": {"type": "bm25", "index": "idx"},
//       "post_filters": [{"type": "per_site_cap", "max": 2}], "k": 10}
#include <cstdio>

#include "per_site_cap.hpp"
#include "plumb/plugin/builtins/builtins.hpp"
#include "plumb/plugin/error.hpp"
#include "plumb/plugin/pipeline_config.hpp"

int main(int argc, char** argv) {
    if (argc < 3) {
        std::fprintf(stderr, "usage: %s CONFIG.json \"query text\"\n", argv[0]);
        return 2;
    }
    try {
        plumb::Registry registry;
        plumb::register_builtins(registry);
        registry.add_post_filter("per_site_cap", PerSiteCap::from_config);  // the one line
        plumb::Pipeline pipeline = plumb::load_pipeline(argv[1], registry);
        plumb::SearchResult result = pipeline.search({"q", argv[2]});
        std::size_t rank = 0;
        for (const plumb::Candidate& c : result.list.candidates) {
            std::printf("%zu %s %.4f\n", ++rank, c.docid.c_str(), c.score);
        }
        return 0;
    } catch (const plumb::Error& e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        return 1;
    }
}
