// A batch of quota checks as one statement of sluice_quota_take_v2 (quota_schema.sql), and its
// rows back as each check's replies: pure logic, apart from the connection.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sluice/quota_store.h"
#include "sluice/status.h"

namespace sluice::postgres {

// The statement a batch is: one row per op, in order.
extern const char* const kTakeStatement;

// The statement's parameters (text: array literals, and the time to count at) for `checks`, each
// a check's ops, in order. `at` empty: NULL, the database's now().
std::vector<std::optional<std::string>> TakeParameters(
    const std::vector<const std::vector<QuotaOp>*>& checks, const std::string& at);

// The statement's result as text cells: rows, and the cell at (row, column).
struct Rows {
  size_t count = 0;
  std::function<std::string_view(size_t row, size_t column)> cell;
};

// Each check's replies from the statement's rows, `sizes` being each check's number of ops; an
// error when the rows are not what the statement returns.
Result<std::vector<std::vector<QuotaReply>>> SplitReplies(const Rows& rows,
                                                          const std::vector<size_t>& sizes);

// `bytes` as bytea's hex form, without the leading "\x".
std::string Hex(std::string_view bytes);

// The quota a change notice names (sluice_quota_set_v2's "<bucket>:<hex value>"), or none when
// the payload is not one.
std::optional<std::pair<std::string, std::string>> ChangedQuota(std::string_view payload);

}  // namespace sluice::postgres
