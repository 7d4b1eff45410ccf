// Inputs the fuzz targets (tests/fuzz) found to crash, hang or escape with a foreign exception,
// kept as regression tests: each must now fail with a plumb::Error, quickly.
#include <gtest/gtest.h>

#include <string>

#include "plugin/error.hpp"
#include "plugin/pipeline_config.hpp"
#include "plugin/registry.hpp"

namespace {

void expect_parse_error(const std::string& yaml) {
    plumb::Registry registry;
    plumb::StageContext ctx;
    EXPECT_THROW(plumb::pipeline_from_yaml(yaml, registry, ctx, "p.yaml"), plumb::ParseError)
        << yaml;
}

}  // namespace

// fuzz_pipeline_yaml: YAML::LoadAll never returned on a lone flow indicator (yaml-cpp 0.7
// yields an empty document per call without consuming the ","), filling memory.
TEST(FuzzRegressions, YamlLoneFlowIndicatorIsAnErrorNotAHang) {
    expect_parse_error(",");
    expect_parse_error(",,\n");
    expect_parse_error(",---\nfirst_stage: {type: bm25, index: i}\n...\n---\nk: 1\n");
}
