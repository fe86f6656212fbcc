//===- CostModel.h - PipeDream's cost model, exactly ------------*- C++ -*-===//
//
// What a pipeline plan costs. The model is PipeDream's with one correction:
// a cut between stages carries every activation produced at or before it and
// read after it (skip connections included), not only the output of the node
// before the cut. docs/PLANNER.md states every formula; the optimizer and the
// evaluator share the functions below so that a plan the optimizer returns is
// costed by exactly the arithmetic it was chosen with.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_PLANNER_COSTMODEL_H
#define DPC_PLANNER_COSTMODEL_H

#include "dpc/planner/Graph.h"

#include <optional>
#include <string>
#include <vector>

namespace dpc::planner {

/// Devices in nested groups, innermost level first: {4, 4} is four groups of
/// four devices. Ranks are numbered so that a level-l group is a contiguous
/// block of ranks. Communication among a set of ranks runs at the bandwidth
/// of the smallest group that holds them all.
struct Topology {
  std::vector<int> levelSizes = {1};
  std::vector<double> bandwidths = {1e9}; // bytes per second, per level

  static Topology flat(int devices, double bandwidth = 1e9);
  int devices() const;
  /// Bandwidth among the ranks first..last (inclusive, any order).
  double bandwidth(int first, int last) const;
  /// A rank shift that maps every group onto a group of the same level (the
  /// size of the largest proper group); 1 for a flat topology.
  int alignment() const;
};

enum class ScheduleKind { PipeDream, GPipe, OneFOneB };
const char *scheduleName(ScheduleKind kind);
bool parseScheduleKind(const std::string &text, ScheduleKind &kind);
/// The optimizer state per parameter of "sgd" (1: momentum), "adam" or
/// "adamw" (2: two moments), as CostOptions::optimizerStateFactor; false
/// otherwise.
bool parseOptimizerStateFactor(const std::string &optimizer, double &factor);

struct CostOptions {
  Topology topology;
  ScheduleKind schedule = ScheduleKind::PipeDream;
  int microbatches = 1;
  /// Optimizer state bytes per parameter byte (1 for SGD with momentum, 2 for
  /// Adam).
  double optimizerStateFactor = 1;
  /// ZeRO stage 1 (dpc compile --shard-optimizer): each of a stage's R
  /// replicas keeps 1/R of the optimizer state.
  bool shardOptimizer = false;
  /// Bytes a transfer carries per activation byte: 0.5 when activations and
  /// their gradients cross stages as bf16 (dpc compile --precision bf16).
  /// Memory still counts the f32 buffers.
  double transferFactor = 1;
  /// Relative speed of the device at each rank (a cluster's devices in the
  /// planner's order): a stage computes its profiled time over the speed of
  /// its slowest replica, since the runtime gives every replica an equal
  /// share of the microbatches. Empty: every device at speed 1.
  std::vector<double> rankSpeeds;
};

/// A plan: stages in pipeline order, each a set of nodes on `replicas`
/// consecutive ranks starting at `firstRank`.
struct StagePlan {
  std::vector<NodeId> nodes;
  int replicas = 1;
  int firstRank = 0;
};

struct Plan {
  std::vector<StagePlan> stages;
};

/// Costs of one stage, seconds and bytes per device.
struct StageCost {
  double computeSeconds = 0; // (compute + allreduce) / replicas
  double recvSeconds = 0;    // its share of the cut before it
  double sendSeconds = 0;    // its share of the cut after it
  double memoryBytes = 0;    // peak per device
  int inFlight = 1;          // microbatches whose activations it stashes
  double time() const;       // the largest of the three times
  /// Time one microbatch spends in the stage, counting half of each adjacent
  /// cut (the other half is charged to the neighbour).
  double latency() const {
    return computeSeconds + 0.5 * (recvSeconds + sendSeconds);
  }
};

struct Evaluation {
  std::vector<StageCost> stages;
  std::vector<double> cutBytes; // A_cut after stage s, s = 0..S-2
  double bottleneckSeconds = 0;
  double stepSeconds = 0;
  double bubbleFraction = 0;
  double peakMemoryBytes = 0;
  int usedDevices = 0;
};

/// The per-term formulas, shared with the optimizer.
double stageComputeSeconds(double computeSeconds, double parameterBytes,
                           int replicas, double allreduceBandwidth,
                           double speed = 1);
/// The speed of the slowest of ranks first..first+replicas-1.
double stageSpeed(const CostOptions &options, int first, int replicas);
double cutSeconds(double cutBytes, int replicas, double bandwidth);
int stageInFlight(const CostOptions &options, int replicas,
                  int devicesFromHere);
/// Resident bytes per parameter byte on each of a stage's `replicas`:
/// weights, gradients and the optimizer state (its 1/R share when sharded).
double stageStateFactor(const CostOptions &options, int replicas);
double stageMemoryBytes(const CostOptions &options, double parameterBytes,
                        double activationBytes, int inFlight, int replicas = 1);
/// Step time and bubble fraction of the schedule for the given stage costs.
void predictStep(const CostOptions &options, Evaluation &eval);

/// Costs `plan` on `graph`. Throws dpc::Error when the plan is not a valid
/// pipeline: a node missing or in two stages, an edge that goes backwards,
/// an input outside the first stage, ranks that overlap or leave the
/// topology, or rank speeds that do not match the topology's devices.
Evaluation evaluate(const Graph &graph, const Plan &plan,
                    const CostOptions &options);

/// evaluate for the plans the planner's search builds itself: nullopt where
/// evaluate would throw.
std::optional<Evaluation> evaluateIfValid(const Graph &graph, const Plan &plan,
                                          const CostOptions &options);

} // namespace dpc::planner

#endif // DPC_PLANNER_COSTMODEL_H
