//===- StepMonitorTest.cpp - SlowdownMonitor ------------------------------===//

#include "dpc/runtime/StepMonitor.h"

#include <gtest/gtest.h>

using namespace dpc::runtime;

namespace {

// Two ranks the plan predicts at 1 and 2 ms; the machine runs everything 3x
// slower than the plan, which is no rank's fault.
TEST(SlowdownMonitor, UniformlySlowerMachineIsNotReported) {
  SlowdownMonitor m({1.0, 2.0}, 1.5, 4);
  for (int step = 1; step <= 20; ++step)
    EXPECT_TRUE(m.add(step, {3.0, 6.0}).empty()) << "step " << step;
  EXPECT_DOUBLE_EQ(m.slowdown(0), 1.0);
  EXPECT_DOUBLE_EQ(m.slowdown(1), 1.0);
}

TEST(SlowdownMonitor, ReportsTheSlowedRankOnceWithItsStartAndRecovery) {
  SlowdownMonitor m({1.0, 2.0}, 1.5, 5);
  std::vector<SlowdownEvent> all;
  int64_t reportedAt = -1, recoveredAt = -1;
  for (int step = 1; step <= 30; ++step) {
    // Rank 1 computes 2.5x its share from step 10 to step 19.
    double r1 = step >= 10 && step < 20 ? 5.0 : 2.0;
    for (const SlowdownEvent &e : m.add(step, {1.0, r1})) {
      all.push_back(e);
      (e.slow ? reportedAt : recoveredAt) = step;
    }
  }
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].rank, 1);
  EXPECT_TRUE(all[0].slow);
  EXPECT_DOUBLE_EQ(all[0].slowdown, 2.5);
  EXPECT_DOUBLE_EQ(all[0].measuredMs, 5.0);
  EXPECT_DOUBLE_EQ(all[0].expectedMs, 2.0);
  EXPECT_EQ(all[0].sinceStep, 10);
  // A window of 5: the median turns when 3 of its steps are slow.
  EXPECT_EQ(reportedAt, 12);
  EXPECT_FALSE(all[1].slow);
  EXPECT_EQ(all[1].sinceStep, 20);
  EXPECT_EQ(recoveredAt, 22);
  EXPECT_EQ(formatSlowdown(all[0], 1, 1.5),
            "slow: stage 1 (rank 1) computes 2.5x the plan's share since "
            "step 10 (5.0 ms a step; the plan predicts 2.0 ms at the fastest "
            "rank's pace)");
}

TEST(SlowdownMonitor, OneSlowStepIsNotReported) {
  SlowdownMonitor m({1.0, 1.0}, 1.5, 5);
  for (int step = 1; step <= 20; ++step)
    EXPECT_TRUE(m.add(step, {1.0, step == 7 ? 10.0 : 1.0}).empty());
}

TEST(SlowdownMonitor, BelowTheThresholdIsNotReported) {
  SlowdownMonitor m({1.0, 1.0}, 1.5, 3);
  for (int step = 1; step <= 20; ++step)
    EXPECT_TRUE(m.add(step, {1.0, step > 5 ? 1.4 : 1.0}).empty());
  EXPECT_NEAR(m.slowdown(1), 1.4, 1e-12);
}

// A rank without predicted compute (a stage of no parameters and no ops) is
// never judged, nor used as the pace.
TEST(SlowdownMonitor, RanksWithoutPredictionAreIgnored) {
  SlowdownMonitor m({0.0, 1.0, 1.0}, 1.5, 3);
  for (int step = 1; step <= 10; ++step)
    EXPECT_TRUE(m.add(step, {100.0, 1.0, 1.0}).empty());
  std::vector<SlowdownEvent> e = m.add(11, {100.0, 1.0, 4.0});
  EXPECT_TRUE(e.empty()); // the median of {1, 1, 4}
  e = m.add(12, {100.0, 1.0, 4.0});
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].rank, 2);
  EXPECT_EQ(e[0].sinceStep, 11);
}

// Once slow, a rank recovers only halfway back to its share (1.25x for a
// threshold of 1.5), so one near the threshold is not reported on and off.
TEST(SlowdownMonitor, RecoveryHasHysteresis) {
  SlowdownMonitor m({1.0, 1.0}, 1.5, 1);
  EXPECT_TRUE(m.add(1, {1.0, 1.0}).empty());
  EXPECT_EQ(m.add(2, {1.0, 1.6}).size(), 1u);
  EXPECT_TRUE(m.add(3, {1.0, 1.4}).empty());
  EXPECT_TRUE(m.isSlow(1));
  std::vector<SlowdownEvent> e = m.add(4, {1.0, 1.2});
  ASSERT_EQ(e.size(), 1u);
  EXPECT_FALSE(e[0].slow);
}

// The plan's balance is off (rank 0 takes twice its share from the start):
// the first full window calibrates it, and only a later change is reported.
TEST(SlowdownMonitor, TheFirstWindowCalibratesThePlan) {
  SlowdownMonitor m({1.0, 1.0}, 1.5, 3);
  for (int step = 1; step <= 10; ++step)
    EXPECT_TRUE(m.add(step, {2.0, 1.0}).empty()) << "step " << step;
  EXPECT_DOUBLE_EQ(m.calibration(0), 2.0);
  EXPECT_DOUBLE_EQ(m.calibration(1), 1.0);
  std::vector<SlowdownEvent> e;
  for (int step = 11; step <= 12; ++step)
    e = m.add(step, {2.0, 2.0});
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].rank, 1);
  EXPECT_DOUBLE_EQ(e[0].slowdown, 2.0);
}

// --adapt's trigger: a rank past the threshold for `window` steps in a row,
// at least `interval` steps into the layout, once.
TEST(AdaptTrigger, NeedsTheWholeWindowPastTheThreshold) {
  AdaptTrigger t(1.5, 5, 1, 0);
  // Four slow steps, one back within, then five slow ones: the decision
  // comes at the fifth of those, naming where they began.
  for (int step = 1; step <= 4; ++step)
    EXPECT_FALSE(t.add(step, {1.0, 2.0})) << "step " << step;
  EXPECT_FALSE(t.add(5, {1.0, 1.4}));
  for (int step = 6; step <= 9; ++step)
    EXPECT_FALSE(t.add(step, {1.0, 2.0})) << "step " << step;
  std::optional<AdaptDecision> d = t.add(10, {1.0, 2.5});
  ASSERT_TRUE(d);
  EXPECT_EQ(d->rank, 1);
  EXPECT_DOUBLE_EQ(d->slowdown, 2.5);
  EXPECT_EQ(d->sinceStep, 6);
  // Once only: the ranks stop on it.
  EXPECT_FALSE(t.add(11, {1.0, 3.0}));
}

TEST(AdaptTrigger, AtTheThresholdIsNotPastIt) {
  AdaptTrigger t(1.5, 2, 1, 0);
  for (int step = 1; step <= 10; ++step)
    EXPECT_FALSE(t.add(step, {1.5, 1.0})) << "step " << step;
}

// Before the monitor calibrates (no slowdowns) nothing counts.
TEST(AdaptTrigger, UncalibratedStepsAreSlowForNobody) {
  AdaptTrigger t(1.5, 3, 1, 0);
  EXPECT_FALSE(t.add(1, {1.0, 4.0}));
  EXPECT_FALSE(t.add(2, {1.0, 4.0}));
  EXPECT_FALSE(t.add(3, {}));
  EXPECT_FALSE(t.add(4, {1.0, 4.0}));
  EXPECT_FALSE(t.add(5, {1.0, 4.0}));
  EXPECT_TRUE(t.add(6, {1.0, 4.0}));
}

// The minimum interval counts from the layout's first step: a resumed job
// (after step 40) waits until step 40 + 30, even when slow throughout.
TEST(AdaptTrigger, WaitsTheIntervalFromTheLayoutsStart) {
  AdaptTrigger t(1.5, 4, 30, 40);
  for (int step = 41; step < 70; ++step)
    EXPECT_FALSE(t.add(step, {3.0, 1.0})) << "step " << step;
  std::optional<AdaptDecision> d = t.add(70, {3.0, 1.0});
  ASSERT_TRUE(d);
  EXPECT_EQ(d->rank, 0);
  EXPECT_EQ(d->sinceStep, 41);
}

// A rank that looks slow for fewer steps than the window (the step
// monitor named the wrong stage for a while in bench/interference) does not
// trigger; the persistently slow one does, and of two the slower is named.
TEST(AdaptTrigger, ATransientRankDoesNotTriggerAndTheSlowestIsNamed) {
  AdaptTrigger t(1.5, 6, 1, 0);
  std::optional<AdaptDecision> d;
  int64_t at = 0;
  for (int step = 1; step <= 20 && !d; ++step) {
    double r0 = step <= 5 ? 1.8 : 1.0; // transient
    double r1 = step >= 4 ? 1.6 : 1.0; // persistent from step 4
    double r2 = step >= 4 ? 2.2 : 1.0; // persistent and slower
    d = t.add(step, {r0, r1, r2});
    at = step;
  }
  ASSERT_TRUE(d);
  EXPECT_EQ(at, 9);
  EXPECT_EQ(d->rank, 2);
  EXPECT_EQ(d->sinceStep, 4);
}

} // namespace
