#include "debias/post_filters.hpp"

#include <nlohmann/json.hpp>

#include "debias/bias_balance.hpp"
#include "debias/fair_topk.hpp"
#include "debias/near_duplicates.hpp"

namespace plumb::debias {

void register_post_filters(Registry& registry) {
    registry.add_post_filter("fair_topk", FairTopK::from_config);
    registry.add_post_filter("bias_balance", BiasBalance::from_config);
    registry.add_post_filter("balance", BiasBalance::from_config);
    registry.add_post_filter("near_duplicates", NearDuplicates::from_config);
    registry.add_post_filter("dedup", NearDuplicates::from_config);
}

std::shared_ptr<const PostFilter> make_post_filter(const nlohmann::json& config,
                                                   StageContext& ctx) {
    static const Registry registry = [] {
        Registry r;
        register_post_filters(r);
        return r;
    }();
    return registry.make_post_filter(config, ctx);
}

}  // namespace plumb::debias
