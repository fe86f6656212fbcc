//===- ChooseTest.cpp - --schedule auto's choice of kind ------------------===//
//
// chooseFastestSchedule keeps 1f1b unless zb-h1 simulates a step shorter by
// more than kAutoScheduleMinGain, and never a kind whose ranks exceed the
// memory limit when another fits.
//
//===----------------------------------------------------------------------===//

#include "dpc/schedule/Choose.h"

#include <gtest/gtest.h>

using namespace dpc::schedule;

namespace {

// p stages of equal costs (forward 1, input gradient 1, weight gradient 1
// ms), stage k stashing k + 1 MB per microbatch; one candidate per auto
// kind.
std::vector<BuildOptions> candidates(int p, int m, double weight = 1) {
  std::vector<BuildOptions> all;
  for (ScheduleKind kind : autoScheduleKinds()) {
    BuildOptions options;
    options.kind = kind;
    options.stages = p;
    options.microbatches = m;
    for (int k = 0; k < p; ++k) {
      StageInfo stage;
      stage.forward = stage.backwardInput = 1;
      stage.backwardWeight = weight;
      stage.activationBytes = int64_t(k + 1) << 20;
      options.stageInfo.push_back(stage);
    }
    all.push_back(options);
  }
  return all;
}

ScheduleKind choose(const std::vector<BuildOptions> &all,
                    VerifyOptions memory = {}, SimulateOptions machine = {}) {
  std::string error;
  int chosen = chooseFastestSchedule(all, machine, memory, error);
  EXPECT_EQ(error, "");
  EXPECT_GE(chosen, 0);
  return chosen < 0 ? ScheduleKind::Custom : all[chosen].kind;
}

// The peak memory of each rank of `kind`'s build of `all`.
std::vector<int64_t> peaks(const std::vector<BuildOptions> &all,
                           ScheduleKind kind) {
  std::vector<int64_t> bytes;
  for (const BuildOptions &options : all) {
    if (options.kind != kind)
      continue;
    Schedule built;
    EXPECT_EQ(buildSchedule(options, built), "");
    for (const RankStats &rank : verifySchedule(built).ranks)
      bytes.push_back(rank.peakMemoryBytes);
  }
  return bytes;
}

} // namespace

TEST(ChooseSchedule, AutoChoosesBetween1F1BAndZeroBubble) {
  std::vector<ScheduleKind> kinds = autoScheduleKinds();
  ASSERT_EQ(kinds.size(), 2u);
  EXPECT_EQ(kinds[0], ScheduleKind::OneFOneB);
  EXPECT_EQ(kinds[1], ScheduleKind::ZeroBubbleH1);
}

TEST(ChooseSchedule, ZeroBubbleWhereItFillsTheBubble) {
  // 4 microbatches on 2 stages: zb-h1's deferred weight gradients fill
  // most of 1F1B's bubble.
  EXPECT_EQ(choose(candidates(2, 4)), ScheduleKind::ZeroBubbleH1);
  EXPECT_EQ(choose(candidates(4, 8)), ScheduleKind::ZeroBubbleH1);
}

TEST(ChooseSchedule, OneFOneBWithoutABubble) {
  // One stage has no bubble: the kinds tie and the first is kept.
  EXPECT_EQ(choose(candidates(1, 4)), ScheduleKind::OneFOneB);
  // Weight gradients too small to fill anything: zb-h1 gains less than
  // kAutoScheduleMinGain.
  EXPECT_EQ(choose(candidates(2, 4, /*weight=*/0.001)), ScheduleKind::OneFOneB);
}

TEST(ChooseSchedule, MessagesCostWhatTheyCostInThePrediction) {
  // Weight gradients of 0.2 ms save zb-h1 0.4 ms of 1F1B's 11 (3.6%);
  // 2 ms a message adds 10 ms to both, and 0.4 of 21 is under the 2%.
  std::vector<BuildOptions> all = candidates(2, 4, /*weight=*/0.2);
  SimulateOptions machine;
  EXPECT_EQ(choose(all, {}, machine), ScheduleKind::ZeroBubbleH1);
  machine.latency = 2;
  EXPECT_EQ(choose(all, {}, machine), ScheduleKind::OneFOneB);
}

TEST(ChooseSchedule, RanksSharingTheCoresAsInThePrediction) {
  // On one core both kinds run all the work back to back: zb-h1 has no
  // bubble to fill, and 1f1b is kept.
  std::vector<BuildOptions> all = candidates(2, 4);
  SimulateOptions machine;
  machine.cores = 2;
  EXPECT_EQ(choose(all, {}, machine), ScheduleKind::ZeroBubbleH1);
  machine.cores = 1;
  EXPECT_EQ(choose(all, {}, machine), ScheduleKind::OneFOneB);
}

TEST(ChooseSchedule, OnlyAKindThatFitsTheMemoryLimit) {
  std::vector<BuildOptions> all = candidates(2, 4);
  std::vector<int64_t> oneF = peaks(all, ScheduleKind::OneFOneB);
  std::vector<int64_t> zb = peaks(all, ScheduleKind::ZeroBubbleH1);
  ASSERT_EQ(oneF.size(), 2u);
  ASSERT_EQ(zb.size(), 2u);
  // The last rank keeps a microbatch more for its deferred weight
  // gradient under zb-h1.
  ASSERT_GT(zb[1], oneF[1]);
  int64_t most1F = std::max(oneF[0], oneF[1]);
  int64_t mostZB = std::max(zb[0], zb[1]);
  ASSERT_GT(mostZB, most1F);

  VerifyOptions memory;
  memory.memoryLimit = double(most1F);
  EXPECT_EQ(choose(all, memory), ScheduleKind::OneFOneB);
  memory.memoryLimit = double(mostZB);
  EXPECT_EQ(choose(all, memory), ScheduleKind::ZeroBubbleH1);
  // A rank's own limit (a cluster's device) counts as well.
  memory.memoryLimit = 0;
  memory.rankMemoryLimits = {0, double(oneF[1])};
  EXPECT_EQ(choose(all, memory), ScheduleKind::OneFOneB);
  // Neither fits: the first, whose memory verify-schedule reports.
  memory.rankMemoryLimits.clear();
  memory.memoryLimit = 1;
  EXPECT_EQ(choose(all, memory), ScheduleKind::OneFOneB);
}

TEST(ChooseSchedule, ABuildErrorIsReported) {
  std::vector<BuildOptions> all = candidates(2, 4);
  all[1].replicas = {1, 2, 3}; // not one entry per stage
  std::string error;
  EXPECT_EQ(chooseFastestSchedule(all, {}, {}, error), -1);
  EXPECT_NE(error.find("cannot build the zb-h1 schedule"), std::string::npos)
      << error;
}
