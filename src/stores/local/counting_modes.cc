#include "stores/local/counting_modes.h"

#include <nlohmann/json.hpp>

#include "config/schema.h"
#include "config/yaml_field.h"

namespace sluice::stores {
namespace {

CountingMode SharedMode() {
  return {.name = "shared",
          .mode = Counting::kShared,
          .fields = {},
          .parse = [](const config::YamlField&, LocalCounting&) {},
          .status = [](const LocalCounting&, nlohmann::json&) {}};
}

CountingMode SyncedMode() {
  return {
      .name = "synced",
      .mode = Counting::kSynced,
      .fields = {"sync_interval"},
      .parse =
          [](const config::YamlField& rule, LocalCounting& counting) {
            if (rule.Has("sync_interval")) {
              counting.sync_interval_ms = rule["sync_interval"].Duration().count();
            }
          },
      .status = [](const LocalCounting& counting,
                   nlohmann::json& out) { out["sync_interval_ms"] = counting.sync_interval_ms; }};
}

CountingMode LeasedMode() {
  return {.name = "leased",
          .mode = Counting::kLeased,
          .fields = {"lease"},
          .parse =
              [](const config::YamlField& rule, LocalCounting& counting) {
                if (!rule.Has("lease")) return;
                const config::YamlField lease = rule["lease"];
                lease.ExpectMap(config::KeysOf("rules[].lease"));
                if (lease.Has("max_fraction")) {
                  counting.lease_max_fraction = lease["max_fraction"].Fraction(0, 1);
                }
                if (lease.Has("ttl")) counting.lease_ttl_ms = lease["ttl"].Duration().count();
              },
          .status =
              [](const LocalCounting& counting, nlohmann::json& out) {
                out["lease"] = {{"max_fraction", counting.lease_max_fraction},
                                {"ttl_ms", counting.lease_ttl_ms}};
              }};
}

}  // namespace

const std::vector<CountingMode>& CountingModes() {
  static const std::vector<CountingMode> modes = {SharedMode(), SyncedMode(), LeasedMode()};
  return modes;
}

const CountingMode& CountingModeOf(Counting mode) {
  // Listed in the order of Counting's values (tests/stores/local/counting_modes_test.cc holds
  // them to it).
  const std::vector<CountingMode>& modes = CountingModes();
  const auto index = static_cast<size_t>(mode);
  return index < modes.size() ? modes[index] : modes.front();
}

}  // namespace sluice::stores
