//===- PlanFuzzer.cpp - libFuzzer target for plan.json --------------------===//
//
// What `dpc run OUT` reads from OUT/plan.json (planner/PlanJson.h): the
// device count and the simulated step time, and the file it writes back with
// its measurement. Bad input must come back as an error message; a crash, an
// exception or a sanitizer report is a bug. What reads must, with the
// measurement added, read again to the same summary.
//
//===----------------------------------------------------------------------===//

#include "dpc/planner/PlanJson.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  using namespace dpc::planner;
  std::string text(reinterpret_cast<const char *>(data), size);
  Expected<PlanSummary> summary = readPlanSummary(text, "plan.json");
  if (!summary)
    return 0;
  nlohmann::ordered_json record = {{"step_ms", 1.5}, {"steps", 3}};
  Expected<std::string> updated =
      setPlanKey(text, "plan.json", "measured", record);
  if (!updated)
    std::abort(); // readable, so it must take the measurement
  Expected<PlanSummary> again = readPlanSummary(*updated, "plan.json");
  if (!again || again->devices != summary->devices ||
      again->simulatedStepMs != summary->simulatedStepMs)
    std::abort();
  return 0;
}
