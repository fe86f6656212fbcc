//===- ScheduleErrorOf.h - The schedule library's errors in tests -*- C++
//-*-===//
//
// The schedule library returns what it builds, simulates or reads and
// throws dpc::Error with the message (docs/ARCHITECTURE.md, "Errors"). Its
// tests, and the runtime's that build schedules, call it through these:
// the message, or "" with the result in the last argument.
//
//===----------------------------------------------------------------------===//

#ifndef DPC_TEST_UNITTESTS_SCHEDULE_SCHEDULEERROROF_H
#define DPC_TEST_UNITTESTS_SCHEDULE_SCHEDULEERROROF_H

#include "dpc/schedule/Builder.h"
#include "dpc/schedule/Schedule.h"
#include "dpc/schedule/Simulator.h"
#include "dpc/schedule/Timeline.h"
#include "test/unittests/runtime/ErrorOf.h"

#include <string>
#include <vector>

namespace dpc::schedule {

inline std::string buildError(const BuildOptions &options, Schedule &schedule) {
  return errorOf([&] { schedule = buildSchedule(options); });
}

inline std::string lowerError(Schedule &schedule,
                              const std::vector<std::vector<Work>> &order) {
  return errorOf([&] { lowerSchedule(schedule, order); });
}

inline std::string simulateError(const Schedule &schedule,
                                 const SimulateOptions &options,
                                 SimulateResult &result) {
  return errorOf([&] { result = simulateSchedule(schedule, options); });
}

inline std::string jsonError(const std::string &text, Schedule &schedule) {
  return errorOf([&] { schedule = fromJson(text); });
}

inline std::string stagesError(const std::string &text,
                               std::vector<StageInfo> &stages) {
  return errorOf([&] { stages = stagesFromJson(text); });
}

inline std::string traceError(const std::string &text, Timeline &timeline) {
  return errorOf([&] { timeline = fromChromeTrace(text); });
}

} // namespace dpc::schedule

#endif // DPC_TEST_UNITTESTS_SCHEDULE_SCHEDULEERROROF_H
