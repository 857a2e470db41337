#include "core/algorithm_kind.h"

#include <algorithm>

namespace sluice {

const std::vector<AlgorithmKind>& AlgorithmKinds() {
  static const std::vector<AlgorithmKind> kinds = {
      TokenBucketAlgorithm(),
      GcraAlgorithm(),
      FixedWindowAlgorithm(),
  };
  return kinds;
}

const AlgorithmKind& AlgorithmOf(Algorithm algorithm) {
  const std::vector<AlgorithmKind>& kinds = AlgorithmKinds();
  const auto kind = std::find_if(kinds.begin(), kinds.end(),
                                 [&](const AlgorithmKind& k) { return k.id == algorithm; });
  return kind == kinds.end() ? kinds.front() : *kind;
}

const AlgorithmKind* AlgorithmNamed(std::string_view name) {
  const std::vector<AlgorithmKind>& kinds = AlgorithmKinds();
  const auto kind = std::find_if(kinds.begin(), kinds.end(),
                                 [&](const AlgorithmKind& k) { return k.name == name; });
  return kind == kinds.end() ? nullptr : &*kind;
}

}  // namespace sluice
