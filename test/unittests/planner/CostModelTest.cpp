//===- CostModelTest.cpp - The cost model on hand-computed plans ----------===//

#include "dpc/planner/CostModel.h"

#include "test/unittests/runtime/ErrorOf.h"

#include <gtest/gtest.h>

#include <optional>

using namespace dpc::planner;
using dpc::errorOf;

namespace {

Node makeNode(const std::string &name, double f, double b, double a, double p) {
  Node n;
  n.name = name;
  n.forwardMs = f;
  n.backwardMs = b;
  n.activationBytes = a;
  n.parameterBytes = p;
  return n;
}

/// a -> b -> c, plus the skip a -> c when `skip`.
Graph chain(bool skip) {
  Graph g;
  NodeId a = g.addNode(makeNode("a", 10, 20, 1e8, 1e8));
  NodeId b = g.addNode(makeNode("b", 5, 5, 5e7, 2e8));
  NodeId c = g.addNode(makeNode("c", 20, 20, 1e6, 0));
  g.addEdge(a, b);
  g.addEdge(b, c);
  if (skip)
    g.addEdge(a, c);
  return g;
}

Plan twoStages(int r0, int first0, int r1, int first1) {
  Plan plan;
  plan.stages.push_back({{0}, r0, first0});
  plan.stages.push_back({{1, 2}, r1, first1});
  return plan;
}

TEST(CostModelTest, ReplicatedStageAndCuts) {
  Graph g = chain(false);
  CostOptions opts;
  opts.topology = Topology::flat(3, 1e9);
  Evaluation e = evaluate(g, twoStages(1, 0, 2, 1), opts);
  // Stage 0: 30 ms of compute; it sends a's 1e8 bytes twice (activation and
  // gradient) over 1e9 B/s from one replica.
  EXPECT_DOUBLE_EQ(e.stages[0].computeSeconds, 0.03);
  EXPECT_DOUBLE_EQ(e.stages[0].sendSeconds, 0.2);
  EXPECT_DOUBLE_EQ(e.stages[0].recvSeconds, 0.0);
  // Stage 1 on two replicas: (0.05 + 4 * 1 * 2e8 / (1e9 * 2)) / 2.
  EXPECT_DOUBLE_EQ(e.stages[1].computeSeconds, 0.225);
  EXPECT_DOUBLE_EQ(e.stages[1].recvSeconds, 0.1);
  EXPECT_DOUBLE_EQ(e.stages[1].sendSeconds, 0.0);
  ASSERT_EQ(e.cutBytes.size(), 1u);
  EXPECT_DOUBLE_EQ(e.cutBytes[0], 1e8);
  EXPECT_DOUBLE_EQ(e.bottleneckSeconds, 0.225);
  EXPECT_EQ(e.usedDevices, 3);
  EXPECT_DOUBLE_EQ(e.stepSeconds, 0.225); // pipedream, one microbatch

  // PipeDream memory: weights, gradients and momentum (3P) plus a weight
  // version and the activations per in-flight microbatch. Stage 0 has the
  // three devices of the pipeline in flight, stage 1 one per replica.
  EXPECT_EQ(e.stages[0].inFlight, 3);
  EXPECT_DOUBLE_EQ(e.stages[0].memoryBytes, 3e8 + 2e8 + 3 * 1e8);
  EXPECT_EQ(e.stages[1].inFlight, 1);
  EXPECT_DOUBLE_EQ(e.stages[1].memoryBytes, 6e8 + (5e7 + 1e6 + 1e8));
}

// --shard-optimizer: each replica keeps 1/R of the optimizer state, so a
// replicated stage's resident bytes are 2P + oP/R; a stage of one rank
// keeps its whole state.
TEST(CostModelTest, ShardedOptimizerStateOnReplicas) {
  Graph g = chain(false);
  CostOptions opts;
  opts.topology = Topology::flat(3, 1e9);
  opts.schedule = ScheduleKind::OneFOneB;
  opts.microbatches = 4;
  opts.optimizerStateFactor = 2; // Adam
  Evaluation plain = evaluate(g, twoStages(1, 0, 2, 1), opts);
  opts.shardOptimizer = true;
  Evaluation sharded = evaluate(g, twoStages(1, 0, 2, 1), opts);
  EXPECT_DOUBLE_EQ(plain.stages[0].memoryBytes, sharded.stages[0].memoryBytes);
  // Stage 1: 2e8 parameter bytes, Adam's two moments halved.
  EXPECT_DOUBLE_EQ(plain.stages[1].memoryBytes - sharded.stages[1].memoryBytes,
                   2 * 2e8 / 2);
  EXPECT_DOUBLE_EQ(stageStateFactor(opts, 4), 2.5);
  EXPECT_DOUBLE_EQ(stageStateFactor(opts, 1), 4.0);
  // The compute (and the all-reduce's time) does not change.
  EXPECT_DOUBLE_EQ(plain.stages[1].computeSeconds,
                   sharded.stages[1].computeSeconds);
}

TEST(CostModelTest, SkipConnectionCrossesEveryCutItSpans) {
  Graph g = chain(true);
  CostOptions opts;
  opts.topology = Topology::flat(3, 1e9);
  Plan plan;
  plan.stages = {{{0}, 1, 0}, {{1}, 1, 1}, {{2}, 1, 2}};
  Evaluation e = evaluate(g, plan, opts);
  EXPECT_DOUBLE_EQ(e.cutBytes[0], 1e8);
  EXPECT_DOUBLE_EQ(e.cutBytes[1], 1e8 + 5e7); // a's output reaches c
  EXPECT_DOUBLE_EQ(e.stages[1].sendSeconds, 0.3);
  EXPECT_DOUBLE_EQ(e.stages[2].recvSeconds, 0.3);
  EXPECT_DOUBLE_EQ(e.bottleneckSeconds, 0.3);
}

TEST(CostModelTest, Bf16TransfersTakeHalfTheTimeNotHalfTheMemory) {
  Graph g = chain(false);
  CostOptions fp32;
  fp32.topology = Topology::flat(3, 1e9);
  CostOptions bf16 = fp32;
  bf16.transferFactor = 0.5;
  Evaluation e32 = evaluate(g, twoStages(1, 0, 2, 1), fp32);
  Evaluation e16 = evaluate(g, twoStages(1, 0, 2, 1), bf16);
  EXPECT_DOUBLE_EQ(e16.stages[0].sendSeconds, 0.1);
  EXPECT_DOUBLE_EQ(e16.stages[1].recvSeconds, 0.05);
  // The cut and the buffers it fills stay f32.
  EXPECT_DOUBLE_EQ(e16.cutBytes[0], 1e8);
  EXPECT_DOUBLE_EQ(e16.stages[1].memoryBytes, e32.stages[1].memoryBytes);
  EXPECT_DOUBLE_EQ(e16.stages[0].computeSeconds, e32.stages[0].computeSeconds);
}

TEST(CostModelTest, HierarchicalBandwidths) {
  Graph g = chain(false);
  CostOptions opts;
  opts.topology.levelSizes = {2, 2};
  opts.topology.bandwidths = {10e9, 1e9};
  EXPECT_EQ(opts.topology.devices(), 4);
  EXPECT_DOUBLE_EQ(opts.topology.bandwidth(0, 1), 10e9);
  EXPECT_DOUBLE_EQ(opts.topology.bandwidth(1, 2), 1e9);
  EXPECT_DOUBLE_EQ(opts.topology.bandwidth(3, 2), 10e9);
  EXPECT_EQ(opts.topology.alignment(), 2);
  Evaluation e = evaluate(g, twoStages(2, 0, 2, 2), opts);
  // Allreduce inside each group at 10e9; the cut crosses groups at 1e9.
  EXPECT_DOUBLE_EQ(e.stages[0].computeSeconds, (0.03 + 4 * 1e8 / 20e9) / 2);
  EXPECT_DOUBLE_EQ(e.stages[0].sendSeconds, 0.1);
  EXPECT_DOUBLE_EQ(e.stages[1].computeSeconds, (0.05 + 4 * 2e8 / 20e9) / 2);
  EXPECT_DOUBLE_EQ(e.stages[1].recvSeconds, 0.1);

  // Both stages inside the first group: the cut runs at 10e9 too.
  opts.topology.levelSizes = {4, 2};
  opts.topology.bandwidths = {10e9, 1e9};
  e = evaluate(g, twoStages(2, 0, 2, 2), opts);
  EXPECT_DOUBLE_EQ(e.stages[0].sendSeconds, 0.01);
  EXPECT_DOUBLE_EQ(e.stages[1].recvSeconds, 0.01);
}

TEST(CostModelTest, SynchronousScheduleStepAndMemory) {
  Graph g = chain(false);
  CostOptions opts;
  opts.topology = Topology::flat(3, 1e9);
  opts.schedule = ScheduleKind::OneFOneB;
  opts.microbatches = 4;
  Evaluation e = evaluate(g, twoStages(1, 0, 2, 1), opts);
  // Latencies: 0.03 + 0.2 / 2 and 0.225 + 0.1 / 2; then 3 more bottlenecks.
  EXPECT_NEAR(e.stepSeconds, 0.13 + 0.275 + 3 * 0.225, 1e-15);
  // 1F1B keeps min(m, devices from here) per replica, no weight versions.
  EXPECT_EQ(e.stages[0].inFlight, 3);
  EXPECT_DOUBLE_EQ(e.stages[0].memoryBytes, 3e8 + 3 * 1e8);
  opts.schedule = ScheduleKind::GPipe;
  e = evaluate(g, twoStages(1, 0, 2, 1), opts);
  EXPECT_EQ(e.stages[0].inFlight, 4);
  EXPECT_EQ(e.stages[1].inFlight, 2);
  double busy = (0.03 + 0.225) / 2;
  EXPECT_NEAR(e.bubbleFraction, 1 - 4 * busy / e.stepSeconds, 1e-15);
}

TEST(CostModelTest, InvalidPlansAreRejected) {
  Graph g = chain(false);
  CostOptions opts;
  opts.topology = Topology::flat(3, 1e9);
  Plan backwards;
  backwards.stages = {{{1, 2}, 1, 0}, {{0}, 1, 1}};
  EXPECT_EQ(errorOf([&] { evaluate(g, backwards, opts); }),
            "edge a -> b goes from stage 1 back to stage 0");
  EXPECT_FALSE(evaluateIfValid(g, backwards, opts));

  Plan overlap = twoStages(2, 0, 2, 1);
  EXPECT_EQ(errorOf([&] { evaluate(g, overlap, opts); }),
            "rank 1 is in two stages");

  Plan missing;
  missing.stages = {{{0, 1}, 1, 0}};
  EXPECT_EQ(errorOf([&] { evaluate(g, missing, opts); }),
            "node 'c' is in no stage");

  Graph withInput = chain(false);
  Node in = makeNode("data", 0, 0, 1e9, 0);
  in.isInput = true;
  NodeId d = withInput.addNode(in);
  withInput.addEdge(d, 1);
  Plan late;
  late.stages = {{{0}, 1, 0}, {{1, 2, d}, 1, 1}};
  EXPECT_EQ(errorOf([&] { evaluate(withInput, late, opts); }),
            "input 'data' is not in the first stage");
  late.stages = {{{0, d}, 1, 0}, {{1, 2}, 1, 1}};
  Evaluation e = evaluate(withInput, late, opts);
  EXPECT_DOUBLE_EQ(e.cutBytes[0], 1e8); // inputs carry no cost
  std::optional<Evaluation> same = evaluateIfValid(withInput, late, opts);
  ASSERT_TRUE(same);
  EXPECT_DOUBLE_EQ(same->bottleneckSeconds, e.bottleneckSeconds);
}

} // namespace
