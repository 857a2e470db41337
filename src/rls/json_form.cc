#include "rls/json_form.h"

#include <google/protobuf/util/json_util.h>

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <utility>

namespace sluice::rls {
namespace {

// Reads the form callers send: {"domain": "...", "descriptors": [{"entries": [{"key": "...",
// "value": "..."}, ...]}, ...], "hits_addend" (or "hitsAddend"): N}, with printable ASCII text,
// the escapes \" \\ \/ \b \f \n \r \t, and N in plain decimal within uint32. Says no to anything
// else, which protobuf's converter then reads.
class CommonRequestReader {
 public:
  explicit CommonRequestReader(std::string_view json) : json_(json) {}

  bool Read(RateLimitRequest& request) {
    enum Field { kDomain, kDescriptors, kHitsAddend };
    const bool read =
        Object({{"domain", kDomain},
                {"descriptors", kDescriptors},
                {"hits_addend", kHitsAddend},
                {"hitsAddend", kHitsAddend}},
               [&](int field) {
                 switch (field) {
                   case kDomain:
                     return String(*request.mutable_domain());
                   case kDescriptors:
                     return Array([&] { return Descriptor(*request.add_descriptors()); });
                   default:
                     return Uint32(request);
                 }
               });
    SkipSpace();
    return read && pos_ == json_.size();
  }

 private:
  using RateLimitDescriptor = envoy::extensions::common::ratelimit::v3::RateLimitDescriptor;

  bool Descriptor(RateLimitDescriptor& descriptor) {
    return Object({{"entries", 0}}, [&](int) {
      return Array([&] {
        auto& entry = *descriptor.add_entries();
        return Object({{"key", 0}, {"value", 1}}, [&](int field) {
          return String(field == 0 ? *entry.mutable_key() : *entry.mutable_value());
        });
      });
    });
  }

  // JSON's whitespace: protobuf's parser takes more (\v, \f), left to it.
  void SkipSpace() {
    while (pos_ < json_.size() && (json_[pos_] == ' ' || json_[pos_] == '\n' ||
                                   json_[pos_] == '\r' || json_[pos_] == '\t')) {
      ++pos_;
    }
  }

  bool Consume(char c) {
    SkipSpace();
    if (pos_ == json_.size() || json_[pos_] != c) return false;
    ++pos_;
    return true;
  }

  // An object whose keys are among `fields` (name, field number; two names may share a number),
  // each at most once, every value read by `read(field number)`.
  template <typename ReadField>
  bool Object(std::initializer_list<std::pair<std::string_view, int>> fields, ReadField read) {
    if (!Consume('{')) return false;
    if (Consume('}')) return true;
    unsigned seen = 0;
    std::string key;
    do {
      if (!String(key) || !Consume(':')) return false;
      int field = -1;
      for (const auto& [name, number] : fields) {
        if (name == key) field = number;
      }
      // A repeated key is left to protobuf, which merges or refuses it as it does.
      if (field < 0 || (seen & (1u << field)) != 0) return false;
      seen |= 1u << field;
      SkipSpace();
      if (!read(field)) return false;
    } while (Consume(','));
    return Consume('}');
  }

  template <typename ReadElement>
  bool Array(ReadElement read) {
    if (!Consume('[')) return false;
    if (Consume(']')) return true;
    do {
      SkipSpace();
      if (!read()) return false;
    } while (Consume(','));
    return Consume(']');
  }

  bool String(std::string& out) {
    if (!Consume('"')) return false;
    out.clear();
    while (pos_ < json_.size()) {
      // The run of plain characters up to the next quote or escape, appended at once.
      const size_t start = pos_;
      while (pos_ < json_.size() && Plain(json_[pos_])) ++pos_;
      out.append(json_.substr(start, pos_ - start));
      if (pos_ == json_.size()) return false;
      const char c = json_[pos_++];
      if (c == '"') return true;
      if (c != '\\' || pos_ == json_.size()) return false;  // a control or non-ASCII byte
      switch (json_[pos_++]) {
        case '"':
          out.push_back('"');
          break;
        case '\\':
          out.push_back('\\');
          break;
        case '/':
          out.push_back('/');
          break;
        case 'b':
          out.push_back('\b');
          break;
        case 'f':
          out.push_back('\f');
          break;
        case 'n':
          out.push_back('\n');
          break;
        case 'r':
          out.push_back('\r');
          break;
        case 't':
          out.push_back('\t');
          break;
        default:  // \u, and what JSON does not allow
          return false;
      }
    }
    return false;
  }

  static bool Plain(char c) { return c >= 0x20 && c <= 0x7e && c != '"' && c != '\\'; }

  // hits_addend in plain decimal: no sign, fraction, exponent, quotes or leading zero.
  bool Uint32(RateLimitRequest& request) {
    const size_t start = pos_;
    uint64_t value = 0;
    while (pos_ < json_.size() && json_[pos_] >= '0' && json_[pos_] <= '9') {
      if (pos_ - start == 10) return false;
      value = value * 10 + static_cast<uint64_t>(json_[pos_++] - '0');
    }
    const size_t digits = pos_ - start;
    if (digits == 0 || (digits > 1 && json_[start] == '0') ||
        value > std::numeric_limits<uint32_t>::max()) {
      return false;
    }
    request.set_hits_addend(static_cast<uint32_t>(value));
    return true;
  }

  std::string_view json_;
  size_t pos_ = 0;
};

// Writes the responses Respond and RespondUnchecked make, as protobuf prints them: fields in
// the order of their numbers, those with default values left out. Says no to a field it does
// not write, or text protobuf would escape, which protobuf's printer then prints.
class CommonResponseWriter {
 public:
  bool Write(const RateLimitResponse& response) {
    if (response.request_headers_to_add_size() > 0 || !response.raw_body().empty() ||
        response.has_dynamic_metadata() || response.has_quota()) {
      return false;
    }
    out_.push_back('{');
    bool first = true;
    if (response.overall_code() != 0 &&
        !Enum(first, "overallCode", RateLimitResponse::Code_Name(response.overall_code()))) {
      return false;
    }
    if (!WriteList(first, "statuses", response.statuses(), &CommonResponseWriter::WriteStatus) ||
        !WriteList(first, "responseHeadersToAdd", response.response_headers_to_add(),
                   &CommonResponseWriter::WriteHeader)) {
      return false;
    }
    out_.push_back('}');
    return true;
  }

  std::string Take() { return std::move(out_); }

 private:
  // A repeated field, each element by `write`; left out when empty.
  template <typename Elements, typename WriteElement>
  bool WriteList(bool& first, std::string_view name, const Elements& elements, WriteElement write) {
    if (elements.empty()) return true;
    Name(first, name);
    out_.push_back('[');
    for (int i = 0; i < elements.size(); ++i) {
      if (i > 0) out_.push_back(',');
      if (!(this->*write)(elements.Get(i))) return false;
    }
    out_.push_back(']');
    return true;
  }

  bool WriteHeader(const envoy::config::core::v3::HeaderValue& header) {
    if (!header.raw_value().empty()) return false;
    out_.push_back('{');
    bool first = true;
    if (!header.key().empty() && !Text(first, "key", header.key())) return false;
    if (!header.value().empty() && !Text(first, "value", header.value())) return false;
    out_.push_back('}');
    return true;
  }

  bool WriteStatus(const RateLimitResponse::DescriptorStatus& status) {
    if (status.has_quota()) return false;
    out_.push_back('{');
    bool first = true;
    if (status.code() != 0 && !Enum(first, "code", RateLimitResponse::Code_Name(status.code()))) {
      return false;
    }
    if (status.has_current_limit() && !WriteLimit(first, status.current_limit())) return false;
    if (status.limit_remaining() != 0) Number(first, "limitRemaining", status.limit_remaining());
    if (status.has_duration_until_reset() &&
        !Duration(first, "durationUntilReset", status.duration_until_reset())) {
      return false;
    }
    out_.push_back('}');
    return true;
  }

  bool WriteLimit(bool& first, const RateLimitResponse::RateLimit& limit) {
    Name(first, "currentLimit");
    out_.push_back('{');
    bool first_field = true;
    if (limit.requests_per_unit() != 0) {
      Number(first_field, "requestsPerUnit", limit.requests_per_unit());
    }
    if (limit.unit() != 0 &&
        !Enum(first_field, "unit", RateLimitResponse::RateLimit::Unit_Name(limit.unit()))) {
      return false;
    }
    if (!limit.name().empty() && !Text(first_field, "name", limit.name())) return false;
    out_.push_back('}');
    return true;
  }

  void Name(bool& first, std::string_view name) {
    if (!first) out_.push_back(',');
    first = false;
    out_.push_back('"');
    out_.append(name);
    out_.append("\":");
  }

  void Number(bool& first, std::string_view name, uint32_t value) {
    Name(first, name);
    out_.append(std::to_string(value));
  }

  // An enum value by its name; an unnamed value is printed by protobuf, as a number.
  bool Enum(bool& first, std::string_view name, const std::string& value) {
    return !value.empty() && Text(first, name, value);
  }

  // Text protobuf prints as it is: printable ASCII without the characters it escapes.
  bool Text(bool& first, std::string_view name, std::string_view text) {
    for (const char c : text) {
      if (c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' ||
          c == '\'') {
        return false;
      }
    }
    Name(first, name);
    out_.push_back('"');
    out_.append(text);
    out_.push_back('"');
    return true;
  }

  // A non-negative Duration within protobuf's range, as "S[.fff[fff[fff]]]s".
  bool Duration(bool& first, std::string_view name, const google::protobuf::Duration& duration) {
    constexpr int64_t kMaxSeconds = 315'576'000'000;
    const int64_t seconds = duration.seconds();
    const int32_t nanos = duration.nanos();
    if (seconds < 0 || seconds > kMaxSeconds || nanos < 0 || nanos > 999'999'999) return false;
    Name(first, name);
    out_.push_back('"');
    out_.append(std::to_string(seconds));
    if (nanos != 0) {
      // As few digits as protobuf prints: 3, 6 or 9.
      int digits = 9;
      int32_t fraction = nanos;
      if (nanos % 1'000'000 == 0) {
        digits = 3;
        fraction = nanos / 1'000'000;
      } else if (nanos % 1'000 == 0) {
        digits = 6;
        fraction = nanos / 1'000;
      }
      const std::string text = std::to_string(fraction);
      out_.push_back('.');
      out_.append(static_cast<size_t>(digits) - text.size(), '0');
      out_.append(text);
    }
    out_.append("s\"");
    return true;
  }

  std::string out_;
};

}  // namespace

Status ParseRateLimitRequestJson(std::string_view json, RateLimitRequest& request) {
  if (CommonRequestReader(json).Read(request)) return {};
  request.Clear();
  const auto parsed = google::protobuf::util::JsonStringToMessage(json, &request);
  if (!parsed.ok()) return Status::InvalidArgument(std::string(parsed.message()));
  return {};
}

std::string RateLimitResponseJson(const RateLimitResponse& response) {
  CommonResponseWriter writer;
  if (writer.Write(response)) return writer.Take();
  std::string json;
  (void)google::protobuf::util::MessageToJsonString(response, &json);
  return json;
}

}  // namespace sluice::rls
