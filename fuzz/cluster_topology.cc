// A Redis Cluster node's answers about the cluster: CLUSTER SHARDS and CLUSTER SLOTS (the slot
// map) and MOVED/ASK redirections, as RESP bytes through the ReplyReader (RespScanner's bounds,
// then hiredis's reader, as RedisLink reads them). A node can be misconfigured, or not what it
// claims to be.
#include <hiredis/hiredis.h>

#include <cstddef>
#include <cstdint>
#include <utility>

#include "reply.h"
#include "reply_reader.h"
#include "topology.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  sluice::redis::ReplyReader reader;
  if (!reader.Feed(reinterpret_cast<const char*>(data), size).ok()) return 0;
  for (;;) {
    sluice::Result<sluice::redis::ReplyPtr> next = reader.Next();
    if (!next.ok() || *next == nullptr) break;
    const sluice::redis::ReplyPtr reply = std::move(next).value();
    (void)sluice::cluster::ParseClusterShards(*reply, "10.0.0.1", /*tls=*/false);
    (void)sluice::cluster::ParseClusterShards(*reply, "10.0.0.1", /*tls=*/true);
    (void)sluice::cluster::ParseClusterSlots(*reply, "10.0.0.1");
    if (sluice::redis::IsError(*reply)) {
      (void)sluice::cluster::ParseRedirect(sluice::redis::Text(*reply));
      (void)sluice::cluster::IsTransientClusterError(sluice::redis::Text(*reply));
    }
  }
  return 0;
}
