// The secrets a store's connections present: passwords and TLS material, read once and then
// again on request, so that credentials rotate without a restart.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "sluice/mutex.h"
#include "sluice/redis_options.h"
#include "sluice/status.h"

namespace sluice {

struct ClusterOptions;
class TlsContext;  // an OpenSSL client context built from TlsOptions (src/stores/redis)

// The password and TLS context of one store's options, from the options themselves or from the
// files they name (password_file, the sentinels' password_file, the TLS files). Thread-safe:
// connections read the credentials in force each time they connect, and Use swaps them.
// Messages name a file and why it cannot be used, never its content.
class RedisCredentials {
 public:
  // Reads every file `options` names. Fails, naming the file, when one cannot be read or used.
  static Result<std::shared_ptr<RedisCredentials>> Load(const RedisOptions& options);
  static Result<std::shared_ptr<RedisCredentials>> Load(const ClusterOptions& options);

  // The credentials as the files hold them now. A reload reads them (which may fail, and
  // changes nothing) apart from putting them in force (which cannot fail), so that it can refuse
  // a later part of itself with the old credentials still in force.
  struct Values {
    std::string password;
    std::string sentinel_password;
    std::shared_ptr<const TlsContext> tls;
  };

  // Reads every file again. Fails, naming the file, when one cannot be read or used.
  Result<Values> Read() const;

  // Puts `values` in force for the connections made from now on.
  void Use(Values values) SLUICE_EXCLUDES(mutex_);

  // The password for AUTH to the server (empty: no AUTH).
  std::string Password() const SLUICE_EXCLUDES(mutex_);
  // The password for AUTH to the sentinels.
  std::string SentinelPassword() const SLUICE_EXCLUDES(mutex_);
  // The TLS context for new connections; null without TLS.
  std::shared_ptr<const TlsContext> Tls() const SLUICE_EXCLUDES(mutex_);

  // What the credentials are read from; public for Load's helpers.
  struct Sources {
    std::string password;
    std::string password_file;
    std::string sentinel_password;
    std::string sentinel_password_file;
    std::optional<TlsOptions> tls;
  };

 private:
  explicit RedisCredentials(Sources sources) : sources_(std::move(sources)) {}
  static Result<std::shared_ptr<RedisCredentials>> LoadSources(Sources sources);

  const Sources sources_;
  mutable Mutex mutex_;
  Values values_ SLUICE_GUARDED_BY(mutex_);
};

}  // namespace sluice
