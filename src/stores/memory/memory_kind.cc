// `store: {type: memory}`: the embedded store, one for every thread of the process.
#include <nlohmann/json.hpp>

#include "config/yaml_field.h"
#include "sluice/memory_store.h"
#include "stores/store_kind.h"

namespace sluice::stores {
namespace {

class MemorySettings final : public StoreSettings {
 public:
  bool Equals(const StoreSettings& other) const override {
    return dynamic_cast<const MemorySettings*>(&other) != nullptr;
  }
  std::string Kind() const override { return "memory"; }
  void StatusJson(nlohmann::json& /*out*/) const override {}
  std::chrono::milliseconds Timeout() const override { return std::chrono::milliseconds(0); }
  bool HasReplicas() const override { return false; }
  size_t ConnectionsPerLoop() const override { return 0; }
  Status CheckCredentials() const override { return {}; }

  Result<OpenedStores> Open(const std::vector<boost::asio::io_context*>& ios,
                            size_t max_buckets) const override {
    // One store for every loop: its shards' locks are held for one bucket's arithmetic.
    const auto store = std::make_shared<MemoryStore>(nullptr, max_buckets);
    return OpenedStores{std::vector<std::shared_ptr<Store>>(ios.size(), store), [] { return true; },
                        nullptr};
  }
};

}  // namespace

StoreKind MemoryStoreKind() {
  return {.type = "memory",
          .fields = {},
          .parse = [](const config::YamlField&) -> std::shared_ptr<const StoreSettings> {
            return std::make_shared<MemorySettings>();
          },
          .url_schemes = {},
          .url_fields = nullptr};
}

}  // namespace sluice::stores
