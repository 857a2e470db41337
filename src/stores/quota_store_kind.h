// The registry of quota store kinds: each kind of `quota_store:` (postgres) is one
// QuotaStoreKind, defined in its store's folder and listed once in quota_store_kinds.cc. The
// configuration and the commands reach a quota store only through it.
#pragma once

#include <yaml-cpp/yaml.h>

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/quota_admin.h"
#include "sluice/quota_store.h"
#include "sluice/status.h"

namespace sluice::config {
class YamlField;
}  // namespace sluice::config

namespace sluice::stores {

// A quota store opened for a process.
struct OpenedQuotaStore {
  std::shared_ptr<QuotaStore> store;
  // Reads the store's secrets again (its password file, for a reload): what puts them in force,
  // or why they cannot be read. Nothing changes until the returned function runs.
  std::function<Result<std::function<void()>>()> read_secrets;
};

// One `quota_store:` section as its kind read it (beside `type` and `failure`).
class QuotaStoreSettings {
 public:
  virtual ~QuotaStoreSettings() = default;

  // Whether `other` is of the same kind with the same fields.
  virtual bool Equals(const QuotaStoreSettings& other) const = 0;

  // Where it is, for logs and `sluice quota`: never a credential.
  virtual std::string Describe() const = 0;

  // Reads the credentials it names, as opening it will; ok when it names none.
  virtual Status CheckCredentials() const = 0;

  // The store, given up to its connect timeout to become ready. What can never work (a table of
  // the wrong shape, a password that cannot be read or is refused) fails here, with the reason;
  // a server that cannot be reached yet is logged, and durable rules follow
  // quota_store.failure until it answers.
  virtual Result<OpenedQuotaStore> Open() const = 0;

  // A connection for `sluice quota`: a quota's count read, set or reset, the table made.
  virtual Result<std::unique_ptr<QuotaAdmin>> Admin() const = 0;
};

// A kind of quota store, as the configuration names it.
struct QuotaStoreKind {
  std::string_view type;  // `quota_store.type`
  // The fields of `quota_store:` it takes, beside `type` and `failure` (each in the schema).
  std::vector<std::string_view> fields;
  // Reads its fields (refusing by YamlField::Fail, naming the field).
  std::function<std::shared_ptr<const QuotaStoreSettings>(const config::YamlField& quota_store)>
      parse;
  // For `sluice check --quota-store URL`: the URL schemes it answers to.
  std::vector<std::string_view> url_schemes;
};

// Every kind.
const std::vector<QuotaStoreKind>& QuotaStoreKinds();

// The kind `type` names, or null.
const QuotaStoreKind* FindQuotaStoreKind(std::string_view type);

// The kind whose scheme starts `url`, or null.
const QuotaStoreKind* QuotaStoreKindForUrl(std::string_view url);

// The registrations, each defined in its store's folder.
QuotaStoreKind PostgresQuotaStoreKind();

}  // namespace sluice::stores
