//===- Planner.h - Stage partitioning with replicas -------------*- C++ -*-===//
//
// Chooses stages (sets of nodes), their order and their replica counts so
// that the pipeline's bottleneck, or a synchronous schedule's step time, is
// as small as the cost model allows on the given devices and memory.
//
// The search: a handful of topological orders of the DAG (orders that keep
// branches together, so that few activations cross a cut), for each an exact
// dynamic program over contiguous splits with replicas and device placement,
// then a local refinement that moves nodes across the chosen cuts. Small
// graphs try every topological order, which makes the result optimal over
// all valid stage assignments. docs/PLANNER.md states the guarantees.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_PLANNER_PLANNER_H
#define DPC_PLANNER_PLANNER_H

#include "dpc/planner/Cluster.h"
#include "dpc/planner/CostModel.h"
#include "dpc/planner/Graph.h"

#include <string>
#include <vector>

namespace dpc::planner {

enum class Objective {
  /// The slowest stage or transfer: PipeDream's steady-state throughput.
  Bottleneck,
  /// Sum of stage latencies plus (microbatches - 1) times the bottleneck:
  /// the step time of a synchronous schedule (Alpa's formula).
  Step,
};
const char *objectiveName(Objective objective);

struct PlannerOptions {
  CostOptions cost;
  /// No replicas: every stage on one device.
  bool straight = false;
  /// Exactly this many stages; 0 lets the planner choose.
  int stages = 0;
  /// Bytes per device; 0 for no limit.
  double memoryLimitBytes = 0;
  /// A cluster's devices, one per rank of `cost.topology` in its order (the
  /// groups of a level are contiguous runs of them); empty: every device
  /// alike, at speed 1 with `memoryLimitBytes`. A device's memory, where
  /// given, limits the stages on it (and `memoryLimitBytes` all of them).
  /// The planner chooses which devices run which stage (see
  /// docs/PLANNER.md); `cost.rankSpeeds` is its own.
  std::vector<Device> devices;
  /// With a flat topology, all distinct orders of `devices` are tried when
  /// there are at most this many (and their work stays small), which makes
  /// the plan optimal over every assignment of stages to devices.
  int deviceOrderLimit = 720;
  Objective objective = Objective::Bottleneck;
  /// Graphs with at most this many topological orders are planned over all
  /// of them (exact over every valid stage assignment); 0 disables it.
  int exhaustiveOrderLimit = 720;
  /// Move nodes across the chosen cuts after the dynamic program.
  bool refine = true;
  /// Relative grid step of the step-time search (see docs/PLANNER.md).
  double stepGrid = 0.01;
};

struct PlanResult {
  Plan plan;
  Evaluation evaluation;
  /// How many distinct topological orders the dynamic program ran on.
  int ordersTried = 0;
  /// Whether every topological order was tried.
  bool exhaustive = false;
  /// With `PlannerOptions::devices`: the index into it of the device at
  /// each rank of the plan, how many device orders were planned, and
  /// whether they were all the distinct ones.
  std::vector<int> rankDevices;
  int deviceOrdersTried = 0;
  bool allDeviceOrders = false;
};

/// Plans `graph`. Throws dpc::InputError when the graph is cyclic, when
/// more stages are asked for than there are nodes or devices, or when no
/// plan fits the memory limit; the last message gives the smallest limit
/// that admits a plan.
PlanResult planPipeline(const Graph &graph, const PlannerOptions &options);

/// The exact part of the planner, exposed for tests: the best plan whose
/// stages are contiguous runs of `order` (a topological order with the
/// graph's inputs first), under `options` (refine and the order search are
/// not used; `options.devices` are taken in their order). Throws
/// dpc::InputError when no split meets the constraints.
PlanResult partitionOrder(const Graph &graph, const std::vector<NodeId> &order,
                          const PlannerOptions &options);

/// The topological orders the planner starts from (deduplicated).
std::vector<std::vector<NodeId>> candidateOrders(const Graph &graph);

/// The orders of `devices` (rank -> index into `devices`) the planner tries
/// on `topology`: with one level, every distinct order (devices of equal
/// speed and memory are interchangeable) when there are at most `limit`;
/// otherwise the given order, fastest first and slowest first (within each
/// innermost group for a hierarchical topology). `all` tells which.
std::vector<std::vector<int>> deviceOrders(const std::vector<Device> &devices,
                                           const Topology &topology,
                                           double limit, bool &all);

/// Every topological order with inputs first, or none when there are more
/// than `limit`.
std::vector<std::vector<NodeId>> allTopologicalOrders(const Graph &graph,
                                                      size_t limit);

} // namespace dpc::planner

#endif // DPC_PLANNER_PLANNER_H
