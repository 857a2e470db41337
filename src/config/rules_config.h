// `rules:` of the configuration: the gateway's rate limit rules.
#pragma once

#include <vector>

#include "config/store_config.h"
#include "config/yaml_field.h"
#include "sluice/rule.h"

namespace sluice::config {

// The rules, each validated; no two share a name or a bucket family.
std::vector<Rule> ParseRules(const YamlField& f);

// Refuses a rule's `wait` (replicas to wait for) that `store` cannot honour: none on the memory
// store, and a timeout of at most half the store's. `rules` were parsed from `fields`, one each.
void ValidateReplicaWaits(const std::vector<Rule>& rules, const StoreConfig& store,
                          const YamlField& fields);

}  // namespace sluice::config
