//===- StepPlanner.cpp - Microbatches and schedule of each step -----------===//
//
// The runtime side of variable-length microbatching: bucket costs from the
// manifest, the grouping (planner::planMicrobatches or a baseline), the
// step's schedule from the schedule library, verified before it runs.
//
//===----------------------------------------------------------------------===//

#include "dpc/runtime/StepPlanner.h"

#include "dpc/planner/Microbatching.h"
#include "dpc/runtime/Error.h"
#include "dpc/schedule/Builder.h"
#include "dpc/schedule/Simulator.h"
#include "dpc/schedule/Verifier.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>

namespace dpc::runtime {

std::optional<MicrobatchingMode>
parseMicrobatchingMode(const std::string &name) {
  for (MicrobatchingMode mode :
       {MicrobatchingMode::Planned, MicrobatchingMode::Padded,
        MicrobatchingMode::Sorted})
    if (name == microbatchingModeName(mode))
      return mode;
  return std::nullopt;
}

const char *microbatchingModeName(MicrobatchingMode mode) {
  switch (mode) {
  case MicrobatchingMode::Planned:
    return "dp";
  case MicrobatchingMode::Padded:
    return "padded";
  case MicrobatchingMode::Sorted:
    return "sorted";
  }
  return "?";
}

schedule::StageInfo stageInfo(const BucketStageCost &cost) {
  schedule::StageInfo info;
  info.forward = cost.forward;
  info.backwardInput = cost.backwardInput;
  info.backwardWeight = cost.backwardWeight;
  info.activationBytes = cost.activationBytes;
  info.outputBytes = cost.outputBytes;
  return info;
}

std::string StepPlanSummary::describe() const {
  // Shapes in order of first use, with how many microbatches have each.
  std::vector<std::pair<std::string, int>> shapes;
  for (const Microbatch &mb : microbatches) {
    std::string shape =
        std::to_string(mb.batch) + "x" + std::to_string(mb.length);
    auto it = std::find_if(shapes.begin(), shapes.end(),
                           [&](const auto &s) { return s.first == shape; });
    if (it == shapes.end())
      shapes.emplace_back(shape, 1);
    else
      ++it->second;
  }
  std::string text = std::to_string(microbatches.size()) + " microbatches (";
  for (size_t k = 0; k < shapes.size(); ++k)
    text += (k ? ", " : "") + shapes[k].first + " x" +
            std::to_string(shapes[k].second);
  char tail[160];
  std::snprintf(tail, sizeof tail,
                "), %lld tokens, padding %.1f%%, predicted %.2f ms, planned "
                "in %.3f ms",
                (long long)tokens,
                tokens > 0 ? 100.0 * double(paddedTokens - tokens) /
                                 double(paddedTokens)
                           : 0.0,
                predictedMs, planMs);
  return text + tail;
}

StepPlanner::StepPlanner(const RankManifest &manifest,
                         const schedule::Schedule &fixed,
                         MicrobatchingMode mode, double memoryLimit)
    : manifest(manifest), fixed(fixed), mode(mode), memoryLimit(memoryLimit) {
  if (manifest.buckets.empty())
    throw Error("this build has one microbatch shape; microbatches of "
                "varying length need 'dpc compile --seq-buckets'");
  if (!schedule::isSynchronous(fixed.kind) || fixed.chunks > 1 ||
      fixed.hasReplicas())
    throw Error(std::string("variable-length microbatches need a "
                            "synchronous schedule of one chunk a rank "
                            "without replicas; ") +
                manifest.schedule + " is " + schedule::kindName(fixed.kind) +
                (fixed.hasReplicas() ? " with replicas" : ""));
  for (const schedule::StageInfo &stage : fixed.stages)
    residentBytes = std::max(residentBytes, double(stage.paramBytes));
  if (memoryLimit > 0 && memoryLimit <= residentBytes)
    throw Error("the memory limit of " + std::to_string(int64_t(memoryLimit)) +
                " bytes does not hold a stage's " +
                std::to_string(int64_t(residentBytes)) +
                " bytes of parameters and optimizer state");
  int64_t maxBatch = 0;
  for (const ManifestBucket &b : manifest.buckets) {
    double slowest = 0, stashed = 0;
    for (const BucketStageCost &c : b.stageCosts) {
      slowest =
          std::max(slowest, c.forward + c.backwardInput + c.backwardWeight);
      stashed = std::max(stashed, double(c.activationBytes));
    }
    costs.push_back(slowest);
    activationBytes.push_back(stashed);
    lengths.push_back(b.length);
    maxBatch = std::max(maxBatch, b.batch);
  }
  std::sort(lengths.begin(), lengths.end());
  lengths.erase(std::unique(lengths.begin(), lengths.end()), lengths.end());
  // Equal costs (an uncalibrated model) prefer the fewest padded tokens.
  auto better = [&](int a, int b) {
    const ManifestBucket &x = manifest.buckets[size_t(a)];
    const ManifestBucket &y = manifest.buckets[size_t(b)];
    if (costs[size_t(a)] != costs[size_t(b)])
      return costs[size_t(a)] < costs[size_t(b)];
    return x.batch * x.length < y.batch * y.length;
  };
  best.assign(lengths.size(), std::vector<int>(size_t(maxBatch) + 1, -1));
  for (size_t l = 0; l < lengths.size(); ++l)
    for (int64_t k = 1; k <= maxBatch; ++k)
      for (size_t b = 0; b < manifest.buckets.size(); ++b) {
        const ManifestBucket &bucket = manifest.buckets[b];
        if (bucket.length < lengths[l] || bucket.batch < k)
          continue;
        int &slot = best[l][size_t(k)];
        if (slot < 0 || better(int(b), slot))
          slot = int(b);
      }
  for (const std::vector<int> &row : best) {
    int64_t k = maxBatch;
    while (k > 0 && row[size_t(k)] < 0)
      --k;
    capacity.push_back(k);
  }
}

int StepPlanner::bucketFor(int64_t samples, int64_t length) const {
  auto it = std::lower_bound(lengths.begin(), lengths.end(), length);
  if (it == lengths.end() || samples < 1 ||
      samples >= int64_t(best.front().size()))
    return -1;
  return best[size_t(it - lengths.begin())][size_t(samples)];
}

std::vector<std::vector<int64_t>>
StepPlanner::groupSamples(size_t n,
                          const std::vector<int64_t> &seqLengths) const {
  // Groups of positions into the step's samples, in the order the schedule
  // runs them.
  std::vector<std::vector<int64_t>> groups;
  int count = std::max(fixed.microbatches, 1);
  auto cut = [&](const std::vector<int64_t> &order) {
    for (int64_t k = 0, begin = 0; k < count && begin < int64_t(n); ++k) {
      int64_t size = int64_t(n) / count + (k < int64_t(n) % count ? 1 : 0);
      groups.emplace_back(order.begin() + begin, order.begin() + begin + size);
      begin += size;
    }
  };
  switch (mode) {
  case MicrobatchingMode::Planned: {
    planner::SequenceCost cost;
    cost.computeMs = [&](int64_t k, int64_t length) {
      int b = bucketFor(k, length);
      return b < 0 ? std::numeric_limits<double>::infinity() : costs[size_t(b)];
    };
    cost.activationBytes = [&](int64_t k, int64_t length) {
      int b = bucketFor(k, length);
      return b < 0 ? std::numeric_limits<double>::infinity()
                   : activationBytes[size_t(b)];
    };
    cost.capacity = [&](int64_t length) {
      auto it = std::lower_bound(lengths.begin(), lengths.end(), length);
      return it == lengths.end() ? int64_t(0)
                                 : capacity[size_t(it - lengths.begin())];
    };
    planner::MicrobatchingOptions options;
    options.stages = fixed.numStages();
    options.maxSamples = int64_t(best.front().size()) - 1;
    if (memoryLimit > 0)
      options.memoryLimitBytes = memoryLimit - residentBytes;
    try {
      groups =
          planner::planMicrobatches(seqLengths, cost, options).microbatches;
    } catch (const Error &e) {
      throw Error(std::string("microbatching: ") + e.what());
    }
    break;
  }
  case MicrobatchingMode::Padded: {
    std::vector<int64_t> order(n);
    std::iota(order.begin(), order.end(), int64_t(0));
    cut(order);
    break;
  }
  case MicrobatchingMode::Sorted: {
    std::vector<int64_t> order(n);
    std::iota(order.begin(), order.end(), int64_t(0));
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      return seqLengths[size_t(a)] < seqLengths[size_t(b)];
    });
    cut(order);
    break;
  }
  }
  return groups;
}

std::vector<int> StepPlanner::assignBuckets(
    const std::vector<std::vector<int64_t>> &groups,
    const std::vector<int64_t> &samples, const std::vector<int64_t> &seqLengths,
    int64_t longest, StepPlan &plan, StepPlanSummary &summary) const {
  std::vector<int> used;
  for (const std::vector<int64_t> &group : groups) {
    int64_t padTo = 0, tokens = 0;
    for (int64_t i : group) {
      padTo = std::max(padTo, seqLengths[size_t(i)]);
      tokens += seqLengths[size_t(i)];
    }
    if (mode == MicrobatchingMode::Padded)
      padTo = longest;
    int b = bucketFor(int64_t(group.size()), padTo);
    if (b < 0)
      throw Error("microbatching: " + std::to_string(group.size()) +
                  " sequences of up to " + std::to_string(padTo) +
                  " tokens fit no bucket of the build");
    const ManifestBucket &bucket = manifest.buckets[size_t(b)];
    PlannedMicrobatch mb;
    mb.bucket = b;
    for (int64_t i : group)
      mb.samples.push_back(samples[size_t(i)]);
    plan.microbatches.push_back(std::move(mb));
    used.push_back(b);
    summary.microbatches.push_back(
        {bucket.batch, bucket.length, int64_t(group.size()), tokens});
    summary.tokens += tokens;
    summary.paddedTokens += bucket.batch * bucket.length;
  }
  return used;
}

void StepPlanner::buildStepSchedule(const std::vector<int> &used,
                                    StepPlan &plan,
                                    StepPlanSummary &summary) const {
  // The schedule for exactly these microbatches: the stage costs of the
  // top bucket, each microbatch's compute scaled by its bucket's, and for
  // the verifier's memory check the largest activations of the buckets
  // used.
  const int stages = fixed.numStages();
  std::vector<schedule::StageInfo> info;
  const ManifestBucket &top = manifest.buckets[size_t(manifest.topBucket)];
  for (int s = 0; s < stages; ++s) {
    schedule::StageInfo stage = stageInfo(top.stageCosts[size_t(s)]);
    if (size_t(s) < fixed.stages.size()) {
      stage.paramBytes = fixed.stages[size_t(s)].paramBytes;
      stage.weightBytes = fixed.stages[size_t(s)].weightBytes;
      // The longest bucket's inputs and labels, the most a microbatch
      // loads.
      stage.inputBytes = fixed.stages[size_t(s)].inputBytes;
    }
    stage.activationBytes = 0;
    stage.outputBytes = 0;
    for (int b : used) {
      const BucketStageCost &c =
          manifest.buckets[size_t(b)].stageCosts[size_t(s)];
      stage.activationBytes =
          std::max(stage.activationBytes, c.activationBytes);
      stage.outputBytes = std::max(stage.outputBytes, c.outputBytes);
    }
    info.push_back(stage);
  }
  schedule::BuildOptions build;
  build.kind = fixed.kind;
  build.stages = stages;
  build.microbatches = int(plan.microbatches.size());
  build.stageInfo = info;
  try {
    plan.schedule = schedule::buildSchedule(build);
  } catch (const Error &e) {
    throw Error(std::string("cannot build the step's ") +
                schedule::kindName(fixed.kind) + " schedule: " + e.what());
  }
  double topCost = costs[size_t(manifest.topBucket)];
  for (int b : used)
    plan.schedule.microbatchCompute.push_back(
        topCost > 0 ? costs[size_t(b)] / topCost : 1.0);
  schedule::VerifyOptions verify;
  verify.memoryLimit = memoryLimit;
  schedule::VerifyResult verified =
      schedule::verifySchedule(plan.schedule, verify);
  if (!verified.ok())
    throw Error("the step's schedule fails verification: " +
                verified.violations.front().format());
  schedule::SimulateOptions simulate;
  simulate.recordTimeline = false;
  try {
    summary.predictedMs =
        schedule::simulateSchedule(plan.schedule, simulate).stepTime;
  } catch (const Error &) {
    // No prediction for a step the simulator cannot time.
  }
}

StepPlan StepPlanner::plan(const std::vector<int64_t> &samples,
                           const std::vector<int64_t> &seqLengths,
                           StepPlanSummary &summary) const {
  auto started = std::chrono::steady_clock::now();
  summary = StepPlanSummary();
  int64_t longest = 0;
  for (int64_t length : seqLengths)
    longest = std::max(longest, length);
  if (longest > lengths.back())
    throw Error("a sequence of " + std::to_string(longest) +
                " tokens is longer than the longest bucket (" +
                std::to_string(lengths.back()) + ")");
  StepPlan plan;
  std::vector<int> used =
      assignBuckets(groupSamples(samples.size(), seqLengths), samples,
                    seqLengths, longest, plan, summary);
  buildStepSchedule(used, plan, summary);
  summary.planMs = std::chrono::duration<double, std::milli>(
                       std::chrono::steady_clock::now() - started)
                       .count();
  return plan;
}

} // namespace dpc::runtime
