//===- PlanJson.h - plan.json -----------------------------------*- C++ -*-===//
//
// The plan as DESIGN.md's plan.json: stages with the graph's own node names,
// ranks, replicas, per-stage compute, transfer and memory, and the predicted
// bottleneck and step time. dpc plan writes it; dpc compile adds its keys.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_PLANNER_PLANJSON_H
#define DPC_PLANNER_PLANJSON_H

#include "dpc/planner/Planner.h"

#include <nlohmann/json.hpp>

namespace dpc::planner {

nlohmann::ordered_json planToJson(const Graph &graph, const PlanResult &result,
                                  const PlannerOptions &options);

} // namespace dpc::planner

#endif // DPC_PLANNER_PLANJSON_H
