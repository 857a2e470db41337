#include "quota_batch.h"

#include <charconv>

namespace sluice::postgres {

const char* const kTakeStatement =
    "SELECT fits, charged, used, window_start_ms, window_end_ms, now_ms "
    "FROM sluice_quota_take_v2($1::integer[], $2::text[], $3::bytea[], $4::bigint[], "
    "$5::bigint[], $6::text[], $7::bigint[], $8::boolean[], $9::timestamptz)";

namespace {

constexpr char kHexDigits[] = "0123456789abcdef";

// Appends one element to an array literal ("{" opened by the caller), quoted: '"' and '\' are
// escaped, so that any text is one element.
void AppendQuoted(std::string& array, std::string_view text) {
  if (array.size() > 1) array += ',';
  array += '"';
  for (char c : text) {
    if (c == '"' || c == '\\') array += '\\';
    array += c;
  }
  array += '"';
}

void AppendNumber(std::string& array, int64_t number) {
  if (array.size() > 1) array += ',';
  array += std::to_string(number);
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool ParseInt(std::string_view text, int64_t& out) {
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), out);
  return error == std::errc() && end == text.data() + text.size();
}

}  // namespace

std::string Hex(std::string_view bytes) {
  std::string hex;
  hex.reserve(bytes.size() * 2);
  for (char c : bytes) {
    const auto byte = static_cast<unsigned char>(c);
    hex += kHexDigits[byte >> 4];
    hex += kHexDigits[byte & 0xf];
  }
  return hex;
}

std::vector<std::optional<std::string>> TakeParameters(
    const std::vector<const std::vector<QuotaOp>*>& checks, const std::string& at) {
  std::string requests = "{", buckets = "{", values = "{", limits = "{", costs = "{", periods = "{",
              durations = "{", enforced = "{";
  for (size_t check = 0; check < checks.size(); ++check) {
    for (const QuotaOp& op : *checks[check]) {
      AppendNumber(requests, static_cast<int64_t>(check) + 1);
      AppendQuoted(buckets, op.bucket);
      // bytea's hex input, "\x..."; the array literal's quoting doubles the backslash.
      AppendQuoted(values, "\\x" + Hex(op.value));
      AppendNumber(limits, op.limit);
      AppendNumber(costs, op.cost);
      AppendQuoted(periods, CalendarPeriodName(op.window.calendar));
      AppendNumber(durations,
                   op.window.calendar == CalendarPeriod::kNone ? op.window.duration_ms : 0);
      if (enforced.size() > 1) enforced += ',';
      enforced += op.enforced ? 't' : 'f';
    }
  }
  std::vector<std::optional<std::string>> params;
  for (std::string* array :
       {&requests, &buckets, &values, &limits, &costs, &periods, &durations, &enforced}) {
    *array += '}';
    params.emplace_back(std::move(*array));
  }
  params.emplace_back(at.empty() ? std::nullopt : std::optional<std::string>(at));
  return params;
}

Result<std::vector<std::vector<QuotaReply>>> SplitReplies(const Rows& rows,
                                                          const std::vector<size_t>& sizes) {
  size_t expected = 0;
  for (size_t size : sizes) expected += size;
  if (rows.count != expected) {
    return Status::StoreError("the quota statement answered " + std::to_string(rows.count) +
                              " rows for " + std::to_string(expected) + " quotas");
  }
  std::vector<std::vector<QuotaReply>> replies;
  replies.reserve(sizes.size());
  size_t row = 0;
  for (size_t size : sizes) {
    std::vector<QuotaReply>& check = replies.emplace_back();
    check.reserve(size);
    for (size_t i = 0; i < size; ++i, ++row) {
      QuotaReply reply;
      const std::string_view fits = rows.cell(row, 0);
      const std::string_view charged = rows.cell(row, 1);
      if ((fits != "t" && fits != "f") || (charged != "t" && charged != "f") ||
          !ParseInt(rows.cell(row, 2), reply.used) ||
          !ParseInt(rows.cell(row, 3), reply.window_start_ms) ||
          !ParseInt(rows.cell(row, 4), reply.window_end_ms) ||
          !ParseInt(rows.cell(row, 5), reply.now_ms)) {
        return Status::StoreError("the quota statement answered a malformed row");
      }
      reply.allowed = fits == "t";
      reply.charged = charged == "t";
      check.push_back(reply);
    }
  }
  return replies;
}

std::optional<std::pair<std::string, std::string>> ChangedQuota(std::string_view payload) {
  const size_t colon = payload.find(':');
  if (colon == std::string_view::npos || colon == 0) return std::nullopt;
  const std::string_view hex = payload.substr(colon + 1);
  if (hex.size() % 2 != 0) return std::nullopt;
  std::string value;
  value.reserve(hex.size() / 2);
  for (size_t i = 0; i < hex.size(); i += 2) {
    const int high = HexValue(hex[i]);
    const int low = HexValue(hex[i + 1]);
    if (high < 0 || low < 0) return std::nullopt;
    value += static_cast<char>(high * 16 + low);
  }
  return std::pair(std::string(payload.substr(0, colon)), std::move(value));
}

}  // namespace sluice::postgres
