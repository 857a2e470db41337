// Opens the store a configuration names, for the commands that check requests.
#pragma once

#include <functional>
#include <memory>

#include "config/config.h"
#include "sluice/store.h"

namespace sluice::cli {

struct OpenedStore {
  std::shared_ptr<Store> store;
  std::function<bool()> ready;  // whether the store can be reached now
};

// A memory store, or a Redis store given up to its connect timeout to become ready; an
// unreachable Redis is logged, and checks follow the failure policy until it answers.
OpenedStore OpenStore(const config::StoreConfig& config);

}  // namespace sluice::cli
