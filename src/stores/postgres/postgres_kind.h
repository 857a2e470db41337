// The settings of `quota_store: {type: postgres, ...}`: a PostgresQuotaStore.
#pragma once

#include <string>

#include "sluice/postgres_options.h"
#include "stores/quota_store_kind.h"

namespace sluice::stores {

class PostgresSettings final : public QuotaStoreSettings {
 public:
  explicit PostgresSettings(PostgresOptions options) : options_(std::move(options)) {}

  const PostgresOptions& options() const { return options_; }

  bool Equals(const QuotaStoreSettings& other) const override;
  std::string Describe() const override { return options_.Describe(); }
  Status CheckCredentials() const override { return PostgresPassword(options_).status(); }
  Result<OpenedQuotaStore> Open() const override;
  Result<std::unique_ptr<QuotaAdmin>> Admin() const override;

 private:
  PostgresOptions options_;
};

}  // namespace sluice::stores
