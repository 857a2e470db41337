#include "rls/front_end.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "rls/json_handler.h"

namespace sluice::rls {

ServiceOptions FrontEnd::OptionsOf(const config::Config& config) {
  const config::RlsConfig& rls = *config.rls;
  // A reload keeps what the cache knows unless its size changes.
  if (rls.over_limit_cache_keys == 0) {
    over_limit_cache_.reset();
  } else if (!over_limit_cache_ || cache_keys_ != rls.over_limit_cache_keys) {
    over_limit_cache_ =
        std::make_shared<OverLimitCache>(ProcessSteadyClock(), rls.over_limit_cache_keys);
  }
  cache_keys_ = rls.over_limit_cache_keys;
  return {config.key_prefix,       rls.failure,         rls.response_headers, rls.policy,
          over_limit_cache_,       rls.quota_mode,      rls.near_limit_ratio, top_rejected_,
          rls.max_calls_in_flight, ProcessSteadyClock()};
}

Result<std::shared_ptr<const DescriptorMatcher>> LoadMatcher(const config::RlsConfig& rls) {
  Result<std::vector<DomainConfig>> domains = LoadDomainConfigs(rls.config);
  if (!domains.ok()) return domains.status();
  return std::shared_ptr<const DescriptorMatcher>(
      std::make_shared<DescriptorMatcher>(std::move(domains).value()));
}

Result<std::unique_ptr<FrontEnd>> FrontEnd::Create(
    const config::Config& config, std::vector<std::shared_ptr<Store>> stores,
    std::shared_ptr<http::TopRejected> top_rejected) {
  Result<std::shared_ptr<const DescriptorMatcher>> matcher = LoadMatcher(*config.rls);
  if (!matcher.ok()) return matcher.status();
  auto front_end = std::unique_ptr<FrontEnd>(new FrontEnd());
  front_end->top_rejected_ = std::move(top_rejected);
  front_end->service_ =
      std::make_unique<Service>(std::move(stores), *matcher, front_end->OptionsOf(config));
  return front_end;
}

Status FrontEnd::Listen(const config::RlsConfig& rls, http::EventLoops& loops,
                        http::ServerLimits limits) {
  if (rls.listen) {
    Result<std::unique_ptr<GrpcServer>> grpc =
        GrpcServer::Start(rls, limits.header_timeout, *service_);
    if (!grpc.ok()) return grpc.status();
    grpc_ = std::move(grpc).value();
    spdlog::info("rate limit service (gRPC) listening on {}:{}", rls.listen->host, grpc_->port());
  }
  if (rls.json_listen) {
    // A /json body is a RateLimitRequest too.
    limits.max_body_bytes = rls.max_message_bytes;
    json_ = std::make_unique<http::Server>(
        loops,
        [this](http::HttpRequest request, const http::Peer&, size_t loop) {
          return HandleJson(*service_, std::move(request), loop);
        },
        limits);
    if (Status s = json_->Listen(*rls.json_listen); !s.ok()) return s;
    spdlog::info("rate limit service (JSON) listening on {}:{}", rls.json_listen->host,
                 json_->port());
  }
  return {};
}

void FrontEnd::Reconfigure(std::shared_ptr<const DescriptorMatcher> matcher,
                           const config::Config& config) {
  service_->Reconfigure(std::move(matcher), OptionsOf(config));
}

void FrontEnd::BeginDrain(std::chrono::milliseconds timeout) {
  if (json_) json_->StopAccepting();
  if (grpc_) grpc_->BeginShutdown(std::chrono::system_clock::now() + timeout);
}

void FrontEnd::Close() {
  if (json_) json_->Close();
}

bool FrontEnd::ShutDown() const { return !grpc_ || grpc_->ShutDown(); }

std::string FrontEnd::MetricsText() const { return service_->MetricsText(); }

size_t FrontEnd::InFlight() const { return service_->InFlight() + (json_ ? json_->InFlight() : 0); }

}  // namespace sluice::rls
