#include "pg_connection.h"

#include <unistd.h>

#include <boost/asio/post.hpp>

namespace sluice::postgres {

namespace asio = boost::asio;

std::string ErrorMessage(const PGconn* conn) {
  std::string message = conn != nullptr ? PQerrorMessage(conn) : "out of memory";
  for (char& c : message) {
    if (c == '\n' || c == '\t') c = ' ';
  }
  while (!message.empty() && message.back() == ' ') message.pop_back();
  return message.empty() ? "unknown error" : message;
}

Status ResultError(const PGresult* result) {
  if (result == nullptr) return Status::StoreError("no result");
  const ExecStatusType status = PQresultStatus(result);
  if (status != PGRES_FATAL_ERROR && status != PGRES_BAD_RESPONSE &&
      status != PGRES_NONFATAL_ERROR) {
    return {};
  }
  const char* state = PQresultErrorField(result, PG_DIAG_SQLSTATE);
  const char* primary = PQresultErrorField(result, PG_DIAG_MESSAGE_PRIMARY);
  return Status::StoreError(std::string(state != nullptr ? state : "?????") + ": " +
                            (primary != nullptr ? primary : PQresStatus(status)));
}

std::shared_ptr<PgConnection> PgConnection::Create(asio::io_context& io) {
  return std::shared_ptr<PgConnection>(new PgConnection(io));
}

PgConnection::PgConnection(asio::io_context& io) : io_(io), socket_(io) {}

PgConnection::~PgConnection() { Close(); }

ParamArrays::ParamArrays(const ConnectionParams& params) {
  for (const auto& [keyword, value] : params) {
    keywords.push_back(keyword.c_str());
    values.push_back(value.c_str());
  }
  keywords.push_back(nullptr);
  values.push_back(nullptr);
}

void PgConnection::Connect(const ConnectionParams& params, ConnectDone done) {
  const ParamArrays arrays(params);
  connect_done_ = std::move(done);
  state_ = State::kConnecting;
  conn_ = PQconnectStartParams(arrays.keywords.data(), arrays.values.data(), /*expand_dbname=*/1);
  if (conn_ == nullptr || PQstatus(conn_) == CONNECTION_BAD) {
    asio::post(io_,
               [self = shared_from_this()] { self->ConnectFailed(ErrorMessage(self->conn_)); });
    return;
  }
  WatchSocket();
  ContinueConnect();
}

void PgConnection::WatchSocket() {
  const int fd = PQsocket(conn_);
  if (fd == watched_fd_) return;
  ++generation_;
  reading_ = writing_ = false;
  boost::system::error_code ignored;
  socket_.close(ignored);
  watched_fd_ = fd;
  if (fd < 0) return;
  const int copy = ::dup(fd);
  if (copy >= 0) socket_.assign(copy, ignored);
}

void PgConnection::ContinueConnect() {
  switch (poll_) {
    case PGRES_POLLING_READING:
      return WaitRead();
    case PGRES_POLLING_WRITING:
      return WaitWrite();
    case PGRES_POLLING_OK: {
      if (PQsetnonblocking(conn_, 1) != 0) return ConnectFailed(ErrorMessage(conn_));
      state_ = State::kReady;
      WaitRead();  // notifications, and the server going away
      ConnectDone done = std::move(connect_done_);
      return done({});
    }
    default:
      return ConnectFailed(ErrorMessage(conn_));
  }
}

void PgConnection::ConnectFailed(std::string message) {
  if (conn_ != nullptr) {
    refused_ = PQconnectionNeedsPassword(conn_) != 0 ||
               (PQconnectionUsedPassword(conn_) != 0 && PQstatus(conn_) == CONNECTION_BAD);
  }
  ConnectDone done = std::move(connect_done_);
  Close();
  if (done) done(Status::Unavailable(std::move(message)));
}

void PgConnection::WaitRead() { Wait(asio::posix::stream_descriptor::wait_read); }

void PgConnection::WaitWrite() { Wait(asio::posix::stream_descriptor::wait_write); }

void PgConnection::Wait(asio::posix::stream_descriptor::wait_type type) {
  const bool read = type == asio::posix::stream_descriptor::wait_read;
  bool& waiting = read ? reading_ : writing_;
  if (waiting || state_ == State::kClosed || !socket_.is_open()) return;
  waiting = true;
  socket_.async_wait(type, [self = shared_from_this(), generation = generation_,
                            read](const boost::system::error_code& ec) {
    if (generation != self->generation_ || self->state_ == State::kClosed) return;
    (read ? self->reading_ : self->writing_) = false;
    if (ec) return self->Broken(ec.message());
    read ? self->OnReadable() : self->OnWritable();
  });
}

void PgConnection::OnReadable() {
  if (state_ == State::kConnecting) {
    poll_ = PQconnectPoll(conn_);
    WatchSocket();
    return ContinueConnect();
  }
  if (PQconsumeInput(conn_) == 0) return Broken(ErrorMessage(conn_));
  auto self = shared_from_this();  // a callback below may drop the caller's last reference
  while (PGnotify* notice = PQnotifies(conn_)) {
    const Notify notify = notify_;  // the callback may close the connection
    if (notify) notify(notice->relname, notice->extra);
    PQfreemem(notice);
    if (state_ != State::kReady) return;
  }
  if (state_ != State::kReady) return;
  if (flushing_ && !Flush()) return Broken(ErrorMessage(conn_));
  if (busy() && !flushing_) CollectResults();
  if (PQstatus(conn_) == CONNECTION_BAD) return Broken(ErrorMessage(conn_));
  WaitRead();
}

void PgConnection::OnWritable() {
  if (state_ == State::kConnecting) {
    poll_ = PQconnectPoll(conn_);
    WatchSocket();
    return ContinueConnect();
  }
  if (flushing_ && !Flush()) Broken(ErrorMessage(conn_));
}

bool PgConnection::Flush() {
  const int flushed = PQflush(conn_);
  if (flushed < 0) return false;
  flushing_ = flushed == 1;
  if (flushing_) WaitWrite();
  return true;
}

namespace {

// The parameters as libpq takes them: C strings, null for NULL.
std::vector<const char*> ValuesOf(const std::vector<std::optional<std::string>>& params) {
  std::vector<const char*> values;
  values.reserve(params.size());
  for (const std::optional<std::string>& param : params) {
    values.push_back(param ? param->c_str() : nullptr);
  }
  return values;
}

}  // namespace

void PgConnection::Query(const std::string& sql,
                         const std::vector<std::optional<std::string>>& params, QueryDone done) {
  const std::vector<const char*> values = ValuesOf(params);
  const bool sent = state_ == State::kReady &&
                    PQsendQueryParams(conn_, sql.c_str(), static_cast<int>(values.size()), nullptr,
                                      values.data(), nullptr, nullptr, /*resultFormat=*/0) != 0;
  Sent(sent, std::move(done));
}

void PgConnection::Prepare(const std::string& name, const std::string& sql, QueryDone done) {
  Sent(state_ == State::kReady && PQsendPrepare(conn_, name.c_str(), sql.c_str(), 0, nullptr) != 0,
       std::move(done));
}

void PgConnection::QueryPrepared(const std::string& name,
                                 const std::vector<std::optional<std::string>>& params,
                                 QueryDone done) {
  const std::vector<const char*> values = ValuesOf(params);
  const bool sent = state_ == State::kReady &&
                    PQsendQueryPrepared(conn_, name.c_str(), static_cast<int>(values.size()),
                                        values.data(), nullptr, nullptr, /*resultFormat=*/0) != 0;
  Sent(sent, std::move(done));
}

void PgConnection::Script(const std::string& sql, QueryDone done) {
  Sent(state_ == State::kReady && PQsendQuery(conn_, sql.c_str()) != 0, std::move(done));
}

void PgConnection::Sent(bool ok, QueryDone done) {
  if (!ok) {
    const std::string why = state_ == State::kReady ? ErrorMessage(conn_) : "not connected";
    asio::post(io_, [done = std::move(done), why] { done(Status::Unavailable(why)); });
    return;
  }
  query_done_ = std::move(done);
  results_.clear();
  if (!Flush()) {
    // From the loop: the caller learns of the broken connection after this call returns, when
    // its own state (a timer armed for the statement) is in place.
    asio::post(io_,
               [self = shared_from_this(), generation = generation_, why = ErrorMessage(conn_)] {
                 if (generation == self->generation_) self->Broken(why);
               });
    return;
  }
  WaitRead();
}

void PgConnection::CollectResults() {
  while (PQisBusy(conn_) == 0) {
    PGresult* result = PQgetResult(conn_);
    if (result == nullptr) {
      QueryDone done = std::move(query_done_);
      query_done_ = nullptr;
      std::vector<PgResult> results = std::move(results_);
      results_.clear();
      for (const PgResult& r : results) {
        if (Status error = ResultError(r.get()); !error.ok()) return done(std::move(error));
      }
      return done(std::move(results));
    }
    results_.emplace_back(result);
  }
}

void PgConnection::Broken(const std::string& why) {
  if (state_ != State::kReady && state_ != State::kConnecting) return;
  if (state_ == State::kConnecting) return ConnectFailed(why);
  auto self = shared_from_this();
  QueryDone done = std::move(query_done_);
  query_done_ = nullptr;
  Lost lost = std::move(lost_);
  Close();
  const Status error = Status::Unavailable("connection lost: " + why);
  if (done) {
    done(error);
  } else if (lost) {
    lost(error);
  }
}

void PgConnection::Close() {
  state_ = State::kClosed;
  ++generation_;
  boost::system::error_code ignored;
  socket_.close(ignored);
  watched_fd_ = -1;
  if (conn_ != nullptr) {
    PQfinish(conn_);
    conn_ = nullptr;
  }
  connect_done_ = nullptr;
  query_done_ = nullptr;
  lost_ = nullptr;
  notify_ = nullptr;
  results_.clear();
}

}  // namespace sluice::postgres
