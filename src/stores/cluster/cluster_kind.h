// The settings of `type: cluster`: one ClusterStore per event loop.
#pragma once

#include <string>

#include "sluice/cluster_store.h"
#include "stores/redis/redis_family.h"

namespace sluice::stores {

// The primaries a cluster is counted with in the estimate of descriptors needed: the slot map
// may name more or fewer, and the estimate is a warning's, not a bound.
constexpr size_t kPlannedPrimaries = 16;

class ClusterSettings final : public RedisFamilySettings<ClusterOptions, ClusterStore> {
 public:
  using RedisFamilySettings::RedisFamilySettings;

  std::string Kind() const override { return "redis cluster"; }

  void StatusJson(nlohmann::json& out) const override {
    nlohmann::json nodes = nlohmann::json::array();
    for (const auto& [host, port] : options().seeds) {
      nodes.push_back(host + ":" + std::to_string(port));
    }
    out["nodes"] = nodes;
    RedisFamilySettings::StatusJson(out);
  }

  size_t ConnectionsPerLoop() const override { return kPlannedPrimaries; }

 protected:
  std::string Address() const override {
    std::string seeds;
    for (const auto& [host, port] : options().seeds) {
      seeds += (seeds.empty() ? "" : ", ") + host + ":" + std::to_string(port);
    }
    return std::string(options().tls ? "redis cluster (TLS; " : "redis cluster (") + seeds + ")";
  }
};

}  // namespace sluice::stores
