#include "sluice/postgres_quota_store.h"

#include <utility>

#include "quota_pool.h"

namespace sluice {

PostgresQuotaStore::PostgresQuotaStore(PostgresOptions options)
    : PostgresQuotaStore(std::move(options), nullptr) {}

PostgresQuotaStore::PostgresQuotaStore(PostgresOptions options,
                                       std::function<std::string()> test_clock)
    : pool_(std::make_shared<postgres::QuotaPool>(std::move(options), std::move(test_clock))) {
  pool_->Start();
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
