#include "redis_sentinels.h"
#include "support/wait_until.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <thread>

namespace sluice::testing {

namespace {

using Clock = std::chrono::steady_clock;

// Polls `done` every 20 ms for up to `seconds`; whether it came true.
template <typename Done>
bool WaitFor(Done done, int seconds) {
  return WaitUntil(
      [&] {
        try {
          return done();
        } catch (const std::exception&) {
          return false;  // a server still starting, or one just killed: ask again
        }
      },
      std::chrono::seconds(seconds));
}

size_t Elements(RedisClient& client, const std::vector<std::string>& command) {
  ReplyPtr reply = client.Command(command);
  return reply->type == REDIS_REPLY_ARRAY ? reply->elements : 0;
}

}  // namespace

RedisSentinels::RedisSentinels(int replicas, int sentinels, const TlsCertificates* tls,
                               MasterReach reach)
    : tls_(tls),
      dir_("/tmp/sluice-test-sentinels-" + std::to_string(getpid()) + "-" +
           std::to_string(FreePort())),
      replicas_(replicas) {
  std::filesystem::create_directories(dir_);
  const std::vector<std::string> common = {"--repl-diskless-sync-delay", "0",
                                           "--repl-ping-replica-period", "1"};
  for (int i = 0; i <= replicas; ++i) {
    Server server;
    std::vector<std::string> args = common;
    if (tls_ != nullptr) {
      server.tls_port = FreePort();
      for (const std::string& a : tls_->ServerArgs(server.tls_port)) args.push_back(a);
      args.insert(args.end(), {"--tls-replication", "yes"});
    }
    if (i > 0) {
      args.insert(args.end(),
                  {"--replicaof", "127.0.0.1", std::to_string(servers_.front().Announced())});
    }
    server.process = std::make_unique<RedisServer>(args);
    if (i == 0 && reach == MasterReach::kThroughProxy) {
      master_proxy_ = std::make_unique<FaultProxy>(server.Announced());
      server.proxy_port = master_proxy_->port();
    }
    servers_.push_back(std::move(server));
  }
  last_named_master_ = servers_.front().Announced();
  const bool replicated = WaitFor(
      [&] {
        return Client(servers_.front().process->port())
                   ->String({"INFO", "replication"})
                   .find("connected_slaves:" + std::to_string(replicas)) != std::string::npos;
      },
      10);
  if (!replicated) throw std::runtime_error("the replicas did not connect to the master");
  for (int i = 0; i < sentinels; ++i) {
    sentinel_ports_.push_back(FreePort());
    sentinel_tls_ports_.push_back(tls_ != nullptr ? FreePort() : 0);
    WriteSentinelConf(static_cast<size_t>(i), sentinels);
    sentinel_processes_.emplace_back();
    StartSentinel(static_cast<size_t>(i));
  }
  WaitUntilSettled();
}

void RedisSentinels::WriteSentinelConf(size_t i, int sentinels) const {
  std::ofstream conf(dir_ + "/sentinel-" + std::to_string(i) + ".conf");
  conf << "port " << sentinel_ports_[i] << "\nbind 127.0.0.1\ndir " << dir_ << "\n"
       << "sentinel monitor " << kMaster << " 127.0.0.1 " << servers_.front().Announced() << " "
       << sentinels / 2 + 1 << "\n"
       << "sentinel down-after-milliseconds " << kMaster << " " << (master_proxy_ ? 60'000 : 1000)
       << "\n"
       << "sentinel failover-timeout " << kMaster << " 5000\n";
  if (tls_ != nullptr) {
    conf << "tls-port " << sentinel_tls_ports_[i] << "\ntls-cert-file " << tls_->server_cert()
         << "\ntls-key-file " << tls_->server_key() << "\ntls-ca-cert-file " << tls_->ca()
         << "\ntls-replication yes\n"
         << "tls-auth-clients no\n";
  }
}

RedisSentinels::~RedisSentinels() {
  sentinel_processes_.clear();
  servers_.clear();
  std::error_code ignored;
  std::filesystem::remove_all(dir_, ignored);
}

void RedisSentinels::StartSentinel(size_t i) {
  const std::string conf = dir_ + "/sentinel-" + std::to_string(i) + ".conf";
  sentinel_processes_[i] = std::make_unique<Process>(
      std::vector<std::string>{"redis-server", conf, "--sentinel"}, conf + ".log");
  if (!WaitFor([&] { return Client(sentinel_ports_[i])->String({"PING"}) == "PONG"; }, 10)) {
    throw std::runtime_error("sentinel " + std::to_string(i) + " did not start");
  }
}

void RedisSentinels::KillSentinel(size_t i) { sentinel_processes_[i].reset(); }

// Every sentinel knows the replicas and the others: a failover can be asked of any of them.
void RedisSentinels::WaitUntilSettled() const {
  const size_t others = sentinel_ports_.size() - 1;
  for (uint16_t port : sentinel_ports_) {
    const bool settled = WaitFor(
        [&] {
          auto client = Client(port);
          return Elements(*client, {"SENTINEL", "replicas", kMaster}) ==
                     static_cast<size_t>(replicas_) &&
                 Elements(*client, {"SENTINEL", "sentinels", kMaster}) == others;
        },
        20);
    if (!settled) throw std::runtime_error("the sentinels did not find each other");
  }
}

RedisOptions RedisSentinels::Options() const {
  RedisOptions options;
  SentinelOptions sentinel;
  for (size_t i = 0; i < sentinel_ports_.size(); ++i) {
    sentinel.sentinels.emplace_back("127.0.0.1",
                                    tls_ != nullptr ? sentinel_tls_ports_[i] : sentinel_ports_[i]);
  }
  sentinel.master = kMaster;
  options.sentinel = sentinel;
  if (tls_ != nullptr) options.tls = tls_->Trusting();
  options.timeout = std::chrono::milliseconds(500);
  options.reconnect_min = std::chrono::milliseconds(10);
  options.reconnect_max = std::chrono::milliseconds(200);
  return options;
}

uint16_t RedisSentinels::PlainPortOf(uint16_t announced) const {
  for (const Server& server : servers_) {
    if (server.Announced() == announced) return server.process->port();
  }
  throw std::runtime_error("the sentinels name an unknown server");
}

// With every sentinel down, the master cannot move: the last answer still holds. (The first
// is the setup's own, before any sentinel ran.)
uint16_t RedisSentinels::NamedMasterPort() const {
  bool any_running = false;
  for (size_t i = 0; i < sentinel_ports_.size(); ++i) {
    if (!sentinel_processes_[i]) continue;
    any_running = true;
    ReplyPtr reply =
        Client(sentinel_ports_[i])->Command({"SENTINEL", "get-master-addr-by-name", kMaster});
    if (reply->type == REDIS_REPLY_ARRAY && reply->elements == 2) {
      last_named_master_ = static_cast<uint16_t>(std::stoi(reply->element[1]->str));
      return last_named_master_;
    }
  }
  if (!any_running) return last_named_master_;
  throw std::runtime_error("no sentinel names the master");
}

uint16_t RedisSentinels::MasterPort() const { return PlainPortOf(NamedMasterPort()); }

std::vector<uint16_t> RedisSentinels::ServerPorts() const {
  std::vector<uint16_t> ports;
  for (const Server& server : servers_) ports.push_back(server.process->port());
  return ports;
}

uint16_t RedisSentinels::Failover() {
  const uint16_t old_master = NamedMasterPort();
  for (size_t i = 0; i < sentinel_ports_.size(); ++i) {
    if (!sentinel_processes_[i]) continue;
    const std::string answer =
        Client(sentinel_ports_[i])->String({"SENTINEL", "FAILOVER", kMaster});
    if (answer != "OK") throw std::runtime_error("SENTINEL FAILOVER: " + answer);
    break;
  }
  uint16_t master = 0;
  const bool moved = WaitFor(
      [&] {
        const uint16_t named = NamedMasterPort();
        if (named == old_master) return false;
        master = PlainPortOf(named);
        ReplyPtr role = Client(master)->Command({"ROLE"});
        return role->type == REDIS_REPLY_ARRAY && std::string(role->element[0]->str) == "master";
      },
      20);
  if (!moved) throw std::runtime_error("the failover did not finish");
  return master;
}

}  // namespace sluice::testing
