#include "sluice/postgres_quota_store.h"

#include <utility>

#include "quota_pool.h"
#include "quota_store_at.h"

namespace sluice {

PostgresQuotaStore::PostgresQuotaStore(PostgresOptions options)
    : PostgresQuotaStore(std::move(options), nullptr) {}

PostgresQuotaStore::PostgresQuotaStore(PostgresOptions options,
                                       std::function<std::string()> window_time)
    : pool_(std::make_shared<postgres::QuotaPool>(std::move(options), std::move(window_time))) {
  pool_->Start();
}

std::unique_ptr<PostgresQuotaStore> QuotaStoreAt(PostgresOptions options,
                                                 std::function<std::string()> window_time) {
  return std::unique_ptr<PostgresQuotaStore>(
      new PostgresQuotaStore(std::move(options), std::move(window_time)));
}

PostgresQuotaStore::~PostgresQuotaStore() { pool_->Stop(); }

void PostgresQuotaStore::Take(std::vector<QuotaOp> ops, QuotaCallback done) {
  pool_->Submit(std::move(ops), std::move(done));
}

std::optional<QuotaReply> PostgresQuotaStore::KnownRejection(const QuotaOp& op) const {
  return pool_->KnownRejection(op);
}

bool PostgresQuotaStore::Ready() const { return pool_->Ready(); }

std::vector<StoreNodeStatus> PostgresQuotaStore::Nodes() const {
  return {{pool_->options().Describe(), pool_->Ready(), pool_->RoundTrips()}};
}

Status PostgresQuotaStore::WaitReady(std::chrono::milliseconds timeout) const {
  return pool_->WaitReady(timeout);
}

bool PostgresQuotaStore::refused() const { return pool_->Refused(); }

std::string PostgresQuotaStore::LastError() const { return pool_->LastError(); }

Result<std::string> PostgresQuotaStore::ReadPassword() const {
  return PostgresPassword(pool_->options());
}

void PostgresQuotaStore::UsePassword(std::string password) {
  pool_->SetPassword(std::move(password));
}

PostgresQuotaStats PostgresQuotaStore::Stats() const { return pool_->Stats(); }

}  // namespace sluice
