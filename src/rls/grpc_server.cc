#include "rls/grpc_server.h"

#include <absl/synchronization/mutex.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>

#include <algorithm>
#include <limits>
#include <string>

#include "envoy/service/ratelimit/v3/rls.grpc.pb.h"

namespace sluice::rls {

struct GrpcServer::Handlers final
    : public envoy::service::ratelimit::v3::RateLimitService::CallbackService {
  explicit Handlers(rls::Service& service) : service(service) {}

  grpc::ServerUnaryReactor* ShouldRateLimit(grpc::CallbackServerContext* context,
                                            const RateLimitRequest* request,
                                            RateLimitResponse* response) override {
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    // A call whose deadline passed on the way is not charged: its caller has given up.
    if (context->deadline() <= std::chrono::system_clock::now()) {
      reactor->Finish(grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, "deadline passed"));
      return reactor;
    }
    service.ShouldRateLimit(*request, [reactor, response](Result<RateLimitResponse> result) {
      if (!result.ok()) {
        reactor->Finish(grpc::Status(static_cast<grpc::StatusCode>(GrpcCode(result.status())),
                                     result.status().message()));
        return;
      }
      *response = std::move(result).value();
      reactor->Finish(grpc::Status::OK);
    });
    return reactor;
  }

  rls::Service& service;  // qualified: the generated base has a Service of its own
};

GrpcServer::GrpcServer(std::unique_ptr<Handlers> handlers, std::unique_ptr<grpc::Server> server,
                       uint16_t port)
    : handlers_(std::move(handlers)), server_(std::move(server)), port_(port) {}

namespace {

int Milliseconds(std::chrono::milliseconds d) {
  return static_cast<int>(std::min<int64_t>(d.count(), std::numeric_limits<int>::max()));
}

// gRPC core's channel arguments for the limits of `rls` (the configuration keeps every duration
// within an int of milliseconds).
void SetLimits(grpc::ServerBuilder& builder, const config::RlsConfig& rls,
               std::chrono::milliseconds handshake_timeout) {
  builder.SetMaxReceiveMessageSize(static_cast<int>(rls.max_message_bytes));
  builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS,
                             static_cast<int>(rls.max_concurrent_streams));
  builder.AddChannelArgument(GRPC_ARG_SERVER_HANDSHAKE_TIMEOUT_MS, Milliseconds(handshake_timeout));
  const config::RlsKeepalive& k = rls.keepalive;
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, Milliseconds(k.time));
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, Milliseconds(k.timeout));
  // Idle connections are pinged too (a vanished client holds no connection for long), and as
  // many times as it takes: gRPC's default stops a sender after two pings without data.
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  // With calls permitted or not, a client's pings are held to the same interval: without this
  // gRPC allows one ping in two hours on a connection without calls.
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS,
                             Milliseconds(k.min_client_ping_interval));
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PING_STRIKES, 2);
  if (k.max_connection_age.count() > 0) {
    builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_AGE_MS, Milliseconds(k.max_connection_age));
    builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_AGE_GRACE_MS,
                               Milliseconds(k.max_connection_age_grace));
  }
}

}  // namespace

Result<std::unique_ptr<GrpcServer>> GrpcServer::Start(const config::RlsConfig& rls,
                                                      std::chrono::milliseconds handshake_timeout,
                                                      Service& service) {
  // Debian builds Abseil without NDEBUG, so that every absl::Mutex gRPC locks (several a call)
  // records its lock order in a global graph under a global lock, for deadlock reports nobody
  // reads here; it took 5% of the server's CPU under ShouldRateLimit load. Release builds of
  // Abseil skip it.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  grpc::EnableDefaultHealthCheckService(true);
  auto handlers = std::make_unique<Handlers>(service);
  grpc::ServerBuilder builder;
  SetLimits(builder, rls, handshake_timeout);
  const config::Endpoint& endpoint = *rls.listen;
  int port = 0;
  builder.AddListeningPort(endpoint.ToString(), grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(handlers.get());
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || port == 0) {
    return Status::Unavailable("cannot listen on " + endpoint.ToString() + " for gRPC");
  }
  return std::unique_ptr<GrpcServer>(
      new GrpcServer(std::move(handlers), std::move(server), static_cast<uint16_t>(port)));
}

void GrpcServer::BeginShutdown(std::chrono::system_clock::time_point deadline) {
  if (shutdown_.joinable()) return;
  server_->GetHealthCheckService()->SetServingStatus(false);
  shutdown_ = std::thread([this, deadline] {
    server_->Shutdown(deadline);
    shut_down_ = true;
  });
}

GrpcServer::~GrpcServer() {
  BeginShutdown(std::chrono::system_clock::now());
  shutdown_.join();
  server_->Wait();
}

int GrpcCode(const Status& status) {
  switch (status.code()) {
    case StatusCode::kOk:
      return grpc::StatusCode::OK;
    case StatusCode::kInvalidArgument:
      return grpc::StatusCode::INVALID_ARGUMENT;
    case StatusCode::kDeadlineExceeded:
      return grpc::StatusCode::DEADLINE_EXCEEDED;
    case StatusCode::kResourceExhausted:
      return grpc::StatusCode::RESOURCE_EXHAUSTED;
    default:
      return grpc::StatusCode::UNAVAILABLE;
  }
}

}  // namespace sluice::rls
