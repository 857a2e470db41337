#include "config/yaml_field.h"

#include <algorithm>
#include <utility>

#include "config/duration.h"
#include "config/environment.h"

namespace sluice::config {

Status yaml_internal::ReadYaml(std::string_view yaml, const std::string& source,
                               YamlReading reading,
                               const std::function<void(const YamlField&)>& parse) {
  try {
    const YAML::Node root = YAML::Load(std::string(yaml));
    if (!root.IsDefined() || root.IsNull()) {
      return Status::InvalidArgument(source + ": the file is empty");
    }
    parse(YamlField(root, "", source, reading));
    return {};
  } catch (const YamlError& e) {
    return Status::InvalidArgument(e.message);
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument(source + ":" + std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
}

YamlField::YamlField(const YAML::Node& node, std::string path, const std::string& source,
                     YamlReading reading)
    : node_(node), path_(std::move(path)), source_(source), reading_(reading) {}

void YamlField::Fail(std::string_view what) const {
  // yaml-cpp has no mark for a value that is absent.
  const int line = node_.Mark().line >= 0 ? node_.Mark().line + 1 : 0;
  // The document itself has no path: "sluice.yaml:1: needs an upstream".
  throw YamlError{source_ + ":" + std::to_string(line) + ": " +
                  (path_.empty() ? "" : path_ + ": ") + std::string(what)};
}

bool YamlField::Has(const std::string& key) const { return node_.IsMap() && node_[key]; }

YamlField YamlField::operator[](const std::string& key) const {
  return {node_[key], KeyPath(key), source_, reading_};
}

std::string YamlField::KeyPath(const std::string& key) const {
  return path_.empty() ? key : path_ + "." + key;
}

void YamlField::ExpectMap(std::initializer_list<std::string_view> known) const {
  ExpectMap(std::span<const std::string_view>(known.begin(), known.size()));
}

void YamlField::ExpectMap(std::span<const std::string_view> known) const {
  VisitEntries(&known, [](const std::string&, const YamlField&) {});
}

void YamlField::ForEachEntry(
    const std::function<void(const std::string&, const YamlField&)>& each) const {
  VisitEntries(nullptr, each);
}

void YamlField::ForEachEntry(
    std::initializer_list<std::string_view> known,
    const std::function<void(const std::string&, const YamlField&)>& each) const {
  const std::span<const std::string_view> fields(known.begin(), known.size());
  VisitEntries(&fields, each);
}

void YamlField::VisitEntries(
    const std::span<const std::string_view>* known,
    const std::function<void(const std::string&, const YamlField&)>& each) const {
  if (!node_.IsMap()) Fail("must be a mapping");
  for (const auto& entry : node_) {
    const auto key = entry.first.as<std::string>();
    // The key's own line: the value may sit lines below it, or be absent.
    if (known != nullptr && std::find(known->begin(), known->end(), key) == known->end()) {
      YamlField(entry.first, KeyPath(key), source_, reading_).Fail("unknown field");
    }
    each(key, YamlField(entry.second, KeyPath(key), source_, reading_));
  }
}

void YamlField::ForEach(const std::function<void(const YamlField&)>& each) const {
  if (!node_.IsSequence()) Fail("must be a list");
  for (size_t i = 0; i < node_.size(); ++i) {
    each(YamlField(node_[i], path_ + "[" + std::to_string(i) + "]", source_, reading_));
  }
}

std::string YamlField::String() const {
  if (!node_.IsScalar()) Fail("must be a single value");
  if (!reading_.expand_environment) return node_.Scalar();
  return Require(ExpandEnvironment(node_.Scalar()));
}

int64_t YamlField::Integer(int64_t low, int64_t high) const {
  const std::optional<int64_t> value = Number<int64_t>();
  if (!value) Fail("must be a whole number");
  if (*value < low || *value > high) {
    Fail("must be between " + std::to_string(low) + " and " + std::to_string(high));
  }
  return *value;
}

double YamlField::Fraction(double low, double high) const {
  const std::optional<double> value = Number<double>();
  if (!value) Fail("must be a number");
  if (!(*value > low && *value <= high)) {
    Fail("must be more than " + std::to_string(low) + " and at most " + std::to_string(high));
  }
  return *value;
}

bool YamlField::Bool() const {
  const std::string text = String();
  if (text == "true") return true;
  if (text == "false") return false;
  Fail("must be true or false");
}

std::chrono::milliseconds YamlField::Duration() const {
  return std::chrono::milliseconds(Require(ParseDurationMs(String())));
}

std::string YamlField::OneOf(std::initializer_list<std::string_view> choices) const {
  return OneOf(std::span<const std::string_view>(choices.begin(), choices.size()));
}

std::string YamlField::OneOf(std::span<const std::string_view> choices) const {
  std::string value = String();
  if (std::find(choices.begin(), choices.end(), value) != choices.end()) return value;
  std::string list;
  for (std::string_view c : choices) list += (list.empty() ? "" : " | ") + std::string(c);
  Fail("\"" + value + "\" is not one of " + list);
}

void YamlField::Require(const Status& status) const {
  if (!status.ok()) Fail(status.message());
}

}  // namespace sluice::config
