//===- LauncherReport.cpp - What dpc run gathers after a run --------------===//
//
// After a successful run the launcher gathers what the ranks wrote apart:
// the per-rank traces of --trace FILE become one Chrome trace FILE (the
// ranks share a time origin), and the last stage's step times, compared
// with the step time `dpc compile` predicted, go into OUT/plan.json as
// "measured".
//
//===----------------------------------------------------------------------===//

#include "LauncherInternal.h"

#include "dpc/planner/PlanJson.h"
#include "dpc/schedule/Simulator.h"
#include "dpc/schedule/Timeline.h"
#include "dpc/support/WriteFile.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <unistd.h>

namespace dpc::runtime {

namespace {

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

/// The cores a schedule's ranks share when predicted on `cores` (0: a core
/// each).
int sharing(const schedule::Schedule &s, int cores) {
  return cores > 0 && cores < s.ranks ? cores : 0;
}

/// The step `s` takes on the machine it was built for, its ranks sharing
/// `cores` instead, or nothing when it cannot be simulated.
std::optional<double> simulateOnCores(const schedule::Schedule &s, int cores) {
  schedule::SimulateOptions options = schedule::recordedMachine(s);
  options.cores = cores;
  options.recordTimeline = false;
  options.steps = schedule::kSteadyStateSteps;
  try {
    return schedule::simulateSchedule(s, options).steadyStepTime;
  } catch (const Error &) {
    return std::nullopt;
  }
}

/// The schedule at `path`, or nothing when it cannot be read (the plan's
/// prediction then stands).
std::optional<schedule::Schedule> readScheduleIfAny(const std::string &path) {
  try {
    return schedule::readScheduleFile(path);
  } catch (const Error &) {
    return std::nullopt;
  }
}

} // namespace

namespace launcher_detail {

void removeTraceParts(const std::string &trace, int ranks) {
  for (int r = 0; r < ranks; ++r)
    ::unlink(support::perRankPath(trace, r).c_str());
}

void mergeTraces(const std::string &trace, int ranks) {
  schedule::Timeline merged;
  merged.ranks = ranks;
  std::string error;
  for (int r = 0; r < ranks && error.empty(); ++r) {
    try {
      schedule::Timeline part =
          schedule::readChromeTraceFile(support::perRankPath(trace, r));
      merged.events.insert(merged.events.end(), part.events.begin(),
                           part.events.end());
    } catch (const Error &e) {
      error = e.what();
    }
  }
  removeTraceParts(trace, ranks);
  if (!error.empty())
    throw Error("cannot merge the ranks' traces: " + error);
  support::writeAtomically(trace, schedule::toChromeTrace(merged) + "\n");
}

void recordStepTime(const std::string &summaryPath, const std::string &planPath,
                    int cores) {
  std::ifstream in(summaryPath);
  if (!in)
    return; // ranks that are not dpc's write no summary
  nlohmann::json summary = nlohmann::json::parse(in, nullptr, false);
  if (summary.is_discarded() || !summary.contains("step_ms") ||
      !summary["step_ms"].is_array())
    throw Error(summaryPath + ": not the last stage's step times");
  std::vector<double> stepMs = summary["step_ms"].get<std::vector<double>>();
  if (stepMs.empty())
    return;
  if (stepMs.size() > 1)
    stepMs.erase(stepMs.begin());
  double measured = median(stepMs);

  std::string planText;
  planner::PlanSummary plan = planner::loadPlanSummary(planPath, planText);
  std::optional<double> predicted = plan.simulatedStepMs;
  std::optional<double> corePerRank;
  std::string dir = planPath.substr(0, planPath.find_last_of('/') + 1);
  std::optional<schedule::Schedule> built;
  if (predicted && (built = readScheduleIfAny(dir + "schedule.json"))) {
    int assumed = sharing(*built, built->cores), here = sharing(*built, cores);
    std::optional<double> own =
        assumed == 0 ? predicted : simulateOnCores(*built, 0);
    std::optional<double> onHere = here == assumed ? predicted
                                   : here == 0     ? own
                                               : simulateOnCores(*built, here);
    if (onHere && (here == 0 || own)) {
      predicted = onHere;
      if (here > 0)
        corePerRank = own;
    }
  }

  nlohmann::ordered_json record;
  record["step_ms"] = measured;
  if (predicted && *predicted > 0) {
    record["predicted_step_ms"] = *predicted;
    record["ratio"] = measured / *predicted;
  }
  if (corePerRank) {
    record["cores"] = cores;
    record["core_per_rank_step_ms"] = *corePerRank;
  }
  record["steps"] = stepMs.size();
  int64_t samplesPerStep = summary.value("samples_per_step", int64_t(0));
  if (samplesPerStep > 0 && measured > 0)
    record["samples_per_second"] = double(samplesPerStep) * 1000.0 / measured;
  record["schedule"] = summary.value("schedule", "");
  std::string updated =
      planner::setPlanKey(planText, planPath, "measured", record);

  char line[200];
  if (record.contains("ratio") && corePerRank)
    std::snprintf(line, sizeof(line),
                  "step time: measured %.3g ms, predicted %.3g ms on %d "
                  "shared core%s (%.3gx the prediction; %.3g ms with a core "
                  "per rank)",
                  measured, *predicted, cores, cores == 1 ? "" : "s",
                  measured / *predicted, *corePerRank);
  else if (record.contains("ratio"))
    std::snprintf(line, sizeof(line),
                  "step time: measured %.3g ms, predicted %.3g ms (%.3gx the "
                  "prediction)",
                  measured, *predicted, measured / *predicted);
  else
    std::snprintf(line, sizeof(line),
                  "step time: measured %.3g ms (plan.json predicts none)",
                  measured);
  std::cout << line << "\n" << std::flush;
  support::writeAtomically(planPath, updated);
}

} // namespace launcher_detail

} // namespace dpc::runtime
