//===- ProfileFuzzer.cpp - libFuzzer target for planner profiles ----------===//
//
// What `dpc plan --profile FILE` does with a file's text: both profile
// readers and the measured shapes' reader with their fit, then, for a graph
// small enough to plan quickly, the planner and plan.json. Bad input must come
// back as an error message; a crash, an exception or a sanitizer report is a
// bug.
//
//===----------------------------------------------------------------------===//

#include "dpc/planner/PlanJson.h"
#include "dpc/planner/Planner.h"
#include "dpc/planner/Profile.h"

#include <cstddef>
#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  using namespace dpc::planner;
  std::string text(reinterpret_cast<const char *>(data), size);
  size_t first = text.find_first_not_of(" \t\r\n");
  Expected<Graph> graph = first != std::string::npos && text[first] == '{'
                              ? parseJsonProfile(text, "fuzz.json")
                              : parsePipeDreamProfile(text, "fuzz.txt");
  Expected<std::vector<MeasuredShape>> shapes =
      parseProfileShapes(text, "fuzz.json");
  if (shapes && !shapes->empty() && shapes->size() <= 64) {
    ShapeCosts costs(*shapes);
    for (const auto &entry : shapes->front().nodes)
      (void)costs.estimate(entry.first, 3, 100);
  }
  if (!graph || graph->size() > 24)
    return 0;
  PlannerOptions options;
  options.cost.topology.levelSizes = {4};
  options.cost.topology.bandwidths = {1e9};
  Expected<PlanResult> plan = planPipeline(*graph, options);
  if (plan)
    (void)planToJson(*graph, *plan, options).dump();
  return 0;
}
