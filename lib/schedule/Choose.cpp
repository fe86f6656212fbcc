//===- Choose.cpp - The schedule kind with the shortest step --------------===//

#include "dpc/schedule/Choose.h"

#include "dpc/schedule/Simulator.h"
#include "dpc/support/Error.h"

namespace dpc::schedule {

std::vector<ScheduleKind> autoScheduleKinds() {
  return {ScheduleKind::OneFOneB, ScheduleKind::ZeroBubbleH1,
          ScheduleKind::ZeroBubble2P};
}

namespace {

// Whether every rank's verified peak, with `memory`'s scratch counted,
// fits its limit.
bool fitsMemory(const Schedule &schedule, const VerifyOptions &memory) {
  VerifyOptions scratch;
  scratch.computeScratchBytes = memory.computeScratchBytes;
  VerifyResult verified = verifySchedule(schedule, scratch);
  for (size_t rank = 0; rank < verified.ranks.size(); ++rank) {
    double limit = memory.memoryLimitOf(int(rank));
    if (limit > 0 && double(verified.ranks[rank].peakMemoryBytes) > limit)
      return false;
  }
  return true;
}

} // namespace

size_t chooseFastestSchedule(const std::vector<BuildOptions> &candidates,
                             const SimulateOptions &machine,
                             const VerifyOptions &memory) {
  if (candidates.empty())
    throw Error("no schedule kind to choose from");
  size_t chosen = 0;
  bool chosenFits = false;
  double chosenStep = 0;
  for (size_t k = 0; k < candidates.size(); ++k) {
    const BuildOptions &options = candidates[k];
    std::string kind = kindName(options.kind);
    Schedule built;
    try {
      built = buildSchedule(options);
    } catch (const Error &e) {
      throw Error("cannot build the " + kind + " schedule: " + e.what());
    }
    SimulateOptions simulate = machine;
    simulate.recordTimeline = false;
    simulate.steps = kSteadyStateSteps;
    SimulateResult simulated;
    try {
      simulated = simulateSchedule(built, simulate);
    } catch (const Error &e) {
      throw Error("cannot simulate the " + kind + " schedule: " + e.what());
    }
    bool fits = fitsMemory(built, memory);
    if (k == 0 || (fits && !chosenFits) ||
        (fits &&
         simulated.steadyStepTime < chosenStep * (1 - kAutoScheduleMinGain))) {
      chosen = k;
      chosenFits = fits;
      chosenStep = simulated.steadyStepTime;
    }
  }
  return chosen;
}

} // namespace dpc::schedule
