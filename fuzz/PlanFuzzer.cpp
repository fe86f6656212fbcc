//===- PlanFuzzer.cpp - libFuzzer target for plan.json --------------------===//
//
// What `dpc run OUT` reads from OUT/plan.json (planner/PlanJson.h): the
// device count and the simulated step time, and the file it writes back with
// its measurement. Bad input must throw dpc::Error; a crash, another
// exception or a sanitizer report is a bug. What reads must, with the
// measurement added, read again to the same summary.
//
//===----------------------------------------------------------------------===//

#include "dpc/planner/PlanJson.h"
#include "dpc/support/Error.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  using namespace dpc::planner;
  std::string text(reinterpret_cast<const char *>(data), size);
  PlanSummary summary;
  try {
    summary = readPlanSummary(text, "plan.json");
  } catch (const dpc::Error &) {
    return 0;
  }
  nlohmann::ordered_json record = {{"step_ms", 1.5}, {"steps", 3}};
  try {
    // Readable, so it must take the measurement and read back the same.
    PlanSummary again = readPlanSummary(
        setPlanKey(text, "plan.json", "measured", record), "plan.json");
    if (again.devices != summary.devices ||
        again.simulatedStepMs != summary.simulatedStepMs)
      std::abort();
  } catch (const dpc::Error &) {
    std::abort();
  }
  return 0;
}
