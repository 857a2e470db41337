// The Redis store over TLS against real redis-server processes with test certificates: the
// server verified by default, a client certificate for servers that ask for one, SNI and the
// name verified, and every refusal a clear error that the failure policy answers.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <thread>

#include "sluice/limiter.h"
#include "sluice/redis_store.h"
#include "support/apply_blocking.h"
#include "support/redis_server.h"
#include "support/tls_certificates.h"
#include "support/wait_until.h"

namespace sluice {
namespace {

using std::chrono::milliseconds;
using testing::ApplyBlocking;
using testing::FreePort;
using testing::RedisServer;
using testing::TlsCertificates;

const Limit kTenPerHour{10, 10, 3'600'000};

const TlsCertificates& Certificates() { return TlsCertificates::Shared(); }

// A redis-server with a TLS port (and its plaintext one, for the test), and options for a store
// on the TLS port that trust the test CA.
struct TlsServer {
  explicit TlsServer(bool auth_clients = false, const std::string& cert = "",
                     const std::string& key = "")
      : tls_port(FreePort()),
        server(Certificates().ServerArgs(tls_port, auth_clients, cert, key)) {}

  RedisOptions Options() const {
    RedisOptions options = server.Options();
    options.port = tls_port;
    options.tls = Certificates().Trusting();
    options.connect_timeout = milliseconds(1000);
    return options;
  }

  uint16_t tls_port;
  RedisServer server;
};

// Empty when a store on `options` becomes ready; else why it could not connect.
std::string ConnectError(const RedisOptions& options) {
  RedisStore store(options);
  if (store.WaitReady(std::chrono::seconds(2))) return "";
  return store.LastError();
}

TEST(RedisTlsTest, ServerOnlyTlsCountsAsPlaintextDoes) {
  TlsServer tls;
  RedisStore store(tls.Options());
  ASSERT_TRUE(store.WaitReady(std::chrono::seconds(3)));
  for (int left = 9; left >= 0; --left) {
    auto replies = ApplyBlocking(store, {{"rl:key:tls", kTenPerHour, 1}});
    ASSERT_TRUE(replies.ok()) << replies.status().ToString();
    EXPECT_EQ(replies->front().remaining, left);
  }
  EXPECT_FALSE(ApplyBlocking(store, {{"rl:key:tls", kTenPerHour, 1}})->front().allowed);
  // The same bucket, seen over plaintext: one server, one count.
  EXPECT_EQ(tls.server.Client()->String({"HGET", "rl:key:tls", "ts"}).empty(), false);
}

TEST(RedisTlsTest, MutualTlsWithTheClientCertificate) {
  TlsServer tls(/*auth_clients=*/true);
  RedisOptions options = tls.Options();
  options.tls->cert_file = Certificates().client_cert();
  options.tls->key_file = Certificates().client_key();
  EXPECT_EQ(ConnectError(options), "");
}

TEST(RedisTlsTest, MutualTlsWithoutTheClientCertificateIsAClearError) {
  TlsServer tls(/*auth_clients=*/true);
  const std::string error = ConnectError(tls.Options());
  EXPECT_NE(error.find("certificate required"), std::string::npos) << error;
  EXPECT_NE(error.find("127.0.0.1:" + std::to_string(tls.tls_port)), std::string::npos) << error;
}

TEST(RedisTlsTest, AnUnknownCaIsRefusedWithTheReason) {
  TlsServer tls;
  RedisOptions options = tls.Options();
  options.tls->ca_file = Certificates().other_ca();
  const std::string error = ConnectError(options);
  // OpenSSL names the chain's self-signed root when the server sends it, else the issuer.
  const bool named =
      error.find("refused: unable to get local issuer") != std::string::npos ||
      error.find("refused: self-signed certificate in certificate chain") != std::string::npos;
  EXPECT_TRUE(named) << error;
}

TEST(RedisTlsTest, ACertificateForAnotherNameIsRefusedUnlessServerNameMatches) {
  TlsServer tls(false, Certificates().other_name_cert(), Certificates().other_name_key());
  RedisOptions options = tls.Options();
  const std::string error = ConnectError(options);
  EXPECT_NE(error.find("refused: IP address mismatch"), std::string::npos) << error;
  options.host = "localhost";
  EXPECT_NE(ConnectError(options).find("refused: hostname mismatch"), std::string::npos);
  options.tls->server_name = "other.example";  // SNI and the name verified
  EXPECT_EQ(ConnectError(options), "");
}

TEST(RedisTlsTest, AnExpiredCertificateIsRefusedWithTheReason) {
  TlsServer tls(false, Certificates().expired_cert(), Certificates().expired_key());
  const std::string error = ConnectError(tls.Options());
  EXPECT_NE(error.find("refused: certificate has expired"), std::string::npos) << error;
}

TEST(RedisTlsTest, VerifyFalseConnectsToAnyCertificate) {
  TlsServer tls(false, Certificates().other_name_cert(), Certificates().other_name_key());
  RedisOptions options = tls.Options();
  options.tls->ca_file = Certificates().other_ca();
  options.tls->verify = false;
  EXPECT_EQ(ConnectError(options), "");
}

// A server that takes the connection but never answers the handshake: the attempt ends at the
// connect timeout, and checks meanwhile get the failure policy's answer, never a hang.
TEST(RedisTlsTest, TheHandshakeCountsWithinTheConnectTimeout) {
  const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  ASSERT_EQ(::listen(listener, 16), 0);  // never accepted: the kernel completes the TCP part
  ASSERT_EQ(::getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length), 0);
  RedisOptions options;
  options.port = ntohs(address.sin_port);
  options.tls = Certificates().Trusting();
  options.connect_timeout = milliseconds(300);
  options.timeout = milliseconds(100);
  RedisStore store(options);
  auto limiter = Limiter::Create({{"r", "key", "", kTenPerHour, 1}}, {},
                                 std::shared_ptr<Store>(&store, [](Store*) {}));
  ASSERT_TRUE(limiter.ok());
  const auto start = std::chrono::steady_clock::now();
  Decision during = (*limiter)->CheckBlocking({{"key", "k"}});
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(300));
  EXPECT_FALSE(during.checked);
  EXPECT_TRUE(during.allowed);  // failing open, by default
  EXPECT_TRUE(testing::WaitUntil([&] {
    return store.LastError().find("timed out connecting") != std::string::npos;
  })) << store.LastError();
  const std::string error = ConnectError(options);
  EXPECT_NE(error.find("timed out connecting to 127.0.0.1:"), std::string::npos) << error;
  ::close(listener);
}

TEST(RedisTlsTest, UnreadableCertificatesAreNamedNeverRead) {
  RedisOptions options;
  options.tls = TlsOptions{"/nonexistent/ca.pem", "", "", "", true};
  Result<std::shared_ptr<RedisCredentials>> credentials = RedisCredentials::Load(options);
  ASSERT_FALSE(credentials.ok());
  EXPECT_EQ(credentials.status().message(),
            "tls.ca_file /nonexistent/ca.pem: cannot be read: No such file or directory");
  options.tls = TlsOptions{Certificates().ca(), Certificates().client_cert(),
                           Certificates().server_key(), "", true};
  credentials = RedisCredentials::Load(options);
  ASSERT_FALSE(credentials.ok());
  EXPECT_NE(credentials.status().message().find("does not match tls.cert_file"), std::string::npos);
  // The store made without credentials reads them itself, and says why it cannot connect: at
  // once to a check, as for a server that is down.
  options.tls->key_file = "/nonexistent/client.key";
  RedisStore store(options);
  EXPECT_TRUE(testing::WaitUntil([&] { return !store.LastError().empty(); }));
  auto replies = ApplyBlocking(store, {{"rl:key:x", kTenPerHour, 1}});
  ASSERT_FALSE(replies.ok());
  EXPECT_NE(replies.status().message().find("tls.key_file /nonexistent/client.key"),
            std::string::npos)
      << replies.status().message();
  EXPECT_EQ(store.LastError(), replies.status().message());
}

}  // namespace
}  // namespace sluice
