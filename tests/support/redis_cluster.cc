#include "redis_cluster.h"
#include "support/wait_until.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <random>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <thread>

namespace sluice::testing {

namespace {

const std::string kScript = std::string(SLUICE_SOURCE_DIR) + "/scripts/redis-cluster";

bool CanBind(uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port);
  const bool ok = fd >= 0 && ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  if (fd >= 0) ::close(fd);
  return ok;
}

// A port for a cluster node: it and its cluster bus port (10,000 above) are free, below the
// ephemeral range so that neither is taken by an outgoing connection meanwhile.
uint16_t FreeClusterPort() {
  static std::mt19937 rng(std::random_device{}());
  std::uniform_int_distribution<int> pick(20000, 29999);
  for (;;) {
    const auto port = static_cast<uint16_t>(pick(rng));
    if (CanBind(port) && CanBind(port + 10000)) return port;
  }
}

bool Pings(uint16_t port) {
  redisContext* c = redisConnect("127.0.0.1", port);
  bool ok = false;
  if (c != nullptr && c->err == 0) {
    auto* reply = static_cast<redisReply*>(redisCommand(c, "PING"));
    ok = reply != nullptr && reply->type == REDIS_REPLY_STATUS;
    if (reply != nullptr) freeReplyObject(reply);
  }
  if (c != nullptr) redisFree(c);
  return ok;
}

}  // namespace

RedisCluster::RedisCluster(int primaries, int replicas, const TlsCertificates* tls)
    : tls_(tls),
      dir_("/tmp/sluice-test-cluster-" + std::to_string(getpid()) + "-" +
           std::to_string(FreePort())) {
  for (int i = 0; i < primaries * (1 + replicas); ++i) {
    const uint16_t port = FreeClusterPort();
    ports_.push_back(port);
    // With tls-cluster the bus listens 10,000 above the TLS port, so it must be free too.
    if (tls_ != nullptr) {
      uint16_t tls_port = FreeClusterPort();
      while (tls_port == port) tls_port = FreeClusterPort();
      tls_ports_[port] = tls_port;
    }
    Start(port);
  }
  std::string command = kScript + " create --replicas " + std::to_string(replicas);
  for (uint16_t port : ports_) command += " " + std::to_string(port);
  command += " > " + dir_ + "/create.log 2>&1";
  EXPECT_EQ(std::system(command.c_str()), 0) << "see " << dir_ << "/create.log";
}

RedisCluster::~RedisCluster() {
  nodes_.clear();
  std::error_code ignored;
  std::filesystem::remove_all(dir_, ignored);
}

void RedisCluster::Start(uint16_t port) {
  std::filesystem::create_directories(dir_ + "/" + std::to_string(port));
  std::vector<std::string> args = {"bash", kScript, "run-node", std::to_string(port), dir_};
  if (tls_ != nullptr) {
    for (const std::string& a : tls_->ServerArgs(tls_ports_.at(port))) args.push_back(a);
    args.insert(args.end(), {"--tls-cluster", "yes", "--tls-replication", "yes"});
  }
  nodes_[port] =
      std::make_unique<Process>(std::move(args), dir_ + "/" + std::to_string(port) + ".out");
  EXPECT_TRUE(WaitUntil([&] { return Pings(port); }, std::chrono::seconds(2)))
      << "node " << port << " did not start";
}

void RedisCluster::Kill(uint16_t port) { nodes_.erase(port); }

ClusterOptions RedisCluster::Options() const {
  ClusterOptions options;
  for (uint16_t port : ports_) {
    options.seeds.emplace_back("127.0.0.1", tls_ != nullptr ? tls_ports_.at(port) : port);
  }
  if (tls_ != nullptr) options.tls = tls_->Trusting();
  options.timeout = std::chrono::milliseconds(200);
  return options;
}

uint16_t RedisCluster::AnyRunning() const {
  for (const auto& [port, process] : nodes_) {
    if (Pings(port)) return port;
  }
  ADD_FAILURE() << "no cluster node is running";
  return 0;
}

uint16_t RedisCluster::PrimaryOf(uint16_t slot) const {
  ReplyPtr slots = RedisClient(AnyRunning()).Command({"CLUSTER", "SLOTS"});
  for (size_t i = 0; i < slots->elements; ++i) {
    const redisReply& range = *slots->element[i];
    if (range.element[0]->integer <= slot && slot <= range.element[1]->integer) {
      return OwnPort(static_cast<uint16_t>(range.element[2]->element[1]->integer));
    }
  }
  return 0;
}

std::vector<uint16_t> RedisCluster::Primaries() const {
  std::vector<uint16_t> primaries;
  ReplyPtr slots = RedisClient(AnyRunning()).Command({"CLUSTER", "SLOTS"});
  for (size_t i = 0; i < slots->elements; ++i) {
    const uint16_t port =
        OwnPort(static_cast<uint16_t>(slots->element[i]->element[2]->element[1]->integer));
    if (std::find(primaries.begin(), primaries.end(), port) == primaries.end()) {
      primaries.push_back(port);
    }
  }
  return primaries;
}

void RedisCluster::Announce(uint16_t port, uint16_t announced) {
  EXPECT_EQ(
      Client(port)->String({"CONFIG", "SET", "cluster-announce-port", std::to_string(announced)}),
      "OK");
  if (announced == port) {
    own_ports_.erase(announced);
  } else {
    own_ports_[announced] = port;
  }
  // Gossip carries it to the others within a few pings (cluster-node-timeout is 1 s).
  const std::string id = NodeId(port);
  const std::string wanted = ":" + std::to_string(announced) + "@";
  const bool learned = WaitUntil([&] {
    for (const auto& [node, process] : nodes_) {
      const std::string nodes = Client(node)->String({"CLUSTER", "NODES"});
      const size_t line = nodes.find(id);
      if (line == std::string::npos ||
          nodes.compare(nodes.find(':', line), wanted.size(), wanted) != 0) {
        return false;
      }
    }
    return true;
  });
  EXPECT_TRUE(learned) << "the cluster did not learn that node " << port << " is at " << announced;
}

uint16_t RedisCluster::OwnPort(uint16_t named) const {
  const auto it = own_ports_.find(named);
  return it == own_ports_.end() ? named : it->second;
}

std::string RedisCluster::NodeId(uint16_t port) const {
  return RedisClient(port).String({"CLUSTER", "MYID"});
}

}  // namespace sluice::testing
