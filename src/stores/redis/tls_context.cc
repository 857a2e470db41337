#include "tls_context.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <boost/asio/ip/address.hpp>
#include <cerrno>
#include <fstream>
#include <system_error>

namespace sluice {

namespace ssl = boost::asio::ssl;

namespace {

// Why `path` cannot be opened for reading, or nothing when it can: OpenSSL's own message for a
// missing file says less than the system's.
std::optional<std::string> Unreadable(const std::string& path) {
  std::ifstream file(path);
  if (file) return std::nullopt;
  return std::generic_category().message(errno);
}

// OpenSSL's words for why a file was refused, but in the configuration's terms for a key that
// belongs to another certificate.
std::string Refusal(const boost::system::error_code& ec) {
  if (ERR_GET_REASON(static_cast<unsigned long>(ec.value())) == X509_R_KEY_VALUES_MISMATCH) {
    return "does not match tls.cert_file";
  }
  return ec.message();
}

// Reads one file into the context with `use`, naming the field and the file when it fails.
template <typename Use>
Status UseFile(const char* field, const std::string& path, Use use) {
  if (auto why = Unreadable(path)) {
    return Status::InvalidArgument(std::string(field) + " " + path + ": cannot be read: " + *why);
  }
  boost::system::error_code ec;
  use(ec);
  if (ec) return Status::InvalidArgument(std::string(field) + " " + path + ": " + Refusal(ec));
  return {};
}

}  // namespace

Result<std::shared_ptr<const TlsContext>> TlsContext::Load(const TlsOptions& options) {
  if (options.cert_file.empty() != options.key_file.empty()) {
    return Status::InvalidArgument("tls: cert_file and key_file go together");
  }
  auto context = std::make_unique<ssl::context>(ssl::context::tls_client);
  boost::system::error_code ec;
  context->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                           ssl::context::no_sslv3 | ssl::context::no_tlsv1 |
                           ssl::context::no_tlsv1_1,
                       ec);
  if (options.ca_file.empty()) {
    context->set_default_verify_paths(ec);
    if (ec) return Status::InvalidArgument("tls: the system's trust store: " + ec.message());
  } else if (Status s = UseFile("tls.ca_file", options.ca_file,
                                [&](auto& e) { context->load_verify_file(options.ca_file, e); });
             !s.ok()) {
    return s;
  }
  if (!options.cert_file.empty()) {
    if (Status s =
            UseFile("tls.cert_file", options.cert_file,
                    [&](auto& e) { context->use_certificate_chain_file(options.cert_file, e); });
        !s.ok()) {
      return s;
    }
    if (Status s = UseFile("tls.key_file", options.key_file,
                           [&](auto& e) {
                             context->use_private_key_file(options.key_file, ssl::context::pem, e);
                           });
        !s.ok()) {
      return s;
    }
  }
  context->set_verify_mode(options.verify ? ssl::verify_peer : ssl::verify_none, ec);
  return std::shared_ptr<const TlsContext>(new TlsContext(options, std::move(context)));
}

bool IsIpAddress(const std::string& host) {
  boost::system::error_code ec;
  boost::asio::ip::make_address(host, ec);
  return !ec;
}

}  // namespace sluice
