//===- ChooseTest.cpp - --schedule auto's choice of kind ------------------===//
//
// chooseFastestSchedule keeps 1f1b unless zb-h1 or zb-2p simulates a step
// (back to back, as the runtime runs them) shorter by more than
// kAutoScheduleMinGain, and never a kind whose ranks exceed the memory limit
// when another fits.
//
//===----------------------------------------------------------------------===//

#include "dpc/schedule/Choose.h"
#include "test/unittests/schedule/ScheduleErrorOf.h"

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
  size_t chosen = all.size();
  EXPECT_EQ(dpc::errorOf(
                [&] { chosen = chooseFastestSchedule(all, machine, memory); }),
            "");
  EXPECT_LT(chosen, all.size());
  return chosen < all.size() ? all[chosen].kind : ScheduleKind::Custom;
}

// The peak memory of each rank of `kind`'s build of `all`.
std::vector<int64_t> peaks(const std::vector<BuildOptions> &all,
                           ScheduleKind kind) {
  std::vector<int64_t> bytes;
  for (const BuildOptions &options : all) {
    if (options.kind != kind)
      continue;
    Schedule built;
    EXPECT_EQ(buildError(options, built), "");
    for (const RankStats &rank : verifySchedule(built).ranks)
      bytes.push_back(rank.peakMemoryBytes);
  }
  return bytes;
}

} // namespace

TEST(ChooseSchedule, AutoChoosesBetween1F1BAndZeroBubble) {
  std::vector<ScheduleKind> kinds = autoScheduleKinds();
  ASSERT_EQ(kinds.size(), 3u);
  EXPECT_EQ(kinds[0], ScheduleKind::OneFOneB);
  EXPECT_EQ(kinds[1], ScheduleKind::ZeroBubbleH1);
  EXPECT_EQ(kinds[2], ScheduleKind::ZeroBubble2P);
}

TEST(ChooseSchedule, ZeroBubbleWhereItFillsTheBubble) {
  // 4 microbatches on 2 stages: zb-h1's deferred weight gradients fill
  // most of 1F1B's bubble (13 ms a step against 15), and zb-2p's, deferred
  // further, cover the next step's start too (12 ms, all work).
  EXPECT_EQ(choose(candidates(2, 4)), ScheduleKind::ZeroBubble2P);
  EXPECT_EQ(choose(candidates(4, 8)), ScheduleKind::ZeroBubble2P);
  // As many microbatches as stages: holding 2p cannot help, the two
  // zero-bubble kinds tie (15 ms against 1F1B's 21) and zb-h1 is kept.
  EXPECT_EQ(choose(candidates(4, 4)), ScheduleKind::ZeroBubbleH1);
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
  // 2 ms a message adds 10 ms to both, and 0.4 of 21 is under the 2%
  // (1f1b against zb-h1 alone).
  std::vector<BuildOptions> all = candidates(2, 4, /*weight=*/0.2);
  ASSERT_EQ(all.back().kind, ScheduleKind::ZeroBubble2P);
  all.pop_back();
  SimulateOptions machine;
  EXPECT_EQ(choose(all, {}, machine), ScheduleKind::ZeroBubbleH1);
  machine.latency = 2;
  EXPECT_EQ(choose(all, {}, machine), ScheduleKind::OneFOneB);
}

TEST(ChooseSchedule, RanksSharingTheCoresAsInThePrediction) {
  // On one core every kind runs all the work back to back: the zero-bubble
  // kinds have no bubble to fill (zb-2p gains 1.4%), and 1f1b is kept.
  std::vector<BuildOptions> all = candidates(2, 4);
  SimulateOptions machine;
  machine.cores = 2;
  EXPECT_EQ(choose(all, {}, machine), ScheduleKind::ZeroBubble2P);
  machine.cores = 1;
  EXPECT_EQ(choose(all, {}, machine), ScheduleKind::OneFOneB);
}

TEST(ChooseSchedule, OnlyAKindThatFitsTheMemoryLimit) {
  std::vector<BuildOptions> all = candidates(2, 4);
  std::vector<int64_t> oneF = peaks(all, ScheduleKind::OneFOneB);
  std::vector<int64_t> zb = peaks(all, ScheduleKind::ZeroBubbleH1);
  std::vector<int64_t> zb2p = peaks(all, ScheduleKind::ZeroBubble2P);
  ASSERT_EQ(oneF.size(), 2u);
  ASSERT_EQ(zb.size(), 2u);
  ASSERT_EQ(zb2p.size(), 2u);
  // The last rank keeps a microbatch more for its deferred weight
  // gradient under zb-h1, and zb-2p's ranks keep all four.
  ASSERT_GT(zb[1], oneF[1]);
  int64_t most1F = std::max(oneF[0], oneF[1]);
  int64_t mostZB = std::max(zb[0], zb[1]);
  int64_t most2P = std::max(zb2p[0], zb2p[1]);
  ASSERT_GT(mostZB, most1F);
  ASSERT_GT(most2P, mostZB);

  VerifyOptions memory;
  memory.memoryLimit = double(most1F);
  EXPECT_EQ(choose(all, memory), ScheduleKind::OneFOneB);
  memory.memoryLimit = double(mostZB);
  EXPECT_EQ(choose(all, memory), ScheduleKind::ZeroBubbleH1);
  memory.memoryLimit = double(most2P);
  EXPECT_EQ(choose(all, memory), ScheduleKind::ZeroBubble2P);
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
  std::string error = dpc::errorOf([&] { chooseFastestSchedule(all, {}, {}); });
  EXPECT_NE(error.find("cannot build the zb-h1 schedule"), std::string::npos)
      << error;
}
