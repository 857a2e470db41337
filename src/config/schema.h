// The configuration's schema: every field of `sluice serve`'s file declared once, with whether a
// reload (SIGHUP) puts a change of it in force or it needs a restart. The parsers take the keys
// each mapping accepts from it, and a reload refuses by it, naming the first field at fault.
#pragma once

#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "config/config.h"

namespace sluice::config {

// What a reload does with a changed field.
enum class OnReload {
  kReloads,  // the new value is in force once the reload succeeds
  kRestart,  // the servers, pools or stores were built with it: the reload is refused
};

// One field of the file. Its path is dotted ("upstream.pool"); a step ending in `[]` is each item
// of a list ("rules[].capacity": the capacity of every rule), and a `*` step is each key of a
// mapping whose keys are the user's ("rules[].overrides.*.period").
struct SchemaField {
  std::string_view path;
  OnReload on_reload;
  // Whether `a` and `b` hold the same value of this field (its section's presence included).
  // Null for a field that reloads, and for one of `store` and `quota_store`, which are compared
  // by the field's text in Config::field_texts (ComparedByText).
  bool (*same)(const Config& a, const Config& b);
};

// Every field, in the order the documentation lists them.
std::span<const SchemaField> Schema();

// The keys the mapping at `section` accepts ("" for the top of the file, "upstream", "rules[]",
// "rules[].overrides.*"): the first step of the paths below it, without a list's `[]`, in the
// schema's order.
std::vector<std::string_view> KeysOf(std::string_view section);

// Whether a reload compares `field` by its text as written (Config::field_texts): the fields of
// `store` and `quota_store`.
bool ComparedByText(const SchemaField& field);

// The path of the first field needing a restart whose value differs between the configuration in
// force and `next` (or the section, `store` or `quota_store`, when its options differ but no
// field's text does); nothing when `next` can be put in force by a reload.
std::optional<std::string_view> FirstRestartField(const Config& running, const Config& next);

}  // namespace sluice::config
