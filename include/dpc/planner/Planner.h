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
};

/// Plans `graph`. Fails (with a message for the user) when the graph is
/// cyclic, when more stages are asked for than there are nodes or devices,
/// or when no plan fits the memory limit; the last message gives the
/// smallest limit that admits a plan.
Expected<PlanResult> planPipeline(const Graph &graph,
                                  const PlannerOptions &options);

/// The exact part of the planner, exposed for tests: the best plan whose
/// stages are contiguous runs of `order` (a topological order with the
/// graph's inputs first), under `options` (refine and the order search are
/// not used). Fails when no split meets the constraints.
Expected<PlanResult> partitionOrder(const Graph &graph,
                                    const std::vector<NodeId> &order,
                                    const PlannerOptions &options);

/// The topological orders the planner starts from (deduplicated).
std::vector<std::vector<NodeId>> candidateOrders(const Graph &graph);

/// Every topological order with inputs first, or none when there are more
/// than `limit`.
std::vector<std::vector<NodeId>> allTopologicalOrders(const Graph &graph,
                                                      size_t limit);

} // namespace dpc::planner

#endif // DPC_PLANNER_PLANNER_H
