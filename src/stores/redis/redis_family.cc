#include "stores/redis/redis_family.h"

#include "config/schema.h"

namespace sluice::stores {

TlsOptions ParseTls(const config::YamlField& f) {
  TlsOptions tls;
  if (f.node().IsNull()) return tls;  // `tls:` alone: TLS with the defaults
  f.ExpectMap(config::KeysOf("store.tls"));
  if (f.Has("ca_file")) tls.ca_file = f["ca_file"].String();
  if (f.Has("cert_file")) tls.cert_file = f["cert_file"].String();
  if (f.Has("key_file")) tls.key_file = f["key_file"].String();
  if (f.Has("server_name")) tls.server_name = f["server_name"].String();
  if (f.Has("verify")) tls.verify = f["verify"].Bool();
  if (tls.cert_file.empty() != tls.key_file.empty()) {
    f[tls.cert_file.empty() ? "key_file" : "cert_file"].Fail("cert_file and key_file go together");
  }
  return tls;
}

void ParseCredentials(const config::YamlField& f, const char* prefix, std::string& username,
                      std::string& password, std::string& password_file) {
  const std::string user_field = std::string(prefix) + "username";
  const std::string password_field = std::string(prefix) + "password";
  const std::string file_field = std::string(prefix) + "password_file";
  if (f.Has(user_field)) {
    if (!username.empty()) f[user_field].Fail("is given twice: in the url and here");
    username = f[user_field].String();
  }
  if (f.Has(password_field) && f.Has(file_field)) {
    f[file_field].Fail("is given beside " + password_field + "; give one of them");
  }
  for (const std::string& field : {password_field, file_field}) {
    if (f.Has(field) && !password.empty()) f[field].Fail("is given twice: in the url and here");
  }
  if (f.Has(password_field)) password = f[password_field].String();
  if (f.Has(file_field)) {
    password_file = f[file_field].String();
    if (password_file.empty()) f[file_field].Fail("must name a file");
  }
}

std::vector<HostPort> ParseAddresses(const config::YamlField& f, const char* what) {
  std::vector<HostPort> addresses;
  f.ForEach([&](const config::YamlField& node) {
    addresses.push_back(node.Require(ParseHostPort(node.String())));
  });
  if (addresses.empty()) f.Fail(std::string("needs at least one ") + what + " (host:port)");
  return addresses;
}

}  // namespace sluice::stores
