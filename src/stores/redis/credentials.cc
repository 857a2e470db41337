#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <utility>

#include "password_file.h"
#include "sluice/cluster_store.h"
#include "sluice/redis_credentials.h"
#include "tls_context.h"

namespace sluice {

namespace {

// `inline_value`, or the content of `file` when one is named.
Result<std::string> Secret(const std::string& inline_value, const char* field,
                           const std::string& file) {
  if (file.empty()) return inline_value;
  return stores::ReadPasswordFile(field, file);
}

}  // namespace

Result<std::shared_ptr<RedisCredentials>> RedisCredentials::Load(const RedisOptions& options) {
  Sources sources{options.password, options.password_file, "", "", options.tls};
  if (options.sentinel) {
    sources.sentinel_password = options.sentinel->password;
    sources.sentinel_password_file = options.sentinel->password_file;
  }
  return LoadSources(std::move(sources));
}

Result<std::shared_ptr<RedisCredentials>> RedisCredentials::Load(const ClusterOptions& options) {
  return LoadSources({options.password, options.password_file, "", "", options.tls});
}

Result<std::shared_ptr<RedisCredentials>> RedisCredentials::LoadSources(Sources sources) {
  std::shared_ptr<RedisCredentials> credentials(new RedisCredentials(std::move(sources)));
  Result<Values> values = credentials->Read();
  if (!values.ok()) return values.status();
  credentials->Use(std::move(values).value());
  return credentials;
}

Result<RedisCredentials::Values> RedisCredentials::Read() const {
  Values values;
  Result<std::string> password = Secret(sources_.password, "password_file", sources_.password_file);
  if (!password.ok()) return password.status();
  Result<std::string> sentinel =
      Secret(sources_.sentinel_password, "sentinel_password_file", sources_.sentinel_password_file);
  if (!sentinel.ok()) return sentinel.status();
  values.password = std::move(password).value();
  values.sentinel_password = std::move(sentinel).value();
  if (sources_.tls) {
    Result<std::shared_ptr<const TlsContext>> tls = TlsContext::Load(*sources_.tls);
    if (!tls.ok()) return tls.status();
    values.tls = std::move(tls).value();
  }
  return values;
}

void RedisCredentials::Use(Values values) {
  MutexLock lock(&mutex_);
  values_ = std::move(values);
}

std::string RedisCredentials::Password() const {
  MutexLock lock(&mutex_);
  return values_.password;
}

std::string RedisCredentials::SentinelPassword() const {
  MutexLock lock(&mutex_);
  return values_.sentinel_password;
}

std::shared_ptr<const TlsContext> RedisCredentials::Tls() const {
  MutexLock lock(&mutex_);
  return values_.tls;
}

}  // namespace sluice
