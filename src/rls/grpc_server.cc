#include "rls/grpc_server.h"

#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>

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

Result<std::unique_ptr<GrpcServer>> GrpcServer::Start(const config::Endpoint& endpoint,
                                                      Service& service) {
  grpc::EnableDefaultHealthCheckService(true);
  auto handlers = std::make_unique<Handlers>(service);
  grpc::ServerBuilder builder;
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
    default:
      return grpc::StatusCode::UNAVAILABLE;
  }
}

}  // namespace sluice::rls
