//===- Choose.h - The schedule kind with the shortest step -------*- C++
//-*-===//
//
// `dpc compile --schedule auto`: of the synchronous kinds that train exactly
// what 1F1B trains (1f1b, zb-h1), build each for the stages' costs,
// simulate it, and keep the one with the shortest predicted step that fits
// the memory limits (docs/SCHEDULES.md, "Choosing the kind").
//
//===----------------------------------------------------------------------===//

#ifndef DPC_SCHEDULE_CHOOSE_H
#define DPC_SCHEDULE_CHOOSE_H

#include "dpc/schedule/Builder.h"
#include "dpc/schedule/Simulator.h"
#include "dpc/schedule/Verifier.h"

#include <string>
#include <vector>

namespace dpc::schedule {

/// The kinds `--schedule auto` chooses among, the preferred one first.
std::vector<ScheduleKind> autoScheduleKinds();

/// A later kind replaces an earlier one only when its simulated step is
/// shorter by more than this fraction: zb-h1's split backward costs a
/// segment call more per microbatch, which the stage costs do not see.
constexpr double kAutoScheduleMinGain = 0.02;

/// Builds every candidate (the options of one kind each, in order of
/// preference), simulates it on `machine` (as build-schedule's prediction:
/// the measured latencies, the cores the ranks share), and returns the
/// index of the one with the shortest step among those whose every rank's
/// peak memory (with `memory`'s computeScratchBytes counted) fits
/// `memory`'s limits, a later one winning only by more than
/// kAutoScheduleMinGain. When none fits, returns 0, the first, whose memory
/// verify-schedule or plan-memory then reports. Throws dpc::Error when a
/// candidate cannot be built or simulated, or there is none.
size_t chooseFastestSchedule(const std::vector<BuildOptions> &candidates,
                             const SimulateOptions &machine,
                             const VerifyOptions &memory);

} // namespace dpc::schedule

#endif // DPC_SCHEDULE_CHOOSE_H
