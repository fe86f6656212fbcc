//===- ClusterTest.cpp - Cluster files and planning on unequal devices ----===//
//
// The reader (every error names the JSON path) and what the planner does
// with a cluster on the shared profiles: a cluster of equal devices plans
// exactly as before, a slow device gets less work, a device without room is
// left out, and a cluster where nothing fits says how much memory would.
// The brute-force proofs of optimality are in BruteForceTest.
//
//===----------------------------------------------------------------------===//

#include "dpc/planner/Cluster.h"
#include "dpc/planner/PlanJson.h"
#include "dpc/planner/Planner.h"
#include "dpc/planner/Profile.h"

#include "test/unittests/runtime/ErrorOf.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <optional>

using namespace dpc::planner;
using dpc::errorOf;
using dpc::inputErrorOf;

namespace {

Cluster parse(const std::string &text) { return parseCluster(text, "c.json"); }

TEST(ClusterTest, ReadsDevicesLevelsAndCounts) {
  Cluster c = parse(R"({"format": "dpc-cluster", "version": 1,
    "devices": [{"name": "a100", "count": 2, "speed": 1, "memory_bytes": 4e10},
                {"name": "t4", "slowdown": 2.5, "memory_bytes": 16000000000},
                {"name": "cpu", "speed": 0.25, "description": "spare"}],
    "levels": [{"size": 2, "bandwidth": 25e9}, {"size": 2, "bandwidth": 1e9}]})");
  ASSERT_EQ(c.devices.size(), 4u);
  EXPECT_EQ(c.devices[0].name, "a100-0");
  EXPECT_EQ(c.devices[1].name, "a100-1");
  EXPECT_EQ(c.devices[1].memoryBytes, 4e10);
  EXPECT_EQ(c.devices[2].name, "t4");
  EXPECT_DOUBLE_EQ(c.devices[2].speed, 0.4);
  EXPECT_EQ(c.devices[3].memoryBytes, 0); // no limit
  EXPECT_EQ(c.topology.levelSizes, (std::vector<int>{2, 2}));
  EXPECT_EQ(c.topology.bandwidths, (std::vector<double>{25e9, 1e9}));

  Cluster flat =
      parse(R"({"devices": [{"name": "x"}, {"name": "y"}], "bandwidth": 5e9})");
  EXPECT_EQ(flat.devices[0].speed, 1);
  EXPECT_EQ(flat.topology.levelSizes, (std::vector<int>{2}));
  EXPECT_EQ(flat.topology.bandwidths, (std::vector<double>{5e9}));
  Cluster plain = parse(R"({"devices": [{"name": "x"}]})");
  EXPECT_EQ(plain.topology.bandwidths, (std::vector<double>{1e9}));
}

TEST(ClusterTest, ErrorsNameTheFileAndThePath) {
  struct Case {
    const char *text, *message;
  } cases[] = {
      {"{", "c.json: not valid JSON"},
      {"[]", "c.json: expected an object with a \"devices\" array"},
      {R"({"devices": []})",
       "c.json: \"devices\" must be a non-empty array of devices"},
      {R"({"devices": [{"name": "a"}, {"name": "b"}, {"name": "c", "speed": -1}]})",
       "c.json: devices[2].speed must be a positive number from 1e-6 to 1e6, "
       "got -1"},
      {R"({"devices": [{"name": "a", "speed": "fast"}]})",
       "c.json: devices[0].speed must be a positive number from 1e-6 to 1e6, "
       "got \"fast\""},
      {R"({"devices": [{"name": "a", "speed": 2e6}]})",
       "c.json: devices[0].speed must be a positive number from 1e-6 to 1e6, "
       "got 2000000.0"},
      {R"({"devices": [{"name": "a", "speed": 0}]})",
       "c.json: devices[0].speed must be a positive number"},
      {R"({"devices": [{"name": "a", "speed": true}]})",
       "c.json: devices[0].speed must be a positive number"},
      {R"({"devices": [{"name": "a", "slowdown": 0}]})",
       "c.json: devices[0].slowdown must be a positive number"},
      {R"({"devices": [{"name": "a", "speed": 1, "slowdown": 2}]})",
       "c.json: devices[0] gives both \"speed\" and \"slowdown\""},
      {R"({"devices": [{"name": "a", "memory_bytes": 0}]})",
       "c.json: devices[0].memory_bytes must be a positive number of bytes up "
       "to 1e18, got 0"},
      {R"({"devices": [{"name": "a", "memory_bytes": 2e18}]})",
       "c.json: devices[0].memory_bytes must be a positive number of bytes"},
      {R"({"devices": [{"name": "a", "sped": 2}]})",
       "c.json: devices[0]: unknown key \"sped\""},
      {R"({"devices": [{"speed": 2}]})",
       "c.json: devices[0].name must be a non-empty string"},
      {R"({"devices": [{"name": "a"}, {"name": "a"}]})",
       "c.json: devices[1] names device 'a' a second time"},
      {R"({"devices": [{"name": "a", "count": 0}]})",
       "c.json: devices[0].count must be an integer from 1 to 4096, got 0"},
      {R"({"devices": [{"name": "a", "count": 2.5}]})",
       "c.json: devices[0].count must be an integer"},
      {R"({"devices": [{"name": "a", "count": 4000}, {"name": "b", "count": 97}]})",
       "c.json: devices[1] brings the devices past 4096"},
      {R"({"devices": [{"name": "a", "count": 3}],
           "levels": [{"size": 2, "bandwidth": 1e9}]})",
       "c.json: the sizes of \"levels\" multiply to 2 devices but \"devices\" "
       "lists 3"},
      {R"({"devices": [{"name": "a", "count": 2}],
           "levels": [{"size": 2, "bandwidth": -5}]})",
       "c.json: levels[0].bandwidth must be a positive number of bytes per "
       "second up to 1e18, got -5"},
      {R"({"devices": [{"name": "a"}], "levels": [{"size": 1}]})",
       "c.json: levels[0] needs \"size\" and \"bandwidth\""},
      {R"({"devices": [{"name": "a"}], "bandwidth": 1e9,
           "levels": [{"size": 1, "bandwidth": 1e9}]})",
       "c.json: give \"levels\" (a bandwidth each) or \"bandwidth\", not both"},
      {R"({"devices": [{"name": "a"}], "topology": 3})",
       "c.json: unknown key \"topology\""},
      {R"({"format": "dpc-profile", "devices": [{"name": "a"}]})",
       "c.json: format must be \"dpc-cluster\", got \"dpc-profile\""},
      {R"({"version": 2, "devices": [{"name": "a"}]})",
       "c.json: version must be 1, got 2"},
  };
  for (const Case &c : cases) {
    std::string error = inputErrorOf([&] { parse(c.text); });
    EXPECT_EQ(error.rfind(c.message, 0), 0u)
        << c.text << "\ngot: " << error << "\nwanted: " << c.message;
  }
  EXPECT_EQ(inputErrorOf([] { loadCluster("/nonexistent/cluster.json"); }),
            "cannot read cluster '/nonexistent/cluster.json'");
  EXPECT_EQ(inputErrorOf([] { loadCluster("/dev/zero"); }),
            "/dev/zero: larger than 1 MiB, the most a cluster file may hold");
}

Graph loadShared(const std::string &name) {
  return loadProfile(std::string(DPC_PROFILES_DIR) + "/" + name + ".txt");
}

/// The plan, or nullopt when no plan meets the constraints (planPipeline
/// throws dpc::InputError).
std::optional<PlanResult> planIfAny(const Graph &g,
                                    const PlannerOptions &opts) {
  try {
    return planPipeline(g, opts);
  } catch (const dpc::InputError &) {
    return std::nullopt;
  }
}

std::vector<Device> alike(int n, double speed, double memory) {
  std::vector<Device> devices(n);
  for (int k = 0; k < n; ++k)
    devices[k] = {"gpu" + std::to_string(k), speed, memory};
  return devices;
}

void expectSamePlan(const PlanResult &a, const PlanResult &b,
                    const std::string &what) {
  ASSERT_EQ(a.plan.stages.size(), b.plan.stages.size()) << what;
  for (size_t s = 0; s < a.plan.stages.size(); ++s) {
    EXPECT_EQ(a.plan.stages[s].nodes, b.plan.stages[s].nodes) << what;
    EXPECT_EQ(a.plan.stages[s].replicas, b.plan.stages[s].replicas) << what;
    EXPECT_EQ(a.plan.stages[s].firstRank, b.plan.stages[s].firstRank) << what;
  }
  EXPECT_EQ(a.evaluation.bottleneckSeconds, b.evaluation.bottleneckSeconds)
      << what;
  EXPECT_EQ(a.evaluation.stepSeconds, b.evaluation.stepSeconds) << what;
}

TEST(ClusterTest, EqualDevicesPlanExactlyAsBefore) {
  int cells = 0;
  for (const char *name :
       {"alexnet", "vgg16", "resnet18", "resnet50", "gnmt"}) {
    Graph g = loadShared(name);
    for (int devices : {2, 4, 8, 16})
      for (bool straight : {false, true})
        for (ScheduleKind kind :
             {ScheduleKind::PipeDream, ScheduleKind::OneFOneB}) {
          PlannerOptions before;
          before.cost.topology = Topology::flat(devices, 1e9);
          before.straight = straight;
          before.cost.schedule = kind;
          before.cost.microbatches = kind == ScheduleKind::PipeDream ? 1 : 8;
          before.objective = kind == ScheduleKind::PipeDream
                                 ? Objective::Bottleneck
                                 : Objective::Step;
          std::string what =
              std::string(name) + " on " + std::to_string(devices) +
              (straight ? " straight " : " hybrid ") + scheduleName(kind);
          PlanResult plain = planPipeline(g, before);
          PlannerOptions cluster = before;
          cluster.devices = alike(devices, 1, 0);
          PlanResult r = planPipeline(g, cluster);
          expectSamePlan(plain, r, what);
          EXPECT_EQ(r.deviceOrdersTried, 1);
          // Memory on every device is --memory-limit.
          before.memoryLimitBytes = plain.evaluation.peakMemoryBytes * 0.7;
          cluster.devices = alike(devices, 1, before.memoryLimitBytes);
          std::optional<PlanResult> limited = planIfAny(g, before);
          std::optional<PlanResult> onDevices = planIfAny(g, cluster);
          ASSERT_EQ(bool(limited), bool(onDevices)) << what;
          if (limited)
            expectSamePlan(*limited, *onDevices, what + " with memory");
          ++cells;
        }
  }
  EXPECT_EQ(cells, 80);
}

TEST(ClusterTest, HierarchicalEqualDevicesPlanAsBefore) {
  Graph g = loadShared("resnet18");
  PlannerOptions before;
  before.cost.topology.levelSizes = {4, 2};
  before.cost.topology.bandwidths = {25e9, 1e9};
  PlanResult plain = planPipeline(g, before);
  PlannerOptions cluster = before;
  cluster.devices = alike(8, 1, 0);
  PlanResult r = planPipeline(g, cluster);
  expectSamePlan(plain, r, "resnet18 on 4x2");
}

/// A chain of `n` equal layers: 10 ms each, small activations, no weights.
Graph chain(int n) {
  Graph g;
  for (int i = 0; i < n; ++i) {
    Node node;
    node.name = "layer" + std::to_string(i);
    node.forwardMs = 4;
    node.backwardMs = 6;
    node.activationBytes = 1000;
    g.addNode(node);
    if (i > 0)
      g.addEdge(i - 1, i);
  }
  return g;
}

TEST(ClusterTest, SlowDevicesGetLessWork) {
  Graph g = chain(12);
  PlannerOptions opts;
  opts.cost.topology = Topology::flat(2, 1e12);
  opts.straight = true;
  opts.devices = {{"slow", 0.5, 0}, {"fast", 1, 0}};
  PlanResult r = planPipeline(g, opts);
  ASSERT_EQ(r.plan.stages.size(), 2u);
  // 12 layers at speeds 1 : 0.5 balance as 8 : 4, whichever device comes
  // first in the pipeline.
  for (size_t s = 0; s < 2; ++s) {
    const Device &d = opts.devices[r.rankDevices[r.plan.stages[s].firstRank]];
    EXPECT_EQ(r.plan.stages[s].nodes.size(), d.name == "fast" ? 8u : 4u);
  }
  EXPECT_NEAR(r.evaluation.bottleneckSeconds, 0.080, 1e-12);
  // Equal devices split 6 : 6; a device three times as fast takes 9.
  opts.devices = {{"a", 1, 0}, {"b", 1, 0}};
  r = planPipeline(g, opts);
  EXPECT_EQ(r.plan.stages[0].nodes.size(), 6u);
  opts.devices = {{"a", 3, 0}, {"b", 1, 0}};
  r = planPipeline(g, opts);
  EXPECT_EQ(r.plan.stages[0].nodes.size(), 9u);
  EXPECT_EQ(opts.devices[r.rankDevices[r.plan.stages[0].firstRank]].name, "a");
}

TEST(ClusterTest, ReplicasRunAtTheSlowestReplicasSpeed) {
  Graph g = chain(4);
  Plan plan;
  plan.stages.push_back({{0, 1, 2, 3}, 2, 0});
  CostOptions cost;
  cost.topology = Topology::flat(2, 1e9);
  cost.rankSpeeds = {1, 0.5};
  Evaluation e = evaluate(g, plan, cost);
  // 40 ms of work, every replica half of the microbatches, the slower one
  // at half speed: 40 / 0.5 / 2 = 40 ms (no weights to reduce).
  EXPECT_NEAR(e.stages[0].computeSeconds, 0.040, 1e-15);
  cost.rankSpeeds = {1};
  EXPECT_EQ(errorOf([&] { evaluate(g, plan, cost); }),
            "the cost options give 1 rank speeds for 2 devices");
}

TEST(ClusterTest, DevicesWithoutRoomAreLeftOut) {
  Graph g = loadShared("vgg16");
  PlannerOptions opts;
  opts.cost.topology = Topology::flat(4, 1e9);
  PlanResult free = planPipeline(g, opts);
  EXPECT_EQ(free.evaluation.usedDevices, 4);
  // The file's second device is too small for any stage of VGG-16 (every
  // stage holds its weights three times over): the plan is the one for
  // the three others.
  double big = free.evaluation.peakMemoryBytes * 2;
  opts.devices = {
      {"big0", 1, big}, {"tiny", 1, 1e6}, {"big1", 1, big}, {"big2", 1, big}};
  PlanResult r = planPipeline(g, opts);
  for (const StagePlan &st : r.plan.stages)
    for (int k = st.firstRank; k < st.firstRank + st.replicas; ++k)
      EXPECT_NE(opts.devices[r.rankDevices[k]].name, "tiny");
  EXPECT_EQ(r.evaluation.usedDevices, 3);
  PlannerOptions three;
  three.cost.topology = Topology::flat(3, 1e9);
  three.memoryLimitBytes = big;
  PlanResult onThree = planPipeline(g, three);
  EXPECT_EQ(r.evaluation.bottleneckSeconds,
            onThree.evaluation.bottleneckSeconds);
  EXPECT_GT(r.evaluation.bottleneckSeconds, free.evaluation.bottleneckSeconds);

  // No device holds enough: the message gives the factor that would.
  for (Device &d : opts.devices)
    d.memoryBytes = 1e6;
  std::string none = inputErrorOf([&] { planPipeline(g, opts); });
  const std::string prefix =
      "no plan fits the devices' memory; it takes at least ";
  ASSERT_EQ(none.rfind(prefix, 0), 0u) << none;
  double factor = std::atof(none.c_str() + prefix.size());
  EXPECT_GT(factor, 1);
  for (Device &d : opts.devices)
    d.memoryBytes *= factor;
  EXPECT_NO_THROW(planPipeline(g, opts));
  for (Device &d : opts.devices)
    d.memoryBytes *= 0.99;
  EXPECT_THROW(planPipeline(g, opts), dpc::InputError);
}

TEST(ClusterTest, DeviceOrders) {
  std::vector<Device> devices = {
      {"a", 1, 0}, {"b", 2, 0}, {"c", 1, 0}, {"d", 2, 0}};
  bool all = false;
  auto orders = deviceOrders(devices, Topology::flat(4), 720, all);
  EXPECT_TRUE(all);
  EXPECT_EQ(orders.size(), 6u);                         // 4! / (2! 2!)
  EXPECT_EQ(orders[0], (std::vector<int>{0, 1, 2, 3})); // the file's first
  orders = deviceOrders(devices, Topology::flat(4), 5, all);
  EXPECT_FALSE(all);
  // The file's order, fastest first, slowest first.
  ASSERT_EQ(orders.size(), 3u);
  EXPECT_EQ(orders[1], (std::vector<int>{1, 3, 0, 2}));
  EXPECT_EQ(orders[2], (std::vector<int>{0, 2, 1, 3}));
  // Hierarchical: sorted inside each innermost group only.
  Topology twoByTwo;
  twoByTwo.levelSizes = {2, 2};
  twoByTwo.bandwidths = {1e10, 1e9};
  orders = deviceOrders(devices, twoByTwo, 720, all);
  EXPECT_FALSE(all);
  ASSERT_EQ(orders.size(), 2u);
  EXPECT_EQ(orders[1], (std::vector<int>{1, 0, 3, 2}));
  // Equal devices have one order.
  orders =
      deviceOrders({{"x", 1, 0}, {"y", 1, 0}}, Topology::flat(2), 720, all);
  EXPECT_EQ(orders.size(), 1u);
}

TEST(ClusterTest, PlanJsonNamesEachStagesDevices) {
  Graph g = chain(12);
  PlannerOptions opts;
  opts.cost.topology = Topology::flat(3, 1e12);
  opts.straight = true;
  opts.devices = {{"slow", 0.5, 0}, {"fast", 1, 0}, {"idle", 1e-3, 0}};
  PlanResult r = planPipeline(g, opts);
  nlohmann::ordered_json doc = planToJson(g, r, opts);
  ASSERT_EQ(doc["stages"].size(), 2u);
  for (const auto &stage : doc["stages"]) {
    ASSERT_EQ(stage["devices"].size(), 1u);
    std::string name = stage["devices"][0];
    EXPECT_EQ(stage["speed"], name == "fast" ? 1.0 : 0.5);
    EXPECT_EQ(stage["nodes"].size(), name == "fast" ? 8u : 4u);
  }
  EXPECT_EQ(doc["cluster"]["rank_devices"].size(), 3u);
  EXPECT_EQ(doc["cluster"]["rank_devices"][2], "idle");
  EXPECT_EQ(doc["idle_ranks"], nlohmann::ordered_json::array({2}));
  EXPECT_EQ(doc["search"]["device_orders_tried"], 6);
  EXPECT_EQ(doc["search"]["all_device_orders"], true);
}

} // namespace
