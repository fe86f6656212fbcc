//===- Builder.h - Pipeline schedule builders -------------------*- C++ -*-===//
//
// Builds the per-rank instruction streams of gpipe, 1f1b, pipedream,
// interleaved, zb-h1 and zb-2p. Each builder only decides the order of the
// compute work on every rank; one shared lowering then adds the transfers,
// stashes, weight versions and optimizer steps, so that every kind obeys the
// same communication discipline (see docs/SCHEDULES.md).
//
//===----------------------------------------------------------------------===//

#ifndef DPC_SCHEDULE_BUILDER_H
#define DPC_SCHEDULE_BUILDER_H

#include "dpc/schedule/Schedule.h"

#include <string>
#include <vector>

namespace dpc::schedule {

struct BuildOptions {
  ScheduleKind kind = ScheduleKind::OneFOneB;
  /// Pipeline ranks (p).
  int stages = 1;
  /// Microbatches per minibatch (m); for pipedream, the window length.
  int microbatches = 1;
  /// Model chunks per rank (v); only interleaved accepts more than 1.
  int virtualStages = 1;
  /// PipeDream: every stage uses the weight version stage 0 used for the
  /// same microbatch.
  bool verticalSync = false;
  /// Ranks per stage (`stages` entries), or empty for one each. A stage
  /// with more than one splits its microbatches round-robin over them and
  /// all-reduces the gradients before the update; synchronous kinds only.
  std::vector<int> replicas;
  /// How the replicas reduce; preduce needs one stage with replicas.
  ReduceMode reduce = ReduceMode::AllReduce;
  /// Per virtual stage (stages * virtualStages entries), or one entry used
  /// for all, or empty for unit costs and zero sizes.
  std::vector<StageInfo> stageInfo;
};

/// Builds the schedule; throws dpc::Error saying what is wrong (bad options,
/// such as interleaved with m not a multiple of p).
Schedule buildSchedule(const BuildOptions &options);

/// One unit of compute in a rank's order, before lowering.
struct Work {
  /// Forward, Backward, BackwardInput, BackwardWeight, or OptimizerStep
  /// (pipedream's per-microbatch update).
  Op op = Op::Forward;
  int mb = 0;
  int chunk = 0;
};

/// Lowers per-rank compute orders into full instruction streams: loads,
/// transfers, stashes, weight versions and optimizer steps. `schedule` must
/// have its header and stages set. Exposed for tests and for planners that
/// produce their own orders; throws dpc::Error saying why the orders cannot
/// run (a rank waits for an input that its producer's order never yields).
void lowerSchedule(Schedule &schedule,
                   const std::vector<std::vector<Work>> &order);

} // namespace dpc::schedule

#endif // DPC_SCHEDULE_BUILDER_H
