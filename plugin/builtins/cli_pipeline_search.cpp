// Part of the LibTorch CLI module: runs `plumb search --pipeline FILE` for the core `search`
// command (see plugin/cli/command.hpp, pipeline_search_hook).
#include <c10/util/Exception.h>

#include "index/corpus.hpp"
#include "plugin/builtins/builtins.hpp"
#include "plugin/cli/command.hpp"
#include "plugin/cli/progress_bar.hpp"

namespace {

void run(const plumb::cli::PipelineSearchRequest& r) {
    plumb::PipelineRunOptions o;
    o.threads = r.threads;
    o.tag = r.tag;
    o.topic_fields = plumb::index::parse_topic_fields(r.topic_field);
    plumb::cli::ProgressBar bar("search", "queries", !r.quiet);
    o.progress = bar.callback();
    plumb::run_pipeline_config(r.config, r.topics, r.output, {}, o, false);
    bar.finish();
}

// Sets the hook while the module is loaded (static initialisation), before any command runs.
/// c10::Error (LibTorch) -> its message without LibTorch's backtrace, first line only.
std::string translate_torch_error(const std::exception& e) {
    const auto* c10 = dynamic_cast<const c10::Error*>(&e);
    if (c10 == nullptr) return {};
    std::string m = c10->what_without_backtrace();
    if (auto nl = m.find('\n'); nl != std::string::npos) m.resize(nl);
    return "LibTorch: " + m;
}

struct SetHook {
    SetHook() {
        plumb::cli::pipeline_search_hook() = run;
        plumb::cli::exception_translator() = translate_torch_error;
    }
};
const SetHook kSetHook;

}  // namespace
