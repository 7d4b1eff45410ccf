#pragma once
// A post-filter written by a host: keeps at most `max` passages per site, the site being the
// part of the docid before its first '/' (a whole docid without one). Adding a stage to plumb
// is this one file pair plus one registration line (main.cpp).
#include <cstddef>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>

#include "plumb/plugin/registry.hpp"
#include "plumb/plugin/stage.hpp"

class PerSiteCap : public plumb::PostFilter {
public:
    explicit PerSiteCap(std::size_t max) : m_max(max) {}
    /// The factory the registry calls with the stage's configuration object:
    /// {"type": "per_site_cap", "max": 2}.
    static std::shared_ptr<const plumb::PostFilter> from_config(const nlohmann::json& config,
                                                                plumb::StageContext& context);
    std::string name() const override { return "per_site_cap"; }
    void apply(const plumb::Query& query, plumb::RankedList& list) const override;

private:
    std::size_t m_max;
};
