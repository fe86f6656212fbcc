//===- ClusterFuzzer.cpp - libFuzzer target for cluster files -------------===//
//
// What `dpc plan --cluster FILE` does with a file's text: the cluster
// reader, then, for up to 8 devices, the planner on a small fixed graph and
// plan.json. Bad input must throw dpc::Error; a crash, another exception
// or a sanitizer report is a bug, and so is a plan whose ranks do not name
// every device once.
//
//===----------------------------------------------------------------------===//

#include "dpc/planner/Cluster.h"
#include "dpc/planner/PlanJson.h"
#include "dpc/planner/Planner.h"
#include "dpc/support/Error.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  using namespace dpc::planner;
  std::string text(reinterpret_cast<const char *>(data), size);
  Cluster cluster;
  try {
    cluster = parseCluster(text, "fuzz.json");
  } catch (const dpc::Error &) {
    return 0;
  }
  if (cluster.devices.size() > 8)
    return 0;
  // A branch and a join: five nodes of unequal costs after the input.
  Graph graph;
  const double costs[] = {0, 3, 1, 4, 1, 5};
  for (int i = 0; i < 6; ++i) {
    Node node;
    node.name = "n" + std::to_string(i);
    node.isInput = i == 0;
    node.forwardMs = costs[i];
    node.backwardMs = 2 * costs[i];
    node.activationBytes = 1e6 * (i + 1);
    node.parameterBytes = 4e6 * (i % 3);
    graph.addNode(node);
  }
  for (auto [from, to] :
       {std::pair{0, 1}, {1, 2}, {1, 3}, {2, 4}, {3, 4}, {4, 5}})
    graph.addEdge(from, to);
  PlannerOptions options;
  options.cost.topology = cluster.topology;
  options.devices = cluster.devices;
  PlanResult plan;
  try {
    plan = planPipeline(graph, options);
  } catch (const dpc::Error &) {
    return 0;
  }
  std::vector<char> seen(options.devices.size(), 0);
  if (plan.rankDevices.size() != seen.size())
    std::abort();
  for (int k : plan.rankDevices) {
    if (k < 0 || size_t(k) >= seen.size() || seen[k])
      std::abort();
    seen[k] = 1;
  }
  (void)planToJson(graph, plan, options).dump();
  return 0;
}
