//===- BuilderTest.cpp - Schedule builders --------------------------------===//
//
// Every kind over a grid of (p, m, v) must verify under both communication
// models, and its memory promises (stash depth, weight versions) must hold.
//
//===----------------------------------------------------------------------===//

#include "dpc/schedule/Builder.h"
#include "dpc/schedule/Simulator.h"
#include "dpc/schedule/Verifier.h"
#include "test/unittests/schedule/ScheduleErrorOf.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <map>

using namespace dpc::schedule;

namespace {

Schedule build(ScheduleKind kind, int p, int m, int v = 1,
               bool verticalSync = false) {
  BuildOptions options;
  options.kind = kind;
  options.stages = p;
  options.microbatches = m;
  options.virtualStages = v;
  options.verticalSync = verticalSync;
  Schedule schedule;
  std::string error = buildError(options, schedule);
  EXPECT_EQ(error, "") << kindName(kind) << " p=" << p << " m=" << m;
  return schedule;
}

std::string firstViolation(const VerifyResult &result) {
  return result.ok() ? "" : result.violations.front().format();
}

const ScheduleKind kAllKinds[] = {
    ScheduleKind::GPipe,        ScheduleKind::OneFOneB,
    ScheduleKind::PipeDream,    ScheduleKind::Interleaved,
    ScheduleKind::ZeroBubbleH1, ScheduleKind::ZeroBubble2P};

} // namespace

TEST(Builder, EveryKindVerifiesUnderBothCommModels) {
  int built = 0;
  for (ScheduleKind kind : kAllKinds) {
    for (int p : {1, 2, 3, 4, 5, 8}) {
      for (int m = 1; m <= 17; ++m) {
        for (int v : {1, 2, 3, 4}) {
          if (v > 1 && kind != ScheduleKind::Interleaved)
            continue;
          if (kind == ScheduleKind::Interleaved && m % p != 0)
            continue;
          for (bool vsync : {false, true}) {
            if (vsync && kind != ScheduleKind::PipeDream)
              continue;
            Schedule s = build(kind, p, m, v, vsync);
            VerifyResult r = verifySchedule(s);
            ASSERT_TRUE(r.ok()) << kindName(kind) << " p=" << p << " m=" << m
                                << " v=" << v << ": " << firstViolation(r);
            EXPECT_TRUE(r.blockingDeadlockFree);
            EXPECT_TRUE(r.nonBlockingDeadlockFree);
            ++built;
          }
        }
      }
    }
  }
  EXPECT_GT(built, 500);
}

TEST(Builder, RejectsBadOptions) {
  BuildOptions o;
  Schedule s;
  o.kind = ScheduleKind::Interleaved;
  o.stages = 4;
  o.microbatches = 6;
  o.virtualStages = 2;
  EXPECT_EQ(buildError(o, s), "interleaved needs the microbatches (6) to "
                              "be a multiple of the stages (4)");
  o.kind = ScheduleKind::OneFOneB;
  o.microbatches = 8;
  EXPECT_EQ(buildError(o, s),
            "--virtual-stages applies only to interleaved, not 1f1b");
  o.virtualStages = 1;
  o.verticalSync = true;
  EXPECT_EQ(buildError(o, s), "--vertical-sync applies only to pipedream");
  o.verticalSync = false;
  o.microbatches = 0;
  EXPECT_EQ(buildError(o, s), "expects at least 1 microbatch, got 0");
  o.microbatches = 4;
  o.stageInfo.resize(3);
  EXPECT_EQ(buildError(o, s), "expects costs for 1 or 4 stages, got 3");
}

// What the runtime cannot run: more microbatches than message tags, a
// message larger than MPI's int count.
TEST(Builder, RejectsWhatTheRuntimeCannotRun) {
  BuildOptions o;
  Schedule s;
  o.kind = ScheduleKind::OneFOneB;
  o.stages = 4;
  o.microbatches = maxMicrobatches(4);
  EXPECT_EQ(buildError(o, s), "");
  EXPECT_LT(messageTag(Payload::Gradient, o.microbatches - 1, 3, 4),
            kScheduleTagLimit);
  o.microbatches += 1;
  EXPECT_EQ(buildError(o, s),
            "3750 microbatches are more than the 3749 that 4 virtual stages "
            "can tag (2 message tags per microbatch and virtual stage, below "
            "30000)");
  o.microbatches = 4;
  o.stageInfo.resize(4);
  o.stageInfo[1].outputBytes = kMaxMessageBytes + 1;
  EXPECT_EQ(buildError(o, s),
            "stage 1 sends 2147483648 bytes per microbatch, more than the "
            "2147483647 an MPI message can hold; use a smaller microbatch "
            "size");
}

// The streams of a tiny 1F1B, spelled out: what the executor will run.
TEST(Builder, OneFOneBTwoStagesStreams) {
  Schedule s = build(ScheduleKind::OneFOneB, 2, 2);
  auto text = [&](int rank) {
    std::string out;
    for (const Instruction &inst : s.programs[rank])
      out += describe(inst) + "\n";
    return out;
  };
  EXPECT_EQ(text(0), "LoadMicrobatch mb 0\n"
                     "Forward mb 0\n"
                     "Stash mb 0\n"
                     "SendStart act mb 0 to rank 1\n"
                     "LoadMicrobatch mb 1\n"
                     "Forward mb 1\n"
                     "Stash mb 1\n"
                     "SendFinish act mb 0 to rank 1\n"
                     "SendStart act mb 1 to rank 1\n"
                     "RecvStart grad mb 0 from rank 1\n"
                     "RecvFinish grad mb 0 from rank 1\n"
                     "Restore mb 0\n"
                     "Backward mb 0\n"
                     "Free mb 0\n"
                     "RecvStart grad mb 1 from rank 1\n"
                     "RecvFinish grad mb 1 from rank 1\n"
                     "Restore mb 1\n"
                     "Backward mb 1\n"
                     "Free mb 1\n"
                     "OptimizerStep\n"
                     "SendFinish act mb 1 to rank 1\n");
  EXPECT_EQ(text(1), "RecvStart act mb 0 from rank 0\n"
                     "RecvFinish act mb 0 from rank 0\n"
                     "LoadMicrobatch mb 0\n"
                     "Forward mb 0\n"
                     "Stash mb 0\n"
                     "RecvStart act mb 1 from rank 0\n"
                     "Restore mb 0\n"
                     "Backward mb 0\n"
                     "Free mb 0\n"
                     "SendStart grad mb 0 to rank 0\n"
                     "RecvFinish act mb 1 from rank 0\n"
                     "LoadMicrobatch mb 1\n"
                     "Forward mb 1\n"
                     "Stash mb 1\n"
                     "Restore mb 1\n"
                     "Backward mb 1\n"
                     "Free mb 1\n"
                     "SendFinish grad mb 0 to rank 0\n"
                     "SendStart grad mb 1 to rank 0\n"
                     "OptimizerStep\n"
                     "SendFinish grad mb 1 to rank 0\n");
}

TEST(Builder, StashDepth) {
  for (int p = 1; p <= 8; ++p) {
    for (int m = 1; m <= 20; ++m) {
      VerifyResult gpipe = verifySchedule(build(ScheduleKind::GPipe, p, m));
      VerifyResult oneF = verifySchedule(build(ScheduleKind::OneFOneB, p, m));
      VerifyResult zb = verifySchedule(build(ScheduleKind::ZeroBubbleH1, p, m));
      VerifyResult zb2p =
          verifySchedule(build(ScheduleKind::ZeroBubble2P, p, m));
      int oneFPeak = 0;
      for (int s = 0; s < p; ++s) {
        EXPECT_EQ(gpipe.ranks[s].peakStashes, m) << "p=" << p << " s=" << s;
        EXPECT_EQ(oneF.ranks[s].peakStashes, std::min(m, p - s))
            << "p=" << p << " m=" << m << " s=" << s;
        oneFPeak = std::max(oneFPeak, oneF.ranks[s].peakStashes);
      }
      // zb-h1 keeps W's activations longer on later ranks, but no rank
      // exceeds 1F1B's peak (its first rank's).
      for (int s = 0; s < p; ++s)
        EXPECT_EQ(zb.ranks[s].peakStashes, std::min(m, p))
            << "p=" << p << " m=" << m << " s=" << s;
      // zb-2p runs forwards ahead while it holds fewer than 2p; with equal
      // costs every rank gets there.
      for (int s = 0; s < p; ++s)
        EXPECT_EQ(zb2p.ranks[s].peakStashes, std::min(m, 2 * p))
            << "p=" << p << " m=" << m << " s=" << s;
      EXPECT_EQ(oneFPeak, std::min(m, p));
    }
  }
}

TEST(Builder, InterleavedStashDepthBounded) {
  for (int p : {2, 4}) {
    for (int v : {2, 3}) {
      int m = 4 * p;
      VerifyResult r =
          verifySchedule(build(ScheduleKind::Interleaved, p, m, v));
      for (int s = 0; s < p; ++s) {
        // Megatron's warm-up: (p - s - 1) * 2 + (v - 1) * p forwards ahead.
        int expected = std::min((p - s - 1) * 2 + (v - 1) * p + 1, m * v);
        EXPECT_EQ(r.ranks[s].peakStashes, expected) << "p=" << p << " s=" << s;
      }
    }
  }
}

TEST(Builder, PipeDreamWeightVersions) {
  for (int p = 2; p <= 8; ++p) {
    for (int m = 1; m <= 3 * p; ++m) {
      VerifyResult plain = verifySchedule(build(ScheduleKind::PipeDream, p, m));
      VerifyResult vsync =
          verifySchedule(build(ScheduleKind::PipeDream, p, m, 1, true));
      ASSERT_TRUE(plain.ok()) << firstViolation(plain);
      ASSERT_TRUE(vsync.ok()) << firstViolation(vsync);
      for (int s = 0; s < p; ++s) {
        SCOPED_TRACE("p=" + std::to_string(p) + " m=" + std::to_string(m) +
                     " s=" + std::to_string(s));
        EXPECT_EQ(plain.ranks[s].optimizerSteps, m);
        // Stage s has p - s microbatches in flight, each with its own
        // version once the pipeline is full; the last stage needs no copy.
        EXPECT_LE(plain.ranks[s].peakWeightVersions, std::min(p - s, m));
        EXPECT_LE(vsync.ranks[s].peakWeightVersions, std::min(p, m));
        if (m >= 2 * p) {
          EXPECT_EQ(plain.ranks[s].peakWeightVersions, p - s);
          // Vertical sync: every stage uses stage 0's versions, so every
          // stage keeps as many as stage 0.
          EXPECT_EQ(vsync.ranks[s].peakWeightVersions, p);
        }
      }
    }
  }
}

// Each microbatch's backward uses the version its forward used; with
// vertical sync that version is the same on every stage.
TEST(Builder, PipeDreamVersionSemantics) {
  int p = 4, m = 12;
  for (bool vsync : {false, true}) {
    Schedule s = build(ScheduleKind::PipeDream, p, m, 1, vsync);
    std::vector<std::map<int, int>> forwardVersion(p);
    for (int r = 0; r < p; ++r) {
      int updates = 0;
      for (const Instruction &inst : s.programs[r]) {
        if (inst.op == Op::Forward) {
          forwardVersion[r][inst.mb] = inst.version;
          EXPECT_LE(inst.version, updates);
        } else if (inst.op == Op::Backward) {
          EXPECT_EQ(inst.version, forwardVersion[r][inst.mb])
              << "rank " << r << " mb " << inst.mb;
        } else if (inst.op == Op::OptimizerStep) {
          ++updates;
        }
      }
      for (int mb = 0; mb < m; ++mb) {
        if (vsync)
          EXPECT_EQ(forwardVersion[r][mb], forwardVersion[0][mb]);
        else // no flush: forward mb sees every update before it
          EXPECT_EQ(forwardVersion[r][mb], std::max(0, mb - (p - r - 1)));
      }
    }
  }
}

Schedule buildReplicated(ScheduleKind kind, std::vector<int> replicas, int m) {
  BuildOptions o;
  o.kind = kind;
  o.stages = static_cast<int>(replicas.size());
  o.microbatches = m;
  o.replicas = std::move(replicas);
  o.stageInfo = {StageInfo{1.0, 1.0, 1.0, 0, 1 << 20, 0, 4096}};
  Schedule s;
  EXPECT_EQ(buildError(o, s), "") << kindName(kind);
  return s;
}

TEST(Builder, ReplicasSplitMicrobatchesAndAllReduce) {
  for (ScheduleKind kind :
       {ScheduleKind::GPipe, ScheduleKind::OneFOneB, ScheduleKind::ZeroBubbleH1,
        ScheduleKind::ZeroBubble2P}) {
    for (auto [replicas, m] : {std::pair(std::vector<int>{2, 1}, 4),
                               std::pair(std::vector<int>{1, 3}, 6),
                               std::pair(std::vector<int>{2, 1, 3}, 7),
                               std::pair(std::vector<int>{3, 2}, 2)}) {
      SCOPED_TRACE(std::string(kindName(kind)) + " m=" + std::to_string(m));
      Schedule s = buildReplicated(kind, replicas, m);
      int total = 0;
      for (int r : replicas)
        total += r;
      ASSERT_EQ(s.ranks, total);
      ASSERT_EQ(s.numStages(), int(replicas.size()));
      VerifyResult v = verifySchedule(s);
      EXPECT_TRUE(v.ok()) << firstViolation(v);
      EXPECT_TRUE(v.blockingDeadlockFree);
      EXPECT_TRUE(v.nonBlockingDeadlockFree);

      // Every microbatch is trained exactly once per stage, by the replica
      // mb % r, and every transfer goes to the rank that runs the peer
      // stage's share of that microbatch.
      std::vector<std::vector<int>> forwards(s.numStages(),
                                             std::vector<int>(m, 0));
      for (int rank = 0; rank < s.ranks; ++rank) {
        int stage = s.stageOf(rank), allReduces = 0;
        for (const Instruction &inst : s.programs[rank]) {
          if (inst.op == Op::Forward) {
            ++forwards[stage][inst.mb];
            EXPECT_EQ(inst.mb % replicas[stage], s.replicaOf(rank));
          }
          if (isTransfer(inst.op)) {
            int peerStage = s.stageOf(inst.peer);
            EXPECT_EQ(std::abs(peerStage - stage), 1);
            EXPECT_EQ(inst.peer, s.rankOf(peerStage, inst.mb));
          }
          allReduces += inst.op == Op::AllReduce;
        }
        EXPECT_EQ(allReduces, replicas[stage] > 1 ? 1 : 0) << "rank " << rank;
      }
      for (const auto &stage : forwards)
        for (int count : stage)
          EXPECT_EQ(count, 1);

      SimulateResult sim;
      ASSERT_EQ(simulateError(s, SimulateOptions(), sim), "");
      EXPECT_GT(sim.stepTime, 0);
    }
  }
}

TEST(Builder, ReplicasShortenTheStep) {
  // Doubling a bottleneck stage's ranks halves its share of the work.
  BuildOptions o;
  o.kind = ScheduleKind::OneFOneB;
  o.stages = 2;
  o.microbatches = 8;
  o.stageInfo = {StageInfo{2.0, 2.0, 2.0, 0, 0, 0, 0},
                 StageInfo{1.0, 1.0, 1.0, 0, 0, 0, 0}};
  Schedule straight, hybrid;
  ASSERT_EQ(buildError(o, straight), "");
  o.replicas = {2, 1};
  ASSERT_EQ(buildError(o, hybrid), "");
  SimulateResult a, b;
  ASSERT_EQ(simulateError(straight, SimulateOptions(), a), "");
  ASSERT_EQ(simulateError(hybrid, SimulateOptions(), b), "");
  EXPECT_LT(b.stepTime, 0.7 * a.stepTime);
}

TEST(Builder, ReplicasNeedASynchronousSchedule) {
  BuildOptions o;
  o.kind = ScheduleKind::PipeDream;
  o.stages = 2;
  o.microbatches = 4;
  o.replicas = {2, 1};
  Schedule s;
  EXPECT_EQ(buildError(o, s),
            "replicated stages need a synchronous schedule (gpipe, 1f1b, "
            "zb-h1, zb-2p), not pipedream");
  o.kind = ScheduleKind::Interleaved;
  o.virtualStages = 2;
  EXPECT_EQ(buildError(o, s),
            "replicated stages cannot be combined with virtual stages");
  o.kind = ScheduleKind::OneFOneB;
  o.virtualStages = 1;
  o.replicas = {2};
  EXPECT_EQ(buildError(o, s), "expects replicas for 2 stages, got 1");
}

TEST(Builder, LowerCustomOrderThatStalls) {
  // Rank 1 wants mb 1 first, rank 0 produces mb 0 first and waits for its
  // gradient before producing mb 1: the orders cannot run.
  Schedule s;
  s.kind = ScheduleKind::OneFOneB;
  s.ranks = 2;
  s.microbatches = 2;
  s.stages.assign(2, StageInfo());
  std::vector<std::vector<Work>> order = {{{Op::Forward, 0, 0},
                                           {Op::Backward, 0, 0},
                                           {Op::Forward, 1, 0},
                                           {Op::Backward, 1, 0}},
                                          {{Op::Forward, 1, 0},
                                           {Op::Backward, 1, 0},
                                           {Op::Forward, 0, 0},
                                           {Op::Backward, 0, 0}}};
  EXPECT_EQ(lowerError(s, order),
            "internal error: the 1f1b order of rank 0 stalls after 1 of 4 "
            "items");
}

// Building, verifying and simulating p = 16, m = 128 takes milliseconds.
TEST(Builder, LargePipelineIsFast) {
  for (ScheduleKind kind : kAllKinds) {
    auto begin = std::chrono::steady_clock::now();
    int v = kind == ScheduleKind::Interleaved ? 2 : 1;
    Schedule s = build(kind, 16, 128, v);
    VerifyResult r = verifySchedule(s);
    SimulateResult sim;
    ASSERT_EQ(simulateError(s, {}, sim), "");
    double ms = std::chrono::duration<double, std::milli>(
                    std::chrono::steady_clock::now() - begin)
                    .count();
    EXPECT_TRUE(r.ok()) << firstViolation(r);
    std::printf("%-12s p=16 m=128: %zu instructions, build+verify+simulate "
                "%.1f ms\n",
                kindName(kind), s.numInstructions(), ms);
    EXPECT_LT(ms, 1000.0);
  }
}
