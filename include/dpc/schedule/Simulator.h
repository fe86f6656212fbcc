//===- Simulator.h - Predicted timelines of a pipeline schedule -*- C++ -*-===//
//
// Times every instruction of every rank from per-stage costs and a simple
// link model, with the runtime's non-blocking transfer semantics. The result
// is the predicted step time, the bubble fraction and a timeline that the
// trace and SVG writers render.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_SCHEDULE_SIMULATOR_H
#define DPC_SCHEDULE_SIMULATOR_H

#include "dpc/schedule/Schedule.h"
#include "dpc/schedule/Timeline.h"

#include <string>
#include <vector>

namespace dpc::schedule {

struct SimulateOptions {
  /// Per-transfer latency in milliseconds.
  double latency = 0;
  /// Bytes per millisecond; 0 means transfers take only the latency.
  double bandwidth = 0;
  /// Cost of one OptimizerStep of one chunk, and of one AllReduce.
  double optimizerStep = 0;
  double allReduce = 0;
  /// Cores the ranks share; 0 (or at least the ranks) means a core each.
  /// With fewer, the ranks computing at a moment share the cores equally.
  int cores = 0;
  /// With fewer cores than ranks: milliseconds from the start of a transfer
  /// that a rank waiting for it (asleep on a shared core) takes at least to
  /// resume; `dpc profile` measures it on the ranks sharing the cores.
  double wakeLatency = 0;
  /// Record the per-instruction timeline (off for sweeps).
  bool recordTimeline = true;
  /// Also time this many steps back to back, as the runtime runs them (no
  /// barrier between steps: a rank starts its next step's stream when it
  /// finishes this one's), for SimulateResult::steadyStepTime.
  int steps = 1;
};

/// The steps SimulateOptions::steps takes where a prediction is compared
/// with measured steps. The first and the last are not typical: the first
/// fills the pipeline, and on shared cores its last ranks compete with the
/// next step's first; the last has no next step to compete with. The mean
/// of the three periods between the four others is the prediction.
constexpr int kSteadyStateSteps = 6;

struct SimulateResult {
  /// Time when the last rank finishes its stream.
  double stepTime = 0;
  /// With SimulateOptions::steps > 1: the mean time between the ends of
  /// consecutive back-to-back steps, the first and the last left out: the
  /// step time of a long run (a rank's next step overlaps its peers' tails
  /// of this one). stepTime otherwise.
  double steadyStepTime = 0;
  /// Sum over ranks of time spent computing (F, B, W, optimizer, allreduce).
  double busyTime = 0;
  /// idle / (ranks * stepTime), idle = ranks * stepTime - busyTime.
  double bubbleFraction = 0;
  std::vector<double> rankBusy;
  std::vector<double> rankEnd;
  /// start/end of every instruction, per rank, parallel to the streams.
  std::vector<std::vector<double>> start, end;
  /// Compute spans and transfer spans, ready for the trace writers.
  Timeline timeline;
};

/// The machine a build predicted `schedule` on, as schedule.json records
/// it: the measured message and wake-up latencies and the shared cores.
SimulateOptions recordedMachine(const Schedule &schedule);

/// Simulates the schedule; throws dpc::Error saying what stops it (a
/// deadlock, which the verifier reports in more detail).
SimulateResult simulateSchedule(const Schedule &schedule,
                                const SimulateOptions &options);

} // namespace dpc::schedule

#endif // DPC_SCHEDULE_SIMULATOR_H
