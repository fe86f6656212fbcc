//===- ProfileFuzzer.cpp - libFuzzer target for planner profiles ----------===//
//
// What `dpc plan --profile FILE` does with a file's text: both profile
// readers and the measured shapes' reader with their fit, then, for a graph
// small enough to plan quickly, the planner and plan.json. Bad input must
// throw dpc::Error; a crash, another exception or a sanitizer report is a
// bug.
//
//===----------------------------------------------------------------------===//

#include "dpc/planner/PlanJson.h"
#include "dpc/planner/Planner.h"
#include "dpc/planner/Profile.h"
#include "dpc/support/Error.h"

#include <cstddef>
#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  using namespace dpc::planner;
  std::string text(reinterpret_cast<const char *>(data), size);
  size_t first = text.find_first_not_of(" \t\r\n");
  try {
    std::vector<MeasuredShape> shapes = parseProfileShapes(text, "fuzz.json");
    if (!shapes.empty() && shapes.size() <= 64) {
      ShapeCosts costs(shapes);
      for (const auto &entry : shapes.front().nodes)
        (void)costs.estimate(entry.first, 3, 100);
    }
  } catch (const dpc::Error &) {
    // Bad shapes: the graph is still read.
  }
  try {
    Graph graph = first != std::string::npos && text[first] == '{'
                      ? parseJsonProfile(text, "fuzz.json")
                      : parsePipeDreamProfile(text, "fuzz.txt");
    if (graph.size() > 24)
      return 0;
    PlannerOptions options;
    options.cost.topology.levelSizes = {4};
    options.cost.topology.bandwidths = {1e9};
    PlanResult plan = planPipeline(graph, options);
    (void)planToJson(graph, plan, options).dump();
  } catch (const dpc::Error &) {
    // Bad input, or no plan: the error is the answer.
  }
  return 0;
}
