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

#include <optional>
#include <string>
#include <vector>

namespace dpc::planner {

nlohmann::ordered_json planToJson(const Graph &graph, const PlanResult &result,
                                  const PlannerOptions &options);

/// What `dpc run` reads from an output directory's plan.json: the device
/// count the plan was made for and the simulated step time, each when
/// present. A file that is not a JSON object, a device count that is not an
/// integer from 1 to 2^31-1 or a step time or memory limit that is not a
/// finite number >= 0 throws dpc::Error naming `name` and the key.
struct PlanSummary {
  std::optional<int64_t> devices;
  std::optional<double> simulatedStepMs;
  /// `dpc compile --memory-limit` per rank, in bytes.
  std::optional<double> memoryLimitBytes;
  /// Per rank, the peak memory plan-memory predicts (the stages'
  /// "planned_peak_bytes"); empty when the plan has none.
  std::vector<int64_t> plannedPeakBytes;
};
PlanSummary readPlanSummary(const std::string &text, const std::string &name);

/// readPlanSummary of the file at `path`, whose text is left in `text`.
PlanSummary loadPlanSummary(const std::string &path, std::string &text);

/// plan.json's `text` with the top-level `key` set to `value` (dpc run's
/// "measured" record), keys in their order; throws as readPlanSummary does.
std::string setPlanKey(const std::string &text, const std::string &name,
                       const std::string &key,
                       const nlohmann::ordered_json &value);

} // namespace dpc::planner

#endif // DPC_PLANNER_PLANJSON_H
