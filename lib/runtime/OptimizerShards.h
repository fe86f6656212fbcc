//===- OptimizerShards.h - Which replica updates which elements -*- C++ -*-===//
//
// ZeRO stage 1 (`dpc compile --shard-optimizer`): the replicas of a stage
// split its optimizer state and its update. The stage's parameters, in
// manifest order, are laid end to end as one flat vector; replica r of R
// owns the contiguous range [total * r / R, total * (r + 1) / R) of it (the
// ranges differ by at most one element) and keeps the optimizer state of
// that range only. A parameter may be split between replicas, and a replica
// may own no element of a parameter at all.
//
// The arithmetic is all here, free of devices and communicators, so that a
// test can check it on its own; ParamStore applies it.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_LIB_RUNTIME_OPTIMIZERSHARDS_H
#define DPC_LIB_RUNTIME_OPTIMIZERSHARDS_H

#include <cstddef>
#include <vector>

namespace dpc::runtime {

/// Elements [begin, end) of a flat vector or of one parameter.
struct ElementRange {
  size_t begin = 0, end = 0;
  size_t size() const { return end - begin; }
  bool empty() const { return begin == end; }
  bool operator==(const ElementRange &o) const {
    return begin == o.begin && end == o.end;
  }
};

class OptimizerShards {
public:
  /// `counts`: each parameter's elements, in manifest order. One replica
  /// (the default) owns everything.
  OptimizerShards() = default;
  OptimizerShards(std::vector<size_t> counts, int replica, int replicas);

  int replica() const { return self; }
  int replicas() const { return count; }
  /// Whether the state is split at all (more than one replica).
  bool sharded() const { return count > 1; }
  size_t total() const { return offsets.empty() ? 0 : offsets.back(); }

  /// Replica `r`'s range of the flat vector.
  ElementRange range(int r) const;
  /// Every replica's range size, in replica order (a collective's counts).
  std::vector<size_t> rangeSizes() const;
  /// Where parameter `param` starts in the flat vector.
  size_t offset(size_t param) const { return offsets[param]; }
  /// The elements of parameter `param`, relative to its first one, that
  /// replica `r` owns (this replica's when `r` is left out).
  ElementRange owned(size_t param, int r) const;
  ElementRange owned(size_t param) const { return owned(param, self); }

  /// The most elements any replica of `replicas` owns of `total`: what a
  /// replica's state is planned at.
  static size_t largestRange(size_t total, int replicas);

private:
  std::vector<size_t> offsets{0}; // offsets[k]: parameter k's first element
  int self = 0, count = 1;
};

} // namespace dpc::runtime

#endif // DPC_LIB_RUNTIME_OPTIMIZERSHARDS_H
