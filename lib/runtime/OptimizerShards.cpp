//===- OptimizerShards.cpp - Which replica updates which elements ---------===//

#include "OptimizerShards.h"

#include "dpc/runtime/Error.h"

#include <algorithm>
#include <string>

namespace dpc::runtime {

OptimizerShards::OptimizerShards(std::vector<size_t> counts, int replica,
                                 int replicas)
    : self(replica), count(replicas) {
  if (replicas < 1 || replica < 0 || replica >= replicas)
    throw Error("optimizer shards: replica " + std::to_string(replica) +
                " of " + std::to_string(replicas));
  offsets.assign(1, 0);
  for (size_t n : counts)
    offsets.push_back(offsets.back() + n);
}

ElementRange OptimizerShards::range(int r) const {
  // total * r / R without overflow for any size_t total and int R.
  auto cut = [&](int k) {
    size_t t = total(), q = t / size_t(count), rem = t % size_t(count);
    return q * size_t(k) + rem * size_t(k) / size_t(count);
  };
  return {cut(r), cut(r + 1)};
}

std::vector<size_t> OptimizerShards::rangeSizes() const {
  std::vector<size_t> sizes;
  for (int r = 0; r < count; ++r)
    sizes.push_back(range(r).size());
  return sizes;
}

ElementRange OptimizerShards::owned(size_t param, int r) const {
  ElementRange mine = range(r);
  size_t first = offsets[param], last = offsets[param + 1];
  size_t begin = std::clamp(mine.begin, first, last);
  size_t end = std::clamp(mine.end, first, last);
  return {begin - first, end - first};
}

size_t OptimizerShards::largestRange(size_t total, int replicas) {
  if (replicas < 1)
    return total;
  return (total + size_t(replicas) - 1) / size_t(replicas);
}

} // namespace dpc::runtime
