//===- MicrobatchingTest.cpp - Variable-length microbatches ---------------===//

#include "dpc/planner/Microbatching.h"
#include "test/unittests/runtime/ErrorOf.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

using namespace dpc::planner;
using dpc::errorOf;

namespace {

// Attention-like: linear and quadratic in the length, a fixed launch cost
// per microbatch; activations linear in tokens.
SequenceCost attentionCost() {
  SequenceCost cost;
  cost.computeMs = [](int64_t samples, int64_t length) {
    double s = double(samples), l = double(length);
    return 0.05 + 1e-3 * s * l + 2e-6 * s * l * l;
  };
  cost.activationBytes = [](int64_t samples, int64_t length) {
    return 1024.0 * double(samples) * double(length);
  };
  return cost;
}

// Every split of the sorted lengths into runs within the limits: the
// modelled time of the best, and the simulated time of that split run in
// either order.
struct Brute {
  double modelled = INFINITY;
  double simulated = INFINITY;
};

Brute bruteForce(std::vector<int64_t> lengths, const SequenceCost &cost,
                 const MicrobatchingOptions &options) {
  std::sort(lengths.begin(), lengths.end());
  size_t n = lengths.size();
  double perMicrobatch = options.memoryLimitBytes > 0
                             ? options.memoryLimitBytes / options.stages
                             : INFINITY;
  Brute best;
  std::vector<double> bestTimes;
  for (uint64_t cuts = 0; cuts < (uint64_t(1) << (n - 1)); ++cuts) {
    std::vector<double> times;
    bool feasible = true;
    size_t begin = 0;
    for (size_t j = 1; j <= n && feasible; ++j) {
      if (j < n && !(cuts >> (j - 1) & 1))
        continue;
      int64_t size = int64_t(j - begin);
      feasible = size <= options.maxSamples &&
                 cost.activationBytes(size, lengths[j - 1]) <= perMicrobatch;
      times.push_back(cost.computeMs(size, lengths[j - 1]));
      begin = j;
    }
    if (!feasible)
      continue;
    double sum = std::accumulate(times.begin(), times.end(), 0.0);
    double longest = *std::max_element(times.begin(), times.end());
    double modelled = sum + (options.stages - 1) * longest;
    if (modelled < best.modelled) {
      best.modelled = modelled;
      bestTimes = times;
    }
  }
  if (bestTimes.empty())
    return best;
  for (bool reversed : {false, true}) {
    Microbatching plan;
    plan.computeMs = bestTimes;
    if (reversed)
      std::reverse(plan.computeMs.begin(), plan.computeMs.end());
    plan.microbatches.resize(plan.computeMs.size());
    best.simulated =
        std::min(best.simulated, simulateMicrobatching(plan, options.stages));
  }
  return best;
}

TEST(Microbatching, FindsTheModelsBestSplitOnSmallMinibatches) {
  // With every candidate bound tried, the split that minimises the model
  // (the sum plus (stages - 1) times the longest) is among the plans the
  // simulator judges, so the plan is at least as fast as it.
  std::mt19937 gen(7);
  SequenceCost cost = attentionCost();
  for (int trial = 0; trial < 300; ++trial) {
    int n = 1 + int(gen() % 10);
    std::vector<int64_t> lengths(n);
    for (int64_t &l : lengths)
      l = 1 + int64_t(gen() % 400);
    MicrobatchingOptions options;
    options.stages = 1 + int(gen() % 4);
    options.maxSamples = 1 + int64_t(gen() % 6);
    options.memoryLimitBytes =
        trial % 3 == 0 ? 0 : options.stages * 1024.0 * 600 * (1 + gen() % 3);
    options.bounds = 1000; // every candidate
    Microbatching plan;
    Brute want = bruteForce(lengths, cost, options);
    std::string error =
        errorOf([&] { plan = planMicrobatches(lengths, cost, options); });
    ASSERT_EQ(error.empty(), std::isfinite(want.modelled))
        << "trial " << trial << ": " << error;
    if (!error.empty())
      continue;
    EXPECT_GE(plan.predictedMs, want.modelled * (1 - 1e-12));
    EXPECT_LE(plan.simulatedMs, want.simulated * (1 + 1e-12))
        << "trial " << trial;
    // The planner's own 1F1B timing is the schedule simulator's.
    EXPECT_NEAR(plan.simulatedMs, simulateMicrobatching(plan, options.stages),
                1e-9 * plan.simulatedMs);
    // Every sequence in exactly one microbatch, within the limits.
    std::vector<int> seen(n, 0);
    for (size_t k = 0; k < plan.microbatches.size(); ++k) {
      EXPECT_LE(int64_t(plan.microbatches[k].size()), options.maxSamples);
      for (int64_t i : plan.microbatches[k]) {
        ++seen[i];
        EXPECT_LE(lengths[i], plan.paddedLength[k]);
      }
    }
    EXPECT_TRUE(
        std::all_of(seen.begin(), seen.end(), [](int c) { return c == 1; }));
  }
}

TEST(Microbatching, EqualMicrobatchesSimulateAsModelled) {
  // Equal microbatches on 4 stages: 1F1B takes (m + p - 1) microbatch
  // times, which is the model's sum plus (p - 1) times the longest.
  std::vector<int64_t> lengths(32, 128);
  Microbatching plan = padMicrobatches(lengths, 8, attentionCost(), 4);
  ASSERT_EQ(plan.microbatches.size(), 8u);
  EXPECT_NEAR(simulateMicrobatching(plan, 4), plan.predictedMs,
              1e-9 * plan.predictedMs);
  EXPECT_DOUBLE_EQ(plan.paddingOverhead, 0);
}

TEST(Microbatching, BeatsPaddedMicrobatchesOnALongTail) {
  // 512 sequences with lengths from a long-tailed (log-normal) law, as in
  // real corpora; the padded baseline splits them in their order into 8.
  std::mt19937 gen(11);
  std::lognormal_distribution<double> law(4.5, 0.8);
  std::vector<int64_t> lengths(512);
  for (int64_t &l : lengths)
    l = std::clamp<int64_t>(int64_t(law(gen)), 1, 2048);
  SequenceCost cost = attentionCost();
  MicrobatchingOptions options;
  options.stages = 4;
  options.maxSamples = 128;
  options.memoryLimitBytes = 4 * 1024.0 * 64 * 2048; // 64 of the longest
  Microbatching plan;
  ASSERT_EQ(errorOf([&] { plan = planMicrobatches(lengths, cost, options); }),
            "");
  Microbatching padded = padMicrobatches(lengths, 8, cost, 4);
  double ours = plan.simulatedMs;
  double theirs = simulateMicrobatching(padded, 4);
  ASSERT_GT(ours, 0);
  EXPECT_LT(ours, 0.5 * theirs) << "dp " << ours << " ms, padded " << theirs;
  EXPECT_LT(plan.paddingOverhead, padded.paddingOverhead);
}

TEST(Microbatching, KeepsEveryMicrobatchWithinItsCapacity) {
  // Compiled shapes hold 256 tokens: 2 sequences of 128, 4 of 64, ...
  SequenceCost cost = attentionCost();
  cost.capacity = [](int64_t length) {
    int64_t rounded = 1;
    while (rounded < length)
      rounded *= 2;
    return rounded > 256 ? 0 : 256 / rounded;
  };
  MicrobatchingOptions options;
  options.stages = 2;
  std::vector<int64_t> lengths = {3, 5, 7, 9, 30, 31, 60, 64, 65, 100, 128};
  for (int i = 0; i < 40; ++i)
    lengths.push_back(1 + i % 16);
  Microbatching plan;
  ASSERT_EQ(errorOf([&] { plan = planMicrobatches(lengths, cost, options); }),
            "");
  for (size_t k = 0; k < plan.microbatches.size(); ++k)
    EXPECT_LE(int64_t(plan.microbatches[k].size()),
              cost.capacity(plan.paddedLength[k]))
        << "microbatch " << k;
  EXPECT_EQ(errorOf([&] { planMicrobatches({10, 300}, cost, options); }),
            "a sequence of 300 tokens fits no microbatch shape");
}

TEST(Microbatching, RefusesWhatCannotRun) {
  SequenceCost cost = attentionCost();
  MicrobatchingOptions options;
  options.stages = 2;
  options.memoryLimitBytes = 2 * 1024.0 * 100; // 100 tokens a microbatch
  Microbatching plan;
  EXPECT_EQ(errorOf([&] { planMicrobatches({50, 150}, cost, options); }),
            "a sequence of 150 tokens alone needs more activation memory "
            "than a 2-stage 1F1B pipeline leaves a microbatch under the "
            "memory limit");
  EXPECT_EQ(errorOf([&] { planMicrobatches({50, 0}, cost, options); }),
            "sequence 1 has length 0; lengths must be positive");
  // Within the limit, two 50-token sequences may share a microbatch but no
  // third joins them.
  ASSERT_EQ(
      errorOf([&] { plan = planMicrobatches({50, 50, 50}, cost, options); }),
      "");
  for (const auto &mb : plan.microbatches)
    EXPECT_LE(mb.size(), 2u);
}

} // namespace
