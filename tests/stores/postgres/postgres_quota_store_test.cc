// The PostgreSQL quota store against a real PostgreSQL 15 (one scratch cluster for the binary):
// exactness under many threads, windows at calendar boundaries, crashes, a server down or hung,
// bad input, the table's shape, `sluice quota`'s operations and the deletion of ended windows.
#include <libpq-fe.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "sluice/postgres_quota_store.h"
#include "sluice/quota_admin.h"
#include "stores/postgres/quota_store_at.h"
#include "support/load_pacing.h"
#include "support/postgres_server.h"
#include "support/wait_until.h"

namespace sluice {
namespace {

using std::chrono::milliseconds;
using testing::SharedPostgres;
using testing::WaitUntil;

constexpr int64_t kDayMs = 24LL * 3600 * 1000;

Result<std::vector<QuotaReply>> TakeBlocking(QuotaStore& store, std::vector<QuotaOp> ops) {
  std::promise<Result<std::vector<QuotaReply>>> promise;
  store.Take(std::move(ops),
             [&](Result<std::vector<QuotaReply>> r) { promise.set_value(std::move(r)); });
  return promise.get_future().get();
}

QuotaOp Monthly(const std::string& bucket, const std::string& value, int64_t limit,
                int64_t cost = 1) {
  return {bucket, value, limit, cost, {CalendarPeriod::kMonth, 0}, true};
}

// A store on the shared server, ready.
std::unique_ptr<PostgresQuotaStore> ReadyStore(PostgresOptions options,
                                               std::function<std::string()> clock = nullptr) {
  std::unique_ptr<PostgresQuotaStore> store = QuotaStoreAt(std::move(options), std::move(clock));
  const Status ready = store->WaitReady(milliseconds(10'000));
  EXPECT_TRUE(ready.ok()) << ready.ToString();
  return store;
}

int64_t UsedInDatabase(const std::string& bucket, const std::string& database = "sluice") {
  const std::string used = SharedPostgres().Sql(
      "SELECT coalesce(sum(used), 0) FROM sluice_quota WHERE bucket = '" + bucket + "'", database);
  return std::stoll(used);
}

TEST(PostgresQuotaStoreTest, ManyThreadsNeverTakeMoreThanTheLimit) {
  PostgresOptions options = SharedPostgres().Options();
  options.pool = 4;
  auto store = ReadyStore(options);
  constexpr int kThreads = 8;
  constexpr int kEach = 150;
  constexpr int64_t kLimit = 700;
  std::atomic<int> allowed{0};
  std::atomic<int> failed{0};
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      std::vector<std::future<Result<std::vector<QuotaReply>>>> pending;
      for (int i = 0; i < kEach; ++i) {
        auto promise = std::make_shared<std::promise<Result<std::vector<QuotaReply>>>>();
        pending.push_back(promise->get_future());
        store->Take({Monthly("threads", "org_acme", kLimit)},
                    [promise](auto r) { promise->set_value(std::move(r)); });
      }
      for (auto& p : pending) {
        Result<std::vector<QuotaReply>> r = p.get();
        if (!r.ok()) {
          ++failed;
        } else if ((*r)[0].charged) {
          ++allowed;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failed.load(), 0);
  EXPECT_EQ(allowed.load(), kLimit);
  EXPECT_EQ(UsedInDatabase("threads"), kLimit);
  // Checks that arrived while statements were in flight went together (group commit).
  const PostgresQuotaStats stats = store->Stats();
  EXPECT_EQ(stats.checks, static_cast<uint64_t>(kThreads * kEach));
  EXPECT_LT(stats.statements * 4, stats.checks) << stats.statements << " statements";
}

TEST(PostgresQuotaStoreTest, ACheckIsAllOrNothingAcrossItsQuotas) {
  auto store = ReadyStore(SharedPostgres().Options());
  const QuotaOp daily{"aon-daily", "k", 10, 1, {CalendarPeriod::kDay, 0}, true};
  const QuotaOp monthly = Monthly("aon-monthly", "k", 2);
  for (int i = 0; i < 2; ++i) {
    auto r = TakeBlocking(*store, {daily, monthly});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_TRUE((*r)[0].charged && (*r)[1].charged);
  }
  auto r = TakeBlocking(*store, {daily, monthly});
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE((*r)[0].allowed);   // the daily quota had room...
  EXPECT_FALSE((*r)[0].charged);  // ...but is not charged: the monthly one had none
  EXPECT_FALSE((*r)[1].allowed);
  EXPECT_EQ((*r)[0].used, 2);
  EXPECT_EQ((*r)[1].used, 2);
  // A shadow quota's rejection charges the others anyway, and it is charged only when it fits.
  QuotaOp shadow = monthly;
  shadow.enforced = false;
  r = TakeBlocking(*store, {daily, shadow});
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE((*r)[0].charged);
  EXPECT_FALSE((*r)[1].allowed);
  EXPECT_FALSE((*r)[1].charged);
  EXPECT_EQ(UsedInDatabase("aon-daily"), 3);
}

// The database's clock, as the test-only override sets it: each statement counts at what the
// clock holds when the statement goes.
class TestClock {
 public:
  void Set(std::string at) {
    std::lock_guard lock(mutex_);
    at_ = std::move(at);
  }
  std::function<std::string()> Reader() {
    return [this] {
      std::lock_guard lock(mutex_);
      return at_;
    };
  }

 private:
  std::mutex mutex_;
  std::string at_;
};

TEST(PostgresQuotaStoreTest, CalendarWindowsTurnOnTheStroke) {
  TestClock clock;
  auto store = ReadyStore(SharedPostgres().Options(), clock.Reader());
  const QuotaOp month = Monthly("calendar-month", "org_acme", 1);
  // The last millisecond of January 2025, then the first of February.
  clock.Set("2025-01-31 23:59:59.999+00");
  auto r = TakeBlocking(*store, {month});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE((*r)[0].charged);
  EXPECT_EQ((*r)[0].window_start_ms, 1735689600000);  // 2025-01-01T00:00:00Z
  EXPECT_EQ((*r)[0].window_end_ms, 1738368000000);    // 2025-02-01T00:00:00Z
  EXPECT_EQ((*r)[0].now_ms, 1738367999999);
  r = TakeBlocking(*store, {month});
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE((*r)[0].allowed);  // still January: spent
  clock.Set("2025-02-01 00:00:00.000+00");
  r = TakeBlocking(*store, {month});
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE((*r)[0].charged);  // February: a new window
  EXPECT_EQ((*r)[0].used, 1);
  EXPECT_EQ((*r)[0].window_start_ms, 1738368000000);
  EXPECT_EQ((*r)[0].window_end_ms - (*r)[0].window_start_ms, 28 * kDayMs);

  // February of a leap year has 29 days; a year 365 or 366; a week runs from Monday.
  clock.Set("2024-02-29 12:00:00+00");
  r = TakeBlocking(*store, {month});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)[0].window_end_ms - (*r)[0].window_start_ms, 29 * kDayMs);
  const QuotaOp week{"calendar-week", "org_acme", 1, 1, {CalendarPeriod::kWeek, 0}, true};
  clock.Set("2025-01-05 23:59:59.999+00");  // a Sunday
  r = TakeBlocking(*store, {week});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)[0].window_start_ms, 1735516800000);  // Monday 2024-12-30
  clock.Set("2025-01-06 00:00:00+00");                // the Monday after
  r = TakeBlocking(*store, {week});
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE((*r)[0].charged);
  EXPECT_EQ((*r)[0].window_start_ms, 1736121600000);
  const QuotaOp year{"calendar-year", "org_acme", 1, 1, {CalendarPeriod::kYear, 0}, true};
  clock.Set("2024-12-31 23:59:59.999+00");
  r = TakeBlocking(*store, {year});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)[0].window_end_ms - (*r)[0].window_start_ms, 366 * kDayMs);
  clock.Set("2025-01-01 00:00:00+00");
  r = TakeBlocking(*store, {year});
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE((*r)[0].charged);
  // The session's time zone changes nothing: windows are UTC's.
  SharedPostgres().Sql("ALTER ROLE sluice SET timezone = 'Pacific/Kiritimati'", "postgres");
  auto other = ReadyStore(SharedPostgres().Options(), clock.Reader());
  clock.Set("2025-03-01 00:00:00+00");
  r = TakeBlocking(*other, {month});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)[0].window_start_ms, 1740787200000);  // 2025-03-01T00:00:00Z
  SharedPostgres().Sql("ALTER ROLE sluice RESET timezone", "postgres");
}

TEST(PostgresQuotaStoreTest, DurationWindowsAlignToTheEpochNotTheCalendar) {
  TestClock clock;
  auto store = ReadyStore(SharedPostgres().Options(), clock.Reader());
  const QuotaOp seven_days{"duration-7d", "k", 5, 1, {CalendarPeriod::kNone, 7 * kDayMs}, true};
  clock.Set("2025-01-06 00:00:00+00");  // a Monday
  auto r = TakeBlocking(*store, {seven_days});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  // 1970-01-01 was a Thursday: 7-day windows run from Thursday to Thursday.
  EXPECT_EQ((*r)[0].window_start_ms, 1735776000000);  // Thursday 2025-01-02
  EXPECT_EQ((*r)[0].window_end_ms, 1735776000000 + 7 * kDayMs);
}

// A rule whose period changed from an hour to a day (or gateways of both configurations side by
// side): the hour of 00:00 and the day start together, yet each keeps a count of its own, and the
// day's count outlives the hour's end and the deletion of ended windows.
TEST(PostgresQuotaStoreTest, WindowsThatStartTogetherKeepCountsOfTheirOwn) {
  SharedPostgres().CreateDatabase("windows");
  TestClock clock;
  auto store = ReadyStore(SharedPostgres().Options("windows"), clock.Reader());
  const QuotaOp hour{"changed", "org_acme", 2, 1, {CalendarPeriod::kNone, int64_t{3600} * 1000},
                     true};
  const QuotaOp day{"changed", "org_acme", 3, 1, {CalendarPeriod::kDay, 0}, true};
  // Takes `op` once: whether it was charged, and the count it saw.
  auto take = [&](const QuotaOp& op) -> std::pair<bool, int64_t> {
    auto r = TakeBlocking(*store, {op});
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    if (!r.ok()) return {false, -1};
    if (op.window.calendar == CalendarPeriod::kDay) {
      EXPECT_EQ((*r)[0].window_end_ms, 1735689600000 + kDayMs);  // 2025-01-02T00:00:00Z
    }
    return {(*r)[0].charged, (*r)[0].used};
  };
  using Taken = std::pair<bool, int64_t>;
  clock.Set("2025-01-01 00:30:00+00");
  EXPECT_EQ(take(hour), Taken(true, 1));
  EXPECT_EQ(take(hour), Taken(true, 2));
  EXPECT_EQ(take(day), Taken(true, 1));
  EXPECT_EQ(take(day), Taken(true, 2));
  EXPECT_EQ(take(day), Taken(true, 3));
  EXPECT_EQ(take(hour), Taken(false, 2));
  EXPECT_EQ(take(day), Taken(false, 3));

  // The hour has ended, and its row is deleted: the day's count stays.
  clock.Set("2025-01-01 01:30:00+00");
  EXPECT_EQ(
      SharedPostgres().Sql(
          "SELECT sluice_quota_cleanup_v2(1000, '2025-01-01 01:30:00+00'::timestamptz)", "windows"),
      "1");
  EXPECT_EQ(take(hour), Taken(true, 1));
  EXPECT_EQ(take(day), Taken(false, 3));
  EXPECT_EQ(UsedInDatabase("changed", "windows"), 1 + 3);
}

// The table of the first schema (keyed without window_end) gets the new key, its counts kept.
TEST(PostgresQuotaStoreTest, TheFirstSchemasTableGetsTheNewKey) {
  SharedPostgres().CreateDatabase("first_schema");
  SharedPostgres().Sql(
      "CREATE TABLE sluice_quota (bucket text COLLATE \"C\" NOT NULL, value bytea NOT NULL, "
      "window_start timestamptz NOT NULL, window_end timestamptz NOT NULL, used bigint NOT NULL, "
      "PRIMARY KEY (bucket, value, window_start));"
      "ALTER TABLE sluice_quota OWNER TO sluice;"
      "INSERT INTO sluice_quota SELECT 'kept', 'k', m AT TIME ZONE 'UTC', "
      "(m + interval '1 month') AT TIME ZONE 'UTC', 5 "
      "FROM date_trunc('month', now() AT TIME ZONE 'UTC') AS m",
      "first_schema");
  auto store = ReadyStore(SharedPostgres().Options("first_schema"));
  EXPECT_EQ(SharedPostgres().Sql("SELECT pg_get_constraintdef(oid) FROM pg_constraint "
                                 "WHERE conrelid = 'sluice_quota'::regclass AND contype = 'p'",
                                 "first_schema"),
            "PRIMARY KEY (bucket, value, window_start, window_end)");
  auto r = TakeBlocking(*store, {Monthly("kept", "k", 100)});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)[0].used, 6);
}

TEST(PostgresQuotaStoreTest, OddValuesAreQuotasOfTheirOwn) {
  auto store = ReadyStore(SharedPostgres().Options());
  const std::vector<std::string> values = {"it's",
                                           "say \"hi\"",
                                           std::string("nul\0byte", 8),
                                           std::string("nul\0bytf", 8),
                                           "back\\slash",
                                           "{braces,comma}",
                                           std::string(1024, '\xff'),
                                           std::string(1024, '\0'),
                                           ""};
  for (const std::string& value : values) {
    auto r = TakeBlocking(*store, {Monthly("odd", value, 1)});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_TRUE((*r)[0].charged);
  }
  EXPECT_EQ(UsedInDatabase("odd"), static_cast<int64_t>(values.size()));
  EXPECT_EQ(SharedPostgres().Sql("SELECT count(*) FROM sluice_quota WHERE bucket = 'odd'"),
            std::to_string(values.size()));
  auto admin = QuotaAdmin::Connect(SharedPostgres().Options());
  ASSERT_TRUE(admin.ok()) << admin.status().ToString();
  for (const std::string& value : values) {
    auto usage = (*admin)->Get("odd", value, {CalendarPeriod::kMonth, 0});
    ASSERT_TRUE(usage.ok()) << usage.status().ToString();
    EXPECT_EQ(usage->used, 1);
  }
  auto r = TakeBlocking(*store, {Monthly("odd", std::string(1025, 'x'), 1)});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
}

TEST(PostgresQuotaStoreTest, AWrongPasswordIsAClearErrorAtStart) {
  PostgresOptions options = SharedPostgres().Options();
  options.password = "not-the-password";
  PostgresQuotaStore store(options);
  const Status ready = store.WaitReady(milliseconds(10'000));
  EXPECT_FALSE(ready.ok());
  EXPECT_TRUE(store.refused());
  EXPECT_NE(ready.message().find("password authentication failed"), std::string::npos)
      << ready.message();
  EXPECT_EQ(ready.message().find("not-the-password"), std::string::npos);
  auto r = TakeBlocking(store, {Monthly("wrong-password", "k", 1)});
  EXPECT_FALSE(r.ok());
}

// libpq's own message for a URL it cannot read quotes it: the password with it.
TEST(PostgresQuotaStoreTest, AMalformedUrlIsAnErrorThatNeverQuotesIt) {
  PostgresOptions options = SharedPostgres().Options();
  options.url =
      "postgresql://sluice:p%sSECRET@127.0.0.1:" + std::to_string(SharedPostgres().port()) +
      "/sluice";
  PostgresQuotaStore store(options);
  const Status ready = store.WaitReady(milliseconds(10'000));
  EXPECT_FALSE(ready.ok());
  EXPECT_NE(ready.message().find("malformed postgresql:// URL"), std::string::npos)
      << ready.message();
  EXPECT_EQ(ready.message().find("SECRET"), std::string::npos) << ready.message();
  EXPECT_EQ(store.LastError().find("SECRET"), std::string::npos) << store.LastError();
  auto admin = QuotaAdmin::Connect(options);
  ASSERT_FALSE(admin.ok());
  EXPECT_EQ(admin.status().message().find("SECRET"), std::string::npos) << admin.status().message();
}

TEST(PostgresQuotaStoreTest, ATableOfTheWrongShapeIsRefusedAtStart) {
  SharedPostgres().CreateDatabase("wrong_shape");
  SharedPostgres().Sql(
      "CREATE TABLE sluice_quota (bucket text, value text, used integer);"
      "ALTER TABLE sluice_quota OWNER TO sluice",
      "wrong_shape");
  PostgresQuotaStore store(SharedPostgres().Options("wrong_shape"));
  const Status ready = store.WaitReady(milliseconds(10'000));
  EXPECT_EQ(ready.code(), StatusCode::kFailedPrecondition) << ready.ToString();
  EXPECT_NE(ready.message().find("has the columns (bucket text, value text, used integer)"),
            std::string::npos)
      << ready.message();
  // The refusal's callback may ask the store why: it runs without the store's lock held.
  std::promise<std::string> why;
  store.Take({Monthly("shape", "k", 1)}, [&](const Result<std::vector<QuotaReply>>& r) {
    EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
    why.set_value(store.LastError());
  });
  std::future<std::string> answered = why.get_future();
  ASSERT_EQ(answered.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  EXPECT_NE(answered.get().find("has the columns"), std::string::npos);
}

TEST(PostgresQuotaStoreTest, SpentQuotasAreRememberedUntilAResetAnnouncesOtherwise) {
  auto store = ReadyStore(SharedPostgres().Options());
  const QuotaOp op = Monthly("spent", "org_acme", 2);
  ASSERT_TRUE(TakeBlocking(*store, {op, Monthly("spent-other", "org_acme", 100)}).ok());
  ASSERT_TRUE(TakeBlocking(*store, {op}).ok());
  EXPECT_FALSE(store->KnownRejection(op));  // not seen spent yet
  auto r = TakeBlocking(*store, {op});
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE((*r)[0].allowed);
  std::optional<QuotaReply> known = store->KnownRejection(op);
  ASSERT_TRUE(known);
  EXPECT_FALSE(known->allowed);
  EXPECT_EQ(known->used, 2);
  EXPECT_EQ(known->window_end_ms, (*r)[0].window_end_ms);
  QuotaOp bigger = op;
  bigger.limit = 3;  // a limit raised by a reload: the store is asked again
  EXPECT_FALSE(store->KnownRejection(bigger));

  auto admin = QuotaAdmin::Connect(SharedPostgres().Options());
  ASSERT_TRUE(admin.ok());
  auto usage = (*admin)->Get("spent", "org_acme", {CalendarPeriod::kMonth, 0});
  ASSERT_TRUE(usage.ok());
  EXPECT_EQ(usage->used, 2);
  EXPECT_EQ(usage->window_end_ms, (*r)[0].window_end_ms);
  ASSERT_TRUE((*admin)->Set("spent", "org_acme", {CalendarPeriod::kMonth, 0}, 0).ok());
  EXPECT_TRUE(WaitUntil([&] { return !store->KnownRejection(op); }, milliseconds(5000)));
  r = TakeBlocking(*store, {op});
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE((*r)[0].charged);
  ASSERT_TRUE((*admin)->Set("spent", "org_acme", {CalendarPeriod::kMonth, 0}, 7).ok());
  EXPECT_EQ((*admin)->Get("spent", "org_acme", {CalendarPeriod::kMonth, 0})->used, 7);
}

TEST(PostgresQuotaStoreTest, EndedWindowsAreDeletedByOneGatewayAtATime) {
  SharedPostgres().CreateDatabase("cleanup");
  PostgresOptions options = SharedPostgres().Options("cleanup");
  options.cleanup_interval = milliseconds(100);
  options.cleanup_batch = 50;
  {
    auto admin = QuotaAdmin::Connect(options);
    ASSERT_TRUE(admin.ok());
    ASSERT_TRUE((*admin)->Init().ok());
  }
  SharedPostgres().Sql(
      "INSERT INTO sluice_quota SELECT 'old', int4send(i), now() - interval '2 days', "
      "now() - interval '1 day', 1 FROM generate_series(1, 120) AS i;"
      "INSERT INTO sluice_quota SELECT 'live', int4send(i), now() - interval '1 day', "
      "now() + interval '1 day', 1 FROM generate_series(1, 10) AS i",
      "cleanup");
  // While another gateway holds the lock, this one deletes nothing.
  const std::string conninfo = "host=" + SharedPostgres().data_dir() +
                               " port=" + std::to_string(SharedPostgres().port()) +
                               " user=postgres dbname=cleanup";
  PGconn* holder = PQconnectdb(conninfo.c_str());
  PQclear(PQexec(holder, "SELECT pg_advisory_lock(7239120569427918850)"));
  auto store = ReadyStore(options);
  EXPECT_TRUE(WaitUntil([&] { return store->Stats().cleanups >= 3; }, milliseconds(10'000)));
  EXPECT_EQ(SharedPostgres().Sql("SELECT count(*) FROM sluice_quota", "cleanup"), "130");
  PQfinish(holder);
  EXPECT_TRUE(WaitUntil(
      [] { return SharedPostgres().Sql("SELECT count(*) FROM sluice_quota", "cleanup") == "10"; },
      milliseconds(10'000)));
  EXPECT_EQ(store->Stats().cleaned, 120U);
}

// A deletion that goes unanswered gives up its connection; the next round comes all the same.
TEST(PostgresQuotaStoreTest, ADeletionCutOffIsFollowedByAnother) {
  SharedPostgres().CreateDatabase("cleanup_cut_off");
  PostgresOptions options = SharedPostgres().Options("cleanup_cut_off");
  options.timeout = milliseconds(100);
  options.cleanup_interval = milliseconds(100);
  {
    auto admin = QuotaAdmin::Connect(options);
    ASSERT_TRUE(admin.ok());
    ASSERT_TRUE((*admin)->Init().ok());
  }
  SharedPostgres().Sql(
      "INSERT INTO sluice_quota SELECT 'old', int4send(i), now() - interval '2 days', "
      "now() - interval '1 day', 1 FROM generate_series(1, 10) AS i",
      "cleanup_cut_off");
  auto store = ReadyStore(options);
  // The table locked: the deletion waits until its connection is given up on.
  const std::string conninfo = "host=" + SharedPostgres().data_dir() +
                               " port=" + std::to_string(SharedPostgres().port()) +
                               " user=postgres dbname=cleanup_cut_off";
  PGconn* holder = PQconnectdb(conninfo.c_str());
  PQclear(PQexec(holder, "BEGIN; LOCK TABLE sluice_quota IN ACCESS EXCLUSIVE MODE"));
  EXPECT_TRUE(WaitUntil(
      [&] { return store->LastError().find("no answer to a statement") != std::string::npos; },
      milliseconds(10'000)))
      << store->LastError();
  PQfinish(holder);
  // The server may still finish the statement it was given up on, once the lock is gone: rows
  // ended since are for the rounds after.
  auto none_left = [] {
    return SharedPostgres().Sql("SELECT count(*) FROM sluice_quota", "cleanup_cut_off") == "0";
  };
  EXPECT_TRUE(WaitUntil(none_left, milliseconds(10'000)));
  const uint64_t cleaned = store->Stats().cleaned;
  SharedPostgres().Sql(
      "INSERT INTO sluice_quota SELECT 'later', int4send(i), now() - interval '2 days', "
      "now() - interval '1 day', 1 FROM generate_series(1, 10) AS i",
      "cleanup_cut_off");
  EXPECT_TRUE(WaitUntil(none_left, milliseconds(10'000)));
  EXPECT_GE(store->Stats().cleaned, cleaned + 10);
}

TEST(PostgresQuotaStoreTest, AServerDownOrHungFailsChecksWithinTheTimeout) {
  PostgresOptions options = SharedPostgres().Options();
  options.timeout = milliseconds(200);
  auto store = ReadyStore(options);
  ASSERT_TRUE(TakeBlocking(*store, {Monthly("down", "k", 100)}).ok());

  SharedPostgres().Pause();  // hung: checks wait for their deadline, then fail
  auto start = std::chrono::steady_clock::now();
  auto r = TakeBlocking(*store, {Monthly("down", "k", 100)});
  auto took = std::chrono::steady_clock::now() - start;
  SharedPostgres().Resume();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kDeadlineExceeded);
  EXPECT_LT(took, milliseconds(600));
  EXPECT_TRUE(WaitUntil([&] { return TakeBlocking(*store, {Monthly("down", "k", 100)}).ok(); },
                        milliseconds(10'000)));

  SharedPostgres().Crash();  // gone: checks fail at once, not at their deadline
  EXPECT_TRUE(WaitUntil([&] { return !store->Ready(); }, milliseconds(5000)));
  start = std::chrono::steady_clock::now();
  r = TakeBlocking(*store, {Monthly("down", "k", 100)});
  took = std::chrono::steady_clock::now() - start;
  EXPECT_FALSE(r.ok());
  EXPECT_LT(took, milliseconds(250));
  SharedPostgres().Start();
  EXPECT_TRUE(WaitUntil([&] { return store->Ready(); }, milliseconds(10'000)));
  EXPECT_TRUE(TakeBlocking(*store, {Monthly("down", "k", 100)}).ok());
}

TEST(PostgresQuotaStoreTest, NothingAdmittedIsForgottenWhenTheServerCrashesUnderLoad) {
  PostgresOptions options = SharedPostgres().Options();
  options.timeout = milliseconds(500);
  auto store = ReadyStore(options);
  std::atomic<int64_t> acknowledged{0};
  std::atomic<int64_t> answered{0};
  std::atomic<int64_t> unknown{0};  // cut off after they were sent: counted or not
  std::atomic<bool> stop{false};
  std::vector<std::thread> clients;
  clients.reserve(16);
  for (int t = 0; t < 16; ++t) {
    clients.emplace_back([&] {
      while (!stop) {
        auto r = TakeBlocking(*store, {Monthly("crash", "org_acme", 1'000'000'000)});
        if (r.ok() && (*r)[0].charged) ++acknowledged;
        if (r.ok()) {
          ++answered;
          continue;
        }
        if (r.status().message().find("may have been counted") != std::string::npos) ++unknown;
        testing::PaceLoad(milliseconds(5));  // while the server is down a take fails at once
      }
    });
  }
  ASSERT_TRUE(WaitUntil([&] { return answered > 200; }, milliseconds(20'000)));
  SharedPostgres().Crash();  // pg_ctl stop -m immediate: no checkpoint
  const int64_t before_restart = acknowledged.load();
  SharedPostgres().Start();  // crash recovery replays the WAL
  // The stores reconnect by themselves and go on.
  ASSERT_TRUE(WaitUntil([&] { return acknowledged > before_restart + 100; }, milliseconds(20'000)));
  stop = true;
  for (auto& c : clients) c.join();
  const int64_t used = UsedInDatabase("crash");
  EXPECT_GE(used, acknowledged.load());  // every acknowledged check is there
  // Beyond them, only checks whose answer the crash (or a timeout) cut off.
  EXPECT_LE(used, acknowledged.load() + unknown.load());
}

}  // namespace
}  // namespace sluice
