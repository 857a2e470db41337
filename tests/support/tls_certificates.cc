#include "tls_certificates.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "redis_server.h"

namespace sluice::testing {

namespace {

void Run(const std::string& command) {
  if (std::system((command + " >/dev/null 2>&1").c_str()) != 0) {
    throw std::runtime_error("failed: " + command);
  }
}

}  // namespace

TlsCertificates::TlsCertificates()
    : dir_("/tmp/sluice-test-tls-" + std::to_string(getpid()) + "-" + std::to_string(FreePort())) {
  std::filesystem::create_directories(dir_);
  for (const char* ca : {"ca", "other-ca"}) {
    Run("openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj '/CN=Sluice test " +
        std::string(ca) + "' -keyout " + dir_ + "/" + ca + ".key -out " + dir_ + "/" + ca + ".pem");
  }
  Make("server", "DNS:localhost,IP:127.0.0.1");
  Make("other-name", "DNS:other.example");
  Make("client", "DNS:sluice-client");
  // Signed as if three days ago, valid for one: expired since two days.
  Make("expired", "DNS:localhost,IP:127.0.0.1", "-3d");
}

TlsCertificates::~TlsCertificates() {
  std::error_code ignored;
  std::filesystem::remove_all(dir_, ignored);
}

void TlsCertificates::Make(const std::string& name, const std::string& subject_alt_names,
                           const std::string& faketime) {
  const std::string base = dir_ + "/" + name;
  Run("openssl req -newkey rsa:2048 -nodes -subj '/CN=" + name + "' -keyout " + base +
      ".key -out " + base + ".csr");
  std::ofstream(base + ".ext") << "subjectAltName=" << subject_alt_names << "\n";
  Run((faketime.empty() ? "" : "faketime -f " + faketime + " ") + "openssl x509 -req -in " + base +
      ".csr -CA " + dir_ + "/ca.pem -CAkey " + dir_ + "/ca.key -CAcreateserial -days " +
      (faketime.empty() ? "2" : "1") + " -extfile " + base + ".ext -out " + base + ".pem");
}

std::vector<std::string> TlsCertificates::ServerArgs(uint16_t tls_port, bool auth_clients,
                                                     const std::string& cert,
                                                     const std::string& key) const {
  return {"--tls-port",         std::to_string(tls_port),
          "--tls-cert-file",    cert.empty() ? server_cert() : cert,
          "--tls-key-file",     key.empty() ? server_key() : key,
          "--tls-ca-cert-file", ca(),
          "--tls-auth-clients", auth_clients ? "yes" : "no"};
}

const TlsCertificates& TlsCertificates::Shared() {
  static const TlsCertificates certificates;
  return certificates;
}

}  // namespace sluice::testing
