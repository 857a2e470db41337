// Opens the store a configuration names, for the commands that check requests.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "config/config.h"
#include "http/event_loops.h"
#include "sluice/status.h"
#include "sluice/store.h"
#include "stores/store_kind.h"

namespace sluice::cli {

struct OpenedStore {
  std::shared_ptr<Store> store;
  std::function<bool()> ready;  // whether the store can be reached now
};

// The store `config` names, on a thread of its own when it has connections, given up to its
// connect timeout to become ready (stores::StoreSettings::Open). Fails when the credentials it
// names cannot be read.
Result<OpenedStore> OpenStore(const config::StoreConfig& config);

// The store for each of `loops` (running), on that loop, so that a check never leaves its loop's
// thread (a store without connections, one for them all), waited for as OpenStore's is.
using stores::OpenedStores;
Result<OpenedStores> OpenStores(const config::StoreConfig& config, http::EventLoops& loops);

}  // namespace sluice::cli
