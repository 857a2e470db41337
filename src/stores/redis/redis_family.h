// What the store kinds on Redis (redis, sentinel, cluster) share: their common fields of
// `store:` (credentials, tls, mode, layout, timeouts), and settings that open one store per event
// loop and wait for them together.
#pragma once

#include <spdlog/spdlog.h>

#include <algorithm>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <typeinfo>
#include <vector>

#include "config/yaml_field.h"
#include "sluice/redis_credentials.h"
#include "sluice/redis_options.h"
#include "stores/store_kind.h"

namespace sluice::stores {

// `tls:` (alone: TLS with the defaults).
TlsOptions ParseTls(const config::YamlField& f);

// `PREFIXusername`, and `PREFIXpassword` or `PREFIXpassword_file`: never both, and never beside
// credentials in the URL, so that none silently wins.
void ParseCredentials(const config::YamlField& f, const char* prefix, std::string& username,
                      std::string& password, std::string& password_file);

// `nodes:` or `sentinels:`: at least one host:port.
std::vector<HostPort> ParseAddresses(const config::YamlField& f, const char* what);

// `mode`, `layout`, `timeout`, `connect_timeout`, `max_in_flight`.
template <typename Options>
void ParseTimings(const config::YamlField& f, Options& options) {
  if (f.Has("mode")) {
    options.mode = f["mode"].OneOf({"evalsha", "function"}) == "function" ? ScriptMode::kFunction
                                                                          : ScriptMode::kEvalsha;
  }
  if (f.Has("layout")) {
    options.layout = f["layout"].OneOf({"hash", "compact"}) == "compact" ? BucketLayout::kCompact
                                                                         : BucketLayout::kHash;
  }
  if (f.Has("timeout")) options.timeout = f["timeout"].Duration();
  if (f.Has("connect_timeout")) options.connect_timeout = f["connect_timeout"].Duration();
  if (f.Has("max_in_flight")) {
    options.max_in_flight = static_cast<size_t>(f["max_in_flight"].Integer(1, 10'000'000));
  }
  if (options.timeout.count() == 0) f["timeout"].Fail("must be more than 0");
  if (options.connect_timeout.count() == 0) f["connect_timeout"].Fail("must be more than 0");
}

// The settings of a store `S` (RedisStore, ClusterStore) made from `Options`.
template <typename Options, typename S>
class RedisFamilySettings : public StoreSettings {
 public:
  explicit RedisFamilySettings(Options options) : options_(std::move(options)) {}

  const Options& options() const { return options_; }

  bool Equals(const StoreSettings& other) const override {
    return typeid(other) == typeid(*this) &&
           static_cast<const RedisFamilySettings&>(other).options_ == options_;
  }
  std::chrono::milliseconds Timeout() const override { return options_.timeout; }
  bool HasReplicas() const override { return true; }
  Status CheckCredentials() const override { return RedisCredentials::Load(options_).status(); }

  void StatusJson(nlohmann::json& out) const override {
    if (!options_.username.empty()) out["username"] = options_.username;
    if (!options_.password.empty()) out["password"] = "(set)";
    if (!options_.password_file.empty()) out["password_file"] = options_.password_file;
    out["tls"] = options_.tls.has_value();
    out["mode"] = options_.mode == ScriptMode::kFunction ? "function" : "evalsha";
    out["timeout_ms"] = options_.timeout.count();
  }

  Result<OpenedStores> Open(const std::vector<boost::asio::io_context*>& ios,
                            size_t /*max_buckets*/) const override {
    Result<std::shared_ptr<RedisCredentials>> credentials = RedisCredentials::Load(options_);
    if (!credentials.ok()) return credentials.status();
    if (options_.tls && !options_.tls->verify) {
      spdlog::warn("store tls.verify is false: the server's certificate and name are not checked");
    }
    std::vector<std::shared_ptr<S>> stores;
    stores.reserve(ios.size());
    for (boost::asio::io_context* io : ios) {
      stores.push_back(std::make_shared<S>(options_, *credentials, io));
    }
    WaitReady(stores);
    auto ready = [stores] {
      return std::all_of(stores.begin(), stores.end(), [](const auto& s) { return s->Ready(); });
    };
    return OpenedStores{std::vector<std::shared_ptr<Store>>(stores.begin(), stores.end()), ready,
                        *credentials};
  }

 protected:
  // Where the store is, for the log: never a credential.
  virtual std::string Address() const = 0;

 private:
  // All of `stores` are given up to the connect timeout together.
  void WaitReady(const std::vector<std::shared_ptr<S>>& stores) const {
    using std::chrono::milliseconds;
    const auto deadline = std::chrono::steady_clock::now() + options_.connect_timeout;
    for (const auto& s : stores) {
      const auto left =
          std::chrono::duration_cast<milliseconds>(deadline - std::chrono::steady_clock::now());
      if (!s->WaitReady(std::max(left, milliseconds(0)))) {
        spdlog::warn("{} is not reachable yet; checks follow the failure policy until it is",
                     Address());
        return;
      }
    }
  }

  Options options_;
};

}  // namespace sluice::stores
