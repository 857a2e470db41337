#include "serve_command.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <boost/asio/signal_set.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "bounds_log.h"
#include "config/config.h"
#include "config/schema.h"
#include "descriptor_limit.h"
#include "http/gateway.h"
#include "http/server.h"
#include "open_store.h"
#include "rls/front_end.h"
#include "sluice/local_counting_store.h"
#include "sluice/redis_credentials.h"
#include "sluice/store.h"
#include "stores/quota_store_kind.h"
#include "systemd_notify.h"

namespace sluice::cli {
namespace {

namespace asio = boost::asio;
using std::chrono::milliseconds;

http::ServerLimits Limits(const config::Config& c) {
  http::ServerLimits limits;
  limits.max_header_bytes = c.max_header_bytes;
  limits.max_body_bytes = c.max_body_bytes;
  limits.header_timeout = c.header_timeout;
  limits.max_connections = c.max_connections;
  return limits;
}

// The running gateway. Members are destroyed before the event loops they use (loops_ first in
// the list): a stopped loop still holds handlers that refer to them until it goes.
class Service {
 public:
  // Starts the event loops, whose threads then wait for work, and connects the store.
  explicit Service(const config::Config& config) : loops_(config.threads), signals_(loops_[0]) {
    loops_.Start();
    Result<OpenedStores> opened = OpenStores(config.store, loops_);
    if (!opened.ok()) throw std::runtime_error(opened.status().message());
    store_ = std::move(opened).value();
    if (config.quota_store) {
      Result<stores::OpenedQuotaStore> quota = config.quota_store->settings->Open();
      if (!quota.ok()) throw std::runtime_error(quota.status().message());
      quota_store_ = std::move(quota).value();
    }
    gateway_ = std::make_unique<http::Gateway>(store_.stores, store_.ready, quota_store_.store);
    if (Status s = gateway_->Reconfigure(config); !s.ok()) throw std::runtime_error(s.message());
    if (config.rls) {
      auto rls = rls::FrontEnd::Create(config, store_.stores, gateway_->top_rejected());
      if (!rls.ok()) throw std::runtime_error(rls.status().message());
      rls_ = std::move(rls).value();
    }
  }

  // The loops stop first, so that no handler runs while the members it uses go (Run may have
  // thrown with servers already accepting).
  ~Service() {
    loops_.Stop();
    loops_.Join();
  }

  Service(const Service&) = delete;
  Service& operator=(const Service&) = delete;

  int Run(const std::string& path) {
    path_ = path;
    const auto snapshot = gateway_->Current();
    const config::Config& c = snapshot->config;
    gateway_->SetUpstreams(UpstreamPools(c.upstream));
    RaiseDescriptorLimit(DescriptorsNeeded(c));
    gateway_->SetMoreMetrics([this] { return MoreMetrics(); });
    gateway_->SetGauges([this] {
      return std::vector<http::GaugeValue>{
          {"sluice_requests_in_flight",
           "Requests (and rate limit service calls) being handled now.",
           static_cast<double>(InFlight())}};
    });
    if (c.access_log) {
      auto log = http::AccessLog::Open(*c.access_log);
      if (!log.ok()) throw std::runtime_error(log.status().message());
      access_log_ = std::move(log).value();
      gateway_->SetAccessLog(access_log_);
    }
    if (c.proxy) proxy_ = Listen(&http::Gateway::HandleProxy, c, c.listen, "proxy");
    if (rls_) {
      if (Status s = rls_->Listen(*c.rls, loops_, Limits(c)); !s.ok()) {
        throw std::runtime_error(s.message());
      }
    }
    if (c.check_listen)
      check_ = Listen(&http::Gateway::HandleCheck, c, *c.check_listen, "check API");
    // Last: /metrics reads the other servers' counts.
    admin_ = Listen(&http::Gateway::HandleAdmin, c, c.admin_listen, "admin");
    asio::post(loops_[0], [this] { SampleStatus(); });
    bounds_log_ = std::make_unique<BoundsLog>(loops_[0], std::chrono::seconds(10), Bounds());
    drain_timeout_ = c.drain_timeout;
    store_timeout_ = c.store.settings->Timeout();
    // Ready once the signals are caught, so that a reload systemd sends at once finds a handler.
    asio::post(loops_[0], [this] {
      WaitForSignals();
      bounds_log_->Start();
      Notify("READY=1");
    });
    loops_.Join();
    spdlog::info("stopped");
    return 0;
  }

 private:
  using GatewayHandler = http::Awaitable<http::HttpResponse> (http::Gateway::*)(http::HttpRequest,
                                                                                const http::Peer&,
                                                                                size_t);

  // A server on the event loops that answers with `handler` of the gateway, listening on `where`.
  std::unique_ptr<http::Server> Listen(GatewayHandler handler, const config::Config& c,
                                       const config::Endpoint& where, const char* what) {
    auto server = std::make_unique<http::Server>(
        loops_,
        [this, handler](http::HttpRequest r, const http::Peer& peer, size_t loop) {
          return (gateway_.get()->*handler)(std::move(r), peer, loop);
        },
        Limits(c));
    if (Status s = server->Listen(where); !s.ok()) throw std::runtime_error(s.message());
    spdlog::info("{} listening on {}:{}", what, where.host, server->port());
    return server;
  }

  // The servers' counters, and the rate limit service's, beside the gateway's.
  std::string MoreMetrics() const {
    uint64_t pauses = 0;
    for (const http::Server* s : {proxy_.get(), check_.get(), admin_.get()}) {
      if (s != nullptr) pauses += s->AcceptPauses();
    }
    std::string text = fmt::format(
        "# HELP sluice_accept_pauses_total Times accepting connections paused because the "
        "process was out of file descriptors.\n"
        "# TYPE sluice_accept_pauses_total counter\nsluice_accept_pauses_total {}\n",
        pauses);
    if (const std::optional<uint64_t> forgotten = store_.stores.front()->BucketsForgotten()) {
      text += fmt::format(
          "# HELP sluice_memory_store_evictions_total Buckets the memory store forgot before "
          "they were full, to stay within store.max_buckets.\n"
          "# TYPE sluice_memory_store_evictions_total counter\n"
          "sluice_memory_store_evictions_total {}\n",
          *forgotten);
    }
    if (rls_) text += rls_->MetricsText();
    return text;
  }

  // The bounds on buckets held, for the log: the memory store's and the local counts'.
  std::vector<BoundsLog::Counter> Bounds() {
    std::vector<BoundsLog::Counter> bounds;
    if (std::shared_ptr<Store> store = store_.stores.front(); store->BucketsForgotten()) {
      bounds.push_back(
          {[store] { return store->BucketsForgotten().value_or(0); },
           "the memory store is at store.max_buckets: {} buckets forgotten before they were full"});
    }
    // The local counts are made anew with each configuration, their counts from 0.
    auto local = [this](uint64_t LocalCountingStats::*count) {
      return [this, count]() -> uint64_t {
        const auto counts = gateway_->Current()->local_counts;
        return counts ? counts->Stats().*count : 0;
      };
    };
    bounds.push_back({local(&LocalCountingStats::evictions),
                      "the local counts are at store.max_buckets: {} buckets that owed the store "
                      "nothing forgotten before they were full"});
    bounds.push_back({local(&LocalCountingStats::refusals),
                      "the local counts are at store.max_buckets, every bucket owing the store "
                      "counts: {} checks given the failure policy instead of a new bucket"});
    return bounds;
  }

  // Tells systemd (Type=notify) the service's state; a failure is logged, never fatal.
  void Notify(std::string_view state) const {
    if (Status s = notifier_.Notify(state); !s.ok()) spdlog::warn("{}", s.message());
  }

  size_t InFlight() const {
    return (proxy_ ? proxy_->InFlight() : 0) + (check_ ? check_->InFlight() : 0) +
           (rls_ ? rls_->InFlight() : 0);
  }

  // InFlight() counts the RLS calls too.
  bool Drained() const { return InFlight() == 0 && (!rls_ || rls_->ShutDown()); }

  // Requests that begin from now on are refused, not handled: the loops will stop. (The admin
  // server's answers never wait, so it stays open for /metrics to the end.)
  void Close() {
    for (http::Server* s : {proxy_.get(), check_.get()}) {
      if (s != nullptr) s->Close();
    }
    if (rls_) rls_->Close();
  }

  // Closes once drained, then looks again: a session raises the count before it reads whether
  // its server is closed, so a request that began meanwhile is either seen here and waited for,
  // or refused.
  bool CloseIfDrained() {
    if (!Drained()) return false;
    Close();
    return Drained();
  }

  void WaitForSignals() {
    signals_.add(SIGTERM);
    signals_.add(SIGINT);
    signals_.add(SIGHUP);
    signals_.async_wait([this](const boost::system::error_code& ec, int signal) {
      if (ec) return;
      if (signal == SIGHUP) {
        Reload();
        return WaitForSignals();
      }
      Drain();
    });
  }

  // SIGHUP: the access log is reopened (it may have been rotated) whether or not the
  // configuration is taken. Refused or not, a configuration is in force afterwards and the
  // service answers: ready again.
  void Reload() {
    Notify(ReloadingState());
    if (access_log_) access_log_->Reopen();
    const bool ok = ReloadConfiguration();
    gateway_->metrics().RecordReload(ok);
    Notify("READY=1");
  }

  // Everything a reload puts in force, read and built before any of it is.
  struct PreparedReload {
    std::shared_ptr<const http::Snapshot> snapshot;
    std::shared_ptr<const rls::DescriptorMatcher> descriptors;  // null without `rls`
    std::optional<RedisCredentials::Values> credentials;        // none for the memory store
    std::function<void()> quota_secrets;                        // none without `quota_store`
  };

  // The configuration file read again, its descriptor files, certificates and password files
  // (read again so that credentials rotate) and the gateway's new state, with nothing yet in
  // force; or why the reload is refused, naming the first field or file at fault. The secrets are
  // read first, so that every later refusal shows that reading them put nothing in force.
  Result<PreparedReload> PrepareReload() {
    Result<config::Config> next = config::LoadConfig(path_);
    if (!next.ok()) return next.status();
    PreparedReload prepared;
    if (store_.credentials) {
      auto read = store_.credentials->Read();
      if (!read.ok()) return read.status();
      prepared.credentials = std::move(read).value();
    }
    if (quota_store_.read_secrets) {
      auto read = quota_store_.read_secrets();
      if (!read.ok()) return Status::InvalidArgument("quota_store: " + read.status().message());
      prepared.quota_secrets = std::move(read).value();
    }
    if (auto field = config::FirstRestartField(gateway_->Current()->config, *next)) {
      return Status::FailedPrecondition(std::string(*field) + " needs a restart");
    }
    if (next->rls) {
      auto loaded = rls::LoadMatcher(*next->rls);
      if (!loaded.ok()) return loaded.status();
      prepared.descriptors = std::move(loaded).value();
    }
    auto snapshot = gateway_->Prepare(std::move(next).value());
    if (!snapshot.ok()) return snapshot.status();
    prepared.snapshot = std::move(snapshot).value();
    return prepared;
  }

  // Puts every prepared part in force; nothing here can fail, so a reload never half-applies.
  void CommitReload(PreparedReload prepared) {
    if (prepared.credentials) store_.credentials->Use(std::move(*prepared.credentials));
    if (prepared.quota_secrets) prepared.quota_secrets();
    gateway_->Commit(std::move(prepared.snapshot));
    if (rls_) rls_->Reconfigure(std::move(prepared.descriptors), gateway_->Current()->config);
  }

  // Whether the configuration file was read again and put in force, all of it; a refusal leaves
  // the configuration and the credentials in force as they were.
  bool ReloadConfiguration() {
    Result<PreparedReload> prepared = PrepareReload();
    if (!prepared.ok()) {
      spdlog::error("reload refused: {}", prepared.status().message());
      return false;
    }
    CommitReload(std::move(prepared).value());
    spdlog::info("reloaded {}", path_);
    return true;
  }

  // Stops accepting, lets requests in flight finish within the drain timeout, then stops.
  void Drain() {
    Notify("STOPPING=1");
    bounds_log_->Stop();
    spdlog::info("stopping: draining {} requests in flight", InFlight());
    for (http::Server* s : {proxy_.get(), admin_.get(), check_.get()}) {
      if (s != nullptr) s->StopAccepting();
    }
    if (rls_) rls_->BeginDrain(drain_timeout_);
    // Past the drain timeout a request is cut off, but a store call in flight is let finish (its
    // own timeout bounds it): an RLS call whose store answer never comes would keep gRPC's
    // shutdown waiting for ever once the loops stop.
    drain_deadline_ = clock_->Now() + drain_timeout_ + store_timeout_ + milliseconds(100);
    PollDrained();
  }

  // Once drained, local counts go to the store before the loops (and the store's connections)
  // stop, for at most a second.
  void PollDrained() {
    const Clock::TimePoint now = clock_->Now();
    if (!flushed_ && (CloseIfDrained() || now >= drain_deadline_)) {
      Close();
      spdlog::info("listeners closed: requests from now on are refused");
      if (!Drained()) spdlog::warn("drain timeout: {} requests cut off", InFlight());
      flushed_ = std::make_shared<std::atomic<bool>>(false);
      flush_deadline_ = now + std::chrono::seconds(1);
      gateway_->FlushLocalCounts([flushed = flushed_] { *flushed = true; });
    }
    // Never under a call gRPC has taken: stopped loops would never answer it, and gRPC's
    // shutdown would wait for it for ever. Past its deadline gRPC has cancelled its calls, and
    // the store's timeout bounds what they still wait for.
    if (flushed_ && (*flushed_ || now >= flush_deadline_) && (!rls_ || rls_->ShutDown())) {
      loops_.Stop();
      return;
    }
    auto timer = std::make_shared<ClockTimer>(loops_[0], clock_);
    timer->expires_after(milliseconds(10));
    timer->async_wait([this, timer](const boost::system::error_code&) { PollDrained(); });
  }

  // The status page's charts: the metrics counters once a second, for as long as the loops run.
  void SampleStatus() {
    gateway_->SampleStatus();
    auto timer = std::make_shared<ClockTimer>(loops_[0], clock_);
    timer->expires_after(std::chrono::seconds(1));
    timer->async_wait([this, timer](const boost::system::error_code& ec) {
      if (!ec) SampleStatus();
    });
  }

  // The idle upstream connections allowed (upstream.pool) are shared out among the loops.
  std::vector<std::unique_ptr<http::UpstreamPool>> UpstreamPools(
      const config::UpstreamConfig& upstream) {
    const size_t per_loop = (upstream.pool + loops_.size() - 1) / loops_.size();
    std::vector<std::unique_ptr<http::UpstreamPool>> pools;
    for (size_t i = 0; i < loops_.size(); ++i) {
      pools.push_back(std::make_unique<http::UpstreamPool>(loops_[i], upstream, per_loop));
    }
    return pools;
  }

  // The drain's and the status samples' time: a process of its own, which no test's clock reaches.
  const std::shared_ptr<const Clock> clock_ = ProcessSteadyClock();
  http::EventLoops loops_;
  OpenedStores store_;
  stores::OpenedQuotaStore quota_store_;        // empty without quota_store
  std::shared_ptr<std::atomic<bool>> flushed_;  // set when local counts reached the store
  Clock::TimePoint flush_deadline_;
  std::unique_ptr<http::Gateway> gateway_;
  std::unique_ptr<rls::FrontEnd> rls_;
  std::shared_ptr<http::AccessLog> access_log_;  // null without `access_log`
  asio::signal_set signals_;
  std::unique_ptr<BoundsLog> bounds_log_;  // on loop 0
  std::string path_;
  std::unique_ptr<http::Server> proxy_;
  std::unique_ptr<http::Server> admin_;
  std::unique_ptr<http::Server> check_;
  milliseconds drain_timeout_{10'000};
  Clock::TimePoint drain_deadline_;
  milliseconds store_timeout_{0};
  ServiceNotifier notifier_ = ServiceNotifier::FromEnvironment();
};

int Serve(const std::string& path) {
  Result<config::Config> loaded = config::LoadConfig(path);
  if (!loaded.ok()) {
    spdlog::error("{}", loaded.status().message());
    return 1;
  }
  try {
    Service service(*loaded);
    return service.Run(path);
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
    return 1;
  }
}

}  // namespace

void AddServeCommand(CLI::App& app) {
  auto path = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand("serve", "Run the gateway");
  cmd->add_option("--config", *path, "the YAML configuration")->required();
  cmd->callback([path] {
    if (int rc = Serve(*path); rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace sluice::cli
