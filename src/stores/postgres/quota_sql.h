// The SQL of the quota store, embedded at build time from quota_schema.sql and quota_shape.sql.
#pragma once

#include <string_view>

namespace sluice::postgres {

// Creates what is missing of the table and (re)creates the functions, in one transaction.
std::string_view QuotaSchemaSql();

// One row, one column: NULL when the table and functions are right, 'missing' when the schema
// script must run, else what is wrong with the table, for people.
std::string_view QuotaShapeSql();

}  // namespace sluice::postgres
