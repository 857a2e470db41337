// One libpq connection driven by an Asio event loop, never blocking it: connecting and
// authenticating, one statement at a time, and the server's notifications.
#pragma once

#include <libpq-fe.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sluice/status.h"

namespace sluice::postgres {

struct ResultDeleter {
  void operator()(PGresult* result) const { PQclear(result); }
};
using PgResult = std::unique_ptr<PGresult, ResultDeleter>;

// libpq's connection keywords and their values ("dbname" first: it may be a whole URI).
using ConnectionParams = std::vector<std::pair<std::string, std::string>>;

// `params` as libpq's connect functions take them: keywords and values, each ending with a null;
// they point into `params`, which must outlive them.
struct ParamArrays {
  explicit ParamArrays(const ConnectionParams& params);
  std::vector<const char*> keywords;
  std::vector<const char*> values;
};

// Not thread-safe: every call, and every callback, on the event loop's thread. Callbacks run
// from the loop, never inside the call that gave them.
class PgConnection : public std::enable_shared_from_this<PgConnection> {
 public:
  using ConnectDone = std::function<void(Status)>;
  // Every result of the statement (or statements), or the first error: kStoreError with the
  // server's SQLSTATE and message, or kUnavailable when the connection broke (a statement that was
  // sent may then have been committed or not).
  using QueryDone = std::function<void(Result<std::vector<PgResult>>)>;
  using Notify = std::function<void(std::string_view channel, std::string_view payload)>;
  using Lost = std::function<void(const Status&)>;

  static std::shared_ptr<PgConnection> Create(boost::asio::io_context& io);
  ~PgConnection();

  PgConnection(const PgConnection&) = delete;
  PgConnection& operator=(const PgConnection&) = delete;

  // Connects and authenticates (libpq's PQconnectStartParams, expanding a URI in "dbname"). No
  // timeout of its own: the caller closes a connection that takes too long.
  void Connect(const ConnectionParams& params, ConnectDone done);

  // Sends one statement with text parameters (nullopt: NULL) by the extended protocol; `done`
  // gets its result once the server has finished it. Only when ready() and not busy().
  void Query(const std::string& sql, const std::vector<std::optional<std::string>>& params,
             QueryDone done);

  // Prepares `sql` as the statement `name`, for QueryPrepared; `done` once the server has it.
  // Only when ready() and not busy().
  void Prepare(const std::string& name, const std::string& sql, QueryDone done);

  // Runs the prepared statement `name` as Query runs a statement: no parse or plan each time.
  void QueryPrepared(const std::string& name, const std::vector<std::optional<std::string>>& params,
                     QueryDone done);

  // Sends a string of statements by the simple protocol (one implicit transaction); `done` gets
  // each statement's result. Only when ready() and not busy().
  void Script(const std::string& sql, QueryDone done);

  // Called with each notification (LISTEN) that arrives, whether a statement is in flight or not.
  void SetNotify(Notify notify) { notify_ = std::move(notify); }
  // Called once when the connection breaks while no statement is in flight (the server went
  // away); a statement in flight gets the error instead.
  void SetLost(Lost lost) { lost_ = std::move(lost); }

  // Closes the connection; callbacks not yet called are dropped.
  void Close();

  bool ready() const { return state_ == State::kReady; }
  bool busy() const { return static_cast<bool>(query_done_); }
  // After a failed Connect: whether the server refused what it was given (a wrong password, or
  // none where it asks for one; or, once a password was taken, a database or role it refuses),
  // which trying again will not change.
  bool refused() const { return refused_; }

 private:
  enum class State { kNew, kConnecting, kReady, kClosed };

  explicit PgConnection(boost::asio::io_context& io);

  // Watches libpq's socket (which may change while connecting) through a duplicate of its own, so
  // that the event loop never holds a descriptor libpq has closed.
  void WatchSocket();
  void ContinueConnect();
  void ConnectFailed(std::string message);
  void WaitRead();
  void WaitWrite();
  // Waits, once at a time for each direction, for the socket to be ready to read or write.
  void Wait(boost::asio::posix::stream_descriptor::wait_type type);
  void OnReadable();
  void OnWritable();
  // Writes what libpq holds of the statement; waits for the socket when it cannot all go now.
  // False when the connection broke: the caller calls Broken (or posts it, inside a call).
  bool Flush();
  void CollectResults();
  void Sent(bool ok, QueryDone done);
  void Broken(const std::string& why);

  boost::asio::io_context& io_;
  boost::asio::posix::stream_descriptor socket_;
  PGconn* conn_ = nullptr;
  int watched_fd_ = -1;
  unsigned generation_ = 0;  // raised when the watched socket changes: older waits are stale
  State state_ = State::kNew;
  PostgresPollingStatusType poll_ = PGRES_POLLING_WRITING;
  bool reading_ = false;
  bool writing_ = false;
  bool flushing_ = false;
  bool refused_ = false;
  ConnectDone connect_done_;
  QueryDone query_done_;
  std::vector<PgResult> results_;
  Notify notify_;
  Lost lost_;
};

// libpq's last error on `conn` on one line, without the trailing newline.
std::string ErrorMessage(const PGconn* conn);

// The error of a result that is one: "SQLSTATE: primary message" (never the detail, which may
// quote a row's values); ok for a result that is not an error.
Status ResultError(const PGresult* result);

}  // namespace sluice::postgres
