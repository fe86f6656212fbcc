//===- StepMonitor.h - Slow stages against the plan -------------*- C++ -*-===//
//
// Every rank measures, per training step, the time its segments compute
// (Forward, Backward, BackwardInput, BackwardWeight: what the schedule's
// stage costs predict) and the time it is blocked waiting for messages
// (receives, sends, the replicas' allreduce). The last stage gathers them
// each step and feeds a SlowdownMonitor, which says when a rank computes
// slower than the plan predicts for it, and since which step.
//
// The planner's cost model predicts the stages' compute relative to each
// other well but not its absolute scale on every machine (its CPU estimates
// can be several times off), so the monitor compares each rank with the
// plan's balance: a rank's slowdown is its measured/predicted ratio divided
// by the smallest such ratio of any rank. A rank slowed by a co-located job
// stands out; a machine uniformly slower than the model says does not.
// Each ratio uses the median of the rank's last `window` steps, so one slow
// step (a page fault, a scheduler hiccup) is not reported.
//
// Nor is the model's balance between stages exact (LeNet-5's first stage
// takes 1.6x its predicted share on the CPU), so the first full window
// calibrates it: each rank's prediction is scaled by the slowdown measured
// there, and only a change after it is reported. A rank that is slow from
// the first window on is therefore not reported (planning for uneven
// devices is the planner's part).
//
//===----------------------------------------------------------------------===//

#ifndef DPC_RUNTIME_STEPMONITOR_H
#define DPC_RUNTIME_STEPMONITOR_H

#include "dpc/runtime/Communicator.h"

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

namespace dpc::runtime {

/// One rank's times over one training step, in milliseconds.
struct StepTimes {
  double computeMs = 0;
  double waitMs = 0;
  double stepMs = 0;
  /// Of the step, how long the rank waited for its microbatches' inputs:
  /// the loader threads' queue not ready (Loader.h), or a synchronous
  /// gather. 0 on ranks that read no inputs.
  double loadMs = 0;
};

/// Collects every rank's times of the step just run on rank `root`, indexed
/// by rank (others get an empty result): one message of four doubles from
/// each rank, on a control tag. Every rank calls it after each step. The
/// root waits for the slowest rank to end the step, which a flushed
/// (synchronous) schedule's next step would wait for anyway.
std::vector<StepTimes> gatherStepTimes(Communicator &comm, int root,
                                       const StepTimes &mine);

/// A change the monitor reports: a rank became slow (its window's median
/// past the threshold), or recovered (halfway back to its share).
struct SlowdownEvent {
  int rank = 0;
  bool slow = false; // false: back within the threshold
  /// The rank's slowdown against the plan's balance (median over the
  /// window), and its median compute time and the plan's prediction scaled
  /// to the fastest rank's pace.
  double slowdown = 1;
  double measuredMs = 0, expectedMs = 0;
  /// The first step (from 1) of the run of steps that were each past the
  /// threshold (slow), or within it (recovered), up to now.
  int64_t sinceStep = 0;
};

class SlowdownMonitor {
public:
  /// `predictedMs`: each rank's predicted compute per step (ranks with 0, or
  /// no compute, are never judged). `threshold` > 1.
  SlowdownMonitor(std::vector<double> predictedMs, double threshold,
                  int window = 16);

  /// Records the compute times of `step` (from 1), one per rank; returns
  /// the ranks that became slow or recovered with this step.
  std::vector<SlowdownEvent> add(int64_t step,
                                 const std::vector<double> &computeMs);

  /// The current slowdown of `rank` (1 until the window has steps).
  double slowdown(int rank) const;
  /// The factor on `rank`'s predicted compute that the first full window
  /// measured (1 before it, and for an exact plan).
  double calibration(int rank) const { return calibrationOf[rank]; }
  bool isSlow(int rank) const { return ranks[rank].slow; }
  /// Whether the first full window has calibrated the plan's balance; the
  /// slowdowns mean a change during the run only from then on.
  bool isCalibrated() const { return calibrated; }

private:
  struct RankState {
    std::deque<double> recent;
    bool slow = false;
    /// First step of the current run of steps past (or within) the
    /// threshold; -1 before any.
    int64_t streakStart = -1;
    bool streakSlow = false;
  };
  double median(int rank) const;
  /// The smallest measured/predicted ratio over the judged ranks (window
  /// medians), or 0 when there is none.
  double pace() const;

  std::vector<double> predicted;
  double threshold;
  size_t window;
  std::vector<RankState> ranks;
  bool calibrated = false;
  std::vector<double> calibrationOf;
};

/// What AdaptTrigger decides: re-partition because `rank` has computed
/// more than the threshold times its share in every step since `sinceStep`.
struct AdaptDecision {
  int rank = 0;
  /// The rank's slowdown at the decision (the monitor's window median).
  double slowdown = 1;
  int64_t sinceStep = 0;
};

/// `dpc run --adapt`'s trigger, on the last stage beside the monitor: a
/// re-partition pays for a checkpoint, a compilation and a relaunch, so it
/// is asked for only when a rank's slowdown (SlowdownMonitor::slowdown: its
/// compute, never its waits, against the calibrated plan) has stayed above
/// `threshold` for `window` steps in a row, and at least `interval` steps
/// after the layout started (the launch, or the last re-partition). The
/// window is on top of the monitor's own median: a rank that another one's
/// burst makes look slow for a few steps (the step monitor named the wrong
/// stage for some 20 steps in bench/interference) does not trigger one.
/// When several ranks qualify, the slowest is named.
class AdaptTrigger {
public:
  /// `firstStep`: the steps the layout starts after (0, or the step a
  /// resumed run starts after).
  AdaptTrigger(double threshold, int64_t window, int64_t interval,
               int64_t firstStep);

  /// Records the slowdowns of `step` (from 1), one per rank; an empty list
  /// (the monitor has not calibrated yet) is a step slow for nobody.
  /// Returns the decision once, at the first step that qualifies.
  std::optional<AdaptDecision> add(int64_t step,
                                   const std::vector<double> &slowdowns);

private:
  double threshold;
  int64_t window, interval, firstStep;
  /// Per rank: consecutive steps above the threshold up to the last one.
  std::vector<int64_t> streak;
  bool decided = false;
};

/// "stage 1 (rank 1) computes 3.1x the plan's share since step 12 (9.8 ms a
/// step; the plan predicts 3.2 ms at the fastest rank's pace)", or "stage 1
/// (rank 1) is back within 1.5x of the plan's share since step 40".
std::string formatSlowdown(const SlowdownEvent &event, int stage,
                           double threshold);

} // namespace dpc::runtime

#endif // DPC_RUNTIME_STEPMONITOR_H
