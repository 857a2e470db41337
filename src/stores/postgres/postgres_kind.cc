// `quota_store: {type: postgres, url: ...}`: durable quotas in PostgreSQL.
#include "stores/postgres/postgres_kind.h"

#include <spdlog/spdlog.h>

#include "config/yaml_field.h"
#include "sluice/postgres_quota_store.h"

namespace sluice::stores {

bool PostgresSettings::Equals(const QuotaStoreSettings& other) const {
  const auto* postgres = dynamic_cast<const PostgresSettings*>(&other);
  return postgres != nullptr && postgres->options_ == options_;
}

Result<OpenedQuotaStore> PostgresSettings::Open() const {
  auto store = std::make_shared<PostgresQuotaStore>(options_);
  const Status ready = store->WaitReady(options_.connect_timeout);
  if (ready.code() == StatusCode::kFailedPrecondition || store->refused()) {
    return Status(ready.code(), "quota_store: " + ready.message());
  }
  if (!ready.ok()) {
    spdlog::warn("{}; durable rules follow quota_store.failure until it answers", ready.message());
  }
  auto read_secrets = [store]() -> Result<std::function<void()>> {
    Result<std::string> password = store->ReadPassword();
    if (!password.ok()) return password.status();
    return std::function<void()>([store, password = std::move(password).value()]() mutable {
      store->UsePassword(std::move(password));
    });
  };
  return OpenedQuotaStore{store, read_secrets};
}

Result<std::unique_ptr<QuotaAdmin>> PostgresSettings::Admin() const {
  return QuotaAdmin::Connect(options_);
}

namespace {

// `password` or `password_file`, never both and never beside a password in the URL.
void ParsePassword(const config::YamlField& f, bool url_has_password, PostgresOptions& postgres) {
  if (f.Has("password") && f.Has("password_file")) {
    f["password_file"].Fail("is given beside password; give one of them");
  }
  for (const char* field : {"password", "password_file"}) {
    if (f.Has(field) && url_has_password) f[field].Fail("is given twice: in the url and here");
  }
  if (f.Has("password")) postgres.password = f["password"].String();
  if (f.Has("password_file")) {
    postgres.password_file = f["password_file"].String();
    if (postgres.password_file.empty()) f["password_file"].Fail("must name a file");
  }
}

std::shared_ptr<const QuotaStoreSettings> ParsePostgres(const config::YamlField& f) {
  if (!f.Has("url")) f.Fail("needs a url (postgresql://user@host:port/dbname)");
  PostgresOptions postgres;
  postgres.url = f["url"].String();
  const PostgresUrl url = f["url"].Require(ParsePostgresUrl(postgres.url));
  ParsePassword(f, url.has_password, postgres);
  if (f.Has("timeout")) postgres.timeout = f["timeout"].Duration();
  if (postgres.timeout.count() == 0) f["timeout"].Fail("must be more than 0");
  if (f.Has("connect_timeout")) postgres.connect_timeout = f["connect_timeout"].Duration();
  if (postgres.connect_timeout.count() == 0) f["connect_timeout"].Fail("must be more than 0");
  if (f.Has("pool")) postgres.pool = static_cast<size_t>(f["pool"].Integer(1, 64));
  return std::make_shared<PostgresSettings>(std::move(postgres));
}

}  // namespace

QuotaStoreKind PostgresQuotaStoreKind() {
  return {.type = "postgres",
          .fields = {"url", "password", "password_file", "timeout", "connect_timeout", "pool"},
          .parse = ParsePostgres,
          .url_schemes = {"postgresql://", "postgres://"}};
}

}  // namespace sluice::stores
