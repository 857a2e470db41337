// A Redis Cluster node's answers about the cluster: CLUSTER SHARDS and CLUSTER SLOTS (the slot
// map) and MOVED/ASK redirections, as RESP bytes through hiredis's reader. A node can be
// misconfigured, or not what it claims to be.
#include <hiredis/hiredis.h>

#include <cstddef>
#include <cstdint>

#include "reply.h"
#include "topology.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  sluice::redis::ReaderPtr reader(redisReaderCreate());
  if (redisReaderFeed(reader.get(), reinterpret_cast<const char*>(data), size) != REDIS_OK) {
    return 0;
  }
  for (;;) {
    void* raw = nullptr;
    if (redisReaderGetReply(reader.get(), &raw) != REDIS_OK || raw == nullptr) break;
    const sluice::redis::ReplyPtr reply(static_cast<redisReply*>(raw));
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
