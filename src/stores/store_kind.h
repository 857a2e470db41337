// The registry of store types: each kind of `store:` (memory, redis, sentinel, cluster) is one
// StoreKind, defined in its own folder and listed once in store_kinds.cc. The configuration, the
// commands and the status page reach a store only through it: what its fields are, how they are
// read, how the store is opened, and what operators are shown of it.
#pragma once

#include <yaml-cpp/yaml.h>
#include <nlohmann/json_fwd.hpp>

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/status.h"
#include "sluice/store.h"

namespace boost::asio {
class io_context;
}  // namespace boost::asio

namespace sluice {
class RedisCredentials;
}  // namespace sluice

namespace sluice::config {
class YamlField;
}  // namespace sluice::config

namespace sluice::stores {

// The stores opened for a process: one per event loop given (the same one for each, for a store
// that every thread may share), `ready` true while every connection is up, and the credentials
// they share (null for a store without any): reading them again rotates them all.
struct OpenedStores {
  std::vector<std::shared_ptr<Store>> stores;
  std::function<bool()> ready;
  std::shared_ptr<RedisCredentials> credentials;
};

// One `store:` section as its kind read it.
class StoreSettings {
 public:
  virtual ~StoreSettings() = default;

  // Whether `other` is of the same kind with the same fields (a reload compares them).
  virtual bool Equals(const StoreSettings& other) const = 0;

  // What check-config calls it: "redis", "redis sentinel", ...
  virtual std::string Kind() const = 0;

  // Its fields for /status.json's `store`, beside `type`: where it is, never a credential.
  virtual void StatusJson(nlohmann::json& out) const = 0;

  // A check's time limit on the store; 0 for a store that answers inline.
  virtual std::chrono::milliseconds Timeout() const = 0;

  // Whether it has replicas, for a rule's `wait`.
  virtual bool HasReplicas() const = 0;

  // The connections it holds per event loop, for the estimate of descriptors needed.
  virtual size_t ConnectionsPerLoop() const = 0;

  // Reads the credentials it names (its password files), as opening it will; ok when it names
  // none.
  virtual Status CheckCredentials() const = 0;

  // One store for each of `ios` (a null entry: on a thread of the store's own), given up to its
  // connect timeout to become ready: one that cannot be reached yet is logged, and checks follow
  // the failure policy until it answers. `max_buckets` bounds a store that holds its buckets
  // itself. Fails when the credentials cannot be read.
  virtual Result<OpenedStores> Open(const std::vector<boost::asio::io_context*>& ios,
                                    size_t max_buckets) const = 0;
};

// A kind of store, as the configuration names it.
struct StoreKind {
  std::string_view type;  // `store.type`
  // The fields of `store:` it takes, beside `type` and `max_buckets` (every one is in the
  // schema, src/config/schema.cc).
  std::vector<std::string_view> fields;
  // Reads its fields of `store:` (refusing by YamlField::Fail, naming the field).
  std::function<std::shared_ptr<const StoreSettings>(const config::YamlField& store)> parse;
  // For `sluice check --store URL`: the URL schemes it answers to ("redis://"), and the fields of
  // `store:` that a URL stands for, or why it stands for none. No schemes: a kind named by its
  // type alone ("memory").
  std::vector<std::string_view> url_schemes;
  std::function<Result<YAML::Node>(std::string_view url)> url_fields;
};

// Every kind, the default (memory) first.
const std::vector<StoreKind>& StoreKinds();

// The kind `type` names, or null.
const StoreKind* FindStoreKind(std::string_view type);

// The kind a `--store` value names: a URL of one of its schemes, or its type alone; or null.
const StoreKind* StoreKindForUrl(std::string_view url);

// The settings of a configuration without `store:`: the default kind's, with no fields.
std::shared_ptr<const StoreSettings> DefaultStoreSettings();

// The kinds' registrations, each defined in its store's folder.
StoreKind MemoryStoreKind();
StoreKind RedisStoreKind();
StoreKind SentinelStoreKind();
StoreKind ClusterStoreKind();

}  // namespace sluice::stores
