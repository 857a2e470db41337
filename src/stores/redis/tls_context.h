// An OpenSSL client context for connections to Redis, built from TlsOptions.
#pragma once

#include <boost/asio/ssl/context.hpp>
#include <memory>
#include <string>

#include "sluice/redis_options.h"
#include "sluice/status.h"

namespace sluice {

// The trust store, client certificate and verification setting of TLS connections to Redis:
// TLS 1.2 or later, the peer verified against `ca_file` (or the system's store) unless verify is
// false. Immutable once built; shared by every connection made while it is in force.
class TlsContext {
 public:
  // Reads the files `options` names; the error names the file that cannot be used and why.
  static Result<std::shared_ptr<const TlsContext>> Load(const TlsOptions& options);

  const TlsOptions& options() const { return options_; }

  // For a new stream; OpenSSL counts the stream's reference itself.
  boost::asio::ssl::context& native() const { return *context_; }

 private:
  TlsContext(TlsOptions options, std::unique_ptr<boost::asio::ssl::context> context)
      : options_(std::move(options)), context_(std::move(context)) {}

  TlsOptions options_;
  std::unique_ptr<boost::asio::ssl::context> context_;
};

// Whether `host` is an IP address rather than a name: TLS verifies an address by the
// certificate's IP entries and sends no server name (SNI) for it.
bool IsIpAddress(const std::string& host);

}  // namespace sluice
