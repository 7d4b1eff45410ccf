#pragma once
/// \file tk_stage.hpp
/// TK as a plumb::RerankStage (Torch-free header).
///
/// score() tokenizes the query and the first min(depth, size) candidates' text (candidates
/// without text score as empty passages), then TkModel::score(): passages grouped by length,
/// batches of `batch_size` with dynamic padding, c10::InferenceMode. Scores do not depend on the
/// batch size beyond float rounding. `threads` > 0 sets Torch's intra-op threads for the
/// duration of each score() call (restored afterwards on the calling thread); 0 leaves Torch's
/// setting alone. The stage is const after construction and safe to call concurrently.
///
/// Passage cache (rerank/tk_cache.hpp): with a cache, candidates found in it (by docid, with the
/// hash of their text) are scored from the cached passage vectors
/// (TkModel::score_cached: only the query is contextualised); the others, and candidates whose
/// text changed, go through TkModel::score() as without a cache. Threads with a cache: the
/// query is contextualised on one Torch thread (a TorchThreadsScope(1): a serving process that
/// sets Torch's count to 1 once avoids switching it per call), the cached match and pooling run
/// on `threads` threads (0 = Torch's count). `cache`:
///  - a file: used; IoError/IndexError when it cannot be opened or is corrupt or truncated,
///    ConfigError when it belongs to another model (checksum) or dimension;
///  - empty (default): automatic — make_tk_stage(model_dir) uses
///    tk_cache_default_path(model_dir, checksum) when that file exists (same errors when it is
///    corrupt; a file there whose header names another model is ignored with a warning); the
///    overload taking a loaded model has no folder, hence no automatic cache;
///  - "none": no cache.

#include <cstddef>
#include <filesystem>
#include <memory>
#include <string>
#include <nlohmann/json_fwd.hpp>

#include "plugin/registry.hpp"
#include "plugin/stage.hpp"
#include "rerank/tk_model.hpp"

namespace plumb::rerank {

struct TkStageOptions {
    std::size_t depth = 100;      ///< candidates re-scored per query
    std::size_t batch_size = 64;  ///< passages per forward call
    int threads = 0;              ///< Torch intra-op threads during score(); 0 = unchanged
    std::string name = "tk";      ///< stage name (score trace key)
    std::string cache;            ///< passage cache file; "" = automatic, "none" = no cache
};

/// Loads a TK model directory (see TkModel::load; throws its errors) and wraps it in a stage.
/// InvalidArgument for depth 0 or batch_size 0.
std::unique_ptr<plumb::RerankStage> make_tk_stage(const std::filesystem::path& model_dir,
                                                  TkStageOptions options = {});
/// Pipeline factory "tk": {"model": DIR, "depth", "name", "batch_size", "threads", "cache"}
/// (plugin/builtins/builtins.hpp).
std::shared_ptr<const plumb::RerankStage> tk_stage_from_config(const nlohmann::json& config,
                                                               StageContext& ctx);
/// A stage over an already loaded model (shared, read-only).
std::unique_ptr<plumb::RerankStage> make_tk_stage(std::shared_ptr<const TkModel> model,
                                                  TkStageOptions options = {});

}  // namespace plumb::rerank
