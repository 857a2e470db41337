// Certificates for TLS tests, made by `openssl` at test time into a folder of their own (never
// committed): a CA, server certificates for the loopback host and for another name, an expired
// one, a client certificate, and a second CA that signed none of them.
#pragma once

#include <string>

#include "sluice/redis_options.h"

namespace sluice::testing {

class TlsCertificates {
 public:
  // Makes them all; throws when openssl fails.
  TlsCertificates();
  ~TlsCertificates();
  TlsCertificates(const TlsCertificates&) = delete;
  TlsCertificates& operator=(const TlsCertificates&) = delete;

  const std::string& dir() const { return dir_; }
  std::string ca() const { return dir_ + "/ca.pem"; }
  std::string other_ca() const { return dir_ + "/other-ca.pem"; }
  // For "localhost" and 127.0.0.1.
  std::string server_cert() const { return dir_ + "/server.pem"; }
  std::string server_key() const { return dir_ + "/server.key"; }
  // For "other.example" only.
  std::string other_name_cert() const { return dir_ + "/other-name.pem"; }
  std::string other_name_key() const { return dir_ + "/other-name.key"; }
  // For localhost and 127.0.0.1, but no longer valid.
  std::string expired_cert() const { return dir_ + "/expired.pem"; }
  std::string expired_key() const { return dir_ + "/expired.key"; }
  std::string client_cert() const { return dir_ + "/client.pem"; }
  std::string client_key() const { return dir_ + "/client.key"; }

  // TLS options that trust the CA.
  TlsOptions Trusting() const {
    TlsOptions tls;
    tls.ca_file = ca();
    return tls;
  }

  // redis-server arguments for a TLS port with `cert` and `key` (the server's by default),
  // asking clients for a certificate when `auth_clients`.
  std::vector<std::string> ServerArgs(uint16_t tls_port, bool auth_clients = false,
                                      const std::string& cert = "",
                                      const std::string& key = "") const;

  // The certificates of one run: made once per test binary.
  static const TlsCertificates& Shared();

 private:
  void Make(const std::string& name, const std::string& subject_alt_names,
            const std::string& faketime = "");

  std::string dir_;
};

}  // namespace sluice::testing
