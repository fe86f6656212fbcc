//===- LrScheduleTest.cpp - --lr-schedule's learning rates ----------------===//
//
// Points of each torch.optim.lr_scheduler kind that follow from its
// definition by hand (the e2e test lr-schedule.test holds whole runs against
// PyTorch's own schedulers), the chaining of phases, and the refusals.
//
//===----------------------------------------------------------------------===//

#include "dpc/runtime/LrSchedule.h"
#include "dpc/support/Error.h"

#include <gtest/gtest.h>

#include <cmath>

namespace dpc::runtime {
namespace {

LrSchedule parsed(const std::string &text) {
  try {
    return LrSchedule::parse(text);
  } catch (const InputError &e) {
    ADD_FAILURE() << e.what();
    return LrSchedule();
  }
}

std::string problemOf(const std::string &text) {
  try {
    LrSchedule::parse(text);
  } catch (const InputError &e) {
    return e.what();
  }
  ADD_FAILURE() << text << " parsed";
  return "";
}

TEST(LrSchedule, EmptyIsTheBaseAtEveryUpdate) {
  LrSchedule schedule = parsed("");
  EXPECT_TRUE(schedule.isConstant());
  EXPECT_EQ(schedule.at(0.1, 0), 0.1);
  EXPECT_EQ(schedule.at(0.1, 12345), 0.1);
}

TEST(LrSchedule, ConstantScalesTheBase) {
  EXPECT_DOUBLE_EQ(parsed("constant:factor=0.5").at(0.2, 7), 0.1);
}

TEST(LrSchedule, WarmupRisesLinearlyFromZeroAndHolds) {
  LrSchedule s = parsed("warmup:steps=4");
  EXPECT_DOUBLE_EQ(s.at(1.0, 0), 0.0);
  EXPECT_DOUBLE_EQ(s.at(1.0, 1), 0.25);
  EXPECT_DOUBLE_EQ(s.at(1.0, 3), 0.75);
  EXPECT_DOUBLE_EQ(s.at(1.0, 4), 1.0);
  EXPECT_DOUBLE_EQ(s.at(1.0, 40), 1.0);
}

TEST(LrSchedule, LinearTakesTorchsDefaultStart) {
  // LinearLR's start_factor defaults to 1/3.
  EXPECT_DOUBLE_EQ(parsed("linear:steps=5").at(3.0, 0), 1.0);
  LrSchedule decay = parsed("linear:steps=10,start=1,end=0.1");
  EXPECT_DOUBLE_EQ(decay.at(2.0, 5), 2.0 * 0.55);
  EXPECT_DOUBLE_EQ(decay.at(2.0, 99), 0.2);
}

TEST(LrSchedule, CosineFallsToItsMinimumAtTheEndOfItsPeriod) {
  LrSchedule s = parsed("cosine:steps=8,min=0.01");
  EXPECT_DOUBLE_EQ(s.at(0.5, 0), 0.5);
  EXPECT_DOUBLE_EQ(s.at(0.5, 4), (0.5 + 0.01) / 2);
  EXPECT_NEAR(s.at(0.5, 8), 0.01, 1e-15);
  EXPECT_DOUBLE_EQ(s.at(0.5, 2), 0.01 + 0.49 * (1 + std::cos(M_PI / 4)) / 2);
}

TEST(LrSchedule, StepDecaysEveryNUpdates) {
  LrSchedule s = parsed("step:every=3,gamma=0.5");
  EXPECT_DOUBLE_EQ(s.at(1.0, 2), 1.0);
  EXPECT_DOUBLE_EQ(s.at(1.0, 3), 0.5);
  EXPECT_DOUBLE_EQ(s.at(1.0, 8), 0.25);
  EXPECT_DOUBLE_EQ(parsed("step:every=2").at(1.0, 2), 0.1);
}

TEST(LrSchedule, ExponentialMultipliesEveryUpdate) {
  EXPECT_DOUBLE_EQ(parsed("exponential:gamma=0.9").at(2.0, 3),
                   2.0 * 0.9 * 0.9 * 0.9);
}

TEST(LrSchedule, OneCycleRisesToItsMaximumAndFallsToItsFloor) {
  // 10 updates, 30% warm-up: OneCycleLR's first phase ends at update 2.
  LrSchedule s = parsed("onecycle:steps=10,max=1");
  EXPECT_NEAR(s.at(123.0, 0), 1.0 / 25, 1e-15);
  EXPECT_DOUBLE_EQ(s.at(123.0, 2), 1.0);
  EXPECT_DOUBLE_EQ(s.at(123.0, 9), 1.0 / 25 / 1e4);
  EXPECT_DOUBLE_EQ(s.at(123.0, 1),
                   1.0 + (0.04 - 1.0) / 2 * (std::cos(M_PI * 0.5) + 1));
  LrSchedule linear = parsed("onecycle:steps=10,max=1,anneal=linear,div=10");
  EXPECT_DOUBLE_EQ(linear.at(1.0, 1), 0.1 + 0.9 * 0.5);
}

TEST(LrSchedule, PhasesRunOneAfterAnotherFromTheirOwnStart) {
  LrSchedule s = parsed("warmup:steps=2+cosine:steps=4,min=0");
  EXPECT_DOUBLE_EQ(s.at(1.0, 0), 0.0);
  EXPECT_DOUBLE_EQ(s.at(1.0, 1), 0.5);
  EXPECT_DOUBLE_EQ(s.at(1.0, 2), 1.0);
  EXPECT_DOUBLE_EQ(s.at(1.0, 4), 0.5);
  EXPECT_NEAR(s.at(1.0, 6), 0.0, 1e-15);
  EXPECT_EQ(s.getPhases().size(), 2u);
}

TEST(LrSchedule, RefusesWhatIsNotASchedule) {
  EXPECT_EQ(problemOf("cosine"), "--lr-schedule: phase 1 ('cosine'): cosine "
                                 "needs steps=T");
  EXPECT_EQ(problemOf("warmup:steps=2+poly:steps=3"),
            "--lr-schedule: phase 2 ('poly:steps=3'): unknown schedule "
            "'poly' (constant, linear, warmup, cosine, step, exponential or "
            "onecycle)");
  EXPECT_EQ(problemOf("step:every=2+constant"),
            "--lr-schedule: phase 1 ('step:every=2'): every phase but the "
            "last needs steps=T");
  EXPECT_EQ(problemOf("cosine:steps=10,gamma=2"),
            "--lr-schedule: phase 1 ('cosine:steps=10,gamma=2'): cosine "
            "takes steps=T, min=..., not 'gamma=2'");
  EXPECT_EQ(problemOf("cosine:steps=1.5"),
            "--lr-schedule: phase 1 ('cosine:steps=1.5'): cosine's steps "
            "expects a positive whole number");
  EXPECT_EQ(problemOf("cosine:steps=x"),
            "--lr-schedule: phase 1 ('cosine:steps=x'): cosine's steps "
            "expects a number, not 'x'");
  EXPECT_NE(problemOf("onecycle:steps=10").find("needs max=LR"),
            std::string::npos);
  EXPECT_NE(problemOf("onecycle:steps=3,max=1").find("at least 2 updates"),
            std::string::npos);
  EXPECT_NE(problemOf("step:every=2,gamma=0").find("gamma must be positive"),
            std::string::npos);
}

} // namespace
} // namespace dpc::runtime
