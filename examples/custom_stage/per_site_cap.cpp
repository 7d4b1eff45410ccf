#include "per_site_cap.hpp"

#include <map>
#include <nlohmann/json.hpp>

std::shared_ptr<const plumb::PostFilter> PerSiteCap::from_config(const nlohmann::json& config,
                                                                 plumb::StageContext&) {
    const std::string where = "post-filter \"per_site_cap\"";
    plumb::check_keys(config, {"max"}, where);  // an unknown key is a ConfigError
    return std::make_shared<const PerSiteCap>(
        plumb::config_positive_size(config, "max", 2, where));
}

void PerSiteCap::apply(const plumb::Query&, plumb::RankedList& list) const {
    std::map<std::string, std::size_t, std::less<>> kept;
    std::erase_if(list.candidates, [&](const plumb::Candidate& c) {
        const std::string site = c.docid.substr(0, c.docid.find('/'));
        return ++kept[site] > m_max;
    });
}
