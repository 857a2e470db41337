#include "rls/descriptor_config.h"

#include <fmt/core.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <optional>
#include <set>
#include <sstream>
#include <utility>

#include "config/yaml_field.h"
#include "sluice/rule.h"

namespace sluice::rls {
namespace {

using config::ReadYamlDocument;
using config::YamlError;
using config::YamlField;

// The mapping's fields by name. Refuses names not in `known`, and names given twice (yaml-cpp
// keeps both, and a later one silently winning would hide a mistake).
std::map<std::string, YamlField> Fields(const YamlField& node,
                                        std::initializer_list<std::string_view> known) {
  std::map<std::string, YamlField> fields;
  node.ForEachEntry(known, [&](const std::string& name, const YamlField& field) {
    if (!fields.emplace(name, field).second) field.Fail("given twice");
  });
  return fields;
}

// YAML 1.1's booleans, as envoyproxy/ratelimit's YAML library reads them.
bool Yaml11Bool(const YamlField& field) {
  const std::string text = field.String();
  for (const char* yes : {"true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON"}) {
    if (text == yes) return true;
  }
  for (const char* no : {"false", "False", "FALSE", "no", "No", "NO", "off", "Off", "OFF"}) {
    if (text == no) return false;
  }
  field.Fail("must be true or false");
}

uint32_t Uint32(const YamlField& field) {
  const std::optional<uint32_t> value = field.Number<uint32_t>();
  if (!value) field.Fail("must be a whole number from 0 to 4294967295");
  return *value;
}

// The elements of a sequence; a null node (`descriptors:` with nothing after it) is empty.
std::vector<YamlField> Elements(const YamlField& list) {
  std::vector<YamlField> elements;
  if (list.node().IsNull()) return elements;
  list.ForEach([&](const YamlField& element) { elements.push_back(element); });
  return elements;
}

Unit ParseUnit(const YamlField& node) {
  std::string name = node.String();
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  static const std::pair<std::string_view, Unit> kUnits[] = {
      {"second", Unit::kSecond}, {"minute", Unit::kMinute}, {"hour", Unit::kHour},
      {"day", Unit::kDay},       {"week", Unit::kWeek},     {"month", Unit::kMonth},
      {"year", Unit::kYear}};
  for (const auto& [unit_name, unit] : kUnits) {
    if (unit_name == name) return unit;
  }
  node.Fail("\"" + node.String() + "\" is not one of second | minute | hour | day | week | " +
            "month | year");
}

RateLimitPolicy ParseRateLimit(const YamlField& node) {
  auto fields = Fields(node, {"unit", "requests_per_unit", "unit_multiplier", "unlimited", "name",
                              "replaces", "quota_mode", "metadata"});
  RateLimitPolicy policy;
  if (fields.contains("unlimited")) policy.unlimited = Yaml11Bool(fields.at("unlimited"));
  if (policy.unlimited && fields.contains("unit"))
    fields.at("unit").Fail("not allowed when unlimited");
  if (!policy.unlimited) {
    if (!fields.contains("unit")) node.Fail("needs a unit (or unlimited: true)");
    policy.unit = ParseUnit(fields.at("unit"));
  }
  if (fields.contains("requests_per_unit")) {
    policy.requests_per_unit = Uint32(fields.at("requests_per_unit"));
  }
  if (fields.contains("unit_multiplier")) {
    const YamlField& multiplier = fields.at("unit_multiplier");
    if (policy.unlimited) multiplier.Fail("not allowed when unlimited");
    policy.unit_multiplier = Uint32(multiplier);
    if (policy.unit_multiplier == 0) multiplier.Fail("must be at least 1");
    if (policy.PeriodMs() > Limit::kMaxPeriodMs) {
      multiplier.Fail("makes a period longer than 366 days");
    }
  }
  if (fields.contains("quota_mode")) policy.quota_mode = Yaml11Bool(fields.at("quota_mode"));
  if (fields.contains("name")) policy.name = fields.at("name").String();
  if (fields.contains("replaces")) {
    for (const YamlField& replaced : Elements(fields.at("replaces"))) {
      auto replaced_fields = Fields(replaced, {"name"});
      if (!replaced_fields.contains("name")) replaced.Fail("needs a name");
      policy.replaces.push_back(replaced_fields.at("name").String());
    }
  }
  return policy;
}

std::vector<DescriptorNode> ParseDescriptors(const YamlField& list);

DescriptorNode ParseDescriptor(const YamlField& node) {
  auto fields =
      Fields(node, {"key", "value", "rate_limit", "descriptors", "shadow_mode", "detailed_metric",
                    "value_to_metric", "share_threshold", "quota_mode", "metadata"});
  DescriptorNode descriptor;
  if (fields.contains("key")) descriptor.key = fields.at("key").String();
  if (descriptor.key.empty()) node.Fail("needs a key");
  if (fields.contains("value")) descriptor.value = fields.at("value").String();
  if (fields.contains("rate_limit"))
    descriptor.rate_limit = ParseRateLimit(fields.at("rate_limit"));
  if (fields.contains("shadow_mode")) descriptor.shadow_mode = Yaml11Bool(fields.at("shadow_mode"));
  if (fields.contains("share_threshold")) {
    descriptor.share_threshold = Yaml11Bool(fields.at("share_threshold"));
  }
  for (const char* ignored : {"detailed_metric", "value_to_metric"}) {
    if (fields.contains(ignored)) Yaml11Bool(fields.at(ignored));
  }
  if (fields.contains("quota_mode")) descriptor.quota_mode = Yaml11Bool(fields.at("quota_mode"));
  if (fields.contains("descriptors")) {
    descriptor.descriptors = ParseDescriptors(fields.at("descriptors"));
  }
  return descriptor;
}

std::vector<DescriptorNode> ParseDescriptors(const YamlField& list) {
  std::vector<DescriptorNode> descriptors;
  std::set<std::pair<std::string, std::string>> seen;
  for (const YamlField& element : Elements(list)) {
    DescriptorNode descriptor = ParseDescriptor(element);
    if (!seen.emplace(descriptor.key, descriptor.value).second) {
      element.Fail("duplicate descriptor: key \"" + descriptor.key + "\" value \"" +
                   descriptor.value + "\" is already in this list");
    }
    descriptors.push_back(std::move(descriptor));
  }
  return descriptors;
}

// The names of every rate limit in the tree.
void CollectNames(const std::vector<DescriptorNode>& nodes, std::set<std::string>& names) {
  for (const DescriptorNode& node : nodes) {
    if (node.rate_limit && !node.rate_limit->name.empty()) names.insert(node.rate_limit->name);
    CollectNames(node.descriptors, names);
  }
}

// `replaces` must name another limit of the same domain. The message cannot give a line: the
// tree is checked once the YAML is parsed and gone, so it names the limit instead.
void ValidateReplaces(const std::vector<DescriptorNode>& nodes, const std::set<std::string>& names,
                      const std::string& source) {
  for (const DescriptorNode& node : nodes) {
    if (node.rate_limit) {
      for (const std::string& replaced : node.rate_limit->replaces) {
        const std::string where = fmt::format(R"({}: descriptor "{}": rate_limit.replaces: "{}" )",
                                              source, node.key, replaced);
        if (replaced == node.rate_limit->name) throw YamlError{where + "is the limit itself"};
        if (!names.contains(replaced)) throw YamlError{where + "names no rate limit of the domain"};
      }
    }
    ValidateReplaces(node.descriptors, names, source);
  }
}

// Sets each rate limit's `path` in the tree.
void SetPaths(std::vector<DescriptorNode>& nodes, const std::string& parent) {
  for (DescriptorNode& node : nodes) {
    std::string path = parent.empty() ? node.key : parent + "." + node.key;
    if (!node.value.empty()) path.append("_").append(node.value);
    if (node.rate_limit) node.rate_limit->path = path;
    SetPaths(node.descriptors, path);
  }
}

DomainConfig Parse(const YamlField& root, const std::string& source) {
  auto fields = Fields(root, {"domain", "descriptors"});
  DomainConfig config;
  config.source = source;
  if (fields.contains("domain")) config.domain = fields.at("domain").String();
  if (config.domain.empty()) root.Fail("domain: must not be empty");
  if (fields.contains("descriptors"))
    config.descriptors = ParseDescriptors(fields.at("descriptors"));
  std::set<std::string> names;
  CollectNames(config.descriptors, names);
  ValidateReplaces(config.descriptors, names, source);
  SetPaths(config.descriptors, "");
  return config;
}

Result<std::string> ReadFile(const std::string& path) {
  std::ifstream file(path);
  if (!file) return Status::InvalidArgument(path + ": cannot be read");
  std::ostringstream text;
  text << file.rdbuf();
  return text.str();
}

// The files `path` stands for: itself, or the .yaml and .yml files directly inside it.
Result<std::vector<std::string>> FilesOf(const std::string& path) {
  std::error_code error;
  if (!std::filesystem::is_directory(path, error)) return std::vector<std::string>{path};
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(path, error)) {
    const std::string extension = entry.path().extension().string();
    if (entry.is_regular_file() && (extension == ".yaml" || extension == ".yml")) {
      files.push_back(entry.path().string());
    }
  }
  if (error) return Status::InvalidArgument(path + ": cannot be listed: " + error.message());
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

int64_t UnitMs(Unit unit) {
  constexpr int64_t kDayMs = 24LL * 3600 * 1000;
  switch (unit) {
    case Unit::kSecond:
      return 1000;
    case Unit::kMinute:
      return 60'000;
    case Unit::kHour:
      return 3'600'000;
    case Unit::kDay:
      return kDayMs;
    case Unit::kWeek:
      return 7 * kDayMs;
    case Unit::kMonth:
      return 30 * kDayMs;
    case Unit::kYear:
      return 365 * kDayMs;
  }
  return kDayMs;
}

Result<DomainConfig> ParseDomainConfig(std::string_view yaml, std::string_view source) {
  const std::string name(source);
  return ReadYamlDocument<DomainConfig>(yaml, name, {},
                                        [&](const YamlField& root) { return Parse(root, name); });
}

Result<std::vector<DomainConfig>> LoadDomainConfigs(const std::vector<std::string>& paths) {
  std::vector<DomainConfig> configs;
  std::map<std::string, std::string> domain_sources;
  for (const std::string& path : paths) {
    Result<std::vector<std::string>> files = FilesOf(path);
    if (!files.ok()) return files.status();
    for (const std::string& file : *files) {
      Result<std::string> text = ReadFile(file);
      if (!text.ok()) return text.status();
      Result<DomainConfig> config = ParseDomainConfig(*text, file);
      if (!config.ok()) return config.status();
      auto [it, added] = domain_sources.emplace(config->domain, file);
      if (!added) {
        return Status::InvalidArgument(file + ": domain \"" + config->domain +
                                       "\" is already defined in " + it->second);
      }
      configs.push_back(std::move(config).value());
    }
  }
  return configs;
}

}  // namespace sluice::rls
