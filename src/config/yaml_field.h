// Reading a YAML document so that every refusal names the file, the line and the field:
// "sluice.yaml:12: rules[0].capacity: must be between 1 and 1000000000000". The configuration
// file and envoyproxy/ratelimit's descriptor files are both read through it, so that their
// messages have one shape and a misspelt field is refused the same way in both.
#pragma once

#include <yaml-cpp/yaml.h>

#include <charconv>
#include <chrono>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>

#include "sluice/status.h"

namespace sluice::config {

// A refusal's whole message. Parsers throw it rather than return it so that each check stays one
// line; ReadYamlDocument turns it into a Status. Thrown by YamlField::Fail, and directly for a
// refusal that no single value stands for.
struct YamlError {
  std::string message;
};

class YamlField;

// How ReadYamlDocument reads a file.
struct YamlReading {
  // Each scalar's ${NAME} replaced from the environment (ExpandEnvironment), as Sluice's own
  // configuration is; envoyproxy/ratelimit's descriptor files are read as that project does.
  bool expand_environment = false;
};

namespace yaml_internal {
// ReadYamlDocument, below, with `parse` keeping what it makes.
Status ReadYaml(std::string_view yaml, const std::string& source, YamlReading reading,
                const std::function<void(const YamlField&)>& parse);
}  // namespace yaml_internal

// A YAML value with the dotted path that leads to it ("rules[0].match.methods"), so that a
// refusal can name the field as well as the line. It refers to the `source` given to
// ReadYamlDocument, and so must not outlive that call.
class YamlField {
 public:
  // Throws YamlError "SOURCE:LINE: PATH: what".
  [[noreturn]] void Fail(std::string_view what) const;

  // Whether this is a mapping that has `key`.
  bool Has(const std::string& key) const;

  // The value of `key`, which may be absent (see Has).
  YamlField operator[](const std::string& key) const;

  // Refuses anything but a mapping, and keys other than `known`, so that a misspelt field is an
  // error rather than a silent default.
  void ExpectMap(std::initializer_list<std::string_view> known) const;
  void ExpectMap(std::span<const std::string_view> known) const;

  // Calls `each` with every key and value of a mapping, in the file's order.
  void ForEachEntry(const std::function<void(const std::string&, const YamlField&)>& each) const;

  // As above, refusing a key other than `known` before `each` sees its value.
  void ForEachEntry(std::initializer_list<std::string_view> known,
                    const std::function<void(const std::string&, const YamlField&)>& each) const;

  // Calls `each` with every element of a sequence; anything else, null too, is refused.
  void ForEach(const std::function<void(const YamlField&)>& each) const;

  // The scalar's text, its ${NAME} expanded when the document is read so.
  std::string String() const;

  // The whole value as a number, or nothing when it is not one of type T (partly a number, out
  // of T's range): the caller says what it must be.
  template <typename T>
  std::optional<T> Number() const {
    const std::string text = String();
    T value{};
    auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
    return value;
  }

  // A whole number in [low, high].
  int64_t Integer(int64_t low, int64_t high) const;

  // A decimal number in (low, high].
  double Fraction(double low, double high) const;

  // Only `true` or `false`.
  bool Bool() const;

  // "500ms", "1s", "1m", "1h", "1d" or a bare number of milliseconds.
  std::chrono::milliseconds Duration() const;

  // The value, which must be one of `choices`.
  std::string OneOf(std::initializer_list<std::string_view> choices) const;
  std::string OneOf(std::span<const std::string_view> choices) const;

  // The value of `result`, or its message as this field's refusal.
  template <typename T>
  T Require(Result<T> result) const {
    if (!result.ok()) Fail(result.status().message());
    return std::move(result).value();
  }

  // Nothing when `status` is ok; else its message as this field's refusal.
  void Require(const Status& status) const;

  const YAML::Node& node() const { return node_; }

 private:
  friend Status yaml_internal::ReadYaml(std::string_view yaml, const std::string& source,
                                        YamlReading reading,
                                        const std::function<void(const YamlField&)>& parse);

  YamlField(const YAML::Node& node, std::string path, const std::string& source,
            YamlReading reading);

  // The path of this mapping's `key`: "key" at the top, "path.key" below it.
  std::string KeyPath(const std::string& key) const;

  // Both ForEachEntry: `known` null takes any key.
  void VisitEntries(const std::span<const std::string_view>* known,
                    const std::function<void(const std::string&, const YamlField&)>& each) const;

  YAML::Node node_;
  std::string path_;
  const std::string& source_;
  YamlReading reading_;
};

// Loads `yaml` and returns what `parse` makes of the whole document. A YAML syntax error, an
// empty document and a YamlError thrown by `parse` come back as InvalidArgument naming `source`
// (and the line, but for an empty document).
template <typename T>
Result<T> ReadYamlDocument(std::string_view yaml, const std::string& source, YamlReading reading,
                           const std::function<T(const YamlField&)>& parse) {
  std::optional<T> value;
  const Status read = yaml_internal::ReadYaml(yaml, source, reading,
                                              [&](const YamlField& root) { value = parse(root); });
  if (!read.ok()) return read;
  return std::move(*value);
}

}  // namespace sluice::config
