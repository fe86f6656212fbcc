//===- StepPlanner.h - Microbatches and schedule of each step ---*- C++ -*-===//
//
// A variable-length build (dpc compile --seq-buckets) carries code for
// several microbatch shapes. Before each training step every rank takes
// the step's samples from the same sampler, reads their lengths from the
// same data, groups the samples into microbatches, gives each microbatch
// the cheapest compiled shape that holds it, and builds and verifies the
// step's schedule for exactly those microbatches. The planner is
// deterministic, so the ranks agree on the plan without exchanging it.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_RUNTIME_STEPPLANNER_H
#define DPC_RUNTIME_STEPPLANNER_H

#include "dpc/runtime/Executor.h"
#include "dpc/runtime/Manifest.h"
#include "dpc/schedule/Schedule.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dpc::runtime {

/// How a step's samples become microbatches (`--microbatching`).
enum class MicrobatchingMode {
  /// Sorted by length, split by dynamic programming over the buckets'
  /// costs into the microbatches the simulated step is shortest with
  /// (planner::planMicrobatches).
  Planned,
  /// The sampler's microbatches, every one padded to the step's longest
  /// sequence: what pipelines with one static shape do.
  Padded,
  /// Sorted by length and cut into the schedule.json's number of
  /// microbatches of equal size, each padded to its own longest.
  Sorted,
};

/// "dp", "padded", "sorted"; nullopt for anything else.
std::optional<MicrobatchingMode> parseMicrobatchingMode(const std::string &);
const char *microbatchingModeName(MicrobatchingMode mode);

/// A bucket's cost on one stage as the schedule library takes it.
schedule::StageInfo stageInfo(const BucketStageCost &cost);

/// What one step's plan looks like, for the progress output and metrics.
struct StepPlanSummary {
  /// Per microbatch in schedule order: its bucket's batch and length, the
  /// samples it holds and their real tokens.
  struct Microbatch {
    int64_t batch = 0, length = 0, samples = 0, tokens = 0;
  };
  std::vector<Microbatch> microbatches;
  int64_t tokens = 0;
  /// Tokens the buckets compute, padding included.
  int64_t paddedTokens = 0;
  /// The simulated step under the buckets' stage costs (milliseconds).
  double predictedMs = 0;
  /// Wall time of planning: grouping, schedule building and verification.
  double planMs = 0;

  /// "12 microbatches (8x16 x3, 4x32 x7, 1x64 x2), padding 3.1%".
  std::string describe() const;
};

class StepPlanner {
public:
  /// `fixed` is schedule.json's schedule: its kind, stages and chunks are
  /// kept, and its microbatch count is the padded and sorted baselines'.
  /// `memoryLimit` (bytes a rank may hold, `dpc compile --memory-limit`;
  /// 0: none) bounds the planned microbatches' activations, and every
  /// step's schedule is verified against it. Throws Error when the manifest
  /// has no buckets, the schedule kind cannot take a variable number of
  /// microbatches, or the limit does not hold a stage's parameters.
  StepPlanner(const RankManifest &manifest, const schedule::Schedule &fixed,
              MicrobatchingMode mode, double memoryLimit = 0);

  /// Plans the step whose samples (in sampler order) have these lengths.
  /// Throws Error when a sequence fits no bucket or the schedule cannot be
  /// built or verified.
  StepPlan plan(const std::vector<int64_t> &samples,
                const std::vector<int64_t> &lengths,
                StepPlanSummary &summary) const;

  /// The cheapest bucket holding `samples` sequences of `length` tokens at
  /// most, or -1.
  int bucketFor(int64_t samples, int64_t length) const;
  /// Milliseconds a microbatch of bucket `b` takes on its slowest stage.
  double bucketCost(int b) const { return costs[size_t(b)]; }

private:
  /// The phases of plan(). The step's `n` samples as groups of positions,
  /// in the order the schedule runs them, by `mode`.
  std::vector<std::vector<int64_t>>
  groupSamples(size_t n, const std::vector<int64_t> &seqLengths) const;
  /// Gives each group the cheapest bucket that holds it (every group padded
  /// to `longest` when padded); fills the plan's microbatches and the
  /// summary and returns the buckets used, in schedule order.
  std::vector<int>
  assignBuckets(const std::vector<std::vector<int64_t>> &groups,
                const std::vector<int64_t> &samples,
                const std::vector<int64_t> &seqLengths, int64_t longest,
                StepPlan &plan, StepPlanSummary &summary) const;
  /// Builds, verifies and simulates the schedule for exactly the
  /// microbatches of `plan`, whose buckets are `used`.
  void buildStepSchedule(const std::vector<int> &used, StepPlan &plan,
                         StepPlanSummary &summary) const;

  const RankManifest &manifest;
  const schedule::Schedule &fixed;
  MicrobatchingMode mode;
  double memoryLimit = 0;
  /// The most bytes any stage keeps resident for the whole step.
  double residentBytes = 0;
  std::vector<double> costs;
  /// Per bucket: the most activation bytes one microbatch stashes on any
  /// stage.
  std::vector<double> activationBytes;
  /// Bucket lengths, ascending and distinct; best[l][k]: the cheapest
  /// bucket of at least lengths[l] tokens and k sequences (k from 1).
  std::vector<int64_t> lengths;
  std::vector<std::vector<int>> best;
  /// capacity[l]: the most sequences of lengths[l] tokens any bucket holds.
  std::vector<int64_t> capacity;
};

} // namespace dpc::runtime

#endif // DPC_RUNTIME_STEPPLANNER_H
