#include "script_with_clock.h"

#include <stdexcept>

#include "sluice/redis_store.h"

namespace sluice::testing {
namespace {

void Swap(std::string& script, const std::string& from, const std::string& to) {
  const size_t at = script.find(from);
  if (at == std::string::npos) throw std::runtime_error("no longer in the script: " + from);
  script.replace(at, from.size(), to);
}

}  // namespace

std::string ScriptWithClockFromArguments(Algorithm algorithm, BucketLayout layout) {
  std::string script(BucketScript(algorithm, layout));
  Swap(script, "redis.call('TIME')", "{ARGV[#ARGV - 1], ARGV[#ARGV]}");
  Swap(script, "local flags = ARGV[4 * n + 1]",
       "local flags = #ARGV == 4 * n + 3 and ARGV[4 * n + 1] or nil");
  switch (algorithm) {
    case Algorithm::kTokenBucket:
      if (layout == BucketLayout::kCompact) {  // kept when full, as PEXPIRE's swap keeps it
        Swap(script, "if ttl <= 0 then return redis.call('DEL', key) end", "");
        Swap(script, "redis.call('SET', key, struct.pack('<dd', state[1], state[2]), 'PX', ttl)",
             "redis.call('SET', key, struct.pack('<dd', state[1], state[2])); "
             "redis.call('SET', key .. ':ttl', ttl)");
      } else {
        Swap(script, "redis.call('PEXPIRE', key,", "redis.call('HSET', key, 'ttl',");
      }
      break;
    case Algorithm::kGcra:
      Swap(script, "redis.call('SET', key, tat, 'PX', ttl)",
           "redis.call('SET', key, tat); redis.call('SET', key .. ':ttl', ttl)");
      break;
    case Algorithm::kFixedWindow:
      Swap(script, "redis.call('PEXPIRETIME', key)", "tonumber(redis.call('GET', key .. ':end'))");
      Swap(script, "redis.call('SET', key, count, 'PXAT', window_end)",
           "redis.call('SET', key, count); redis.call('SET', key .. ':end', window_end)");
      break;
  }
  return script;
}

}  // namespace sluice::testing
