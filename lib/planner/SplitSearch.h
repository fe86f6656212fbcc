//===- SplitSearch.h - The planner's dynamic program ------------*- C++ -*-===//
//
// Private to lib/planner: for one topological order, the exact dynamic
// program over contiguous splits with replicas (Planner.cpp's header comment
// describes it), which planPipeline runs for every order it tries.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_LIB_PLANNER_SPLITSEARCH_H
#define DPC_LIB_PLANNER_SPLITSEARCH_H

#include "dpc/planner/Planner.h"

#include <limits>
#include <vector>

namespace dpc::planner::detail {

constexpr double kInf = std::numeric_limits<double>::infinity();

/// Prefix sums along one order.
struct OrderCosts {
  std::vector<NodeId> order;
  std::vector<double> compute, params, acts; // size n + 1
  /// cut[i]: activation bytes produced before position i and read at or
  /// after it.
  std::vector<double> cut;
  /// Whether a stage may start at position i (everything up to the last
  /// input stays in the first stage); canStart[n] is true.
  std::vector<char> canStart;
  int starts = 0; // positions where a stage may start
};

OrderCosts buildOrderCosts(const Graph &g, const std::vector<NodeId> &order);

/// Inverse bandwidths for a stage of r replicas on ranks a..a+r-1: among
/// its replicas, towards the previous stage's last rank, towards the next
/// stage's first rank; and each rank's device: its speed and the bytes a
/// stage may use on it.
struct Placement {
  int devices;
  std::vector<double> allreduce, recv, send;
  /// Per rank, and speedSum[k] = the speeds of ranks 0..k-1.
  std::vector<double> speed, speedSum, capacity;
  /// Some rank has a finite capacity.
  bool memoryLimited = false;
  /// Capacities come from devices' memory: the least-memory search then
  /// minimises need over capacity instead of bytes.
  bool deviceMemory = false;
  /// Every rank alike: a plan may move by whole groups at no cost.
  bool uniform = true;

  Placement(const Topology &t, const PlannerOptions &opts);
};

enum class Mode {
  /// Minimise the largest stage or transfer time.
  MinMax,
  /// Minimise the sum of stage latencies with every time at most `cap`.
  MinSum,
  /// Minimise the largest per-device memory, ignoring time.
  MinMemory,
};

struct Piece {
  int begin, end, replicas, firstRank;
};

struct Solution {
  double value = kInf;
  std::vector<Piece> pieces;
  bool found() const { return !pieces.empty(); }
};

/// The best split of `oc` into stages under `mode`: MinMax keeps only
/// values below `cap`, MinSum only plans whose every time is at most `cap`
/// (MinMemory ignores it). No pieces when no split meets the constraints.
Solution solve(const OrderCosts &oc, const PlannerOptions &opts,
               const Placement &place, Mode mode, double cap);

Plan toPlan(const OrderCosts &oc, const Solution &sol);

} // namespace dpc::planner::detail

#endif // DPC_LIB_PLANNER_SPLITSEARCH_H
