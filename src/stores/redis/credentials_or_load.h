// The credentials a Redis or cluster store is made with.
#pragma once

#include <memory>
#include <string>
#include <utility>

#include "sluice/redis_credentials.h"

namespace sluice::redis {

// `given`, or else the credentials `options` name, read here. A read that fails gives none and
// its message in `error`: the store is made anyway and fails its calls with it, so that a
// process still starts, says why, and recovers on a reload once the files are right.
template <typename Options>
std::shared_ptr<RedisCredentials> CredentialsOrLoad(const Options& options,
                                                    std::shared_ptr<RedisCredentials> given,
                                                    std::string& error) {
  if (given) return given;
  Result<std::shared_ptr<RedisCredentials>> loaded = RedisCredentials::Load(options);
  if (loaded.ok()) return std::move(loaded).value();
  error = loaded.status().message();
  return nullptr;
}

}  // namespace sluice::redis
