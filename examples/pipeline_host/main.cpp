// A host embedding a JSON-configured plumb pipeline through the installed package:
//   plumb_pipeline_host CONFIG.json "query text" [k]
// (config format: plumb/plugin/pipeline_config.hpp; built-in stages: builtins.hpp).
#include <cstdio>
#include <string>

#include "plumb/plugin/builtins/builtins.hpp"
#include "plumb/plugin/error.hpp"
#include "plumb/plugin/pipeline_config.hpp"

int main(int argc, char** argv) {
    if (argc < 3) {
        std::fprintf(stderr, "usage: %s CONFIG.json \"query text\"\n", argv[0]);
        return 2;
    }
    try {
        plumb::Registry registry;            // the host owns the registry
        plumb::register_builtins(registry);  // bm25, dense, hybrid, tk, cat, ... post-filters
        plumb::Pipeline pipeline = plumb::load_pipeline(argv[1], registry);
        plumb::SearchResult result = pipeline.search({"q", argv[2]});
        std::size_t rank = 0;
        for (const plumb::Candidate& c : result.list.candidates) {
            std::printf("%zu %s %.4f", ++rank, c.docid.c_str(), c.score);
            for (const plumb::StageScore& s : c.trace)
                std::printf(" %s=%.4f", s.stage.c_str(), s.score);
            std::printf("\n");
        }
        for (const plumb::StageTiming& t : result.timings) {
            std::printf("# %s %.3f ms\n", t.stage.c_str(), t.ms);
        }
        return 0;
    } catch (const plumb::Error& e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        return 1;
    }
}
