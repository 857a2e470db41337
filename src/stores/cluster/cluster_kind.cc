// `store: {type: cluster, nodes: [...]}`: a Redis Cluster, one Redis store per primary on each
// event loop.
#include "stores/cluster/cluster_kind.h"

namespace sluice::stores {
namespace {

std::shared_ptr<const StoreSettings> ParseCluster(const config::YamlField& f) {
  if (!f.Has("nodes")) f.Fail("a cluster store needs nodes: [host:port, ...]");
  ClusterOptions cluster;
  cluster.seeds = ParseAddresses(f["nodes"], "node");
  ParseCredentials(f, "", cluster.username, cluster.password, cluster.password_file);
  if (f.Has("tls")) cluster.tls = ParseTls(f["tls"]);
  ParseTimings(f, cluster);
  if (f.Has("refresh_interval")) cluster.refresh_interval = f["refresh_interval"].Duration();
  if (cluster.refresh_interval.count() == 0) f["refresh_interval"].Fail("must be more than 0");
  return std::make_shared<ClusterSettings>(std::move(cluster));
}

// cluster://host:port[,host:port...]: the seed nodes.
Result<YAML::Node> ClusterFields(std::string_view url) {
  url.remove_prefix(std::string_view("cluster://").size());
  YAML::Node fields;
  fields["nodes"] = YAML::Node(YAML::NodeType::Sequence);
  while (!url.empty()) {
    const size_t comma = url.find(',');
    fields["nodes"].push_back(std::string(url.substr(0, comma)));
    url = comma == std::string_view::npos ? "" : url.substr(comma + 1);
  }
  return fields;
}

}  // namespace

StoreKind ClusterStoreKind() {
  return {.type = "cluster",
          .fields = {"nodes", "username", "password", "password_file", "tls", "mode", "layout",
                     "timeout", "connect_timeout", "max_in_flight", "refresh_interval"},
          .parse = ParseCluster,
          .url_schemes = {"cluster://"},
          .url_fields = ClusterFields};
}

}  // namespace sluice::stores
