// The settings of `type: redis` and `type: sentinel`: one RedisStore per event loop.
#pragma once

#include <string>

#include "sluice/redis_store.h"
#include "stores/redis/redis_family.h"

namespace sluice::stores {

class RedisSettings final : public RedisFamilySettings<RedisOptions, RedisStore> {
 public:
  using RedisFamilySettings::RedisFamilySettings;

  std::string Kind() const override;
  void StatusJson(nlohmann::json& out) const override;
  size_t ConnectionsPerLoop() const override { return 1; }

 protected:
  std::string Address() const override;
};

}  // namespace sluice::stores
