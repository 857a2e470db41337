// The registry of counting modes, a rule's `counting`: where its bucket is decided (the shared
// store, or local counts synced or leased from it). Each mode is one CountingMode, listed once in
// counting_modes.cc with its own fields of a rule; the configuration and the status page find
// modes only through it.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <functional>
#include <string_view>
#include <vector>

#include "sluice/rule.h"

namespace sluice::config {
class YamlField;
}  // namespace sluice::config

namespace sluice::stores {

struct CountingMode {
  std::string_view name;  // `counting`
  Counting mode;
  // Its own fields of a rule (each in the schema, as rules[].NAME); another mode's rule refuses
  // them.
  std::vector<std::string_view> fields;
  // Reads its fields of the rule `rule` into `counting`.
  std::function<void(const config::YamlField& rule, LocalCounting& counting)> parse;
  // Its settings for /status.json's rule, beside `counting`.
  std::function<void(const LocalCounting& counting, nlohmann::json& out)> status;
};

// Every mode, the default (shared) first.
const std::vector<CountingMode>& CountingModes();

// The registration of `mode`.
const CountingMode& CountingModeOf(Counting mode);

}  // namespace sluice::stores
