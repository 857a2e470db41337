#include "core/algorithm_kind.h"

#include "common/registry.h"

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
  // Listed in the order of Algorithm's values (tests/core/algorithm_kinds_test.cc holds them to
  // it), so that the lookup on every check is an index.
  const std::vector<AlgorithmKind>& kinds = AlgorithmKinds();
  const auto index = static_cast<size_t>(algorithm);
  return index < kinds.size() ? kinds[index] : kinds.front();
}

const AlgorithmKind* AlgorithmNamed(std::string_view name) {
  return FindNamed(AlgorithmKinds(), &AlgorithmKind::name, name);
}

}  // namespace sluice
