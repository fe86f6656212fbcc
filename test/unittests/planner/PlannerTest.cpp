//===- PlannerTest.cpp - The planner on the shared profiles ---------------===//

#include "dpc/planner/Planner.h"
#include "dpc/planner/PlanJson.h"
#include "dpc/planner/Profile.h"

#include "test/unittests/runtime/ErrorOf.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>

using namespace dpc::planner;
using dpc::inputErrorOf;

namespace {

Graph loadShared(const std::string &name) {
  return loadProfile(std::string(DPC_PROFILES_DIR) + "/" + name + ".txt");
}

PlannerOptions flat(int devices, bool straight) {
  PlannerOptions opts;
  opts.cost.topology = Topology::flat(devices, 1e9);
  opts.straight = straight;
  return opts;
}

/// PipeDream's optimizer's own plans under the cost model (issue 4), for
/// 2, 4, 8 and 16 devices.
struct BarRow {
  const char *profile;
  double hybrid[4];
  double straight[4];
};
const BarRow kBar[] = {
    {"alexnet",
     {0.066454, 0.034217, 0.018874, 0.018874},
     {0.066454, 0.066454, 0.066454, 0.095551}},
    {"vgg16",
     {0.411042, 0.205521, 0.103833, 0.056530},
     {0.411042, 0.411042, 0.411042, 0.411042}},
    {"resnet18",
     {0.176629, 0.100004, 0.050783, 0.025690},
     {0.201601, 0.201601, 0.201601, 0.201601}},
    {"resnet50",
     {0.285058, 0.162881, 0.092012, 0.047801},
     {0.285058, 0.258149, 0.258149, 0.258149}},
    {"gnmt",
     {0.045936, 0.025868, 0.019285, 0.019285},
     {0.045936, 0.025868, 0.019285, 0.024642}},
};

class BarTest : public ::testing::TestWithParam<BarRow> {};

TEST_P(BarTest, MeetsPipeDreamOnEveryCell) {
  const BarRow &row = GetParam();
  Graph g = loadShared(row.profile);
  const int deviceCounts[4] = {2, 4, 8, 16};
  for (int k = 0; k < 4; ++k) {
    for (bool straight : {false, true}) {
      PlannerOptions opts = flat(deviceCounts[k], straight);
      PlanResult r = planPipeline(g, opts);
      double bar = straight ? row.straight[k] : row.hybrid[k];
      // The table is rounded to the microsecond; an exact tie may round
      // either way.
      EXPECT_LE(r.evaluation.bottleneckSeconds, bar * (1 + 1e-6) + 5e-7)
          << row.profile << " on " << deviceCounts[k] << " devices"
          << (straight ? " straight" : " hybrid");
      // The reported costs are the evaluator's, not the optimizer's own.
      Evaluation again = evaluate(g, r.plan, opts.cost);
      EXPECT_DOUBLE_EQ(again.bottleneckSeconds, r.evaluation.bottleneckSeconds);
      EXPECT_LE(again.usedDevices, deviceCounts[k]);
      if (straight)
        for (const StagePlan &s : r.plan.stages)
          EXPECT_EQ(s.replicas, 1);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Profiles, BarTest, ::testing::ValuesIn(kBar),
                         [](const auto &info) {
                           return std::string(info.param.profile);
                         });

TEST(PlannerTest, MoreDevicesNeverHurt) {
  for (const char *name : {"resnet18", "gnmt"}) {
    Graph g = loadShared(name);
    double previous = INFINITY;
    for (int n = 1; n <= 16; ++n) {
      PlanResult r = planPipeline(g, flat(n, false));
      EXPECT_LE(r.evaluation.bottleneckSeconds, previous * (1 + 1e-12))
          << name << " on " << n;
      previous = r.evaluation.bottleneckSeconds;
    }
  }
}

TEST(PlannerTest, InputsStayInTheFirstStage) {
  Graph g = loadShared("gnmt");
  PlanResult r = planPipeline(g, flat(8, true));
  for (size_t s = 1; s < r.plan.stages.size(); ++s)
    for (NodeId v : r.plan.stages[s].nodes)
      EXPECT_FALSE(g.node(v).isInput) << g.node(v).name;
}

TEST(PlannerTest, ForcedStageCount) {
  Graph g = loadShared("resnet50");
  for (int stages : {1, 3, 5, 8}) {
    PlannerOptions opts = flat(8, false);
    opts.stages = stages;
    PlanResult r = planPipeline(g, opts);
    EXPECT_EQ(r.plan.stages.size(), static_cast<size_t>(stages));
  }
  PlannerOptions opts = flat(8, false);
  opts.stages = 9;
  EXPECT_EQ(inputErrorOf([&] { planPipeline(g, opts); }),
            "9 stages need 9 devices, 8 given");
  opts = flat(4096, true);
  opts.stages = 4000;
  std::string tooMany = inputErrorOf([&] { planPipeline(g, opts); });
  EXPECT_NE(tooMany.find("more stages than nodes"), std::string::npos)
      << tooMany;
}

TEST(PlannerTest, MemoryLimitAndSmallestWorkingLimit) {
  Graph g = loadShared("vgg16");
  PlannerOptions opts = flat(8, false);
  PlanResult free = planPipeline(g, opts);
  double peak = free.evaluation.peakMemoryBytes;

  opts.memoryLimitBytes = 1e6; // far too small
  std::string msg = inputErrorOf([&] { planPipeline(g, opts); });
  size_t at = msg.find("the smallest limit that would work is ");
  ASSERT_NE(at, std::string::npos) << msg;
  double least = std::stod(msg.substr(at + 38));
  EXPECT_LE(least, peak);

  // The limit it names works, and a bit less does not.
  opts.memoryLimitBytes = least;
  PlanResult r = planPipeline(g, opts);
  EXPECT_LE(r.evaluation.peakMemoryBytes, least);
  opts.memoryLimitBytes = least * 0.999;
  EXPECT_THROW(planPipeline(g, opts), dpc::InputError);

  // Between the two, the plan fits and is no faster than the free one.
  opts.memoryLimitBytes = (least + peak) / 2;
  r = planPipeline(g, opts);
  EXPECT_LE(r.evaluation.peakMemoryBytes, opts.memoryLimitBytes);
  EXPECT_GE(r.evaluation.bottleneckSeconds,
            free.evaluation.bottleneckSeconds * (1 - 1e-12));
}

TEST(PlannerTest, StepObjectiveForSynchronousSchedules) {
  Graph g = loadShared("resnet50");
  PlannerOptions opts = flat(8, false);
  opts.cost.schedule = ScheduleKind::OneFOneB;
  opts.cost.microbatches = 8;
  PlanResult byBottleneck = planPipeline(g, opts);
  opts.objective = Objective::Step;
  PlanResult byStep = planPipeline(g, opts);
  EXPECT_LE(byStep.evaluation.stepSeconds,
            byBottleneck.evaluation.stepSeconds * (1 + 1e-12));
  EXPECT_GE(byStep.evaluation.bottleneckSeconds,
            byBottleneck.evaluation.bottleneckSeconds * (1 - 1e-12));
}

TEST(PlannerTest, HierarchicalTopologyPrefersFastLinks) {
  Graph g = loadShared("resnet18");
  PlannerOptions fast = flat(16, false);
  fast.cost.topology.bandwidths = {25e9};
  PlannerOptions mixed = fast;
  mixed.cost.topology.levelSizes = {4, 4};
  mixed.cost.topology.bandwidths = {25e9, 1e9};
  PlannerOptions slow = flat(16, false);
  PlanResult a = planPipeline(g, fast), b = planPipeline(g, mixed),
             c = planPipeline(g, slow);
  EXPECT_LE(a.evaluation.bottleneckSeconds,
            b.evaluation.bottleneckSeconds * (1 + 1e-12));
  EXPECT_LE(b.evaluation.bottleneckSeconds,
            c.evaluation.bottleneckSeconds * (1 + 1e-12));
}

TEST(PlannerTest, PlanJsonHasTheDesignKeys) {
  Graph g = loadShared("alexnet");
  PlannerOptions opts = flat(16, true);
  PlanResult r = planPipeline(g, opts);
  nlohmann::ordered_json j = planToJson(g, r, opts);
  EXPECT_EQ(j["devices"], 16);
  EXPECT_EQ(j["schedule"]["kind"], "pipedream");
  EXPECT_TRUE(j["predicted"].contains("bottleneck_ms"));
  EXPECT_TRUE(j["predicted"].contains("step_ms"));
  EXPECT_TRUE(j["predicted"].contains("bubble_fraction"));
  size_t nodes = 0;
  int ranks = 0;
  for (const auto &s : j["stages"]) {
    for (const char *key : {"id", "ranks", "replicas", "nodes", "compute_ms",
                            "transfer_ms", "memory_bytes"})
      EXPECT_TRUE(s.contains(key)) << key;
    nodes += s["nodes"].size();
    ranks += static_cast<int>(s["ranks"].size());
  }
  EXPECT_EQ(nodes, g.size());
  EXPECT_EQ(ranks + j["idle_devices"].get<int>(), 16);
  EXPECT_EQ(j["stages"][0]["nodes"][0], "node1"); // the input leads
}

} // namespace

namespace {

/// Inception-like: `blocks` blocks of `branches` parallel 3-node branches
/// joined by a concat, the shape on which antichain enumeration explodes.
Graph branchyGraph(int blocks, int branches) {
  Graph g;
  Node in;
  in.name = "input";
  in.isInput = true;
  NodeId last = g.addNode(in);
  int id = 0;
  for (int b = 0; b < blocks; ++b) {
    std::vector<NodeId> ends;
    for (int k = 0; k < branches; ++k) {
      NodeId prev = last;
      for (int d = 0; d < 3; ++d) {
        Node n;
        n.name = "op" + std::to_string(id++);
        n.forwardMs = 1 + (id * 7919 % 13);
        n.backwardMs = 2 * n.forwardMs;
        n.activationBytes = 1e6 * (1 + id * 104729 % 5);
        n.parameterBytes = 1e5 * (id * 31 % 11);
        NodeId v = g.addNode(n);
        g.addEdge(prev, v);
        prev = v;
      }
      ends.push_back(prev);
    }
    Node concat;
    concat.name = "concat" + std::to_string(b);
    concat.activationBytes = 4e6;
    NodeId c = g.addNode(concat);
    for (NodeId e : ends)
      g.addEdge(e, c);
    last = c;
  }
  return g;
}

TEST(PlannerTest, BranchyGraphsStayFast) {
  Graph g = branchyGraph(40, 6); // 761 nodes
  for (int devices : {4, 16}) {
    PlannerOptions opts = flat(devices, false);
    auto start = std::chrono::steady_clock::now();
    PlanResult r = planPipeline(g, opts);
    double ms = std::chrono::duration<double, std::milli>(
                    std::chrono::steady_clock::now() - start)
                    .count();
    Evaluation e = evaluate(g, r.plan, opts.cost);
    EXPECT_DOUBLE_EQ(e.bottleneckSeconds, r.evaluation.bottleneckSeconds);
    // A generous bound: this guards against exponential blow-up, not speed.
    EXPECT_LT(ms, 2000.0);
    std::printf("%zu-node branchy graph on %d devices: %.2f ms, %zu stages\n",
                g.size(), devices, ms, r.plan.stages.size());
  }
}

} // namespace
