//===- SimulatorTest.cpp - Predicted timelines and bubble fractions -------===//
//
// With unit costs (F = B = W = 1; a combined backward costs B + W = 2) and
// free transfers the bubble fractions are the textbook ones, exactly:
//   gpipe, 1f1b, pipedream window:  (p - 1) / (m + p - 1)
//   interleaved (m a multiple of p): (p - 1) / (v m + p - 1)
//   zb-h1 (m >= p):                  (p - 1) / (3 m + p - 1)
// The last is zero bubble's (p - 1)(F + B - W) idle time per rank over a
// step of 3m + p - 1, about a third of 1F1B's 3(p - 1). Back to back (the
// steady state of a long run) those kinds take as long a step as alone;
// zb-2p, whose last ranks end a step with the weight gradients that cover
// the first rank's update and next forward, takes 3m: no bubble.
//
//===----------------------------------------------------------------------===//

#include "dpc/schedule/Simulator.h"
#include "dpc/schedule/Builder.h"
#include "test/unittests/schedule/ScheduleErrorOf.h"

#include <gtest/gtest.h>

using namespace dpc::schedule;

namespace {

SimulateResult simulate(ScheduleKind kind, int p, int m, int v = 1,
                        const SimulateOptions &options = {},
                        std::vector<StageInfo> stages = {}) {
  BuildOptions o;
  o.kind = kind;
  o.stages = p;
  o.microbatches = m;
  o.virtualStages = v;
  o.stageInfo = std::move(stages);
  Schedule s;
  EXPECT_EQ(buildError(o, s), "");
  SimulateResult result;
  EXPECT_EQ(simulateError(s, options, result), "");
  return result;
}

constexpr double kExact = 1e-12;

} // namespace

TEST(Simulator, GPipeAndOneFOneBBubbleIsTextbook) {
  for (int p = 1; p <= 8; ++p) {
    for (int m = 1; m <= 32; ++m) {
      double expected = double(p - 1) / (m + p - 1);
      for (ScheduleKind kind : {ScheduleKind::GPipe, ScheduleKind::OneFOneB,
                                ScheduleKind::PipeDream}) {
        SimulateResult r = simulate(kind, p, m);
        EXPECT_NEAR(r.bubbleFraction, expected, kExact)
            << kindName(kind) << " p=" << p << " m=" << m;
        EXPECT_NEAR(r.stepTime, 3.0 * (m + p - 1), kExact);
      }
    }
  }
}

TEST(Simulator, InterleavedBubbleIsAboutOneOverV) {
  for (int p : {2, 3, 4, 8}) {
    for (int v : {2, 3, 4}) {
      for (int k = 1; k <= 6; ++k) {
        int m = k * p;
        SimulateResult r = simulate(ScheduleKind::Interleaved, p, m, v);
        EXPECT_NEAR(r.bubbleFraction, double(p - 1) / (v * m + p - 1), kExact)
            << "p=" << p << " m=" << m << " v=" << v;
        // Against 1F1B on the same model (a chunk costs 1/v of a stage,
        // which the fraction does not see): the idle time is 1/v of it.
        double oneF = double(p - 1) / (m + p - 1);
        double idleRatio =
            (r.bubbleFraction / (1 - r.bubbleFraction)) / (oneF / (1 - oneF));
        EXPECT_NEAR(idleRatio, 1.0 / v, kExact);
      }
    }
  }
}

TEST(Simulator, ZeroBubbleH1IsAboutAThirdOfOneFOneB) {
  for (int p = 2; p <= 8; ++p) {
    for (int m = 1; m <= 40; ++m) {
      SimulateResult zb = simulate(ScheduleKind::ZeroBubbleH1, p, m);
      double oneF = double(p - 1) / (m + p - 1);
      double formula = double(p - 1) / (3 * m + p - 1);
      SCOPED_TRACE("p=" + std::to_string(p) + " m=" + std::to_string(m));
      if (m >= p)
        EXPECT_NEAR(zb.bubbleFraction, formula, kExact);
      else // a short pipeline never fills: between the two
        EXPECT_TRUE(zb.bubbleFraction >= formula - kExact &&
                    zb.bubbleFraction < oneF);
      // The idle time per rank is (p - 1) against 1F1B's 3 (p - 1).
      if (m >= p)
        EXPECT_NEAR(zb.stepTime * p - zb.busyTime, p * (p - 1.0), kExact);
      if (m >= 8 * p)
        EXPECT_NEAR(zb.bubbleFraction / oneF, 1.0 / 3, 0.04);
    }
  }
}

TEST(Simulator, ZeroBubble2PHasNoBubbleBackToBack) {
  SimulateOptions backToBack;
  backToBack.steps = kSteadyStateSteps;
  for (int p = 2; p <= 8; ++p) {
    for (int m = 2 * p - 1; m <= 4 * p; ++m) {
      SCOPED_TRACE("p=" + std::to_string(p) + " m=" + std::to_string(m));
      SimulateResult zb2p =
          simulate(ScheduleKind::ZeroBubble2P, p, m, 1, backToBack);
      SimulateResult zb =
          simulate(ScheduleKind::ZeroBubbleH1, p, m, 1, backToBack);
      SimulateResult oneF =
          simulate(ScheduleKind::OneFOneB, p, m, 1, backToBack);
      EXPECT_NEAR(zb2p.steadyStepTime, 3.0 * m, kExact);
      // Alone, a step still waits for the pipeline to fill.
      EXPECT_NEAR(zb2p.stepTime, zb.stepTime, kExact);
      EXPECT_NEAR(zb.steadyStepTime, zb.stepTime, kExact);
      EXPECT_NEAR(oneF.steadyStepTime, oneF.stepTime, kExact);
    }
  }
  // Without steps the steady step is the one step's.
  SimulateResult once = simulate(ScheduleKind::ZeroBubble2P, 2, 4);
  EXPECT_EQ(once.steadyStepTime, once.stepTime);
}

// Back to back on shared cores a step takes at least its work over the
// cores; the first step, which competes with the second for the cores, and
// the last, which does not, stay out of the period.
TEST(Simulator, BackToBackStepsOnSharedCoresTakeTheirWork) {
  SimulateOptions shared;
  shared.cores = 2;
  shared.steps = kSteadyStateSteps;
  for (ScheduleKind kind : {ScheduleKind::OneFOneB, ScheduleKind::ZeroBubbleH1,
                            ScheduleKind::ZeroBubble2P})
    for (int p = 3; p <= 6; ++p)
      for (int m = p; m <= 3 * p; ++m) {
        SCOPED_TRACE(std::string(kindName(kind)) + " p=" + std::to_string(p) +
                     " m=" + std::to_string(m));
        SimulateResult r = simulate(kind, p, m, 1, shared);
        EXPECT_GE(r.steadyStepTime, 3.0 * p * m / 2 - 1e-9);
      }
  // zb-2p on 4 ranks and 2 cores: the cores never idle.
  SimulateResult zb2p = simulate(ScheduleKind::ZeroBubble2P, 4, 8, 1, shared);
  EXPECT_NEAR(zb2p.steadyStepTime, 48, kExact);
}

TEST(Simulator, LatencyAndBandwidth) {
  // gpipe p=2 m=1: F on rank 0, transfer, F and B on rank 1, transfer, B on
  // rank 0: 1 + t + 1 + 2 + t + 2.
  StageInfo info;
  info.outputBytes = 1000;
  SimulateOptions opts;
  opts.latency = 0.5;
  opts.bandwidth = 4000; // bytes per ms: 0.25 ms per message
  SimulateResult r = simulate(ScheduleKind::GPipe, 2, 1, 1, opts, {info});
  EXPECT_NEAR(r.stepTime, 6 + 2 * 0.75, kExact);
  EXPECT_NEAR(r.busyTime, 6, kExact);

  // The optimizer step is busy time on every rank.
  opts = {};
  opts.optimizerStep = 0.5;
  SimulateResult withStep = simulate(ScheduleKind::OneFOneB, 2, 4, 1, opts);
  EXPECT_NEAR(withStep.stepTime, 3 * 5 + 0.5, kExact);
}

TEST(Simulator, SlowestStageBoundsTheStep) {
  std::vector<StageInfo> stages(4);
  stages[2].forward = 2;
  stages[2].backwardInput = 2;
  stages[2].backwardWeight = 2;
  for (ScheduleKind kind : {ScheduleKind::GPipe, ScheduleKind::OneFOneB,
                            ScheduleKind::ZeroBubbleH1}) {
    SimulateResult r = simulate(kind, 4, 16, 1, {}, stages);
    EXPECT_GE(r.stepTime, 16 * 6.0) << kindName(kind);
    EXPECT_LT(r.stepTime, 16 * 6.0 + 3 * 6.0 + 1e-9) << kindName(kind);
    EXPECT_NEAR(r.rankBusy[2], 16 * 6.0, kExact);
  }
}

TEST(Simulator, TimelineSpans) {
  SimulateResult r = simulate(ScheduleKind::ZeroBubbleH1, 2, 2);
  int forwards = 0, inputs = 0, weights = 0, sends = 0, recvs = 0, steps = 0;
  for (const TimelineEvent &ev : r.timeline.events) {
    forwards += ev.kind == EventKind::Forward;
    inputs += ev.kind == EventKind::BackwardInput;
    weights += ev.kind == EventKind::BackwardWeight;
    sends += ev.kind == EventKind::Send;
    recvs += ev.kind == EventKind::Recv;
    steps += ev.kind == EventKind::Optimizer;
    EXPECT_LE(ev.start, ev.end);
  }
  EXPECT_EQ(forwards, 4);
  EXPECT_EQ(inputs, 4);
  EXPECT_EQ(weights, 4);
  EXPECT_EQ(sends, 4); // 2 activations, 2 gradients
  EXPECT_EQ(recvs, 4);
  EXPECT_EQ(steps, 0); // zero-cost steps draw nothing
  const TimelineEvent &first = r.timeline.events.front();
  EXPECT_EQ(first.name, "F0");
  EXPECT_EQ(first.rank, 0);
  EXPECT_EQ(first.start, 0);
  EXPECT_EQ(first.end, 1);
}

TEST(Simulator, ReportsDeadlock) {
  Schedule s;
  s.ranks = 2;
  s.microbatches = 1;
  s.stages.assign(2, StageInfo());
  s.programs.resize(2);
  s.programs[0].push_back(
      Instruction::transfer(Op::RecvStart, Payload::Gradient, 0, 0, 1, 1, 0));
  s.programs[0].push_back(
      Instruction::transfer(Op::RecvFinish, Payload::Gradient, 0, 0, 1, 1, 0));
  SimulateResult r;
  EXPECT_EQ(simulateError(s, {}, r),
            "rank 0: instruction 1 (RecvFinish grad mb 0 from rank 1): the "
            "streams deadlock; run the verifier for details");
}

// With one core, some rank can always compute until the step ends (a blocked
// rank waits on one that computes), so the step is the sum of all work.
TEST(Simulator, OneSharedCoreRunsAllTheWorkBackToBack) {
  SimulateOptions oneCore;
  oneCore.cores = 1;
  for (int p = 2; p <= 6; ++p)
    for (int m = 1; m <= 12; ++m)
      for (ScheduleKind kind : {ScheduleKind::GPipe, ScheduleKind::OneFOneB,
                                ScheduleKind::ZeroBubbleH1}) {
        SimulateResult r = simulate(kind, p, m, 1, oneCore);
        EXPECT_NEAR(r.stepTime, 3.0 * p * m, 1e-9)
            << kindName(kind) << " p=" << p << " m=" << m;
        EXPECT_NEAR(r.busyTime, r.stepTime * p * (1 - r.bubbleFraction), 1e-9);
      }
}

// Ranks that compute at the same moment share the cores: two forwards side
// by side on one core take twice as long.
TEST(Simulator, ComputingRanksShareTheCores) {
  SimulateOptions oneCore;
  oneCore.cores = 1;
  SimulateResult r = simulate(ScheduleKind::GPipe, 2, 2, 1, oneCore);
  // F0 alone on rank 0, then F1 on rank 0 beside F0 on rank 1.
  auto span = [&](int rank, const std::string &name) {
    for (const TimelineEvent &ev : r.timeline.events)
      if (ev.rank == rank && ev.name == name)
        return std::make_pair(ev.start, ev.end);
    ADD_FAILURE() << "no " << name << " on rank " << rank;
    return std::make_pair(0.0, 0.0);
  };
  EXPECT_EQ(span(0, "F0"), std::make_pair(0.0, 1.0));
  EXPECT_EQ(span(0, "F1"), std::make_pair(1.0, 3.0));
  EXPECT_EQ(span(1, "F0"), std::make_pair(1.0, 3.0));
  EXPECT_NEAR(r.stepTime, 12, 1e-12);
}

// Fewer cores than ranks can only slow a step, by at most ranks / cores, and
// never below the work over the cores; as many cores as ranks changes
// nothing.
TEST(Simulator, SharedCoresBounds) {
  for (int p = 2; p <= 6; ++p)
    for (int m : {1, 3, 4, 8})
      for (ScheduleKind kind : {ScheduleKind::GPipe, ScheduleKind::OneFOneB,
                                ScheduleKind::ZeroBubbleH1}) {
        std::vector<StageInfo> stages(p);
        for (int s = 0; s < p; ++s) {
          stages[s].forward = 0.5 + 0.25 * s;
          stages[s].backwardInput = 1.0 - 0.1 * s;
          stages[s].backwardWeight = 0.3;
          stages[s].outputBytes = 1000;
        }
        SimulateOptions options;
        options.latency = 0.01;
        options.bandwidth = 1e5;
        SimulateResult own = simulate(kind, p, m, 1, options, stages);
        options.cores = p;
        SimulateResult same = simulate(kind, p, m, 1, options, stages);
        EXPECT_EQ(same.stepTime, own.stepTime);
        for (int cores = 1; cores < p; ++cores) {
          options.cores = cores;
          SimulateResult shared = simulate(kind, p, m, 1, options, stages);
          SCOPED_TRACE(std::string(kindName(kind)) + " p=" + std::to_string(p) +
                       " m=" + std::to_string(m) +
                       " cores=" + std::to_string(cores));
          double work = 0;
          for (int s = 0; s < p; ++s)
            work += m * (stages[s].forward + stages[s].backwardInput +
                         stages[s].backwardWeight);
          EXPECT_GE(shared.stepTime, own.stepTime - 1e-9);
          EXPECT_GE(shared.stepTime, work / cores - 1e-9);
          EXPECT_LE(shared.stepTime, own.stepTime * p / cores + 1e-9);
        }
      }
}

// On shared cores a rank that waits for a message sleeps and resumes the
// wake-up latency after the transfer starts (the transfer's own time when
// that is longer); with a core per rank the wake-up is not charged.
TEST(Simulator, AWaitingRankWakesOnSharedCores) {
  // gpipe, 2 ranks, 1 microbatch, F = 1 and B + W = 2 on each: all 6 ms of
  // work on one core, and each rank waits once for the other while
  // nothing else computes.
  auto step = [](int cores, double latency) {
    SimulateOptions options;
    options.cores = cores;
    options.latency = latency;
    options.wakeLatency = 0.5;
    return simulate(ScheduleKind::GPipe, 2, 1, 1, options).stepTime;
  };
  EXPECT_NEAR(step(1, 0), 7, kExact);
  EXPECT_NEAR(step(1, 0.75), 7.5, kExact);
  EXPECT_NEAR(step(2, 0.25), 6.5, kExact);
  EXPECT_NEAR(step(0, 0.25), 6.5, kExact);
}

// A rank that gets to its receive after the message arrived does not wait
// and pays no wake-up.
TEST(Simulator, ARankThatDidNotWaitDoesNotWake) {
  SimulateOptions options;
  options.cores = 1;
  options.wakeLatency = 0.5;
  SimulateResult r = simulate(ScheduleKind::GPipe, 2, 2, 1, options);
  auto start = [&](int rank, const std::string &name) {
    for (const TimelineEvent &ev : r.timeline.events)
      if (ev.rank == rank && ev.name == name)
        return ev.start;
    ADD_FAILURE() << "no " << name << " on rank " << rank;
    return -1.0;
  };
  // Rank 1 waits for mb 0's activation, sent at 1: it resumes at 1.5. Its
  // F0 shares the core with rank 0's F1 until 2.5 and ends at 3, after
  // mb 1's activation came (2.5): F1 starts at once.
  EXPECT_NEAR(start(1, "F0"), 1.5, kExact);
  EXPECT_NEAR(start(1, "F1"), 3.0, kExact);
}
